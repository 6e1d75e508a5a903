//! The reader of manifests on arbitrary bytes, as a file holding them is
//! read: it never panics or hangs, and what it takes is an object with a
//! `kind` and an `apiVersion`, at a line the input has (YAML 1.1's line
//! breaks counted: NEL, LS and PS too; in UTF-16 where a mark says so).
#![no_main]

use libfuzzer_sys::fuzz_target;
use policy_manifests::{Inputs, read_bytes};

fuzz_target!(|bytes: &[u8]| {
    let mut read: Inputs = Inputs::default();
    read_bytes("fuzzed.yaml", bytes, &mut read);
    let lines = lines(bytes);
    for manifest in &read.manifests {
        let object = manifest.object();
        assert!(object["kind"].is_string(), "{object}");
        assert!(object["apiVersion"].is_string(), "{object}");
        assert!(
            (1..=lines).contains(&manifest.source.line),
            "{}",
            manifest.source
        );
    }
    for unusable in &read.unusable {
        assert!(!unusable.reason.is_empty());
        assert!(
            (1..=lines).contains(&unusable.source.line),
            "{}",
            unusable.source
        );
    }
});

/// The most lines the input can have, however it is decoded.
fn lines(bytes: &[u8]) -> usize {
    let breaks = |text: &str| {
        text.chars()
            .filter(|c| matches!(c, '\n' | '\r' | '\u{85}' | '\u{2028}' | '\u{2029}'))
            .count()
    };
    let units = |big: bool| -> String {
        let units = bytes.chunks(2).map(|pair| match pair {
            [a, b] if big => u16::from_be_bytes([*a, *b]),
            [a, b] => u16::from_le_bytes([*a, *b]),
            _ => 0xFFFD,
        });
        char::decode_utf16(units)
            .map(|c| c.unwrap_or(char::REPLACEMENT_CHARACTER))
            .collect()
    };
    let utf8 = breaks(&String::from_utf8_lossy(bytes));
    utf8.max(breaks(&units(false))).max(breaks(&units(true))) + 1
}
