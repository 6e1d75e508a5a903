//! How long `policy-runner check` takes on a cluster dump: N objects as
//! `kubectl get -A -o yaml` writes them (one `List`, with `managedFields`,
//! status and the annotations kubectl, the controllers and Helm write),
//! judged under an allowlist, with the objects derived from the workloads.
//!
//! ```console
//! $ target/release/check-bench policy.wasm [--objects 10000] [--runs 3] [--dump FILE]
//! ```
//!
//! `--dump FILE` keeps the dump there, to measure `policy-runner check` on
//! it alone (this bench holds the values it makes the dump from).

use std::time::Instant;

use policy_host::check::{Command, Format, PolicySource, manifests};
use serde_json::{Value, json};

const USAGE: &str = "usage: check-bench <module.wasm> [--objects N] [--runs N] [--dump FILE]";

fn main() {
    if let Err(message) = run() {
        eprintln!("Error: {message}");
        std::process::exit(2);
    }
}

fn run() -> Result<(), String> {
    let mut args = std::env::args().skip(1);
    let (mut module, mut objects, mut runs, mut keep) = (None, 10_000, 3, None);
    while let Some(arg) = args.next() {
        let mut number = || -> Result<usize, String> {
            args.next()
                .and_then(|n| n.parse().ok())
                .filter(|&n| n > 0)
                .ok_or_else(|| USAGE.to_string())
        };
        match arg.as_str() {
            "--objects" => objects = number()?,
            "--runs" => runs = number()?,
            "--dump" => keep = Some(args.next().ok_or(USAGE)?),
            "-h" | "--help" => return Err(USAGE.to_string()),
            path => module = Some(path.to_string()),
        }
    }
    let module = module.ok_or(USAGE)?;
    let dump = dump(objects);
    let path = match &keep {
        Some(file) => file.into(),
        None => std::env::temp_dir().join(format!("check-bench-{}.yaml", std::process::id())),
    };
    std::fs::write(&path, &dump).map_err(|e| e.to_string())?;
    let bytes = dump.len();
    drop(dump);
    println!(
        "a dump of {objects} objects, {:.1} MB of YAML ({})",
        bytes as f64 / 1e6,
        path.display()
    );

    let inputs = vec![path.display().to_string()];
    let start = Instant::now();
    let mut read = 0;
    manifests::read_each(&inputs, &mut |input| match input {
        manifests::Input::Manifest(_) => read += 1,
        other => panic!("{other:?}"),
    });
    let reading = start.elapsed();
    assert_eq!(read, objects);
    println!("reading and parsing alone: {:.2} s", reading.as_secs_f64());

    let command = Command {
        module: module.into(),
        inputs,
        policy: PolicySource::Settings(json!({
            "criteria": "doesNotContainOtherThan",
            "values": ["example.com/*", "meta.helm.sh/release-name", "meta.helm.sh/release-namespace"],
        })),
        namespace: None,
        kubectl_apply: false,
        derive: true,
        format: Format::Json,
        only_rejected: false,
        strict: false,
    };
    for run in 1..=runs {
        let start = Instant::now();
        let finished = command.run(|_, _| {})?;
        let took = start.elapsed().as_secs_f64();
        println!(
            "run {run}: {:.2} s for {objects} objects ({} judged with the derived ones): {:.0} µs an object of the dump, {:.0} µs a judged object",
            took,
            finished.checked,
            took * 1e6 / objects as f64,
            took * 1e6 / finished.checked as f64,
        );
    }
    if keep.is_none() {
        let _ = std::fs::remove_file(&path);
    }
    Ok(())
}

/// A cluster's worth of objects, in the proportions of a small production
/// cluster: per application a Deployment, its ReplicaSets and Pods, a
/// Service, ConfigMaps and a Secret; now and then a StatefulSet, DaemonSet
/// or CronJob.
fn dump(objects: usize) -> String {
    let mut items = Vec::with_capacity(objects);
    let mut app = 0;
    while items.len() < objects {
        let namespace = format!("team-{:02}", app % 40);
        let name = format!("app-{app:04}");
        let mut group = vec![
            deployment(&namespace, &name),
            replicaset(&namespace, &name, "5d8f6b7c9d", 3),
            replicaset(&namespace, &name, "7c9b5d8f64", 0),
            pod(&namespace, &name, "5d8f6b7c9d", "x7k2p"),
            pod(&namespace, &name, "5d8f6b7c9d", "q4m8w"),
            pod(&namespace, &name, "5d8f6b7c9d", "h2z9n"),
            plain(
                &namespace,
                &name,
                "Service",
                json!({"ports": [{"port": 80, "targetPort": 8080}]}),
            ),
            plain(
                &namespace,
                &format!("{name}-config"),
                "ConfigMap",
                json!(null),
            ),
            plain(&namespace, &format!("{name}-env"), "ConfigMap", json!(null)),
            plain(&namespace, &format!("{name}-token"), "Secret", json!(null)),
        ];
        match app % 10 {
            3 => group.push(workload(&namespace, &name, "StatefulSet", "apps/v1")),
            5 => group.push(workload(&namespace, &name, "DaemonSet", "apps/v1")),
            7 => group.push(cronjob(&namespace, &name)),
            _ => {}
        }
        items.extend(group);
        app += 1;
    }
    items.truncate(objects);
    let list = json!({"apiVersion": "v1", "kind": "List", "items": items, "metadata": {"resourceVersion": ""}});
    yaml_serde::to_string(&list).expect("YAML")
}

fn metadata(namespace: &str, name: &str, annotations: Value) -> Value {
    json!({
        "name": name, "namespace": namespace,
        "uid": "6f1c2b9e-83a4-4d57-b0e2-5c9a7d3f1e48",
        "resourceVersion": "48211907", "generation": 3,
        "creationTimestamp": "2026-06-02T09:30:12Z",
        "labels": {"app": name, "app.kubernetes.io/managed-by": "Helm"},
        "annotations": annotations,
        "managedFields": [{
            "manager": "helm", "operation": "Update", "apiVersion": "apps/v1",
            "time": "2026-06-02T09:30:12Z", "fieldsType": "FieldsV1",
            "fieldsV1": {"f:metadata": {"f:annotations": {".": {}, "f:example.com/owner": {}}, "f:labels": {".": {}, "f:app": {}}},
                         "f:spec": {"f:replicas": {}, "f:selector": {}, "f:template": {}}},
        }],
    })
}

fn helm(namespace: &str) -> Value {
    json!({
        "example.com/owner": "team",
        "meta.helm.sh/release-name": "release",
        "meta.helm.sh/release-namespace": namespace,
    })
}

fn template(name: &str) -> Value {
    json!({
        "metadata": {"labels": {"app": name}, "annotations": {"example.com/owner": "team", "kubectl.kubernetes.io/restartedAt": "2026-11-30T10:00:00Z"}},
        "spec": {
            "containers": [{
                "name": "app", "image": format!("registry.example.com/{name}:1.4.2"),
                "ports": [{"containerPort": 8080, "protocol": "TCP"}],
                "resources": {"limits": {"memory": "256Mi"}, "requests": {"cpu": "100m", "memory": "128Mi"}},
                "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
                "imagePullPolicy": "IfNotPresent",
            }],
            "restartPolicy": "Always", "terminationGracePeriodSeconds": 30, "dnsPolicy": "ClusterFirst",
            "securityContext": {}, "schedulerName": "default-scheduler",
        },
    })
}

fn deployment(namespace: &str, name: &str) -> Value {
    let mut annotations = helm(namespace);
    annotations["deployment.kubernetes.io/revision"] = "4".into();
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": metadata(namespace, name, annotations),
        "spec": {"replicas": 3, "selector": {"matchLabels": {"app": name}}, "template": template(name),
                 "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}}},
        "status": {"observedGeneration": 3, "replicas": 3, "readyReplicas": 3, "availableReplicas": 3, "updatedReplicas": 3},
    })
}

fn replicaset(namespace: &str, name: &str, hash: &str, replicas: u32) -> Value {
    let mut annotations = helm(namespace);
    annotations["deployment.kubernetes.io/revision"] = "4".into();
    annotations["deployment.kubernetes.io/desired-replicas"] = "3".into();
    annotations["deployment.kubernetes.io/max-replicas"] = "4".into();
    json!({
        "apiVersion": "apps/v1", "kind": "ReplicaSet",
        "metadata": metadata(namespace, &format!("{name}-{hash}"), annotations),
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name, "pod-template-hash": hash}}, "template": template(name)},
        "status": {"replicas": replicas, "readyReplicas": replicas, "availableReplicas": replicas},
    })
}

fn pod(namespace: &str, name: &str, hash: &str, suffix: &str) -> Value {
    let template = template(name);
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": metadata(namespace, &format!("{name}-{hash}-{suffix}"), template["metadata"]["annotations"].clone()),
        "spec": template["spec"],
        "status": {"phase": "Running", "qosClass": "Burstable", "podIP": "10.244.1.17",
                   "conditions": [{"type": "Ready", "status": "True"}]},
    })
}

fn plain(namespace: &str, name: &str, kind: &str, spec: Value) -> Value {
    let mut object = json!({"apiVersion": "v1", "kind": kind, "metadata": metadata(namespace, name, helm(namespace))});
    if !spec.is_null() {
        object["spec"] = spec;
    } else {
        object["data"] = json!({"key": "value", "other": "a longer value that takes some room"});
    }
    object
}

fn workload(namespace: &str, name: &str, kind: &str, api_version: &str) -> Value {
    let mut annotations = helm(namespace);
    if kind == "DaemonSet" {
        annotations["deprecated.daemonset.template.generation"] = "2".into();
    }
    json!({
        "apiVersion": api_version, "kind": kind,
        "metadata": metadata(namespace, &format!("{name}-{}", kind.to_ascii_lowercase()), annotations),
        "spec": {"selector": {"matchLabels": {"app": name}}, "template": template(name), "serviceName": name},
    })
}

fn cronjob(namespace: &str, name: &str) -> Value {
    let template = template(name);
    json!({
        "apiVersion": "batch/v1", "kind": "CronJob",
        "metadata": metadata(namespace, &format!("{name}-report"), helm(namespace)),
        "spec": {"schedule": "0 * * * *", "jobTemplate": {
            "metadata": {"annotations": {"example.com/owner": "team"}},
            "spec": {"template": template}}},
    })
}
