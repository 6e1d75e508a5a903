//! The answers to `validate` and `validate_settings`, written directly: they
//! are a few bytes of JSON, and serialising the SDK's structs would pull
//! `serde_json::Value` and a `HashMap` into the module for fields that are
//! always absent. Fields left out read as `None` on the host side.

use std::fmt::Write as _;

use crate::message;
use crate::quoting::Escaped;

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
/// written straight into the answer. Every message passes here, so here it
/// is held to `message::bounded`, whatever made it: a rejection, a
/// malformed request, invalid settings.
fn with_message(head: &str, message: &str) -> Vec<u8> {
    let (kept, more) = message::bounded(message);
    let mut out = String::with_capacity(head.len() + kept.len() + more.len() + 3);
    out.push_str(head);
    // Writing to a String cannot fail.
    let _ = write!(out, "\"{}{more}\"", Escaped(kept));
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

    /// A message too long for `message::bounded` is cut in the answer, in
    /// both answers alike.
    #[test]
    fn every_message_is_bounded() {
        let long = format!("invalid settings: {}", "x".repeat(10_000));
        let rejected: ValidationResponse = serde_json::from_slice(&reject(&long)).unwrap();
        let invalid: SettingsValidationResponse =
            serde_json::from_slice(&settings_invalid(&long)).unwrap();
        for shown in [rejected.message.unwrap(), invalid.message.unwrap()] {
            assert!(shown.len() < message::MAX_MESSAGE, "{}", shown.len());
            let kept = shown.strip_suffix('…').expect("cut");
            assert!(long.starts_with(kept));
        }
    }

    proptest! {
        #[test]
        fn any_message_round_trips(message in any::<String>().prop_filter(
            "shorter than the bound",
            |m| m.len() < crate::message::MAX_MESSAGE,
        )) {
            let rejected: ValidationResponse = serde_json::from_slice(&reject(&message)).unwrap();
            prop_assert_eq!(rejected.message, Some(message.clone()));
            let invalid: SettingsValidationResponse =
                serde_json::from_slice(&settings_invalid(&message)).unwrap();
            prop_assert_eq!(invalid.message, Some(message));
        }
    }
}
