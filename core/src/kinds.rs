//! Facts about Kubernetes' kinds, as bare names: which live in a namespace,
//! their groups and their resources. The policy needs none of them; the
//! reader of manifests, what runs a policy and the commands share them here,
//! the crate beneath all three.

/// Whether objects of `kind` live in a namespace: every kind but the
/// cluster-wide ones Kubernetes and Kubewarden define (a custom resource
/// is taken to be namespaced).
pub fn namespaced(kind: &str) -> bool {
    !matches!(
        kind,
        "Namespace"
            | "Node"
            | "PersistentVolume"
            | "ComponentStatus"
            | "ClusterRole"
            | "ClusterRoleBinding"
            | "CustomResourceDefinition"
            | "APIService"
            | "StorageClass"
            | "VolumeAttachment"
            | "CSIDriver"
            | "CSINode"
            | "PriorityClass"
            | "RuntimeClass"
            | "IngressClass"
            | "CertificateSigningRequest"
            | "ValidatingWebhookConfiguration"
            | "MutatingWebhookConfiguration"
            | "ValidatingAdmissionPolicy"
            | "ValidatingAdmissionPolicyBinding"
            | "MutatingAdmissionPolicy"
            | "MutatingAdmissionPolicyBinding"
            | "FlowSchema"
            | "PriorityLevelConfiguration"
            | "ClusterAdmissionPolicy"
            | "ClusterAdmissionPolicyGroup"
            | "PolicyServer"
    )
}

/// Whether `group` is Kubernetes' own: the core group, a group without a
/// dot (a CustomResourceDefinition's group must hold one), or one under
/// `k8s.io`, which Kubernetes reserves.
pub fn kubernetes_group(group: &str) -> bool {
    !group.contains('.') || group == "k8s.io" || group.ends_with(".k8s.io")
}

/// The group and version an `apiVersion` names: `apps/v1` is `apps` and
/// `v1`, and a bare version (`v1`) is of the core group, `""`.
pub fn group_version(api_version: &str) -> (&str, &str) {
    api_version.split_once('/').unwrap_or(("", api_version))
}

/// What an object's `apiVersion` names, found once for all who ask: its
/// group and version, and whether the group is Kubernetes' own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ApiVersion<'a> {
    pub group: &'a str,
    pub version: &'a str,
    pub kubernetes: bool,
}

impl<'a> ApiVersion<'a> {
    pub fn of(api_version: &'a str) -> ApiVersion<'a> {
        let (group, version) = group_version(api_version);
        ApiVersion {
            group,
            version,
            kubernetes: kubernetes_group(group),
        }
    }
}

/// The resource (plural) of a kind, as the API server names it: the
/// lower-cased kind, made plural by Kubernetes' own guess
/// (`meta.UnsafeGuessKindToResource`), but for the kinds it gets wrong.
pub fn resource(kind: &str) -> String {
    let lower = kind.to_ascii_lowercase();
    match lower.as_str() {
        "endpoints" => return lower,
        "" => return lower,
        _ => {}
    }
    if lower.ends_with('s') {
        format!("{lower}es")
    } else if let Some(stem) = lower.strip_suffix('y') {
        format!("{stem}ies")
    } else {
        format!("{lower}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An `apiVersion`'s group and version, and whether the group is
    /// Kubernetes' own, at once.
    #[test]
    fn what_an_api_version_names() {
        let of = |text| {
            let api = ApiVersion::of(text);
            (api.group, api.version, api.kubernetes)
        };
        assert_eq!(of("v1"), ("", "v1", true));
        assert_eq!(of("apps/v1"), ("apps", "v1", true));
        assert_eq!(
            of("gateway.networking.k8s.io/v1"),
            ("gateway.networking.k8s.io", "v1", true)
        );
        assert_eq!(of("example.com/v1"), ("example.com", "v1", false));
    }

    #[test]
    fn api_versions_name_group_and_version() {
        assert_eq!(group_version("apps/v1"), ("apps", "v1"));
        assert_eq!(group_version("v1"), ("", "v1"));
        assert_eq!(group_version("builtin"), ("", "builtin"));
        assert_eq!(group_version(""), ("", ""));
    }

    #[test]
    fn kinds_name_their_resources() {
        for (kind, resource_name) in [
            ("Pod", "pods"),
            ("Deployment", "deployments"),
            ("Ingress", "ingresses"),
            ("NetworkPolicy", "networkpolicies"),
            ("Endpoints", "endpoints"),
            ("ReplicationController", "replicationcontrollers"),
            ("CronJob", "cronjobs"),
        ] {
            assert_eq!(resource(kind), resource_name, "{kind}");
        }
    }
}
