//! Updates of objects that already broke the policy before it applied to
//! them. A cluster's controllers update such objects all the time (a
//! ReplicaSet scaled, a finalizer removed on the way to deletion), and
//! rejecting those updates would stop the cluster, not fix the object. So an
//! update is judged against the object it replaces, as Kubernetes judges
//! updates of custom resources ("ratcheting"): it passes when it adds no
//! fault of its own, and it can never make an object worse.

use crate::evaluator::{Verdict, Violation};
use crate::request;
use crate::settings::Settings;

/// Whether an update whose new object fails with `new` only keeps faults
/// that `old_object` (the text of the object it replaces) already had.
/// An old object that cannot be read excuses nothing.
pub fn excused(settings: &Settings, new: &Violation, old_object: &[u8]) -> bool {
    let Ok(old) = request::decode_object(old_object) else {
        return false;
    };
    match settings.judge(old.keys()) {
        Verdict::Rejected(old) => adds_nothing(new, &old),
        Verdict::Accepted => false,
    }
}

/// Whether the faults in `new` were all in `old` already: each forbidden
/// or unlisted key of the new object was on the old one too, each value
/// missing from it was missing before. The other three criteria fail all or
/// nothing, so failing the same way is enough. Both violations come from
/// the same settings, so they are of the same criterion.
pub fn adds_nothing(new: &Violation, old: &Violation) -> bool {
    debug_assert_eq!(new.criterion(), old.criterion());
    new.criterion() == old.criterion() && is_subset(new.faults(), old.faults())
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

    /// Judges an update from `old` keys to `new` keys the way `decide` does.
    fn update_passes(settings: &Settings, old: &[&str], new: &[&str]) -> bool {
        match settings.judge(new.iter().copied()) {
            Verdict::Accepted => true,
            Verdict::Rejected(violation) => excused(settings, &violation, object(old).as_bytes()),
        }
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
        for old in ["", "[]", r#"{"metadata":{"annotations":[]}}"#, "{} x"] {
            assert!(!excused(&required, &violation, old.as_bytes()), "{old}");
        }
        assert!(excused(&required, &violation, b"{}"));
    }

    fn name() -> impl Strategy<Value = String> {
        prop_oneof![4 => "[a-d]", 1 => "[ab]\\*"]
    }

    /// Mostly one-letter keys, now and then one Kubernetes writes itself.
    fn key() -> impl Strategy<Value = String> {
        prop_oneof![4 => "[a-d]", 1 => Just("kubernetes.io/psp".to_string())]
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
            let expected = oracle::accepts(criterion, &new, &values, bookkeeping)
                || oracle::excused(criterion, &old, &new, &values, bookkeeping);
            prop_assert_eq!(update_passes(&settings, &refs(&old), &refs(&new)), expected);
        }
    }
}
