//! The annotation keys that Kubernetes' own components and kubectl write by
//! themselves, before or after the policy sees an object: its registry
//! strategies and API conversions, its admission plugins, its controllers,
//! the kubelet, kubeadm and kubectl. No manifest holds them, and an allowlist
//! that does not admit them breaks the cluster it guards (no DaemonSet can be
//! created, no Pod appears in a namespace with a LimitRange). Under
//! `allowKubernetesBookkeeping` (on unless turned off) the two criteria that
//! judge the keys outside the values count these as listed.
//!
//! A key counts only where Kubernetes could have written it in the request
//! at hand. Most are written in anyone's request (kubectl writes for its
//! user, the API server for every sender), and count by their name alone.
//! The rest name their writer (`Writer`): the keys that make a Pod a mirror
//! Pod come only from a node, the job controller's keys on Pods only from the
//! job controller, and each counts too on an update whose old object already
//! had it, and in an audit (a request with no sender) on an object its
//! writer makes (`audit`); an AppArmor key counts only where it restates the
//! Pod's own field. Set by anyone else, such a key would change what a component does
//! (the kubelet, the job controller, `kubectl drain`), so it stays the
//! user's, to list or not. Keys no entry names (seccomp's, a Pod's bandwidth,
//! the autoscaler's `safe-to-evict`, `deprecated.deployment.rollback.to`,
//! which makes the deployment controller roll back) are the user's too.

use crate::bytes;
use crate::controllers::{Controller, JOB_CONTROLLER};

/// Who writes an entry's keys, and so in which requests they count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Writer {
    /// The API server or kubectl, in any sender's request.
    Anyone,
    /// The kubelet, on the mirror Pods it creates as `system:node:<name>`.
    Node,
    /// A controller of kube-controller-manager.
    Controller(&'static Controller),
    /// The API server, restating a Pod's AppArmor field (1.30-1.33).
    AppArmorField,
}

/// One key, or a prefix when it ends in `*` (the only place a star may
/// stand), and its writer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    pub key: &'static str,
    pub writer: Writer,
}

const fn anyone(key: &'static str) -> Entry {
    Entry {
        key,
        writer: Writer::Anyone,
    }
}

const fn node(key: &'static str) -> Entry {
    Entry {
        key,
        writer: Writer::Node,
    }
}

const fn job_controller(key: &'static str) -> Entry {
    Entry {
        key,
        writer: Writer::Controller(&JOB_CONTROLLER),
    }
}

/// The set. Each entry names the Kubernetes source that writes it, on which
/// objects and in which releases ("all releases": every release Kubewarden
/// supports); a prefix says why everything under it is Kubernetes' own.
/// No two entries match the same key (`no_key_has_two_writers`).
pub const KEYS: &[Entry] = &[
    // kubectl, for whoever runs it: `apply` records the manifest in
    // `last-applied-configuration` on every object (k8s.io/api core/v1
    // annotation_key_constants.go), which the API server also rewrites on a
    // server-side apply of an object that has it (apimachinery
    // pkg/util/managedfields/internal/lastappliedupdater.go); `rollout
    // restart` writes `restartedAt` on a pod template (kubectl
    // pkg/polymorphichelpers/objectrestarter.go), which the controllers copy
    // to Pods. All releases. A prefix: only kubectl reads these keys, on the
    // client; no server component acts on any of them.
    anyone("kubectl.kubernetes.io/*"),
    // The deployment controller: `revision` on Deployments and ReplicaSets,
    // `revision-history`, `desired-replicas` and `max-replicas` on
    // ReplicaSets; it copies every other annotation of a Deployment to its
    // ReplicaSets but those it skips (`annotationsToSkip`,
    // pkg/controller/deployment/util/deployment_util.go). All releases.
    // In anyone's request: a Deployment exported with `kubectl get -o yaml`
    // and applied again carries `revision`, which the controller then
    // rewrites. A prefix: the controller owns it; whoever may write a
    // ReplicaSet may change its template, which says more than any key here.
    anyone("deployment.kubernetes.io/*"),
    // The apps/v1 conversion writes every DaemonSet's template generation
    // as this annotation (pkg/apis/apps/v1/conversion.go), which the
    // registry sets at creation and raises with each template change
    // (pkg/registry/apps/daemonset/strategy.go), before validating
    // admission, whoever sends the DaemonSet. 1.8+.
    anyone("deprecated.daemonset.template.generation"),
    // The CronJob controller, on each Job it creates (1.28+,
    // pkg/controller/cronjob/utils.go). Nothing reads it back, and a Job
    // exported and applied again carries it: no writer needed.
    anyone("batch.kubernetes.io/cronjob-scheduled-timestamp"),
    // The registry, on every Job created while Jobs were tracked with
    // finalizers behind this annotation (1.22-1.26,
    // pkg/registry/batch/job/strategy.go).
    anyone("batch.kubernetes.io/job-tracking"),
    // The job controller, on the Pods of an Indexed Job: their index (1.21+)
    // and, with a backoff limit per index, the failures counted so far
    // (1.28+; k8s.io/api batch/v1/types.go). The controller reads them back
    // from the Pods it adopts (pkg/controller/job/indexed_job_utils.go,
    // `getCompletionIndex`, `getIndexFailureCount`): set by another sender,
    // they would mark another's index done or failed. It acts as
    // `system:serviceaccount:kube-system:job-controller`.
    job_controller("batch.kubernetes.io/job-completion-index"),
    job_controller("batch.kubernetes.io/job-index-failure-count"),
    job_controller("batch.kubernetes.io/job-index-ignored-failure-count"),
    // `kubectl create job --from=cronjob/NAME` (kubectl
    // pkg/cmd/create/create_job.go). All releases.
    anyone("cronjob.kubernetes.io/instantiate"),
    // kubectl, only with `--record` or on an object that already has it
    // (cli-runtime pkg/genericclioptions/record_flags.go,
    // `ChangeCauseRecorder`); `kubectl rollout history` reads it (kubectl
    // pkg/polymorphichelpers/history.go), and the deployment controller
    // copies it from a Deployment to its ReplicaSets. All releases.
    anyone("kubernetes.io/change-cause"),
    // The LimitRanger admission plugin, on each Pod one of whose containers
    // it gave a default request or limit
    // (plugin/pkg/admission/limitranger/admission.go). All releases.
    anyone("kubernetes.io/limit-ranger"),
    // The kubelet, on the mirror Pods it creates for static Pods
    // (pkg/kubelet/pod/mirror_client.go, `CreateMirrorPod`;
    // pkg/kubelet/types/pod_update.go): only these reach the API server, and
    // only from a node, which the NodeRestriction plugin holds to Pods bound
    // to it. From anyone else `config.mirror` makes a Pod that no kubelet
    // runs, that gets no service account token and that `kubectl drain`
    // passes over. All releases.
    node("kubernetes.io/config.hash"),
    node("kubernetes.io/config.mirror"),
    node("kubernetes.io/config.seen"),
    node("kubernetes.io/config.source"),
    // kubeadm's static Pod manifests, so the mirror Pods of a kubeadm control
    // plane (cmd/kubeadm/app/constants/constants.go); `kubeadm join` and
    // `upgrade` read the etcd Pods' URLs back
    // (cmd/kubeadm/app/util/etcd/etcd.go). All releases.
    node("kubeadm.kubernetes.io/kube-apiserver.advertise-address.endpoint"),
    node("kubeadm.kubernetes.io/etcd.advertise-client-urls"),
    // kubeadm, run by an administrator, on the ConfigMaps of the components
    // it configures (cmd/kubeadm/app/componentconfigs). 1.19+.
    anyone("kubeadm.kubernetes.io/component-config.hash"),
    // The PodSecurityPolicy admission plugin, on each Pod it admitted
    // (pkg/security/podsecuritypolicy/util/util.go). 1.8-1.24; the plugin
    // was removed in 1.25, Pods admitted before still carry it.
    anyone("kubernetes.io/psp"),
    // The ImagePolicyWebhook admission plugin, on a Pod it admitted because
    // its backend failed and it fails open
    // (plugin/pkg/admission/imagepolicy/admission.go; k8s.io/api
    // core/v1/annotation_key_constants.go). All releases.
    anyone("alpha.image-policy.k8s.io/failed-open"),
    // The API server copies each container's AppArmor profile field (the
    // container's, else the Pod's) into this key before any webhook sees
    // the Pod, 1.30-1.33 (pkg/registry/core/pod/strategy.go,
    // `applyAppArmorVersionSkew`; stopped for 1.34), and from 1.30 on it
    // refuses a Pod whose key and field disagree. A prefix, for every
    // container's name; each key counts only where it says what the field
    // says (`apparmor`).
    Entry {
        key: "container.apparmor.security.beta.kubernetes.io/*",
        writer: Writer::AppArmorField,
    },
];

/// What a request says of who could have written a key.
pub trait Provenance {
    /// Whether `writer`, which writes `key`, could have written it in this
    /// request. Asked only of keys no value lists, with `Writer::Anyone`
    /// never.
    fn could_have_written(&self, writer: Writer, key: &str) -> bool;
}

/// A request that says nothing of its sender or its objects: only the keys
/// anyone's request carries count.
pub struct Unknown;

impl Provenance for Unknown {
    fn could_have_written(&self, _: Writer, _: &str) -> bool {
        false
    }
}

/// The first bytes of the entries: most keys start with none of them, and
/// are told apart by one look-up.
static FIRST_BYTES: [bool; 256] = {
    let mut first = [false; 256];
    let mut i = 0;
    while i < KEYS.len() {
        first[KEYS[i].key.as_bytes()[0] as usize] = true;
        i += 1;
    }
    first
};

/// Who writes `key`, if Kubernetes or kubectl does.
#[inline(always)]
pub fn writer_of(key: &str) -> Option<Writer> {
    let key = key.as_bytes();
    match key.first() {
        Some(&first) if FIRST_BYTES[first as usize] => KEYS
            .iter()
            .find(|entry| {
                let entry = entry.key.as_bytes();
                match entry.split_last() {
                    Some((b'*', prefix)) => {
                        key.len() >= prefix.len() && bytes::equal(&key[..prefix.len()], prefix)
                    }
                    _ => bytes::equal(key, entry),
                }
            })
            .map(|entry| entry.writer),
        _ => None,
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
    /// Whether `key` counts as listed without any value matching it: the
    /// setting allows it, and Kubernetes could have written it in the
    /// request `provenance` speaks of.
    #[inline(always)]
    pub fn counts_as_listed<P: Provenance + ?Sized>(self, key: &str, provenance: &P) -> bool {
        self == Bookkeeping::Listed
            && match writer_of(key) {
                None => false,
                Some(Writer::Anyone) => true,
                Some(writer) => provenance.could_have_written(writer, key),
            }
    }
}

/// The set read literally, each entry as a pattern of `pattern::oracle`:
/// for tests and fuzz targets to hold `writer_of` to.
#[cfg(any(test, feature = "reference"))]
pub mod oracle {
    use super::{KEYS, Provenance, Writer};

    pub fn writer_of(key: &str) -> Option<Writer> {
        let writers: Vec<Writer> = KEYS
            .iter()
            .filter(|entry| crate::pattern::oracle::matches(entry.key, key))
            .map(|entry| entry.writer)
            .collect();
        assert!(writers.len() <= 1, "{key} has two writers");
        writers.first().copied()
    }

    /// Whether `key` is Kubernetes' own in the request `provenance` speaks of.
    pub fn written_by_kubernetes(key: &str, provenance: &dyn Provenance) -> bool {
        match writer_of(key) {
            None => false,
            Some(Writer::Anyone) => true,
            Some(writer) => provenance.could_have_written(writer, key),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn entries_are_keys_or_prefixes() {
        for entry in KEYS {
            let stars = entry.key.matches('*').count();
            assert!(
                stars == 0 || (stars == 1 && entry.key.ends_with('*')),
                "{}: a star may only end an entry",
                entry.key
            );
            assert_eq!(crate::pattern::check(entry.key), Ok(()), "{}", entry.key);
        }
    }

    /// A prefix covers no other entry, and no key is named twice: each key
    /// has one writer, whatever order the entries are read in.
    #[test]
    fn no_key_has_two_writers() {
        for (i, a) in KEYS.iter().enumerate() {
            for b in &KEYS[i + 1..] {
                let (a, b) = (a.key, b.key);
                let overlap = match (a.strip_suffix('*'), b.strip_suffix('*')) {
                    (Some(p), Some(q)) => p.starts_with(q) || q.starts_with(p),
                    (Some(p), None) => b.starts_with(p),
                    (None, Some(q)) => a.starts_with(q),
                    (None, None) => a == b,
                };
                assert!(!overlap, "{a} and {b}");
            }
        }
    }

    /// What the components write, as the sources above spell it, with the
    /// writer each needs.
    #[test]
    fn the_keys_kubernetes_writes_have_their_writers() {
        let controller = Writer::Controller(&JOB_CONTROLLER);
        for (key, writer) in [
            (
                "kubectl.kubernetes.io/last-applied-configuration",
                Writer::Anyone,
            ),
            ("kubectl.kubernetes.io/restartedAt", Writer::Anyone),
            ("kubectl.kubernetes.io/default-container", Writer::Anyone),
            ("deployment.kubernetes.io/revision", Writer::Anyone),
            ("deployment.kubernetes.io/revision-history", Writer::Anyone),
            ("deployment.kubernetes.io/desired-replicas", Writer::Anyone),
            ("deployment.kubernetes.io/max-replicas", Writer::Anyone),
            ("deprecated.daemonset.template.generation", Writer::Anyone),
            (
                "batch.kubernetes.io/cronjob-scheduled-timestamp",
                Writer::Anyone,
            ),
            ("batch.kubernetes.io/job-tracking", Writer::Anyone),
            ("batch.kubernetes.io/job-completion-index", controller),
            ("batch.kubernetes.io/job-index-failure-count", controller),
            (
                "batch.kubernetes.io/job-index-ignored-failure-count",
                controller,
            ),
            ("cronjob.kubernetes.io/instantiate", Writer::Anyone),
            ("kubernetes.io/change-cause", Writer::Anyone),
            ("kubernetes.io/limit-ranger", Writer::Anyone),
            ("kubernetes.io/config.mirror", Writer::Node),
            ("kubernetes.io/config.hash", Writer::Node),
            ("kubernetes.io/config.source", Writer::Node),
            ("kubernetes.io/config.seen", Writer::Node),
            (
                "kubeadm.kubernetes.io/kube-apiserver.advertise-address.endpoint",
                Writer::Node,
            ),
            (
                "kubeadm.kubernetes.io/etcd.advertise-client-urls",
                Writer::Node,
            ),
            (
                "kubeadm.kubernetes.io/component-config.hash",
                Writer::Anyone,
            ),
            ("kubernetes.io/psp", Writer::Anyone),
            ("alpha.image-policy.k8s.io/failed-open", Writer::Anyone),
            (
                "container.apparmor.security.beta.kubernetes.io/web",
                Writer::AppArmorField,
            ),
        ] {
            assert_eq!(writer_of(key), Some(writer), "{key}");
            assert_eq!(oracle::writer_of(key), Some(writer), "oracle: {key}");
        }
    }

    /// Keys that change what a component does, look-alikes outside
    /// Kubernetes' prefixes, and the keys tools write.
    #[test]
    fn other_keys_are_not() {
        for key in [
            "deprecated.deployment.rollback.to",
            "seccomp.security.alpha.kubernetes.io/pod",
            "container.seccomp.security.alpha.kubernetes.io/web",
            "container.apparmor.security.beta.kubernetes.io",
            "kubernetes.io/ingress-bandwidth",
            "kubernetes.io/egress-bandwidth",
            "cluster-autoscaler.kubernetes.io/safe-to-evict",
            "scheduler.alpha.kubernetes.io/critical-pod",
            "kubernetes.io/config",
            "kubernetes.io/config.other",
            "kubeadm.kubernetes.io/other",
            "batch.kubernetes.io/job-name",
            "kubernetes.io.example.net/x",
            "kubectl.kubernetes.io.example.net/last-applied-configuration",
            "example.com/kubectl.kubernetes.io",
            "kubernetes.io/limit-ranger-x",
            "xkubernetes.io/psp",
            "deprecated.daemonset.template.generation2",
            "deprecated.daemonset",
            "meta.helm.sh/release-name",
            "argocd.argoproj.io/tracking-id",
            "owner",
            "",
            "k",
        ] {
            assert_eq!(writer_of(key), None, "{key}");
            assert_eq!(oracle::writer_of(key), None, "oracle: {key}");
        }
    }

    /// A request from a node, and one that says nothing of its sender.
    struct FromNode;

    impl Provenance for FromNode {
        fn could_have_written(&self, writer: Writer, _: &str) -> bool {
            writer == Writer::Node
        }
    }

    #[test]
    fn the_setting_and_the_writer_decide_whether_a_key_counts() {
        let (limit, mirror) = ("kubernetes.io/limit-ranger", "kubernetes.io/config.mirror");
        assert!(Bookkeeping::Listed.counts_as_listed(limit, &Unknown));
        assert!(!Bookkeeping::Judged.counts_as_listed(limit, &Unknown));
        assert!(!Bookkeeping::Listed.counts_as_listed("example.com/owner", &FromNode));
        assert!(!Bookkeeping::Listed.counts_as_listed(mirror, &Unknown));
        assert!(Bookkeeping::Listed.counts_as_listed(mirror, &FromNode));
        assert!(!Bookkeeping::Judged.counts_as_listed(mirror, &FromNode));
        let index = "batch.kubernetes.io/job-completion-index";
        assert!(!Bookkeeping::Listed.counts_as_listed(index, &FromNode));
    }

    /// Keys built from the entries' pieces, so that near misses are common.
    fn near_key() -> impl Strategy<Value = String> {
        let pieces: Vec<String> = KEYS
            .iter()
            .flat_map(|entry| {
                let entry = entry.key.trim_end_matches('*');
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
            prop_assert_eq!(writer_of(&key), oracle::writer_of(&key), "{:?}", key);
        }
    }
}
