//! Field selectors, as `k8s.io/apimachinery/pkg/fields` parses them and the
//! API server then checks each field against the kind's selectable fields.

use serde_json::Value;

use super::validation::quote;
use policy_core::kinds;

#[derive(Debug)]
pub(super) struct FieldSelector(Vec<Term>);

#[derive(Debug)]
struct Term {
    read: Read,
    value: String,
    equal: bool,
}

/// How a selectable field reads from an object (the API server's field
/// sets, in `pkg/registry/*/strategy.go`, read from the served JSON).
#[derive(Debug, Clone)]
enum Read {
    /// A string at a dot path; absent is "".
    Text(String),
    /// A boolean; absent is false.
    Flag(&'static str),
    /// An integer; absent is 0.
    Count(&'static str),
    /// A Pod's first IP.
    PodIp,
    /// A core Event's source: its component, else its reporting controller.
    EventSource,
    /// Accepted but in no field set, so always "".
    Empty,
}

impl FieldSelector {
    pub(super) fn parse(
        text: &str,
        group: &str,
        version: &str,
        kind: &str,
    ) -> Result<FieldSelector, String> {
        let mut parts = split_terms(text);
        parts.sort_unstable();
        let mut terms = Vec::new();
        for part in parts.into_iter().filter(|part| !part.is_empty()) {
            let Some((field, operator, value)) = split_term(part) else {
                return Err(format!(
                    "invalid selector: '{text}'; can't understand '{part}'"
                ));
            };
            terms.push((field, operator != "!=", unescape(value)?));
        }
        let mut selected = Vec::new();
        for (field, equal, value) in terms {
            let read = selectable(group, version, kind, field)?;
            // Go's `Transform` drops a term of no field and no value.
            if matches!(&read, Read::Text(path) if path.is_empty()) && value.is_empty() {
                continue;
            }
            selected.push(Term { read, value, equal });
        }
        Ok(FieldSelector(selected))
    }

    pub(super) fn matches(&self, object: &Value) -> bool {
        self.0
            .iter()
            .all(|term| (field_value(object, &term.read) == term.value) == term.equal)
    }
}

/// The terms between unescaped commas, escapes kept.
fn split_terms(text: &str) -> Vec<&str> {
    if text.is_empty() {
        return Vec::new();
    }
    let mut terms = Vec::new();
    let mut start = 0;
    let mut escaped = false;
    for (at, c) in text.char_indices() {
        if escaped {
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if c == ',' {
            terms.push(&text[start..at]);
            start = at + 1;
        }
    }
    terms.push(&text[start..]);
    terms
}

/// A term's field, operator and raw value, split at the first operator.
fn split_term(term: &str) -> Option<(&str, &'static str, &str)> {
    for (at, _) in term.char_indices() {
        for operator in ["!=", "==", "="] {
            if term[at..].starts_with(operator) {
                return Some((&term[..at], operator, &term[at + operator.len()..]));
            }
        }
    }
    None
}

fn unescape(value: &str) -> Result<String, String> {
    let mut unescaped = String::with_capacity(value.len());
    let mut escaped = false;
    for c in value.chars() {
        if escaped {
            match c {
                '\\' | ',' | '=' => unescaped.push(c),
                c => {
                    return Err(format!(
                        "invalid field selector: invalid escape sequence: \\{c}"
                    ));
                }
            }
            escaped = false;
            continue;
        }
        match c {
            '\\' => escaped = true,
            // Go prints the rune as its number here.
            ',' | '=' => {
                return Err(format!(
                    "invalid field selector: unescaped character in value: {}",
                    c as u32
                ));
            }
            c => unescaped.push(c),
        }
    }
    if escaped {
        return Err("invalid field selector: invalid escape sequence: \\".to_string());
    }
    Ok(unescaped)
}

/// Whether the API server lets a field select a kind, and how it reads:
/// its field label conversions (`pkg/apis/*/*/conversion.go`) and their
/// messages. A custom resource's selectable fields are its
/// CustomResourceDefinition's, which may not be given: any field of one is
/// taken, read at its path.
fn selectable(group: &str, version: &str, kind: &str, field: &str) -> Result<Read, String> {
    let text = |path: &str| Ok(Read::Text(path.to_string()));
    let unsupported = || Err(format!("field label not supported: {field}"));
    match (group, kind) {
        ("", "Pod") => match field {
            "metadata.name"
            | "metadata.namespace"
            | "spec.nodeName"
            | "spec.restartPolicy"
            | "spec.schedulerName"
            | "spec.serviceAccountName"
            | "status.phase"
            | "status.nominatedNodeName" => text(field),
            "spec.hostNetwork" => Ok(Read::Flag("spec.hostNetwork")),
            "status.podIP" => Ok(Read::PodIp),
            "status.podIPs" => Ok(Read::Empty),
            "spec.host" => text("spec.nodeName"),
            _ => unsupported(),
        },
        ("", "Node") => match field {
            "metadata.name" => text(field),
            "spec.unschedulable" => Ok(Read::Flag("spec.unschedulable")),
            _ => unsupported(),
        },
        ("", "ReplicationController") => match field {
            "metadata.name" | "metadata.namespace" => text(field),
            "status.replicas" => Ok(Read::Count("status.replicas")),
            _ => unsupported(),
        },
        ("", "Event") => match field {
            "involvedObject.kind"
            | "involvedObject.namespace"
            | "involvedObject.name"
            | "involvedObject.uid"
            | "involvedObject.apiVersion"
            | "involvedObject.resourceVersion"
            | "involvedObject.fieldPath"
            | "reason"
            | "reportingComponent"
            | "type"
            | "metadata.namespace"
            | "metadata.name" => text(field),
            "source" => Ok(Read::EventSource),
            _ => unsupported(),
        },
        ("", "Namespace") => match field {
            "status.phase" | "metadata.name" => text(field),
            _ => unsupported(),
        },
        ("", "Secret") => match field {
            "type" | "metadata.namespace" | "metadata.name" => text(field),
            _ => unsupported(),
        },
        ("", "Service") => match field {
            "metadata.namespace" | "metadata.name" | "spec.clusterIP" | "spec.type" => text(field),
            _ => unsupported(),
        },
        ("batch", "Job") => match field {
            "metadata.name" | "metadata.namespace" => text(field),
            "status.successful" => Ok(Read::Count("status.succeeded")),
            _ => Err(format!(
                "field label {} not supported for Job",
                quote(field)
            )),
        },
        ("certificates.k8s.io", "CertificateSigningRequest" | "ClusterTrustBundle") => {
            match field {
                "metadata.name" | "spec.signerName" => text(field),
                _ => unsupported(),
            }
        }
        ("certificates.k8s.io", "PodCertificateRequest") => match field {
            "metadata.name" | "spec.signerName" | "spec.podName" | "spec.nodeName" => text(field),
            _ => unsupported(),
        },
        ("events.k8s.io", "Event") => match field {
            "regarding.kind"
            | "regarding.namespace"
            | "regarding.name"
            | "regarding.uid"
            | "regarding.apiVersion"
            | "regarding.resourceVersion"
            | "regarding.fieldPath"
            | "reportingController"
            | "reason"
            | "type"
            | "metadata.namespace"
            | "metadata.name" => text(field),
            _ => unsupported(),
        },
        ("resource.k8s.io", "ResourceSlice") => match field {
            "metadata.name" | "spec.nodeName" | "spec.driver" => text(field),
            _ => Err(format!(
                "field label not supported for {group}/{version}, Kind={kind}: {field}"
            )),
        },
        _ if kinds::kubernetes_group(group) => match field {
            "metadata.name" | "metadata.namespace" => text(field),
            _ => Err(format!(
                "{} is not a known field selector: only \"metadata.name\", \"metadata.namespace\"",
                quote(field)
            )),
        },
        _ => text(field),
    }
}

/// The value at a dot path, without recursion.
fn at_path<'o>(object: &'o Value, path: &str) -> Option<&'o Value> {
    path.split('.')
        .try_fold(object, |value, part| value.get(part))
}

/// A scalar as the API server's field sets write it.
fn scalar(value: Option<&Value>) -> Option<String> {
    match value? {
        Value::String(text) => Some(text.clone()),
        Value::Bool(flag) => Some(flag.to_string()),
        Value::Number(number) => Some(number.to_string()),
        _ => None,
    }
}

fn field_value(object: &Value, read: &Read) -> String {
    match read {
        Read::Text(path) => scalar(at_path(object, path)).unwrap_or_default(),
        Read::Flag(path) => scalar(at_path(object, path)).unwrap_or_else(|| "false".into()),
        Read::Count(path) => scalar(at_path(object, path)).unwrap_or_else(|| "0".into()),
        Read::PodIp => at_path(object, "status.podIPs")
            .and_then(|ips| ips.get(0))
            .and_then(|ip| scalar(ip.get("ip")))
            .or_else(|| scalar(at_path(object, "status.podIP")))
            .unwrap_or_default(),
        Read::EventSource => scalar(at_path(object, "source.component"))
            .filter(|source| !source.is_empty())
            .or_else(|| scalar(object.get("reportingComponent")))
            .unwrap_or_default(),
        Read::Empty => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::capabilities::cluster::Cluster;
    use crate::capabilities::cluster::quote;
    use crate::capabilities::cluster::tests::{list_all, pod};

    #[test]
    fn field_selectors_read_the_kinds_selectable_fields() {
        let mut running = pod("a", "running", json!({}));
        running["status"] = json!({"phase": "Running", "podIPs": [{"ip": "10.0.0.1"}]});
        running["spec"]["hostNetwork"] = json!(true);
        let mut pending = pod("b", "pending", json!({}));
        pending["spec"]["nodeName"] = json!("node-2");
        pending["status"] = json!({"phase": "Pending", "podIP": "10.0.0.2"});
        let cluster = Cluster::new([
            running,
            pending,
            json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "a"}, "type": "Opaque"}),
            json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}, "spec": {"unschedulable": true}}),
            json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n2"}}),
            json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j", "namespace": "a"}, "status": {"succeeded": 1}}),
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": "a"}}),
            json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w", "namespace": "a"}, "spec": {"color": "red"}}),
            json!({"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e", "namespace": "a"}, "reportingComponent": "kubelet"}),
        ]);
        let select = |kind: &str, selector: &str| list_all(&cluster, kind, None, Some(selector));
        let ok = |names: &[&str]| Ok(names.iter().map(|n| n.to_string()).collect::<Vec<_>>());
        assert_eq!(select("Pod", "metadata.name=running"), ok(&["a/running"]));
        assert_eq!(select("Pod", "metadata.namespace!=a"), ok(&["b/pending"]));
        assert_eq!(
            select("Pod", "status.phase==Running,spec.nodeName=node-1"),
            ok(&["a/running"])
        );
        assert_eq!(select("Pod", "spec.host=node-2"), ok(&["b/pending"]));
        assert_eq!(
            select("Pod", "spec.hostNetwork=false"),
            ok(&["b/pending"]),
            "absent is false"
        );
        assert_eq!(select("Pod", "status.podIP=10.0.0.1"), ok(&["a/running"]));
        assert_eq!(select("Pod", "status.podIP=10.0.0.2"), ok(&["b/pending"]));
        assert_eq!(
            select("Pod", "status.podIPs="),
            ok(&["a/running", "b/pending"])
        );
        assert_eq!(select("Pod", ""), ok(&["a/running", "b/pending"]));
        assert_eq!(select("Pod", "metadata.name=running,"), ok(&["a/running"]));
        assert_eq!(select("Secret", "type=Opaque"), ok(&["a/s"]));
        assert_eq!(select("Node", "spec.unschedulable=false"), ok(&["n2"]));
        assert_eq!(select("batch/v1/Job", "status.successful=1"), ok(&["a/j"]));
        assert_eq!(
            select("apps/v1/Deployment", "metadata.name=d"),
            ok(&["a/d"])
        );
        assert_eq!(
            select("example.com/v1/Widget", "spec.color=red"),
            ok(&["a/w"])
        );
        assert_eq!(select("Event", "source=kubelet"), ok(&["a/e"]));

        let error = |kind: &str, selector: &str| {
            let message = select(kind, selector).unwrap_err();
            let prefix = format!("field selector {}: ", quote(selector));
            message
                .strip_prefix(&prefix)
                .map(str::to_string)
                .unwrap_or(message)
        };
        assert_eq!(
            error("Pod", "spec.containers=x"),
            "field label not supported: spec.containers"
        );
        assert_eq!(
            error("Node", "metadata.namespace=x"),
            "field label not supported: metadata.namespace"
        );
        assert_eq!(
            error("apps/v1/Deployment", "spec.replicas=1"),
            "\"spec.replicas\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\""
        );
        assert_eq!(
            error("batch/v1/Job", "status.failed=1"),
            "field label \"status.failed\" not supported for Job"
        );
        assert_eq!(
            error("Pod", "metadata.name"),
            "invalid selector: 'metadata.name'; can't understand 'metadata.name'"
        );
        assert_eq!(
            error("Pod", "metadata.name=a=b"),
            "invalid field selector: unescaped character in value: 61"
        );
        assert_eq!(
            error("Pod", "metadata.name=a\\x"),
            "invalid field selector: invalid escape sequence: \\x"
        );
        assert_eq!(
            error("Pod", "metadata.name=a\\"),
            "invalid field selector: invalid escape sequence: \\"
        );
        assert_eq!(
            error("resource.k8s.io/v1/ResourceSlice", "spec.pool=x"),
            "field label not supported for resource.k8s.io/v1, Kind=ResourceSlice: spec.pool"
        );
    }

    #[test]
    fn field_values_unescape() {
        let cluster = Cluster::new([
            json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "a,b=c\\d", "namespace": "n"}}),
        ]);
        assert_eq!(
            list_all(
                &cluster,
                "Secret",
                None,
                Some("metadata.name=a\\,b\\=c\\\\d")
            ),
            Ok(vec!["n/a,b=c\\d".to_string()])
        );
    }
}
