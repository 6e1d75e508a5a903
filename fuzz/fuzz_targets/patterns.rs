//! The pattern matcher against the literal definition of `*` (a recursive
//! matcher that tries every length for every star), on short keys and
//! patterns over a small alphabet, so that pieces recur and overlap.
#![no_main]

use libfuzzer_sys::fuzz_target;
use policy_core::pattern::{Pattern, oracle};

/// Bytes mapped onto `a`, `b`, `/` and `*` (only in the pattern).
fn text(bytes: &[u8], alphabet: &[u8]) -> String {
    bytes
        .iter()
        .map(|b| char::from(alphabet[usize::from(*b) % alphabet.len()]))
        .collect()
}

fuzz_target!(|input: (Vec<u8>, Vec<u8>)| {
    let (pattern, key) = input;
    // The oracle is exponential in the stars; keep its input small.
    let pattern = text(&pattern[..pattern.len().min(12)], b"ab/*");
    let key = text(&key[..key.len().min(24)], b"ab/");
    if pattern.matches('*').count() > 5 {
        return;
    }
    let expected = oracle::matches(&pattern, &key);
    match Pattern::new(&pattern) {
        Some(compiled) => assert_eq!(compiled.matches(&key), expected, "{pattern:?} ~ {key:?}"),
        None => assert_eq!(pattern == key, expected, "{pattern:?} ~ {key:?}"),
    }
});
