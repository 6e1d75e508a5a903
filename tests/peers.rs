//! `make bench-peers` finds `check` and its peers differing on the objects
//! of `bench/peers/differences/`, each for a reason docs/performance.md
//! gives; check's side of each is held here (the peers are never part of
//! `make test`), with the benchmark's own policy group.

mod common;

use std::collections::BTreeMap;

use common::{module_path, root};
use policy_host::check::{Command, Format, PolicySource};
use serde_json::Value;

#[test]
fn check_refuses_what_only_kubernetes_writes_where_the_peers_cannot_tell() {
    let path = root().join("bench/peers/kubewarden.yaml");
    let text = std::fs::read_to_string(&path).unwrap();
    let policy = PolicySource::Manifest(path, yaml_serde::from_str(&text).unwrap());
    let finished = Command {
        module: module_path(),
        inputs: vec![root().join("bench/peers/differences").display().to_string()],
        policy,
        namespace: None,
        kubectl_apply: false,
        derive: true,
        format: Format::Json,
        only_rejected: false,
        strict: false,
    }
    .run(|_, _| {})
    .unwrap();
    let report: Value = serde_json::from_str(&finished.output).unwrap();
    let verdicts: BTreeMap<&str, (bool, &str)> = report["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let message = r["message"].as_str().unwrap_or_default();
            (
                r["object"].as_str().unwrap(),
                (r["allowed"] == true, message),
            )
        })
        .collect();
    // The peers accept each of these three: their list of Kubernetes'
    // keys cannot say who wrote a key.
    for (object, key) in [
        ("Pod shop/forged-mirror", "kubernetes.io/config.mirror"),
        (
            "Pod shop/forged-index",
            "batch.kubernetes.io/job-completion-index",
        ),
        (
            "Pod shop/apparmor-key",
            "container.apparmor.security.beta.kubernetes.io/app",
        ),
    ] {
        let (allowed, message) = verdicts[object];
        assert!(!allowed, "{object}");
        assert!(message.contains("(allowed: "), "{object}: {message}");
        assert!(
            message.contains(&format!("remove \"{key}\"")),
            "{object}: {message}"
        );
    }
    // Where all agree: accepted.
    for object in ["Deployment shop/restarted", "CronJob shop/nightly"] {
        assert!(verdicts[object].0, "{object}: {:?}", verdicts[object]);
    }
    // What only check judges: the CronJob's Job and Pod lack the owner.
    let derived: Vec<(&str, bool)> = report["results"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["derivedFrom"][0] == "CronJob shop/nightly")
        .map(|r| (r["object"].as_str().unwrap(), r["allowed"] == true))
        .collect();
    assert_eq!(derived.len(), 2, "{derived:?}");
    assert!(derived.iter().all(|(_, allowed)| !allowed), "{derived:?}");
    assert_eq!(finished.status, 1);
}
