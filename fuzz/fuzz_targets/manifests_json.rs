//! Bytes that serde_json reads as a stream of JSON values, read by the
//! reader of manifests as those values (kubectl reads a JSON stream with
//! Go's encoding/json).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    if let Err(disagreement) = policy_manifests::agree::json_agrees(bytes) {
        panic!(
            "disagreement on {:?}:\n{disagreement}",
            String::from_utf8_lossy(bytes)
        );
    }
});
