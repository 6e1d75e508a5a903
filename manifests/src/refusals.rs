//! Why the API server would refuse an object the input holds, before any
//! policy sees it: a kind or version it does not serve, metadata it cannot
//! decode (a name missing, an annotation that is no string, in the object
//! or in a template nested in it), a field its kind does not have or a
//! value of another type (bytes that are not base64), a name its kind's
//! validation refuses (a workload without what its controller requires
//! is refused by `check`'s `Learn`). Such
//! an object is unusable, with the reason, and nothing is derived from it.

use policy_core::kinds::ApiVersion;
use serde_json::Value;

mod fields;
mod names;
mod served;

pub(crate) use fields::{base64, what};

/// Whether the API server takes objects of `kind` at `api_version`: a kind
/// of Kubernetes' own groups it serves, or a kind of another group, which
/// is its CRD's business.
pub(crate) fn served(api_version: &str, kind: &str) -> bool {
    let group_version = policy_core::kinds::group_version(api_version);
    served::refusal(api_version, group_version, kind).is_none()
}

/// Why `value` is not a Kubernetes object, if it is not; `api` is what its
/// `apiVersion` names.
pub(super) fn object_problem(value: &Value, api: &ApiVersion<'_>) -> Option<String> {
    let Some(object) = value.as_object() else {
        return Some(format!("not a Kubernetes object: {}", what(value)));
    };
    let text = |field: &str| object.get(field).and_then(Value::as_str);
    match (text("apiVersion"), text("kind")) {
        (_, None) => Some("not a Kubernetes object: no `kind`".to_string()),
        (None, _) => Some("not a Kubernetes object: no `apiVersion`".to_string()),
        (Some(api_version), Some(kind)) => {
            served::refusal(api_version, (api.group, api.version), kind)
                .or_else(|| metadata_problem(value, object, api, kind))
        }
    }
}

/// Why the API server refuses `value`'s metadata, or the object for it.
fn metadata_problem(
    value: &Value,
    object: &serde_json::Map<String, Value>,
    api: &ApiVersion<'_>,
    kind: &str,
) -> Option<String> {
    let Some(Value::Object(metadata)) = object.get("metadata") else {
        return Some("no `metadata`: an object needs one, with its `metadata.name`".to_string());
    };
    let named = metadata
        .get("name")
        .and_then(Value::as_str)
        .is_some_and(|name| !name.is_empty())
        || metadata.get("generateName").is_some_and(Value::is_string);
    if !named {
        return Some(match metadata.get("name") {
            Some(name) if !name.is_string() && !name.is_null() => {
                format!(
                    "`metadata.name` is {}, and a name is a string: quote it",
                    what(name)
                )
            }
            _ => "no `metadata.name`".to_string(),
        });
    }
    strings_only("", metadata)
        .or_else(|| nested_strings_only(value, api))
        .or_else(|| fields::refusal(value))
        .or_else(|| names::refusal(api.group, kind, value))
}

/// The API server takes only strings as annotation and label values
/// (`map[string]string`): it refuses an object with `owner: 1` before any
/// policy sees it, so the check does not judge one. Nor one whose keys or
/// label values its validation refuses (`names::key_refusal`). (`null` it takes, as
/// an empty string: `objects::admission`.)
/// `at` is where the metadata is (`spec.template.`), `""` at the top.
fn strings_only(at: &str, metadata: &serde_json::Map<String, Value>) -> Option<String> {
    for field in ["annotations", "labels"] {
        match metadata.get(field) {
            None | Some(Value::Null) => {}
            Some(Value::Object(map)) => {
                if let Some((key, value)) = map.iter().find(|(_, v)| !v.is_string() && !v.is_null())
                {
                    // A scalar is quoted; a mapping or a list is no value
                    // of its own.
                    let what_to_do = match value {
                        Value::Object(_) | Value::Array(_) => "give it as one string",
                        _ => "quote it",
                    };
                    return Some(format!(
                        "`{at}metadata.{field}` \"{key}\" is {}, and the API server takes only strings: {what_to_do}",
                        what(value)
                    ));
                }
                if let Some(problem) = map.iter().find_map(|(key, value)| {
                    names::key_refusal(field, key, value.as_str().unwrap_or(""))
                }) {
                    return Some(format!("`{at}metadata.{field}` {problem}"));
                }
            }
            Some(other) => {
                return Some(format!(
                    "`{at}metadata.{field}` is {}, not a mapping",
                    what(other)
                ));
            }
        }
    }
    None
}

/// The same of the metadata nested in a Kubernetes object's `spec` (a pod
/// template's, a job template's, a claim template's): every `metadata` of
/// Kubernetes' own types is an ObjectMeta, decoded as strictly as the
/// object's own (`sidecar.istio.io/inject: false` in a pod template is
/// refused as it is at the top). A custom resource's schema is its CRD's,
/// which the check does not know.
fn nested_strings_only(object: &Value, api: &ApiVersion<'_>) -> Option<String> {
    if !api.kubernetes {
        return None;
    }
    fn walk(value: &Value, at: &mut String) -> Option<String> {
        let len = at.len();
        let found = match value {
            Value::Object(map) => map.iter().find_map(|(key, value)| {
                at.push_str(key);
                let found = match (key.as_str(), value) {
                    ("metadata", Value::Object(metadata)) => {
                        at.truncate(len);
                        strings_only(at, metadata)
                    }
                    _ => {
                        at.push('.');
                        walk(value, at)
                    }
                };
                at.truncate(len);
                found
            }),
            Value::Array(items) => items.iter().enumerate().find_map(|(i, item)| {
                at.truncate(len.saturating_sub(1));
                at.push_str(&format!("[{i}]."));
                let found = walk(item, at);
                at.truncate(len);
                found
            }),
            _ => None,
        };
        at.truncate(len);
        found
    }
    walk(object.get("spec")?, &mut "spec.".to_string())
}
