//! The policy's decision, natively: `decide` and everything it reads. The
//! module (the root crate, a cdylib alone so that cargo builds it with LTO)
//! wraps it in waPC; the host and the fuzz targets call it and read its
//! tables directly.

pub mod annotation_key;
pub mod apparmor;
pub mod audit;
pub mod bytes;
pub mod controllers;
pub mod criterion;
pub mod evaluator;
pub mod existing_violations;
pub mod json;
pub mod kinds;
pub mod kubernetes_keys;
pub mod message;
pub mod pattern;
pub mod provenance;
pub mod quoting;
pub mod request;
pub mod response;
pub mod settings;
#[cfg(test)]
pub mod test_support;
pub mod values;

use evaluator::Verdict;

/// The policy's whole decision on a `validate` payload: `Err` holds the
/// rejection message.
pub fn decide(payload: &[u8]) -> Result<(), String> {
    let payload_text = payload;
    let payload = request::decode(payload)?;
    // A deletion has nothing to judge, and must never be blocked.
    let Some(object) = payload.object else {
        return Ok(());
    };
    if payload.operation.as_deref() == Some("DELETE") {
        return Ok(());
    }
    let update = payload.operation.as_deref() == Some("UPDATE");
    let provenance = provenance::Request::new(
        payload_text,
        payload.old_object.filter(|_| update),
        object.kind.as_deref(),
    );
    settings::with_cached(payload.settings.unwrap_or(b"null"), |settings| {
        let settings = settings.map_err(str::to_owned)?;
        let Verdict::Rejected(violation) = settings.judge(object.keys(), &provenance) else {
            return Ok(());
        };
        // Only now is the old object read, and only for an update.
        if let Some(old_object) = payload.old_object
            && settings.allow_existing_violations
            && update
            && existing_violations::excused(settings, &violation, old_object, &provenance)
        {
            return Ok(());
        }
        Err(message::rejection(
            &object.subject(),
            settings.values.all(),
            &violation,
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn payload(settings: &str, object: &str) -> String {
        format!(r#"{{"settings":{settings},"request":{{"operation":"CREATE","object":{object}}}}}"#)
    }

    const REQUIRE_OWNER: &str = r#"{"criteria":"containsAllOf","values":["owner"]}"#;

    #[test]
    fn accepts_and_rejects_by_the_settings() {
        let with_owner = r#"{"kind":"Pod","metadata":{"name":"p","annotations":{"owner":"me"}}}"#;
        let without = r#"{"kind":"Pod","metadata":{"name":"p","annotations":{"other":"me"}}}"#;
        assert_eq!(
            decide(payload(REQUIRE_OWNER, with_owner).as_bytes()),
            Ok(())
        );
        assert_eq!(
            decide(payload(REQUIRE_OWNER, without).as_bytes()),
            Err(r#"Pod "p" lacks required annotations; add "owner""#.to_string())
        );
    }

    #[test]
    fn deletions_are_accepted() {
        let delete = format!(
            r#"{{"settings":{REQUIRE_OWNER},"request":{{"operation":"DELETE","object":null,"oldObject":{{"kind":"Pod"}}}}}}"#
        );
        assert_eq!(decide(delete.as_bytes()), Ok(()));
        let delete_with_object = format!(
            r#"{{"settings":{REQUIRE_OWNER},"request":{{"operation":"DELETE","object":{{"kind":"Pod"}}}}}}"#
        );
        assert_eq!(decide(delete_with_object.as_bytes()), Ok(()));
    }

    /// An update of `old` keys to `new` keys, under `settings`.
    fn update(settings: &str, operation: &str, old: Option<&[&str]>, new: &[&str]) -> String {
        let object = |keys: &[&str]| {
            let annotations: serde_json::Map<_, _> =
                keys.iter().map(|k| (k.to_string(), "v".into())).collect();
            serde_json::json!({"kind": "ReplicaSet", "metadata": {"name": "rs", "annotations": annotations}})
        };
        let request = serde_json::json!({
            "operation": operation,
            "object": object(new),
            "oldObject": old.map(object),
        });
        format!(r#"{{"request":{request},"settings":{settings}}}"#)
    }

    #[test]
    fn an_update_may_keep_the_faults_its_old_object_had() {
        let owner = r#"{"criteria":"containsAllOf","values":["owner"]}"#;
        let strict =
            r#"{"criteria":"containsAllOf","values":["owner"],"allowExistingViolations":false}"#;
        let lacks = Err(r#"ReplicaSet "rs" lacks required annotations; add "owner""#.to_string());
        let decide = |payload: String| decide(payload.as_bytes());
        // Kept fault: accepted, unless the settings turn it off.
        assert_eq!(
            decide(update(owner, "UPDATE", Some(&["a"][..]), &["b"])),
            Ok(())
        );
        assert_eq!(
            decide(update(strict, "UPDATE", Some(&["a"][..]), &["b"])),
            lacks
        );
        // New fault: rejected, and the message names the object's faults.
        assert_eq!(
            decide(update(owner, "UPDATE", Some(&["owner"][..]), &["b"])),
            lacks
        );
        // A CREATE, and an UPDATE without an old object, are judged alone.
        assert_eq!(
            decide(update(owner, "CREATE", Some(&["a"][..]), &["b"])),
            lacks
        );
        assert_eq!(decide(update(owner, "UPDATE", None, &["b"])), lacks);
        let strict_too =
            r#"{"criteria":"containsAllOf","values":["owner"],"allowExistingViolations":true}"#;
        assert_eq!(
            decide(update(strict_too, "UPDATE", Some(&[][..]), &[])),
            Ok(())
        );
    }

    #[test]
    fn invalid_settings_reject_with_the_settings_message() {
        let bad = r#"{"criteria":"containsAllOf","values":[]}"#;
        let error = decide(payload(bad, "{}").as_bytes()).unwrap_err();
        assert!(error.contains("`values` is empty"), "{error}");
        let error = decide(br#"{"request":{"object":{}}}"#).unwrap_err();
        assert!(error.contains("invalid settings"), "{error}");
    }

    /// Keys from `regex`, and now and then one Kubernetes writes itself.
    fn kubernetes_or(regex: &'static str) -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::strategy::Strategy;
        let kubernetes = [
            "kubernetes.io/limit-ranger",
            "deployment.kubernetes.io/revision",
            "kubernetes.io/config.mirror",
            "batch.kubernetes.io/job-completion-index",
        ];
        proptest::prop_oneof![
            4 => proptest::string::string_regex(regex).expect("a regex"),
            1 => proptest::sample::select(kubernetes.to_vec()).prop_map(String::from),
        ]
    }

    use proptest::strategy::Strategy;
    use provenance::oracle::MadeBy;

    /// Keys that count only where their one writer could have written them.
    const WRITTEN_BY_ONE: [&str; 4] = [
        "kubernetes.io/config.mirror",
        "kubernetes.io/config.hash",
        "batch.kubernetes.io/job-completion-index",
        "batch.kubernetes.io/job-index-failure-count",
    ];

    /// What made the Pod, as its fields say (its owner references and the
    /// node it is bound to), and what the oracle reads of them: a mirror
    /// Pod and a Job's Pod, and forged or partial twins of each.
    const MADE_BY: [(&str, Option<&str>, Option<MadeBy>); 7] = [
        ("null", None, None),
        (
            r#"[{"apiVersion":"v1","kind":"Node","name":"n1","uid":"u","controller":true}]"#,
            Some("n1"),
            Some(MadeBy::ItsNode),
        ),
        (
            r#"[{"apiVersion":"v1","kind":"Node","name":"n1","uid":"u","controller":true}]"#,
            Some("n2"),
            None,
        ),
        (
            r#"[{"apiVersion":"v1","kind":"Node","name":"n1","uid":"u"}]"#,
            Some("n1"),
            None,
        ),
        (
            r#"[{"apiVersion":"batch/v1","kind":"Job","name":"j","uid":"u","controller":true}]"#,
            None,
            Some(MadeBy::Controller("batch", "Job")),
        ),
        (
            r#"[{"apiVersion":"example.com/v1","kind":"Job","name":"j","uid":"u","controller":true}]"#,
            None,
            Some(MadeBy::Controller("example.com", "Job")),
        ),
        (
            r#"[{"apiVersion":"batch/v1","kind":"Job","name":"j","uid":"u","controller":false}]"#,
            None,
            None,
        ),
    ];

    /// One drawn case of the whole decision, and the oracle's answer to it.
    struct Case {
        criterion: criterion::Criterion,
        keys: std::collections::BTreeSet<String>,
        values: std::collections::BTreeSet<String>,
        /// The old object's keys, for an UPDATE; `None` for a CREATE
        /// without one, as the audit scanner sends (`oldObject: null`).
        old: Option<std::collections::BTreeSet<String>>,
        update: bool,
        allow: Option<bool>,
        allow_kubernetes: Option<bool>,
        /// `None`: `userInfo: {}`, as the audit scanner sends.
        username: Option<&'static str>,
        made: usize,
    }

    fn follows_the_formulas(case: Case) -> Result<(), proptest::test_runner::TestCaseError> {
        use evaluator::oracle;
        use kubernetes_keys::Bookkeeping;
        use provenance::oracle::Sender;
        use std::collections::BTreeSet;
        let Case {
            criterion,
            keys,
            values,
            old,
            update,
            allow,
            allow_kubernetes,
            username,
            made,
        } = case;
        let (owners, node, made_by) = MADE_BY[made];
        let object = |keys: &BTreeSet<String>| {
            let annotations: serde_json::Map<String, serde_json::Value> =
                keys.iter().map(|k| (k.clone(), "v".into())).collect();
            let owners: serde_json::Value = serde_json::from_str(owners).unwrap();
            serde_json::json!({
                "kind": "Pod",
                "metadata": {"name": "p", "annotations": annotations, "ownerReferences": owners},
                "spec": {"nodeName": node},
            })
        };
        use crate::settings::Field;
        let mut settings = serde_json::json!({
            (Field::Criteria.name()): criterion.name(),
            (Field::Values.name()): values,
        });
        if let Some(allow) = allow {
            settings[Field::AllowExistingViolations.name()] = allow.into();
        }
        if let Some(allow) = allow_kubernetes {
            settings[Field::AllowKubernetesBookkeeping.name()] = allow.into();
        }
        let bookkeeping = match allow_kubernetes {
            Some(false) => Bookkeeping::Judged,
            Some(true) | None => Bookkeeping::Listed,
        };
        let operation = if update { "UPDATE" } else { "CREATE" };
        let user_info = username.map_or(
            serde_json::json!({}),
            |name| serde_json::json!({"username": name}),
        );
        let payload = serde_json::json!({
            "settings": settings,
            "request": {
                "operation": operation,
                "userInfo": user_info,
                "object": object(&keys),
                "oldObject": old.as_ref().map(object),
            }
        });
        let verdict = decide(payload.to_string().as_bytes());
        let (k, v) = (&keys, &values);
        let earlier = old.clone().filter(|_| update);
        let sender = Sender {
            username: username.map(String::from),
            earlier,
            made_by,
        };
        let excused = old.as_ref().filter(|_| update).is_some_and(|old| {
            let before = sender.for_old(old);
            allow != Some(false)
                && oracle::excused(criterion, old, k, v, bookkeeping, &sender, &before)
        });
        if oracle::accepts(criterion, k, v, bookkeeping, &sender) || excused {
            proptest::prop_assert_eq!(verdict, Ok(()));
        } else {
            let subject = message::Subject {
                kind: Some("Pod"),
                name: Some("p"),
                namespace: None,
            };
            let values: Vec<String> = v.iter().cloned().collect();
            let expected = message::rejection(
                &subject,
                &values,
                &oracle::violation(criterion, k, v, bookkeeping, &sender),
            );
            proptest::prop_assert_eq!(verdict, Err(expected));
        }
        Ok(())
    }

    proptest::proptest! {
        /// Through the whole decision: random keys (any text, so escapes and
        /// invalid names too, and Kubernetes' own) against random valid
        /// values, exact or patterns, updated from random old keys.
        #[test]
        fn verdicts_and_messages_follow_the_formulas(
            criterion in proptest::sample::select(criterion::Criterion::ALL.to_vec()),
            keys in proptest::collection::btree_set(kubernetes_or("[abc]|.{0,6}"), 0..8),
            values in proptest::collection::btree_set(
                proptest::prop_oneof![3 => "[abcd]", 1 => "[ab]?\\*"], 1..4),
            old in proptest::option::of(proptest::collection::btree_set(kubernetes_or("[abc]"), 0..4)),
            allow in proptest::option::of(proptest::bool::ANY),
            allow_kubernetes in proptest::option::of(proptest::bool::ANY),
            username in proptest::option::of(proptest::sample::select(vec![
                "jane",
                "",
                "system:node:n1",
                "system:serviceaccount:kube-system:job-controller",
                "system:kube-controller-manager",
            ])),
            made in 0..MADE_BY.len(),
        ) {
            follows_the_formulas(Case {
                criterion, keys, values, old, update: true, allow, allow_kubernetes, username, made,
            })?;
        }

        /// Audits, as the audit scanner sends them (a CREATE with no sender
        /// and no old object), of Pods made every way `MADE_BY` lists, with
        /// the kubelet's and the job controller's keys drawn often.
        #[test]
        fn audits_follow_the_formulas(
            criterion in proptest::sample::select(criterion::Criterion::ALL.to_vec()),
            keys in proptest::collection::btree_set(
                proptest::prop_oneof![1 => "[ab]", 2 => proptest::sample::select(WRITTEN_BY_ONE.to_vec()).prop_map(String::from)],
                0..5),
            values in proptest::collection::btree_set("[abc]", 1..3),
            allow_kubernetes in proptest::option::of(proptest::bool::ANY),
            username in proptest::sample::select(vec![None, Some("")]),
            made in 0..MADE_BY.len(),
        ) {
            follows_the_formulas(Case {
                criterion, keys, values, old: None, update: false, allow: None, allow_kubernetes, username, made,
            })?;
        }
    }

    #[test]
    fn malformed_requests_are_rejected_not_panicking() {
        let error = decide(b"\xff\xfe").unwrap_err();
        assert!(error.starts_with("malformed request"), "{error}");
    }
}
