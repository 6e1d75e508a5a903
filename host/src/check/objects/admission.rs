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
pub(super) fn admitted(manifest: &Value, admission: &Admission) -> Value {
    let mut object = manifest.clone();
    let kind = object["kind"].as_str().unwrap_or_default().to_string();
    if admission.kubectl_apply && annotation(&object, LAST_APPLIED).is_none() {
        // kubectl records the manifest as given, without this annotation.
        let text = serde_json::to_string(manifest).unwrap_or_default() + "\n";
        annotations_mut(&mut object).insert(LAST_APPLIED.into(), text.into());
    }
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
