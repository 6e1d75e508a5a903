//! Settings parsing and validation on arbitrary bytes: no panic, and what is
//! accepted is normalised and made of valid annotation keys and patterns only.
#![no_main]

use libfuzzer_sys::fuzz_target;
use policy_core::pattern;
use policy_core::settings::Settings;

fuzz_target!(|json: &[u8]| {
    match Settings::from_json(json) {
        Ok(settings) => {
            let values = settings.values.all();
            assert!(!values.is_empty());
            assert!(values.windows(2).all(|w| w[0] < w[1]));
            for value in values {
                assert_eq!(pattern::check(value), Ok(()), "{value:?}");
            }
        }
        Err(message) => assert!(message.starts_with("invalid settings"), "{message}"),
    }
});
