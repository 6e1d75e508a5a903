//! What the input says of who owns what: a cluster dump holds the objects
//! the controllers made, which `check` must not make again.

use std::collections::HashSet;

use serde_json::Value;

use super::controller_of_object;

/// The owners that objects of the input name as their controller: a
/// cluster dump holds a Deployment's ReplicaSets and their Pods, which the
/// check must not make again. Fingerprints, not uids and names: eight
/// bytes an owned object of a dump of a million, where the strings took
/// seventy.
#[derive(Debug, Default)]
pub struct Owners {
    uids: HashSet<u64>,
    /// Of (kind, namespace, name), for owners named without a uid.
    names: HashSet<u64>,
}

impl Owners {
    pub fn of<'v>(objects: impl IntoIterator<Item = &'v Value>) -> Owners {
        let mut owners = Owners::default();
        for object in objects {
            owners.learn(object);
        }
        owners
    }

    /// Learns the controller `object` names, if it names one.
    pub fn learn(&mut self, object: &Value) {
        if let Some(owner) = controller_of_object(object) {
            match owner["uid"].as_str().filter(|uid| !uid.is_empty()) {
                Some(uid) => self.uids.insert(fingerprint(uid)),
                // An owner shares its object's namespace.
                None => self.names.insert(named(
                    &owner["kind"],
                    &object["metadata"]["namespace"],
                    &owner["name"],
                )),
            };
        }
    }

    /// Whether the input holds objects that `object` controls.
    pub(super) fn own_children_in_input(&self, object: &Value) -> bool {
        let metadata = &object["metadata"];
        metadata["uid"]
            .as_str()
            .is_some_and(|uid| self.uids.contains(&fingerprint(uid)))
            || self.names.contains(&named(
                &object["kind"],
                &metadata["namespace"],
                &metadata["name"],
            ))
    }
}

/// What stands for a name where the input's names by the million are
/// only ever compared: the same for the same name on every run; among a
/// million different names, two share one once in about 37 million runs
/// (n²/2⁶⁵).
pub fn fingerprint(name: impl std::hash::Hash) -> u64 {
    use std::hash::BuildHasher;
    std::hash::BuildHasherDefault::<std::collections::hash_map::DefaultHasher>::default()
        .hash_one(name)
}

/// An object by its kind, namespace and name, as `Owners` holds it.
fn named(kind: &Value, namespace: &Value, name: &Value) -> u64 {
    fn text(value: &Value) -> &str {
        value.as_str().unwrap_or_default()
    }
    fingerprint((text(kind), text(namespace), text(name)))
}
