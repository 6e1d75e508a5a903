//! For tests only (compiled under `cfg(test)`, and included by
//! `tests/simd.rs`): damaged inputs for property tests, a generated input
//! cut short, or with one byte dropped, inserted or replaced, which a
//! decoder must reject (or accept) exactly as its reference does; and the
//! variants an enum's source text declares.

use proptest::prelude::*;

/// `input` cut short somewhere, or with one byte dropped, or with one of
/// `bytes` inserted or put in place of another; now and then left whole.
pub fn damaged(input: Vec<u8>, bytes: &'static [u8]) -> impl Strategy<Value = Vec<u8>> {
    let len = input.len();
    (0..=len, prop::sample::select(bytes), 0..5u8).prop_map(move |(at, byte, how)| {
        let mut out = input.clone();
        match how {
            0 => out.truncate(at),
            1 if at < len => {
                out.remove(at);
            }
            2 => out.insert(at, byte),
            3 if at < len => out[at] = byte,
            _ => {}
        }
        out
    })
}

/// The variants `pub enum NAME {` declares in `source` (a file's own text,
/// `include_str!`), in order: what a table of them (`ALL`) must hold.
pub fn declared_variants<'s>(source: &'s str, name: &str) -> Vec<&'s str> {
    source
        .split(&format!("pub enum {name} {{"))
        .nth(1)
        .and_then(|rest| rest.split('}').next())
        .expect("the enum")
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with("//"))
        .map(|line| line.trim_end_matches(','))
        .collect()
}
