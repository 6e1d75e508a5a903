//! waPC entry point and glue: decode the payload, check the settings, let the
//! evaluator judge the annotation keys, answer in Kubewarden's JSON.

pub mod annotation_key;
pub mod bytes;
pub mod criterion;
#[cfg(test)]
pub mod damage;
pub mod evaluator;
pub mod json;
pub mod message;
pub mod request;
pub mod response;
pub mod settings;

use kubewarden_policy_sdk::protocol_version_guest;
use kubewarden_policy_sdk::wapc_guest::{self as guest, CallResult};

use evaluator::Verdict;
use settings::Settings;

#[unsafe(no_mangle)]
pub extern "C" fn wapc_init() {
    guest::register_function("validate", validate);
    guest::register_function("validate_settings", validate_settings);
    guest::register_function("protocol_version", protocol_version_guest);
}

fn validate(payload: &[u8]) -> CallResult {
    Ok(match decide(payload) {
        Ok(()) => response::accept(),
        Err(message) => response::reject(&message),
    })
}

fn validate_settings(payload: &[u8]) -> CallResult {
    Ok(match Settings::from_json(payload) {
        Ok(_) => response::settings_valid(),
        Err(message) => response::settings_invalid(&message),
    })
}

/// The policy's whole decision on a `validate` payload: `Err` holds the
/// rejection message.
pub fn decide(payload: &[u8]) -> Result<(), String> {
    let payload = request::decode(payload)?;
    // A deletion has nothing to judge, and must never be blocked.
    let Some(object) = payload.object else {
        return Ok(());
    };
    if payload.operation.as_deref() == Some("DELETE") {
        return Ok(());
    }
    settings::with_cached(payload.settings.unwrap_or(b"null"), |settings| {
        let settings = settings.map_err(str::to_owned)?;
        let keys = object.annotation_keys.iter().map(|k| k.as_ref());
        match evaluator::evaluate(settings.criterion, &settings.values, keys) {
            Verdict::Accepted => Ok(()),
            Verdict::Rejected(violation) => Err(message::rejection(
                &object.subject(),
                &settings.values,
                &violation,
            )),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn payload(settings: &str, object: &str) -> String {
        format!(r#"{{"settings":{settings},"request":{{"operation":"CREATE","object":{object}}}}}"#)
    }

    const REQUIRE_OWNER: &str = r#"{"criteria":"containsAllOf","values":["owner"]}"#;

    #[test]
    fn accepts_and_rejects_by_the_settings() {
        let with_owner = r#"{"kind":"Pod","metadata":{"name":"p","annotations":{"owner":"me"}}}"#;
        let without = r#"{"kind":"Pod","metadata":{"name":"p","annotations":{"other":"me"}}}"#;
        assert_eq!(
            decide(payload(REQUIRE_OWNER, with_owner).as_bytes()),
            Ok(())
        );
        assert_eq!(
            decide(payload(REQUIRE_OWNER, without).as_bytes()),
            Err(r#"Pod "p" lacks required annotations; add "owner""#.to_string())
        );
    }

    #[test]
    fn deletions_are_accepted() {
        let delete = format!(
            r#"{{"settings":{REQUIRE_OWNER},"request":{{"operation":"DELETE","object":null,"oldObject":{{"kind":"Pod"}}}}}}"#
        );
        assert_eq!(decide(delete.as_bytes()), Ok(()));
        let delete_with_object = format!(
            r#"{{"settings":{REQUIRE_OWNER},"request":{{"operation":"DELETE","object":{{"kind":"Pod"}}}}}}"#
        );
        assert_eq!(decide(delete_with_object.as_bytes()), Ok(()));
    }

    #[test]
    fn invalid_settings_reject_with_the_settings_message() {
        let bad = r#"{"criteria":"containsAllOf","values":[]}"#;
        let error = decide(payload(bad, "{}").as_bytes()).unwrap_err();
        assert!(error.contains("`values` is empty"), "{error}");
        let error = decide(br#"{"request":{"object":{}}}"#).unwrap_err();
        assert!(error.contains("invalid settings"), "{error}");
    }

    proptest::proptest! {
        /// Through the whole decision: random keys (any text, so escapes and
        /// invalid names too) against random valid values.
        #[test]
        fn verdicts_and_messages_follow_the_formulas(
            criterion in proptest::sample::select(criterion::Criterion::ALL.to_vec()),
            keys in proptest::collection::btree_set(
                proptest::prop_oneof!["[abc]", ".{0,6}"], 0..8),
            values in proptest::collection::btree_set("[abcd]", 1..4),
        ) {
            use std::collections::BTreeSet;
            let annotations: serde_json::Map<String, serde_json::Value> =
                keys.iter().map(|k| (k.clone(), "v".into())).collect();
            let payload = serde_json::json!({
                "settings": {"criteria": criterion.name(), "values": values},
                "request": {"operation": "UPDATE", "object": {
                    "kind": "Pod", "metadata": {"name": "p", "annotations": annotations}}}
            });
            let verdict = decide(payload.to_string().as_bytes());
            let (k, v): (BTreeSet<String>, BTreeSet<String>) = (keys, values);
            if evaluator::oracle::accepts(criterion, &k, &v) {
                proptest::prop_assert_eq!(verdict, Ok(()));
            } else {
                let subject = message::Subject { kind: Some("Pod"), name: Some("p"), namespace: None };
                let values: Vec<String> = v.iter().cloned().collect();
                let expected = message::rejection(
                    &subject, &values, &evaluator::oracle::violation(criterion, &k, &v));
                proptest::prop_assert_eq!(verdict, Err(expected));
            }
        }
    }

    #[test]
    fn malformed_requests_are_rejected_not_panicking() {
        let error = decide(b"\xff\xfe").unwrap_err();
        assert!(error.starts_with("malformed request"), "{error}");
    }

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
}
