//! What the input says of who owns what: a cluster dump holds the objects
//! the controllers made, which `check` must not make again.

use std::collections::HashSet;

use serde_json::Value;

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
        if let Some(owner) = Owner::of(object) {
            self.insert(owner);
        }
    }

    /// Learns the owner the first pass found of an object, if any.
    pub fn insert_all(&mut self, owner: impl IntoIterator<Item = Owner>) {
        for owner in owner {
            self.insert(owner);
        }
    }

    /// Learns an owner the first pass found.
    pub fn insert(&mut self, owner: Owner) {
        match owner {
            Owner::Uid(uid) => self.uids.insert(uid),
            Owner::Named(name) => self.names.insert(name),
        };
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

/// The controller an object names as its owner, as a fingerprint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Owner {
    /// By its uid.
    Uid(u64),
    /// By its kind, namespace and name, where it has no uid.
    Named(u64),
}

impl Owner {
    pub fn of(object: &Value) -> Option<Owner> {
        let owner = controller_of_object(object)?;
        Some(match owner["uid"].as_str().filter(|uid| !uid.is_empty()) {
            Some(uid) => Owner::Uid(fingerprint(uid)),
            // An owner shares its object's namespace.
            None => Owner::Named(named(
                &owner["kind"],
                &object["metadata"]["namespace"],
                &owner["name"],
            )),
        })
    }
}

/// The ownerReference of `object` that names its controller.
pub(super) fn controller_of_object(object: &Value) -> Option<&Value> {
    object["metadata"]["ownerReferences"]
        .as_array()?
        .iter()
        .find(|owner| owner["controller"] == true)
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
