//! What names an object's kind in a request; the facts it is made of are
//! `policy_core::kinds`.

use policy_core::kinds::{group_version, resource};

/// What names an object's kind in a request: its group, version, kind and
/// resource.
pub struct Addressed<'o> {
    pub group: &'o str,
    pub version: &'o str,
    pub kind: &'o str,
    pub resource: String,
}

impl<'o> Addressed<'o> {
    pub fn of(object: &'o serde_json::Value) -> Addressed<'o> {
        let (group, version) = group_version(object["apiVersion"].as_str().unwrap_or_default());
        let kind = object["kind"].as_str().unwrap_or_default();
        Addressed {
            group,
            version,
            kind,
            resource: resource(kind),
        }
    }
}
