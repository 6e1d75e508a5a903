//! Values with `*`: a `*` stands for any run of characters, `/` included,
//! and for none at all. `*` cannot occur in an annotation key, so a value
//! without one is an exact name, and every settings document written for
//! exact names keeps its meaning.
//!
//! A pattern is cut at its stars into literal pieces. The first piece must
//! begin the key, the last must end it, and the pieces between are found
//! left to right, each at its first place after the one before. Taking the
//! first place is never wrong (a later one leaves less room for the rest), so
//! nothing is ever tried twice. The bound: matching compares at most
//! `(key.len() + 1) * pattern.len()` bytes, whatever the input (the two
//! ends compare at most the pattern's length; each middle piece is looked
//! for at each place of the key at most once, comparing at most its own
//! length), where a backtracking matcher can take exponential time on
//! `*a*a*a*b`. Tests count the bytes compared (`compared`) to hold it.

use crate::annotation_key::{self, KeyError};
use crate::bytes;

/// A value that holds at least one `*`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pattern {
    text: String,
    /// The first star, and the byte after the last one: the pieces that
    /// must begin and end a key are `text[..first_end]` and
    /// `text[last_start..]`.
    first_end: usize,
    last_start: usize,
}

impl Pattern {
    /// `None` when `text` holds no `*`: it is then an exact name.
    pub fn new(text: &str) -> Option<Pattern> {
        let star = |b: &u8| *b == b'*';
        let first_end = text.bytes().position(|b| star(&b))?;
        let last_start = text.as_bytes().iter().rposition(star)? + 1;
        Some(Pattern {
            text: text.to_owned(),
            first_end,
            last_start,
        })
    }

    /// The pattern as the user wrote it.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Whether `key` is one of the keys the pattern stands for.
    pub fn matches(&self, key: &str) -> bool {
        let (text, key) = (self.text.as_bytes(), key.as_bytes());
        let (first, last) = (&text[..self.first_end], &text[self.last_start..]);
        compared(first.len() + last.len());
        if key.len() < first.len() + last.len()
            || !bytes::equal(&key[..first.len()], first)
            || !bytes::equal(&key[key.len() - last.len()..], last)
        {
            return false;
        }
        let mut rest = &key[first.len()..key.len() - last.len()];
        let last_star = self.last_start - 1;
        let middle = match last_star > self.first_end {
            true => &text[self.first_end + 1..last_star],
            false => &[][..],
        };
        for piece in middle.split(|&b| b == b'*').filter(|p| !p.is_empty()) {
            match find(rest, piece) {
                Some(at) => rest = &rest[at + piece.len()..],
                None => return false,
            }
        }
        true
    }
}

/// Where `needle` first occurs in `haystack`: a plain scan, whose cost is
/// bounded by the product of the two lengths.
fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|window| {
        compared(needle.len());
        bytes::equal(window, needle)
    })
}

#[cfg(test)]
thread_local! {
    /// The bytes compared by the matcher on this thread, at most: what
    /// the tests bound, since times depend on the machine.
    static COMPARED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Counts `n` bytes compared; nothing outside tests.
#[inline(always)]
fn compared(n: usize) {
    #[cfg(test)]
    COMPARED.with(|c| c.set(c.get() + n));
    #[cfg(not(test))]
    let _ = n;
}

/// Checks a value: an exact name must be a valid annotation key, and a
/// pattern must become one when each `*` is replaced by a letter, so that
/// `example.com/*` and `*` are valid, while `example.com/*-` (which could
/// match no key) is not.
pub fn check(value: &str) -> Result<(), KeyError> {
    if value.contains('*') {
        annotation_key::check(&value.replace('*', "x"))
    } else {
        annotation_key::check(value)
    }
}

/// A matcher that follows the definition literally, trying every length
/// for every star: exponential at worst, so only for tests, on short input.
#[cfg(any(test, feature = "reference"))]
pub mod oracle {
    pub fn matches(pattern: &str, key: &str) -> bool {
        fn go(pattern: &[u8], key: &[u8]) -> bool {
            match pattern.split_first() {
                None => key.is_empty(),
                Some((b'*', rest)) => (0..=key.len()).any(|skip| go(rest, &key[skip..])),
                Some((c, rest)) => key.first() == Some(c) && go(rest, &key[1..]),
            }
        }
        go(pattern.as_bytes(), key.as_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn matches(pattern: &str, key: &str) -> bool {
        Pattern::new(pattern).expect("a pattern").matches(key)
    }

    #[test]
    fn a_star_matches_any_run_slashes_included_and_none() {
        let cases = [
            ("example.com/*", "example.com/owner", true),
            ("example.com/*", "example.com/", true),
            ("example.com/*", "example.com", false),
            ("example.com/*", "sub.example.com/owner", false),
            (
                "*.kubernetes.io/*",
                "deployment.kubernetes.io/revision",
                true,
            ),
            ("*.kubernetes.io/*", "kubernetes.io/revision", false),
            ("*", "", true),
            ("*", "a/b", true),
            ("a*", "a/b/c", true),
            ("*b", "a/b", true),
            ("*b", "a/c", false),
            ("a*a", "a", false),
            ("a*a", "aa", true),
            ("**", "x", true),
            ("a*b*c", "abc", true),
            ("a*b*c", "acb", false),
            ("a*bc*bc", "abcbc", true),
            ("a*bc*bc", "abcb", false),
            ("Example.com/*", "example.com/x", false),
        ];
        for (pattern, key, expected) in cases {
            assert_eq!(matches(pattern, key), expected, "{pattern} ~ {key}");
            assert_eq!(
                oracle::matches(pattern, key),
                expected,
                "oracle: {pattern} ~ {key}"
            );
        }
    }

    #[test]
    fn names_without_a_star_are_not_patterns() {
        assert_eq!(Pattern::new("example.com/owner"), None);
        assert_eq!(Pattern::new("a*").unwrap().as_str(), "a*");
    }

    #[test]
    fn patterns_are_valid_when_their_stars_could_be_letters() {
        for valid in [
            "example.com/*",
            "*.kubernetes.io/*",
            "*",
            "**",
            "a*b",
            "*/x",
            "x/*",
        ] {
            assert_eq!(check(valid), Ok(()), "{valid}");
        }
        let invalid = [
            ("example.com/*-", KeyError::NameBadEnds),
            ("exa mple.com/*", KeyError::PrefixBadLabel),
            ("*/*/*", KeyError::TooManySlashes),
            ("-*", KeyError::NameBadEnds),
            ("*/", KeyError::EmptyName),
            ("a*b c", KeyError::NameBadCharacter(' ')),
        ];
        for (pattern, reason) in invalid {
            assert_eq!(check(pattern), Err(reason), "{pattern}");
        }
    }

    fn short(alphabet: &'static str, max: usize) -> impl Strategy<Value = String> {
        prop::collection::vec(prop::sample::select(alphabet.as_bytes().to_vec()), 0..max)
            .prop_map(|bytes| String::from_utf8(bytes).unwrap())
    }

    /// Matches `key` and says how many bytes the matcher compared.
    fn counted(pattern: &str, key: &str) -> (bool, usize) {
        COMPARED.with(|c| c.set(0));
        let matched = matches(pattern, key);
        (matched, COMPARED.with(|c| c.get()))
    }

    fn bound(pattern: &str, key: &str) -> usize {
        (key.len() + 1) * pattern.len()
    }

    /// Inputs built to make the middle loop work hardest: a long piece that
    /// nearly matches at every place of a 100 KiB key, and many short
    /// pieces, the last of which is never found. The work reaches the order
    /// of the bound, and never passes it.
    #[test]
    fn the_work_stays_within_key_times_pattern() {
        let key = format!("x{}y", "a".repeat(100 << 10));
        let long_piece = format!("x*{}b*y", "a".repeat(58));
        let many_pieces = "*a*a*a*a*a*b*";
        for pattern in [long_piece.as_str(), many_pieces, "x*b*a*y", "*"] {
            assert_eq!(check(pattern), Ok(()), "{pattern} is a valid value");
            let (matched, work) = counted(pattern, &key);
            assert!(!matched || pattern == "*", "{pattern}");
            assert!(work <= bound(pattern, &key), "{pattern}: {work}");
        }
        let (_, work) = counted(&long_piece, &key);
        assert!(
            work > bound(&long_piece, &key) / 2,
            "{work}: the middle loop ran"
        );
        let (_, work) = counted(many_pieces, &key);
        assert!(
            work > key.len() / 2,
            "{work}: the last piece was looked for everywhere"
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4000))]

        /// Small alphabets, so that pieces recur and overlap in the key.
        #[test]
        fn matching_agrees_with_the_literal_definition(
            pattern in short("ab*/", 10).prop_map(|p| format!("{p}*")),
            key in short("ab/", 16),
            rotate in 0usize..11,
        ) {
            // The star may land anywhere, not only at the end.
            let mut chars: Vec<char> = pattern.chars().collect();
            let len = chars.len();
            chars.rotate_right(rotate % len);
            let pattern: String = chars.into_iter().collect();
            let (matched, work) = counted(&pattern, &key);
            prop_assert_eq!(matched, oracle::matches(&pattern, &key), "{} ~ {}", pattern, key);
            prop_assert!(work <= bound(&pattern, &key), "{} ~ {}: {}", pattern, key, work);
        }
    }
}
