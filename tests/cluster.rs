//! The requests a cluster sends on its own (`test_data/cluster/`): a
//! Deployment applied, rolled out, restarted, autoscaled and deleted, and a
//! CronJob's run, as the API server hands them to the policy. Under the
//! README's recommended settings every one is accepted; the settings the
//! README warns against reject exactly the requests it says they do.

mod common;

use std::path::PathBuf;

use common::{policy, root, validate};
use serde_json::Value;

/// The README's recommended settings for workloads.
const OWNER_REQUIRED: &str = r#"{"criteria":"containsAllOf","values":["example.com/owner"]}"#;
const ALLOWLIST: &str = r#"{"criteria":"doesNotContainOtherThan","values":["example.com/*","kubectl.kubernetes.io/*","deployment.kubernetes.io/*","batch.kubernetes.io/*"]}"#;
const DENYLIST: &str =
    r#"{"criteria":"doesNotContainAnyOf","values":["example.com/debug","example.com/skip-*"]}"#;

/// What the README warns against: an allowlist of the user's own keys, and
/// every update judged on its new object alone.
const EXACT_ALLOWLIST: &str = r#"{"criteria":"doesNotContainOtherThan","values":["example.com/owner","kubectl.kubernetes.io/last-applied-configuration"]}"#;
const STRICT_OWNER: &str = r#"{"criteria":"containsAllOf","values":["example.com/owner"],"allowExistingViolations":false}"#;

fn requests() -> Vec<(String, String)> {
    let dir = root().join("test_data/cluster");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("test_data/cluster")
        .map(|entry| entry.expect("entry").path())
        .collect();
    paths.sort();
    assert_eq!(paths.len(), 12, "{paths:?}");
    paths
        .into_iter()
        .map(|path| {
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read_to_string(&path).expect("request"))
        })
        .collect()
}

/// The requests carry what the API server puts in them: the objects a
/// controller creates name their owner, every object its field managers,
/// and every update the object it replaces.
#[test]
fn the_requests_are_shaped_as_the_api_server_sends_them() {
    for (name, text) in requests() {
        let request: Value = serde_json::from_str(&text).expect(&name);
        for field in [
            "uid",
            "kind",
            "resource",
            "namespace",
            "operation",
            "userInfo",
            "options",
        ] {
            assert!(!request[field].is_null(), "{name} lacks {field}");
        }
        let metadata = &request["object"]["metadata"];
        assert!(metadata["managedFields"].is_array(), "{name}");
        let user = request["userInfo"]["username"].as_str().unwrap();
        let by_controller = user.starts_with("system:serviceaccount:kube-system:");
        if by_controller && request["operation"] == "CREATE" {
            assert!(metadata["ownerReferences"].is_array(), "{name}");
        }
        match request["operation"].as_str().unwrap() {
            "UPDATE" => assert!(request["oldObject"].is_object(), "{name}"),
            "CREATE" => assert!(request["oldObject"].is_null(), "{name}"),
            other => panic!("{name}: {other}"),
        }
        if metadata["generateName"].is_string() {
            assert!(
                request["operation"] == "UPDATE" || request["name"].is_null(),
                "{name}"
            );
        }
    }
}

#[test]
fn every_request_passes_the_recommended_settings() {
    let policy = policy();
    for (name, request) in requests() {
        for settings in [OWNER_REQUIRED, ALLOWLIST, DENYLIST] {
            let verdict = validate(&policy, &request, settings);
            assert!(verdict.accepted, "{name} under {settings}: {verdict:?}");
        }
    }
}

/// Which requests the warned-against settings reject, and with what message.
#[test]
fn the_settings_the_readme_warns_against_break_the_cluster() {
    let policy = policy();
    let deployment_keys = r#"remove "deployment.kubernetes.io/desired-replicas", "deployment.kubernetes.io/max-replicas", "deployment.kubernetes.io/revision""#;
    for (name, request) in requests() {
        // Every ReplicaSet the deployment controller creates, the Pods of a
        // restarted rollout and a CronJob's Jobs. Updates keep the keys the
        // old object had, and pass.
        let verdict = validate(&policy, &request, EXACT_ALLOWLIST);
        let expected = match &name[..3] {
            "02-" | "05-" => Some(deployment_keys),
            "07-" => Some(r#"remove "kubectl.kubernetes.io/restartedAt""#),
            "08-" => Some(r#"remove "batch.kubernetes.io/cronjob-scheduled-timestamp""#),
            _ => None,
        };
        match expected {
            Some(removal) => {
                assert!(!verdict.accepted, "{name}");
                let message = verdict.message.unwrap();
                assert!(message.ends_with(removal), "{name}: {message}");
            }
            None => assert!(verdict.accepted, "{name}: {verdict:?}"),
        }
        // Every update of an object that predates the policy: the scale-up,
        // and both finalizer removals, which would leave the objects
        // terminating for good.
        let verdict = validate(&policy, &request, STRICT_OWNER);
        let expected =
            name.starts_with("10-") || name.starts_with("11-") || name.starts_with("12-");
        assert_eq!(!verdict.accepted, expected, "{name}: {verdict:?}");
        if expected {
            let message = verdict.message.unwrap();
            assert!(
                message.ends_with(r#"lacks required annotations; add "example.com/owner""#),
                "{name}: {message}"
            );
        }
    }
}
