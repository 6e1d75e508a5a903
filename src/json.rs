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

mod skip;

/// Boxed, so that the reader's results (mostly `Result<()>`) fit in a
/// register on the hot path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error(Box<Detail>);

#[derive(Debug, Clone, PartialEq, Eq)]
struct Detail {
    offset: usize,
    reason: Cow<'static, str>,
}

impl Error {
    fn new(offset: usize, reason: impl Into<Cow<'static, str>>) -> Error {
        Error(Box::new(Detail {
            offset,
            reason: reason.into(),
        }))
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} at byte {}", self.0.reason, self.0.offset)
    }
}

pub type Result<T> = std::result::Result<T, Error>;

pub struct Reader<'a> {
    input: &'a [u8],
    pos: usize,
    /// Room for `skip::value` to keep deep nesting in.
    spill: Vec<u64>,
}

impl<'a> Reader<'a> {
    pub fn new(input: &'a [u8]) -> Reader<'a> {
        Reader {
            input,
            pos: 0,
            spill: Vec::new(),
        }
    }

    fn error<T>(&self, reason: impl Into<Cow<'static, str>>) -> Result<T> {
        Err(Error::new(self.pos, reason))
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

    fn literal(&mut self, word: &'static [u8]) -> Result<()> {
        let skipped = skip::literal(self.input, self.pos, word);
        self.advance(skipped)
    }

    /// Moves to where a `skip` function ended, or to its error.
    fn advance(&mut self, skipped: skip::Skip) -> Result<()> {
        match skipped {
            Ok(end) => {
                self.pos = end;
                Ok(())
            }
            Err((offset, reason)) => {
                self.pos = offset;
                self.error(reason)
            }
        }
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
        let start = self.pos + 1;
        let (end, closed) = skip::ascii_run(self.input, start);
        if closed {
            self.pos = end + 1;
            // SAFETY: the run holds ASCII bytes only, which are valid UTF-8.
            return Ok(Cow::Borrowed(unsafe {
                std::str::from_utf8_unchecked(&self.input[start..end])
            }));
        }
        self.pos = end;
        self.string_rest(start)
    }

    /// The rest of a string from `self.pos`, where an escape, a byte above
    /// 0x7f or a control character stopped the ASCII run that began at
    /// `start`. Kept out of line so that the common case above stays small.
    #[inline(never)]
    fn string_rest(&mut self, mut start: usize) -> Result<Cow<'a, str>> {
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
        self.pos = skip::plain_end(self.input, self.pos);
    }

    /// Skips one value of any kind and depth.
    pub fn skip_value(&mut self) -> Result<()> {
        // Most skipped values are strings: no need to set up for nesting.
        let skipped = match self.input.get(self.pos) {
            Some(b'"') => skip::string(self.input, self.pos + 1),
            _ => skip::value(self.input, self.pos, &mut self.spill),
        };
        self.advance(skipped)
    }

    /// Skips one value and returns its text, which must be valid UTF-8.
    pub fn raw_value(&mut self) -> Result<&'a [u8]> {
        self.peek();
        let start = self.pos;
        self.skip_value()?;
        let raw = &self.input[start..self.pos];
        match std::str::from_utf8(raw) {
            Ok(_) => Ok(raw),
            Err(e) => Err(Error::new(start + e.valid_up_to(), "invalid UTF-8")),
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

    /// The ASCII run hands over to the full decoder wherever a byte it does
    /// not take appears, in the word-at-a-time part or in the tail.
    #[test]
    fn strings_leave_the_ascii_run_at_every_offset() {
        let stops: &[(&[u8], bool)] = &[
            (b"\xc3\xa9", true),
            (b"\\n", false),
            (b"\\u00e9", false),
            (b"\xff", true),
            (b"\n", true),
            (b"\"", true),
        ];
        for &(stop, borrowed) in stops {
            for len in 0..20 {
                let mut input = b"\"".to_vec();
                input.extend(std::iter::repeat_n(b'k', len));
                input.extend_from_slice(stop);
                input.extend_from_slice(b"end\"");
                // A quote ends the string there; the rest is left unread.
                let whole = stop != b"\"";
                let end = if whole { input.len() } else { len + 2 };
                let expected = serde_json::from_slice::<String>(&input[..end]);
                let mut reader = Reader::new(&input);
                let ours = reader.string();
                let context = format!("{stop:?} after {len} bytes");
                match (ours, expected) {
                    (Ok(ours), Ok(expected)) => {
                        assert_eq!(ours, expected, "{context}");
                        assert_eq!(matches!(ours, Cow::Borrowed(_)), borrowed, "{context}");
                        assert_eq!(reader.pos, end, "{context}");
                    }
                    (Err(_), Err(_)) => {}
                    (ours, expected) => panic!("{context}: ours {ours:?}, serde {expected:?}"),
                }
            }
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

    /// The open containers are kept 63 to a word under a sentinel bit: closers
    /// must still match their openers on both sides of every word boundary.
    #[test]
    fn closers_match_openers_across_the_stack_words() {
        for depth in [1, 62, 63, 64, 65, 125, 126, 127, 128, 129, 200] {
            let opener = |i: usize| if i.is_multiple_of(3) { "[" } else { "{\"k\":" };
            let closer = |i: usize| if i.is_multiple_of(3) { "]" } else { "}" };
            let mut input: String = (0..depth).map(opener).collect();
            input.push('0');
            input.extend((0..depth).rev().map(closer));
            assert_eq!(skip(input.as_bytes()), Ok(()), "depth {depth}");
            for wrong in [depth - 1, depth / 2, 0] {
                // The closer at `wrong` levels from the outside, of the other kind.
                let at = input.len() - 1 - wrong;
                let mut bad = input.clone().into_bytes();
                bad[at] = if bad[at] == b']' { b'}' } else { b']' };
                assert!(skip(&bad).is_err(), "depth {depth}, closer {wrong}");
            }
        }
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
