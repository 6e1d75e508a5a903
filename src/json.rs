//! A validating JSON reader that pulls out the few values the policy needs
//! and skips everything else without building it.
//!
//! It accepts and rejects exactly what serde_json does for the request
//! decoder: strings that are read (keys, kinds, names) are decoded and must be
//! valid UTF-8 with paired surrogates, while skipped strings are only checked
//! for well-formed escapes and the absence of control characters, as
//! serde_json's `IgnoredAny` does. `request::reference` is the serde-based
//! model it is tested against.
//!
//! Reading goes in two stages, as in simdjson. `scan` first finds, 64 bytes
//! at a time, where every token of the input starts; the reader then walks
//! from token to token. Skipping a string is taking one token and skipping
//! an object is walking its tokens, with no byte-by-byte scan whose every
//! step waits on the last; only the strings that are read are decoded byte
//! by byte. The walk checks the grammar token by token, iteratively, so no
//! nesting depth can exhaust the stack. Where the input turns out not to be
//! JSON, `grammar` goes over it byte by byte to find and name the first error.

use std::borrow::Cow;
use std::fmt;

use crate::bytes;

mod grammar;
mod scan;

use scan::BLOCK;

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

/// An object's key, as `Members::next` hands it over, already checked.
/// Nearly every key holds no escape, and is compared and kept as it stands
/// in the input; one that does is decoded again where its text is needed.
#[derive(Debug, Clone, Copy)]
pub enum Key<'a> {
    Plain(&'a str),
    /// The text after the opening quote, escapes and all, and the closing
    /// quote.
    Escaped(&'a [u8]),
}

impl<'a> Key<'a> {
    /// Whether the key is `name`.
    #[inline(always)]
    pub fn is(&self, name: &str) -> bool {
        match self {
            Key::Plain(key) => bytes::equal(key.as_bytes(), name.as_bytes()),
            Key::Escaped(_) => self.text() == name,
        }
    }

    /// The key's text, borrowed from the input unless it holds an escape.
    #[inline(always)]
    pub fn text(&self) -> Cow<'a, str> {
        match *self {
            Key::Plain(key) => Cow::Borrowed(key),
            Key::Escaped(raw) => decode_key(raw),
        }
    }
}

#[cold]
#[inline(never)]
fn decode_key(raw: &[u8]) -> Cow<'_, str> {
    let mut decoder = Decoder { input: raw, pos: 0 };
    match decoder.rest(0) {
        Ok(text) => text,
        Err(_) => unreachable!("a key that was read decodes again"),
    }
}

pub struct Reader<'a> {
    input: &'a [u8],
    /// Where tokens start: a mask per 64-byte block (see `scan`).
    tokens: Vec<u64>,
    /// Whether `tokens` covers the whole input.
    complete: bool,
    /// The block of the next token, and that block's tokens not yet taken.
    block: usize,
    pending: u64,
    /// Room for the walk over a skipped container to keep deep nesting in.
    spill: Vec<u64>,
}

impl<'a> Reader<'a> {
    pub fn new(input: &'a [u8]) -> Reader<'a> {
        let scan::Tokens { masks, complete } = scan::tokens(input);
        Reader {
            input,
            pending: masks.first().copied().unwrap_or(0),
            tokens: masks,
            complete,
            block: 0,
            spill: Vec::new(),
        }
    }

    /// Where the next token starts, if there is one.
    #[inline(always)]
    fn next_token(&mut self) -> Option<usize> {
        while self.pending == 0 {
            self.pending = *self.tokens.get(self.block + 1)?;
            self.block += 1;
        }
        Some(self.block * BLOCK + self.pending.trailing_zeros() as usize)
    }

    /// Takes the next token, which the caller has looked at.
    #[inline(always)]
    fn take(&mut self) {
        self.pending &= self.pending.wrapping_sub(1);
    }

    /// Takes every token before `end`: the rest of a number or literal.
    fn take_until(&mut self, end: usize) {
        (self.block, self.pending) = cursor_at(&self.tokens, end);
    }

    /// Where the next token starts, or the end of the input.
    fn pos(&mut self) -> usize {
        self.next_token().unwrap_or(self.input.len())
    }

    fn error<T>(&mut self, reason: impl Into<Cow<'static, str>>) -> Result<T> {
        Err(Error::new(self.pos(), reason))
    }

    /// An error at the next token, for the caller's own rules.
    pub fn fail<T>(&mut self, reason: impl Into<Cow<'static, str>>) -> Result<T> {
        self.error(reason)
    }

    /// "expected <what>, found <what starts here>".
    pub fn unexpected<T>(&mut self, what: &str) -> Result<T> {
        if !self.complete && self.next_token().is_none() {
            return Err(self.syntax_error());
        }
        let found = self.found();
        self.error(format!("expected {what}, found {found}"))
    }

    /// The input is not JSON: the first error in it, found byte by byte.
    #[cold]
    #[inline(never)]
    fn syntax_error(&mut self) -> Error {
        let mut spill = Vec::new();
        let skipped =
            grammar::value(self.input, 0, &mut spill).and_then(|end| {
                match grammar::white(self.input, end) {
                    end if end == self.input.len() => Ok(end),
                    end => Err((end, "trailing characters after the JSON value")),
                }
            });
        match skipped {
            Err((offset, reason)) => Error::new(offset, reason),
            // Not reached: the tokens and the bytes tell the same story.
            Ok(_) => Error::new(self.pos(), "malformed JSON"),
        }
    }

    fn syntax<T>(&mut self) -> Result<T> {
        Err(self.syntax_error())
    }

    /// The next byte that is not white space, not consumed.
    #[inline(always)]
    pub fn peek(&mut self) -> Option<u8> {
        self.next_token().map(|at| self.input[at])
    }

    /// Names the kind of value that starts at the next token, for messages.
    pub fn found(&mut self) -> &'static str {
        let Some(at) = self.next_token() else {
            return "the end of the input";
        };
        let rest = &self.input[at..];
        match rest[0] {
            b'{' => "an object",
            b'[' => "an array",
            b'"' => "a string",
            b't' | b'f' if rest.starts_with(b"true") || rest.starts_with(b"false") => "a boolean",
            b'n' if rest.starts_with(b"null") => "null",
            b'-' | b'0'..=b'9' => "a number",
            b']' => "`]`",
            b'}' => "`}`",
            b',' => "`,`",
            b':' => "`:`",
            _ => "an invalid character",
        }
    }

    /// Fails unless only white space is left.
    pub fn end(&mut self) -> Result<()> {
        match self.next_token() {
            None if self.complete => Ok(()),
            _ => self.syntax(),
        }
    }

    /// Consumes `null` if it comes next.
    pub fn null(&mut self) -> Result<bool> {
        self.literal(b'n')
    }

    /// Consumes `true` or `false` if one comes next.
    pub fn boolean(&mut self) -> Result<Option<bool>> {
        Ok(match self.literal(b't')? {
            true => Some(true),
            false => self.literal(b'f')?.then_some(false),
        })
    }

    /// Consumes the literal (`null`, `true` or `false`) that comes next if
    /// it starts with `first`.
    fn literal(&mut self, first: u8) -> Result<bool> {
        let Some(at) = self.next_token() else {
            return Ok(false);
        };
        if self.input[at] != first {
            return Ok(false);
        }
        match scalar(self.input, at) {
            Some(end) => {
                self.take_until(end);
                Ok(true)
            }
            None => self.syntax(),
        }
    }

    /// Starts reading the object that the caller has checked starts here:
    /// `Members::next` gives its keys one by one, and the caller reads or
    /// skips each value before asking for the next key.
    pub fn members(&mut self) -> Members {
        debug_assert_eq!(self.peek(), Some(b'{'));
        self.take();
        Members { started: false }
    }

    /// Reads an array element by element; `item` must consume each one.
    /// The caller has checked that an array starts here.
    pub fn array(&mut self, mut item: impl FnMut(&mut Self) -> Result<()>) -> Result<()> {
        debug_assert_eq!(self.peek(), Some(b'['));
        self.take();
        if self.peek() == Some(b']') {
            self.take();
            return Ok(());
        }
        loop {
            item(self)?;
            match self.peek() {
                Some(b',') => self.take(),
                Some(b']') => {
                    self.take();
                    return Ok(());
                }
                _ => return self.syntax(),
            }
        }
    }

    /// Reads a key, or any string, which must start here: decoded, and
    /// checked to be valid UTF-8 with paired surrogates.
    fn key(&mut self) -> Result<Key<'a>> {
        let Some(at) = self.next_token().filter(|&at| self.input[at] == b'"') else {
            return self.syntax();
        };
        // The string's bytes hold no token: taking its opening quote leaves
        // the next token after its closing one.
        self.take();
        let start = at + 1;
        let (end, closed) = grammar::ascii_run(self.input, start);
        if closed {
            // SAFETY: the run holds ASCII bytes only, which are valid UTF-8.
            let key = unsafe { std::str::from_utf8_unchecked(&self.input[start..end]) };
            return Ok(Key::Plain(key));
        }
        let mut decoder = Decoder {
            input: self.input,
            pos: end,
        };
        Ok(match decoder.rest(start)? {
            Cow::Borrowed(key) => Key::Plain(key),
            // The decoder stops just after the closing quote.
            Cow::Owned(_) => Key::Escaped(&self.input[start..decoder.pos]),
        })
    }

    /// Reads a string that the caller has checked starts here, decoding
    /// escapes. Borrows from the input unless an escape had to be decoded.
    pub fn string(&mut self) -> Result<Cow<'a, str>> {
        // Read as a key is; the rare one with an escape is decoded again.
        Ok(self.key()?.text())
    }

    /// Skips one value of any kind and depth.
    pub fn skip_value(&mut self) -> Result<()> {
        self.skip_value_to().map(drop)
    }

    /// Skips one value, and says where it ends when that is known without
    /// looking for the end of a string.
    fn skip_value_to(&mut self) -> Result<Option<usize>> {
        let Some(at) = self.next_token() else {
            return self.syntax();
        };
        match self.input[at] {
            // Checked by `scan` already, and closed unless it is the last
            // token of input that `scan` found incomplete.
            b'"' => {
                self.take();
                if !self.complete && self.next_token().is_none() {
                    return self.syntax();
                }
                Ok(None)
            }
            b'{' | b'[' => {
                let walked = walk(
                    self.input,
                    &self.tokens,
                    &mut self.block,
                    &mut self.pending,
                    &mut self.spill,
                );
                match walked {
                    Some(end) => Ok(Some(end)),
                    None => self.syntax(),
                }
            }
            _ => match scalar(self.input, at) {
                Some(end) => {
                    self.take_until(end);
                    Ok(Some(end))
                }
                None => self.syntax(),
            },
        }
    }

    /// Skips the object that the caller has checked starts here and returns
    /// its text. Its own keys are read, as serde_json reads the keys of any
    /// object it deserialises (valid UTF-8, paired surrogates); its values
    /// are only skipped.
    pub fn object_text(&mut self) -> Result<&'a [u8]> {
        let start = self.pos();
        let mut members = self.members();
        loop {
            let at = self.pos();
            match members.next(self)? {
                Some(_) => self.skip_value()?,
                // `at` was the closing brace.
                None => return Ok(&self.input[start..=at]),
            }
        }
    }

    /// Skips one value and returns its text, which must be valid UTF-8.
    pub fn raw_value(&mut self) -> Result<&'a [u8]> {
        let start = self.pos();
        let end = match self.skip_value_to()? {
            Some(end) => end,
            None => match grammar::string(self.input, start + 1) {
                Ok(end) => end,
                Err(_) => return self.syntax(),
            },
        };
        let raw = &self.input[start..end];
        match std::str::from_utf8(raw) {
            Ok(_) => Ok(raw),
            Err(e) => Err(Error::new(start + e.valid_up_to(), "invalid UTF-8")),
        }
    }
}

/// The keys of an object being read (see `Reader::members`).
pub struct Members {
    started: bool,
}

impl Members {
    /// The next key, its colon taken, or `None` after the closing brace.
    #[inline(always)]
    pub fn next<'a>(&mut self, r: &mut Reader<'a>) -> Result<Option<Key<'a>>> {
        match (r.peek(), self.started) {
            (Some(b'}'), _) => {
                r.take();
                return Ok(None);
            }
            (Some(b'"'), false) => {}
            (Some(b','), true) => r.take(),
            _ => return r.syntax(),
        }
        self.started = true;
        let key = r.key()?;
        if r.peek() != Some(b':') {
            return r.syntax();
        }
        r.take();
        Ok(Some(key))
    }
}

/// The cursor (block, tokens not yet taken) that takes every token before
/// `end`: the rest of a number or literal, each of whose bytes is a token.
#[inline(always)]
fn cursor_at(tokens: &[u64], end: usize) -> (usize, u64) {
    let block = end / BLOCK;
    let pending = tokens.get(block).copied().unwrap_or(0);
    (block, pending & !0 << (end % BLOCK))
}

/// Where the number or literal at `at` ends. Small integers and the
/// literals, most of what an object holds, are told apart inline.
#[inline(always)]
fn scalar(input: &[u8], at: usize) -> Option<usize> {
    let word = |end: usize, word: &[u8; 4]| {
        let bytes = input.get(end - 4..end)?;
        (bytes == word).then_some(end)
    };
    match input[at] {
        b'1'..=b'9' => {
            let mut end = at + 1;
            while input.get(end).is_some_and(u8::is_ascii_digit) {
                end += 1;
            }
            match input.get(end) {
                Some(b'.' | b'e' | b'E') => grammar::number(input, at).ok(),
                _ => Some(end),
            }
        }
        b'-' | b'0' => grammar::number(input, at).ok(),
        b't' => word(at + 4, b"true"),
        b'f' => word(at + 5, b"alse"),
        b'n' => word(at + 4, b"null"),
        _ => None,
    }
}

#[cold]
#[inline(never)]
fn spill_push(spill: &mut Vec<u64>, word: u64) {
    spill.push(word);
}

#[cold]
#[inline(never)]
fn spill_pop(spill: &mut Vec<u64>) -> Option<u64> {
    spill.pop()
}

/// Walks the tokens of the object or array at the next token, checking the
/// grammar, and takes them: where it ends, or `None` where the input is not
/// JSON. The cursor (`block`, `pending`) is kept in locals on the way, and
/// nothing else is carried from one token to the next but the open
/// containers.
fn walk(
    input: &[u8],
    tokens: &[u64],
    cursor_block: &mut usize,
    cursor_pending: &mut u64,
    spill: &mut Vec<u64>,
) -> Option<usize> {
    let (mut block, mut pending) = (*cursor_block, *cursor_pending);
    let mut base = block * BLOCK;
    // The next token's position and byte, left in place.
    macro_rules! peek {
        () => {{
            while pending == 0 {
                block += 1;
                base += BLOCK;
                pending = *tokens.get(block)?;
            }
            let at = base + pending.trailing_zeros() as usize;
            debug_assert!(at < input.len());
            // SAFETY: tokens lie inside the input: `scan` pads the last
            // block with white space, which holds none.
            (at, unsafe { *input.get_unchecked(at) })
        }};
    }
    // The same, taken.
    macro_rules! next {
        () => {{
            let token = peek!();
            pending &= pending - 1;
            token
        }};
    }
    spill.clear();
    // Bit 0 is the innermost open container, set for an object; the highest
    // set bit is a sentinel, so `open == 1` means none is open in this word.
    let mut open: u64 = 1;
    let end = 'value: loop {
        let (at, byte) = next!();
        match byte {
            b'"' => {}
            b'{' | b'[' => {
                let object = byte == b'{';
                let (first, first_byte) = peek!();
                // `}` and `]` follow their openers two code points later.
                if first_byte == byte + 2 {
                    pending &= pending - 1;
                    if open == 1 {
                        break first + 1;
                    }
                } else {
                    if open >> 63 != 0 {
                        spill_push(spill, open);
                        open = 1;
                    }
                    open = open << 1 | u64::from(object);
                    if object {
                        pending &= pending - 1;
                        if first_byte != b'"' || next!().1 != b':' {
                            return None;
                        }
                    }
                    continue 'value;
                }
            }
            _ => {
                // Every byte of a number or literal is a token: take the
                // rest of them.
                let end = scalar(input, at)?;
                (block, pending) = cursor_at(tokens, end);
                base = block * BLOCK;
                if open == 1 {
                    break end;
                }
            }
        }
        // A value has ended: close containers until one goes on.
        loop {
            let (token, byte) = next!();
            let object = open & 1 != 0;
            match byte {
                b',' => {
                    if object && (next!().1 != b'"' || next!().1 != b':') {
                        return None;
                    }
                    continue 'value;
                }
                b'}' if object => {}
                b']' if !object => {}
                _ => return None,
            }
            open >>= 1;
            if open == 1 {
                match spill_pop(spill) {
                    Some(word) => open = word,
                    None => break 'value token + 1,
                }
            }
        }
    };
    (*cursor_block, *cursor_pending) = (block, pending);
    Some(end)
}

/// Decodes the rest of a string whose plain ASCII run has stopped.
struct Decoder<'a> {
    input: &'a [u8],
    pos: usize,
}

impl<'a> Decoder<'a> {
    fn error<T>(&self, reason: &'static str) -> Result<T> {
        Err(Error::new(self.pos, reason))
    }

    /// The rest of a string from `self.pos`, where an escape, a byte above
    /// 0x7f or a control character stopped the ASCII run that began at
    /// `start`. Kept out of line so that the common case stays small.
    #[inline(never)]
    fn rest(&mut self, mut start: usize) -> Result<Cow<'a, str>> {
        let mut owned: Option<Vec<u8>> = None;
        loop {
            self.pos = grammar::plain_end(self.input, self.pos);
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::damaged;
    use proptest::prelude::*;

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
            // At every offset in a block, and across a block's end.
            for shift in 0..=BLOCK {
                let input = [&vec![b' '; shift][..], input].concat();
                assert_eq!(
                    skip(&input).is_ok(),
                    expected.is_ok(),
                    "{:?}: {:?} vs serde {:?}",
                    String::from_utf8_lossy(&input),
                    skip(&input),
                    expected
                );
            }
        }
    }

    /// The walk over tokens against the byte-by-byte grammar (`grammar`), which is what
    /// names errors, on a whole document: both accept or both reject, and
    /// the value ends at the same byte.
    fn agrees_with_bytes(input: &[u8]) -> std::result::Result<(), TestCaseError> {
        let mut reader = Reader::new(input);
        let walked = reader
            .skip_value()
            .map(|()| reader.pos())
            .and_then(|end| reader.end().map(|()| end));
        let mut spill = Vec::new();
        let stepped = grammar::value(input, 0, &mut spill)
            .map(|end| grammar::white(input, end))
            .and_then(|end| match end == input.len() {
                true => Ok(end),
                false => Err((end, "trailing characters")),
            });
        match (&walked, &stepped) {
            (Ok(walked), Ok(stepped)) => prop_assert_eq!(walked, stepped),
            (Err(_), Err(_)) => {}
            _ => prop_assert!(
                false,
                "{:?}: walked {walked:?}, stepped {stepped:?}",
                String::from_utf8_lossy(input)
            ),
        }
        Ok(())
    }

    /// JSON values of every kind with the white space, escapes and numbers
    /// that the tokens must get right, long enough to cross blocks.
    fn value() -> impl Strategy<Value = Vec<u8>> {
        let white = prop::sample::select(vec![&b""[..], b" ", b"\n  ", b"\t"]);
        let text = prop::collection::vec(
            prop::sample::select(vec![
                &b"abc"[..],
                b"\\\"",
                b"\\\\",
                b"\\u00e9",
                b"\\n",
                b"\xc3\xa9",
                b"{}[],:",
                b"long text that runs on",
            ]),
            0..6,
        )
        .prop_map(|pieces| [&b"\""[..], &pieces.concat(), b"\""].concat());
        let scalar = prop_oneof![
            prop::sample::select(vec![
                &b"0"[..],
                b"-1",
                b"12",
                b"3.25e-7",
                b"true",
                b"false",
                b"null",
                b"1234567890123",
            ])
            .prop_map(<[u8]>::to_vec),
            text.clone(),
        ];
        scalar.prop_recursive(6, 64, 6, move |inner| {
            let white = white.clone();
            let member = (text.clone(), white.clone(), inner.clone())
                .prop_map(|(k, w, v)| [k, w.to_vec(), b":".to_vec(), w.to_vec(), v].concat());
            prop_oneof![
                (prop::collection::vec(inner, 0..6), white.clone()).prop_map(|(items, w)| {
                    [
                        &b"["[..],
                        w,
                        &items.join(&[w, b",", w].concat()[..]),
                        w,
                        b"]",
                    ]
                    .concat()
                }),
                (prop::collection::vec(member, 0..6), white).prop_map(|(members, w)| {
                    [
                        &b"{"[..],
                        w,
                        &members.join(&[w, b",", w].concat()[..]),
                        w,
                        b"}",
                    ]
                    .concat()
                }),
            ]
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(3000))]

        #[test]
        fn walking_agrees_with_the_bytes(input in value(), shift in 0..=BLOCK) {
            agrees_with_bytes(&[&vec![b' '; shift][..], &input].concat())?;
        }

        #[test]
        fn walking_agrees_with_the_bytes_on_damaged_values(
            input in value().prop_flat_map(|v| damaged(v, b"{}[]\",:\\ \n\x01nt0-e.x")),
            shift in 0..=BLOCK,
        ) {
            agrees_with_bytes(&[&vec![b' '; shift][..], &input].concat())?;
        }
    }

    use serde::Deserialize;

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
            assert_eq!(reader.pos(), input.len());
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
                        assert_eq!(reader.pos(), end, "{context}");
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
