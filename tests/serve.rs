//! `policy-runner serve`, the webhook that stands in for policy-server in the
//! cluster tests: an AdmissionReview's request reaches the module as
//! policy-server hands it over, and the module's answer comes back as the
//! API server expects it. (The HTTPS round trip is in e2e.bats; the cluster
//! tests, cluster/run, put it in front of a real API server.)

mod common;

use common::{pod_request, policy, read_test_data};
use policy_host::serve::{Refusal, answer};
use serde_json::{Value, json};

const OWNER_REQUIRED: &[u8] = br#"{"criteria":"containsAllOf","values":["example.com/owner"]}"#;
const ALLOWLIST: &[u8] = br#"{"criteria":"doesNotContainOtherThan","values":["example.com/*"]}"#;

fn review(request: &str) -> Vec<u8> {
    let request: Value = serde_json::from_str(request).expect("a request");
    serde_json::to_vec(&json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": request,
    }))
    .unwrap()
}

#[test]
fn an_accepted_review_answers_with_its_uid_and_no_status() {
    let request = read_test_data("ingress.json");
    let uid = serde_json::from_str::<Value>(&request).unwrap()["uid"].clone();
    assert!(uid.is_string());
    let denylist = br#"{"criteria":"doesNotContainAnyOf","values":["example.com/debug"]}"#;
    let answer = answer(&policy(), denylist, &review(&request)).expect("an answer");
    assert_eq!(
        answer,
        json!({
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "response": {"uid": uid, "allowed": true},
        })
    );
}

#[test]
fn a_refusal_carries_the_modules_message_in_its_status() {
    let request = pod_request(&["example.com/owner", "kubernetes.io/config.mirror"]);
    let answer = answer(&policy(), ALLOWLIST, &review(&request)).expect("an answer");
    assert_eq!(answer["response"]["allowed"], false);
    assert_eq!(answer["response"]["uid"], "test");
    assert_eq!(
        answer["response"]["status"]["message"],
        r#"Pod "default/web" carries annotations outside the allowed list "example.com/*"; remove "kubernetes.io/config.mirror""#
    );
    // The module's own verdict, judged directly, is the same.
    let direct = common::validate(&policy(), &request, std::str::from_utf8(ALLOWLIST).unwrap());
    assert_eq!(
        answer["response"]["status"]["message"],
        direct.message.unwrap()
    );
}

#[test]
fn what_is_no_admission_review_is_refused_naming_why() {
    let request = read_test_data("deployment.json");
    let mut wrong_version: Value = serde_json::from_slice(&review(&request)).unwrap();
    wrong_version["apiVersion"] = json!("admission.k8s.io/v1beta1");
    let mut no_uid: Value = serde_json::from_slice(&review(&request)).unwrap();
    no_uid["request"].as_object_mut().unwrap().remove("uid");
    let cases: [(Vec<u8>, &str); 4] = [
        (b"[1]".to_vec(), "not an AdmissionReview"),
        (
            serde_json::to_vec(&wrong_version).unwrap(),
            r#"expected an admission.k8s.io/v1 AdmissionReview, got apiVersion Some("admission.k8s.io/v1beta1")"#,
        ),
        (
            br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}"#.to_vec(),
            "the AdmissionReview has no request",
        ),
        (
            serde_json::to_vec(&no_uid).unwrap(),
            "the request has no uid",
        ),
    ];
    for (body, reason) in cases {
        match answer(&policy(), OWNER_REQUIRED, &body) {
            Err(Refusal::BadReview(message)) => {
                assert!(message.starts_with(reason), "{message}")
            }
            other => panic!("{}: {other:?}", String::from_utf8_lossy(&body)),
        }
    }
}
