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
//!
//! One stage a file: `scan` finds the tokens, this file reads what the
//! policy needs from them, `walk` skips a container token by token,
//! `decode` decodes the strings that are read, and `grammar` is the
//! byte-by-byte reference that names errors.

use std::borrow::Cow;
use std::fmt;

use crate::bytes;

mod decode;
mod grammar;
mod scan;
pub mod visit;
mod walk;

use decode::{Decoder, decode_key};
use scan::BLOCK;
use walk::{cursor_at, scalar, walk};

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

    /// Skips one value and returns its text, checked no further than
    /// skipping checks it.
    pub fn value_text(&mut self) -> Result<&'a [u8]> {
        self.skip_to_text().map(|(_, text)| text)
    }

    /// Skips one value; where it starts, and its text.
    fn skip_to_text(&mut self) -> Result<(usize, &'a [u8])> {
        let start = self.pos();
        let end = match self.skip_value_to()? {
            Some(end) => end,
            None => match grammar::string(self.input, start + 1) {
                Ok(end) => end,
                Err(_) => return self.syntax(),
            },
        };
        Ok((start, &self.input[start..end]))
    }

    /// Skips one value and returns its text, which must be valid UTF-8.
    pub fn raw_value(&mut self) -> Result<&'a [u8]> {
        let (start, raw) = self.skip_to_text()?;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_values_must_be_utf8_and_are_returned_exactly() {
        let mut reader = Reader::new(b"  {\"a\": [1, \"x\"]} ");
        assert_eq!(reader.raw_value().unwrap(), b"{\"a\": [1, \"x\"]}");
        assert!(Reader::new(b"[\"\xff\"]").raw_value().is_err());
    }

    #[test]
    fn errors_say_where() {
        let mut reader = Reader::new(b"[1, x]");
        let error = reader.skip_value().unwrap_err();
        assert_eq!(error.to_string(), "expected a value at byte 4");
    }
}
