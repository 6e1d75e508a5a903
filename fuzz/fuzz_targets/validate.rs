//! The whole `validate` path on arbitrary payload bytes: decoding, settings,
//! evaluation and the answer. It must never panic, and always answer JSON.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|payload: &[u8]| {
    let answer = match policy_core::decide(payload) {
        Ok(()) => policy_core::response::accept(),
        Err(message) => {
            assert!(!message.is_empty());
            policy_core::response::reject(&message)
        }
    };
    let answer: serde_json::Value = serde_json::from_slice(&answer).expect("answer is JSON");
    assert!(answer["accepted"].is_boolean());
});
