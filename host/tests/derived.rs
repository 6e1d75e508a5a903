//! The objects `check` derives, held to what a real cluster sent
//! (`test_data/cluster/`): from each recorded object, the object its
//! controller made next must carry exactly the annotation keys of the
//! recorded one, and an object as admitted the keys the API server added.

use std::collections::BTreeSet;
use std::path::Path;

use policy_host::check::objects::{Admission, Candidate, candidates};
use serde_json::Value;

fn recorded(prefix: &str) -> Value {
    recorded_request(prefix)["object"].clone()
}

fn recorded_request(prefix: &str) -> Value {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../test_data/cluster");
    let path = std::fs::read_dir(&dir)
        .expect("test_data/cluster")
        .map(|entry| entry.expect("an entry").path())
        .find(|path| {
            path.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with(prefix)
        })
        .unwrap_or_else(|| panic!("no request {prefix}-*"));
    serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap()
}

fn keys(object: &Value) -> BTreeSet<String> {
    object["metadata"]["annotations"]
        .as_object()
        .map(|a| a.keys().cloned().collect())
        .unwrap_or_default()
}

fn admission() -> Admission {
    Admission {
        namespace: "default".to_string(),
        kubectl_apply: false,
        derive: true,
    }
}

fn derived(object: &Value) -> Vec<Candidate> {
    candidates(object, &admission())
}

/// (the recorded object, the recorded objects made from it, in order).
const CHAINS: [(&str, &[&str]); 7] = [
    // A Deployment applied, its ReplicaSet, that ReplicaSet's Pod.
    ("01", &["02", "03"]),
    // A Deployment installed by Helm, and its ReplicaSet.
    ("29", &["30"]),
    ("13", &["14"]),
    ("16", &["17"]),
    ("19", &["20"]),
    ("27", &["28"]),
    // A CronJob's Job, and its Pod.
    ("08", &["09"]),
];

#[test]
fn derived_objects_carry_the_keys_the_controllers_wrote() {
    for (from, made) in CHAINS {
        let chain = derived(&recorded(from));
        for (i, expected) in made.iter().enumerate() {
            let candidate = chain
                .get(i + 1)
                .unwrap_or_else(|| panic!("{from} made no object for {expected}"));
            let sent = recorded_request(expected);
            let controller = candidate.made_by.expect("a derived object has its maker");
            assert_eq!(
                controller.username(),
                sent["userInfo"]["username"].as_str().unwrap(),
                "{from} -> {expected}: the controller's identity"
            );
            let expected = recorded(expected);
            assert_eq!(candidate.object["kind"], expected["kind"], "{from}");
            assert_eq!(
                keys(&candidate.object),
                keys(&expected),
                "{from} -> {}",
                candidate.object["kind"]
            );
            assert_eq!(
                candidate.object["metadata"]["namespace"], expected["metadata"]["namespace"],
                "{from}"
            );
        }
    }
}

#[test]
fn derived_objects_say_what_they_come_from() {
    let chain = derived(&recorded("01"));
    let from: Vec<String> = chain.iter().map(|c| c.derived_from.join(" → ")).collect();
    assert_eq!(from[0], "");
    assert_eq!(from[1], "Deployment shop/frontend");
    assert!(
        from[2].starts_with("Deployment shop/frontend → ReplicaSet shop/frontend-"),
        "{}",
        from[2]
    );
    assert_eq!(chain[2].object["kind"], "Pod");
}

/// A manifest as people write it reaches a webhook with what the API
/// server adds: the DaemonSet's template generation, kubectl's record of
/// the manifest, and kubectl's namespace.
#[test]
fn manifests_are_judged_as_admitted() {
    let mut daemonset = recorded("13");
    let metadata = daemonset["metadata"].as_object_mut().unwrap();
    metadata.remove("namespace");
    let annotations = metadata["annotations"].as_object_mut().unwrap();
    annotations.remove("deprecated.daemonset.template.generation");
    annotations.remove("kubectl.kubernetes.io/last-applied-configuration");
    let applied = Admission {
        namespace: "monitoring".to_string(),
        kubectl_apply: true,
        derive: false,
    };
    let admitted = candidates(&daemonset, &applied);
    assert_eq!(admitted.len(), 1, "nothing derived");
    assert!(admitted[0].made_by.is_none(), "the user sends it");
    assert_eq!(keys(&admitted[0].object), keys(&recorded("13")));
    assert_eq!(admitted[0].object["metadata"]["namespace"], "monitoring");
    let record = admitted[0].object["metadata"]["annotations"]
        ["kubectl.kubernetes.io/last-applied-configuration"]
        .as_str()
        .unwrap();
    let record: Value = serde_json::from_str(record).unwrap();
    assert_eq!(record, daemonset, "kubectl records the manifest as given");
    // Without kubectl apply, nothing of kubectl's.
    let plain = candidates(
        &daemonset,
        &Admission {
            kubectl_apply: false,
            ..applied
        },
    );
    assert!(!keys(&plain[0].object).contains("kubectl.kubernetes.io/last-applied-configuration"));
}

#[test]
fn an_indexed_jobs_pods_carry_their_index() {
    let mut job = recorded("25");
    job["spec"]["completionMode"] = "Indexed".into();
    let chain = derived(&job);
    let pod = &chain[1].object;
    assert_eq!(pod["kind"], "Pod");
    assert_eq!(
        pod["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"],
        "0"
    );
    assert!(keys(pod).contains("example.com/owner"));
}

#[test]
fn a_cronjobs_job_takes_the_job_template_and_the_schedule() {
    let cronjob: Value = yaml_serde::from_str(
        "apiVersion: batch/v1
kind: CronJob
metadata: {name: report, annotations: {example.com/owner: a, kubectl.kubernetes.io/last-applied-configuration: x}}
spec:
  schedule: '0 * * * *'
  jobTemplate:
    metadata: {annotations: {example.com/owner: a}}
    spec:
      template:
        metadata: {annotations: {example.com/team: b}}
        spec: {containers: [{name: c, image: i}]}
",
    )
    .unwrap();
    let chain = derived(&cronjob);
    let kinds: Vec<&str> = chain
        .iter()
        .map(|c| c.object["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["CronJob", "Job", "Pod"]);
    assert_eq!(
        keys(&chain[1].object),
        BTreeSet::from([
            "batch.kubernetes.io/cronjob-scheduled-timestamp".to_string(),
            "example.com/owner".to_string()
        ])
    );
    assert_eq!(
        keys(&chain[2].object),
        BTreeSet::from(["example.com/team".to_string()])
    );
    assert_eq!(chain[2].object["metadata"]["namespace"], "default");
}
