//! `policy-runner check --policy DIR` with no module: a policy set, each
//! policy running the module its `spec.module` names from kwctl's store,
//! mutating ones in the API server's order before the validating ones
//! judge (test_data/set).

mod common;
#[path = "../evaluator/tests/common/mod.rs"]
mod policies;

use std::path::{Path, PathBuf};

use common::{module_path, root};
use policy_host::check::{Command, Format, PolicySource, policy_set};
use policy_host::modules::Store;
use serde_json::{Value, json};

/// A kwctl store holding the set's two modules where `kwctl pull` puts
/// them.
fn store() -> tempfile::TempDir {
    let store = tempfile::tempdir().unwrap();
    let at = store.path().join("registry/registry.test:5000/policies");
    std::fs::create_dir_all(&at).unwrap();
    std::fs::copy(policies::module("wapc"), at.join("stamp:v1")).unwrap();
    std::fs::copy(module_path(), at.join("annotations:v1")).unwrap();
    store
}

fn command(store: &Path, format: Format, policies: &[PathBuf], inputs: &[&str]) -> Command {
    Command {
        module: None,
        store: Store {
            root: Some(store.to_path_buf()),
            offline: true,
        },
        inputs: inputs
            .iter()
            .map(|i| root().join(i).display().to_string())
            .collect(),
        policy: PolicySource::Set(policy_set(policies).unwrap()),
        namespace: None,
        kubectl_apply: false,
        derive: true,
        format,
        only_rejected: false,
        strict: false,
        hidden: false,
        jobs: 0,
        evaluation: Default::default(),
    }
}

fn run(command: &Command) -> (u8, String) {
    let mut out = Vec::new();
    let finished = command.run(|_, _| {}, &mut out).unwrap();
    (finished.status, String::from_utf8(out).unwrap())
}

fn set_dir() -> Vec<PathBuf> {
    vec![root().join("test_data/set/policies")]
}

/// Each result by object: whether allowed, and each policy's verdict and
/// patch.
fn results(report: &Value) -> Vec<(String, bool, Vec<Value>)> {
    report["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| {
            (
                row["object"].as_str().unwrap().to_string(),
                row["allowed"].as_bool().unwrap(),
                row["policies"].as_array().cloned().unwrap_or_default(),
            )
        })
        .collect()
}

/// The JSON report's row of `object`.
fn row_of<'r>(report: &'r Value, object: &str) -> &'r Value {
    report["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["object"] == object)
        .unwrap_or_else(|| panic!("no row for {object}: {report}"))
}

#[test]
fn mutating_policies_change_each_object_in_webhook_order_before_the_others_judge_it() {
    let store = store();
    let (status, out) = run(&command(
        store.path(),
        Format::Json,
        &set_dir(),
        &["test_data/set/manifests"],
    ));
    assert_eq!(status, 1, "{out}");
    let report: Value = serde_json::from_str(&out).unwrap();
    let results = results(&report);
    let by = |object: &str| {
        results
            .iter()
            .find(|(o, _, _)| o == object)
            .unwrap_or_else(|| panic!("no row for {object}: {out}"))
    };
    let stamped = json!([{"op": "add", "path": "/metadata/annotations", "value": {"example.com/owner": "platform"}}]);
    // Stamped by the cluster-wide policy, whose webhook configuration
    // sorts first; the namespaced one then finds the owner there.
    assert_eq!(report["changed"], 3, "{out}");
    let (_, allowed, verdicts) = by("Pod shop/web");
    assert!(allowed, "{out}");
    let called: Vec<&str> = verdicts
        .iter()
        .map(|v| v["policy"].as_str().unwrap())
        .collect();
    assert_eq!(
        called,
        [
            "zz-stamp-owner",
            "aa-stamp-team",
            "require-owner",
            "watch-tier"
        ]
    );
    assert_eq!(verdicts[0]["patch"], stamped);
    assert_eq!(verdicts[1]["patch"], Value::Null);
    // The monitor-mode rejection is said, and rejects nothing.
    assert_eq!(verdicts[3]["accepted"], false);
    assert_eq!(verdicts[3]["monitor"], true);
    // The Deployment is stamped, and the Pod its ReplicaSet makes is
    // stamped on its own way through.
    let (_, allowed, verdicts) = by("Deployment shop/api");
    assert!(allowed, "{out}");
    assert_eq!(verdicts[0]["patch"], stamped);
    let derived = results
        .iter()
        .find(|(o, _, _)| o.starts_with("Pod shop/api-"))
        .unwrap_or_else(|| panic!("no derived Pod: {out}"));
    assert!(derived.1, "{out}");
    // Left unstamped where the mutating policy's selector leaves it out:
    // the validating policy rejects it, naming itself.
    let (_, allowed, verdicts) = by("Pod legacy/old");
    assert!(!allowed, "{out}");
    assert_eq!(verdicts[0]["policy"], "require-owner");
    let row = row_of(&report, "Pod legacy/old");
    assert!(
        row["message"]
            .as_str()
            .unwrap()
            .starts_with("require-owner: "),
        "{row}"
    );
    // The annotations of a row are the object's as mutated.
    let row = row_of(&report, "Pod shop/web");
    assert_eq!(row["annotations"], json!(["example.com/owner"]));
    // What is not a policy is left out, and said so.
    assert!(
        report["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w.as_str().unwrap().contains("PolicyServer default")),
        "{out}"
    );
}

#[test]
fn every_format_shows_what_each_mutating_policy_changed() {
    let store = store();
    let change = "+ /metadata/annotations: {\"example.com/owner\":\"platform\"}";
    for format in [Format::Table, Format::Github, Format::Junit, Format::Sarif] {
        let (status, out) = run(&command(
            store.path(),
            format,
            &set_dir(),
            &["test_data/set/manifests/shop.yaml"],
        ));
        assert_eq!(status, 1, "{format:?}: {out}");
        let shown = match format {
            // Escaped as each format escapes text.
            Format::Junit => change.replace('"', "&quot;"),
            Format::Sarif => change.replace('"', "\\\""),
            Format::Github => change.to_string(),
            _ => change.to_string(),
        };
        assert!(out.contains(&shown), "{format:?} lacks {shown}: {out}");
        if format == Format::Table {
            let summary = "4 objects checked by 4 policies, 1 rejected, 3 changed by a mutating \
                           policy, 1 left out by every policy's rules or selectors";
            assert_eq!(out.lines().last(), Some(summary), "{out}");
        }
        assert!(
            out.contains("zz-stamp-owner"),
            "{format:?} names no policy: {out}"
        );
    }
}

#[test]
fn a_module_missing_from_the_store_is_named_with_the_pull_that_brings_it() {
    let empty = tempfile::tempdir().unwrap();
    let mut out = Vec::new();
    let error = command(
        empty.path(),
        Format::Json,
        &set_dir(),
        &["test_data/set/manifests"],
    )
    .run(|_, _| {}, &mut out)
    .map(|_| ())
    .unwrap_err();
    assert!(
        error.contains("kwctl pull registry://registry.test:5000/policies/"),
        "{error}"
    );
    assert!(error.contains("and --offline fetches nothing"), "{error}");
}

#[test]
fn one_module_given_runs_every_policy_of_the_set() {
    // The set's validating policies alone, each on the module given.
    let set = vec![root().join("test_data/set/policies/require-owner.yaml")];
    let empty = tempfile::tempdir().unwrap();
    let mut command = command(
        empty.path(),
        Format::Json,
        &set,
        &["test_data/set/manifests/shop.yaml"],
    );
    command.module = Some(module_path());
    let (status, out) = run(&command);
    assert_eq!(status, 1, "{out}");
    let report: Value = serde_json::from_str(&out).unwrap();
    // Nothing stamps the owner: each Pod and Deployment is rejected.
    let rejected: Vec<String> = results(&report)
        .into_iter()
        .filter(|(_, allowed, _)| !allowed)
        .map(|(object, _, _)| object)
        .collect();
    assert!(rejected.contains(&"Pod shop/web".to_string()), "{out}");
    assert!(
        rejected.contains(&"Deployment shop/api".to_string()),
        "{out}"
    );
}

#[test]
fn the_check_page_shows_what_a_set_prints() {
    let page = std::fs::read_to_string(root().join("docs/check.md")).unwrap();
    let section = &page[page.find("## A policy set").expect("the section")..];
    let start = section.find("```console\n").unwrap() + "```console\n".len();
    let shown = &section[start..start + section[start..].find("```").unwrap()];
    // The page's paths are the repository's: the one test here that reads
    // relative to it.
    std::env::set_current_dir(root()).unwrap();
    let store = store();
    let mut command = command(store.path(), Format::Table, &set_dir(), &[]);
    command.inputs = vec!["test_data/set/manifests".to_string()];
    command.policy =
        PolicySource::Set(policy_set(&[PathBuf::from("test_data/set/policies")]).unwrap());
    let (_, out) = run(&command);
    let shown = shown
        .split_once('\n')
        .expect("the command, then its output")
        .1;
    assert_eq!(out, shown, "docs/check.md shows other than check prints");
}
