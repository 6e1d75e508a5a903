//! What a context-aware Rego policy reads as `data`: every object of each
//! kind it may read, listed through the run's host once a settings (the
//! run's objects do not change while it runs), laid out as each mode
//! expects (policy-evaluator's `opa_inventory.rs` and
//! `gatekeeper_inventory.rs`):
//! - `opa`: `data.kubernetes.<plural>.<namespace>.<name>`, or
//!   `.<plural>.<name>` for a cluster-wide kind;
//! - `gatekeeper`: `data.inventory.namespace.<namespace>.<apiVersion>.<Kind>.<name>`
//!   and `data.inventory.cluster.<apiVersion>.<Kind>.<name>`.

use serde_json::{Map, Value};

use crate::capabilities::{Context, Request};

/// The inventory, or `None` for a policy that reads no kind; `Err` with
/// policy-evaluator's words, which become a rejection (code 500).
pub(crate) fn build(context: &Context, gatekeeper: bool) -> Result<Option<Value>, String> {
    if context.resources.is_empty() {
        return Ok(None);
    }
    let ask = |request: Request| {
        context
            .host
            .answer(&request)
            .map_err(|e| format!("cannot perform a request via callback channel: {e}"))
    };
    let mut lists = Vec::with_capacity(context.resources.len());
    for resource in &context.resources {
        let answer = ask(Request::KubernetesListResourceAll {
            api_version: resource.api_version.clone(),
            kind: resource.kind.clone(),
            label_selector: None,
            field_selector: None,
            field_masks: None,
        })?;
        let list: Value = serde_json::from_slice(&answer).map_err(|e| {
            format!("cannot convert callback response into a list of kubernetes objects: {e}")
        })?;
        let items = match list.get("items") {
            Some(Value::Array(items)) => items.clone(),
            Some(Value::Null) | None => Vec::new(),
            Some(_) => {
                return Err("cannot convert callback response into a list of kubernetes objects: `items` is no list".to_string());
            }
        };
        lists.push((resource, items));
    }
    let mut inventory = Map::new();
    if gatekeeper {
        for (resource, items) in lists {
            for object in items {
                let name = name(&object)?;
                let place = match namespace(&object) {
                    Some(namespace) => slot(&mut inventory, &["namespace", &namespace]),
                    None => slot(&mut inventory, &["cluster"]),
                };
                slot(place, &[&resource.api_version, &resource.kind]).insert(name, object);
            }
        }
        return Ok(Some(Value::Object(inventory)));
    }
    let mut plurals = Vec::with_capacity(lists.len());
    for (resource, _) in &lists {
        let answer = ask(Request::KubernetesGetResourcePluralName {
            api_version: resource.api_version.clone(),
            kind: resource.kind.clone(),
        })?;
        let plural: String = serde_json::from_slice(&answer).map_err(|e| {
            format!("get plural name failure, cannot convert callback response: {e}")
        })?;
        plurals.push(plural);
    }
    // Each plural holds one scope: a cluster-wide kind by name, a
    // namespaced one by namespace, then name.
    let mut scopes: Map<String, Value> = Map::new();
    for ((_, items), plural) in lists.into_iter().zip(plurals) {
        for object in items {
            let name = name(&object)?;
            let namespaced = namespace(&object);
            match (scopes.get(&plural), &namespaced) {
                (Some(Value::Bool(true)), None) => {
                    return Err(
                        "trying to add a clusterwide resource to a list of namespaced resources"
                            .to_string(),
                    );
                }
                (Some(Value::Bool(false)), Some(_)) => {
                    return Err(
                        "trying to add a namespaced resource to a list of clusterwide resources"
                            .to_string(),
                    );
                }
                _ => {}
            }
            scopes.insert(plural.clone(), Value::Bool(namespaced.is_some()));
            let place = match namespaced {
                Some(namespace) => slot(&mut inventory, &[&plural, &namespace]),
                None => slot(&mut inventory, &[&plural]),
            };
            place.insert(name, object);
        }
    }
    Ok(Some(Value::Object(inventory)))
}

fn name(object: &Value) -> Result<String, String> {
    object["metadata"]["name"]
        .as_str()
        .map(str::to_string)
        .ok_or_else(|| "DynamicObject does not have a name".to_string())
}

fn namespace(object: &Value) -> Option<String> {
    object["metadata"]["namespace"].as_str().map(str::to_string)
}

/// The object at `path` under `map`, made where missing.
fn slot<'m>(map: &'m mut Map<String, Value>, path: &[&str]) -> &'m mut Map<String, Value> {
    let mut at = map;
    for key in path {
        let entry = at
            .entry(key.to_string())
            .or_insert_with(|| Value::Object(Map::new()));
        if !entry.is_object() {
            *entry = Value::Object(Map::new());
        }
        at = entry.as_object_mut().expect("made an object above");
    }
    at
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capabilities::Host;
    use crate::metadata::Resource;
    use serde_json::json;
    use std::sync::Arc;

    /// Lists a Namespace and two ConfigMaps; Namespaces are `namespaces`.
    struct Listing;

    impl Host for Listing {
        fn answer(&self, request: &Request) -> Result<Vec<u8>, String> {
            let answer = match request {
                Request::KubernetesListResourceAll { kind, .. } if kind == "Namespace" => {
                    json!({"items": [{"metadata": {"name": "a"}}]})
                }
                Request::KubernetesListResourceAll { .. } => json!({"items": [
                    {"metadata": {"name": "x", "namespace": "a"}},
                    {"metadata": {"name": "y", "namespace": "b"}}
                ]}),
                Request::KubernetesGetResourcePluralName { kind, .. } => {
                    json!(format!("{}s", kind.to_lowercase()))
                }
                _ => return Err("no".to_string()),
            };
            Ok(serde_json::to_vec(&answer).unwrap())
        }
    }

    fn context(host: Arc<dyn Host>) -> Context {
        let resource = |kind: &str| Resource {
            api_version: "v1".into(),
            kind: kind.into(),
        };
        Context {
            host,
            resources: [resource("Namespace"), resource("ConfigMap")].into(),
            ..Context::default()
        }
    }

    #[test]
    fn each_mode_gets_its_layout() {
        let listed = context(Arc::new(Listing));
        assert_eq!(
            build(&listed, false).unwrap().unwrap(),
            json!({
                "namespaces": {"a": {"metadata": {"name": "a"}}},
                "configmaps": {
                    "a": {"x": {"metadata": {"name": "x", "namespace": "a"}}},
                    "b": {"y": {"metadata": {"name": "y", "namespace": "b"}}}
                }
            })
        );
        assert_eq!(
            build(&listed, true).unwrap().unwrap(),
            json!({
                "cluster": {"v1": {"Namespace": {"a": {"metadata": {"name": "a"}}}}},
                "namespace": {
                    "a": {"v1": {"ConfigMap": {"x": {"metadata": {"name": "x", "namespace": "a"}}}}},
                    "b": {"v1": {"ConfigMap": {"y": {"metadata": {"name": "y", "namespace": "b"}}}}}
                }
            })
        );
        assert_eq!(build(&Context::default(), false), Ok(None));
    }

    #[test]
    fn a_failed_listing_is_said_as_policy_server_says_it() {
        let unanswered = context(Arc::new(crate::capabilities::Unanswered));
        let error = build(&unanswered, true).unwrap_err();
        assert!(
            error.starts_with(
                "cannot perform a request via callback channel: policy-runner does not answer"
            ),
            "{error}"
        );
    }
}
