//! Kubernetes' rule for annotation keys, written out by hand.
//!
//! apimachinery's `ValidateAnnotations` runs `IsQualifiedName` on the
//! lower-cased key, so `Example.com/Owner` is a valid key even though a DNS
//! subdomain must be lower case. We follow that definition exactly, including
//! Go's per-character lower-casing and its byte-based length limits.

use std::fmt;

use crate::quoting::Quoted;

const MAX_NAME_LENGTH: usize = 63;
const MAX_PREFIX_LENGTH: usize = 253;

/// Why a string is not a valid annotation key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyError {
    EmptyName,
    NameTooLong(usize),
    NameBadEnds,
    NameBadCharacter(char),
    EmptyPrefix,
    PrefixTooLong(usize),
    PrefixBadLabel,
    TooManySlashes,
}

impl fmt::Display for KeyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeyError::EmptyName => f.write_str("the name part is empty"),
            KeyError::NameTooLong(len) => write!(
                f,
                "the name part is {len} characters long, the limit is {MAX_NAME_LENGTH}"
            ),
            KeyError::NameBadEnds => {
                f.write_str("the name part must start and end with a letter or a digit")
            }
            KeyError::NameBadCharacter(c) => write!(
                f,
                "the name part holds {}, but only letters, digits, '-', '_' and '.' are allowed",
                Quoted(c.encode_utf8(&mut [0; 4]))
            ),
            KeyError::EmptyPrefix => f.write_str("the prefix before '/' is empty"),
            KeyError::PrefixTooLong(len) => write!(
                f,
                "the prefix is {len} characters long, the limit is {MAX_PREFIX_LENGTH}"
            ),
            KeyError::PrefixBadLabel => f.write_str(
                "the prefix must be a DNS subdomain: dot-separated labels of letters, digits \
                 and '-', each starting and ending with a letter or a digit",
            ),
            KeyError::TooManySlashes => {
                f.write_str("a key holds at most one '/', between the prefix and the name")
            }
        }
    }
}

/// Checks `key` the way the Kubernetes API server checks an annotation key.
pub fn check(key: &str) -> Result<(), KeyError> {
    let lowered = go_lowercase(key);
    let mut parts = lowered.split('/');
    let first = parts.next().unwrap_or_default();
    let (prefix, name) = match (parts.next(), parts.next()) {
        (None, _) => (None, first),
        (Some(name), None) => (Some(first), name),
        (Some(_), Some(_)) => return Err(KeyError::TooManySlashes),
    };
    if let Some(prefix) = prefix {
        check_prefix(prefix)?;
    }
    check_name(name)
}

fn check_name(name: &str) -> Result<(), KeyError> {
    let bytes = name.as_bytes();
    let (Some(&first), Some(&last)) = (bytes.first(), bytes.last()) else {
        return Err(KeyError::EmptyName);
    };
    if bytes.len() > MAX_NAME_LENGTH {
        return Err(KeyError::NameTooLong(bytes.len()));
    }
    if let Some(bad) = name
        .chars()
        .find(|&c| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
    {
        return Err(KeyError::NameBadCharacter(bad));
    }
    if !first.is_ascii_alphanumeric() || !last.is_ascii_alphanumeric() {
        return Err(KeyError::NameBadEnds);
    }
    Ok(())
}

fn check_prefix(prefix: &str) -> Result<(), KeyError> {
    if prefix.is_empty() {
        return Err(KeyError::EmptyPrefix);
    }
    if prefix.len() > MAX_PREFIX_LENGTH {
        return Err(KeyError::PrefixTooLong(prefix.len()));
    }
    let label_ok = |label: &str| {
        let bytes = label.as_bytes();
        match (bytes.first(), bytes.last()) {
            (Some(first), Some(last)) => {
                is_lower_alphanumeric(*first)
                    && is_lower_alphanumeric(*last)
                    && bytes.iter().all(|&b| is_lower_alphanumeric(b) || b == b'-')
            }
            _ => false,
        }
    };
    if prefix.split('.').all(label_ok) {
        Ok(())
    } else {
        Err(KeyError::PrefixBadLabel)
    }
}

fn is_lower_alphanumeric(b: u8) -> bool {
    b.is_ascii_lowercase() || b.is_ascii_digit()
}

/// Go's `strings.ToLower`, as far as it decides validity: only two non-ASCII
/// characters lower-case to ASCII (U+212A KELVIN SIGN to `k`, U+0130 to `i`);
/// any other non-ASCII character makes the key invalid however it is cased,
/// so it is left as it is rather than pulling Unicode's case tables into the
/// module. (Go would measure such a key's length after lower-casing: the key
/// is invalid either way, only the reason given may differ.)
fn go_lowercase(key: &str) -> String {
    key.chars()
        .map(|c| match c {
            '\u{212A}' => 'k',
            '\u{130}' => 'i',
            c => c.to_ascii_lowercase(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repeat(c: char, n: usize) -> String {
        std::iter::repeat_n(c, n).collect()
    }

    /// A prefix of exactly `len` characters made of 63-character labels.
    fn prefix_of(len: usize) -> String {
        let mut prefix = String::new();
        while prefix.len() < len {
            if !prefix.is_empty() {
                prefix.push('.');
            }
            let room = (len - prefix.len()).min(63);
            prefix.push_str(&repeat('a', room));
        }
        prefix
    }

    #[test]
    fn valid_keys() {
        let cases = [
            "a".to_string(),
            "a/b".to_string(),
            "my_annotation".to_string(),
            "cost-center".to_string(),
            "example.com/application".to_string(),
            "Example.com/Owner".to_string(),
            "EXAMPLE.COM/OWNER".to_string(),
            "app.kubernetes.io/name".to_string(),
            "a.b-c_d".to_string(),
            "0".to_string(),
            "9-9".to_string(),
            "1.2.3/x".to_string(),
            repeat('x', 63),
            format!("{}/{}", prefix_of(253), repeat('n', 63)),
            // Go lower-cases these to ASCII before checking, as Kubernetes does.
            "\u{212A}elvin".to_string(),
            "\u{130}stanbul".to_string(),
            repeat('\u{212A}', 63),
        ];
        for key in &cases {
            assert_eq!(check(key), Ok(()), "{key:?}");
        }
    }

    #[test]
    fn invalid_keys() {
        let cases = [
            ("", KeyError::EmptyName),
            ("/x", KeyError::EmptyPrefix),
            ("example.com/", KeyError::EmptyName),
            ("-x", KeyError::NameBadEnds),
            ("x-", KeyError::NameBadEnds),
            ("_x", KeyError::NameBadEnds),
            ("x.", KeyError::NameBadEnds),
            ("a/b/c", KeyError::TooManySlashes),
            ("//", KeyError::TooManySlashes),
            ("has space", KeyError::NameBadCharacter(' ')),
            (" x", KeyError::NameBadCharacter(' ')),
            ("ünicode", KeyError::NameBadCharacter('ü')),
            ("a:b", KeyError::NameBadCharacter(':')),
            ("exa_mple.com/x", KeyError::PrefixBadLabel),
            ("-example.com/x", KeyError::PrefixBadLabel),
            ("example-.com/x", KeyError::PrefixBadLabel),
            ("example..com/x", KeyError::PrefixBadLabel),
            (".example.com/x", KeyError::PrefixBadLabel),
            ("example.com./x", KeyError::PrefixBadLabel),
            ("exämple.com/x", KeyError::PrefixBadLabel),
            ("ex ample.com/x", KeyError::PrefixBadLabel),
        ];
        for (key, expected) in cases {
            assert_eq!(check(key), Err(expected), "{key:?}");
        }
    }

    #[test]
    fn length_limits_are_exact() {
        assert_eq!(check(&repeat('x', 64)), Err(KeyError::NameTooLong(64)));
        let long_prefix = format!("{}/x", prefix_of(254));
        assert_eq!(check(&long_prefix), Err(KeyError::PrefixTooLong(254)));
        // Go measures bytes of the lower-cased key: 'ü' counts twice.
        let multibyte = format!("{}ü", repeat('x', 62));
        assert_eq!(check(&multibyte), Err(KeyError::NameTooLong(64)));
    }

    #[test]
    fn errors_read_as_sentences() {
        assert!(KeyError::NameTooLong(64).to_string().contains("64"));
        assert!(
            KeyError::NameBadCharacter(' ')
                .to_string()
                .contains("holds \" \",")
        );
        assert!(KeyError::EmptyPrefix.to_string().contains("prefix"));
    }
}
