//! The six criteria as set operations over a resource's annotation keys.
//!
//! Knows nothing of JSON or waPC: it takes the keys K and the configured
//! values V (sorted, without duplicates) and says whether K passes, and if
//! not, exactly which keys are at fault.

use crate::bytes;
use crate::criterion::Criterion;

/// Up to this many values, a key is looked for among them one by one.
const SCANNED: usize = 8;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict<'k> {
    Accepted,
    Rejected(Violation<'k>),
}

/// What is wrong with the keys; lists are sorted and without duplicates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Violation<'k> {
    /// containsAnyOf: none of the values is a key.
    NoneOfValues,
    /// doesNotContainAnyOf: these values are keys.
    Forbidden(Vec<&'k str>),
    /// containsAllOf: these values are not keys.
    Missing(Vec<&'k str>),
    /// doesNotContainAllOf: every value is a key.
    AllValues,
    /// containsOtherThan: no key outside the values; these are the keys found.
    OnlyValues(Vec<&'k str>),
    /// doesNotContainOtherThan: these keys are not among the values.
    Unlisted(Vec<&'k str>),
}

/// Judges `keys` against `values`, which must be sorted and deduplicated
/// (`Settings` guarantees it). Keys compare exactly, as Kubernetes map keys do;
/// duplicate keys count once.
pub fn evaluate<'k, I>(criterion: Criterion, values: &'k [String], keys: I) -> Verdict<'k>
where
    I: IntoIterator<Item = &'k str>,
{
    debug_assert!(
        values.windows(2).all(|w| w[0] < w[1]),
        "values not normalised"
    );
    // A few values are scanned: their lengths rule out most keys at once,
    // where each step of a binary search is a byte-by-byte comparison.
    let position = |key: &str| {
        if values.len() <= SCANNED {
            values
                .iter()
                .position(|v| bytes::equal(v.as_bytes(), key.as_bytes()))
        } else {
            values.binary_search_by(|v| v.as_str().cmp(key)).ok()
        }
    };
    let mut keys = keys.into_iter();
    let violation = match criterion {
        Criterion::ContainsAnyOf => {
            (!keys.any(|k| position(k).is_some())).then_some(Violation::NoneOfValues)
        }
        Criterion::ContainsOtherThan => {
            let mut found = Vec::new();
            for key in keys {
                if position(key).is_none() {
                    return Verdict::Accepted;
                }
                found.push(key);
            }
            Some(Violation::OnlyValues(sorted(found)))
        }
        Criterion::DoesNotContainAnyOf => {
            let forbidden = sorted(keys.filter(|k| position(k).is_some()).collect());
            (!forbidden.is_empty()).then_some(Violation::Forbidden(forbidden))
        }
        Criterion::DoesNotContainOtherThan => {
            let unlisted = sorted(keys.filter(|k| position(k).is_none()).collect());
            (!unlisted.is_empty()).then_some(Violation::Unlisted(unlisted))
        }
        Criterion::ContainsAllOf | Criterion::DoesNotContainAllOf => {
            let mut present = vec![false; values.len()];
            for i in keys.filter_map(position) {
                present[i] = true;
            }
            if criterion == Criterion::DoesNotContainAllOf {
                present.iter().all(|&p| p).then_some(Violation::AllValues)
            } else {
                let missing: Vec<&str> = values
                    .iter()
                    .zip(&present)
                    .filter(|&(_, &p)| !p)
                    .map(|(v, _)| v.as_str())
                    .collect();
                (!missing.is_empty()).then_some(Violation::Missing(missing))
            }
        }
    };
    match violation {
        Some(violation) => Verdict::Rejected(violation),
        None => Verdict::Accepted,
    }
}

fn sorted(mut keys: Vec<&str>) -> Vec<&str> {
    keys.sort_unstable();
    keys.dedup();
    keys
}

/// The specification's formulas in plain set arithmetic, for tests and fuzz
/// targets to hold the evaluator to.
#[cfg(any(test, feature = "reference"))]
pub mod oracle {
    use std::collections::BTreeSet;

    use super::{Criterion, Violation};

    pub fn accepts(criterion: Criterion, k: &BTreeSet<String>, v: &BTreeSet<String>) -> bool {
        match criterion {
            Criterion::ContainsAnyOf => !k.is_disjoint(v),
            Criterion::DoesNotContainAnyOf => k.is_disjoint(v),
            Criterion::ContainsAllOf => v.is_subset(k),
            Criterion::DoesNotContainAllOf => !v.is_subset(k),
            Criterion::ContainsOtherThan => !k.is_subset(v),
            Criterion::DoesNotContainOtherThan => k.is_subset(v),
        }
    }

    /// What a rejection must report, sorted.
    pub fn violation<'a>(
        criterion: Criterion,
        k: &'a BTreeSet<String>,
        v: &'a BTreeSet<String>,
    ) -> Violation<'a> {
        let names = |set: Vec<&'a String>| set.into_iter().map(String::as_str).collect();
        match criterion {
            Criterion::ContainsAnyOf => Violation::NoneOfValues,
            Criterion::DoesNotContainAnyOf => {
                Violation::Forbidden(names(k.intersection(v).collect()))
            }
            Criterion::ContainsAllOf => Violation::Missing(names(v.difference(k).collect())),
            Criterion::DoesNotContainAllOf => Violation::AllValues,
            Criterion::ContainsOtherThan => Violation::OnlyValues(names(k.iter().collect())),
            Criterion::DoesNotContainOtherThan => {
                Violation::Unlisted(names(k.difference(v).collect()))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    use proptest::prelude::*;

    use Criterion::*;

    fn values(names: &[&str]) -> Vec<String> {
        let set: BTreeSet<String> = names.iter().map(|s| s.to_string()).collect();
        set.into_iter().collect()
    }

    fn accepted(criterion: Criterion, values: &[String], keys: &[&str]) -> bool {
        evaluate(criterion, values, keys.iter().copied()) == Verdict::Accepted
    }

    /// The specification's truth tables for `values: [a, b]`, all 48 cells.
    #[test]
    fn truth_tables() {
        const COLUMNS: [Criterion; 6] = [
            ContainsAnyOf,
            DoesNotContainAnyOf,
            ContainsAllOf,
            DoesNotContainAllOf,
            ContainsOtherThan,
            DoesNotContainOtherThan,
        ];
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
        let mut cells = 0;
        for (keys, expected) in rows {
            for (criterion, cell) in COLUMNS.into_iter().zip(expected.chars()) {
                assert_eq!(
                    accepted(criterion, &values, keys),
                    cell == 'A',
                    "{criterion} with annotations {keys:?}"
                );
                cells += 1;
            }
        }
        assert_eq!(cells, 48);
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

    proptest! {
        #[test]
        fn verdicts_and_messages_follow_set_arithmetic(
            criterion in criterion(),
            keys in proptest::collection::vec(name(), 0..12),
            // Up to 16 values: looked up one by one, and by binary search.
            wanted in proptest::collection::btree_set(name(), 1..16),
            shuffle_seed in any::<u64>(),
        ) {
            let k: BTreeSet<String> = keys.iter().cloned().collect();
            let v: Vec<String> = wanted.iter().cloned().collect();
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
    }
}
