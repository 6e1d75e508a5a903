//! `can_i` answered from the RBAC objects given, as the API server answers
//! a SubjectAccessReview with its RBAC authorizer
//! (`plugin/pkg/auth/authorizer/rbac`, Kubernetes 1.36): the
//! ClusterRoleBindings, then the RoleBindings of the review's namespace,
//! the first rule that allows deciding, and the same reason texts.
//!
//! The objects are taken as the cluster serves them: an aggregated
//! ClusterRole (`aggregationRule`) in a dump already carries the rules the
//! controller aggregated into it, so none are aggregated here. A review's
//! groups are taken as given: the API server adds none to a
//! SubjectAccessReview's (no `system:authenticated`, no
//! `system:serviceaccounts`), so a policy that means them must pass them.
//! Bindings are visited by name (policy-server's API server visits them in
//! its cache's order), so that the reason named is always the same one.
//! Members of `system:masters` are allowed ahead of RBAC, as every API
//! server allows them; no other authorizer (Node, webhooks) is modelled.

use serde_json::{Map, Value, json};

use super::cluster::{Cluster, aggregate, quote};
use crate::capabilities::{AccessReview, ResourceAttributes};

const RBAC: &str = "rbac.authorization.k8s.io/v1";

/// The group the API server allows everything, ahead of any authorizer
/// (`user.SystemPrivilegedGroup`), with no reason given.
const SUPERUSERS: &str = "system:masters";

/// Whether the API server would take the review at all: it refuses one
/// that names neither a user nor a group (`ValidateSubjectAccessReviewSpec`).
pub fn validate(review: &AccessReview) -> Result<(), String> {
    let groups = review.groups.as_deref().unwrap_or_default();
    if review.user.is_empty() && groups.is_empty() {
        return Err(
            "SubjectAccessReview.authorization.k8s.io \"\" is invalid: spec.user: Invalid value: \"\": at least one of user or group must be specified"
                .to_string(),
        );
    }
    Ok(())
}

/// The SubjectAccessReviewStatus the API server would give: allowed with
/// the binding that allows it, or not allowed (never `denied`: RBAC only
/// allows or has no opinion), with a reason only when a binding that
/// applies names a role that cannot be found.
pub fn review(cluster: &Cluster, review: &AccessReview) -> Value {
    let groups = review.groups.as_deref().unwrap_or_default();
    if groups.iter().any(|group| group == SUPERUSERS) {
        return json!({"allowed": true});
    }
    let mut errors = Vec::new();
    for binding in cluster.objects(RBAC, "ClusterRoleBinding") {
        if let Some(reason) = allows(cluster, binding, review, Scope::Cluster, &mut errors) {
            return json!({"allowed": true, "reason": format!("RBAC: allowed by {reason}")});
        }
    }
    let namespace = review
        .resource_attributes
        .namespace
        .as_deref()
        .unwrap_or("");
    if !namespace.is_empty() {
        for binding in cluster.objects_in(RBAC, "RoleBinding", namespace) {
            let scope = Scope::Namespace(namespace);
            if let Some(reason) = allows(cluster, binding, review, scope, &mut errors) {
                return json!({"allowed": true, "reason": format!("RBAC: allowed by {reason}")});
            }
        }
    }
    let mut status = Map::new();
    status.insert("allowed".into(), Value::Bool(false));
    if !errors.is_empty() {
        status.insert(
            "reason".into(),
            Value::String(format!("RBAC: {}", aggregate(errors))),
        );
    }
    Value::Object(status)
}

/// Where a binding grants: everywhere, or in its namespace.
#[derive(Clone, Copy)]
enum Scope<'n> {
    Cluster,
    Namespace(&'n str),
}

impl Scope<'_> {
    fn namespace(&self) -> &str {
        match self {
            Scope::Cluster => "",
            Scope::Namespace(namespace) => namespace,
        }
    }
}

fn text<'v>(value: &'v Value, field: &str) -> &'v str {
    value.get(field).and_then(Value::as_str).unwrap_or("")
}

fn strings<'v>(value: &'v Value, field: &str) -> impl Iterator<Item = &'v str> {
    value
        .get(field)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
}

/// The binding's description when one of its role's rules allows the
/// review; a role that cannot be found is an error, noted.
fn allows(
    cluster: &Cluster,
    binding: &Value,
    review: &AccessReview,
    scope: Scope<'_>,
    errors: &mut Vec<String>,
) -> Option<String> {
    let namespace = scope.namespace();
    let subject = binding
        .get("subjects")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .find(|subject| applies(subject, review, namespace))?;
    let role_ref = binding.get("roleRef").unwrap_or(&Value::Null);
    let (role_kind, role_name) = (text(role_ref, "kind"), text(role_ref, "name"));
    let role = match role_kind {
        // A ClusterRoleBinding's Role would be in no namespace: none is.
        "Role" if namespace.is_empty() => None,
        "Role" => cluster.get(RBAC, "Role", Some(namespace), role_name),
        "ClusterRole" => cluster.get(RBAC, "ClusterRole", None, role_name),
        other => {
            errors.push(format!("unsupported role reference kind: {}", quote(other)));
            return None;
        }
    };
    let Some(role) = role else {
        errors.push(format!(
            "{}.rbac.authorization.k8s.io {} not found",
            role_kind.to_ascii_lowercase(),
            quote(role_name)
        ));
        return None;
    };
    let rules = role.get("rules").and_then(Value::as_array)?;
    if !rules
        .iter()
        .any(|rule| rule_allows(rule, &review.resource_attributes))
    {
        return None;
    }
    let name = binding
        .get("metadata")
        .map(|metadata| text(metadata, "name"))
        .unwrap_or("");
    Some(match scope {
        Scope::Cluster => format!(
            "ClusterRoleBinding {} of {role_kind} {} to {}",
            quote(name),
            quote(role_name),
            describe(subject, "")
        ),
        Scope::Namespace(namespace) => format!(
            "RoleBinding {} of {role_kind} {} to {}",
            quote(&format!("{name}/{namespace}")),
            quote(role_name),
            describe(subject, namespace)
        ),
    })
}

/// Whether a binding's subject is the review's user or one of its groups.
/// A service account is the user `system:serviceaccount:<ns>:<name>`; one
/// named without a namespace is the binding's namespace's, and so never
/// a ClusterRoleBinding's.
fn applies(subject: &Value, review: &AccessReview, namespace: &str) -> bool {
    let name = text(subject, "name");
    match text(subject, "kind") {
        "User" => review.user == name,
        "Group" => review
            .groups
            .as_deref()
            .unwrap_or_default()
            .iter()
            .any(|group| group == name),
        "ServiceAccount" => {
            let account_namespace = match text(subject, "namespace") {
                "" => namespace,
                given => given,
            };
            !account_namespace.is_empty()
                && review.user == format!("system:serviceaccount:{account_namespace}:{name}")
        }
        _ => false,
    }
}

fn describe(subject: &Value, namespace: &str) -> String {
    let (kind, name) = (text(subject, "kind"), text(subject, "name"));
    match kind {
        "ServiceAccount" => {
            let account_namespace = match text(subject, "namespace") {
                "" => namespace,
                given => given,
            };
            format!("{kind} {}", quote(&format!("{name}/{account_namespace}")))
        }
        _ => format!("{kind} {}", quote(name)),
    }
}

/// `RuleAllows` for a resource request, the only kind the SDK's review
/// makes: so a rule of `nonResourceURLs` alone never applies.
fn rule_allows(rule: &Value, attributes: &ResourceAttributes) -> bool {
    let group = attributes.group.as_deref().unwrap_or("");
    let subresource = attributes.subresource.as_deref().unwrap_or("");
    let name = attributes.name.as_deref().unwrap_or("");
    let combined = match subresource {
        "" => attributes.resource.clone(),
        subresource => format!("{}/{subresource}", attributes.resource),
    };
    let verbs = strings(rule, "verbs").any(|verb| verb == "*" || verb == attributes.verb);
    let groups = strings(rule, "apiGroups").any(|g| g == "*" || g == group);
    let resources = strings(rule, "resources").any(|resource| {
        resource == "*"
            || resource == combined
            || (!subresource.is_empty() && resource.strip_prefix("*/") == Some(subresource))
    });
    let mut names = strings(rule, "resourceNames").peekable();
    let named = names.peek().is_none() || names.any(|n| n == name);
    verbs && groups && resources && named
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capabilities::{Host, Request};

    fn attributes(
        verb: &str,
        group: &str,
        resource: &str,
        namespace: Option<&str>,
    ) -> ResourceAttributes {
        ResourceAttributes {
            group: Some(group.to_string()).filter(|g| !g.is_empty()),
            name: None,
            namespace: namespace.map(str::to_string),
            resource: resource.to_string(),
            subresource: None,
            verb: verb.to_string(),
            version: Some("v1".into()),
        }
    }

    fn ask(
        user: &str,
        groups: Option<&[&str]>,
        resource_attributes: ResourceAttributes,
    ) -> AccessReview {
        AccessReview {
            groups: groups.map(|g| g.iter().map(|s| s.to_string()).collect()),
            resource_attributes,
            user: user.to_string(),
        }
    }

    fn cluster_role(name: &str, rules: Value) -> Value {
        json!({"apiVersion": RBAC, "kind": "ClusterRole", "metadata": {"name": name}, "rules": rules})
    }

    fn role(namespace: &str, name: &str, rules: Value) -> Value {
        json!({"apiVersion": RBAC, "kind": "Role", "metadata": {"name": name, "namespace": namespace}, "rules": rules})
    }

    fn cluster_binding(name: &str, role: &str, subjects: Value) -> Value {
        json!({"apiVersion": RBAC, "kind": "ClusterRoleBinding", "metadata": {"name": name},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
               "subjects": subjects})
    }

    fn binding(namespace: &str, name: &str, kind: &str, role: &str, subjects: Value) -> Value {
        json!({"apiVersion": RBAC, "kind": "RoleBinding", "metadata": {"name": name, "namespace": namespace},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": role},
               "subjects": subjects})
    }

    fn pods_reader() -> Value {
        json!([{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}])
    }

    #[test]
    fn a_cluster_role_binding_allows_everywhere() {
        let cluster = Cluster::new([
            cluster_role("reader", pods_reader()),
            cluster_binding(
                "alice-reads",
                "reader",
                json!([{"kind": "User", "name": "alice"}]),
            ),
        ]);
        for namespace in [None, Some("a"), Some("b")] {
            assert_eq!(
                review(
                    &cluster,
                    &ask("alice", None, attributes("list", "", "pods", namespace))
                ),
                json!({"allowed": true, "reason": "RBAC: allowed by ClusterRoleBinding \"alice-reads\" of ClusterRole \"reader\" to User \"alice\""})
            );
        }
        assert_eq!(
            review(
                &cluster,
                &ask("alice", None, attributes("delete", "", "pods", Some("a")))
            ),
            json!({"allowed": false})
        );
        assert_eq!(
            review(
                &cluster,
                &ask("bob", None, attributes("get", "", "pods", Some("a")))
            ),
            json!({"allowed": false})
        );
        assert_eq!(
            review(
                &cluster,
                &ask("alice", None, attributes("get", "apps", "pods", Some("a")))
            ),
            json!({"allowed": false}),
            "another group"
        );
    }

    #[test]
    fn a_role_binding_allows_in_its_namespace_only() {
        let cluster = Cluster::new([
            role("a", "reader", pods_reader()),
            binding(
                "a",
                "sa-reads",
                "Role",
                "reader",
                json!([{"kind": "ServiceAccount", "name": "bot", "namespace": "a"}]),
            ),
        ]);
        let bot = "system:serviceaccount:a:bot";
        assert_eq!(
            review(
                &cluster,
                &ask(bot, None, attributes("get", "", "pods", Some("a")))
            ),
            json!({"allowed": true, "reason": "RBAC: allowed by RoleBinding \"sa-reads/a\" of Role \"reader\" to ServiceAccount \"bot/a\""})
        );
        assert_eq!(
            review(
                &cluster,
                &ask(bot, None, attributes("get", "", "pods", Some("b")))
            ),
            json!({"allowed": false})
        );
        assert_eq!(
            review(
                &cluster,
                &ask(bot, None, attributes("get", "", "pods", None))
            ),
            json!({"allowed": false}),
            "cluster-wide"
        );
        assert_eq!(
            review(
                &cluster,
                &ask(
                    "system:serviceaccount:b:bot",
                    None,
                    attributes("get", "", "pods", Some("a"))
                )
            ),
            json!({"allowed": false})
        );
    }

    #[test]
    fn a_role_binding_to_a_cluster_role_allows_in_its_namespace_only() {
        let cluster = Cluster::new([
            cluster_role("reader", pods_reader()),
            // A service account named without a namespace is the binding's.
            binding(
                "a",
                "bot-reads",
                "ClusterRole",
                "reader",
                json!([{"kind": "ServiceAccount", "name": "bot"}]),
            ),
            // In a ClusterRoleBinding, it is nobody.
            cluster_binding(
                "nobody",
                "reader",
                json!([{"kind": "ServiceAccount", "name": "bot"}]),
            ),
        ]);
        assert_eq!(
            review(
                &cluster,
                &ask(
                    "system:serviceaccount:a:bot",
                    None,
                    attributes("list", "", "pods", Some("a"))
                )
            ),
            json!({"allowed": true, "reason": "RBAC: allowed by RoleBinding \"bot-reads/a\" of ClusterRole \"reader\" to ServiceAccount \"bot/a\""})
        );
        assert_eq!(
            review(
                &cluster,
                &ask(
                    "system:serviceaccount:a:bot",
                    None,
                    attributes("list", "", "pods", Some("b"))
                )
            ),
            json!({"allowed": false})
        );
    }

    #[test]
    fn resource_names_subresources_and_wildcards() {
        let cluster = Cluster::new([
            cluster_role(
                "named",
                json!([{"apiGroups": ["apps"], "resources": ["deployments"], "resourceNames": ["web"], "verbs": ["update"]}]),
            ),
            cluster_role(
                "scaler",
                json!([{"apiGroups": ["apps"], "resources": ["deployments/scale"], "verbs": ["update"]}]),
            ),
            cluster_role(
                "any-status",
                json!([{"apiGroups": ["*"], "resources": ["*/status"], "verbs": ["get"]}]),
            ),
            cluster_role(
                "admin",
                json!([{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]),
            ),
            cluster_binding("named", "named", json!([{"kind": "User", "name": "named"}])),
            cluster_binding(
                "scaler",
                "scaler",
                json!([{"kind": "User", "name": "scaler"}]),
            ),
            cluster_binding(
                "status",
                "any-status",
                json!([{"kind": "User", "name": "status"}]),
            ),
            cluster_binding("admin", "admin", json!([{"kind": "User", "name": "admin"}])),
        ]);
        let allowed = |user: &str,
                       name: Option<&str>,
                       resource: &str,
                       subresource: Option<&str>,
                       verb: &str| {
            let mut asked = attributes(verb, "apps", resource, Some("a"));
            asked.name = name.map(str::to_string);
            asked.subresource = subresource.map(str::to_string);
            review(&cluster, &ask(user, None, asked))["allowed"] == true
        };
        assert!(allowed("named", Some("web"), "deployments", None, "update"));
        assert!(!allowed(
            "named",
            Some("api"),
            "deployments",
            None,
            "update"
        ));
        assert!(
            !allowed("named", None, "deployments", None, "update"),
            "no name is not a listed name"
        );
        assert!(!allowed(
            "named",
            Some("web"),
            "deployments",
            Some("scale"),
            "update"
        ));
        assert!(allowed(
            "scaler",
            Some("web"),
            "deployments",
            Some("scale"),
            "update"
        ));
        assert!(!allowed(
            "scaler",
            Some("web"),
            "deployments",
            None,
            "update"
        ));
        assert!(allowed(
            "status",
            None,
            "deployments",
            Some("status"),
            "get"
        ));
        assert!(allowed("status", None, "pods", Some("status"), "get"));
        assert!(!allowed("status", None, "pods", None, "get"));
        assert!(!allowed("status", None, "pods", Some("statuses"), "get"));
        assert!(allowed("admin", None, "anything", Some("sub"), "escalate"));
    }

    #[test]
    fn non_resource_urls_do_not_apply_to_resources() {
        let cluster = Cluster::new([
            cluster_role("urls", json!([{"nonResourceURLs": ["*"], "verbs": ["*"]}])),
            cluster_binding("urls", "urls", json!([{"kind": "User", "name": "u"}])),
        ]);
        assert_eq!(
            review(
                &cluster,
                &ask("u", None, attributes("get", "", "pods", Some("a")))
            ),
            json!({"allowed": false})
        );
    }

    #[test]
    fn groups_are_matched_as_given() {
        let cluster = Cluster::new([
            cluster_role("reader", pods_reader()),
            cluster_binding(
                "readers",
                "reader",
                json!([{"kind": "Group", "name": "system:serviceaccounts:a"}]),
            ),
            cluster_role(
                "admin",
                json!([{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]),
            ),
            cluster_binding(
                "cluster-admin",
                "admin",
                json!([{"kind": "Group", "name": "system:masters"}]),
            ),
        ]);
        let bot = "system:serviceaccount:a:bot";
        let get = attributes("get", "", "pods", Some("a"));
        assert_eq!(
            review(&cluster, &ask(bot, None, get.clone())),
            json!({"allowed": false}),
            "no group is added"
        );
        assert_eq!(
            review(
                &cluster,
                &ask(
                    bot,
                    Some(&["system:serviceaccounts", "system:serviceaccounts:a"]),
                    get.clone()
                )
            ),
            json!({"allowed": true, "reason": "RBAC: allowed by ClusterRoleBinding \"readers\" of ClusterRole \"reader\" to Group \"system:serviceaccounts:a\""})
        );
        assert_eq!(
            review(
                &cluster,
                &ask(
                    "root",
                    Some(&["system:masters"]),
                    attributes("delete", "", "nodes", None)
                )
            ),
            json!({"allowed": true}),
            "the superuser group is allowed ahead of RBAC"
        );
    }

    #[test]
    fn the_first_binding_by_name_is_the_reason() {
        let cluster = Cluster::new([
            cluster_role("reader", pods_reader()),
            cluster_binding("b", "reader", json!([{"kind": "User", "name": "u"}])),
            cluster_binding(
                "a",
                "reader",
                json!([{"kind": "Group", "name": "g"}, {"kind": "User", "name": "u"}]),
            ),
            role("n", "reader", pods_reader()),
            binding(
                "n",
                "local",
                "Role",
                "reader",
                json!([{"kind": "User", "name": "v"}]),
            ),
        ]);
        let reason = review(
            &cluster,
            &ask("u", Some(&["g"]), attributes("get", "", "pods", Some("n"))),
        );
        assert_eq!(
            reason["reason"],
            "RBAC: allowed by ClusterRoleBinding \"a\" of ClusterRole \"reader\" to Group \"g\""
        );
        // ClusterRoleBindings come before RoleBindings.
        let reason = review(
            &cluster,
            &ask("v", Some(&["g"]), attributes("get", "", "pods", Some("n"))),
        );
        assert_eq!(
            reason["reason"],
            "RBAC: allowed by ClusterRoleBinding \"a\" of ClusterRole \"reader\" to Group \"g\""
        );
        let reason = review(
            &cluster,
            &ask("v", None, attributes("get", "", "pods", Some("n"))),
        );
        assert_eq!(
            reason["reason"],
            "RBAC: allowed by RoleBinding \"local/n\" of Role \"reader\" to User \"v\""
        );
    }

    #[test]
    fn missing_roles_are_the_reason_of_a_denial() {
        let cluster = Cluster::new([
            cluster_binding("gone", "missing", json!([{"kind": "User", "name": "u"}])),
            binding(
                "n",
                "gone-role",
                "Role",
                "missing",
                json!([{"kind": "User", "name": "u"}]),
            ),
            binding(
                "n",
                "odd",
                "Thing",
                "x",
                json!([{"kind": "User", "name": "u"}]),
            ),
            binding(
                "n",
                "twice",
                "Role",
                "missing",
                json!([{"kind": "User", "name": "u"}]),
            ),
            // Even a Role given without a namespace.
            role("", "nowhere", pods_reader()),
            json!({"apiVersion": RBAC, "kind": "ClusterRoleBinding", "metadata": {"name": "to-a-role"},
                   "roleRef": {"kind": "Role", "name": "nowhere"}, "subjects": [{"kind": "User", "name": "v"}]}),
        ]);
        assert_eq!(
            review(
                &cluster,
                &ask("v", None, attributes("get", "", "pods", None))
            ),
            json!({"allowed": false, "reason": "RBAC: role.rbac.authorization.k8s.io \"nowhere\" not found"})
        );
        assert_eq!(
            review(
                &cluster,
                &ask("u", None, attributes("get", "", "pods", Some("n")))
            ),
            json!({"allowed": false, "reason": "RBAC: [clusterrole.rbac.authorization.k8s.io \"missing\" not found, role.rbac.authorization.k8s.io \"missing\" not found, unsupported role reference kind: \"Thing\"]"})
        );
        assert_eq!(
            review(
                &cluster,
                &ask("u", None, attributes("get", "", "pods", None))
            ),
            json!({"allowed": false, "reason": "RBAC: clusterrole.rbac.authorization.k8s.io \"missing\" not found"})
        );
        assert_eq!(
            review(
                &cluster,
                &ask("w", None, attributes("get", "", "pods", Some("n")))
            ),
            json!({"allowed": false}),
            "a binding that does not apply is not read"
        );
    }

    #[test]
    fn can_i_is_answered_through_the_host() {
        let cluster = Cluster::new([
            cluster_role("reader", pods_reader()),
            cluster_binding("r", "reader", json!([{"kind": "User", "name": "u"}])),
        ]);
        let can_i = |user: &str, groups: Option<&[&str]>| {
            cluster.answer(&Request::KubernetesCanI {
                request: ask(user, groups, attributes("get", "", "pods", Some("a"))),
                disable_cache: false,
            })
        };
        assert_eq!(
            can_i("u", None).map(|bytes| serde_json::from_slice::<Value>(&bytes).unwrap()),
            Ok(
                json!({"allowed": true, "reason": "RBAC: allowed by ClusterRoleBinding \"r\" of ClusterRole \"reader\" to User \"u\""})
            )
        );
        assert_eq!(can_i("x", None), Ok(br#"{"allowed":false}"#.to_vec()));
        assert!(
            can_i("", Some(&[]))
                .unwrap_err()
                .contains("at least one of user or group must be specified")
        );
        assert!(can_i("", Some(&["g"])).is_ok());
    }

    #[test]
    fn odd_objects_deny_without_panicking() {
        let cluster = Cluster::new([
            json!({"apiVersion": RBAC, "kind": "ClusterRole", "metadata": {"name": "r"}, "rules": [5, {"verbs": "x"}, {"verbs": [1, "*"], "apiGroups": ["*"], "resources": [null]}]}),
            json!({"apiVersion": RBAC, "kind": "ClusterRoleBinding", "metadata": {"name": "b"}, "roleRef": 5, "subjects": [{"kind": "User", "name": "u"}]}),
            json!({"apiVersion": RBAC, "kind": "ClusterRoleBinding", "metadata": {"name": "c"}, "roleRef": {"kind": "ClusterRole", "name": "r"}, "subjects": "u"}),
            json!({"apiVersion": RBAC, "kind": "ClusterRoleBinding", "metadata": {"name": "d"}, "roleRef": {"kind": "ClusterRole", "name": "r"}, "subjects": [7, {"kind": "User", "name": "u"}]}),
        ]);
        assert_eq!(
            review(
                &cluster,
                &ask("u", None, attributes("get", "", "pods", Some("a")))
            ),
            json!({"allowed": false, "reason": "RBAC: unsupported role reference kind: \"\""})
        );
    }
}
