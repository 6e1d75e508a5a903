//! What the first pass of `check` learns of each object of the input, for
//! the second to judge by: read by the worker that parsed the object, so
//! that the object waits for its judging as JSON alone, with no tree of
//! values held or dropped by the thread that reads the input.

use policy_manifests::ApiVersion;
use serde_json::Value;

use super::owners::Owner;

/// An object's facts.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Facts {
    /// The controller it names as its owner.
    pub owner: Option<Owner>,
    /// A Namespace's name and labels (with `kubernetes.io/metadata.name`).
    pub namespace: Option<(String, serde_json::Map<String, Value>)>,
    /// The kind a CustomResourceDefinition makes cluster-wide.
    pub cluster_kind: Option<String>,
    /// What names it in a cluster, but for a namespace it leaves out: its
    /// group, kind, namespace (if it names one) and name (`None` for a
    /// `generateName`, a new object each time).
    pub identity: Option<Identity>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    pub group: String,
    pub kind: String,
    pub namespace: Option<String>,
    pub name: String,
}

/// The reader learns an object's facts on the worker that parsed it, and
/// refuses there a workload its controller could make nothing real from.
impl policy_manifests::Learn for Facts {
    fn learn(object: &Value, api: &ApiVersion<'_>) -> Result<Facts, String> {
        match super::incomplete(object) {
            Some(reason) => Err(reason),
            None => Ok(Facts::of(object, api)),
        }
    }
}

impl Facts {
    /// `api` is what the object's `apiVersion` names.
    pub fn of(object: &Value, api: &ApiVersion<'_>) -> Facts {
        let text = |value: &Value| value.as_str().unwrap_or_default().to_string();
        let metadata = &object["metadata"];
        let group = api.group;
        let name = text(&metadata["name"]);
        Facts {
            owner: Owner::of(object),
            namespace: crate::admission::namespace(object),
            cluster_kind: super::Admission::cluster_kind(object),
            identity: (!name.is_empty()).then(|| Identity {
                group: group.to_string(),
                kind: text(&object["kind"]),
                namespace: metadata["namespace"].as_str().map(str::to_string),
                name,
            }),
        }
    }
}
