//! An object of the input as the API server admits it: in its namespace,
//! named, with what kubectl and the API server add on the way.

use std::collections::HashSet;

use serde_json::Value;

use super::{
    LAST_APPLIED, TEMPLATE_GENERATION, annotation, annotations_mut, generated_name, metadata_mut,
};
use policy_core::kinds::{group_version, kubernetes_group, namespaced};

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
        self.cluster_kinds.extend(Admission::cluster_kind(object));
    }

    /// The kind `object` makes cluster-wide: a CustomResourceDefinition's
    /// of scope `Cluster`.
    pub fn cluster_kind(object: &Value) -> Option<String> {
        (object["kind"] == "CustomResourceDefinition" && object["spec"]["scope"] == "Cluster")
            .then(|| object["spec"]["names"]["kind"].as_str().map(str::to_string))
            .flatten()
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
        let (group, _) = group_version(api_version);
        kubernetes_group(group)
    });
    if kubernetes && let Some(spec) = object.get_mut("spec") {
        nested(spec);
    }
}

/// The most bytes an object's annotations may hold, keys and values
/// together (`TotalAnnotationSizeLimitB`, apimachinery's
/// `ValidateAnnotations`).
const ANNOTATIONS_AT_MOST: usize = 256 * 1024;

/// Why the API server refuses `admitted` (an object as `admitted` made
/// it) for the size of its annotations, if it does; with `kubectl apply`,
/// its `last-applied-configuration` copy of the object counts too, which
/// is how a large CustomResourceDefinition reaches the limit.
pub fn annotations_too_big(admitted: &Value) -> Option<String> {
    let annotations = admitted["metadata"]["annotations"].as_object()?;
    let copy = annotations
        .get(LAST_APPLIED)
        .and_then(Value::as_str)
        .map_or(0, go_json_len);
    let size: usize = annotations
        .iter()
        .map(|(key, value)| match key.as_str() {
            LAST_APPLIED => key.len() + copy,
            _ => key.len() + value.as_str().map_or(0, str::len),
        })
        .sum();
    if size <= ANNOTATIONS_AT_MOST {
        return None;
    }
    let how = match copy {
        0 => "shorten them".to_string(),
        copy => format!(
            "{copy} of them are the copy of the object `kubectl apply` keeps in \
             `{LAST_APPLIED}`; apply it with `kubectl apply --server-side`, which keeps none"
        ),
    };
    Some(format!(
        "its annotations hold {size} bytes, keys and values, and the API server takes at most \
         {ANNOTATIONS_AT_MOST} (it refuses the object: `metadata.annotations: Too long`): {how}"
    ))
}

/// How long Go's `encoding/json` writes what serde_json wrote as `text`
/// (kubectl's copy of the object, as `admitted` writes it): Go escapes
/// `<`, `>` and `&` (six bytes each), and U+2028 and U+2029. A copy
/// kubectl wrote has no such character left.
fn go_json_len(text: &str) -> usize {
    text.len()
        + 5 * text
            .bytes()
            .filter(|b| matches!(b, b'<' | b'>' | b'&'))
            .count()
        + 3 * text.matches(['\u{2028}', '\u{2029}']).count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Keys and values count; kubectl's copy counts as Go writes it, `<`,
    /// `>` and `&` escaped in six bytes.
    #[test]
    fn annotations_as_the_api_server_counts_them() {
        let with = |annotations: Value| json!({"metadata": {"annotations": annotations}});
        let at_most = "a".repeat(ANNOTATIONS_AT_MOST - 1);
        assert_eq!(annotations_too_big(&with(json!({ "k": at_most }))), None);
        let over = annotations_too_big(&with(json!({"k": at_most, "x": ""}))).unwrap();
        assert!(
            over.starts_with("its annotations hold 262145 bytes"),
            "{over}"
        );
        assert!(over.ends_with(": shorten them"), "{over}");
        // A copy of 43,700 `<`: 262,200 bytes as Go writes it.
        let copy = "<".repeat(43_700);
        let applied = annotations_too_big(&with(json!({ LAST_APPLIED: copy }))).unwrap();
        assert!(applied.contains("262200 of them are the copy"), "{applied}");
        assert_eq!(
            annotations_too_big(&with(json!({ LAST_APPLIED: "a".repeat(43_700) }))),
            None
        );
    }
}
