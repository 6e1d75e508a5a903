//! The requests in `test_data/cluster/` written by hand, for what the
//! recordings of a real control plane (`test_data/cluster/recorded/`,
//! tests/recorded.rs) cannot hold, each with its reason in `WHY_BY_HAND`: a
//! Job's Pod finishing (no kubelet runs Pods in the cluster tests), the
//! control plane's own mirror Pod in `kube-system` (outside the example
//! policy's selector, so no webhook hears it), and a release installed by Helm.
//! Under the README's recommended settings every one is accepted, but the
//! mirror Pod where the owner is required (its namespace is left out for
//! that); the settings that `docs/kubernetes-keys.md` and `docs/deploying.md`
//! warn against reject exactly the requests they say, naming the keys.

mod common;

use std::path::PathBuf;

use common::recorded::{recommended_settings, with};
use common::{policy, root, validate};
use policy_core::settings::Field;
use serde_json::Value;

/// The README's recommended settings for workloads
/// (`common::recorded::RECOMMENDED`).
fn owner_required() -> &'static str {
    recommended_settings("owner-required")
}

fn allowlist() -> &'static str {
    recommended_settings("allowlist")
}

fn denylist() -> &'static str {
    recommended_settings("denylist")
}

/// The values the README gives Helm users, besides their own prefix.
const HELM_VALUES: [&str; 2] = [
    "meta.helm.sh/release-name",
    "meta.helm.sh/release-namespace",
];

/// The allowlist with the values the README gives Helm users.
fn helm_allowlist() -> String {
    let settings: Value = serde_json::from_str(allowlist()).unwrap();
    let mut values = settings[Field::Values.name()].as_array().unwrap().clone();
    values.extend(HELM_VALUES.map(Value::from));
    with(allowlist(), Field::Values.name(), values)
}

/// What `docs/kubernetes-keys.md` and `docs/deploying.md` warn against:
/// Kubernetes' own keys judged like any other, and every update judged on
/// its new object alone.
fn judged(settings: &str) -> String {
    with(settings, Field::AllowKubernetesBookkeeping.name(), false)
}

fn strict(settings: &str) -> String {
    with(settings, Field::AllowExistingViolations.name(), false)
}

/// Why each request is written by hand, by the number its file starts with.
const WHY_BY_HAND: [(&str, &str); 4] = [
    (
        "12",
        "the job controller removes its finalizer from a finished Pod: no Pod finishes without a kubelet",
    ),
    (
        "22",
        "kube-system, which the example policy's selector leaves out: no webhook hears the control plane's mirror Pods",
    ),
    ("29", "Helm's keys: the cluster tests run no Helm"),
    ("30", "Helm's keys, copied by the deployment controller"),
];

/// The keys of each request that Kubernetes, kubectl or Helm wrote, by the
/// number its file starts with: what an allowlist of `example.com/*` alone
/// must name when Kubernetes' own keys are judged. The README's Helm values
/// admit Helm's.
const WRITTEN_BY_THE_CLUSTER: [(&str, &[&str]); 4] = [
    ("12", &[]),
    (
        "22",
        &[
            "kubeadm.kubernetes.io/kube-apiserver.advertise-address.endpoint",
            "kubernetes.io/config.hash",
            "kubernetes.io/config.mirror",
            "kubernetes.io/config.seen",
            "kubernetes.io/config.source",
        ],
    ),
    ("29", &[]),
    ("30", DEPLOYMENT_CONTROLLER),
];

const REVISION: &str = "deployment.kubernetes.io/revision";
const DEPLOYMENT_CONTROLLER: &[&str] = &[
    "deployment.kubernetes.io/desired-replicas",
    "deployment.kubernetes.io/max-replicas",
    REVISION,
];

/// The requests from Helm's release, judged with the README's Helm values.
const HELM: [&str; 2] = ["29", "30"];
/// Updates of objects that lack the owner and predate the policy.
const PREDATE_THE_POLICY: [&str; 1] = ["12"];

struct Request {
    /// The file's name, which starts with its number.
    name: String,
    text: String,
    json: Value,
}

impl Request {
    fn number(&self) -> &str {
        &self.name[..2]
    }

    fn is(&self, numbers: &[&str]) -> bool {
        numbers.contains(&self.number())
    }
}

fn requests() -> Vec<Request> {
    let dir = root().join("test_data/cluster");
    // `recorded/` holds what a real control plane sent (tests/recorded.rs).
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("test_data/cluster")
        .map(|entry| entry.expect("entry").path())
        .filter(|path| path.extension().is_some_and(|e| e == "json"))
        .collect();
    paths.sort();
    assert_eq!(paths.len(), WRITTEN_BY_THE_CLUSTER.len(), "{paths:?}");
    assert_eq!(paths.len(), WHY_BY_HAND.len(), "{paths:?}");
    paths
        .into_iter()
        .inspect(|path| {
            let name = path.file_name().unwrap().to_string_lossy();
            assert!(
                WHY_BY_HAND
                    .iter()
                    .any(|(number, _)| name.starts_with(number)),
                "{name}: say in WHY_BY_HAND why no recording holds it"
            );
        })
        .map(|path| {
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            let text = std::fs::read_to_string(&path).expect("request");
            let json = serde_json::from_str(&text).expect(&name);
            Request { name, text, json }
        })
        .collect()
}

/// Every key of the request that is not the user's own, sorted.
fn not_the_users(request: &Request) -> Vec<&'static str> {
    let (_, keys) = WRITTEN_BY_THE_CLUSTER
        .iter()
        .find(|(number, _)| *number == request.number())
        .unwrap_or_else(|| panic!("{}: not in WRITTEN_BY_THE_CLUSTER", request.name));
    let mut keys = keys.to_vec();
    keys.sort_unstable();
    keys
}

/// The namespaces the example ClusterAdmissionPolicy leaves out
/// (`examples/cluster-admission-policy.yaml`, which the README links).
fn excluded_namespaces() -> Vec<String> {
    let text = std::fs::read_to_string(root().join("examples/cluster-admission-policy.yaml"))
        .expect("the example policy");
    let policy: Value = yaml_serde::from_str(&text).expect("YAML");
    let expressions = policy["spec"]["namespaceSelector"]["matchExpressions"]
        .as_array()
        .expect("a namespaceSelector with matchExpressions");
    expressions
        .iter()
        .filter(|e| e["key"] == "kubernetes.io/metadata.name" && e["operator"] == "NotIn")
        .flat_map(|e| e["values"].as_array().expect("values").clone())
        .map(|v| v.as_str().expect("a name").to_string())
        .collect()
}

/// The requests carry what the API server puts in them: the objects a
/// controller or the kubelet creates name their owner, every object its
/// field managers, and every update the object it replaces.
#[test]
fn the_requests_are_shaped_as_the_api_server_sends_them() {
    for request in requests() {
        let (name, request) = (&request.name, &request.json);
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
        assert_eq!(request["kind"]["kind"], request["object"]["kind"], "{name}");
        let metadata = &request["object"]["metadata"];
        assert!(metadata["managedFields"].is_array(), "{name}");
        assert_eq!(metadata["namespace"], request["namespace"], "{name}");
        let user = request["userInfo"]["username"].as_str().unwrap();
        let by_controller = user.starts_with("system:serviceaccount:kube-system:")
            || user.starts_with("system:node:");
        if by_controller && request["operation"] == "CREATE" {
            assert!(metadata["ownerReferences"].is_array(), "{name}");
        }
        match request["operation"].as_str().unwrap() {
            "UPDATE" => {
                assert!(request["oldObject"].is_object(), "{name}");
                let old = &request["oldObject"]["metadata"];
                assert_eq!(old["uid"], metadata["uid"], "{name}");
            }
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

/// The table names exactly the keys each request carries that are not the
/// user's own, so that the verdicts below are about the right keys.
#[test]
fn the_table_names_every_key_that_is_not_the_users() {
    for request in requests() {
        let annotations = request.json["object"]["metadata"]["annotations"]
            .as_object()
            .map(|a| a.keys().cloned().collect::<Vec<_>>())
            .unwrap_or_default();
        let foreign: Vec<&str> = annotations
            .iter()
            .map(String::as_str)
            .filter(|key| !key.starts_with("example.com/") && !key.starts_with("meta.helm.sh/"))
            .collect();
        assert_eq!(foreign, not_the_users(&request), "{}", request.name);
    }
}

#[test]
fn every_request_passes_the_recommended_settings() {
    let policy = policy();
    let excluded = excluded_namespaces();
    assert_eq!(excluded, ["kube-system"]);
    for request in requests() {
        let allowlist = match request.is(&HELM) {
            true => helm_allowlist(),
            false => allowlist().to_string(),
        };
        for settings in [owner_required(), allowlist.as_str(), denylist()] {
            let verdict = validate(&policy, &request.text, settings);
            // The control plane's own Pods carry no owner: the example
            // policy leaves their namespace out.
            let namespace = request.json["namespace"].as_str().unwrap();
            if settings == owner_required() && excluded.iter().any(|n| n == namespace) {
                assert!(!verdict.accepted, "{}", request.name);
                continue;
            }
            assert!(
                verdict.accepted,
                "{} under {settings}: {verdict:?}",
                request.name
            );
        }
    }
}

/// An allowlist of the user's own prefix names Helm's keys until the README's
/// Helm values admit them.
#[test]
fn helms_keys_need_the_values_the_readme_gives() {
    let policy = policy();
    for request in requests().iter().filter(|r| r.is(&HELM)) {
        let verdict = validate(&policy, &request.text, allowlist());
        let message = verdict.message.unwrap_or_default();
        assert!(
            message.ends_with(
                r#"remove "meta.helm.sh/release-name", "meta.helm.sh/release-namespace""#
            ),
            "{}: {message}",
            request.name
        );
    }
}

fn removal(keys: &[&str]) -> String {
    let quoted: Vec<String> = keys.iter().map(|k| format!("\"{k}\"")).collect();
    format!("; remove {}", quoted.join(", "))
}

/// With `allowKubernetesBookkeeping: false`, each request that carries one
/// of Kubernetes' keys is rejected, naming them: every one when updates are
/// judged alone too, and with the README's default for updates, every
/// creation and the updates that add such a key.
#[test]
fn kubernetes_keys_judged_break_the_cluster_naming_them() {
    let policy = policy();
    for request in requests() {
        let keys = &not_the_users(&request);
        let judged = match request.is(&HELM) {
            true => judged(&helm_allowlist()),
            false => judged(allowlist()),
        };
        let strict = strict(&judged);
        let update = request.json["operation"] == "UPDATE";
        for (settings, rejected) in [
            (&strict, !keys.is_empty()),
            (&judged, !keys.is_empty() && !update),
        ] {
            let verdict = validate(&policy, &request.text, settings);
            assert_eq!(
                !verdict.accepted, rejected,
                "{} under {settings}: {verdict:?}",
                request.name
            );
            if rejected {
                let message = verdict.message.unwrap();
                assert!(
                    message.ends_with(&removal(keys)),
                    "{}: {message}",
                    request.name
                );
            }
        }
    }
}

/// With every update judged alone, the controllers' updates of objects that
/// predate the policy are rejected: the scale-up and the finalizer
/// removals, which would leave the objects terminating for good.
#[test]
fn updates_judged_alone_break_the_cluster() {
    let policy = policy();
    let excluded = excluded_namespaces();
    for request in requests() {
        let namespace = request.json["namespace"].as_str().unwrap();
        let verdict = validate(&policy, &request.text, &strict(owner_required()));
        let expected = request.is(&PREDATE_THE_POLICY) || excluded.iter().any(|n| n == namespace);
        assert_eq!(!verdict.accepted, expected, "{}: {verdict:?}", request.name);
        if expected {
            let message = verdict.message.unwrap();
            assert!(
                message.ends_with(r#"lacks required annotations; add "example.com/owner""#),
                "{}: {message}",
                request.name
            );
        }
    }
}

/// Every object with a `criteria` field in `value`: the settings it holds.
fn settings_in(value: &Value, found: &mut Vec<Value>) {
    match value {
        Value::Object(members) => {
            if members.contains_key(Field::Criteria.name()) {
                found.push(value.clone());
            }
            members.values().for_each(|v| settings_in(v, found));
        }
        Value::Array(items) => items.iter().for_each(|v| settings_in(v, found)),
        _ => {}
    }
}

/// The settings the documentation shows, wherever the README's text now
/// stands: the JSON and YAML code blocks of `README.md` and `docs/`, and the
/// example policies of `examples/`.
fn documented_settings() -> Vec<Value> {
    let mut markdown = vec![root().join("README.md")];
    for entry in std::fs::read_dir(root().join("docs")).expect("docs/") {
        let path = entry.expect("an entry").path();
        if path.extension().is_some_and(|e| e == "md") {
            markdown.push(path);
        }
    }
    let mut blocks = Vec::new();
    for path in markdown {
        let text = std::fs::read_to_string(&path).expect("Markdown");
        // The lines of the JSON or YAML block being read.
        let mut block: Option<String> = None;
        for line in text.lines() {
            let fence = line.trim();
            match block.take() {
                Some(lines) if fence.starts_with("```") => blocks.push(lines),
                Some(mut lines) => {
                    lines.push_str(line);
                    lines.push('\n');
                    block = Some(lines);
                }
                None if ["```json", "```yaml", "```yml"].contains(&fence) => {
                    block = Some(String::new())
                }
                None => {}
            }
        }
    }
    for entry in std::fs::read_dir(root().join("examples")).expect("examples/") {
        let path = entry.expect("an entry").path();
        if path.extension().is_some_and(|e| e == "yaml") {
            blocks.push(std::fs::read_to_string(&path).expect("an example"));
        }
    }
    let mut found = Vec::new();
    for block in blocks {
        // A YAML stream a document at a time; JSON is YAML; a block that is
        // neither (a fragment) shows nothing.
        let mut document = String::new();
        for line in block.lines().chain(["---"]) {
            if line.trim_end() != "---" {
                document.push_str(line);
                document.push('\n');
            } else if let Ok(value) = yaml_serde::from_str::<Value>(&std::mem::take(&mut document))
            {
                settings_in(&value, &mut found);
            }
        }
    }
    found
}

/// The recommended settings that the cluster tests register and every test
/// judges with (`common::recorded::RECOMMENDED`) are the ones the
/// documentation shows, and the policy group the cluster tests register is
/// made of two of them: none of these changes without the others.
#[test]
fn the_recommended_settings_are_those_the_documentation_shows() {
    let parse = |settings: &str| -> Value { serde_json::from_str(settings).unwrap() };
    let shown = documented_settings();
    assert!(shown.len() > 3, "{shown:?}");
    for (id, settings) in common::recorded::recommended() {
        assert!(
            shown.contains(&parse(settings)),
            "{id}: {settings} is shown in no code block of README.md or docs/, nor in examples/"
        );
    }
    let group = "cluster/policies/owned-and-allowed.yaml";
    let group: Value =
        yaml_serde::from_str(&std::fs::read_to_string(root().join(group)).expect(group))
            .expect(group);
    let members = &group["spec"]["policies"];
    assert_eq!(members["owned"]["settings"], parse(owner_required()));
    assert_eq!(members["allowed"]["settings"], parse(allowlist()));
}
