//! The names the API server refuses: each kind's rule, and annotation and
//! label keys and values.

use serde_json::Value;

/// How the API server of the pinned release validates a kind's names:
/// the name function each kind's validation hands `ValidateObjectMeta`
/// (pkg/apis/*/validation, k8s.io/kubernetes v1.37.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Rule {
    /// `NameIsDNSSubdomain`: most kinds, and every custom resource
    /// (apiextensions validates them so).
    Subdomain,
    /// `NameIsDNSLabel`: a Namespace, a StatefulSet
    /// (`ValidateStatefulSetName`), a Service (`RelaxedServiceNameValidation`,
    /// GA and locked on in 1.37).
    Label,
    /// `IsPathSegmentName`: RBAC's kinds (`ValidateRBACName`).
    PathSegment,
    /// Checked otherwise, or not at all: a CertificateSigningRequest's
    /// (any), an IPAddress's (an IP), a ClusterTrustBundle's (its signer's),
    /// a CustomResourceDefinition's (`<plural>.<group>`), a StorageVersion's.
    Other,
}

fn rule(group: &str, kind: &str) -> Rule {
    match (group, kind) {
        ("", "Namespace" | "Service") | ("apps", "StatefulSet") => Rule::Label,
        (
            "rbac.authorization.k8s.io",
            "Role" | "ClusterRole" | "RoleBinding" | "ClusterRoleBinding",
        ) => Rule::PathSegment,
        ("certificates.k8s.io", "CertificateSigningRequest" | "ClusterTrustBundle")
        | ("networking.k8s.io", "IPAddress")
        | ("apiextensions.k8s.io", "CustomResourceDefinition")
        | ("internal.apiserver.k8s.io", "StorageVersion") => Rule::Other,
        _ => Rule::Subdomain,
    }
}

/// The longest name of a kind that a controller carries into a label
/// value (63 characters): a Job's, whose Pods are labelled
/// `batch.kubernetes.io/job-name`; a CronJob's, whose Jobs end in an
/// 11-character `-<timestamp>` (`ValidateCronJobCreate`: 52).
fn longest(group: &str, kind: &str) -> Option<usize> {
    match (group, kind) {
        ("batch", "Job") => Some(63),
        ("batch", "CronJob") => Some(52),
        _ => None,
    }
}

/// Why the API server refuses the names `object`, of `kind` in `group`,
/// holds: its own (`name_refusal`), or an Ingress's hosts
/// (`host_refusal`).
pub fn refusal(group: &str, kind: &str, object: &Value) -> Option<String> {
    name_refusal(group, kind, object).or_else(|| host_refusal(group, kind, object))
}

/// Why the API server refuses the name, the `generateName` or the
/// namespace of `object`, of `kind` in `group`.
fn name_refusal(group: &str, kind: &str, object: &Value) -> Option<String> {
    let metadata = &object["metadata"];
    let rule = rule(group, kind);
    let a = match kind.starts_with(['A', 'E', 'I', 'O', 'U']) {
        true => "an",
        false => "a",
    };
    for (field, prefix) in [("name", false), ("generateName", true)] {
        let Some(name) = metadata[field].as_str().filter(|n| !n.is_empty()) else {
            continue;
        };
        if let Some(what) = broken(rule, name, prefix) {
            return Some(format!(
                "`metadata.{field}` {name:?} is not {what}, which the API server requires of \
                 {a} {kind}'s name: rename it"
            ));
        }
        if let Some(most) = longest(group, kind).filter(|&most| !prefix && name.len() > most) {
            return Some(format!(
                "`metadata.name` is {} characters long, and the API server takes {a} {kind}'s \
                 name of at most {most} (what its controller makes carries it in a label): \
                 shorten it",
                name.len()
            ));
        }
    }
    let namespace = metadata["namespace"].as_str().filter(|n| !n.is_empty())?;
    broken(Rule::Label, namespace, false).map(|what| {
        format!(
            "`metadata.namespace` {namespace:?} is not {what}, as a Namespace's name must be: \
             the API server refuses it"
        )
    })
}

/// Why the API server's validation refuses an annotation's key, or a
/// label's key or value (`field` says which): apimachinery's
/// `ValidateAnnotations` (`IsQualifiedName` of the key lower-cased, the
/// policy's own rule) and `ValidateLabels` (`IsQualifiedName` of the key as
/// it is, `IsValidLabelValue`).
pub fn key_refusal(field: &str, key: &str, value: &str) -> Option<String> {
    use policy_core::annotation_key;
    let key_error = annotation_key::check(key)
        .err()
        .map(|e| e.to_string())
        .or_else(|| {
            let prefix = key.split_once('/').map(|(prefix, _)| prefix);
            (field == "labels" && prefix.is_some_and(|p| p.bytes().any(|b| b.is_ascii_uppercase())))
                .then(|| "the prefix of a label's key must be lower case".to_string())
        });
    if let Some(error) = key_error {
        return Some(format!(
            "{key:?} is no key the API server takes: {error}; rename it"
        ));
    }
    let bytes = value.as_bytes();
    let good = |b: &u8| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.');
    let bad_value = field == "labels"
        && !value.is_empty()
        && (bytes.len() > 63
            || !bytes.iter().all(good)
            || !bytes[0].is_ascii_alphanumeric()
            || !bytes[bytes.len() - 1].is_ascii_alphanumeric());
    bad_value.then(|| {
        format!(
            "{key:?} has the value {value:?}, which is no label value the API server takes \
             (at most 63 letters, digits, `-`, `_` and `.`, starting and ending with a letter \
             or digit, or empty): change it"
        )
    })
}

/// Why the API server refuses an Ingress's hosts (`validateIngressRules`,
/// `validateIngressTLS`, pkg/apis/networking/validation, v1.37.2): each
/// rule's `host` and each TLS entry's `hosts` a DNS-1123 subdomain, or one
/// after `*.`; a rule's host no IP address.
fn host_refusal(group: &str, kind: &str, object: &Value) -> Option<String> {
    if (group, kind) != ("networking.k8s.io", "Ingress") {
        return None;
    }
    let spec = &object["spec"];
    let rules = spec["rules"].as_array().into_iter().flatten().enumerate();
    let rule_hosts = rules.map(|(i, rule)| (format!("spec.rules[{i}].host"), &rule["host"], true));
    let tls = spec["tls"].as_array().into_iter().flatten().enumerate();
    let tls_hosts = tls.flat_map(|(i, tls)| {
        let hosts = tls["hosts"].as_array().into_iter().flatten().enumerate();
        hosts.map(move |(j, host)| (format!("spec.tls[{i}].hosts[{j}]"), host, false))
    });
    rule_hosts.chain(tls_hosts).find_map(|(at, host, rule)| {
        let host = host.as_str().filter(|host| !host.is_empty())?;
        if rule && ip_address(host) {
            return Some(format!(
                "`{at}` {host:?} is an IP address, and the API server takes only a DNS name as \
                 an Ingress rule's host: name the host, or leave `host` out"
            ));
        }
        let wrong = match host.strip_prefix("*.") {
            Some(rest) => broken(Rule::Subdomain, rest, false).map(|_| WILDCARD),
            None => broken(Rule::Subdomain, host, false),
        }?;
        Some(format!(
            "`{at}` {host:?} is not {wrong}, which the API server requires of an Ingress's \
             hosts: change it"
        ))
    })
}

/// Whether Go's `ParseIPSloppy` reads `host` as an address: IPv6, or four
/// decimal parts of at most 255 each, leading zeros allowed.
fn ip_address(host: &str) -> bool {
    let part = |part: &str| {
        !part.is_empty()
            && part.bytes().all(|b| b.is_ascii_digit())
            && part.trim_start_matches('0').len() <= 3
            && part.parse::<u32>().is_ok_and(|n| n <= 255)
    };
    host.parse::<std::net::Ipv6Addr>().is_ok()
        || (host.split('.').count() == 4 && host.split('.').all(part))
}

const WILDCARD: &str = "a wildcard DNS-1123 subdomain (`*.` then a DNS-1123 subdomain)";

const SUBDOMAIN: &str = "a DNS-1123 subdomain (lower-case letters, digits, `-` and `.`, \
                         starting and ending with a letter or digit, at most 253 characters)";
const LABEL: &str = "a DNS-1123 label (lower-case letters, digits and `-`, starting and \
                     ending with a letter or digit, at most 63 characters)";

/// What `name` fails to be under `rule`; a `prefix` (a `generateName`) may
/// end with `-`, as apimachinery's `maskTrailingDash` allows.
fn broken(rule: Rule, name: &str, prefix: bool) -> Option<&'static str> {
    let masked;
    let name = match prefix && name.len() > 1 && name.ends_with('-') {
        true => {
            masked = format!("{}a", &name[..name.len() - 1]);
            masked.as_str()
        }
        false => name,
    };
    // Kubernetes' label pattern, without its length: a subdomain's parts
    // have none of their own.
    let label = |part: &str| {
        let bytes = part.as_bytes();
        !bytes.is_empty()
            && bytes
                .iter()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
            && bytes[0] != b'-'
            && bytes[bytes.len() - 1] != b'-'
    };
    match rule {
        Rule::Subdomain if name.len() > 253 || !name.split('.').all(label) => Some(SUBDOMAIN),
        Rule::Label if name.len() > 63 || !label(name) => Some(LABEL),
        Rule::PathSegment
            if (!prefix && (name == "." || name == "..")) || name.contains(['/', '%']) =>
        {
            Some("a path segment (not `.` or `..`, without `/` or `%`)")
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn refusal(group: &str, kind: &str, metadata: Value) -> Option<String> {
        name_refusal(group, kind, &json!({"metadata": metadata}))
    }

    #[test]
    fn an_ingress_host_is_a_dns_name() {
        let ingress = |spec: Value| json!({"spec": spec});
        let refused = |spec: Value| host_refusal("networking.k8s.io", "Ingress", &ingress(spec));
        for fine in [
            json!({"rules": [{"host": "shop.example.com"}, {"http": {}}]}),
            json!({"rules": [{"host": "*.example.com"}], "tls": [{"hosts": ["*.example.com", "a.b"]}]}),
        ] {
            assert_eq!(refused(fine.clone()), None, "{fine}");
        }
        let upper = refused(json!({"rules": [{"host": "Shop.example.com"}]})).unwrap();
        assert!(
            upper.starts_with(
                "`spec.rules[0].host` \"Shop.example.com\" is not a DNS-1123 subdomain"
            ),
            "{upper}"
        );
        let ip = refused(json!({"rules": [{"host": "a.b"}, {"host": "010.0.0.1"}]})).unwrap();
        assert!(
            ip.starts_with("`spec.rules[1].host` \"010.0.0.1\" is an IP address"),
            "{ip}"
        );
        let wild = refused(json!({"tls": [{"hosts": ["ok.io", "*.*.io"]}]})).unwrap();
        assert!(
            wild.starts_with("`spec.tls[0].hosts[1]` \"*.*.io\" is not a wildcard"),
            "{wild}"
        );
        // A TLS host may be an address: only a rule's may not.
        assert_eq!(refused(json!({"tls": [{"hosts": ["10.0.0.1"]}]})), None);
        // Another kind's, or another group's Ingress, is not held to it.
        assert_eq!(
            host_refusal(
                "example.com",
                "Ingress",
                &ingress(json!({"rules": [{"host": "A"}]}))
            ),
            None
        );
    }

    #[test]
    fn each_kind_by_its_own_rule() {
        // rook's Job, its name an unrendered placeholder.
        let job = refusal("batch", "Job", json!({"name": "cleanup-<node-hostname>"})).unwrap();
        assert!(
            job.starts_with(
                "`metadata.name` \"cleanup-<node-hostname>\" is not a DNS-1123 subdomain"
            ),
            "{job}"
        );
        assert!(job.ends_with("which the API server requires of a Job's name: rename it"));
        for (group, kind, name, fine) in [
            ("", "ConfigMap", "app.config-1", true),
            ("", "ConfigMap", "App", false),
            ("", "ConfigMap", "a..b", false),
            ("", "ConfigMap", "-a", false),
            ("", "Namespace", "team.a", false),
            ("", "Namespace", "team-a", true),
            ("", "Service", "1web", true),
            ("", "Service", "web.v2", false),
            ("apps", "StatefulSet", "db.0", false),
            ("apps", "Deployment", "db.0", true),
            (
                "rbac.authorization.k8s.io",
                "ClusterRole",
                "system:controller:x",
                true,
            ),
            ("rbac.authorization.k8s.io", "ClusterRole", "a/b", false),
            ("example.com", "Widget", "Big_Widget", false),
            (
                "certificates.k8s.io",
                "CertificateSigningRequest",
                "Any Name",
                true,
            ),
        ] {
            let refused = refusal(group, kind, json!({ "name": name }));
            assert_eq!(refused.is_none(), fine, "{kind} {name}: {refused:?}");
        }
        assert!(refusal("", "ConfigMap", json!({"name": "a".repeat(254)})).is_some());
        assert!(refusal("", "ConfigMap", json!({"name": "a".repeat(253)})).is_none());
        // A generateName may end with `-`.
        assert!(refusal("", "Pod", json!({"generateName": "web-"})).is_none());
        assert!(refusal("", "Pod", json!({"generateName": "Web-"})).is_some());
        // Lengths a controller carries into a label.
        assert!(refusal("batch", "Job", json!({"name": "j".repeat(63)})).is_none());
        let long = refusal("batch", "Job", json!({"name": "j".repeat(64)})).unwrap();
        assert!(
            long.starts_with("`metadata.name` is 64 characters long"),
            "{long}"
        );
        assert!(refusal("batch", "CronJob", json!({"name": "c".repeat(53)})).is_some());
        // Keys and label values, as the API server validates them.
        assert_eq!(key_refusal("annotations", "Example.com/Owner", "x y"), None);
        assert!(key_refusal("annotations", "-leading-dash", "").is_some());
        assert!(key_refusal("labels", "Example.com/owner", "").is_some());
        assert_eq!(key_refusal("labels", "example.com/Owner", "a.b_c-1"), None);
        assert!(key_refusal("labels", "tier", "a b").is_some());
        assert!(key_refusal("labels", "tier", &"a".repeat(64)).is_some());
        assert_eq!(key_refusal("labels", "tier", ""), None);
        // The namespace is a Namespace's name.
        let namespace = refusal("", "Pod", json!({"name": "p", "namespace": "Team"})).unwrap();
        assert!(namespace.starts_with("`metadata.namespace` \"Team\" is not a DNS-1123 label"));
    }
}
