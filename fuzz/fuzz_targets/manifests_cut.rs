//! The reader's stream, cut ahead and read List entry by List entry on
//! rayon's workers, against the same text parsed whole.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    if let Ok(text) = std::str::from_utf8(bytes)
        && let Err(disagreement) = policy_manifests::agree::cut_agrees(text)
    {
        panic!("disagreement on {text:?}:\n{disagreement}");
    }
});
