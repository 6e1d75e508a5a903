//! The answers to `validate` and `validate_settings`, written directly: they
//! are a few bytes of JSON, and serialising the SDK's structs would pull
//! `serde_json::Value` and a `HashMap` into the module for fields that are
//! always absent. Fields left out read as `None` on the host side.

use std::fmt::Write as _;

use crate::quoting::Quoted;

/// `{"accepted":true}`
pub fn accept() -> Vec<u8> {
    br#"{"accepted":true}"#.to_vec()
}

/// `{"accepted":false,"message":...}`
pub fn reject(message: &str) -> Vec<u8> {
    with_message(r#"{"accepted":false,"message":"#, message)
}

/// `{"valid":true}`
pub fn settings_valid() -> Vec<u8> {
    br#"{"valid":true}"#.to_vec()
}

/// `{"valid":false,"message":...}`
pub fn settings_invalid(message: &str) -> Vec<u8> {
    with_message(r#"{"valid":false,"message":"#, message)
}

/// `message` is quoted the way messages are everywhere: JSON's escapes,
/// written straight into the answer (a rejection can list thousands of keys).
fn with_message(head: &str, message: &str) -> Vec<u8> {
    let mut out = String::with_capacity(head.len() + message.len() + 3);
    out.push_str(head);
    // Writing to a String cannot fail.
    let _ = write!(out, "{}", Quoted(message));
    out.push('}');
    out.into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;
    use kubewarden_policy_sdk::response::ValidationResponse;
    use kubewarden_policy_sdk::settings::SettingsValidationResponse;
    use proptest::prelude::*;

    #[test]
    fn answers_read_back_as_the_sdk_types() {
        let accepted: ValidationResponse = serde_json::from_slice(&accept()).unwrap();
        assert!(accepted.accepted && accepted.message.is_none() && accepted.code.is_none());
        let rejected: ValidationResponse = serde_json::from_slice(&reject("no")).unwrap();
        assert!(!rejected.accepted);
        assert_eq!(rejected.message.as_deref(), Some("no"));
        let valid: SettingsValidationResponse = serde_json::from_slice(&settings_valid()).unwrap();
        assert!(valid.valid && valid.message.is_none());
        let invalid: SettingsValidationResponse =
            serde_json::from_slice(&settings_invalid("bad")).unwrap();
        assert!(!invalid.valid);
        assert_eq!(invalid.message.as_deref(), Some("bad"));
    }

    proptest! {
        #[test]
        fn any_message_round_trips(message in any::<String>()) {
            let rejected: ValidationResponse = serde_json::from_slice(&reject(&message)).unwrap();
            prop_assert_eq!(rejected.message, Some(message.clone()));
            let invalid: SettingsValidationResponse =
                serde_json::from_slice(&settings_invalid(&message)).unwrap();
            prop_assert_eq!(invalid.message, Some(message));
        }
    }
}
