//! The six criteria over a resource's annotation keys.
//!
//! Knows nothing of JSON or waPC: it takes the keys K and the configured
//! values V and says whether K passes, and if not, exactly which keys or
//! values are at fault. A key is *listed* when some value matches it (an
//! exact name equals it, a pattern matches it), and a value is *present*
//! when some key matches it; with exact names only, that is plain set
//! arithmetic. The two criteria that judge the keys outside the values also
//! count Kubernetes' own keys as listed, unless `Bookkeeping::Judged` says
//! otherwise: those Kubernetes could have written in the request that
//! `Provenance` speaks of (see `kubernetes_keys`).

use crate::criterion::Criterion;
use crate::kubernetes_keys::{Bookkeeping, Provenance};
use crate::values::Values;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict<'k> {
    Accepted,
    Rejected(Violation<'k>),
}

/// What is wrong with the keys: a variant per criterion, named after it.
/// Lists are sorted and without duplicates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Violation<'k> {
    /// No key is listed.
    ContainsAnyOf,
    /// These keys are listed.
    DoesNotContainAnyOf { forbidden: Vec<&'k str> },
    /// These values, as written, are not present.
    ContainsAllOf { missing: Vec<&'k str> },
    /// Every value is present.
    DoesNotContainAllOf,
    /// Every key is listed: these are the keys found, those a value lists
    /// and those Kubernetes writes itself.
    ContainsOtherThan {
        listed: Vec<&'k str>,
        kubernetes: Vec<&'k str>,
    },
    /// These keys are not listed.
    DoesNotContainOtherThan { unlisted: Vec<&'k str> },
}

impl Violation<'_> {
    /// The criterion the keys fail.
    pub fn criterion(&self) -> Criterion {
        match self {
            Violation::ContainsAnyOf => Criterion::ContainsAnyOf,
            Violation::DoesNotContainAnyOf { .. } => Criterion::DoesNotContainAnyOf,
            Violation::ContainsAllOf { .. } => Criterion::ContainsAllOf,
            Violation::DoesNotContainAllOf => Criterion::DoesNotContainAllOf,
            Violation::ContainsOtherThan { .. } => Criterion::ContainsOtherThan,
            Violation::DoesNotContainOtherThan { .. } => Criterion::DoesNotContainOtherThan,
        }
    }
}

/// Judges `keys` against `values`. Keys compare exactly, as Kubernetes map
/// keys do; duplicate keys count once. A key is looked for among the values
/// first, so that keys the values list cost what they did before
/// Kubernetes' own keys were counted.
pub fn evaluate<'k, I, P>(
    criterion: Criterion,
    values: &'k Values,
    bookkeeping: Bookkeeping,
    provenance: &P,
    keys: I,
) -> Verdict<'k>
where
    I: IntoIterator<Item = &'k str>,
    P: Provenance + ?Sized,
{
    let mut keys = keys.into_iter();
    let violation = match criterion {
        Criterion::ContainsAnyOf => {
            (!keys.any(|k| values.is_listed(k))).then_some(Violation::ContainsAnyOf)
        }
        Criterion::ContainsOtherThan => {
            let (mut listed, mut kubernetes) = (Vec::new(), Vec::new());
            for key in keys {
                if values.is_listed(key) {
                    listed.push(key);
                } else if bookkeeping.counts_as_listed(key, provenance) {
                    kubernetes.push(key);
                } else {
                    return Verdict::Accepted;
                }
            }
            Some(Violation::ContainsOtherThan {
                listed: sorted(listed),
                kubernetes: sorted(kubernetes),
            })
        }
        Criterion::DoesNotContainAnyOf => {
            let forbidden = sorted(keys.filter(|k| values.is_listed(k)).collect());
            (!forbidden.is_empty()).then_some(Violation::DoesNotContainAnyOf { forbidden })
        }
        Criterion::DoesNotContainOtherThan => {
            let unlisted = keys
                .filter(|k| !values.is_listed(k) && !bookkeeping.counts_as_listed(k, provenance));
            let unlisted = sorted(unlisted.collect());
            (!unlisted.is_empty()).then_some(Violation::DoesNotContainOtherThan { unlisted })
        }
        Criterion::ContainsAllOf => {
            let present = presence(values, keys);
            let written = values
                .exact()
                .iter()
                .map(String::as_str)
                .chain(values.patterns().iter().map(|p| p.as_str()));
            let missing: Vec<&str> = written
                .zip(&present)
                .filter(|&(_, &p)| !p)
                .map(|(v, _)| v)
                .collect();
            (!missing.is_empty()).then(|| Violation::ContainsAllOf {
                missing: sorted(missing),
            })
        }
        Criterion::DoesNotContainAllOf => presence(values, keys)
            .iter()
            .all(|&p| p)
            .then_some(Violation::DoesNotContainAllOf),
    };
    match violation {
        Some(violation) => Verdict::Rejected(violation),
        None => Verdict::Accepted,
    }
}

/// Whether some key matches each value: the exact names first, in their
/// order, then the patterns (the order `ContainsAllOf` names them in).
fn presence<'k>(values: &Values, keys: impl Iterator<Item = &'k str>) -> Vec<bool> {
    let (exact, patterns) = (values.exact(), values.patterns());
    let mut present = vec![false; exact.len() + patterns.len()];
    for key in keys {
        if let Some(i) = values.exact_position(key) {
            present[i] = true;
        }
        for (p, pattern) in patterns.iter().enumerate() {
            let seen = &mut present[exact.len() + p];
            *seen = *seen || pattern.matches(key);
        }
    }
    present
}

fn sorted(mut names: Vec<&str>) -> Vec<&str> {
    names.sort_unstable();
    names.dedup();
    names
}

/// The specification's formulas, quantified over keys and values as the
/// README states them, with the literal matcher of `pattern::oracle`: for
/// tests and fuzz targets to hold the evaluator to.
#[cfg(any(test, feature = "reference"))]
pub mod oracle {
    use std::collections::BTreeSet;

    use super::{Criterion, Violation};
    use crate::kubernetes_keys::{self, Bookkeeping, Provenance};
    use crate::pattern;

    /// Whether `value` (an exact name, or a pattern) matches `key`.
    pub fn matches(value: &str, key: &str) -> bool {
        match value.contains('*') {
            true => pattern::oracle::matches(value, key),
            false => value == key,
        }
    }

    /// Whether Kubernetes' own `key` counts as listed for the criteria that
    /// judge the keys outside the values.
    fn kubernetes(bookkeeping: Bookkeeping, provenance: &dyn Provenance, key: &str) -> bool {
        bookkeeping == Bookkeeping::Listed
            && kubernetes_keys::oracle::written_by_kubernetes(key, provenance)
    }

    pub fn accepts(
        criterion: Criterion,
        k: &BTreeSet<String>,
        v: &BTreeSet<String>,
        bookkeeping: Bookkeeping,
        provenance: &dyn Provenance,
    ) -> bool {
        let listed = |key: &String| v.iter().any(|value| matches(value, key));
        let counted = |key: &String| listed(key) || kubernetes(bookkeeping, provenance, key);
        let present = |value: &String| k.iter().any(|key| matches(value, key));
        match criterion {
            Criterion::ContainsAnyOf => k.iter().any(listed),
            Criterion::DoesNotContainAnyOf => !k.iter().any(listed),
            Criterion::ContainsAllOf => v.iter().all(present),
            Criterion::DoesNotContainAllOf => !v.iter().all(present),
            Criterion::ContainsOtherThan => !k.iter().all(counted),
            Criterion::DoesNotContainOtherThan => k.iter().all(counted),
        }
    }

    /// What a rejection must report, sorted.
    pub fn violation<'a>(
        criterion: Criterion,
        k: &'a BTreeSet<String>,
        v: &'a BTreeSet<String>,
        bookkeeping: Bookkeeping,
        provenance: &dyn Provenance,
    ) -> Violation<'a> {
        let listed = |key: &&String| v.iter().any(|value| matches(value, key));
        let counted = |key: &&String| listed(key) || kubernetes(bookkeeping, provenance, key);
        let present = |value: &&String| k.iter().any(|key| matches(value, key));
        let names = |set: Vec<&'a String>| set.into_iter().map(String::as_str).collect();
        match criterion {
            Criterion::ContainsAnyOf => Violation::ContainsAnyOf,
            Criterion::DoesNotContainAnyOf => Violation::DoesNotContainAnyOf {
                forbidden: names(k.iter().filter(listed).collect()),
            },
            Criterion::ContainsAllOf => Violation::ContainsAllOf {
                missing: names(v.iter().filter(|value| !present(value)).collect()),
            },
            Criterion::DoesNotContainAllOf => Violation::DoesNotContainAllOf,
            Criterion::ContainsOtherThan => Violation::ContainsOtherThan {
                listed: names(k.iter().filter(listed).collect()),
                kubernetes: names(k.iter().filter(|key| !listed(key)).collect()),
            },
            Criterion::DoesNotContainOtherThan => Violation::DoesNotContainOtherThan {
                unlisted: names(k.iter().filter(|key| !counted(key)).collect()),
            },
        }
    }

    /// Whether an update from `old` keys to `new` keys, whose new object
    /// fails, keeps only faults the old object had: the old object failed
    /// too, and every key or value at fault in the new one (forbidden,
    /// missing, unlisted) was at fault in the old one. The other criteria
    /// list no such faults: failing is the whole fault.
    pub fn excused(
        criterion: Criterion,
        old: &BTreeSet<String>,
        new: &BTreeSet<String>,
        v: &BTreeSet<String>,
        bookkeeping: Bookkeeping,
        provenance: &dyn Provenance,
        old_provenance: &dyn Provenance,
    ) -> bool {
        let fails = !accepts(criterion, old, v, bookkeeping, old_provenance);
        // Written out here rather than taken from `existing_violations::faults`,
        // which this rule is there to check.
        fn faults(violation: Violation<'_>) -> BTreeSet<&str> {
            match violation {
                Violation::DoesNotContainAnyOf { forbidden: keys }
                | Violation::ContainsAllOf { missing: keys }
                | Violation::DoesNotContainOtherThan { unlisted: keys } => {
                    keys.into_iter().collect()
                }
                Violation::ContainsAnyOf
                | Violation::DoesNotContainAllOf
                | Violation::ContainsOtherThan { .. } => BTreeSet::new(),
            }
        }
        let faults_of =
            |keys, provenance| faults(violation(criterion, keys, v, bookkeeping, provenance));
        fails && faults_of(new, provenance).is_subset(&faults_of(old, old_provenance))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    use crate::values::Values;

    use proptest::prelude::*;

    use crate::kubernetes_keys::Unknown;
    use Bookkeeping::{Judged, Listed};

    use Criterion::*;

    fn values(names: &[&str]) -> Values {
        Values::new(names.iter().map(|s| s.to_string()).collect())
    }

    fn accepted(criterion: Criterion, values: &Values, keys: &[&str]) -> bool {
        evaluate(criterion, values, Listed, &Unknown, keys.iter().copied()) == Verdict::Accepted
    }

    /// The specification's truth tables for `values: [a, b]`, all 48 cells;
    /// a column per criterion, in the order of `Criterion::ALL`.
    #[test]
    fn truth_tables() {
        let rows: [(&[&str], &str); 8] = [
            (&["a"], "ARRARA"),
            (&["b"], "ARRARA"),
            (&["a", "b"], "ARARRA"),
            (&["a", "b", "c"], "ARARAR"),
            (&["c"], "RARAAR"),
            (&["a", "c"], "ARRAAR"),
            (&["b", "c"], "ARRAAR"),
            (&[], "RARARA"),
        ];
        let values = values(&["a", "b"]);
        for (keys, expected) in rows {
            assert_eq!(
                expected.len(),
                Criterion::ALL.len(),
                "a criterion lacks its column"
            );
            for (criterion, cell) in Criterion::ALL.into_iter().zip(expected.chars()) {
                assert_eq!(
                    accepted(criterion, &values, keys),
                    cell == 'A',
                    "{criterion} with annotations {keys:?}"
                );
            }
        }
    }

    #[test]
    fn violations_name_the_offending_keys_sorted() {
        let v = values(&["a", "b", "c"]);
        let cases: [(Criterion, &[&str], Violation); 6] = [
            (ContainsAnyOf, &["x"], Violation::ContainsAnyOf),
            (
                DoesNotContainAnyOf,
                &["c", "x", "a", "c"],
                Violation::DoesNotContainAnyOf {
                    forbidden: vec!["a", "c"],
                },
            ),
            (
                ContainsAllOf,
                &["b"],
                Violation::ContainsAllOf {
                    missing: vec!["a", "c"],
                },
            ),
            (
                DoesNotContainAllOf,
                &["c", "b", "a", "z"],
                Violation::DoesNotContainAllOf,
            ),
            (
                ContainsOtherThan,
                &["c", "a", "c"],
                Violation::ContainsOtherThan {
                    listed: vec!["a", "c"],
                    kubernetes: vec![],
                },
            ),
            (
                DoesNotContainOtherThan,
                &["z", "a", "y", "z"],
                Violation::DoesNotContainOtherThan {
                    unlisted: vec!["y", "z"],
                },
            ),
        ];
        for (criterion, keys, violation) in cases {
            assert_eq!(violation.criterion(), criterion);
            assert_eq!(
                evaluate(criterion, &v, Listed, &Unknown, keys.iter().copied()),
                Verdict::Rejected(violation),
                "{criterion}"
            );
        }
    }

    #[test]
    fn keys_compare_exactly() {
        let v = values(&["owner"]);
        assert!(!accepted(ContainsAnyOf, &v, &["Owner"]));
        assert!(!accepted(ContainsAnyOf, &v, &["owner "]));
        assert!(accepted(ContainsAnyOf, &v, &["owner"]));
    }

    fn criterion() -> impl Strategy<Value = Criterion> {
        proptest::sample::select(Criterion::ALL.to_vec())
    }

    /// Small alphabet, so that random sets overlap often.
    fn name() -> impl Strategy<Value = String> {
        "[a-e]{1,2}"
    }

    /// Kubernetes' own keys, one that only a node writes, and one that only
    /// looks like them.
    const KUBERNETES_KEYS: [&str; 5] = [
        "kubernetes.io/limit-ranger",
        "kubectl.kubernetes.io/restartedAt",
        "deprecated.daemonset.template.generation",
        "kubernetes.io/config.mirror",
        "kubernetes.io/limit-rangers",
    ];

    /// A request whose sender could, or could not, have written every key
    /// that names its writer.
    struct Wrote(bool);

    impl Provenance for Wrote {
        fn could_have_written(&self, _: crate::kubernetes_keys::Writer, _: &str) -> bool {
            self.0
        }
    }

    /// Mostly names from the small alphabet, now and then one of Kubernetes'.
    fn key() -> impl Strategy<Value = String> {
        prop_oneof![6 => name(), 1 => proptest::sample::select(&KUBERNETES_KEYS[..]).prop_map(String::from)]
    }

    /// Exact names, and now and then a pattern over the same alphabet, or a
    /// value that lists one of Kubernetes' keys.
    fn value() -> impl Strategy<Value = String> {
        prop_oneof![
            8 => name(),
            2 => "[a-e]{0,1}\\*[a-e*/]{0,2}",
            1 => proptest::sample::select(vec!["kubernetes.io/limit-ranger", "kubectl.kubernetes.io/*"]).prop_map(String::from),
        ]
    }

    fn bookkeeping() -> impl Strategy<Value = Bookkeeping> {
        proptest::sample::select(vec![Listed, Judged])
    }

    /// The keys Kubernetes writes count as listed for the two criteria that
    /// judge the keys outside the values, and only for them.
    #[test]
    fn kubernetes_keys_count_as_listed_unless_judged() {
        let v = values(&["example.com/*"]);
        let keys = ["example.com/owner", "kubernetes.io/limit-ranger", "zone"];
        assert_eq!(
            evaluate(DoesNotContainOtherThan, &v, Listed, &Unknown, keys),
            Verdict::Rejected(Violation::DoesNotContainOtherThan {
                unlisted: vec!["zone"]
            })
        );
        assert_eq!(
            evaluate(DoesNotContainOtherThan, &v, Judged, &Unknown, keys),
            Verdict::Rejected(Violation::DoesNotContainOtherThan {
                unlisted: vec!["kubernetes.io/limit-ranger", "zone"]
            })
        );
        // containsOtherThan: Kubernetes' keys are no annotation of the user's.
        let v = values(&["a", "kubectl.kubernetes.io/*"]);
        let keys = [
            "kubernetes.io/limit-ranger",
            "a",
            "kubectl.kubernetes.io/restartedAt",
        ];
        assert_eq!(
            evaluate(ContainsOtherThan, &v, Listed, &Unknown, keys),
            Verdict::Rejected(Violation::ContainsOtherThan {
                listed: vec!["a", "kubectl.kubernetes.io/restartedAt"],
                kubernetes: vec!["kubernetes.io/limit-ranger"],
            })
        );
        assert_eq!(
            evaluate(ContainsOtherThan, &v, Judged, &Unknown, keys),
            Verdict::Accepted
        );
        // The other criteria look only for the values, named or not.
        let v = values(&["kubernetes.io/change-cause"]);
        let keys = ["kubernetes.io/change-cause"];
        for bookkeeping in [Listed, Judged] {
            assert_eq!(
                evaluate(DoesNotContainAnyOf, &v, bookkeeping, &Unknown, keys),
                Verdict::Rejected(Violation::DoesNotContainAnyOf {
                    forbidden: vec!["kubernetes.io/change-cause"]
                })
            );
            assert_eq!(
                evaluate(ContainsAllOf, &v, bookkeeping, &Unknown, keys),
                Verdict::Accepted
            );
            assert_eq!(
                evaluate(
                    ContainsAnyOf,
                    &v,
                    bookkeeping,
                    &Unknown,
                    ["kubernetes.io/limit-ranger"]
                ),
                Verdict::Rejected(Violation::ContainsAnyOf)
            );
        }
    }

    /// A key that names its writer counts only where the request says that
    /// writer could have written it.
    #[test]
    fn a_key_with_a_writer_counts_only_from_that_writer() {
        let v = values(&["example.com/*"]);
        let keys = ["example.com/owner", "kubernetes.io/config.mirror"];
        assert_eq!(
            evaluate(DoesNotContainOtherThan, &v, Listed, &Wrote(true), keys),
            Verdict::Accepted
        );
        assert_eq!(
            evaluate(DoesNotContainOtherThan, &v, Listed, &Wrote(false), keys),
            Verdict::Rejected(Violation::DoesNotContainOtherThan {
                unlisted: vec!["kubernetes.io/config.mirror"]
            })
        );
        assert_eq!(
            evaluate(ContainsOtherThan, &v, Listed, &Wrote(true), keys),
            Verdict::Rejected(Violation::ContainsOtherThan {
                listed: vec!["example.com/owner"],
                kubernetes: vec!["kubernetes.io/config.mirror"],
            })
        );
        assert_eq!(
            evaluate(ContainsOtherThan, &v, Listed, &Wrote(false), keys),
            Verdict::Accepted
        );
    }

    #[test]
    fn patterns_list_keys_and_are_present_through_them() {
        let v = values(&["example.com/*", "owner"]);
        let keys = ["example.com/team", "zone"];
        let cases: [(Criterion, Verdict); 6] = [
            (ContainsAnyOf, Verdict::Accepted),
            (
                DoesNotContainAnyOf,
                Verdict::Rejected(Violation::DoesNotContainAnyOf {
                    forbidden: vec!["example.com/team"],
                }),
            ),
            (
                ContainsAllOf,
                Verdict::Rejected(Violation::ContainsAllOf {
                    missing: vec!["owner"],
                }),
            ),
            (DoesNotContainAllOf, Verdict::Accepted),
            (ContainsOtherThan, Verdict::Accepted),
            (
                DoesNotContainOtherThan,
                Verdict::Rejected(Violation::DoesNotContainOtherThan {
                    unlisted: vec!["zone"],
                }),
            ),
        ];
        for (criterion, expected) in cases {
            assert_eq!(
                evaluate(criterion, &v, Listed, &Unknown, keys),
                expected,
                "{criterion}"
            );
        }
        // A value that no key matched is named as written.
        let v = values(&["cost.example.org/*", "a", "z*"]);
        assert_eq!(
            evaluate(
                ContainsAllOf,
                &v,
                Listed,
                &Unknown,
                ["a", "cost.example.org"]
            ),
            Verdict::Rejected(Violation::ContainsAllOf {
                missing: vec!["cost.example.org/*", "z*"]
            })
        );
        assert_eq!(
            evaluate(
                DoesNotContainAllOf,
                &v,
                Listed,
                &Unknown,
                ["zz", "a", "cost.example.org/x"]
            ),
            Verdict::Rejected(Violation::DoesNotContainAllOf)
        );
    }

    proptest! {
        #[test]
        fn verdicts_and_violations_follow_the_formulas(
            criterion in criterion(),
            keys in proptest::collection::vec(key(), 0..12),
            // Up to 16 values: exact names are looked up one by one below 9,
            // by binary search above.
            wanted in proptest::collection::btree_set(value(), 1..16),
            bookkeeping in bookkeeping(),
            writer in any::<bool>(),
            shuffle_seed in any::<u64>(),
        ) {
            let k: BTreeSet<String> = keys.iter().cloned().collect();
            let v = Values::new(wanted.clone());
            let p = Wrote(writer);
            let verdict = evaluate(criterion, &v, bookkeeping, &p, keys.iter().map(String::as_str));
            if oracle::accepts(criterion, &k, &wanted, bookkeeping, &p) {
                prop_assert_eq!(&verdict, &Verdict::Accepted);
            } else {
                let expected = oracle::violation(criterion, &k, &wanted, bookkeeping, &p);
                prop_assert_eq!(&verdict, &Verdict::Rejected(expected));
            }
            // Order of the keys never matters.
            let mut shuffled = keys.clone();
            let len = shuffled.len().max(1);
            shuffled.rotate_left((shuffle_seed as usize) % len);
            shuffled.reverse();
            let again = evaluate(criterion, &v, bookkeeping, &p, shuffled.iter().map(String::as_str));
            prop_assert_eq!(verdict, again);
        }

        /// With exact names only, the formulas are plain set arithmetic.
        #[test]
        fn the_oracle_is_set_arithmetic_on_exact_names(
            criterion in criterion(),
            k in proptest::collection::btree_set(name(), 0..8),
            v in proptest::collection::btree_set(name(), 1..8),
        ) {
            let expected = match criterion {
                ContainsAnyOf => !k.is_disjoint(&v),
                DoesNotContainAnyOf => k.is_disjoint(&v),
                ContainsAllOf => v.is_subset(&k),
                DoesNotContainAllOf => !v.is_subset(&k),
                ContainsOtherThan => !k.is_subset(&v),
                DoesNotContainOtherThan => k.is_subset(&v),
            };
            prop_assert_eq!(oracle::accepts(criterion, &k, &v, Judged, &Unknown), expected);
        }
    }
}
