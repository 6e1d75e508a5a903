//! The hand-written request decoder against its serde model, on arbitrary
//! bytes: both accept or both reject, and accepted inputs yield the same
//! operation, object identity, annotation keys, settings text and whether an
//! old object is there. The same bytes, read as an old object alone, must be
//! read alike too.
#![no_main]

use libfuzzer_sys::fuzz_target;
use policy_core::request::{decode_object, reference};

fuzz_target!(|payload: &[u8]| {
    if let Err(disagreement) = reference::agree(payload) {
        panic!("disagreement: {disagreement}");
    }
    match (decode_object(payload), reference::decode_object(payload)) {
        (Ok(ours), Ok(model)) => assert_eq!(ours, model),
        (Err(_), Err(_)) => {}
        (ours, model) => panic!("object disagreement:\nours:  {ours:?}\nserde: {model:?}"),
    }
});
