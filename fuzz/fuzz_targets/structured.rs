//! Random annotation maps and settings, serialised as a real request: the
//! verdict must be the criterion's set formula, and a rejection must name
//! exactly the offending keys.
#![no_main]

use std::collections::BTreeSet;

use annotations_policy::criterion::Criterion;
use annotations_policy::evaluator::oracle;
use annotations_policy::message::{Subject, rejection};
use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use serde_json::{Map, Value, json};

#[derive(Arbitrary, Debug)]
struct Case {
    criterion: u8,
    keys: Vec<Name>,
    values: Vec<Name>,
    deleted: bool,
}

/// Mostly names from a small pool, so that sets overlap; sometimes anything.
#[derive(Arbitrary, Debug)]
enum Name {
    Pool(u8),
    Any(String),
}

impl Name {
    fn text(&self) -> String {
        const POOL: [&str; 6] = ["a", "b", "example.com/owner", "Example.com/Owner", "c-d", "x_y"];
        match self {
            Name::Pool(i) => POOL[usize::from(*i) % POOL.len()].to_string(),
            Name::Any(s) => s.clone(),
        }
    }
}

fuzz_target!(|case: Case| {
    let criterion = Criterion::ALL[usize::from(case.criterion) % 6];
    let k: BTreeSet<String> = case.keys.iter().map(Name::text).collect();
    let v: BTreeSet<String> = case.values.iter().map(Name::text).collect();
    let annotations: Map<String, Value> = k.iter().map(|key| (key.clone(), json!("v"))).collect();
    let payload = json!({
        "settings": {"criteria": criterion.name(), "values": case.values.iter().map(Name::text).collect::<Vec<_>>()},
        "request": {
            "operation": if case.deleted { "DELETE" } else { "CREATE" },
            "object": if case.deleted { Value::Null } else {
                json!({"kind": "Pod", "metadata": {"name": "p", "annotations": annotations}})
            },
        }
    });
    let verdict = annotations_policy::decide(payload.to_string().as_bytes());
    if case.deleted {
        assert_eq!(verdict, Ok(()));
        return;
    }
    let settings_valid = !v.is_empty()
        && v.iter().all(|value| annotations_policy::annotation_key::check(value).is_ok());
    if !settings_valid {
        assert!(verdict.unwrap_err().starts_with("invalid settings"));
        return;
    }
    let expected = oracle::accepts(criterion, &k, &v);
    assert_eq!(verdict.is_ok(), expected, "{criterion} K={k:?} V={v:?}: {verdict:?}");
    if let Err(message) = verdict {
        let values: Vec<String> = v.iter().cloned().collect();
        let subject = Subject { kind: Some("Pod"), name: Some("p"), namespace: None };
        let violation = oracle::violation(criterion, &k, &v);
        assert_eq!(message, rejection(&subject, &values, &violation));
    }
});
