//! The cluster dump the benches judge, made up: `check-bench` writes it
//! as one `List`, `peer-bench` as a stream of documents, and
//! `tests/check.rs` includes this file.

use std::io::{self, Write};

use serde_json::{Value, json};

/// A cluster's worth of objects, in the proportions of a small production
/// cluster: per application a Deployment, its ReplicaSets and Pods, a
/// Service, ConfigMaps and a Secret; now and then a StatefulSet, DaemonSet
/// or CronJob. Made an application at a time: a dump of a million objects
/// is written without being held.
fn items(objects: usize) -> impl Iterator<Item = Value> {
    (0..)
        .flat_map(|app: usize| {
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
            group
        })
        .take(objects)
}

/// The objects as `kubectl get -A -o yaml` writes them: one `List`, each
/// item written as YAML writes an entry of a block sequence.
pub fn write_list(objects: usize, out: &mut impl Write) -> io::Result<()> {
    out.write_all(b"apiVersion: v1\nitems:\n")?;
    for item in items(objects) {
        let text = yaml_serde::to_string(&item).map_err(io::Error::other)?;
        for (index, line) in text.lines().enumerate() {
            let lead = if index == 0 { "- " } else { "  " };
            writeln!(out, "{lead}{line}")?;
        }
    }
    out.write_all(b"kind: List\nmetadata:\n  resourceVersion: ''\n")
}

/// The same objects as a stream of documents, one an object, for the tools
/// that cannot read a `List`.
pub fn write_stream(objects: usize, out: &mut impl Write) -> io::Result<()> {
    for item in items(objects) {
        out.write_all(b"---\n")?;
        yaml_serde::to_writer(&mut *out, &item).map_err(io::Error::other)?;
    }
    Ok(())
}

/// A dump written to `path` by `write`, through a buffer.
pub fn write_file(
    path: &std::path::Path,
    write: impl FnOnce(&mut io::BufWriter<std::fs::File>) -> io::Result<()>,
) -> Result<(), String> {
    let failed = |e: io::Error| format!("{}: {e}", path.display());
    let mut out = io::BufWriter::new(std::fs::File::create(path).map_err(failed)?);
    write(&mut out).and_then(|()| out.flush()).map_err(failed)
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
    } else if kind == "Secret" {
        // A Secret's data is base64, which the API server holds it to.
        object["data"] =
            json!({"key": "dmFsdWU=", "other": "YSBsb25nZXIgdmFsdWUgdGhhdCB0YWtlcyBzb21lIHJvb20="});
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
    let mut spec = json!({"selector": {"matchLabels": {"app": name}}, "template": template(name)});
    // A StatefulSet's field: a DaemonSet with it is refused, as the API
    // server refuses it.
    if kind == "StatefulSet" {
        spec["serviceName"] = name.into();
    }
    json!({
        "apiVersion": api_version, "kind": kind,
        "metadata": metadata(namespace, &format!("{name}-{}", kind.to_ascii_lowercase()), annotations),
        "spec": spec,
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
