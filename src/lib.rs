//! waPC entry point and glue: the module's three functions, each answering
//! in Kubewarden's JSON. The decision itself is `policy_core::decide`.

// The module's alone (and its unit tests'): natively the crate is empty, and
// the host reads `policy-core` instead.
#[cfg(any(target_arch = "wasm32", test))]
use kubewarden_policy_sdk::{
    protocol_version_guest,
    wapc_guest::{self as guest, CallResult},
};
#[cfg(any(target_arch = "wasm32", test))]
use policy_core::{decide, response, settings::Settings};

#[cfg(any(target_arch = "wasm32", test))]
#[unsafe(no_mangle)]
pub extern "C" fn wapc_init() {
    guest::register_function("validate", validate);
    guest::register_function("validate_settings", validate_settings);
    guest::register_function("protocol_version", protocol_version_guest);
}

#[cfg(any(target_arch = "wasm32", test))]
fn validate(payload: &[u8]) -> CallResult {
    Ok(match decide(payload) {
        Ok(()) => response::accept(),
        Err(message) => response::reject(&message),
    })
}

#[cfg(any(target_arch = "wasm32", test))]
fn validate_settings(payload: &[u8]) -> CallResult {
    Ok(match Settings::from_json(payload) {
        Ok(_) => response::settings_valid(),
        Err(message) => response::settings_invalid(&message),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const REQUIRE_OWNER: &str = r#"{"criteria":"containsAllOf","values":["owner"]}"#;

    #[test]
    fn settings_answers_say_valid_or_why_not() {
        let ok = validate_settings(REQUIRE_OWNER.as_bytes()).unwrap();
        assert_eq!(ok, br#"{"valid":true}"#);
        let bad = validate_settings(b"{").unwrap();
        let bad: serde_json::Value = serde_json::from_slice(&bad).unwrap();
        assert_eq!(bad["valid"], false);
        assert!(
            bad["message"]
                .as_str()
                .unwrap()
                .contains("invalid settings")
        );
    }

    /// The message of an answer of `validate` or `validate_settings`.
    fn message_of(answer: CallResult) -> String {
        let answer: serde_json::Value = serde_json::from_slice(&answer.unwrap()).unwrap();
        answer["message"].as_str().expect("a message").to_string()
    }

    /// Errors are held to the bound rejections are held to: settings whose
    /// error runs past it (each invalid value abridged to a line, each with
    /// the longest reason), whether validated or sent with a request, and a
    /// request of megabytes that breaks off, are answered with a message
    /// under 4 KiB that still says what is wrong.
    #[test]
    fn every_error_stays_under_the_bound() {
        use policy_core::message::MAX_MESSAGE;
        let values: Vec<String> = (0..25)
            .map(|i| format!("{i:02}{}/x", "-.".repeat(100)))
            .collect();
        let settings = serde_json::json!({"criteria": "containsAllOf", "values": values});
        let whole = Settings::from_json(settings.to_string().as_bytes()).unwrap_err();
        assert!(whole.len() >= MAX_MESSAGE, "{} bytes: no cut", whole.len());
        let payload = format!(
            r#"{{"settings":{settings},"request":{{"operation":"CREATE","object":{{"kind":"Pod"}}}}}}"#
        );
        for message in [
            message_of(validate_settings(settings.to_string().as_bytes())),
            message_of(validate(payload.as_bytes())),
        ] {
            assert!(message.len() < MAX_MESSAGE, "{} bytes", message.len());
            assert!(
                message.starts_with(
                    "invalid settings: `values` holds invalid annotation names: \"00-.-."
                ),
                "{message}"
            );
            assert!(message.contains("the prefix must be a DNS subdomain"));
            assert!(message.ends_with('…'), "{message}");
        }
        let keys: String = (0..100_000).map(|i| format!(r#""k{i}":"v","#)).collect();
        let broken = format!(
            r#"{{"settings":{REQUIRE_OWNER},"request":{{"object":{{"metadata":{{"annotations":{{{keys}"#
        );
        let message = message_of(validate(broken.as_bytes()));
        assert!(message.len() < MAX_MESSAGE, "{} bytes", message.len());
        assert!(message.starts_with("malformed request: "), "{message}");
        assert!(
            message.ends_with(&format!("at byte {}", broken.len())),
            "{message}"
        );
    }
}
