//! Audits of what a real control plane made: each object in the recordings
//! (`test_data/cluster/recorded/`), sent as Kubewarden's audit scanner
//! sends what a cluster stores (`policy_host::audit::request`: a CREATE with
//! no sender and no old object), is judged as admission judged it. The
//! audit cannot excuse an existing violation: an object the cluster admitted
//! only as one (the harness makes those before it registers the webhooks)
//! fails.

mod common;

use std::collections::BTreeMap;

use common::recorded::{RECOMMENDED, recordings};
use common::{policy, validate};
use serde_json::Value;

fn audit(object: &Value) -> String {
    policy_host::audit::request(object).to_string()
}

/// The same settings with existing violations not excused.
fn strict(settings: &str) -> String {
    let mut settings: Value = serde_json::from_str(settings).unwrap();
    settings["allowExistingViolations"] = false.into();
    settings.to_string()
}

#[test]
fn every_object_is_audited_as_it_was_admitted() {
    let policy = policy();
    // (release, webhook, kind) -> (passed, failed)
    let mut reports: BTreeMap<(String, &str, String), (usize, usize)> = BTreeMap::new();
    let mut predating = 0;
    for recording in recordings() {
        let object = &recording.request["object"];
        for (id, settings) in RECOMMENDED {
            let admitted = recording.verdicts[id]["allowed"] == true;
            let alone = validate(&policy, &recording.text, &strict(settings));
            let verdict = validate(&policy, &audit(object), settings);
            let name = format!("{} under {id}", recording.name());
            match (admitted, alone.accepted) {
                (true, true) => assert!(verdict.accepted, "{name}: {verdict:?}"),
                // Admitted only as an existing violation: the audit says
                // what the object breaks.
                (true, false) => {
                    predating += 1;
                    assert!(!verdict.accepted, "{name}");
                    assert_eq!(verdict.message, alone.message, "{name}");
                }
                (false, _) => {
                    assert!(!verdict.accepted, "{name}");
                    assert_eq!(
                        verdict.message.as_deref(),
                        recording.verdicts[id]["message"].as_str(),
                        "{name}"
                    );
                }
            }
            let kind = object["kind"].as_str().unwrap().to_string();
            let report = reports
                .entry((recording.release.clone(), id, kind))
                .or_default();
            match verdict.accepted {
                true => report.0 += 1,
                false => report.1 += 1,
            }
        }
    }
    // Each release recorded the updates of the objects made before the
    // policy: a Deployment, a DaemonSet and two ReplicaSets.
    assert_eq!(predating, 8, "objects admitted only as existing violations");
    println!("release | policy | kind | pass | fail");
    for ((release, id, kind), (passed, failed)) in reports {
        println!("{release} | {id} | {kind} | {passed} | {failed}");
    }
}

fn recorded_object(file: &str) -> Value {
    recordings()
        .into_iter()
        .find(|r| r.release == "1.37" && r.file == file)
        .unwrap_or_else(|| panic!("1.37/{file}"))
        .request["object"]
        .clone()
}

const ALLOWLIST: &str = r#"{"criteria":"doesNotContainOtherThan","values":["example.com/*"]}"#;

/// A mirror Pod passes its audit as the kubelet made it; bound to another
/// node, or with no Node for its controller, it fails, naming the keys.
#[test]
fn a_forged_mirror_pod_fails_its_audit() {
    let policy = policy();
    let mirror = recorded_object("pod-create-node.json");
    assert!(validate(&policy, &audit(&mirror), ALLOWLIST).accepted);
    type Forgery = (&'static str, fn(&mut Value));
    let forgeries: [Forgery; 3] = [
        ("bound to another node", |pod| {
            pod["spec"]["nodeName"] = "node-2".into()
        }),
        ("no owner", |pod| {
            pod["metadata"]
                .as_object_mut()
                .unwrap()
                .remove("ownerReferences");
        }),
        ("the node not its controller", |pod| {
            pod["metadata"]["ownerReferences"][0]["controller"] = false.into();
        }),
    ];
    for (why, forge) in forgeries {
        let mut pod = mirror.clone();
        forge(&mut pod);
        let verdict = validate(&policy, &audit(&pod), ALLOWLIST);
        assert!(!verdict.accepted, "{why}");
        let message = verdict.message.unwrap();
        assert!(
            message.contains("\"kubernetes.io/config.mirror\""),
            "{why}: {message}"
        );
    }
}

/// An Indexed Job's Pod passes its audit; with an owner that is no `batch`
/// Job, or none, it fails, naming the completion index.
#[test]
fn a_forged_job_pod_fails_its_audit() {
    let policy = policy();
    let pod = recorded_object("pod-create-job-controller.json");
    assert!(
        pod["metadata"]["annotations"]
            .get("batch.kubernetes.io/job-completion-index")
            .is_some()
    );
    assert!(validate(&policy, &audit(&pod), ALLOWLIST).accepted);
    for api_version in ["example.com/v1", "v1"] {
        let mut forged = pod.clone();
        forged["metadata"]["ownerReferences"][0]["apiVersion"] = api_version.into();
        let verdict = validate(&policy, &audit(&forged), ALLOWLIST);
        assert!(!verdict.accepted, "{api_version}");
        assert!(
            verdict
                .message
                .unwrap()
                .contains("\"batch.kubernetes.io/job-completion-index\"")
        );
    }
}
