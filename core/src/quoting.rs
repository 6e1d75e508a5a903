//! How messages show text: escaped as in JSON, so that any key reads back
//! unambiguously whatever bytes it holds, in double quotes or not, whole or
//! abridged to a line's worth. A leaf: everything that words a message uses
//! it, and it uses nothing of the policy's.
//!
//! | wrapper | escaped | in quotes | at most |
//! |---|---|---|---|
//! | `Escaped` | yes | no | whole |
//! | `Quoted` | yes | yes | whole |
//! | `Abridged` | yes | no | `MAX_ABRIDGED` bytes |
//! | `QuotedAbridged` | yes | yes | `MAX_ABRIDGED` bytes and the quotes |
//!
//! (Rust's `{:?}` would escape too, but pulls Unicode tables into the
//! module.)

use std::fmt;

/// The most bytes abridged text takes, escapes included.
pub const MAX_ABRIDGED: usize = 78;
/// Of abridged text, the bytes kept from its start and from its end.
const HEAD: usize = 44;
const TAIL: usize = 30;

/// Text in double quotes, escaped, whole.
pub struct Quoted<'a>(pub &'a str);

impl fmt::Display for Quoted<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "\"{}\"", Escaped(self.0))
    }
}

/// A name as a message shows it: in double quotes, abridged.
pub struct QuotedAbridged<'a>(pub &'a str);

impl fmt::Display for QuotedAbridged<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "\"{}\"", Abridged(self.0))
    }
}

/// Escaped text of at most `MAX_ABRIDGED` bytes: a longer one keeps its
/// start and its end, where a key's prefix and name are, around an ellipsis.
pub struct Abridged<'a>(pub &'a str);

impl fmt::Display for Abridged<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = self.0;
        let bytes = text.as_bytes();
        let mut total = 0;
        if bytes.iter().all(|&b| {
            total += escaped_len(b);
            total <= MAX_ABRIDGED
        }) {
            return write!(f, "{}", Escaped(text));
        }
        // As many bytes as fit from each end, then back to a character's
        // start; an escape is never cut, since it stands for one byte.
        let (mut head, mut kept) = (0, 0);
        while kept + escaped_len(bytes[head]) <= HEAD {
            kept += escaped_len(bytes[head]);
            head += 1;
        }
        while !text.is_char_boundary(head) {
            head -= 1;
        }
        let (mut tail, mut kept) = (bytes.len(), 0);
        while kept + escaped_len(bytes[tail - 1]) <= TAIL {
            kept += escaped_len(bytes[tail - 1]);
            tail -= 1;
        }
        while !text.is_char_boundary(tail) {
            tail += 1;
        }
        write!(f, "{}…{}", Escaped(&text[..head]), Escaped(&text[tail..]))
    }
}

/// The bytes `b` takes once escaped (see `Escaped`).
fn escaped_len(b: u8) -> usize {
    match b {
        b'"' | b'\\' | b'\n' | b'\r' | b'\t' => 2,
        0..=0x1f | 0x7f => 6,
        _ => 1,
    }
}

/// Text escaped as in JSON, without quotes, whole.
pub struct Escaped<'a>(pub &'a str);

impl fmt::Display for Escaped<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut plain = 0;
        for (i, b) in self.0.bytes().enumerate() {
            let escape = match b {
                b'"' => "\\\"",
                b'\\' => "\\\\",
                b'\n' => "\\n",
                b'\r' => "\\r",
                b'\t' => "\\t",
                0..=0x1f | 0x7f => "",
                _ => continue,
            };
            f.write_str(&self.0[plain..i])?;
            if escape.is_empty() {
                write!(f, "\\u{b:04x}")?;
            } else {
                f.write_str(escape)?;
            }
            plain = i + 1;
        }
        f.write_str(&self.0[plain..])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_name_keeps_its_start_and_end() {
        let prefix = format!("{}.example.com", "sub".repeat(80));
        let key = format!("{prefix}/the-name");
        let shown = QuotedAbridged(&key).to_string();
        assert!(shown.len() <= MAX_ABRIDGED + 2, "{shown}");
        assert!(shown.starts_with("\"subsubsub"), "{shown}");
        assert!(shown.ends_with(".example.com/the-name\""), "{shown}");
        assert!(shown.contains('…'), "{shown}");
        // Short enough: shown whole.
        let key = "x".repeat(MAX_ABRIDGED);
        assert_eq!(QuotedAbridged(&key).to_string(), format!("\"{key}\""));
        let key = "x".repeat(MAX_ABRIDGED + 1);
        assert!(QuotedAbridged(&key).to_string().contains('…'));
        // Escapes are never cut in two, and count at their escaped length.
        let key = "\u{1}".repeat(100);
        let shown = QuotedAbridged(&key).to_string();
        assert!(shown.len() <= MAX_ABRIDGED + 2 + '…'.len_utf8(), "{shown}");
        assert!(
            !shown.contains("\\u0…") && !shown.contains("…001"),
            "{shown}"
        );
        let back: String = serde_json::from_str(&shown.replace('…', "")).unwrap();
        assert!(back.chars().all(|c| c == '\u{1}'), "{back:?}");
    }

    #[test]
    fn escapes_read_back_as_json() {
        for text in [
            "plain",
            "a\"b",
            "back\\slash",
            "new\nline",
            "\u{1}\u{7f}",
            "é€",
        ] {
            let quoted = Quoted(text).to_string();
            let back: String = serde_json::from_str(&quoted).unwrap();
            assert_eq!(back, text);
            assert_eq!(quoted, format!("\"{}\"", Escaped(text)));
        }
    }
}
