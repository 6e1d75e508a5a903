//! The six criteria over a resource's annotation keys.
//!
//! Knows nothing of JSON or waPC: it takes the keys K and the configured
//! values V and says whether K passes, and if not, exactly which keys or
//! values are at fault. A key is *listed* when some value matches it (an
//! exact name equals it, a pattern matches it), and a value is *present*
//! when some key matches it; with exact names only, that is plain set
//! arithmetic.

use crate::criterion::Criterion;
use crate::values::Values;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict<'k> {
    Accepted,
    Rejected(Violation<'k>),
}

/// What is wrong with the keys, one variant per criterion; lists are sorted
/// and without duplicates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Violation<'k> {
    /// containsAnyOf: no key is listed.
    NoneOfValues,
    /// doesNotContainAnyOf: these keys are listed.
    Forbidden(Vec<&'k str>),
    /// containsAllOf: these values, as written, are not present.
    Missing(Vec<&'k str>),
    /// doesNotContainAllOf: every value is present.
    AllValues,
    /// containsOtherThan: every key is listed; these are the keys found.
    OnlyValues(Vec<&'k str>),
    /// doesNotContainOtherThan: these keys are not listed.
    Unlisted(Vec<&'k str>),
}

/// Judges `keys` against `values`. Keys compare exactly, as Kubernetes map
/// keys do; duplicate keys count once.
pub fn evaluate<'k, I>(criterion: Criterion, values: &'k Values, keys: I) -> Verdict<'k>
where
    I: IntoIterator<Item = &'k str>,
{
    let mut keys = keys.into_iter();
    let violation = match criterion {
        Criterion::ContainsAnyOf => {
            (!keys.any(|k| values.lists(k))).then_some(Violation::NoneOfValues)
        }
        Criterion::ContainsOtherThan => {
            let mut found = Vec::new();
            for key in keys {
                if !values.lists(key) {
                    return Verdict::Accepted;
                }
                found.push(key);
            }
            Some(Violation::OnlyValues(sorted(found)))
        }
        Criterion::DoesNotContainAnyOf => {
            let forbidden = sorted(keys.filter(|k| values.lists(k)).collect());
            (!forbidden.is_empty()).then_some(Violation::Forbidden(forbidden))
        }
        Criterion::DoesNotContainOtherThan => {
            let unlisted = sorted(keys.filter(|k| !values.lists(k)).collect());
            (!unlisted.is_empty()).then_some(Violation::Unlisted(unlisted))
        }
        Criterion::ContainsAllOf | Criterion::DoesNotContainAllOf => {
            let (exact, patterns) = (values.exact(), values.patterns());
            // Exact names first, then patterns.
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
            if criterion == Criterion::DoesNotContainAllOf {
                present.iter().all(|&p| p).then_some(Violation::AllValues)
            } else {
                let written = exact
                    .iter()
                    .map(String::as_str)
                    .chain(patterns.iter().map(|p| p.as_str()));
                let missing: Vec<&str> = written
                    .zip(&present)
                    .filter(|&(_, &p)| !p)
                    .map(|(v, _)| v)
                    .collect();
                (!missing.is_empty()).then(|| Violation::Missing(sorted(missing)))
            }
        }
    };
    match violation {
        Some(violation) => Verdict::Rejected(violation),
        None => Verdict::Accepted,
    }
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
    use crate::pattern;

    /// Whether `value` (an exact name, or a pattern) matches `key`.
    pub fn matches(value: &str, key: &str) -> bool {
        match value.contains('*') {
            true => pattern::oracle::matches(value, key),
            false => value == key,
        }
    }

    pub fn accepts(criterion: Criterion, k: &BTreeSet<String>, v: &BTreeSet<String>) -> bool {
        let listed = |key: &String| v.iter().any(|value| matches(value, key));
        let present = |value: &String| k.iter().any(|key| matches(value, key));
        match criterion {
            Criterion::ContainsAnyOf => k.iter().any(listed),
            Criterion::DoesNotContainAnyOf => !k.iter().any(listed),
            Criterion::ContainsAllOf => v.iter().all(present),
            Criterion::DoesNotContainAllOf => !v.iter().all(present),
            Criterion::ContainsOtherThan => !k.iter().all(listed),
            Criterion::DoesNotContainOtherThan => k.iter().all(listed),
        }
    }

    /// What a rejection must report, sorted.
    pub fn violation<'a>(
        criterion: Criterion,
        k: &'a BTreeSet<String>,
        v: &'a BTreeSet<String>,
    ) -> Violation<'a> {
        let listed = |key: &&String| v.iter().any(|value| matches(value, key));
        let present = |value: &&String| k.iter().any(|key| matches(value, key));
        let names = |set: Vec<&'a String>| set.into_iter().map(String::as_str).collect();
        match criterion {
            Criterion::ContainsAnyOf => Violation::NoneOfValues,
            Criterion::DoesNotContainAnyOf => {
                Violation::Forbidden(names(k.iter().filter(listed).collect()))
            }
            Criterion::ContainsAllOf => {
                Violation::Missing(names(v.iter().filter(|value| !present(value)).collect()))
            }
            Criterion::DoesNotContainAllOf => Violation::AllValues,
            Criterion::ContainsOtherThan => Violation::OnlyValues(names(k.iter().collect())),
            Criterion::DoesNotContainOtherThan => {
                Violation::Unlisted(names(k.iter().filter(|key| !listed(key)).collect()))
            }
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
    ) -> bool {
        fn faults(violation: Violation<'_>) -> BTreeSet<&str> {
            match violation {
                Violation::Forbidden(f) | Violation::Missing(f) | Violation::Unlisted(f) => {
                    f.into_iter().collect()
                }
                _ => BTreeSet::new(),
            }
        }
        !accepts(criterion, old, v)
            && faults(violation(criterion, new, v)).is_subset(&faults(violation(criterion, old, v)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    use crate::values::Values;

    use proptest::prelude::*;

    use Criterion::*;

    fn values(names: &[&str]) -> Values {
        Values::new(names.iter().map(|s| s.to_string()).collect())
    }

    fn accepted(criterion: Criterion, values: &Values, keys: &[&str]) -> bool {
        evaluate(criterion, values, keys.iter().copied()) == Verdict::Accepted
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
            (ContainsAnyOf, &["x"], Violation::NoneOfValues),
            (
                DoesNotContainAnyOf,
                &["c", "x", "a", "c"],
                Violation::Forbidden(vec!["a", "c"]),
            ),
            (ContainsAllOf, &["b"], Violation::Missing(vec!["a", "c"])),
            (
                DoesNotContainAllOf,
                &["c", "b", "a", "z"],
                Violation::AllValues,
            ),
            (
                ContainsOtherThan,
                &["c", "a", "c"],
                Violation::OnlyValues(vec!["a", "c"]),
            ),
            (
                DoesNotContainOtherThan,
                &["z", "a", "y", "z"],
                Violation::Unlisted(vec!["y", "z"]),
            ),
        ];
        for (criterion, keys, violation) in cases {
            assert_eq!(
                evaluate(criterion, &v, keys.iter().copied()),
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

    /// Exact names, and now and then a pattern over the same alphabet.
    fn value() -> impl Strategy<Value = String> {
        prop_oneof![4 => name(), 1 => "[a-e]{0,1}\\*[a-e*/]{0,2}"]
    }

    #[test]
    fn patterns_list_keys_and_are_present_through_them() {
        let v = values(&["example.com/*", "owner"]);
        let keys = ["example.com/team", "zone"];
        let cases: [(Criterion, Verdict); 6] = [
            (ContainsAnyOf, Verdict::Accepted),
            (
                DoesNotContainAnyOf,
                Verdict::Rejected(Violation::Forbidden(vec!["example.com/team"])),
            ),
            (
                ContainsAllOf,
                Verdict::Rejected(Violation::Missing(vec!["owner"])),
            ),
            (DoesNotContainAllOf, Verdict::Accepted),
            (ContainsOtherThan, Verdict::Accepted),
            (
                DoesNotContainOtherThan,
                Verdict::Rejected(Violation::Unlisted(vec!["zone"])),
            ),
        ];
        for (criterion, expected) in cases {
            assert_eq!(evaluate(criterion, &v, keys), expected, "{criterion}");
        }
        // A value that no key matched is named as written.
        let v = values(&["cost.example.org/*", "a", "z*"]);
        assert_eq!(
            evaluate(ContainsAllOf, &v, ["a", "cost.example.org"]),
            Verdict::Rejected(Violation::Missing(vec!["cost.example.org/*", "z*"]))
        );
        assert_eq!(
            evaluate(DoesNotContainAllOf, &v, ["zz", "a", "cost.example.org/x"]),
            Verdict::Rejected(Violation::AllValues)
        );
    }

    proptest! {
        #[test]
        fn verdicts_and_violations_follow_the_formulas(
            criterion in criterion(),
            keys in proptest::collection::vec(name(), 0..12),
            // Up to 16 values: exact names are looked up one by one below 9,
            // by binary search above.
            wanted in proptest::collection::btree_set(value(), 1..16),
            shuffle_seed in any::<u64>(),
        ) {
            let k: BTreeSet<String> = keys.iter().cloned().collect();
            let v = Values::new(wanted.clone());
            let verdict = evaluate(criterion, &v, keys.iter().map(String::as_str));
            if oracle::accepts(criterion, &k, &wanted) {
                prop_assert_eq!(&verdict, &Verdict::Accepted);
            } else {
                prop_assert_eq!(&verdict, &Verdict::Rejected(oracle::violation(criterion, &k, &wanted)));
            }
            // Order of the keys never matters.
            let mut shuffled = keys.clone();
            let len = shuffled.len().max(1);
            shuffled.rotate_left((shuffle_seed as usize) % len);
            shuffled.reverse();
            let again = evaluate(criterion, &v, shuffled.iter().map(String::as_str));
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
            prop_assert_eq!(oracle::accepts(criterion, &k, &v), expected);
        }
    }
}
