//! Facts about kinds: which live in a namespace, and their resources.

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
