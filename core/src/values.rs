//! The configured values, split the way keys are looked up in them: exact
//! names, sorted, and patterns (see `pattern`). A key is *listed* when it
//! equals an exact name or matches a pattern.

use std::collections::BTreeSet;

use crate::bytes;
use crate::pattern::Pattern;

/// Up to this many exact names, a key is looked for among them one by one:
/// their lengths rule out most keys at once, where each step of a binary
/// search is a byte-by-byte comparison.
const SCANNED: usize = 8;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Values {
    /// Every value as written, sorted and without duplicates: what messages
    /// list.
    all: Vec<String>,
    /// The values without `*`, sorted.
    exact: Vec<String>,
    /// The values with `*`, in the order of their text.
    patterns: Vec<Pattern>,
}

impl Values {
    pub fn new(values: BTreeSet<String>) -> Values {
        let mut exact = Vec::new();
        let mut patterns = Vec::new();
        for value in &values {
            match Pattern::new(value) {
                Some(pattern) => patterns.push(pattern),
                None => exact.push(value.clone()),
            }
        }
        Values {
            all: values.into_iter().collect(),
            exact,
            patterns,
        }
    }

    pub fn all(&self) -> &[String] {
        &self.all
    }

    pub fn exact(&self) -> &[String] {
        &self.exact
    }

    pub fn patterns(&self) -> &[Pattern] {
        &self.patterns
    }

    /// Where `key` stands among the exact names.
    #[inline(always)]
    pub fn exact_position(&self, key: &str) -> Option<usize> {
        let exact = &self.exact;
        if exact.len() <= SCANNED {
            exact
                .iter()
                .position(|v| bytes::equal(v.as_bytes(), key.as_bytes()))
        } else {
            exact.binary_search_by(|v| v.as_str().cmp(key)).ok()
        }
    }

    /// Whether `key` equals an exact name or matches a pattern.
    #[inline(always)]
    pub fn is_listed(&self, key: &str) -> bool {
        self.exact_position(key).is_some() || self.patterns.iter().any(|p| p.matches(key))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(names: &[&str]) -> Values {
        Values::new(names.iter().map(|s| s.to_string()).collect())
    }

    #[test]
    fn values_are_split_into_exact_names_and_patterns() {
        let v = values(&["b", "a/*", "a", "*.io/x", "a"]);
        assert_eq!(v.all(), ["*.io/x", "a", "a/*", "b"]);
        assert_eq!(v.exact(), ["a", "b"]);
        let patterns: Vec<&str> = v.patterns().iter().map(Pattern::as_str).collect();
        assert_eq!(patterns, ["*.io/x", "a/*"]);
    }

    #[test]
    fn a_key_is_listed_by_an_exact_name_or_a_pattern() {
        let v = values(&["owner", "example.com/*"]);
        assert!(v.is_listed("owner"));
        assert!(v.is_listed("example.com/team"));
        assert!(!v.is_listed("Owner"));
        assert!(!v.is_listed("other.com/team"));
    }

    /// Scanned below `SCANNED` exact names, binary-searched above.
    #[test]
    fn exact_lookup_finds_every_name_at_every_size() {
        for size in 1..20 {
            let names: Vec<String> = (0..size).map(|i| format!("k{i:02}")).collect();
            let v = Values::new(names.iter().cloned().collect());
            for (i, name) in names.iter().enumerate() {
                assert_eq!(v.exact_position(name), Some(i), "{size} names");
            }
            assert_eq!(v.exact_position("k"), None);
            assert_eq!(v.exact_position("k99"), None);
        }
    }
}
