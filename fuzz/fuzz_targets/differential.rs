//! The hand-written request decoder against its serde model, on arbitrary
//! bytes: both accept or both reject, and accepted inputs yield the same
//! operation, object identity, annotation keys and settings text.
#![no_main]

use annotations_policy::request::{decode, reference};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|payload: &[u8]| {
    match (decode(payload), reference::decode(payload)) {
        (Ok(ours), Ok(model)) => assert_eq!(ours, model),
        (Err(_), Err(_)) => {}
        (ours, model) => panic!("disagreement:\nours:  {ours:?}\nserde: {model:?}"),
    }
});
