//! `policy-runner serve`, the webhook that stands in for policy-server in the
//! cluster tests: an AdmissionReview's request reaches the module as
//! policy-server hands it over, and the module's answer comes back as the
//! API server expects it. (The HTTPS round trip is in e2e.bats; the cluster
//! tests, cluster/run, put it in front of a real API server.)

mod common;

use common::{pod_request, policy, read_test_data};
use policy_evaluator::group::Judging;
use policy_host::admission::Policy;
use policy_host::serve::{Refusal, answer};
use serde_json::{Value, json};

const OWNER_REQUIRED: &[u8] = br#"{"criteria":"containsAllOf","values":["example.com/owner"]}"#;
const ALLOWLIST: &[u8] = br#"{"criteria":"doesNotContainOtherThan","values":["example.com/*"]}"#;

fn single(settings: &[u8]) -> Judging {
    Judging::Single {
        settings: settings.to_vec(),
        mutating: false,
        name: "the-policy".to_string(),
    }
}

/// A group of the owner requirement and the allowlist, as a
/// ClusterAdmissionPolicyGroup declares it.
fn group(expression: &str) -> Judging {
    let manifest = json!({
        "apiVersion": "policies.kubewarden.io/v1",
        "kind": "ClusterAdmissionPolicyGroup",
        "metadata": {"name": "owned-and-allowed"},
        "spec": {
            "rules": [],
            "policies": {
                "owned": {"module": "m", "settings": serde_json::from_slice::<Value>(OWNER_REQUIRED).unwrap()},
                "allowed": {"module": "m", "settings": serde_json::from_slice::<Value>(ALLOWLIST).unwrap()},
            },
            "expression": expression,
            "message": "workloads name their owner and carry only example.com keys",
        },
    });
    Policy::from_manifest(&manifest)
        .expect("a group")
        .judging(&policy())
        .expect("valid settings")
}

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
    let answer = answer(&policy(), &single(denylist), &review(&request)).expect("an answer");
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
    let answer = answer(&policy(), &single(ALLOWLIST), &review(&request)).expect("an answer");
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
        match answer(&policy(), &single(OWNER_REQUIRED), &body) {
            Err(Refusal::BadReview(message)) => {
                assert!(message.starts_with(reason), "{message}")
            }
            other => panic!("{}: {other:?}", String::from_utf8_lossy(&body)),
        }
    }
}

/// A group answers as policy-server answers for a ClusterAdmissionPolicyGroup:
/// the group's message, and each member that its expression called and that
/// rejected, with its message, in `status.details.causes`.
#[test]
fn a_group_rejects_with_its_message_and_its_members_causes() {
    let both = group("owned() && allowed()");
    let foreign = review(&pod_request(&["kubernetes.io/config.mirror"]));
    let answer_of = |judging: &Judging, body: &[u8]| {
        answer(&policy(), judging, body).expect("an answer")["response"].clone()
    };
    // Each member's own rejection of the Pod, judged alone.
    let alone = |settings: &[u8]| {
        let request = pod_request(&["kubernetes.io/config.mirror"]);
        common::validate(&policy(), &request, std::str::from_utf8(settings).unwrap())
            .message
            .unwrap()
    };
    let (owner_message, allowed_message) = (alone(OWNER_REQUIRED), alone(ALLOWLIST));
    // `&&` stops at the first member that rejects.
    assert_eq!(
        answer_of(&both, &foreign),
        json!({
            "uid": "test",
            "allowed": false,
            "status": {
                "message": "workloads name their owner and carry only example.com keys",
                "details": {"causes": [{"field": "spec.policies.owned", "message": owner_message}]},
            },
        })
    );
    // Rhai's `&` calls both: both rejected, in the members' name order.
    let causes = &answer_of(&group("owned() & allowed()"), &foreign)["status"]["details"]["causes"];
    assert_eq!(
        causes,
        &json!([
            {"field": "spec.policies.allowed", "message": allowed_message},
            {"field": "spec.policies.owned", "message": owner_message},
        ])
    );
    // Accepted: no status at all.
    let owned = review(&pod_request(&["example.com/owner"]));
    assert_eq!(
        answer_of(&both, &owned),
        json!({"uid": "test", "allowed": true})
    );
    // An accepting group names no cause, though a member rejected.
    let either = group("owned() || allowed()");
    let unowned = review(&pod_request(&["example.com/team"]));
    assert_eq!(
        answer_of(&either, &unowned),
        json!({"uid": "test", "allowed": true})
    );
}

/// An expression that fails on a request is a rejection with code 500, as
/// policy-server answers it, and no member is named.
#[test]
fn a_group_whose_expression_fails_rejects_with_code_500() {
    // Taken at start-up (every member accepting), failing when one rejects:
    // `if` without `else` is `()` when its condition is false.
    let failing = group("if owned() { allowed() }");
    let unowned = review(&pod_request(&["example.com/team"]));
    let response = answer(&policy(), &failing, &unowned).expect("an answer")["response"].clone();
    assert_eq!(response["allowed"], false);
    assert_eq!(response["status"]["code"], 500);
    assert!(
        response["status"]["message"]
            .as_str()
            .unwrap()
            .starts_with("error evaluating policy group expression: "),
        "{response}"
    );
    assert!(response["status"]["details"].is_null(), "{response}");
}

/// A member whose settings are not valid stops the group before it serves,
/// naming the member, as policy-server refuses to start.
#[test]
fn a_group_with_a_members_bad_settings_is_refused_naming_the_member() {
    let manifest = json!({
        "kind": "ClusterAdmissionPolicyGroup",
        "metadata": {"name": "g"},
        "spec": {
            "rules": [],
            "policies": {
                "owned": {"module": "m", "settings": {"criteria": "containsAllOf", "values": []}},
            },
            "expression": "owned()",
            "message": "m",
        },
    });
    let error = Policy::from_manifest(&manifest)
        .unwrap()
        .judging(&policy())
        .unwrap_err();
    assert!(
        error.starts_with("the settings of owned in g are not valid: "),
        "{error}"
    );
}
