//! Audits of what a real control plane made. Each object the cluster held
//! after the scenarios, as `cluster/run` sent it to the webhooks' `/audit/`
//! the way Kubewarden's audit scanner does (`<release>/audit/`), is judged
//! as recorded: every object passes but those made before the policy that
//! break it. And each object the cluster admitted (the admission
//! recordings, and the requests written by hand beside them), sent as the
//! scanner would send it once stored
//! (`policy_host::admission::audit::request`: a CREATE with no sender and no old
//! object), is judged as admission judged it; the audit cannot excuse an
//! existing violation, so an object admitted only as one fails.

mod common;

use std::collections::BTreeMap;

use common::recorded::{recommended, recommended_settings, recordings, releases, with};
use common::{policy, validate};
use policy_core::settings::Field;
use serde_json::Value;

fn audit(object: &Value) -> String {
    policy_host::admission::audit::request(object).to_string()
}

/// The same settings with existing violations not excused.
fn strict(settings: &str) -> String {
    with(settings, Field::AllowExistingViolations.name(), false)
}

#[test]
fn every_object_is_audited_as_it_was_admitted() {
    let policy = policy();
    // (release, webhook, kind) -> (passed, failed)
    let mut reports: BTreeMap<(String, &str, String), (usize, usize)> = BTreeMap::new();
    let mut predating = 0;
    for recording in recordings() {
        let object = &recording.request["object"];
        for (id, settings) in recommended() {
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
                .entry((recording.release.clone(), id.as_str(), kind))
                .or_default();
            match verdict.accepted {
                true => report.0 += 1,
                false => report.1 += 1,
            }
        }
    }
    // Each release recorded the updates of the objects made before the
    // policy: a Deployment, a DaemonSet and two ReplicaSets; and the job
    // controller's update of a finished Pod is written by hand.
    assert_eq!(predating, 9, "objects admitted only as existing violations");
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

fn allowlist() -> &'static str {
    recommended_settings("allowlist")
}

/// A mirror Pod passes its audit as the kubelet made it; bound to another
/// node, or with no Node for its controller, it fails, naming the keys.
#[test]
fn a_forged_mirror_pod_fails_its_audit() {
    let policy = policy();
    let mirror = recorded_object("pod-create-node.json");
    assert!(validate(&policy, &audit(&mirror), allowlist()).accepted);
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
        let verdict = validate(&policy, &audit(&pod), allowlist());
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
    assert!(validate(&policy, &audit(&pod), allowlist()).accepted);
    for api_version in ["example.com/v1", "v1"] {
        let mut forged = pod.clone();
        forged["metadata"]["ownerReferences"][0]["apiVersion"] = api_version.into();
        let verdict = validate(&policy, &audit(&forged), allowlist());
        assert!(!verdict.accepted, "{api_version}");
        assert!(
            verdict
                .message
                .unwrap()
                .contains("\"batch.kubernetes.io/job-completion-index\"")
        );
    }
}

/// The audit `cluster/run` recorded for each release, replayed: the module
/// answers each object as the webhook did, every object passes each policy
/// but those created before the policy without their owner, which fail
/// owner-required, and each release has both.
#[test]
fn the_recorded_audits_are_answered_as_in_the_cluster() {
    let policy = policy();
    for release in releases() {
        let dir = release.join("audit");
        let index: Value = serde_json::from_slice(
            &std::fs::read(dir.join("index.json"))
                .unwrap_or_else(|e| panic!("{}: {e}", dir.display())),
        )
        .unwrap();
        let verdicts = index["verdicts"].as_object().unwrap();
        let (mut passed, mut failed) = (0, 0);
        for (file, recorded) in verdicts {
            let review: Value =
                serde_json::from_slice(&std::fs::read(dir.join(file)).unwrap()).unwrap();
            let request = &review["request"];
            assert_eq!(request["userInfo"], serde_json::json!({}), "{file}");
            assert_eq!(request["oldObject"], Value::Null, "{file}");
            let owned = request["object"]["metadata"]["annotations"]
                .get("example.com/owner")
                .is_some();
            for (id, settings) in recommended() {
                let verdict = validate(&policy, &request.to_string(), settings);
                let name = format!("{}: {file} under {id}", dir.display());
                assert_eq!(
                    Value::Bool(verdict.accepted),
                    recorded[id]["allowed"],
                    "{name}"
                );
                if verdict.accepted {
                    passed += 1;
                    continue;
                }
                failed += 1;
                assert_eq!(
                    verdict.message.as_deref(),
                    recorded[id]["message"].as_str(),
                    "{name}"
                );
                assert!(
                    id == "owner-required" && !owned,
                    "{name}: {:?}",
                    verdict.message
                );
            }
        }
        assert!(
            passed > 0 && failed > 0,
            "{}: {passed} passed, {failed} failed",
            dir.display()
        );
        // Indexed Jobs' Pods and the kubelet's mirror Pod are among them.
        for key in [
            "batch.kubernetes.io/job-completion-index",
            "kubernetes.io/config.mirror",
        ] {
            assert!(
                verdicts.keys().any(|file| {
                    let text = std::fs::read_to_string(dir.join(file)).unwrap();
                    text.contains(&format!("\"{key}\""))
                }),
                "{}: no audited object carries {key}",
                dir.display()
            );
        }
    }
}
