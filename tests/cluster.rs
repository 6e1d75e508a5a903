//! The requests a cluster sends on its own (`test_data/cluster/`), for every
//! kind the default rules cover: Deployments applied, rolled out, restarted,
//! autoscaled, annotated and deleted; DaemonSets, StatefulSets,
//! ReplicationControllers and their Pods; a CronJob's run and a Job made from
//! it by hand; an Indexed Job's Pod; a Pod defaulted by a LimitRange; a
//! kubelet's mirror Pod, and an administrator's update of one; a Pod whose
//! template sets the AppArmor field, on 1.33; a release installed by Helm.
//! Under the README's recommended settings every one is accepted; the
//! settings the README warns against reject exactly the requests it says
//! they do, naming the keys. Two requests forge what only Kubernetes may
//! write (a user's Pod marked as a mirror Pod, a user's rollback key): the
//! allowlist refuses them, naming the key.

mod common;

use std::path::PathBuf;

use common::{policy, root, validate};
use serde_json::Value;

/// The README's recommended settings for workloads.
const OWNER_REQUIRED: &str = r#"{"criteria":"containsAllOf","values":["example.com/owner"]}"#;
const ALLOWLIST: &str = r#"{"criteria":"doesNotContainOtherThan","values":["example.com/*"]}"#;
/// The allowlist with the values the README gives Helm users.
const HELM_ALLOWLIST: &str = r#"{"criteria":"doesNotContainOtherThan","values":["example.com/*","meta.helm.sh/release-name","meta.helm.sh/release-namespace"]}"#;
const DENYLIST: &str =
    r#"{"criteria":"doesNotContainAnyOf","values":["example.com/debug","example.com/skip-*"]}"#;

/// What the README warns against: Kubernetes' own keys judged like any
/// other, and every update judged on its new object alone.
const JUDGED_ALLOWLIST: &str = r#"{"criteria":"doesNotContainOtherThan","values":["example.com/*"],"allowKubernetesBookkeeping":false}"#;
const JUDGED_HELM_ALLOWLIST: &str = r#"{"criteria":"doesNotContainOtherThan","values":["example.com/*","meta.helm.sh/release-name","meta.helm.sh/release-namespace"],"allowKubernetesBookkeeping":false}"#;
const STRICT_OWNER: &str = r#"{"criteria":"containsAllOf","values":["example.com/owner"],"allowExistingViolations":false}"#;

/// The keys of each request that Kubernetes, kubectl or Helm wrote, by the
/// number its file starts with: what an allowlist of `example.com/*` alone
/// must name when Kubernetes' own keys are judged. The README's Helm values
/// admit Helm's.
const WRITTEN_BY_THE_CLUSTER: [(&str, &[&str]); 35] = [
    ("01", &[LAST_APPLIED]),
    ("02", DEPLOYMENT_CONTROLLER),
    ("03", &[]),
    ("04", &[REVISION, LAST_APPLIED]),
    ("05", DEPLOYMENT_CONTROLLER),
    ("06", DEPLOYMENT_CONTROLLER),
    ("07", &["kubectl.kubernetes.io/restartedAt"]),
    ("08", &["batch.kubernetes.io/cronjob-scheduled-timestamp"]),
    ("09", &[]),
    ("10", DEPLOYMENT_CONTROLLER),
    ("11", &[REVISION, LAST_APPLIED]),
    ("12", &[]),
    ("13", &[TEMPLATE_GENERATION, LAST_APPLIED]),
    ("14", &[]),
    ("15", &[TEMPLATE_GENERATION, LAST_APPLIED]),
    ("16", &[TEMPLATE_GENERATION, LAST_APPLIED]),
    ("17", &["kubectl.kubernetes.io/restartedAt"]),
    ("18", &[TEMPLATE_GENERATION, LAST_APPLIED]),
    ("19", &[LAST_APPLIED]),
    ("20", &[]),
    ("21", &["kubernetes.io/limit-ranger"]),
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
    ("23", &[REVISION, LAST_APPLIED, CHANGE_CAUSE]),
    (
        "24",
        &[
            "deployment.kubernetes.io/desired-replicas",
            "deployment.kubernetes.io/max-replicas",
            REVISION,
            CHANGE_CAUSE,
        ],
    ),
    ("25", &["cronjob.kubernetes.io/instantiate"]),
    ("26", &["batch.kubernetes.io/job-completion-index"]),
    ("27", &[LAST_APPLIED]),
    ("28", &[]),
    ("29", &[]),
    ("30", DEPLOYMENT_CONTROLLER),
    ("31", &[]),
    ("32", KUBELET),
    ("33", KUBELET),
    ("34", &[REVISION, LAST_APPLIED]),
    (
        "35",
        &["container.apparmor.security.beta.kubernetes.io/frontend"],
    ),
];

/// The keys a user's request sets that only Kubernetes may write: the
/// kubelet's mark of a mirror Pod, and the key that makes the deployment
/// controller roll back. No setting the README recommends lets them through.
const FORGED: [(&str, &str); 2] = [
    ("31", "kubernetes.io/config.mirror"),
    ("34", "deprecated.deployment.rollback.to"),
];

const KUBELET: &[&str] = &[
    "kubernetes.io/config.hash",
    "kubernetes.io/config.mirror",
    "kubernetes.io/config.seen",
    "kubernetes.io/config.source",
];

const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";
const REVISION: &str = "deployment.kubernetes.io/revision";
const TEMPLATE_GENERATION: &str = "deprecated.daemonset.template.generation";
const CHANGE_CAUSE: &str = "kubernetes.io/change-cause";
const DEPLOYMENT_CONTROLLER: &[&str] = &[
    "deployment.kubernetes.io/desired-replicas",
    "deployment.kubernetes.io/max-replicas",
    REVISION,
];

/// The requests from Helm's release, judged with the README's Helm values.
const HELM: [&str; 2] = ["29", "30"];
/// Updates that add a key that is not the user's to an object: `kubectl
/// annotate`, the deployment controller copying what it added, a user's
/// rollback key.
const ADDS_A_KEY: [&str; 3] = ["23", "24", "34"];
/// Updates of objects that lack the owner and predate the policy.
const PREDATE_THE_POLICY: [&str; 4] = ["10", "11", "12", "18"];

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
    paths
        .into_iter()
        .map(|path| {
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            let text = std::fs::read_to_string(&path).expect("request");
            let json = serde_json::from_str(&text).expect(&name);
            Request { name, text, json }
        })
        .collect()
}

fn written_by_the_cluster(request: &Request) -> &'static [&'static str] {
    let (number, keys) = WRITTEN_BY_THE_CLUSTER[requests_index(request)];
    assert_eq!(number, request.number(), "the table is in file order");
    keys
}

fn forged(request: &Request) -> Option<&'static str> {
    FORGED
        .iter()
        .find(|(number, _)| *number == request.number())
        .map(|(_, key)| *key)
}

/// Every key of the request that is not the user's own, sorted.
fn not_the_users(request: &Request) -> Vec<&'static str> {
    let mut keys: Vec<&str> = written_by_the_cluster(request).to_vec();
    keys.extend(forged(request));
    keys.sort_unstable();
    keys
}

fn requests_index(request: &Request) -> usize {
    request.number().parse::<usize>().expect("a number") - 1
}

/// The namespaces the README's ClusterAdmissionPolicy leaves out.
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
            true => HELM_ALLOWLIST,
            false => ALLOWLIST,
        };
        for settings in [OWNER_REQUIRED, allowlist, DENYLIST] {
            let verdict = validate(&policy, &request.text, settings);
            if let Some(key) = forged(&request).filter(|_| settings == allowlist) {
                let message = verdict.message.unwrap_or_default();
                assert!(
                    message.ends_with(&removal(&[key])),
                    "{}: {message}",
                    request.name
                );
                continue;
            }
            // The control plane's own Pods carry no owner: the README's
            // policy leaves their namespace out.
            let namespace = request.json["namespace"].as_str().unwrap();
            if settings == OWNER_REQUIRED && excluded.iter().any(|n| n == namespace) {
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
        let verdict = validate(&policy, &request.text, ALLOWLIST);
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
            true => JUDGED_HELM_ALLOWLIST,
            false => JUDGED_ALLOWLIST,
        };
        let strict = judged.replace('}', r#","allowExistingViolations":false}"#);
        let update = request.json["operation"] == "UPDATE";
        for (settings, rejected) in [
            (strict.as_str(), !keys.is_empty()),
            (
                judged,
                !keys.is_empty() && (!update || request.is(&ADDS_A_KEY)),
            ),
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
        let verdict = validate(&policy, &request.text, STRICT_OWNER);
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

fn request(number: &str) -> Request {
    requests()
        .into_iter()
        .find(|r| r.number() == number)
        .expect("a request of that number")
}

/// The same request, with `change` made to its JSON.
fn changed(request: &Request, change: impl FnOnce(&mut Value)) -> String {
    let mut json = request.json.clone();
    change(&mut json);
    json.to_string()
}

const STRICT_ALLOWLIST: &str = r#"{"criteria":"doesNotContainOtherThan","values":["example.com/*"],"allowExistingViolations":false}"#;

/// The kubelet's keys count where a node sends them, and on a Pod that
/// already had them, whatever `allowExistingViolations` says; the same Pod
/// sent by anyone else is refused, naming them.
#[test]
fn the_kubelets_keys_count_from_a_node_and_on_the_pods_it_made() {
    let policy = policy();
    let mirror = request("32");
    assert!(validate(&policy, &mirror.text, STRICT_ALLOWLIST).accepted);
    for user in [
        "jane@example.com",
        "system:serviceaccount:kube-system:replicaset-controller",
        "system:node:",
    ] {
        let text = changed(&mirror, |json| json["userInfo"]["username"] = user.into());
        let verdict = validate(&policy, &text, ALLOWLIST);
        let message = verdict.message.unwrap_or_default();
        assert!(message.ends_with(&removal(KUBELET)), "{user}: {message}");
    }
    let labelled = request("33");
    assert!(validate(&policy, &labelled.text, STRICT_ALLOWLIST).accepted);
    // The administrator adds a key the old Pod lacked: refused.
    let text = changed(&labelled, |json| {
        json["oldObject"]["metadata"]["annotations"]
            .as_object_mut()
            .unwrap()
            .remove("kubernetes.io/config.seen");
    });
    let verdict = validate(&policy, &text, ALLOWLIST);
    let message = verdict.message.unwrap_or_default();
    assert!(
        message.ends_with(&removal(&["kubernetes.io/config.seen"])),
        "{message}"
    );
}

/// An Indexed Job's index counts on the Pods its controller creates, under
/// either name the controller manager may use, and from no one else.
#[test]
fn the_job_controllers_keys_count_from_the_job_controller() {
    let policy = policy();
    let pod = request("26");
    assert!(validate(&policy, &pod.text, ALLOWLIST).accepted);
    let as_manager = changed(&pod, |json| {
        json["userInfo"]["username"] = "system:kube-controller-manager".into()
    });
    assert!(validate(&policy, &as_manager, ALLOWLIST).accepted);
    let as_user = changed(&pod, |json| {
        json["userInfo"]["username"] = "jane@example.com".into()
    });
    let message = validate(&policy, &as_user, ALLOWLIST)
        .message
        .unwrap_or_default();
    assert!(
        message.ends_with(&removal(&["batch.kubernetes.io/job-completion-index"])),
        "{message}"
    );
}

/// An AppArmor key counts where it restates the Pod's field; one that no
/// field restates, or that says otherwise, is the user's.
#[test]
fn an_apparmor_key_counts_where_it_restates_the_field() {
    let policy = policy();
    let pod = request("35");
    assert!(validate(&policy, &pod.text, ALLOWLIST).accepted);
    let key = "container.apparmor.security.beta.kubernetes.io/frontend";
    for (what, text) in [
        (
            "no field",
            changed(&pod, |json| {
                json["object"]["spec"]["securityContext"] = serde_json::json!({})
            }),
        ),
        (
            "another profile",
            changed(&pod, |json| {
                json["object"]["spec"]["securityContext"]["appArmorProfile"]["type"] =
                    "Unconfined".into()
            }),
        ),
    ] {
        let message = validate(&policy, &text, ALLOWLIST)
            .message
            .unwrap_or_default();
        assert!(message.ends_with(&removal(&[key])), "{what}: {message}");
    }
}
