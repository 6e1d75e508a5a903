//! The controllers of kube-controller-manager whose objects `check`
//! derives, one table: who each is (the service account it acts as), the
//! kind it owns and the kinds it makes. The policy reads the job
//! controller's row, whose keys count only in its requests
//! (`kubernetes_keys`).

use crate::audit::Kind;

/// A controller of kube-controller-manager that makes objects from the
/// objects it owns. The policy needs only the job controller's, whose keys
/// count only where it could have written them: in its own requests, and in
/// an audit on the objects it makes. `check` (host) derives what each makes
/// and sends it as the controller does, from `CONTROLLERS`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Controller {
    /// Which one it is: the host says how each derives its objects in one
    /// exhaustive `match` on this, so that this table stays the only one.
    pub id: ControllerId,
    /// The service account it acts as in `kube-system`
    /// (kube-controller-manager's `--use-service-account-credentials`,
    /// kubeadm's default; the names of Kubernetes' bootstrap RBAC policy,
    /// `plugin/pkg/auth/authorizer/rbac/bootstrappolicy/controller_policy.go`).
    pub account: &'static str,
    /// The kind whose objects it runs, which controls what it makes.
    pub owner: Kind,
    /// The kinds of object it makes from one it owns, and writes its keys
    /// on.
    pub makes: &'static [&'static str],
}

/// The controllers of `CONTROLLERS`, one each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ControllerId {
    Deployment,
    ReplicaSet,
    Replication,
    DaemonSet,
    StatefulSet,
    Job,
    CronJob,
}

pub const DEPLOYMENT_CONTROLLER: Controller = controller(
    ControllerId::Deployment,
    "deployment-controller",
    "apps",
    "Deployment",
    &["ReplicaSet"],
);
pub const REPLICASET_CONTROLLER: Controller = controller(
    ControllerId::ReplicaSet,
    "replicaset-controller",
    "apps",
    "ReplicaSet",
    &["Pod"],
);
pub const REPLICATION_CONTROLLER: Controller = controller(
    ControllerId::Replication,
    "replication-controller",
    "",
    "ReplicationController",
    &["Pod"],
);
pub const DAEMON_SET_CONTROLLER: Controller = controller(
    ControllerId::DaemonSet,
    "daemon-set-controller",
    "apps",
    "DaemonSet",
    &["Pod"],
);
/// A Pod's claims (its `volumeClaimTemplates`), then the Pod.
pub const STATEFULSET_CONTROLLER: Controller = controller(
    ControllerId::StatefulSet,
    "statefulset-controller",
    "apps",
    "StatefulSet",
    &["PersistentVolumeClaim", "Pod"],
);
/// The job controller: a Job's Pods (`pkg/controller/job`), each made with
/// the Job as its controller owner.
pub const JOB_CONTROLLER: Controller = controller(
    ControllerId::Job,
    "job-controller",
    "batch",
    "Job",
    &["Pod"],
);
pub const CRONJOB_CONTROLLER: Controller = controller(
    ControllerId::CronJob,
    "cronjob-controller",
    "batch",
    "CronJob",
    &["Job"],
);

/// Every controller whose objects `check` derives, one row each: the one
/// table of who each is and what it makes, which the host reads as it is.
pub const CONTROLLERS: [Controller; 7] = [
    DEPLOYMENT_CONTROLLER,
    REPLICASET_CONTROLLER,
    REPLICATION_CONTROLLER,
    DAEMON_SET_CONTROLLER,
    STATEFULSET_CONTROLLER,
    JOB_CONTROLLER,
    CRONJOB_CONTROLLER,
];

const fn controller(
    id: ControllerId,
    account: &'static str,
    group: &'static str,
    kind: &'static str,
    makes: &'static [&'static str],
) -> Controller {
    Controller {
        id,
        account,
        owner: Kind { group, kind },
        makes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One row a controller, and one controller a kind it owns: `check`
    /// finds a row by the kind of the object.
    #[test]
    fn each_controller_has_one_row() {
        let distinct = |names: Vec<&str>| {
            names
                .iter()
                .collect::<std::collections::BTreeSet<_>>()
                .len()
        };
        let accounts = CONTROLLERS.map(|c| c.account).to_vec();
        let owners = CONTROLLERS.map(|c| c.owner.kind).to_vec();
        assert_eq!(distinct(accounts), CONTROLLERS.len());
        assert_eq!(distinct(owners), CONTROLLERS.len());
        let ids: std::collections::BTreeSet<String> =
            CONTROLLERS.map(|c| format!("{:?}", c.id)).into();
        assert_eq!(ids.len(), CONTROLLERS.len());
        assert!(CONTROLLERS.contains(&JOB_CONTROLLER));
    }
}
