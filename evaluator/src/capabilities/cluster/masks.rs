//! Field masks: the dot paths a policy asks of an object it gets or
//! lists, pruning the rest as policy-evaluator does.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

/// Field masks as policy-evaluator applies them (`field_mask.rs`): a tree
/// of the dot paths; a path's last field is kept whole; arrays are passed
/// through to their items; no paths at all keeps everything. They prune
/// what kube-rs calls an object's data: `apiVersion`, `kind` and
/// `metadata` are always kept.
pub(super) struct Mask {
    /// An arena, so that neither building nor dropping a deep mask recurses.
    nodes: Vec<BTreeMap<String, usize>>,
}

impl Mask {
    pub(super) fn new(paths: &BTreeSet<String>) -> Mask {
        let mut nodes = vec![BTreeMap::new()];
        for path in paths {
            let mut at = 0;
            for part in path.split('.') {
                at = match nodes[at].get(part) {
                    Some(&child) => child,
                    None => {
                        let child = nodes.len();
                        nodes.push(BTreeMap::new());
                        nodes[at].insert(part.to_string(), child);
                        child
                    }
                };
            }
        }
        Mask { nodes }
    }

    pub(super) fn prune_object(&self, object: &mut Value) {
        let Some(map) = object.as_object_mut() else {
            return;
        };
        let root = &self.nodes[0];
        if root.is_empty() {
            return;
        }
        let mut pending = Vec::new();
        map.retain(|key, _| {
            matches!(key.as_str(), "apiVersion" | "kind" | "metadata") || root.contains_key(key)
        });
        for (key, value) in map.iter_mut() {
            if let Some(&child) = root.get(key)
                && !matches!(key.as_str(), "apiVersion" | "kind" | "metadata")
            {
                pending.push((value, child));
            }
        }
        self.prune(pending);
    }

    fn prune(&self, mut pending: Vec<(&mut Value, usize)>) {
        while let Some((value, node)) = pending.pop() {
            let children = &self.nodes[node];
            if children.is_empty() {
                continue;
            }
            match value {
                Value::Object(map) => {
                    map.retain(|key, _| children.contains_key(key));
                    for (key, value) in map.iter_mut() {
                        if let Some(&child) = children.get(key) {
                            pending.push((value, child));
                        }
                    }
                }
                Value::Array(items) => pending.extend(items.iter_mut().map(|item| (item, node))),
                _ => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    use crate::capabilities::Request;
    use crate::capabilities::cluster::Cluster;
    use crate::capabilities::cluster::tests::{answer, map};

    /// Drops a deep value without recursion.
    fn drop_deep(value: Value) {
        let mut pending = vec![value];
        while let Some(value) = pending.pop() {
            match value {
                Value::Array(items) => pending.extend(items),
                Value::Object(map) => pending.extend(map.into_iter().map(|(_, v)| v)),
                _ => {}
            }
        }
    }

    #[test]
    fn field_masks_prune_as_policy_evaluator_does() {
        let object = json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "namespace": "a", "labels": {"x": "y"}},
            "spec": {
                "containers": [
                    {"name": "a", "image": "i", "ports": [[{"containerPort": 80, "name": "http"}]]},
                    {"name": "b", "image": "j"},
                    "scalar",
                ],
                "nodeName": "n",
            },
            "status": {"phase": "Running", "podIP": "10.0.0.1"},
        });
        let pruned = |masks: &[&str]| {
            let mut object = object.clone();
            Mask::new(&masks.iter().map(|s| s.to_string()).collect()).prune_object(&mut object);
            object
        };
        assert_eq!(pruned(&[]), object, "no paths keeps everything");
        assert_eq!(
            pruned(&["spec.containers.image", "status"]),
            json!({
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": "p", "namespace": "a", "labels": {"x": "y"}},
                "spec": {"containers": [{"image": "i"}, {"image": "j"}, "scalar"]},
                "status": {"phase": "Running", "podIP": "10.0.0.1"},
            })
        );
        assert_eq!(
            pruned(&["spec.containers.ports.name"])["spec"],
            json!({"containers": [{"ports": [[{"name": "http"}]]}, {}, "scalar"]}),
            "arrays in arrays are passed through"
        );
        // A longer path narrows a shorter one, as in the tree it builds.
        assert_eq!(
            pruned(&["status", "status.phase"])["status"],
            json!({"phase": "Running"})
        );
        // metadata is no part of the data a mask prunes.
        assert_eq!(
            pruned(&["metadata.name"]),
            json!({
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": "p", "namespace": "a", "labels": {"x": "y"}},
            })
        );
        assert_eq!(
            pruned(&[""])["spec"],
            Value::Null,
            "an empty path keeps a field named \"\""
        );

        let cluster = Cluster::new([object.clone()]);
        let list = answer(
            &cluster,
            Request::KubernetesListResourceAll {
                api_version: "v1".into(),
                kind: "Pod".into(),
                label_selector: None,
                field_selector: None,
                field_masks: Some(["spec.nodeName".to_string()].into()),
            },
        )
        .unwrap();
        assert_eq!(list["items"][0]["spec"], json!({"nodeName": "n"}));
        assert!(list["items"][0].get("status").is_none());
    }

    #[test]
    fn a_deep_array_is_pruned_without_recursion() {
        let mut deep = json!({"keep": 1, "drop": 2});
        for _ in 0..100_000 {
            deep = Value::Array(vec![deep]);
        }
        let mut object = map([("kind", json!("X")), ("spec", deep)]);
        Mask::new(&["spec.keep".to_string()].into()).prune_object(&mut object);
        let mut at = &object["spec"];
        while let Value::Array(items) = at {
            at = &items[0];
        }
        assert_eq!(at, &json!({"keep": 1}));
        drop_deep(object);
    }
}
