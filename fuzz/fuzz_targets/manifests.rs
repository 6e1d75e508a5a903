//! The reader of manifests on arbitrary bytes, as a file holding them is
//! read: it never panics or hangs, and what it takes is an object with a
//! `kind` and an `apiVersion`, at a line the input has.
#![no_main]

use libfuzzer_sys::fuzz_target;
use policy_manifests::{Inputs, read_bytes};

fuzz_target!(|bytes: &[u8]| {
    let mut read: Inputs = Inputs::default();
    read_bytes("fuzzed.yaml", bytes, &mut read);
    let lines = bytes.iter().filter(|&&b| b == b'\n' || b == b'\r').count() + 1;
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
