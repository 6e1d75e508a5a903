//! Side-by-side benchmark of policy modules through the waPC host: module
//! size, compile time, and time per `validate` call against the call floor
//! (the same payload sent to `protocol_version`, which parses nothing).
//!
//! Modules run in interleaved rounds, one warm instance each, so that drift on
//! a shared machine hits them alike; compare the ratios, not the nanoseconds.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use policy_evaluator::{CompiledPolicy, Policy, validate_payload};
use serde_json::{Value, json};

const USAGE: &str = "usage: policy-bench [--rounds N] [--settings JSON] [--only NAME] [--write-payloads DIR] [--calls N [--floor]] [--deadlines] <module.wasm>...

--settings replaces the settings of every request but the allowlists, which
compare four patterns with four exact names, and judge Kubernetes' own keys.
The modules are compiled without deadline checks, so that the module's own
code is what is measured; --deadlines compiles them in, as policy-server and
the runner's commands run them by default.";

/// Settings every module gets; any policy with this settings format can run.
const DEFAULT_SETTINGS: &str =
    r#"{"criteria":"containsAllOf","values":["owner","example.com/application"]}"#;

/// An allowlist of four patterns, and one of the four exact keys that the
/// ReplicaSet carries: the same request judged both ways.
const PATTERN_ALLOWLIST: &str = r#"{"criteria":"doesNotContainOtherThan","values":["example.com/*","kubectl.kubernetes.io/*","deployment.kubernetes.io/*","batch.kubernetes.io/*"]}"#;
const EXACT_ALLOWLIST: &str = r#"{"criteria":"doesNotContainOtherThan","values":["example.com/owner","deployment.kubernetes.io/revision","deployment.kubernetes.io/desired-replicas","deployment.kubernetes.io/max-replicas"]}"#;
/// An allowlist of the user's prefix alone: since 0.3.0 the ReplicaSet's
/// `deployment.kubernetes.io/` keys pass as Kubernetes' own, and none of the
/// Pod's 2,000 keys is listed or Kubernetes' (0.2.0 judges both the same way
/// but for the ReplicaSet, which it rejects).
const OWN_PREFIX_ALLOWLIST: &str =
    r#"{"criteria":"doesNotContainOtherThan","values":["example.com/*"]}"#;

struct Case {
    name: &'static str,
    payload: Vec<u8>,
}

struct Module {
    path: PathBuf,
    size: u64,
    compile: Duration,
    policy: Policy,
    /// Per case: floor and validate samples, in ns per call.
    floor: Vec<Vec<f64>>,
    validate: Vec<Vec<f64>>,
}

fn main() {
    if let Err(message) = run() {
        eprintln!("Error: {message}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), String> {
    let mut rounds = 15;
    let mut settings = DEFAULT_SETTINGS.to_string();
    let mut paths = Vec::new();
    let mut write_to = None;
    let mut only = None;
    let mut calls = None;
    let mut floor = false;
    let mut deadlines = false;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--rounds" => {
                rounds = args
                    .next()
                    .and_then(|n| n.parse().ok())
                    .filter(|&n: &usize| n > 0)
                    .ok_or(USAGE)?
            }
            "--settings" => settings = args.next().ok_or(USAGE)?,
            "--only" => only = Some(args.next().ok_or(USAGE)?),
            "--calls" => {
                calls = Some(
                    args.next()
                        .and_then(|n| n.parse().ok())
                        .filter(|&n: &usize| n > 0)
                        .ok_or(USAGE)?,
                )
            }
            "--floor" => floor = true,
            "--deadlines" => deadlines = true,
            "--write-payloads" => write_to = Some(PathBuf::from(args.next().ok_or(USAGE)?)),
            "-h" | "--help" => return Err(USAGE.to_string()),
            path => paths.push(PathBuf::from(path)),
        }
    }
    if !deadlines {
        policy_evaluator::limits::without_deadlines();
    }
    let mut cases = cases(settings.as_bytes());
    // One request alone, for profiling (see POLICY_HOST_PROFILER in the host).
    if let Some(only) = only {
        cases.retain(|case| case.name.contains(only.as_str()));
        if cases.is_empty() {
            return Err(format!("--only {only}: no request has that in its name"));
        }
    }
    if paths.is_empty() && write_to.is_none() {
        return Err(USAGE.to_string());
    }
    if let Some(dir) = write_to {
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        for (i, case) in cases.iter().enumerate() {
            let path = dir.join(format!("payload-{i}.json"));
            std::fs::write(&path, &case.payload).map_err(|e| format!("{}: {e}", path.display()))?;
            println!("{}: {}", path.display(), case.name);
        }
    }
    if paths.is_empty() {
        return Ok(());
    }
    if let Some(calls) = calls {
        let operation = if floor {
            "protocol_version"
        } else {
            "validate"
        };
        return count(&paths, &cases, operation, calls);
    }
    let mut modules = Vec::new();
    for path in paths {
        let bytes = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        let mut compiles = Vec::new();
        let mut compiled = None;
        for _ in 0..5 {
            let (policy, took) =
                CompiledPolicy::timed_compile(&bytes).map_err(|e| e.to_string())?;
            compiles.push(took.as_secs_f64());
            compiled = Some(policy);
        }
        let policy = compiled
            .expect("compiled")
            .instantiate()
            .map_err(|e| e.to_string())?;
        for case in &cases {
            // Warm up, and make sure the module answers rather than traps.
            policy
                .validate_payload(&case.payload)
                .map_err(|e| format!("{} on {}: {e}", path.display(), case.name))?;
        }
        modules.push(Module {
            size: bytes.len() as u64,
            compile: Duration::from_secs_f64(median(&mut compiles)),
            path,
            policy,
            floor: vec![Vec::new(); cases.len()],
            validate: vec![Vec::new(); cases.len()],
        });
    }
    for _ in 0..rounds {
        for (c, case) in cases.iter().enumerate() {
            for module in &mut modules {
                let calls = calls_for(case.payload.len());
                // What the previous request left in the guest's memory
                // weighs on the next calls (a Pod's floor took twice as long
                // or more after the 1 MiB ConfigMap): the floor is timed in
                // the state `validate` runs in, after a call of it.
                module
                    .policy
                    .call("validate", &case.payload)
                    .map_err(|e| e.to_string())?;
                module.floor[c].push(time_calls(calls, || {
                    module
                        .policy
                        .call("protocol_version", &case.payload)
                        .map(drop)
                })?);
                module.validate[c].push(time_calls(calls, || {
                    module.policy.call("validate", &case.payload).map(drop)
                })?);
            }
        }
    }
    report(&cases, &mut modules, rounds);
    Ok(())
}

/// Makes `calls` calls of `operation` with each request, timing nothing:
/// for an instruction counter, which does not drift as times do, e.g.
/// `valgrind --tool=callgrind --toggle-collect='*Policy*call*'`. The same
/// run with `--floor` gives what the calls cost without the policy's work.
fn count(paths: &[PathBuf], cases: &[Case], operation: &str, calls: usize) -> Result<(), String> {
    for path in paths {
        let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let policy = CompiledPolicy::from_bytes(&bytes)
            .and_then(|compiled| compiled.instantiate())
            .map_err(|e| e.to_string())?;
        for case in cases {
            for _ in 0..calls {
                policy
                    .call(operation, &case.payload)
                    .map_err(|e| format!("{} on {}: {e}", path.display(), case.name))?;
            }
        }
        println!(
            "{}: {calls} calls of {operation} per request",
            path.display()
        );
    }
    Ok(())
}

/// Enough calls per sample that a sample lasts a few milliseconds.
fn calls_for(payload_len: usize) -> usize {
    (2_000_000 / payload_len.max(1)).clamp(3, 2_000)
}

fn time_calls(
    calls: usize,
    mut call: impl FnMut() -> Result<(), policy_evaluator::HostError>,
) -> Result<f64, String> {
    let start = Instant::now();
    for _ in 0..calls {
        call().map_err(|e| e.to_string())?;
    }
    Ok(start.elapsed().as_nanos() as f64 / calls as f64)
}

fn median(samples: &mut [f64]) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

fn report(cases: &[Case], modules: &mut [Module], rounds: usize) {
    println!("modules ({rounds} rounds, median per call; ratio = this module / the first):");
    println!("{:<4} {:>10} {:>12}  path", "", "size (B)", "compile (ms)");
    for (i, m) in modules.iter().enumerate() {
        println!(
            "{:<4} {:>10} {:>12.1}  {}",
            format!("m{}", i + 1),
            m.size,
            m.compile.as_secs_f64() * 1e3,
            m.path.display()
        );
    }
    println!();
    println!(
        "{:<22} {:>10} {:<4} {:>15} {:>14} {:>12} {:>9}",
        "request", "payload", "", "call floor (ns)", "validate (ns)", "x call floor", "x m1"
    );
    let mut first = vec![0.0; cases.len()];
    for (i, m) in modules.iter_mut().enumerate() {
        for (c, case) in cases.iter().enumerate() {
            let floor = median(&mut m.floor[c]);
            let validate = median(&mut m.validate[c]);
            if i == 0 {
                first[c] = validate;
            }
            println!(
                "{:<22} {:>10} {:<4} {:>15.0} {:>14.0} {:>12.2} {:>9.2}",
                case.name,
                case.payload.len(),
                format!("m{}", i + 1),
                floor,
                validate,
                validate / floor,
                validate / first[c]
            );
        }
    }
}

/// A ReplicaSet as the deployment controller writes it: its own three
/// annotations and the Deployment's owner, and a pod template.
fn replicaset(replicas: u32, annotations: Value) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "ReplicaSet",
        "metadata": {"name": "api-7d9f8c6b5d", "namespace": "production", "generation": 2,
            "uid": "0c8e2f4a-6b1d-4e3f-9a5c-7d2b4f6a8c10", "creationTimestamp": "2026-11-02T09:14:03Z",
            "labels": {"app": "api", "pod-template-hash": "7d9f8c6b5d"},
            "annotations": annotations,
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "api",
                "uid": "5b1e5b5e-8f3c-4d5a-9b6e-1c2d3e4f5a6b", "controller": true, "blockOwnerDeletion": true}],
            "managedFields": [{"manager": "kube-controller-manager", "operation": "Update", "apiVersion": "apps/v1",
                "time": "2026-11-30T08:00:00Z", "fieldsType": "FieldsV1", "fieldsV1": {
                    "f:metadata": {"f:annotations": {".": {}, "f:deployment.kubernetes.io/desired-replicas": {},
                        "f:deployment.kubernetes.io/max-replicas": {}, "f:deployment.kubernetes.io/revision": {}},
                        "f:labels": {".": {}, "f:app": {}, "f:pod-template-hash": {}},
                        "f:ownerReferences": {".": {}, "k:{\"uid\":\"5b1e5b5e-8f3c-4d5a-9b6e-1c2d3e4f5a6b\"}": {}}},
                    "f:spec": {"f:replicas": {}, "f:selector": {}, "f:template": {"f:metadata": {"f:labels": {}},
                        "f:spec": {"f:containers": {"k:{\"name\":\"api\"}": {".": {}, "f:image": {}, "f:name": {}}}}}}}}]},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "api", "pod-template-hash": "7d9f8c6b5d"}},
            "template": {"metadata": {"labels": {"app": "api", "pod-template-hash": "7d9f8c6b5d"}},
                "spec": {"containers": [{"name": "api", "image": "registry.example.com/api:1.4.2",
                    "resources": {}, "terminationMessagePath": "/dev/termination-log",
                    "terminationMessagePolicy": "File", "imagePullPolicy": "IfNotPresent"}],
                    "restartPolicy": "Always", "terminationGracePeriodSeconds": 30, "dnsPolicy": "ClusterFirst",
                    "securityContext": {}, "schedulerName": "default-scheduler"}}},
        "status": {"replicas": 2, "fullyLabeledReplicas": 2, "readyReplicas": 2, "availableReplicas": 2,
            "observedGeneration": 1}})
}

fn controller_request(object: Value, old: Value, operation: &str) -> Value {
    let mut request = request(object, "ReplicaSet", "replicasets", "apps");
    request["operation"] = json!(operation);
    request["oldObject"] = old;
    request["userInfo"] = json!({"username": "system:serviceaccount:kube-system:deployment-controller",
        "groups": ["system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated"]});
    request
}

/// The deployment controller's CREATE of a ReplicaSet for an owned
/// Deployment: four annotations, all allowed by both allowlists.
fn replicaset_create() -> Value {
    let annotations = json!({"deployment.kubernetes.io/desired-replicas": "2",
        "deployment.kubernetes.io/max-replicas": "3", "deployment.kubernetes.io/revision": "2",
        "example.com/owner": "team-api"});
    controller_request(replicaset(2, annotations), Value::Null, "CREATE")
}

/// The deployment controller scaling a ReplicaSet. An `owned` one carries
/// the annotations the default settings require, and passes on its own; the
/// other lacks them, as it did before the policy: the new object fails, so
/// the old one is read, and the update passes.
fn replicaset_scaled(owned: bool) -> Value {
    let annotations = |replicas: u32| {
        let mut annotations = json!({"deployment.kubernetes.io/desired-replicas": replicas.to_string(),
            "deployment.kubernetes.io/max-replicas": (replicas + 1).to_string(),
            "deployment.kubernetes.io/revision": "2"});
        if owned {
            annotations["owner"] = json!("team-api");
            annotations["example.com/application"] = json!("api");
        }
        annotations
    };
    controller_request(
        replicaset(4, annotations(4)),
        replicaset(2, annotations(2)),
        "UPDATE",
    )
}

fn request(object: Value, kind: &str, resource: &str, group: &str) -> Value {
    json!({
        "uid": "bench-0001",
        "kind": {"group": group, "version": "v1", "kind": kind},
        "resource": {"group": group, "version": "v1", "resource": resource},
        "requestKind": {"group": group, "version": "v1", "kind": kind},
        "requestResource": {"group": group, "version": "v1", "resource": resource},
        "name": object["metadata"]["name"],
        "namespace": object["metadata"]["namespace"],
        "operation": "CREATE",
        "userInfo": {"username": "kubernetes-admin", "groups": ["system:masters", "system:authenticated"]},
        "object": object,
        "oldObject": null,
        "dryRun": false,
        "options": {"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions"}
    })
}

fn cases(settings: &[u8]) -> Vec<Case> {
    let case = |name, request: String| Case {
        name,
        payload: validate_payload(request.as_bytes(), settings),
    };
    let judged_by = |name, request: &Value, settings: &str| Case {
        name,
        payload: validate_payload(request.to_string().as_bytes(), settings.as_bytes()),
    };
    let owned_replicaset = replicaset_create();
    vec![
        case("ingress (small)", ingress().to_string()),
        case("deployment (managed)", deployment().to_string()),
        case("configmap 1 MiB esc.", configmap().to_string()),
        case(
            "pod 2000 annotations",
            pod_with_annotations(2_000).to_string(),
        ),
        case("CR nested 300 deep", nested_custom_resource(300)),
        case("update, passes", replicaset_scaled(true).to_string()),
        case(
            "update, old obj. read",
            replicaset_scaled(false).to_string(),
        ),
        judged_by("rs, 4 exact allowed", &owned_replicaset, EXACT_ALLOWLIST),
        judged_by(
            "rs, 4 patterns allowed",
            &owned_replicaset,
            PATTERN_ALLOWLIST,
        ),
        judged_by(
            "rs, k8s keys allowed",
            &owned_replicaset,
            OWN_PREFIX_ALLOWLIST,
        ),
        judged_by(
            "pod 2000, allowlist",
            &pod_with_annotations(2_000),
            OWN_PREFIX_ALLOWLIST,
        ),
        // Since 0.4.0 the kubelet's keys ask who sent the request, and an
        // AppArmor key what the Pod's spec says: the two reads a key can
        // cost (0.3.0 accepts the first and rejects the second unread).
        judged_by(
            "mirror pod, a node's",
            &recorded(MIRROR_POD),
            OWN_PREFIX_ALLOWLIST,
        ),
        judged_by(
            "pod, apparmor field",
            &recorded(APPARMOR_POD),
            OWN_PREFIX_ALLOWLIST,
        ),
        // Since 0.5.0 an audit (no sender) asks the mirror Pod's owners and
        // node instead (0.4.0 rejects it unread).
        judged_by(
            "mirror pod, audited",
            &policy_host::admission::audit::request(&recorded(MIRROR_POD)["object"]),
            OWN_PREFIX_ALLOWLIST,
        ),
    ]
}

const MIRROR_POD: &str =
    include_str!("../../../test_data/cluster/recorded/1.37/pod-create-node.json");
const APPARMOR_POD: &str = include_str!(
    "../../../test_data/cluster/recorded/1.33/pod-create-replicaset-controller-2.json"
);

/// The request of a review a real API server sent (cluster/run).
fn recorded(text: &str) -> Value {
    let review: Value = serde_json::from_str(text).expect("recordings are JSON");
    review["request"].clone()
}

fn ingress() -> Value {
    request(
        json!({
            "apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
            "metadata": {"name": "shop-frontend", "namespace": "shop",
                "annotations": {"owner": "team-web", "example.com/application": "shop",
                    "nginx.ingress.kubernetes.io/rewrite-target": "/"}},
            "spec": {"ingressClassName": "nginx", "rules": [{"host": "shop.example.com",
                "http": {"paths": [{"path": "/", "pathType": "Prefix",
                    "backend": {"service": {"name": "frontend", "port": {"number": 80}}}}]}}]}
        }),
        "Ingress",
        "ingresses",
        "networking.k8s.io",
    )
}

/// A Deployment the way the API server hands it over on an update: server-side
/// apply bookkeeping, defaults filled in, status present.
fn deployment() -> Value {
    let container = |name: &str| {
        json!({"name": name, "image": format!("registry.example.com/{name}:1.4.2"),
            "args": ["--port=8080", "--log-level=info", "--metrics"],
            "ports": [{"containerPort": 8080, "name": "http", "protocol": "TCP"},
                      {"containerPort": 9090, "name": "metrics", "protocol": "TCP"}],
            "env": [{"name": "GOMAXPROCS", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu", "divisor": "1"}}},
                    {"name": "POD_NAME", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}}],
            "resources": {"limits": {"cpu": "1", "memory": "512Mi"}, "requests": {"cpu": "250m", "memory": "256Mi"}},
            "livenessProbe": {"httpGet": {"path": "/healthz", "port": "http", "scheme": "HTTP"},
                "initialDelaySeconds": 10, "periodSeconds": 10, "timeoutSeconds": 1, "successThreshold": 1, "failureThreshold": 3},
            "readinessProbe": {"httpGet": {"path": "/ready", "port": "http", "scheme": "HTTP"},
                "periodSeconds": 5, "timeoutSeconds": 1, "successThreshold": 1, "failureThreshold": 3},
            "securityContext": {"allowPrivilegeEscalation": false, "readOnlyRootFilesystem": true,
                "runAsNonRoot": true, "capabilities": {"drop": ["ALL"]}},
            "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
            "imagePullPolicy": "IfNotPresent",
            "volumeMounts": [{"name": "config", "mountPath": "/etc/app", "readOnly": true}]})
    };
    let fields = |manager: &str, operation: &str, time: &str| {
        json!({"manager": manager, "operation": operation, "apiVersion": "apps/v1", "time": time,
            "fieldsType": "FieldsV1", "fieldsV1": {
                "f:metadata": {"f:annotations": {".": {}, "f:owner": {}, "f:example.com/application": {}},
                    "f:labels": {".": {}, "f:app": {}, "f:tier": {}}},
                "f:spec": {"f:progressDeadlineSeconds": {}, "f:replicas": {}, "f:revisionHistoryLimit": {},
                    "f:selector": {}, "f:strategy": {"f:rollingUpdate": {".": {}, "f:maxSurge": {}, "f:maxUnavailable": {}}, "f:type": {}},
                    "f:template": {"f:metadata": {"f:labels": {".": {}, "f:app": {}}},
                        "f:spec": {"f:containers": {"k:{\"name\":\"api\"}": {".": {}, "f:image": {}, "f:name": {},
                            "f:ports": {".": {}, "k:{\"containerPort\":8080,\"protocol\":\"TCP\"}": {".": {}, "f:containerPort": {}}},
                            "f:resources": {".": {}, "f:limits": {}, "f:requests": {}}}}}}}}})
    };
    request(
        json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "api", "namespace": "production", "uid": "5b1e5b5e-8f3c-4d5a-9b6e-1c2d3e4f5a6b",
                "resourceVersion": "184467", "generation": 7, "creationTimestamp": "2026-11-02T09:14:03Z",
                "labels": {"app": "api", "tier": "backend", "app.kubernetes.io/managed-by": "Helm"},
                "annotations": {"owner": "team-api", "example.com/application": "api",
                    "deployment.kubernetes.io/revision": "7", "meta.helm.sh/release-name": "api",
                    "meta.helm.sh/release-namespace": "production"},
                "managedFields": [fields("helm", "Update", "2026-11-02T09:14:03Z"),
                    fields("kubectl-client-side-apply", "Update", "2026-11-20T16:40:11Z"),
                    {"manager": "kube-controller-manager", "operation": "Update", "apiVersion": "apps/v1",
                     "time": "2026-11-30T08:00:00Z", "fieldsType": "FieldsV1", "subresource": "status",
                     "fieldsV1": {"f:status": {"f:availableReplicas": {}, "f:conditions": {".": {},
                        "k:{\"type\":\"Available\"}": {".": {}, "f:lastTransitionTime": {}, "f:status": {}},
                        "k:{\"type\":\"Progressing\"}": {".": {}, "f:lastTransitionTime": {}, "f:status": {}}},
                        "f:observedGeneration": {}, "f:readyReplicas": {}, "f:replicas": {}, "f:updatedReplicas": {}}}}]},
            "spec": {"replicas": 3, "revisionHistoryLimit": 10, "progressDeadlineSeconds": 600,
                "selector": {"matchLabels": {"app": "api"}},
                "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}},
                "template": {"metadata": {"labels": {"app": "api", "tier": "backend"},
                        "annotations": {"prometheus.io/scrape": "true", "prometheus.io/port": "9090"}},
                    "spec": {"containers": [container("api"), container("sidecar"), container("proxy"), container("metrics")],
                        "volumes": [{"name": "config", "configMap": {"name": "api-config", "defaultMode": 420}}],
                        "restartPolicy": "Always", "terminationGracePeriodSeconds": 30, "dnsPolicy": "ClusterFirst",
                        "serviceAccountName": "api", "serviceAccount": "api", "schedulerName": "default-scheduler",
                        "securityContext": {"fsGroup": 2000, "seccompProfile": {"type": "RuntimeDefault"}},
                        "affinity": {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                            {"weight": 100, "podAffinityTerm": {"topologyKey": "kubernetes.io/hostname",
                                "labelSelector": {"matchLabels": {"app": "api"}}}}]}},
                        "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "backend", "effect": "NoSchedule"}]}}},
            "status": {"observedGeneration": 7, "replicas": 3, "updatedReplicas": 3, "readyReplicas": 3, "availableReplicas": 3,
                "conditions": [
                    {"type": "Available", "status": "True", "lastUpdateTime": "2026-11-30T08:00:00Z",
                     "lastTransitionTime": "2026-11-30T08:00:00Z", "reason": "MinimumReplicasAvailable",
                     "message": "Deployment has minimum availability."},
                    {"type": "Progressing", "status": "True", "lastUpdateTime": "2026-11-30T08:00:00Z",
                     "lastTransitionTime": "2026-11-02T09:14:03Z", "reason": "NewReplicaSetAvailable",
                     "message": "ReplicaSet \"api-7d9f8c6b5d\" has successfully progressed."}]}
        }),
        "Deployment",
        "deployments",
        "apps",
    )
}

/// 1 MiB of data, dense with the escapes a config file carries.
fn configmap() -> Value {
    let line = "{\"key\": \"value\\path\", \"tab\":\t\"x\", \"note\": \"caf\u{e9} \u{2603}\"}\n";
    let mut data = serde_json::Map::new();
    let mut total = 0;
    let mut i = 0;
    while total < 1 << 20 {
        let value = line.repeat(64);
        total += value.len();
        data.insert(format!("file-{i:04}.json"), Value::from(value));
        i += 1;
    }
    request(
        json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "big-config", "namespace": "default",
                "annotations": {"owner": "team-config", "example.com/application": "config"}},
            "data": data}),
        "ConfigMap",
        "configmaps",
        "",
    )
}

fn pod_with_annotations(count: usize) -> Value {
    let mut annotations = serde_json::Map::new();
    annotations.insert("owner".into(), "team-pods".into());
    annotations.insert("example.com/application".into(), "pods".into());
    for i in 0..count - 2 {
        annotations.insert(
            format!("generated.example.com/key-{i:05}"),
            format!("value-{i}").into(),
        );
    }
    request(
        json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "annotated", "namespace": "default", "annotations": annotations},
            "spec": {"containers": [{"name": "app", "image": "nginx"}]}}),
        "Pod",
        "pods",
        "",
    )
}

fn nested_custom_resource(depth: usize) -> String {
    // The tree is spliced in as text: serde_json would refuse to parse it
    // back past its recursion limit.
    let mut tree = String::from("{\"leaf\":true}");
    for level in 0..depth {
        tree = if level % 2 == 0 {
            format!("{{\"child\":{tree},\"level\":{level}}}")
        } else {
            format!("[{tree}]")
        };
    }
    let request = request(
        json!({"apiVersion": "example.com/v1", "kind": "Widget",
            "metadata": {"name": "deep", "namespace": "default",
                "annotations": {"owner": "team-widgets", "example.com/application": "widgets"}},
            "spec": {"tree": "TREE"}}),
        "Widget",
        "widgets",
        "example.com",
    );
    request.to_string().replacen("\"TREE\"", &tree, 1)
}
