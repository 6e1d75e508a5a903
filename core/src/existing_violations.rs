//! Updates of objects that already broke the policy before it applied to
//! them. A cluster's controllers update such objects all the time (a
//! ReplicaSet scaled, a finalizer removed on the way to deletion), and
//! rejecting those updates would stop the cluster, not fix the object. So an
//! update is judged against the object it replaces, as Kubernetes judges
//! updates of custom resources ("ratcheting"): it passes when it adds no
//! fault of its own, and it can never make an object worse.

use crate::evaluator::{Verdict, Violation};
use crate::provenance;
use crate::request;
use crate::settings::Settings;

/// Whether an update whose new object fails with `new` only keeps faults
/// that `old_object` (the text of the object it replaces) already had, its
/// keys judged where `provenance` (the new object's) says they were
/// written. An old object that cannot be read excuses nothing.
pub fn excused(
    settings: &Settings,
    new: &Violation,
    old_object: &[u8],
    provenance: &provenance::Request,
) -> bool {
    let Ok(old) = request::decode_object(old_object) else {
        return false;
    };
    let old_provenance = provenance.for_old(old_object, old.kind.as_deref());
    match settings.judge(old.keys(), &old_provenance) {
        Verdict::Rejected(old) => adds_nothing(new, &old),
        Verdict::Accepted => false,
    }
}

/// Whether the faults in `new` were all in `old` already (`faults`). Both
/// violations come from the same settings, so they are of the same
/// criterion.
pub fn adds_nothing(new: &Violation, old: &Violation) -> bool {
    debug_assert_eq!(new.criterion(), old.criterion());
    new.criterion() == old.criterion() && is_subset(faults(new), faults(old))
}

/// The update rule, criterion by criterion (the table under "Updates of
/// objects that predate the policy" in docs/deploying.md): what an update may keep from
/// its old object but not add. Each forbidden or unlisted key of the new
/// object must have been on the old one, each value missing from it missing
/// before. The other three criteria fail all or nothing and name no fault:
/// failing the same way is enough.
pub fn faults<'v>(violation: &'v Violation) -> &'v [&'v str] {
    match violation {
        Violation::DoesNotContainAnyOf { forbidden: faults }
        | Violation::ContainsAllOf { missing: faults }
        | Violation::DoesNotContainOtherThan { unlisted: faults } => faults,
        Violation::ContainsAnyOf
        | Violation::DoesNotContainAllOf
        | Violation::ContainsOtherThan { .. } => &[],
    }
}

/// `a ⊆ b`, for sorted lists without duplicates.
fn is_subset(a: &[&str], b: &[&str]) -> bool {
    let mut b = b.iter();
    a.iter().all(|x| b.by_ref().any(|y| y == x))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    use proptest::prelude::*;

    use crate::criterion::Criterion;
    use crate::evaluator::oracle;
    use crate::provenance::oracle::Sender;

    #[test]
    fn subsets_of_sorted_lists() {
        assert!(is_subset(&[], &[]));
        assert!(is_subset(&["b"], &["a", "b", "c"]));
        assert!(is_subset(&["a", "c"], &["a", "b", "c"]));
        assert!(!is_subset(&["a", "d"], &["a", "b", "c"]));
        assert!(!is_subset(&["c", "a"], &["a", "b", "c"]));
        assert!(!is_subset(&["a"], &[]));
    }

    fn settings(criterion: &str, values: &[&str]) -> Settings {
        let json = serde_json::json!({"criteria": criterion, "values": values});
        Settings::from_json(json.to_string().as_bytes()).unwrap()
    }

    fn object(keys: &[&str]) -> String {
        let annotations: serde_json::Map<_, _> =
            keys.iter().map(|k| (k.to_string(), "v".into())).collect();
        serde_json::json!({"kind": "ReplicaSet", "metadata": {"annotations": annotations}})
            .to_string()
    }

    /// Judges an update from `old` keys to `new` keys the way `decide` does,
    /// as sent by `username`.
    fn update_by(username: &str, settings: &Settings, old: &[&str], new: &[&str]) -> bool {
        let old = object(old);
        let payload = serde_json::json!({
            "request": {"userInfo": {"username": username}, "object": {}},
        })
        .to_string();
        let provenance =
            provenance::Request::new(payload.as_bytes(), Some(old.as_bytes()), Some("ReplicaSet"));
        match settings.judge(new.iter().copied(), &provenance) {
            Verdict::Accepted => true,
            Verdict::Rejected(violation) => {
                excused(settings, &violation, old.as_bytes(), &provenance)
            }
        }
    }

    fn update_passes(settings: &Settings, old: &[&str], new: &[&str]) -> bool {
        update_by("jane", settings, old, new)
    }

    #[test]
    fn an_update_passes_when_it_keeps_old_faults_and_adds_none() {
        let required = settings("containsAllOf", &["owner", "team"]);
        assert!(update_passes(&required, &[], &["x"]));
        assert!(update_passes(&required, &["x"], &["owner"]));
        assert!(!update_passes(&required, &["owner"], &[]), "owner removed");
        assert!(
            update_passes(&required, &[], &["owner"]),
            "one fault fixed, one kept"
        );

        let denied = settings("doesNotContainAnyOf", &["debug", "trace/*"]);
        assert!(update_passes(&denied, &["debug", "trace/a"], &["debug"]));
        assert!(!update_passes(&denied, &["debug"], &["debug", "trace/a"]));
        assert!(!update_passes(&denied, &[], &["debug"]));

        let allowed = settings("doesNotContainOtherThan", &["example.com/*"]);
        assert!(update_passes(
            &allowed,
            &["legacy"],
            &["legacy", "example.com/x"]
        ));
        assert!(!update_passes(&allowed, &["legacy"], &["legacy", "other"]));

        // All-or-nothing criteria: the old object failed the same way.
        let any = settings("containsAnyOf", &["owner"]);
        assert!(update_passes(&any, &["a"], &["b"]));
        assert!(!update_passes(&any, &["owner"], &["b"]));
        let other = settings("containsOtherThan", &["owner"]);
        assert!(update_passes(&other, &[], &["owner"]));
        assert!(!update_passes(&other, &["x"], &["owner"]));
        let not_all = settings("doesNotContainAllOf", &["a", "b"]);
        assert!(update_passes(&not_all, &["a", "b", "c"], &["a", "b"]));
        assert!(!update_passes(&not_all, &["a"], &["a", "b"]));
    }

    #[test]
    fn an_old_object_that_cannot_be_read_excuses_nothing() {
        let required = settings("containsAllOf", &["owner"]);
        let violation = Violation::ContainsAllOf {
            missing: vec!["owner"],
        };
        let unknown = provenance::Request::new(b"{}", None, None);
        for old in ["", "[]", r#"{"metadata":{"annotations":[]}}"#, "{} x"] {
            assert!(
                !excused(&required, &violation, old.as_bytes(), &unknown),
                "{old}"
            );
        }
        assert!(excused(&required, &violation, b"{}", &unknown));
    }

    fn name() -> impl Strategy<Value = String> {
        prop_oneof![4 => "[a-d]", 1 => "[ab]\\*"]
    }

    /// Mostly one-letter keys, now and then one Kubernetes writes itself in
    /// anyone's request, or only in a node's.
    fn key() -> impl Strategy<Value = String> {
        prop_oneof![
            4 => "[a-d]",
            1 => Just("kubernetes.io/psp".to_string()),
            1 => Just("kubernetes.io/config.mirror".to_string()),
        ]
    }

    /// A key only a node writes stays on a mirror Pod through anyone's
    /// update, whatever `allowExistingViolations` says; added by anyone but a
    /// node, it is a fault like any other.
    #[test]
    fn an_update_keeps_the_keys_a_node_wrote() {
        let mirror = "kubernetes.io/config.mirror";
        let json = r#"{"criteria":"doesNotContainOtherThan","values":["example.com/*"],"allowExistingViolations":false}"#;
        let strict = Settings::from_json(json.as_bytes()).unwrap();
        assert!(update_passes(
            &strict,
            &[mirror],
            &[mirror, "example.com/x"]
        ));
        assert!(!update_passes(&strict, &[], &[mirror]));
        assert!(update_by("system:node:n1", &strict, &[], &[mirror]));
        let lenient = settings("doesNotContainOtherThan", &["example.com/*"]);
        assert!(!update_passes(&lenient, &["zone"], &["zone", mirror]));
    }

    /// With Kubernetes' own keys judged like any other, an update keeps the
    /// ones its old object had and may add none.
    #[test]
    fn kubernetes_keys_judged_are_faults_like_any_other() {
        let json = r#"{"criteria":"doesNotContainOtherThan","values":["example.com/*"],"allowKubernetesBookkeeping":false}"#;
        let judged = Settings::from_json(json.as_bytes()).unwrap();
        let generation = "deprecated.daemonset.template.generation";
        let cause = "kubernetes.io/change-cause";
        assert!(update_passes(&judged, &[generation], &[generation]));
        assert!(!update_passes(&judged, &[generation], &[generation, cause]));
        let listed = settings("doesNotContainOtherThan", &["example.com/*"]);
        assert!(update_passes(&listed, &[], &[generation, cause]));
    }

    proptest! {
        /// Against the specification's wording: an update that the new object
        /// fails passes exactly when the old object failed too and every
        /// fault of the new object was a fault of the old one.
        #[test]
        fn updates_follow_the_rule(
            criterion in proptest::sample::select(Criterion::ALL.to_vec()),
            old in proptest::collection::btree_set(key(), 0..4),
            new in proptest::collection::btree_set(key(), 0..4),
            values in proptest::collection::btree_set(name(), 1..4),
            allow_kubernetes in any::<bool>(),
            from_node in any::<bool>(),
        ) {
            fn refs(set: &BTreeSet<String>) -> Vec<&str> {
                set.iter().map(String::as_str).collect()
            }
            let json = serde_json::json!({
                "criteria": criterion.name(),
                "values": values,
                "allowKubernetesBookkeeping": allow_kubernetes,
            });
            let settings = Settings::from_json(json.to_string().as_bytes()).unwrap();
            let bookkeeping = settings.bookkeeping;
            let username = if from_node { "system:node:n1" } else { "jane" };
            let sender = Sender { username: Some(username.to_string()), earlier: Some(old.clone()), made_by: None };
            let expected = oracle::accepts(criterion, &new, &values, bookkeeping, &sender)
                || oracle::excused(criterion, &old, &new, &values, bookkeeping, &sender, &sender.for_old(&old));
            prop_assert_eq!(update_by(username, &settings, &refs(&old), &refs(&new)), expected);
        }
    }
}
