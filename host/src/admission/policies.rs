//! Which objects a policy judges, and with what: the `rules`, selectors,
//! `matchConditions` and settings of a ClusterAdmissionPolicy or
//! AdmissionPolicy manifest, the members and `expression` of a policy group,
//! or, without a manifest, the rules in the module's Kubewarden metadata.

use std::collections::BTreeSet;
use std::time::Duration;

use policy_evaluator::Limits;
use policy_evaluator::metadata::Resource;
use serde_json::Value;

use super::conditions::{self, Condition};
use super::rules::Rule;
use super::selectors::{NAME_LABEL, Namespaces, Selector};
use policy_evaluator::Policy as Instance;
use policy_evaluator::group::{Expression, Judging};
use policy_evaluator::kinds::Addressed;

/// What a policy judges with: one module's settings, or a group's members
/// combined by its expression.
#[derive(Debug, Clone)]
pub enum Judge {
    Single {
        settings: Value,
    },
    Group {
        members: Vec<(String, Value)>,
        expression: Expression,
        message: String,
    },
}

/// A policy as the check applies it.
#[derive(Debug, Clone)]
pub struct Policy {
    pub name: String,
    /// `monitor` or `protect`.
    pub mode: String,
    /// `None`: every object (no manifest, no annotated module).
    pub rules: Option<Vec<Rule>>,
    namespace_selector: Option<Selector>,
    object_selector: Option<Selector>,
    /// An AdmissionPolicy's own namespace.
    namespace: Option<String>,
    /// `spec.backgroundAudit` (true unless the manifest says otherwise).
    background_audit: bool,
    /// `spec.matchConditions`, which the API server evaluates first.
    conditions: Vec<Condition>,
    pub judge: Judge,
    /// `spec.mutating`: whether policy-server lets it change an object
    /// (`kwctl run` of a module does).
    pub mutating: bool,
    /// The kinds it may look up: a ClusterAdmissionPolicy's
    /// `spec.contextAwareResources`; none for an AdmissionPolicy, which
    /// policy-server never lets look up.
    pub context_aware_resources: BTreeSet<Resource>,
    /// `timeoutEvalSeconds` of the policy, or of each member of a group in
    /// name order: its own deadline instead of `--policy-timeout`.
    pub timeouts: Vec<Option<Duration>>,
}

/// Whether a policy judges an object, and if it cannot tell, why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    In,
    /// Left out, by what: its rules, its namespace, a selector.
    Out(&'static str),
    /// A selector names labels the check cannot know (a namespace's labels
    /// other than its name): the object is judged, with this warning.
    Assumed(String),
}

impl Policy {
    /// A policy without a manifest: the module's own rules (or every
    /// object), with settings from the command line.
    pub fn from_settings(settings: Value, rules: Option<Vec<Rule>>) -> Policy {
        Policy {
            name: "the policy".to_string(),
            mode: "protect".to_string(),
            rules,
            namespace_selector: None,
            object_selector: None,
            namespace: None,
            background_audit: true,
            conditions: Vec::new(),
            judge: Judge::Single { settings },
            mutating: true,
            context_aware_resources: BTreeSet::new(),
            timeouts: vec![None],
        }
    }

    /// What bounds each call of its `member`'s instance: its own
    /// `timeoutEvalSeconds`, or the run's deadline (`--policy-timeout`);
    /// none at all with `--disable-timeout-protection`, which stops
    /// policy-server's clock for every policy.
    pub fn limits(&self, member: usize, run: &Limits) -> Limits {
        let own = self.timeouts.get(member).copied().flatten();
        Limits {
            timeout: run.timeout.map(|timeout| own.unwrap_or(timeout)),
            memory: run.memory,
        }
    }

    /// The name of the webhook configuration Kubewarden registers for it,
    /// by which the API server orders mutating webhooks
    /// (kubewarden-controller 1.35, each kind's `GetUniqueName`).
    pub fn webhook(&self) -> String {
        let group = match self.judge {
            Judge::Single { .. } => "",
            Judge::Group { .. } => "group-",
        };
        match &self.namespace {
            None => format!("clusterwide-{group}{}", self.name),
            Some(namespace) => format!("namespaced-{group}{namespace}-{}", self.name),
        }
    }

    /// Why Kubewarden's audit scanner will report nothing of this policy,
    /// if it will not (adm-controller 1.35,
    /// `internal/audit-scanner/policies/client.go`): `backgroundAudit:
    /// false`, or no rule left once the scanner drops each rule with `*` in
    /// its groups, versions or resources and each whose operations do not
    /// name `CREATE` itself.
    pub fn unaudited(&self) -> Option<String> {
        let reason = if !self.background_audit {
            "it sets `backgroundAudit: false`"
        } else if self
            .rules
            .as_ref()
            .is_some_and(|rules| !rules.iter().any(Rule::audited))
        {
            "the audit scanner skips each of its rules (a rule with `*` in its \
             apiGroups, apiVersions or resources, or without `CREATE` in its operations)"
        } else {
            return None;
        };
        Some(format!(
            "{}: {reason}, so its audit will report nothing of the objects a cluster holds",
            self.name
        ))
    }

    /// What judges for this policy, each member's settings validated by
    /// `instance`.
    pub fn judging(&self, instance: &Instance) -> Result<Judging, String> {
        self.judging_each(&|_| instance)
    }

    /// As [`Policy::judging`], each member of a group on its own module's
    /// instance (`instance(i)`, members in name order).
    pub fn judging_each<'a>(
        &self,
        instance: &dyn Fn(usize) -> &'a Instance,
    ) -> Result<Judging, String> {
        match &self.judge {
            Judge::Single { settings } => Judging::new_each(
                instance,
                &self.name,
                &[(self.name.clone(), settings.clone())],
                None,
                self.mutating,
            ),
            Judge::Group {
                members,
                expression,
                message,
            } => Judging::new_each(
                instance,
                &self.name,
                members,
                Some((expression, message)),
                false,
            ),
        }
    }

    /// A ClusterAdmissionPolicy, AdmissionPolicy or either policy group.
    pub fn from_manifest(manifest: &Value) -> Result<Policy, String> {
        let kind = manifest["kind"].as_str().unwrap_or_default();
        let spec = &manifest["spec"];
        let name = manifest_name(manifest);
        let judge = match Declared::read(manifest)? {
            Declared::Policy(settings) => Judge::Single { settings },
            Declared::Group(members) => {
                let text = spec["expression"]
                    .as_str()
                    .ok_or_else(|| format!("{kind} {name} has no `spec.expression`"))?;
                let names: Vec<&str> = members.iter().map(|(n, _)| n.as_str()).collect();
                let expression = Expression::parse(text, &names)
                    .map_err(|e| format!("{kind} {name}: `spec.expression`: {e}"))?;
                Judge::Group {
                    members,
                    expression,
                    message: spec["message"].as_str().unwrap_or_default().to_string(),
                }
            }
        };
        let rules = spec["rules"]
            .as_array()
            .ok_or_else(|| format!("{kind} {name} has no `spec.rules`"))?
            .iter()
            .map(Rule::from_json)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| format!("{kind} {name}: a rule: {e}"))?;
        let selector = |field: &str| match &spec[field] {
            Value::Null => None,
            selector => Some(Selector(selector.clone())),
        };
        let namespace = match kind {
            "AdmissionPolicy" | "AdmissionPolicyGroup" => Some(
                manifest["metadata"]["namespace"]
                    .as_str()
                    .unwrap_or("default")
                    .to_string(),
            ),
            _ => None,
        };
        let conditions = conditions::read(spec).map_err(|e| format!("{kind} {name}: {e}"))?;
        let context_aware_resources = match (kind, &spec["contextAwareResources"]) {
            ("ClusterAdmissionPolicy", Value::Array(resources)) => resources
                .iter()
                .map(|resource| serde_json::from_value::<Resource>(resource.clone()))
                .collect::<Result<BTreeSet<_>, _>>()
                .map_err(|e| format!("{kind} {name}: `spec.contextAwareResources`: {e}"))?,
            (_, Value::Null) => BTreeSet::new(),
            ("ClusterAdmissionPolicy", _) => {
                return Err(format!(
                    "{kind} {name}: `spec.contextAwareResources` is not a list"
                ));
            }
            (_, _) => {
                return Err(format!(
                    "{kind} {name}: `spec.contextAwareResources` is a ClusterAdmissionPolicy's field: policy-server lets no {kind} look up the cluster"
                ));
            }
        };
        let timeouts = match &judge {
            Judge::Single { .. } => vec![
                timeout(&spec["timeoutEvalSeconds"])
                    .map_err(|e| format!("{kind} {name}: `spec.timeoutEvalSeconds` {e}"))?,
            ],
            Judge::Group { members, .. } => members
                .iter()
                .map(|(member, _)| {
                    timeout(&spec["policies"][member]["timeoutEvalSeconds"]).map_err(|e| {
                        format!("{kind} {name}: `spec.policies.{member}.timeoutEvalSeconds` {e}")
                    })
                })
                .collect::<Result<_, _>>()?,
        };
        let mutating = match &spec["mutating"] {
            Value::Null => false,
            Value::Bool(mutating) => *mutating,
            _ => {
                return Err(format!(
                    "{kind} {name}: `spec.mutating` is not true or false"
                ));
            }
        };
        Ok(Policy {
            name,
            mode: spec["mode"].as_str().unwrap_or("protect").to_string(),
            rules: Some(rules),
            namespace_selector: selector("namespaceSelector"),
            object_selector: selector("objectSelector"),
            namespace,
            background_audit: spec["backgroundAudit"].as_bool().unwrap_or(true),
            conditions,
            judge,
            mutating,
            context_aware_resources,
            timeouts,
        })
    }

    /// Whether the audit scanner sends the objects of a `resource` in
    /// `group` and `version` to the policy at all: the policy is audited,
    /// and one of the rules the scanner keeps names the resource.
    pub fn audits(&self, group: &str, version: &str, resource: &str) -> bool {
        self.unaudited().is_none()
            && self.rules.as_ref().is_none_or(|rules| {
                rules
                    .iter()
                    .any(|rule| rule.audited() && rule.covers("CREATE", group, version, resource))
            })
    }

    /// Whether the policy's rules and selectors take an `operation` of
    /// `object` (the new object, or the old one of a DELETE); its
    /// `matchConditions` are [`Policy::unmet_condition`]'s.
    pub fn scope(
        &self,
        object: &Value,
        old: Option<&Value>,
        operation: &str,
        addressed: &Addressed,
        namespaces: &Namespaces,
    ) -> Scope {
        let Addressed {
            group,
            version,
            resource,
            ..
        } = addressed;
        if let Some(rules) = &self.rules
            && !rules
                .iter()
                .any(|rule| rule.covers(operation, group, version, resource))
        {
            return Scope::Out("its rules do not name it");
        }
        let kind = object["kind"].as_str().unwrap_or_default();
        // The object as admitted: a namespace exactly where its kind has one.
        let namespace = object["metadata"]["namespace"].as_str();
        if let Some(own) = &self.namespace
            && namespace != Some(own.as_str())
        {
            return Scope::Out("it is in another namespace than the AdmissionPolicy");
        }
        let mut scope = Scope::In;
        // An UPDATE is sent when the old object or the new one matches
        // (`ValidatingWebhook.objectSelector`).
        if let Some(selector) = &self.object_selector {
            let matches = |object: &Value| {
                let labels = object["metadata"]["labels"]
                    .as_object()
                    .cloned()
                    .unwrap_or_default();
                selector.matches(&labels, &[]) != Some(false)
            };
            if !matches(object) && !old.is_some_and(matches) {
                return Scope::Out("its objectSelector does not match the object's labels");
            }
        }
        // A namespace selector applies to namespaced objects and to
        // Namespaces.
        let namespace = match kind {
            "Namespace" => object["metadata"]["name"].as_str(),
            _ => namespace,
        };
        if let (Some(selector), Some(namespace)) = (&self.namespace_selector, namespace) {
            // A Namespace of the input brings all its labels; of any other,
            // only the name label the API server sets is known.
            let (labels, known) = match namespaces.get(namespace) {
                Some(labels) => (labels.clone(), &[][..]),
                None => {
                    let mut labels = serde_json::Map::new();
                    labels.insert(NAME_LABEL.to_string(), namespace.into());
                    (labels, &[NAME_LABEL][..])
                }
            };
            match selector.matches(&labels, known) {
                Some(false) => {
                    return Scope::Out(
                        "its namespaceSelector does not match the namespace's labels",
                    );
                }
                Some(true) => {}
                None => {
                    scope = Scope::Assumed(format!(
                        "{}'s namespaceSelector names namespace labels other than {NAME_LABEL}, \
                         which the check knows only of the Namespaces in its input: it judges \
                         objects in every other namespace",
                        self.name
                    ))
                }
            }
        }
        scope
    }

    /// The first of the policy's `matchConditions` that `request` does not
    /// meet (the API server then skips the policy); `Err` when one cannot
    /// be evaluated.
    pub fn unmet_condition(&self, request: &Value) -> Result<Option<String>, String> {
        conditions::first_unmet(&self.conditions, request)
            .map_err(|e| format!("{}: {e}", self.name))
    }
}

/// The policies a Kubewarden manifest declares, each with its settings
/// (`{}` where the manifest gives none): what `check` applies and the
/// runner's `manifest` validates.
#[derive(Debug, Clone, PartialEq)]
pub enum Declared {
    /// A ClusterAdmissionPolicy's or AdmissionPolicy's settings.
    Policy(Value),
    /// A policy group's members, by name.
    Group(Vec<(String, Value)>),
}

impl Declared {
    pub fn read(manifest: &Value) -> Result<Declared, String> {
        let kind = manifest["kind"].as_str().unwrap_or_default();
        let spec = &manifest["spec"];
        let settings = |policy: &Value| match &policy["settings"] {
            Value::Null => Value::Object(Default::default()),
            settings => settings.clone(),
        };
        match kind {
            "ClusterAdmissionPolicy" | "AdmissionPolicy" => Ok(Declared::Policy(settings(spec))),
            "ClusterAdmissionPolicyGroup" | "AdmissionPolicyGroup" => {
                let members = spec["policies"].as_object().ok_or_else(|| {
                    format!("{kind} {} has no `spec.policies`", manifest_name(manifest))
                })?;
                Ok(Declared::Group(
                    members
                        .iter()
                        .map(|(member, policy)| (member.clone(), settings(policy)))
                        .collect(),
                ))
            }
            other => Err(format!(
                "not a Kubewarden policy manifest (kind {other:?}); expected a \
                 ClusterAdmissionPolicy, AdmissionPolicy, ClusterAdmissionPolicyGroup or \
                 AdmissionPolicyGroup"
            )),
        }
    }
}

/// A `timeoutEvalSeconds`: none, or whole seconds from 2 to 30, which is
/// all Kubewarden's CRDs let the API server store.
fn timeout(field: &Value) -> Result<Option<Duration>, String> {
    match field {
        Value::Null => Ok(None),
        Value::Number(n) => match n.as_u64() {
            Some(seconds @ 2..=30) => Ok(Some(Duration::from_secs(seconds))),
            _ => Err(format!(
                "is {n}: Kubewarden's CRD takes whole seconds from 2 to 30"
            )),
        },
        other => Err(format!("is {other}, not a number of seconds")),
    }
}

/// A manifest's `metadata.name`, or its kind when it has none.
pub fn manifest_name(manifest: &Value) -> String {
    let kind = manifest["kind"].as_str().unwrap_or_default();
    manifest["metadata"]["name"]
        .as_str()
        .unwrap_or(kind)
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::admission::selectors::namespaces_of;
    use serde_json::json;

    fn pods() -> Addressed<'static> {
        Addressed {
            group: "",
            version: "v1",
            kind: "Pod",
            resource: "pods".to_string(),
        }
    }

    fn pod(namespace: &str, labels: Value) -> Value {
        json!({"kind": "Pod", "metadata": {"name": "p", "namespace": namespace, "labels": labels}})
    }

    fn policy(spec: Value) -> Policy {
        Policy::from_manifest(&json!({
            "kind": "ClusterAdmissionPolicy",
            "metadata": {"name": "p"},
            "spec": spec,
        }))
        .unwrap()
    }

    #[test]
    fn rules_cover_what_they_name_for_creations() {
        let rule = Rule::from_json(&json!({
            "apiGroups": ["apps"], "apiVersions": ["v1"],
            "resources": ["deployments", "replicasets"], "operations": ["CREATE", "UPDATE"]
        }))
        .unwrap();
        assert!(rule.covers("CREATE", "apps", "v1", "deployments"));
        assert!(rule.covers("UPDATE", "apps", "v1", "deployments"));
        assert!(!rule.covers("DELETE", "apps", "v1", "deployments"));
        assert!(!rule.covers("CREATE", "", "v1", "pods"));
        assert!(!rule.covers("CREATE", "apps", "v1beta1", "deployments"));
        let updates = Rule::from_json(&json!({
            "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"], "operations": ["UPDATE"]
        }))
        .unwrap();
        assert!(!updates.covers("CREATE", "", "v1", "pods"));
        assert!(updates.covers("UPDATE", "", "v1", "pods"));
        assert!(Rule::from_json(&json!({"apiGroups": "apps"})).is_err());
    }

    /// A Namespace of the input brings its labels to the selector; of
    /// another, only its name is known.
    #[test]
    fn a_namespace_selector_reads_the_inputs_namespaces() {
        let rules = json!([{"apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"], "operations": ["CREATE"]}]);
        let policy = policy(json!({
            "rules": rules,
            "namespaceSelector": {"matchLabels": {"policy": "enforced"}},
        }));
        let namespaces = namespaces_of(&[
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop", "labels": {"policy": "enforced"}}}),
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "lab"}}),
        ]);
        let scope = |namespace: &str| {
            policy.scope(
                &pod(namespace, json!({})),
                None,
                "CREATE",
                &pods(),
                &namespaces,
            )
        };
        assert_eq!(scope("shop"), Scope::In);
        assert!(matches!(scope("lab"), Scope::Out(_)));
        assert!(matches!(scope("elsewhere"), Scope::Assumed(_)));
    }

    #[test]
    fn selectors_and_an_admission_policys_namespace() {
        let rules = json!([{"apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"], "operations": ["CREATE"]}]);
        let cluster = policy(json!({
            "rules": rules,
            "namespaceSelector": {"matchExpressions": [
                {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["kube-system"]}
            ]},
            "objectSelector": {"matchLabels": {"team": "shop"}},
        }));
        let none = Namespaces::default();
        let scope =
            |policy: &Policy, object: &Value| policy.scope(object, None, "CREATE", &pods(), &none);
        assert_eq!(
            scope(&cluster, &pod("shop", json!({"team": "shop"}))),
            Scope::In
        );
        assert_eq!(
            scope(&cluster, &pod("kube-system", json!({"team": "shop"}))),
            Scope::Out("its namespaceSelector does not match the namespace's labels")
        );
        assert_eq!(
            scope(&cluster, &pod("shop", json!({"team": "web"}))),
            Scope::Out("its objectSelector does not match the object's labels")
        );
        // An update that takes the label away, or gives it, is sent.
        let relabelled = pod("shop", json!({"team": "shop"}));
        let update_rules = json!([{"apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"], "operations": ["UPDATE"]}]);
        let updates = policy(
            json!({"rules": update_rules, "objectSelector": {"matchLabels": {"team": "shop"}}}),
        );
        let update =
            |new: &Value, old: &Value| updates.scope(new, Some(old), "UPDATE", &pods(), &none);
        assert_eq!(update(&pod("shop", json!({})), &relabelled), Scope::In);
        assert_eq!(update(&relabelled, &pod("shop", json!({}))), Scope::In);
        assert!(matches!(
            update(&pod("shop", json!({})), &pod("shop", json!({}))),
            Scope::Out(_)
        ));
        let unknown = policy(json!({
            "rules": rules,
            "namespaceSelector": {"matchLabels": {"env": "prod"}},
        }));
        assert!(matches!(
            scope(&unknown, &pod("shop", json!({}))),
            Scope::Assumed(_)
        ));
        let namespaced = Policy::from_manifest(&json!({
            "kind": "AdmissionPolicy",
            "metadata": {"name": "p", "namespace": "shop"},
            "spec": {"rules": rules},
        }))
        .unwrap();
        assert_eq!(scope(&namespaced, &pod("shop", json!({}))), Scope::In);
        assert!(matches!(
            scope(&namespaced, &pod("web", json!({}))),
            Scope::Out(_)
        ));
    }

    /// Settings left out are `{}`, as policy-server sends them; a group's
    /// members keep their names.
    /// The audit scanner reports nothing of a policy with
    /// `backgroundAudit: false`, or whose every rule it drops.
    #[test]
    fn a_policy_the_audit_will_not_report_is_named() {
        let rule = |groups: &str, resources: &str, operations: Value| json!({"apiGroups": [groups], "apiVersions": ["v1"], "resources": [resources], "operations": operations});
        let module = json!({"module": "m", "settings": {}});
        let spec = |rules: Vec<Value>, extra: Value| {
            let mut spec = json!({"rules": rules});
            spec.as_object_mut()
                .unwrap()
                .extend(module.as_object().unwrap().clone());
            spec.as_object_mut()
                .unwrap()
                .extend(extra.as_object().unwrap().clone());
            spec
        };
        let pods = rule("", "pods", json!(["CREATE", "UPDATE"]));
        assert_eq!(
            policy(spec(vec![pods.clone()], json!({}))).unaudited(),
            None
        );
        assert_eq!(
            policy(spec(vec![pods.clone()], json!({"backgroundAudit": true}))).unaudited(),
            None
        );
        let off = policy(spec(vec![pods.clone()], json!({"backgroundAudit": false})));
        assert!(
            off.unaudited()
                .unwrap()
                .contains("`backgroundAudit: false`")
        );
        for skipped in [
            rule("*", "pods", json!(["CREATE"])),
            rule("", "*", json!(["CREATE"])),
            rule("", "pods", json!(["UPDATE"])),
            rule("", "pods", json!(["*"])),
        ] {
            let note = policy(spec(vec![skipped.clone()], json!({}))).unaudited();
            assert!(
                note.is_some_and(|n| n.contains("skips each of its rules")),
                "{skipped}"
            );
            // One rule it keeps is enough.
            assert_eq!(
                policy(spec(vec![skipped, pods.clone()], json!({}))).unaudited(),
                None
            );
        }
    }

    #[test]
    fn what_a_manifest_declares() {
        let single = json!({"kind": "AdmissionPolicy", "metadata": {"name": "p"}, "spec": {}});
        assert_eq!(Declared::read(&single), Ok(Declared::Policy(json!({}))));
        assert_eq!(manifest_name(&single), "p");
        let group = json!({
            "kind": "ClusterAdmissionPolicyGroup",
            "spec": {"policies": {"b": {"settings": {"x": 1}}, "a": {}}},
        });
        assert_eq!(
            Declared::read(&group),
            Ok(Declared::Group(vec![
                ("a".to_string(), json!({})),
                ("b".to_string(), json!({"x": 1})),
            ]))
        );
        assert_eq!(manifest_name(&group), "ClusterAdmissionPolicyGroup");
        let error =
            Declared::read(&json!({"kind": "AdmissionPolicyGroup", "spec": {}})).unwrap_err();
        assert!(error.contains("has no `spec.policies`"), "{error}");
    }

    #[test]
    fn manifests_that_are_not_policies_are_refused() {
        let error = Policy::from_manifest(&json!({"kind": "Deployment"})).unwrap_err();
        assert!(
            error.contains("not a Kubewarden policy manifest"),
            "{error}"
        );
        let error = Policy::from_manifest(&json!({
            "kind": "ClusterAdmissionPolicyGroup", "metadata": {"name": "g"},
            "spec": {"rules": [], "policies": {"a": {}}, "expression": "a() && b()"},
        }))
        .unwrap_err();
        assert!(
            error.contains("`spec.expression`") && error.contains("b"),
            "{error}"
        );
    }
}
