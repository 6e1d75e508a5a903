//! Random annotation maps and settings, serialised as a real request: the
//! verdict must be the criterion's formula (values may be patterns), a
//! rejection must name exactly the keys or values at fault, and an update
//! must pass exactly when it keeps only faults its old object had; keys that
//! Kubernetes writes itself count as listed unless the settings say not, and
//! those that name their writer only where that writer could have sent them.
#![no_main]

use std::collections::BTreeSet;

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use policy_core::criterion::Criterion;
use policy_core::evaluator::oracle;
use policy_core::kubernetes_keys::Bookkeeping;
use policy_core::message::{Subject, rejection};
use policy_core::provenance::oracle::Sender;
use serde_json::{Map, Value, json};

#[derive(Arbitrary, Debug)]
struct Case {
    criterion: u8,
    keys: Vec<Name>,
    values: Vec<Name>,
    operation: Operation,
    old_keys: Option<Vec<Name>>,
    allow_existing_violations: Option<bool>,
    allow_kubernetes_bookkeeping: Option<bool>,
    sender: Option<u8>,
}

/// Who sends the request: a user, a node, the job controller.
const SENDERS: [&str; 4] = [
    "jane",
    "system:node:n1",
    "system:serviceaccount:kube-system:job-controller",
    "system:kube-controller-manager",
];

#[derive(Arbitrary, Debug, PartialEq)]
enum Operation {
    Create,
    Update,
    Delete,
}

/// Mostly names from a small pool, so that sets overlap; sometimes anything.
#[derive(Arbitrary, Debug)]
enum Name {
    Pool(u8),
    Any(String),
}

impl Name {
    fn text(&self) -> String {
        const POOL: [&str; 16] = [
            "a",
            "b",
            "example.com/owner",
            "Example.com/Owner",
            "c-d",
            "x_y",
            "example.com/*",
            "*",
            "a*",
            "*.com/*",
            "kubernetes.io/limit-ranger",
            "kubectl.kubernetes.io/*",
            "deprecated.daemonset.template.generation",
            "kubernetes.io/limit-rangers",
            "kubernetes.io/config.mirror",
            "batch.kubernetes.io/job-completion-index",
        ];
        match self {
            Name::Pool(i) => POOL[usize::from(*i) % POOL.len()].to_string(),
            Name::Any(s) => s.clone(),
        }
    }
}

fn annotations(keys: &BTreeSet<String>) -> Map<String, Value> {
    keys.iter().map(|key| (key.clone(), json!("v"))).collect()
}

fuzz_target!(|case: Case| {
    let criterion = Criterion::ALL[usize::from(case.criterion) % Criterion::ALL.len()];
    let k: BTreeSet<String> = case.keys.iter().map(Name::text).collect();
    let v: BTreeSet<String> = case.values.iter().map(Name::text).collect();
    let old: Option<BTreeSet<String>> = case
        .old_keys
        .as_ref()
        .map(|keys| keys.iter().map(Name::text).collect());
    // The oracle's matcher is exponential in the stars: keep its work small.
    let has_patterns = v.iter().any(|value| value.contains('*'));
    if v.iter().any(|value| value.matches('*').count() > 3)
        || (has_patterns
            && k.iter()
                .chain(old.iter().flatten())
                .any(|key| key.len() > 128))
    {
        return;
    }
    let mut settings = json!({
        "criteria": criterion.name(),
        "values": case.values.iter().map(Name::text).collect::<Vec<_>>(),
    });
    if let Some(allow) = case.allow_existing_violations {
        settings["allowExistingViolations"] = json!(allow);
    }
    if let Some(allow) = case.allow_kubernetes_bookkeeping {
        settings["allowKubernetesBookkeeping"] = json!(allow);
    }
    let bookkeeping = match case.allow_kubernetes_bookkeeping {
        Some(false) => Bookkeeping::Judged,
        Some(true) | None => Bookkeeping::Listed,
    };
    let object = |keys: &BTreeSet<String>| json!({"kind": "Pod", "metadata": {"name": "p", "annotations": annotations(keys)}});
    let (operation, new_object) = match case.operation {
        Operation::Create => ("CREATE", object(&k)),
        Operation::Update => ("UPDATE", object(&k)),
        Operation::Delete => ("DELETE", Value::Null),
    };
    let username = case.sender.map(|i| SENDERS[usize::from(i) % SENDERS.len()]);
    let mut payload = json!({
        "settings": settings,
        "request": {
            "operation": operation,
            "object": new_object,
            "oldObject": old.as_ref().map(object),
        }
    });
    if let Some(username) = username {
        payload["request"]["userInfo"] = json!({"username": username});
    }
    let sender = Sender {
        username: username.map(String::from),
        earlier: old.clone().filter(|_| case.operation == Operation::Update),
        // The Pods drawn here name no owner and no node.
        made_by: None,
    };
    let verdict = policy_core::decide(payload.to_string().as_bytes());
    if case.operation == Operation::Delete {
        assert_eq!(verdict, Ok(()));
        return;
    }
    let settings_valid = !v.is_empty()
        && v.iter()
            .all(|value| policy_core::pattern::check(value).is_ok());
    if !settings_valid {
        assert!(verdict.unwrap_err().starts_with("invalid settings"));
        return;
    }
    let excused = || {
        let Some(old) = &old else { return false };
        case.operation == Operation::Update
            && case.allow_existing_violations != Some(false)
            && oracle::excused(
                criterion,
                old,
                &k,
                &v,
                bookkeeping,
                &sender,
                &sender.for_old(old),
            )
    };
    let expected = oracle::accepts(criterion, &k, &v, bookkeeping, &sender) || excused();
    assert_eq!(
        verdict.is_ok(),
        expected,
        "{criterion} K={k:?} V={v:?} old={old:?}: {verdict:?}"
    );
    if let Err(message) = verdict {
        let values: Vec<String> = v.iter().cloned().collect();
        let subject = Subject {
            kind: Some("Pod"),
            name: Some("p"),
            namespace: None,
        };
        let violation = oracle::violation(criterion, &k, &v, bookkeeping, &sender);
        assert_eq!(message, rejection(&subject, &values, &violation));
    }
});
