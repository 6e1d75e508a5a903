//! Decoding the strings that are read (keys, kinds, names) once their plain
//! ASCII run has stopped: escapes, UTF-8 and surrogate pairs, as a Rust
//! string must hold them and serde_json reads them.

use std::borrow::Cow;

use super::{Error, Result, grammar};

#[cold]
#[inline(never)]
pub(super) fn decode_key(raw: &[u8]) -> Cow<'_, str> {
    let mut decoder = Decoder { input: raw, pos: 0 };
    match decoder.rest(0) {
        Ok(text) => text,
        Err(_) => unreachable!("a key that was read decodes again"),
    }
}

/// Decodes the rest of a string whose plain ASCII run has stopped.
pub(super) struct Decoder<'a> {
    pub(super) input: &'a [u8],
    pub(super) pos: usize,
}

impl<'a> Decoder<'a> {
    fn error<T>(&self, reason: &'static str) -> Result<T> {
        Err(Error::new(self.pos, reason))
    }

    /// The rest of a string from `self.pos`, where an escape, a byte above
    /// 0x7f or a control character stopped the ASCII run that began at
    /// `start`. Kept out of line so that the common case stays small.
    #[inline(never)]
    pub(super) fn rest(&mut self, mut start: usize) -> Result<Cow<'a, str>> {
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
    use super::super::Reader;
    use super::*;

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
}
