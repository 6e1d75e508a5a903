//! The annotation keys that Kubernetes' own components and kubectl write by
//! themselves, before or after the policy sees an object: its registry
//! strategies and API conversions, its admission plugins, its controllers,
//! the kubelet, kubeadm and kubectl. No manifest holds them, and an allowlist
//! that does not admit them breaks the cluster it guards (no DaemonSet can be
//! created, no Pod appears in a namespace with a LimitRange). Under
//! `allowKubernetesBookkeeping` (on unless turned off) the two criteria that
//! judge the keys outside the values count these as listed.
//!
//! A key is bookkeeping by its name alone, whatever the kind of the object.
//! Keys that change what a Pod may do are never bookkeeping, whatever their
//! prefix: the AppArmor and seccomp keys (`container.apparmor.security.beta.
//! kubernetes.io/*`, `seccomp.security.alpha.kubernetes.io/pod`,
//! `container.seccomp.security.alpha.kubernetes.io/*`, which some releases
//! copied from the security context), a Pod's bandwidth
//! (`kubernetes.io/ingress-bandwidth`), the autoscaler's
//! `cluster-autoscaler.kubernetes.io/safe-to-evict`: no entry below is a
//! prefix of them, so they stay the user's to list.

use crate::bytes;

/// The set: an exact key, or a prefix when the entry ends in `*` (the only
/// place a star may stand, as `entries_are_keys_or_prefixes` holds). Each
/// entry names the Kubernetes source that writes it and the releases it
/// applies to; "all releases" means every release Kubewarden supports.
pub const KEYS: &[&str] = &[
    // kubectl: `apply` writes `last-applied-configuration` on every object
    // (k8s.io/api core/v1/annotation_key_constants.go), `rollout restart`
    // writes `restartedAt` on a pod template (kubectl
    // pkg/polymorphichelpers/objectrestarter.go, 1.15+); kubectl reads
    // `default-container`. All releases.
    "kubectl.kubernetes.io/*",
    // The deployment controller: `revision` on Deployments and ReplicaSets,
    // `desired-replicas`, `max-replicas` and `revision-history` on
    // ReplicaSets (pkg/controller/deployment/util/deployment_util.go).
    // All releases.
    "deployment.kubernetes.io/*",
    // The apps/v1 conversion writes a Deployment's deprecated rollbackTo
    // as this annotation (pkg/apis/apps/v1/conversion.go;
    // k8s.io/api apps/v1/types.go DeprecatedRollbackTo). 1.8+.
    "deprecated.deployment.rollback.to",
    // The apps/v1 conversion writes every DaemonSet's template generation
    // as this annotation (pkg/apis/apps/v1/conversion.go), which the
    // registry sets at creation and raises with each template change
    // (pkg/registry/apps/daemonset/strategy.go), before validating admission.
    // 1.8+.
    "deprecated.daemonset.template.generation",
    // The job and CronJob controllers (k8s.io/api batch/v1/types.go):
    // `cronjob-scheduled-timestamp` on a CronJob's Jobs (1.28+,
    // pkg/controller/cronjob/utils.go), `job-completion-index` on an
    // Indexed Job's Pods (1.21+), `job-index-failure-count` and
    // `job-index-ignored-failure-count` on them (1.28+,
    // pkg/controller/job/indexed_job_utils.go); the registry's
    // `job-tracking` on Jobs (1.22-1.26, pkg/registry/batch/job/strategy.go).
    "batch.kubernetes.io/*",
    // `kubectl create job --from=cronjob/NAME` (kubectl
    // pkg/cmd/create/create_job.go). All releases.
    "cronjob.kubernetes.io/instantiate",
    // `kubectl ... --record` and `kubectl annotate` as the Kubernetes docs
    // advise; `kubectl rollout history` reads it (kubectl
    // pkg/polymorphichelpers/history.go), and the deployment controller
    // copies it from a Deployment to its ReplicaSets. All releases.
    "kubernetes.io/change-cause",
    // The LimitRanger admission plugin, on each Pod one of whose containers
    // it gave a default request or limit
    // (plugin/pkg/admission/limitranger/admission.go). All releases.
    "kubernetes.io/limit-ranger",
    // The kubelet: `config.source`, `config.hash` and `config.seen` on
    // static Pods, and `config.mirror` on the mirror Pods it creates for
    // them (pkg/kubelet/types/pod_update.go, pkg/kubelet/pod/mirror_client.go).
    // All releases.
    "kubernetes.io/config.*",
    // The PodSecurityPolicy admission plugin, on each Pod it admitted
    // (pkg/security/podsecuritypolicy/util/util.go). 1.8-1.24; the plugin
    // was removed in 1.25.
    "kubernetes.io/psp",
    // kubeadm's static Pod manifests, so the mirror Pods of a kubeadm control
    // plane: `kube-apiserver.advertise-address.endpoint`,
    // `etcd.advertise-client-urls` (cmd/kubeadm/app/constants/constants.go).
    // All releases.
    "kubeadm.kubernetes.io/*",
    // The ImagePolicyWebhook admission plugin, on a Pod it admitted because
    // its backend failed and it fails open
    // (plugin/pkg/admission/imagepolicy/admission.go; k8s.io/api
    // core/v1/annotation_key_constants.go). All releases.
    "alpha.image-policy.k8s.io/failed-open",
];

/// The first bytes of the entries: most keys start with none of them, and
/// are told apart by one look-up.
static FIRST_BYTES: [bool; 256] = {
    let mut first = [false; 256];
    let mut i = 0;
    while i < KEYS.len() {
        first[KEYS[i].as_bytes()[0] as usize] = true;
        i += 1;
    }
    first
};

/// Whether Kubernetes or kubectl writes `key` by itself.
#[inline(always)]
pub fn written_by_kubernetes(key: &str) -> bool {
    let key = key.as_bytes();
    match key.first() {
        Some(&first) if FIRST_BYTES[first as usize] => KEYS.iter().any(|entry| {
            let entry = entry.as_bytes();
            match entry.split_last() {
                Some((b'*', prefix)) => {
                    key.len() >= prefix.len() && bytes::equal(&key[..prefix.len()], prefix)
                }
                _ => bytes::equal(key, entry),
            }
        }),
        _ => false,
    }
}

/// How the two criteria that judge the keys outside the values
/// (`doesNotContainOtherThan`, `containsOtherThan`) treat Kubernetes' own
/// keys: the setting `allowKubernetesBookkeeping`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bookkeeping {
    /// They count as listed (`true`, the default).
    Listed,
    /// They are judged like any other key (`false`, as in 0.2.0).
    Judged,
}

impl Bookkeeping {
    /// Whether `key` counts as listed without any value matching it.
    #[inline(always)]
    pub fn counts_as_listed(self, key: &str) -> bool {
        self == Bookkeeping::Listed && written_by_kubernetes(key)
    }
}

/// The set read literally, each entry as a pattern of `pattern::oracle`:
/// for tests and fuzz targets to hold `written_by_kubernetes` to.
#[cfg(any(test, feature = "reference"))]
pub mod oracle {
    pub fn written_by_kubernetes(key: &str) -> bool {
        super::KEYS
            .iter()
            .any(|entry| crate::pattern::oracle::matches(entry, key))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn entries_are_keys_or_prefixes() {
        for entry in KEYS {
            let stars = entry.matches('*').count();
            assert!(
                stars == 0 || (stars == 1 && entry.ends_with('*')),
                "{entry}: a star may only end an entry"
            );
            assert_eq!(crate::pattern::check(entry), Ok(()), "{entry}");
        }
        let mut sorted = KEYS.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), KEYS.len(), "an entry is listed twice");
    }

    /// What the components write, as the sources above spell it.
    #[test]
    fn the_keys_kubernetes_writes_are_bookkeeping() {
        for key in [
            "kubectl.kubernetes.io/last-applied-configuration",
            "kubectl.kubernetes.io/restartedAt",
            "kubectl.kubernetes.io/default-container",
            "deployment.kubernetes.io/revision",
            "deployment.kubernetes.io/revision-history",
            "deployment.kubernetes.io/desired-replicas",
            "deployment.kubernetes.io/max-replicas",
            "deprecated.deployment.rollback.to",
            "deprecated.daemonset.template.generation",
            "batch.kubernetes.io/cronjob-scheduled-timestamp",
            "batch.kubernetes.io/job-completion-index",
            "batch.kubernetes.io/job-index-failure-count",
            "batch.kubernetes.io/job-index-ignored-failure-count",
            "batch.kubernetes.io/job-tracking",
            "cronjob.kubernetes.io/instantiate",
            "kubernetes.io/change-cause",
            "kubernetes.io/limit-ranger",
            "kubernetes.io/config.mirror",
            "kubernetes.io/config.hash",
            "kubernetes.io/config.source",
            "kubernetes.io/config.seen",
            "kubernetes.io/psp",
            "kubeadm.kubernetes.io/kube-apiserver.advertise-address.endpoint",
            "kubeadm.kubernetes.io/etcd.advertise-client-urls",
            "alpha.image-policy.k8s.io/failed-open",
        ] {
            assert!(written_by_kubernetes(key), "{key}");
            assert!(oracle::written_by_kubernetes(key), "oracle: {key}");
        }
    }

    /// Keys that change what a Pod may do, look-alikes outside Kubernetes'
    /// prefixes, and the keys tools write.
    #[test]
    fn other_keys_are_not() {
        for key in [
            "container.apparmor.security.beta.kubernetes.io/web",
            "seccomp.security.alpha.kubernetes.io/pod",
            "container.seccomp.security.alpha.kubernetes.io/web",
            "kubernetes.io/ingress-bandwidth",
            "kubernetes.io/egress-bandwidth",
            "cluster-autoscaler.kubernetes.io/safe-to-evict",
            "scheduler.alpha.kubernetes.io/critical-pod",
            "kubernetes.io.example.net/x",
            "kubectl.kubernetes.io.example.net/last-applied-configuration",
            "example.com/kubectl.kubernetes.io",
            "kubernetes.io/limit-ranger-x",
            "kubernetes.io/config",
            "xkubernetes.io/psp",
            "deprecated.daemonset.template.generation2",
            "deprecated.daemonset",
            "meta.helm.sh/release-name",
            "argocd.argoproj.io/tracking-id",
            "owner",
            "",
            "k",
        ] {
            assert!(!written_by_kubernetes(key), "{key}");
            assert!(!oracle::written_by_kubernetes(key), "oracle: {key}");
        }
    }

    #[test]
    fn the_setting_decides_whether_they_count_as_listed() {
        assert!(Bookkeeping::Listed.counts_as_listed("kubernetes.io/limit-ranger"));
        assert!(!Bookkeeping::Judged.counts_as_listed("kubernetes.io/limit-ranger"));
        assert!(!Bookkeeping::Listed.counts_as_listed("example.com/owner"));
    }

    /// Keys built from the entries' pieces, so that near misses are common.
    fn near_key() -> impl Strategy<Value = String> {
        let pieces: Vec<String> = KEYS
            .iter()
            .flat_map(|entry| {
                let entry = entry.trim_end_matches('*');
                (0..=entry.len())
                    .filter(|&i| entry.is_char_boundary(i))
                    .map(move |i| entry[..i].to_string())
            })
            .chain(["x", ".", "/", "-", "K"].map(String::from))
            .collect();
        prop::collection::vec(prop::sample::select(pieces), 0..3).prop_map(|p| p.concat())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(3000))]
        #[test]
        fn the_fast_test_agrees_with_the_set_read_literally(
            key in prop_oneof![near_key(), ".{0,40}"],
        ) {
            prop_assert_eq!(written_by_kubernetes(&key), oracle::written_by_kubernetes(&key), "{:?}", key);
        }
    }
}
