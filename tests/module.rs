//! The compiled `policy.wasm`, run through the project's waPC host with the
//! payloads policy-server sends.

mod common;

use common::{pod_request, policy, read_test_data, settings, validate};
use policy_core::criterion::Criterion;
use policy_evaluator::HostError;

#[test]
fn protocol_version_is_v1() {
    assert_eq!(policy().protocol_version().unwrap(), "v1");
}

/// A column per criterion, in the order of `Criterion::ALL`.
#[test]
fn truth_tables_through_the_module() {
    let rows: [(&[&str], &str); 8] = [
        (&["a"], "ARRARA"),
        (&["b"], "ARRARA"),
        (&["a", "b"], "ARARRA"),
        (&["a", "b", "c"], "ARARAR"),
        (&["c"], "RARAAR"),
        (&["a", "c"], "ARRAAR"),
        (&["b", "c"], "ARRAAR"),
        (&[], "RARARA"),
    ];
    let policy = policy();
    for (keys, expected) in rows {
        assert_eq!(
            expected.len(),
            Criterion::ALL.len(),
            "a criterion lacks its column"
        );
        let request = pod_request(keys);
        for (criterion, cell) in Criterion::ALL.into_iter().zip(expected.chars()) {
            let settings = settings(criterion.name(), &["a", "b"]);
            let verdict = validate(&policy, &request, &settings);
            assert_eq!(
                verdict.accepted,
                cell == 'A',
                "{criterion} on {keys:?}: {verdict:?}"
            );
            assert_eq!(verdict.message.is_none(), verdict.accepted, "{verdict:?}");
        }
    }
}

#[test]
fn rejections_say_what_to_fix() {
    let policy = policy();
    let cases = [
        (
            "containsAllOf",
            &["a", "x"][..],
            r#"Pod "default/web" lacks required annotations; add "b""#,
        ),
        (
            "doesNotContainOtherThan",
            &["z", "a", "y"][..],
            r#"Pod "default/web" carries annotations outside the allowed list "a", "b"; remove "y", "z""#,
        ),
        (
            "doesNotContainAnyOf",
            &["b", "x", "a"][..],
            r#"Pod "default/web" carries forbidden annotations; remove "a", "b""#,
        ),
    ];
    for (criteria, keys, message) in cases {
        let verdict = validate(
            &policy,
            &pod_request(keys),
            &settings(criteria, &["b", "a"]),
        );
        assert!(!verdict.accepted);
        assert_eq!(verdict.message.as_deref(), Some(message));
    }
}

#[test]
fn invalid_settings_answer_valid_false_with_a_message() {
    let policy = policy();
    let cases = [
        "",
        "not json",
        "null",
        "{}",
        "[]",
        "42",
        r#"{"values":["a"]}"#,
        r#"{"criteria":"containsAnyOf"}"#,
        r#"{"criteria":"bogus","values":["a"]}"#,
        r#"{"criteria":7,"values":["a"]}"#,
        r#"{"criteria":"containsAnyOf","values":"a"}"#,
        r#"{"criteria":"containsAnyOf","values":["a",1]}"#,
        r#"{"criteria":"containsAnyOf","values":[]}"#,
        r#"{"criteria":"containsAnyOf","values":["a"],"valuess":["b"]}"#,
        r#"{"criteria":"containsAnyOf","values":["-x","a/b/c","/x","example.com/"]}"#,
        "{\"criteria\":\"containsAnyOf\",\"values\":[\"\u{e9}\"]}",
    ];
    for settings in cases {
        let verdict = policy
            .validate_settings(settings.as_bytes())
            .unwrap_or_else(|e| panic!("{settings}: {e}"));
        assert!(!verdict.valid, "{settings}");
        let message = verdict.message.unwrap_or_default();
        assert!(
            message.starts_with("invalid settings"),
            "{settings}: {message}"
        );
    }
    let valid = policy
        .validate_settings(br#"{"criteria":"ContainsAnyOf","values":["Example.com/Owner"]}"#)
        .unwrap();
    assert!(valid.valid, "{valid:?}");
}

#[test]
fn malformed_payloads_are_rejected_without_trapping() {
    let policy = policy();
    let nested = format!("{}{}", "[".repeat(500), "]".repeat(500));
    let s = settings("containsAnyOf", &["a"]);
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (b"not json".to_vec(), "malformed request"),
        (b"\xff\xfe\x00".to_vec(), "malformed request"),
        (format!(r#"{{"settings":{s}}}"#).into_bytes(), "missing field `request`"),
        (
            format!(r#"{{"request":{{"object":"pod"}},"settings":{s}}}"#).into_bytes(),
            "`request.object` to be a JSON object",
        ),
        (
            format!(r#"{{"request":{{"object":{{"metadata":{{"annotations":["a"]}}}}}},"settings":{s}}}"#)
                .into_bytes(),
            "`metadata.annotations` to be a JSON object",
        ),
        (
            format!(r#"{{"request":{{"object":{{"spec":{nested}"#).into_bytes(),
            "malformed request",
        ),
    ];
    for (payload, fragment) in cases {
        let verdict = policy.validate_payload(&payload).unwrap_or_else(|e| {
            panic!(
                "{}: {e}",
                String::from_utf8_lossy(&payload[..40.min(payload.len())])
            )
        });
        assert!(!verdict.accepted);
        let message = verdict.message.unwrap_or_default();
        assert!(message.contains(fragment), "{message:?} lacks {fragment:?}");
    }
}

#[test]
fn large_and_deep_objects_are_evaluated_normally() {
    let policy = policy();
    let nested = format!("{}0{}", "[{\"x\":".repeat(500), "}]".repeat(500));
    let big = "x".repeat(3 << 20);
    for spec in [nested, format!("{{\"blob\":\"{big}\"}}")] {
        for (keys, accepted) in [(r#"{"a":"1"}"#, true), (r#"{"c":"1"}"#, false)] {
            let request = format!(
                r#"{{"uid":"u","operation":"CREATE","object":{{"kind":"Widget","spec":{spec},"metadata":{{"name":"w","annotations":{keys}}}}}}}"#
            );
            let verdict = validate(&policy, &request, &settings("containsAnyOf", &["a"]));
            assert_eq!(verdict.accepted, accepted, "{:?}", verdict.message);
        }
    }
}

#[test]
fn deletions_are_accepted() {
    let policy = policy();
    let request = read_test_data("delete.json");
    for criteria in ["containsAllOf", "doesNotContainAnyOf", "containsOtherThan"] {
        let verdict = validate(
            &policy,
            &request,
            &settings(criteria, &["forbidden.example.com/debug"]),
        );
        assert!(verdict.accepted, "{criteria}: {verdict:?}");
    }
}

#[test]
fn test_data_requests() {
    let policy = policy();
    let cases = [
        (
            "ingress.json",
            "containsAllOf",
            &["owner", "cost-center"][..],
            true,
        ),
        (
            "ingress.json",
            "doesNotContainOtherThan",
            &["owner"][..],
            false,
        ),
        (
            "deployment.json",
            "containsAnyOf",
            &["example.com/application"][..],
            true,
        ),
        (
            "deployment.json",
            "doesNotContainAnyOf",
            &["owner"][..],
            false,
        ),
        (
            "pod-no-annotations.json",
            "containsAnyOf",
            &["owner"][..],
            false,
        ),
        (
            "pod-no-annotations.json",
            "doesNotContainOtherThan",
            &["owner"][..],
            true,
        ),
        (
            "custom-resource.json",
            "containsAllOf",
            &["owner", "example.com/application"][..],
            true,
        ),
        (
            "custom-resource.json",
            "containsOtherThan",
            &["owner", "example.com/application"][..],
            false,
        ),
    ];
    for (file, criteria, values, accepted) in cases {
        let verdict = validate(&policy, &read_test_data(file), &settings(criteria, values));
        assert_eq!(verdict.accepted, accepted, "{file} {criteria}: {verdict:?}");
    }
}

#[test]
fn the_host_reports_a_call_to_a_missing_function() {
    match policy().call("no_such_function", b"{}") {
        Err(HostError::Guest(message)) | Err(HostError::Trap(message)) => {
            assert!(!message.is_empty())
        }
        other => panic!("expected an error, got {other:?}"),
    }
}
