//! `test_data/cluster/` replayed without Go: what a real control plane sent
//! the policy's webhooks (`recorded/<release>/`, written by `cluster/run`,
//! never by hand) and the requests written by hand for what no cluster test
//! can send (`written/`, each with its reason), both as reviews beside an
//! `index.json` of their verdicts. The module answers each review as its
//! index says, every request the cluster made on its own passes the README's
//! recommended settings, and judging Kubernetes' own keys would name exactly
//! the keys that are not the user's.

mod common;

use std::collections::BTreeSet;

use common::recorded::{
    ADMIN, Recording, WRITTEN, recommended, recommended_settings, recorded_reviews, recordings,
    releases, with,
};
use common::{policy, root, validate};
use policy_core::settings::Field;
use policy_host::admission::Policy;
use serde_json::Value;

/// Each review, recorded or written, answered as its index says: the
/// verdict and, for a refusal, the message.
#[test]
fn the_module_answers_each_review_as_its_index_says() {
    let policy = policy();
    for recording in recordings() {
        for (id, settings) in &recording.settings {
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

/// The senders in each release's recordings (the group's included).
fn senders(release: &std::path::Path) -> BTreeSet<String> {
    let mut senders = BTreeSet::new();
    for dir in [release.to_path_buf(), release.join("group")] {
        for (_, review, _) in recorded_reviews(&dir).1 {
            let user = review["request"]["userInfo"]["username"].as_str();
            senders.insert(user.expect("a sender").to_string());
        }
    }
    senders
}

/// The policy's central promise, held to a real cluster: what the
/// controllers, the garbage collector and a node send passes every one of
/// the recommended settings. The scenarios `cluster/run` ran, each with the
/// senders it brings (index.json's table), say whose requests the
/// recordings must hold, so that a run that lost one is noticed.
#[test]
fn what_the_cluster_sends_on_its_own_passes_the_recommended_settings() {
    let recordings = recordings();
    for release in releases() {
        let scenarios = recorded_reviews(&release).0["scenarios"].clone();
        let scenarios = scenarios.as_array().expect("index.json's scenarios");
        let recorded = senders(&release);
        let mut expected = BTreeSet::new();
        for scenario in scenarios {
            for sender in scenario["senders"].as_array().expect("its senders") {
                let sender = sender.as_str().unwrap();
                assert!(
                    recorded.contains(sender),
                    "{}: {}: nothing from {sender}",
                    release.display(),
                    scenario["name"]
                );
                expected.insert(sender);
            }
        }
        // Seven controllers, the garbage collector, a node and the user.
        assert!(
            expected.len() >= 10 && expected.iter().any(|s| s.starts_with("system:node:")),
            "{}: {expected:?}",
            release.display()
        );
    }
    let excluded = excluded_namespaces();
    for recording in recordings.iter().filter(|r| r.user() != ADMIN) {
        // No webhook of the example policy hears the control plane's own
        // namespace (the mirror Pod written by hand).
        if excluded.contains(&recording.namespace()) {
            continue;
        }
        for (id, _) in recommended() {
            // Where Helm wrote its keys, the README's values for Helm.
            let id = match (id.as_str(), recording.by_helm()) {
                ("allowlist", true) => "allowlist-with-helm",
                (id, _) => id,
            };
            assert_eq!(
                recording.verdicts[id]["allowed"],
                true,
                "{} under {id}",
                recording.name()
            );
        }
    }
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
    let excluded: Vec<String> = expressions
        .iter()
        .filter(|e| e["key"] == "kubernetes.io/metadata.name" && e["operator"] == "NotIn")
        .flat_map(|e| e["values"].as_array().expect("values").clone())
        .map(|v| v.as_str().expect("a name").to_string())
        .collect();
    assert_eq!(excluded, ["kube-system"]);
    excluded
}

/// With Kubernetes' keys judged like the user's, each request is rejected
/// naming exactly the keys not of the user's prefix, the keys the cluster
/// wrote: every one when updates are judged on their new object alone, and
/// with the README's default for updates, every creation and each update
/// that adds such a key.
#[test]
fn kubernetes_keys_judged_name_exactly_the_keys_the_cluster_wrote() {
    let policy = policy();
    let judged = with(allowlist(), Field::AllowKubernetesBookkeeping.name(), false);
    let strict = with(&judged, Field::AllowExistingViolations.name(), false);
    for recording in recordings() {
        let foreign = |object: &Value| -> Vec<String> {
            object["metadata"]["annotations"]
                .as_object()
                .map(|a| {
                    a.keys()
                        .filter(|k| !k.starts_with("example.com/"))
                        .cloned()
                        .collect()
                })
                .unwrap_or_default()
        };
        let keys = foreign(&recording.request["object"]);
        let old = foreign(&recording.request["oldObject"]);
        let adds_one = keys.iter().any(|k| !old.contains(k));
        let update = recording.request["operation"] == "UPDATE";
        for (settings, rejected) in [
            (&strict, !keys.is_empty()),
            (&judged, !keys.is_empty() && (!update || adds_one)),
        ] {
            let verdict = validate(&policy, &recording.text, settings);
            assert_eq!(
                !verdict.accepted,
                rejected,
                "{} under {settings}",
                recording.name()
            );
            if rejected {
                let names: Vec<&str> = keys.iter().map(String::as_str).collect();
                let message = verdict.message.unwrap();
                assert!(
                    message.ends_with(&removal(&names)),
                    "{}: {message}",
                    recording.name()
                );
            }
        }
    }
}

/// With every update judged on its new object alone, the owner is required
/// of objects that predate the policy too: the controllers' updates of the
/// Deployments, ReplicaSets and DaemonSet created before it are rejected
/// (which would leave the foreground deletions hanging), as is everything
/// else that lacks the owner, and nothing that has it.
#[test]
fn updates_judged_alone_reject_the_objects_that_predate_the_policy() {
    let policy = policy();
    let strict = with(
        recommended_settings("owner-required"),
        Field::AllowExistingViolations.name(),
        false,
    );
    let excluded = excluded_namespaces();
    let mut predating = 0;
    for recording in recordings() {
        let has_owner =
            !recording.request["object"]["metadata"]["annotations"]["example.com/owner"].is_null();
        let verdict = validate(&policy, &recording.text, &strict);
        assert_eq!(verdict.accepted, has_owner, "{}", recording.name());
        if !has_owner {
            let message = verdict.message.unwrap_or_default();
            assert!(
                message.ends_with(r#"lacks required annotations; add "example.com/owner""#),
                "{}: {message}",
                recording.name()
            );
        }
        if !has_owner && recording.user() != ADMIN && !excluded.contains(&recording.namespace()) {
            predating += 1;
            // The README's default lets the controllers carry on.
            assert_eq!(recording.verdicts["owner-required"]["allowed"], true);
        }
    }
    assert!(
        predating >= 3,
        "{predating} updates of objects that predate the policy"
    );
}

/// One recording, by its release and file name.
fn recording(release: &str, file: &str) -> Recording {
    recordings()
        .into_iter()
        .find(|r| r.release == release && r.file == file)
        .unwrap_or_else(|| panic!("no recording {release}/{file}: rerun cluster/run?"))
}

/// The same request, with `change` made to its JSON.
fn changed(recording: &Recording, change: impl FnOnce(&mut Value)) -> String {
    let mut json = recording.request.clone();
    change(&mut json);
    json.to_string()
}

fn removal(keys: &[&str]) -> String {
    let quoted: Vec<String> = keys.iter().map(|k| format!("\"{k}\"")).collect();
    format!("; remove {}", quoted.join(", "))
}

fn allowlist() -> &'static str {
    recommended_settings("allowlist")
}

const KUBELET: &[&str] = &[
    "kubernetes.io/config.hash",
    "kubernetes.io/config.mirror",
    "kubernetes.io/config.seen",
    "kubernetes.io/config.source",
];

fn strict_allowlist() -> String {
    with(allowlist(), Field::AllowExistingViolations.name(), false)
}

/// The kubelet's keys count where a node sends them, and on a Pod that
/// already had them, whatever `allowExistingViolations` says; the same Pod
/// sent by anyone else is refused, naming them.
#[test]
fn the_kubelets_keys_count_from_a_node_and_on_the_pods_it_made() {
    let policy = policy();
    let mirror = recording("1.37", "pod-create-node.json");
    assert!(validate(&policy, &mirror.text, &strict_allowlist()).accepted);
    for user in [
        "jane@example.com",
        "system:serviceaccount:kube-system:replicaset-controller",
        "system:node:",
    ] {
        let text = changed(&mirror, |json| json["userInfo"]["username"] = user.into());
        let verdict = validate(&policy, &text, allowlist());
        let message = verdict.message.unwrap_or_default();
        assert!(message.ends_with(&removal(KUBELET)), "{user}: {message}");
    }
    let labelled = recording("1.37", "pod-update-kubernetes-admin.json");
    assert!(validate(&policy, &labelled.text, &strict_allowlist()).accepted);
    // The administrator adds a key the old Pod lacked: refused.
    let text = changed(&labelled, |json| {
        json["oldObject"]["metadata"]["annotations"]
            .as_object_mut()
            .unwrap()
            .remove("kubernetes.io/config.seen");
    });
    let verdict = validate(&policy, &text, allowlist());
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
    let pod = recording("1.37", "pod-create-job-controller.json");
    assert!(validate(&policy, &pod.text, allowlist()).accepted);
    let as_manager = changed(&pod, |json| {
        json["userInfo"]["username"] = "system:kube-controller-manager".into()
    });
    assert!(validate(&policy, &as_manager, allowlist()).accepted);
    let as_user = changed(&pod, |json| {
        json["userInfo"]["username"] = "jane@example.com".into()
    });
    let message = validate(&policy, &as_user, allowlist())
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
    let pod = recording("1.33", "pod-create-replicaset-controller-2.json");
    assert!(validate(&policy, &pod.text, allowlist()).accepted);
    let key = "container.apparmor.security.beta.kubernetes.io/frontend";
    for (what, text) in [
        (
            "no field",
            changed(&pod, |json| {
                json["object"]["spec"]["containers"][0]["securityContext"] = serde_json::json!({})
            }),
        ),
        (
            "another profile",
            changed(&pod, |json| {
                json["object"]["spec"]["containers"][0]["securityContext"]["appArmorProfile"]["type"] =
                    "Unconfined".into()
            }),
        ),
    ] {
        let message = validate(&policy, &text, allowlist())
            .message
            .unwrap_or_default();
        assert!(message.ends_with(&removal(&[key])), "{what}: {message}");
    }
}

const GROUP: &str = "owned-and-allowed";

/// The policy group as `cluster/run` registers it.
fn group_manifest() -> Value {
    let path = root().join("cluster/policies/owned-and-allowed.yaml");
    let text = std::fs::read_to_string(&path).unwrap();
    let mut documents = policy_manifests::documents(&text);
    assert_eq!(documents.len(), 1, "{}", path.display());
    documents.remove(0).1.expect("YAML")
}

/// The policy group, held to a real cluster: each review its webhook got
/// (admissions in `group/`, audits in `group/audit/`) is answered as it was
/// answered there, the group's message and its members' causes included;
/// everything the cluster made passes, and each of the two refusals names
/// the one member that rejected.
#[test]
fn the_group_answers_each_review_as_it_did_in_the_cluster() {
    let instance = policy();
    let manifest = group_manifest();
    let judging = Policy::from_manifest(&manifest)
        .unwrap()
        .judging(&instance)
        .unwrap();
    for release in releases() {
        for dir in [release.join("group"), release.join("group/audit")] {
            let (index, reviews) = recorded_reviews(&dir);
            if !index["settings"].is_null() {
                assert_eq!(index["settings"][GROUP], manifest, "{}", dir.display());
            }
            let mut refused = BTreeSet::new();
            for (file, review, verdicts) in &reviews {
                let name = format!("{}/{file}", dir.display());
                let body = serde_json::to_vec(review).unwrap();
                let answer = policy_host::serve::answer(&instance, &judging, &body).unwrap();
                let response = &answer["response"];
                let recorded = &verdicts[GROUP];
                assert_eq!(response["allowed"], recorded["allowed"], "{name}");
                if response["allowed"] == true {
                    continue;
                }
                assert_eq!(response["status"]["message"], recorded["message"], "{name}");
                let causes = &response["status"]["details"]["causes"];
                assert_eq!(causes, &recorded["causes"], "{name}");
                assert_eq!(review["request"]["userInfo"]["username"], ADMIN, "{name}");
                let members: Vec<String> = causes
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|c| c["field"].as_str().unwrap().to_string())
                    .collect();
                let object = review["request"]["name"].as_str().unwrap().to_string();
                refused.insert((object, members));
            }
            let admissions = !index["settings"].is_null();
            let expected = match admissions {
                true => BTreeSet::from([
                    (
                        "nobody".to_string(),
                        vec!["spec.policies.owned".to_string()],
                    ),
                    (
                        "traced".to_string(),
                        vec!["spec.policies.allowed".to_string()],
                    ),
                ]),
                false => BTreeSet::new(),
            };
            assert_eq!(refused, expected, "{}", dir.display());
            assert!(
                reviews.len() >= 4,
                "{}: {} reviews",
                dir.display(),
                reviews.len()
            );
        }
    }
}

/// The requests written by hand carry what the API server puts in them: the
/// objects a controller or the kubelet creates name their owner, every
/// object its field managers, and every update the object it replaces; and
/// each says why no recording holds it.
#[test]
fn the_requests_written_by_hand_are_shaped_as_the_api_server_sends_them() {
    let dir = root().join(WRITTEN);
    let (index, reviews) = recorded_reviews(&dir);
    assert!(!reviews.is_empty());
    for (name, review, _) in &reviews {
        let why = index["why"][name].as_str().unwrap_or_default();
        assert!(
            !why.is_empty(),
            "{name}: say in {WRITTEN}/index.json `why` why no recording holds it"
        );
        let request = &review["request"];
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
    let whys = index["why"].as_object().expect("why").len();
    assert_eq!(whys, reviews.len(), "a `why` for a file that is gone");
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

/// The settings every index judges with are the ones the documentation
/// shows: the recommended settings that the cluster tests register
/// (`common::recorded::RECOMMENDED`) and the allowlist for Helm users that
/// the requests written by hand add; and the policy group the cluster tests
/// register is made of two of them: none of these changes without the
/// others.
#[test]
fn the_settings_judged_with_are_those_the_documentation_shows() {
    let parse = |settings: &str| -> Value { serde_json::from_str(settings).unwrap() };
    let shown = documented_settings();
    assert!(shown.len() > 3, "{shown:?}");
    let mut judged: BTreeSet<(String, String)> = recommended().iter().cloned().collect();
    for recording in recordings() {
        judged.extend(recording.settings);
    }
    assert!(judged.len() > recommended().len(), "{judged:?}");
    for (id, settings) in &judged {
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
    assert_eq!(
        members["owned"]["settings"],
        parse(recommended_settings("owner-required"))
    );
    assert_eq!(members["allowed"]["settings"], parse(allowlist()));
}
