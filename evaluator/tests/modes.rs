//! Each execution mode run for real, on the project's own test policies
//! (`tests/policies/`): their settings, their verdicts, their mutations as
//! the JSONPatch policy-server sends, and their host calls answered by
//! objects, by a session file, or refused.

mod common;

use std::sync::Arc;

use common::{create, module, namespace, pod, raw};
use policy_evaluator::capabilities::cluster::Cluster;
use policy_evaluator::capabilities::session::{Record, Replay};
use policy_evaluator::capabilities::{Context, Host};
use policy_evaluator::metadata::{ExecutionMode, Resource};
use policy_evaluator::response::AdmissionResponse;
use policy_evaluator::{CompiledPolicy, Policy};
use serde_json::{Value, json};

fn compiled(name: &str) -> CompiledPolicy {
    CompiledPolicy::from_file(&module(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// An instance whose lookups `host` answers, granted what its metadata
/// lists.
fn instance(name: &str, host: Arc<dyn Host>) -> Policy {
    let compiled = compiled(name);
    let resources = compiled
        .metadata()
        .expect("annotated")
        .context_aware_resources
        .clone();
    compiled
        .instantiate_with(Arc::new(Context {
            policy: name.to_string(),
            host,
            resources,
            ..Context::default()
        }))
        .unwrap()
}

fn evaluate(policy: &Policy, object: Value, settings: Value) -> AdmissionResponse {
    let request = serde_json::to_vec(&create(object)).unwrap();
    policy.evaluate(&request, &serde_json::to_vec(&settings).unwrap(), false)
}

fn message(response: &AdmissionResponse) -> String {
    response
        .status
        .as_ref()
        .and_then(|status| status.message.clone())
        .unwrap_or_default()
}

fn operations(response: &AdmissionResponse) -> Value {
    serde_json::to_value(response.operations().unwrap()).unwrap()
}

fn cluster(objects: Vec<Value>) -> Arc<dyn Host> {
    Arc::new(Cluster::new(objects))
}

#[test]
fn each_module_runs_in_the_mode_its_metadata_gives() {
    let modes = [
        ("wapc", ExecutionMode::Wapc),
        ("wasi", ExecutionMode::Wasi),
        ("opa", ExecutionMode::Opa),
        ("gatekeeper", ExecutionMode::Gatekeeper),
    ];
    for (name, mode) in modes {
        let compiled = compiled(name);
        assert_eq!(compiled.mode(), mode, "{name}");
        assert_eq!(compiled.instantiate().unwrap().mode(), mode, "{name}");
    }
    // Without metadata: waPC unless built from Rego, which needs `-e`.
    assert_eq!(
        CompiledPolicy::from_file(&raw("wapc")).unwrap().mode(),
        ExecutionMode::Wapc
    );
    let rego = CompiledPolicy::from_file(&raw("opa"))
        .err()
        .unwrap()
        .to_string();
    assert!(rego.contains("-e opa or -e gatekeeper"), "{rego}");
    let asked = CompiledPolicy::from_file_as(&raw("opa"), Some(ExecutionMode::Gatekeeper)).unwrap();
    assert_eq!(asked.mode(), ExecutionMode::Gatekeeper);
    let wrong = CompiledPolicy::from_file_as(&module("opa"), Some(ExecutionMode::Wasi))
        .err()
        .unwrap()
        .to_string();
    assert!(
        wrong.contains("(wasi) is not the one the module's metadata gives (opa)"),
        "{wrong}"
    );
    let not_rego = CompiledPolicy::from_file_as(&raw("wasi"), Some(ExecutionMode::Opa))
        .err()
        .unwrap()
        .to_string();
    assert!(not_rego.contains("not built from Rego"), "{not_rego}");
}

#[test]
fn settings_are_judged_by_each_mode_as_policy_server_judges_them() {
    let wapc = compiled("wapc").instantiate().unwrap();
    assert!(wapc.settings_verdict(br#"{"annotation":"a"}"#).valid);
    assert_eq!(
        wapc.settings_verdict(br#"{"value":"x"}"#)
            .message
            .as_deref(),
        Some("annotation is required")
    );
    // A guest error is invalid settings, in policy-evaluator's words.
    let failed = wapc.settings_verdict(br#"{"fail":true}"#);
    assert!(!failed.valid);
    assert_eq!(
        failed.message.as_deref(),
        Some(
            r#"Error invoking settings validation callback: GuestCallFailure("settings validation failed on request (\"fail\": true)")"#
        )
    );
    let wasi = compiled("wasi").instantiate().unwrap();
    assert!(wasi.settings_verdict(br#"{"forbidden":"x"}"#).valid);
    assert_eq!(
        wasi.settings_verdict(br#"{"forbidden":""}"#)
            .message
            .as_deref(),
        Some("forbidden must not be empty")
    );
    // Rego settings are never refused.
    for name in ["opa", "gatekeeper"] {
        assert!(
            compiled(name)
                .instantiate()
                .unwrap()
                .settings_verdict(b"{}")
                .valid
        );
    }
}

#[test]
fn a_wapc_policy_mutates_and_looks_up_its_namespace() {
    let settings = json!({"annotation": "example.com/checked", "denyLabel": "locked"});
    let objects = vec![
        namespace("open", json!({})),
        namespace("closed", json!({"locked": "true"})),
    ];
    let policy = instance("wapc", cluster(objects));
    let added = evaluate(
        &policy,
        pod("a", "open", json!({}), json!({"x": "1"})),
        settings.clone(),
    );
    assert!(added.allowed);
    assert_eq!(
        operations(&added),
        json!([{"op": "add", "path": "/metadata/annotations/example.com~1checked", "value": "yes"}])
    );
    // Already annotated: no patch, no patchType.
    let kept = evaluate(
        &policy,
        pod("a", "open", json!({}), json!({"example.com/checked": "no"})),
        settings.clone(),
    );
    assert!(kept.allowed && kept.patch.is_none() && kept.patch_type.is_none());
    let refused = evaluate(
        &policy,
        pod("a", "closed", json!({}), json!({})),
        settings.clone(),
    );
    assert!(!refused.allowed);
    assert_eq!(
        message(&refused),
        "Namespace closed is labelled locked=true"
    );
    let missing = evaluate(
        &policy,
        pod("a", "gone", json!({}), json!({})),
        settings.clone(),
    );
    assert_eq!(
        message(&missing),
        "cannot look up Namespace gone: Callback evaluation failure: Cannot find v1/Namespace named 'gone' inside of namespace 'None'"
    );
    // Not granted Namespaces: the lookup is refused as policy-server
    // refuses it, and the policy says so.
    let ungranted = compiled("wapc").instantiate().unwrap();
    let denied = evaluate(&ungranted, pod("a", "open", json!({}), json!({})), settings);
    assert_eq!(
        message(&denied),
        "cannot look up Namespace open: Policy has not been granted access to Kubernetes v1/Namespace resources. The violation has been reported."
    );
}

#[test]
fn a_wasi_program_rejects_mutates_and_lists_configmaps() {
    let configmap = |name: &str, namespace: &str| json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": namespace}});
    let objects = vec![
        configmap("a", "busy"),
        configmap("b", "busy"),
        configmap("c", "quiet"),
    ];
    let policy = instance("wasi", cluster(objects));
    let forbidden = evaluate(
        &policy,
        pod("debug-shell", "quiet", json!({}), json!({})),
        json!({"forbidden": "debug"}),
    );
    assert!(!forbidden.allowed);
    assert_eq!(message(&forbidden), "name debug-shell contains debug");
    let labelled = evaluate(
        &policy,
        pod("web", "quiet", json!({"app": "web"}), json!({})),
        json!({"forbidden": "debug", "label": "team"}),
    );
    assert!(labelled.allowed);
    assert_eq!(
        operations(&labelled),
        json!([{"op": "add", "path": "/metadata/labels/team", "value": "wasi"}])
    );
    let limits = json!({"forbidden": "debug", "maxConfigMaps": 1});
    let busy = evaluate(
        &policy,
        pod("web", "busy", json!({}), json!({})),
        limits.clone(),
    );
    assert_eq!(
        message(&busy),
        "Namespace busy holds 2 ConfigMaps, more than 1"
    );
    assert!(evaluate(&policy, pod("web", "quiet", json!({}), json!({})), limits).allowed);
    // A program that exits 1: policy-server rejects with what it wrote
    // to its standard error, code 500.
    let broken = policy.evaluate(b"{}", b"{}", false);
    let status = broken.status.unwrap();
    assert_eq!(status.code, Some(500));
    assert!(
        status
            .message
            .as_deref()
            .is_some_and(|m| m.contains("invalid settings")),
        "{status:?}"
    );
}

#[test]
fn an_opa_policy_reads_its_settings_and_its_inventory() {
    let objects = vec![
        namespace("closed", json!({"deny": "true"})),
        namespace("open", json!({})),
    ];
    let policy = instance("opa", cluster(objects));
    let settings = json!({"denied_namespaces": ["legacy"]});
    let legacy = evaluate(
        &policy,
        pod("a", "legacy", json!({}), json!({})),
        settings.clone(),
    );
    assert!(!legacy.allowed);
    assert_eq!(message(&legacy), "namespace legacy is denied");
    assert_eq!(legacy.uid, "test-uid");
    let closed = evaluate(
        &policy,
        pod("a", "closed", json!({}), json!({})),
        settings.clone(),
    );
    assert_eq!(message(&closed), "namespace closed is labelled deny=true");
    assert!(
        evaluate(
            &policy,
            pod("a", "open", json!({}), json!({})),
            settings.clone()
        )
        .allowed
    );
    // Not granted: no inventory, so only the settings reject.
    let blind = compiled("opa").instantiate().unwrap();
    assert!(evaluate(&blind, pod("a", "closed", json!({}), json!({})), settings).allowed);
}

#[test]
fn a_gatekeeper_policy_joins_its_violations() {
    let configmap = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "config", "namespace": "ready"}});
    let policy = instance("gatekeeper", cluster(vec![configmap]));
    let parameters = json!({"labels": ["team", "tier"], "requiredConfigMap": "config"});
    let rejected = evaluate(
        &policy,
        pod("a", "empty", json!({"tier": "web"}), json!({})),
        parameters.clone(),
    );
    assert!(!rejected.allowed);
    let said = message(&rejected);
    let mut violations: Vec<&str> = said.split(", ").collect();
    violations.sort_unstable();
    assert_eq!(
        violations,
        ["missing label team", "no ConfigMap config in empty"]
    );
    assert!(
        evaluate(
            &policy,
            pod("a", "ready", json!({"team": "a", "tier": "web"}), json!({})),
            parameters
        )
        .allowed
    );
    // Gatekeeper takes no raw request.
    let refused = policy.evaluate(b"{\"uid\":\"r\"}", b"{}", true);
    assert_eq!(
        message(&refused),
        "internal server error: Gatekeeper does not support raw validation requests"
    );
}

#[test]
fn a_recorded_session_replays_the_same_answers() {
    let settings = json!({"annotation": "example.com/checked", "denyLabel": "locked"});
    let objects = vec![namespace("closed", json!({"locked": "true"}))];
    let record = Arc::new(Record::new(Box::new(Cluster::new(objects))));
    let recording = instance("wapc", record.clone());
    let first = evaluate(
        &recording,
        pod("a", "closed", json!({}), json!({})),
        settings.clone(),
    );
    let session = std::env::temp_dir().join(format!("session-{}.yml", std::process::id()));
    record.write(&session).unwrap();
    let replay = Arc::new(Replay::read(&session).unwrap());
    let replaying = instance("wapc", replay.clone());
    let again = evaluate(
        &replaying,
        pod("a", "closed", json!({}), json!({})),
        settings.clone(),
    );
    assert_eq!(first, again);
    assert_eq!(replay.leftovers(), None);
    // Another call than the one recorded is refused by the replay.
    let replay = Arc::new(Replay::read(&session).unwrap());
    let other = evaluate(
        &instance("wapc", replay),
        pod("a", "open", json!({}), json!({})),
        settings,
    );
    assert!(
        message(&other).contains("Replay error: unexpected request."),
        "{}",
        message(&other)
    );
    std::fs::remove_file(session).unwrap();
}

#[test]
fn a_policy_granted_nothing_by_its_metadata_looks_up_nothing() {
    let compiled = compiled("wasi");
    let listed = &compiled.metadata().unwrap().context_aware_resources;
    assert_eq!(
        listed.iter().collect::<Vec<_>>(),
        [&Resource {
            api_version: "v1".into(),
            kind: "ConfigMap".into()
        }]
    );
    let policy = compiled.instantiate().unwrap();
    let refused = evaluate(
        &policy,
        pod("web", "busy", json!({}), json!({})),
        json!({"forbidden": "debug", "maxConfigMaps": 1}),
    );
    assert_eq!(
        message(&refused),
        "cannot list ConfigMaps in busy: Policy has not been granted access to Kubernetes v1/ConfigMap resources. The violation has been reported."
    );
}

#[test]
fn a_wapc_policy_asks_whether_its_sender_may_and_rbac_answers() {
    let role = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
        "metadata": {"name": "configmap-writer", "namespace": "shop"},
        "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["create", "update"]}]
    });
    let binding = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": "bob-configmaps", "namespace": "shop"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "configmap-writer"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "bob"}]
    });
    let policy = instance("wapc", cluster(vec![role, binding]));
    let settings = serde_json::to_vec(
        &json!({"annotation": "a", "canI": {"verb": "create", "resource": "configmaps"}}),
    )
    .unwrap();
    let sent_by = |user: &str| {
        let mut request = create(pod("web", "shop", json!({}), json!({"a": "1"})));
        request["userInfo"] = json!({"username": user, "groups": ["system:authenticated"]});
        policy.evaluate(&serde_json::to_vec(&request).unwrap(), &settings, false)
    };
    assert!(sent_by("bob").allowed);
    let alice = sent_by("alice");
    assert_eq!(message(&alice), "alice may not create configmaps in shop");
}
