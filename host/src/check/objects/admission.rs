//! An object of the input as the API server admits it: in its namespace,
//! named, with what kubectl and the API server add on the way.

use std::collections::HashSet;

use serde_json::Value;

use super::{
    LAST_APPLIED, TEMPLATE_GENERATION, annotation, annotations_mut, generated_name, metadata_mut,
    namespaced,
};

/// How the objects of the input reach the API server.
#[derive(Debug, Clone)]
pub struct Admission {
    /// The namespace of a namespaced object that names none (kubectl's).
    pub namespace: String,
    /// Whether `kubectl apply` sends them, which records each manifest in
    /// `kubectl.kubernetes.io/last-applied-configuration`.
    pub kubectl_apply: bool,
    /// Whether to make the objects the controllers create from them.
    pub derive: bool,
    /// The kinds of custom resource that the input's CustomResourceDefinitions
    /// declare cluster-wide (`scope: Cluster`).
    pub cluster_kinds: HashSet<String>,
}

impl Admission {
    /// Whether objects of `kind` live in a namespace: Kubernetes' own
    /// cluster-wide kinds and the input's cluster-wide custom resources do
    /// not.
    pub fn namespaced(&self, kind: &str) -> bool {
        namespaced(kind) && !self.cluster_kinds.contains(kind)
    }

    /// Learns the custom resource kind `object` declares cluster-wide, if
    /// it declares one.
    pub fn learn(&mut self, object: &Value) {
        if object["kind"] == "CustomResourceDefinition"
            && object["spec"]["scope"] == "Cluster"
            && let Some(kind) = object["spec"]["names"]["kind"].as_str()
        {
            self.cluster_kinds.insert(kind.to_string());
        }
    }
}

/// The object as a validating webhook sees it at its creation.
pub(super) fn admitted(manifest: Value, admission: &Admission) -> Value {
    let mut object = manifest;
    if admission.kubectl_apply && annotation(&object, LAST_APPLIED).is_none() {
        // kubectl records the manifest as given (before the API server
        // decodes it), without this annotation.
        let text = serde_json::to_string(&object).unwrap_or_default() + "\n";
        annotations_mut(&mut object).insert(LAST_APPLIED.into(), text.into());
    }
    as_decoded(&mut object);
    let kind = object["kind"].as_str().unwrap_or_default().to_string();
    let metadata = metadata_mut(&mut object);
    match admission.namespaced(&kind) {
        true if !metadata.contains_key("namespace") => {
            metadata.insert("namespace".into(), admission.namespace.clone().into());
        }
        true => {}
        // The API server ignores a namespace on a cluster-wide object.
        false => {
            metadata.remove("namespace");
        }
    }
    if metadata.get("name").is_none_or(|n| n.as_str() == Some("")) {
        let prefix = metadata["generateName"].as_str().unwrap_or("").to_string();
        metadata.insert("name".into(), generated_name(&prefix).into());
    }
    if kind == "DaemonSet" && annotation(&object, TEMPLATE_GENERATION).is_none() {
        annotations_mut(&mut object).insert(TEMPLATE_GENERATION.into(), "1".into());
    }
    object
}

/// The object as the API server decodes it, where that differs from its
/// JSON: an annotation or label whose value is `null` (`owner: ~`) is an
/// empty string, at the top and in the metadata nested in a Kubernetes
/// object's `spec`.
fn as_decoded(object: &mut Value) {
    fn empty_for_null(metadata: &mut Value) {
        for field in ["annotations", "labels"] {
            if let Some(Value::Object(map)) = metadata.get_mut(field) {
                for value in map.values_mut().filter(|v| v.is_null()) {
                    *value = Value::String(String::new());
                }
            }
        }
    }
    fn nested(value: &mut Value) {
        match value {
            Value::Object(map) => {
                for (key, value) in map.iter_mut() {
                    match key.as_str() {
                        "metadata" if value.is_object() => empty_for_null(value),
                        _ => nested(value),
                    }
                }
            }
            Value::Array(items) => items.iter_mut().for_each(nested),
            _ => {}
        }
    }
    if let Some(metadata) = object.get_mut("metadata") {
        empty_for_null(metadata);
    }
    let kubernetes = object["apiVersion"].as_str().is_some_and(|api_version| {
        let (group, _) = super::group_version(api_version);
        super::kubernetes_group(group)
    });
    if kubernetes && let Some(spec) = object.get_mut("spec") {
        nested(spec);
    }
}
