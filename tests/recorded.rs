//! What a real control plane sent the policy's webhooks
//! (`test_data/cluster/recorded/<release>/`, written by `cluster/run`, never
//! by hand), replayed without Go: the module answers each review as it did in
//! the cluster, every request the cluster made on its own passes the
//! README's recommended settings, and judging Kubernetes' own keys would
//! name exactly the keys that are not the user's.

mod common;

use std::collections::BTreeSet;
use std::path::PathBuf;

use common::{policy, root, validate};
use serde_json::Value;

/// The README's recommended settings, as cluster/harness registers them.
const RECOMMENDED: [(&str, &str); 3] = [
    (
        "owner-required",
        r#"{"criteria":"containsAllOf","values":["example.com/owner"]}"#,
    ),
    (
        "allowlist",
        r#"{"criteria":"doesNotContainOtherThan","values":["example.com/*"]}"#,
    ),
    (
        "denylist",
        r#"{"criteria":"doesNotContainAnyOf","values":["example.com/debug","example.com/skip-*"]}"#,
    ),
];

/// The senders whose requests the recordings must hold, so that a run that
/// lost one is noticed: each controller the harness runs, and a node.
const SENDERS: [&str; 9] = [
    "system:serviceaccount:kube-system:deployment-controller",
    "system:serviceaccount:kube-system:replicaset-controller",
    "system:serviceaccount:kube-system:daemon-set-controller",
    "system:serviceaccount:kube-system:statefulset-controller",
    "system:serviceaccount:kube-system:job-controller",
    "system:serviceaccount:kube-system:cronjob-controller",
    "system:serviceaccount:kube-system:replication-controller",
    "system:serviceaccount:kube-system:generic-garbage-collector",
    "system:node:node-1",
];

/// The user the harness acts as (kubeadm's administrator).
const ADMIN: &str = "kubernetes-admin";

struct Recording {
    release: String,
    file: String,
    request: Value,
    text: String,
    verdicts: Value,
}

impl Recording {
    fn user(&self) -> &str {
        self.request["userInfo"]["username"].as_str().unwrap()
    }

    fn name(&self) -> String {
        format!("{}/{}", self.release, self.file)
    }
}

fn releases() -> Vec<PathBuf> {
    let dir = root().join("test_data/cluster/recorded");
    let mut releases: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("test_data/cluster/recorded")
        .map(|entry| entry.expect("an entry").path())
        .collect();
    releases.sort();
    releases
}

fn recordings() -> Vec<Recording> {
    let mut all = Vec::new();
    for dir in releases() {
        let release = dir.file_name().unwrap().to_string_lossy().into_owned();
        let index: Value =
            serde_json::from_slice(&std::fs::read(dir.join("index.json")).expect("index.json"))
                .expect("index.json is JSON");
        let settings: Vec<(String, String)> = index["settings"]
            .as_object()
            .expect("settings")
            .iter()
            .map(|(id, s)| (id.clone(), s.to_string()))
            .collect();
        for (id, text) in RECOMMENDED {
            let recorded = settings.iter().find(|(i, _)| i == id).expect(id);
            let parsed: Value = serde_json::from_str(text).unwrap();
            assert_eq!(recorded.1, parsed.to_string(), "{release}: {id}");
        }
        let mut files: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|f| f != "index.json")
            .collect();
        files.sort();
        let verdicts = index["verdicts"].as_object().expect("verdicts");
        let indexed: Vec<String> = verdicts.keys().cloned().collect();
        assert_eq!(files, indexed, "{release}: files and index differ");
        for file in files {
            let review: Value =
                serde_json::from_slice(&std::fs::read(dir.join(&file)).unwrap()).expect(&file);
            assert_eq!(review["apiVersion"], "admission.k8s.io/v1", "{file}");
            assert_eq!(review["kind"], "AdmissionReview", "{file}");
            let request = review["request"].clone();
            all.push(Recording {
                release: release.clone(),
                text: request.to_string(),
                request,
                verdicts: verdicts[&file].clone(),
                file,
            });
        }
    }
    assert!(!all.is_empty());
    all
}

#[test]
fn the_module_answers_each_review_as_it_did_in_the_cluster() {
    let policy = policy();
    for recording in recordings() {
        for (id, settings) in RECOMMENDED {
            let recorded = &recording.verdicts[id];
            let verdict = validate(&policy, &recording.text, settings);
            assert_eq!(
                Value::Bool(verdict.accepted),
                recorded["allowed"],
                "{} under {id}: {verdict:?}",
                recording.name()
            );
            if !verdict.accepted {
                assert_eq!(
                    verdict.message.as_deref(),
                    recorded["message"].as_str(),
                    "{}",
                    recording.name()
                );
            }
        }
    }
}

/// The policy's central promise, held to a real cluster: what the
/// controllers, the garbage collector and a node send passes every one of
/// the recommended settings.
#[test]
fn what_the_cluster_sends_on_its_own_passes_the_recommended_settings() {
    let recordings = recordings();
    for release in releases() {
        let release = release.file_name().unwrap().to_string_lossy().into_owned();
        let senders: BTreeSet<&str> = recordings
            .iter()
            .filter(|r| r.release == release)
            .map(Recording::user)
            .collect();
        for sender in SENDERS {
            assert!(senders.contains(sender), "{release}: nothing from {sender}");
        }
    }
    for recording in recordings.iter().filter(|r| r.user() != ADMIN) {
        for (id, _) in RECOMMENDED {
            assert_eq!(
                recording.verdicts[id]["allowed"],
                true,
                "{} under {id}",
                recording.name()
            );
        }
    }
}

/// With Kubernetes' keys judged like the user's and every update judged on
/// its new object alone, each request is rejected naming exactly the keys
/// not of the user's prefix, the keys the cluster wrote.
#[test]
fn kubernetes_keys_judged_name_exactly_the_keys_the_cluster_wrote() {
    let policy = policy();
    let judged = r#"{"criteria":"doesNotContainOtherThan","values":["example.com/*"],"allowKubernetesBookkeeping":false,"allowExistingViolations":false}"#;
    for recording in recordings() {
        let foreign: Vec<String> = recording.request["object"]["metadata"]["annotations"]
            .as_object()
            .map(|a| {
                a.keys()
                    .filter(|k| !k.starts_with("example.com/"))
                    .map(|k| format!("\"{k}\""))
                    .collect()
            })
            .unwrap_or_default();
        let verdict = validate(&policy, &recording.text, judged);
        assert_eq!(verdict.accepted, foreign.is_empty(), "{}", recording.name());
        if !foreign.is_empty() {
            let message = verdict.message.unwrap();
            let expected = format!("; remove {}", foreign.join(", "));
            assert!(
                message.ends_with(&expected),
                "{}: {message}",
                recording.name()
            );
        }
    }
}
