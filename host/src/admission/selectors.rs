//! Label selectors (a policy's `namespaceSelector` and `objectSelector`)
//! and the namespaces' labels they are matched against.

use serde_json::Value;

/// The label the API server gives every namespace: its name.
pub(super) const NAME_LABEL: &str = "kubernetes.io/metadata.name";

/// The labels of each Namespace of the input, by name, with the name label
/// the API server gives every namespace.
pub type Namespaces = std::collections::HashMap<String, serde_json::Map<String, Value>>;

pub fn namespaces_of<'v>(objects: impl IntoIterator<Item = &'v Value>) -> Namespaces {
    objects.into_iter().filter_map(namespace).collect()
}

/// The name and labels of `object` if it is a Namespace.
pub fn namespace(object: &Value) -> Option<(String, serde_json::Map<String, Value>)> {
    if object["kind"] != "Namespace" || object["apiVersion"] != "v1" {
        return None;
    }
    let name = object["metadata"]["name"].as_str()?;
    let mut labels = object["metadata"]["labels"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    labels.insert(NAME_LABEL.to_string(), name.into());
    Some((name.to_string(), labels))
}

/// A label selector (`matchLabels`, `matchExpressions`).
#[derive(Debug, Clone, PartialEq)]
pub struct Selector(pub(super) Value);

impl Selector {
    /// Whether `labels` match; `None` when the selector names a label the
    /// check cannot know (only `known` keys are known).
    pub(super) fn matches(
        &self,
        labels: &serde_json::Map<String, Value>,
        known: &[&str],
    ) -> Option<bool> {
        let knows = |key: &str| known.contains(&key) || known.is_empty();
        let mut matched = true;
        if let Some(wanted) = self.0["matchLabels"].as_object() {
            for (key, value) in wanted {
                if !knows(key) {
                    return None;
                }
                matched &= labels.get(key) == Some(value);
            }
        }
        for expression in self.0["matchExpressions"].as_array().into_iter().flatten() {
            let key = expression["key"].as_str().unwrap_or_default();
            if !knows(key) {
                return None;
            }
            let values: Vec<&str> = expression["values"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            let value = labels.get(key).and_then(Value::as_str);
            matched &= match expression["operator"].as_str() {
                Some("In") => value.is_some_and(|v| values.contains(&v)),
                Some("NotIn") => !value.is_some_and(|v| values.contains(&v)),
                Some("Exists") => value.is_some(),
                Some("DoesNotExist") => value.is_none(),
                _ => return None,
            };
        }
        Some(matched)
    }
}
