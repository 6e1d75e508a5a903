//! A validating JSON reader that pulls out the few values the policy needs
//! and skips everything else without building it.
//!
//! It accepts and rejects exactly what serde_json does for the request
//! decoder: strings that are read (keys, kinds, names) are decoded and must be
//! valid UTF-8 with paired surrogates, while skipped strings are only checked
//! for well-formed escapes and the absence of control characters, as
//! serde_json's `IgnoredAny` does. `request::reference` is the serde-based
//! model it is tested against. Skipping is iterative, so no nesting depth can
//! exhaust the stack.

use std::borrow::Cow;
use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    pub offset: usize,
    pub reason: Cow<'static, str>,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} at byte {}", self.reason, self.offset)
    }
}

pub type Result<T> = std::result::Result<T, Error>;

pub struct Reader<'a> {
    input: &'a [u8],
    pos: usize,
    /// Open containers while skipping: `true` for an object.
    frames: Vec<bool>,
}

const ONES: u64 = u64::MAX / 255;
const HIGH_BITS: u64 = ONES << 7;

impl<'a> Reader<'a> {
    pub fn new(input: &'a [u8]) -> Reader<'a> {
        Reader {
            input,
            pos: 0,
            frames: Vec::new(),
        }
    }

    fn error<T>(&self, reason: impl Into<Cow<'static, str>>) -> Result<T> {
        Err(Error {
            offset: self.pos,
            reason: reason.into(),
        })
    }

    /// An error at the current position, for the caller's own rules.
    pub fn fail<T>(&self, reason: impl Into<Cow<'static, str>>) -> Result<T> {
        self.error(reason)
    }

    /// "expected <what>, found <what starts here>".
    pub fn unexpected<T>(&mut self, what: &str) -> Result<T> {
        let found = self.found();
        self.error(format!("expected {what}, found {found}"))
    }

    /// The next byte that is not white space, not consumed.
    #[inline(always)]
    pub fn peek(&mut self) -> Option<u8> {
        while let Some(&b) = self.input.get(self.pos) {
            if !matches!(b, b' ' | b'\n' | b'\t' | b'\r') {
                return Some(b);
            }
            self.pos += 1;
        }
        None
    }

    /// Names the kind of value that starts at the next byte, for messages.
    pub fn found(&mut self) -> &'static str {
        let rest = self.input.get(self.pos..).unwrap_or_default();
        match self.peek() {
            None => "the end of the input",
            Some(b'{') => "an object",
            Some(b'[') => "an array",
            Some(b'"') => "a string",
            Some(b't' | b'f') if rest.starts_with(b"true") || rest.starts_with(b"false") => {
                "a boolean"
            }
            Some(b'n') if rest.starts_with(b"null") => "null",
            Some(b'-' | b'0'..=b'9') => "a number",
            Some(b']') => "`]`",
            Some(b'}') => "`}`",
            Some(b',') => "`,`",
            Some(b':') => "`:`",
            Some(_) => "an invalid character",
        }
    }

    /// Fails unless only white space is left.
    pub fn end(&mut self) -> Result<()> {
        match self.peek() {
            None => Ok(()),
            Some(_) => self.error("trailing characters after the JSON value"),
        }
    }

    /// Consumes `null` if it comes next.
    pub fn null(&mut self) -> Result<bool> {
        if self.peek() == Some(b'n') {
            self.literal(b"null")?;
            Ok(true)
        } else {
            Ok(false)
        }
    }

    #[inline(always)]
    fn literal(&mut self, word: &'static [u8]) -> Result<()> {
        for &expected in word {
            match self.input.get(self.pos) {
                Some(&b) if b == expected => self.pos += 1,
                Some(_) => return self.error("invalid literal"),
                None => return self.error("unexpected end of input in a literal"),
            }
        }
        Ok(())
    }

    /// Reads an object member by member; `member` must consume each value.
    /// The caller has checked that an object starts here.
    pub fn object(
        &mut self,
        mut member: impl FnMut(&mut Self, Cow<'a, str>) -> Result<()>,
    ) -> Result<()> {
        debug_assert_eq!(self.peek(), Some(b'{'));
        self.pos += 1;
        let mut first = true;
        loop {
            match self.peek() {
                Some(b'}') => {
                    self.pos += 1;
                    return Ok(());
                }
                Some(b',') if !first => {
                    self.pos += 1;
                    if self.peek() != Some(b'"') {
                        return self.error("expected a string key after `,`");
                    }
                }
                Some(b'"') if first => {}
                Some(_) if first => return self.error("expected a string key or `}`"),
                Some(_) => return self.error("expected `,` or `}` after an object member"),
                None => return self.error("unexpected end of input in an object"),
            }
            first = false;
            let key = self.string()?;
            self.colon()?;
            member(self, key)?;
        }
    }

    /// Reads an array element by element; `item` must consume each one.
    /// The caller has checked that an array starts here.
    pub fn array(&mut self, mut item: impl FnMut(&mut Self) -> Result<()>) -> Result<()> {
        debug_assert_eq!(self.peek(), Some(b'['));
        self.pos += 1;
        if self.peek() == Some(b']') {
            self.pos += 1;
            return Ok(());
        }
        loop {
            item(self)?;
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b']') => {
                    self.pos += 1;
                    return Ok(());
                }
                Some(_) => return self.error("expected `,` or `]` after an array element"),
                None => return self.error("unexpected end of input in an array"),
            }
        }
    }

    #[inline(always)]
    fn colon(&mut self) -> Result<()> {
        match self.peek() {
            Some(b':') => {
                self.pos += 1;
                Ok(())
            }
            Some(_) => self.error("expected `:` after an object key"),
            None => self.error("unexpected end of input in an object"),
        }
    }

    /// Reads a string that the caller has checked starts here, decoding
    /// escapes. Borrows from the input unless an escape had to be decoded.
    pub fn string(&mut self) -> Result<Cow<'a, str>> {
        debug_assert_eq!(self.peek(), Some(b'"'));
        self.pos += 1;
        let mut start = self.pos;
        let mut owned: Option<Vec<u8>> = None;
        loop {
            self.skip_plain();
            match self.input.get(self.pos) {
                Some(b'"') => {
                    let raw = &self.input[start..self.pos];
                    self.pos += 1;
                    let text = match owned {
                        None => Cow::Borrowed(raw),
                        Some(mut bytes) => {
                            bytes.extend_from_slice(raw);
                            Cow::Owned(bytes)
                        }
                    };
                    return self.utf8(text);
                }
                Some(b'\\') => {
                    let bytes = owned.get_or_insert_with(Vec::new);
                    bytes.extend_from_slice(&self.input[start..self.pos]);
                    self.pos += 1;
                    self.decode_escape(bytes)?;
                    start = self.pos;
                }
                Some(_) => return self.error("control character in a string"),
                None => return self.error("unexpected end of input in a string"),
            }
        }
    }

    fn utf8(&self, text: Cow<'a, [u8]>) -> Result<Cow<'a, str>> {
        match text {
            Cow::Borrowed(bytes) => match std::str::from_utf8(bytes) {
                Ok(s) => Ok(Cow::Borrowed(s)),
                Err(_) => self.error("invalid UTF-8 in a string"),
            },
            Cow::Owned(bytes) => match String::from_utf8(bytes) {
                Ok(s) => Ok(Cow::Owned(s)),
                Err(_) => self.error("invalid UTF-8 in a string"),
            },
        }
    }

    fn decode_escape(&mut self, out: &mut Vec<u8>) -> Result<()> {
        let Some(&b) = self.input.get(self.pos) else {
            return self.error("unexpected end of input in a string");
        };
        self.pos += 1;
        let simple = match b {
            b'"' => b'"',
            b'\\' => b'\\',
            b'/' => b'/',
            b'b' => 0x08,
            b'f' => 0x0c,
            b'n' => b'\n',
            b'r' => b'\r',
            b't' => b'\t',
            b'u' => return self.decode_unicode_escape(out),
            _ => return self.error("invalid escape in a string"),
        };
        out.push(simple);
        Ok(())
    }

    /// `\u` has been read. Surrogates must come in pairs, as in a Rust string.
    fn decode_unicode_escape(&mut self, out: &mut Vec<u8>) -> Result<()> {
        let high = self.hex4()?;
        let code = match high {
            0xDC00..=0xDFFF => return self.error("unpaired surrogate in a \\u escape"),
            0xD800..=0xDBFF => {
                if self.input.get(self.pos..self.pos + 2) != Some(b"\\u") {
                    return self.error("unpaired surrogate in a \\u escape");
                }
                self.pos += 2;
                let low = self.hex4()?;
                if !(0xDC00..=0xDFFF).contains(&low) {
                    return self.error("unpaired surrogate in a \\u escape");
                }
                0x1_0000 + ((u32::from(high) - 0xD800) << 10) + (u32::from(low) - 0xDC00)
            }
            code => u32::from(code),
        };
        let c = char::from_u32(code).expect("surrogates were excluded");
        out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes());
        Ok(())
    }

    #[inline(always)]
    fn hex4(&mut self) -> Result<u16> {
        let Some(digits) = self.input.get(self.pos..self.pos + 4) else {
            self.pos = self.input.len();
            return self.error("unexpected end of input in a \\u escape");
        };
        let mut value = 0u16;
        for &d in digits {
            let digit = match d {
                b'0'..=b'9' => d - b'0',
                b'a'..=b'f' => d - b'a' + 10,
                b'A'..=b'F' => d - b'A' + 10,
                _ => return self.error("invalid \\u escape"),
            };
            value = value << 4 | u16::from(digit);
        }
        self.pos += 4;
        Ok(value)
    }

    /// Advances to the next `"`, `\` or control character (or the end).
    #[inline(always)]
    fn skip_plain(&mut self) {
        let rest = &self.input[self.pos..];
        let mut chunks = rest.chunks_exact(8);
        let mut offset = 0;
        for chunk in &mut chunks {
            let word = u64::from_le_bytes(chunk.try_into().expect("8 bytes"));
            // High bit set in each byte that is below 0x20, a quote or a
            // backslash; the lowest such byte is always a true match.
            let control = word.wrapping_sub(ONES * 0x20) & !word;
            let quote = (word ^ (ONES * u64::from(b'"'))).wrapping_sub(ONES)
                & !(word ^ (ONES * u64::from(b'"')));
            let backslash = (word ^ (ONES * u64::from(b'\\'))).wrapping_sub(ONES)
                & !(word ^ (ONES * u64::from(b'\\')));
            let hits = (control | quote | backslash) & HIGH_BITS;
            if hits != 0 {
                self.pos += offset + hits.trailing_zeros() as usize / 8;
                return;
            }
            offset += 8;
        }
        let tail = chunks.remainder();
        let found = tail
            .iter()
            .position(|&b| b == b'"' || b == b'\\' || b < 0x20)
            .unwrap_or(tail.len());
        self.pos += offset + found;
    }

    /// Skips a string the way serde_json ignores one: escapes are checked
    /// for form only, and the bytes are not checked for UTF-8.
    #[inline(always)]
    fn skip_string(&mut self) -> Result<()> {
        self.pos += 1;
        loop {
            self.skip_plain();
            match self.input.get(self.pos) {
                Some(b'"') => {
                    self.pos += 1;
                    return Ok(());
                }
                Some(b'\\') => {
                    self.pos += 1;
                    match self.input.get(self.pos) {
                        Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => {
                            self.pos += 1
                        }
                        Some(b'u') => {
                            self.pos += 1;
                            self.hex4()?;
                        }
                        Some(_) => return self.error("invalid escape in a string"),
                        None => return self.error("unexpected end of input in a string"),
                    }
                }
                Some(_) => return self.error("control character in a string"),
                None => return self.error("unexpected end of input in a string"),
            }
        }
    }

    #[inline(always)]
    fn skip_number(&mut self) -> Result<()> {
        let digits = |r: &mut Self| {
            let start = r.pos;
            while r.input.get(r.pos).is_some_and(u8::is_ascii_digit) {
                r.pos += 1;
            }
            r.pos - start
        };
        if self.input.get(self.pos) == Some(&b'-') {
            self.pos += 1;
        }
        match self.input.get(self.pos) {
            Some(b'0') => {
                self.pos += 1;
                if self.input.get(self.pos).is_some_and(u8::is_ascii_digit) {
                    return self.error("invalid number: leading zero");
                }
            }
            Some(b'1'..=b'9') => {
                digits(self);
            }
            _ => return self.error("invalid number"),
        }
        if self.input.get(self.pos) == Some(&b'.') {
            self.pos += 1;
            if digits(self) == 0 {
                return self.error("invalid number: no digit after `.`");
            }
        }
        if matches!(self.input.get(self.pos), Some(b'e' | b'E')) {
            self.pos += 1;
            if matches!(self.input.get(self.pos), Some(b'+' | b'-')) {
                self.pos += 1;
            }
            if digits(self) == 0 {
                return self.error("invalid number: no digit in the exponent");
            }
        }
        Ok(())
    }

    /// Skips one value of any kind and depth. Works on a local copy of the
    /// reader so that the position can live in a register.
    pub fn skip_value(&mut self) -> Result<()> {
        let mut local = Reader {
            input: self.input,
            pos: self.pos,
            frames: std::mem::take(&mut self.frames),
        };
        let result = local.skip_value_here();
        self.pos = local.pos;
        self.frames = local.frames;
        result
    }

    fn skip_value_here(&mut self) -> Result<()> {
        self.frames.clear();
        loop {
            // A value is expected here.
            match self.peek() {
                Some(b'"') => self.skip_string()?,
                Some(b'-' | b'0'..=b'9') => self.skip_number()?,
                Some(b'n') => self.literal(b"null")?,
                Some(b't') => self.literal(b"true")?,
                Some(b'f') => self.literal(b"false")?,
                Some(open @ (b'[' | b'{')) => {
                    self.pos += 1;
                    let object = open == b'{';
                    let close = if object { b'}' } else { b']' };
                    if self.peek() == Some(close) {
                        self.pos += 1;
                    } else {
                        self.frames.push(object);
                        if object {
                            self.member_key()?;
                        }
                        continue;
                    }
                }
                Some(_) => return self.error("expected a value"),
                None => return self.error("unexpected end of input where a value was expected"),
            }
            // A value has ended: close containers until one goes on.
            loop {
                let Some(&object) = self.frames.last() else {
                    return Ok(());
                };
                match self.peek() {
                    Some(b',') => {
                        self.pos += 1;
                        if object {
                            if self.peek() != Some(b'"') {
                                return self.error("expected a string key after `,`");
                            }
                            self.member_key()?;
                        }
                        break;
                    }
                    Some(b'}') if object => self.pos += 1,
                    Some(b']') if !object => self.pos += 1,
                    Some(_) if object => {
                        return self.error("expected `,` or `}` after an object member");
                    }
                    Some(_) => return self.error("expected `,` or `]` after an array element"),
                    None => return self.error("unexpected end of input in a container"),
                }
                self.frames.pop();
            }
        }
    }

    /// A skipped object's key and its colon.
    #[inline(always)]
    fn member_key(&mut self) -> Result<()> {
        if self.peek() != Some(b'"') {
            return self.error("expected a string key");
        }
        self.skip_string()?;
        self.colon()
    }

    /// Skips one value and returns its text, which must be valid UTF-8.
    pub fn raw_value(&mut self) -> Result<&'a [u8]> {
        self.peek();
        let start = self.pos;
        self.skip_value()?;
        let raw = &self.input[start..self.pos];
        match std::str::from_utf8(raw) {
            Ok(_) => Ok(raw),
            Err(e) => Err(Error {
                offset: start + e.valid_up_to(),
                reason: "invalid UTF-8".into(),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn skip(input: &[u8]) -> Result<()> {
        let mut reader = Reader::new(input);
        reader.skip_value()?;
        reader.end()
    }

    /// Agreement with serde_json's own `IgnoredAny` on hand-picked inputs;
    /// the property and fuzz tests cover arbitrary ones.
    #[test]
    fn skipping_agrees_with_serde_json() {
        let cases: &[&[u8]] = &[
            b"0",
            b"-0",
            b"01",
            b"-",
            b"1.",
            b"1.5e",
            b"1.5e+7",
            b"1E-0",
            b"-1.25e10",
            b"123456789012345678901234567890e999999",
            b"+1",
            b".5",
            b"true",
            b"tru",
            b"nul",
            b"nulll",
            b"false ",
            b"\"\"",
            b"\"a\\\"b\"",
            b"\"\\u12\"",
            b"\"\\u12G4\"",
            b"\"\\ud800\"",
            b"\"\\x\"",
            b"\"tab\there\"",
            b"\"\x7f\"",
            b"\"\xff\xfe\"",
            b"\"unterminated",
            b"[]",
            b"[1,]",
            b"[,1]",
            b"[1 2]",
            b"{}",
            b"{\"a\":1,}",
            b"{\"a\" 1}",
            b"{1:2}",
            b"{\"a\":1 \"b\":2}",
            b"{\"a\":[{\"b\":[]}],\"c\":{}}",
            b"[}",
            b"{]",
            b"[[[[]]]]",
            b"[[[[]]]",
            b" \t\r\n[ 1 , { \"k\" : null } ] \n",
            b"",
            b"   ",
            b"x",
            b"[1] [2]",
        ];
        for &input in cases {
            let mut de = serde_json::Deserializer::from_slice(input);
            de.disable_recursion_limit();
            let expected = serde::de::IgnoredAny::deserialize(&mut de).and_then(|_| de.end());
            assert_eq!(
                skip(input).is_ok(),
                expected.is_ok(),
                "{:?}: {:?} vs serde {:?}",
                String::from_utf8_lossy(input),
                skip(input),
                expected
            );
        }
    }

    use serde::Deserialize;

    #[test]
    fn the_fast_path_finds_every_stop_byte_at_every_offset() {
        for stop in [b'"', b'\\', 0x00, 0x1f] {
            for len in 0..40 {
                let mut input = vec![b'a'; len];
                input.push(stop);
                input.extend_from_slice(b"tail");
                let mut reader = Reader::new(&input);
                reader.skip_plain();
                assert_eq!(reader.pos, len, "stop {stop:#x} after {len} bytes");
            }
        }
        // Bytes at or above 0x80 and 0x20..0x7f are never stops.
        let plain: Vec<u8> = (0x20u8..=0xff)
            .filter(|&b| b != b'"' && b != b'\\')
            .collect();
        let mut reader = Reader::new(&plain);
        reader.skip_plain();
        assert_eq!(reader.pos, plain.len());
    }

    #[test]
    fn strings_are_decoded_and_borrowed_when_plain() {
        let cases: &[(&[u8], &str, bool)] = &[
            (b"\"plain\"", "plain", true),
            (b"\"\"", "", true),
            (b"\"caf\xc3\xa9\"", "café", true),
            (b"\"a\\nb\"", "a\nb", false),
            (b"\"\\u006fwner\"", "owner", false),
            (b"\"\\ud83d\\ude00!\"", "\u{1F600}!", false),
            (b"\"\\\"\\\\\\/\\b\\f\\r\\t\"", "\"\\/\u{8}\u{c}\r\t", false),
        ];
        for &(input, expected, borrowed) in cases {
            let mut reader = Reader::new(input);
            let s = reader.string().unwrap();
            assert_eq!(s, expected);
            assert_eq!(matches!(s, Cow::Borrowed(_)), borrowed, "{expected:?}");
            assert_eq!(reader.pos, input.len());
        }
    }

    #[test]
    fn read_strings_reject_what_a_rust_string_cannot_hold() {
        for input in [
            &b"\"\\ud800\""[..],
            b"\"\\udc00\"",
            b"\"\\ud800\\u0041\"",
            b"\"\\ud800x\"",
            b"\"\xff\"",
            b"\"\xc3\\u00e9\"",
            b"\"a\nb\"",
            b"\"\\q\"",
            b"\"open",
        ] {
            let serde = serde_json::from_slice::<String>(input);
            assert!(serde.is_err(), "serde accepts {input:?}");
            assert!(Reader::new(input).string().is_err(), "{input:?}");
        }
    }

    #[test]
    fn skipping_is_iterative() {
        let depth = 100_000;
        let mut input = "[{\"k\":".repeat(depth).into_bytes();
        input.extend_from_slice(b"null");
        input.extend("}]".repeat(depth).bytes());
        assert_eq!(skip(&input), Ok(()));
        input.pop();
        assert!(skip(&input).is_err());
    }

    #[test]
    fn raw_values_must_be_utf8_and_are_returned_exactly() {
        let mut reader = Reader::new(b"  {\"a\": [1, \"x\"]} ");
        assert_eq!(reader.raw_value().unwrap(), b"{\"a\": [1, \"x\"]}");
        assert!(Reader::new(b"[\"\xff\"]").raw_value().is_err());
    }

    #[test]
    fn errors_say_where() {
        let error = skip(b"[1, x]").unwrap_err();
        assert_eq!(error.to_string(), "expected a value at byte 4");
    }
}
