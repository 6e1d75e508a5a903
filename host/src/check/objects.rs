//! Objects as the API server admits them, and the objects its controllers
//! make from them, with the annotations each carries when it reaches a
//! validating webhook:
//!
//! - a DaemonSet gains `deprecated.daemonset.template.generation` (the
//!   apps/v1 conversion of the template generation the registry sets);
//! - a Deployment's ReplicaSet takes the Deployment's annotations but the
//!   deployment controller's own and `last-applied-configuration`
//!   (`pkg/controller/deployment/util/deployment_util.go`), plus its
//!   `revision`, `desired-replicas` and `max-replicas`;
//! - a CronJob's Job takes `spec.jobTemplate.metadata.annotations` plus
//!   `batch.kubernetes.io/cronjob-scheduled-timestamp`;
//! - a Pod takes its template's annotations (an Indexed Job's Pod also
//!   `batch.kubernetes.io/job-completion-index`), from a ReplicaSet,
//!   DaemonSet, StatefulSet, ReplicationController or Job;
//! - a StatefulSet's PersistentVolumeClaims take their
//!   `volumeClaimTemplates`' annotations.
//!
//! Only what the controllers make: nothing from a workload scaled to zero
//! (a Deployment at zero still gets its ReplicaSet, at zero), a paused
//! Deployment, a suspended Job or CronJob, a Job of no parallelism; and
//! nothing from an object a controller made (it carries a controller's
//! `ownerReference`) or whose children the input holds already, as a
//! cluster dump does.
//!
//! `test_data/cluster/recorded/` holds what a real cluster sent;
//! `host/tests/derived.rs` holds these objects to it, and cluster/run holds
//! `check` to the objects a real cluster's controllers make.

use policy_core::controllers::{self, ControllerId};
use serde_json::{Map, Value, json};

mod admission;
mod facts;
mod names;
mod owners;

use admission::admitted;
pub use admission::{Admission, annotations_too_big};
pub use facts::{Facts, Identity};
pub use names::{ILLUSTRATIVE_SUFFIX, generated_name};
use names::{indexed_pod_base, template_hash};
pub use owners::{Owner, Owners, fingerprint};

/// One object to judge, and the chain of objects it is made from.
#[derive(Debug, Clone)]
pub struct Candidate {
    pub object: Value,
    /// `Deployment shop/web → ReplicaSet shop/web-5d8f6b7c9d`, empty for
    /// an object of the input itself.
    pub derived_from: Vec<String>,
    /// The controller that creates it; `None` for an object of the input.
    pub made_by: Option<&'static controllers::Controller>,
}

/// How a controller derives objects from one it owns. Who it is and what it
/// owns and makes is its row in the policy's table
/// (`controllers::CONTROLLERS`), the one table of controllers: so that the
/// requests `check` sends as a controller and the keys the policy lets that
/// controller write name the same one.
struct Derives {
    /// What an object of the kind it owns must hold for the API server to
    /// take it.
    requires: Requires,
    /// Why it makes nothing from an object it owns now, by the object's
    /// choice (paused, suspended): said, since nothing it would make is
    /// checked.
    idle: fn(&Value) -> Option<&'static str>,
    /// The objects it creates from one it owns, unless it is idle.
    makes: fn(&Value) -> Vec<Value>,
}

/// How `controller` derives its objects: a row of the policy's table, each
/// named here (a controller added there is a compile error here until it
/// says how).
fn derives(controller: &controllers::Controller) -> Derives {
    let requires = |selector, containers| Requires {
        selector,
        containers,
    };
    match controller.id {
        ControllerId::Deployment => Derives {
            requires: requires(true, TEMPLATE),
            idle: |d| {
                (d["spec"]["paused"] == true).then_some(
                    "is paused (`spec.paused: true`): its controller makes no ReplicaSet until it \
                     is resumed, so none is checked",
                )
            },
            makes: |d| vec![deployment_replicaset(d)],
        },
        ControllerId::ReplicaSet => Derives {
            requires: requires(true, TEMPLATE),
            idle: |_| None,
            makes: |rs| pods_if_scaled(rs, None),
        },
        ControllerId::Replication => Derives {
            requires: requires(false, TEMPLATE),
            idle: |_| None,
            makes: |rc| pods_if_scaled(rc, None),
        },
        ControllerId::DaemonSet => Derives {
            requires: requires(true, TEMPLATE),
            idle: |_| None,
            makes: |ds| vec![pod(ds, None)],
        },
        ControllerId::StatefulSet => Derives {
            requires: requires(true, TEMPLATE),
            idle: |_| None,
            // Ordinal 0's claims, then its Pod, as the controller makes them.
            makes: |sts| match replicas(sts) {
                0 => vec![],
                _ => {
                    let mut made = statefulset_claims(sts, "0");
                    made.push(pod(sts, Some("0")));
                    made
                }
            },
        },
        ControllerId::Job => Derives {
            requires: requires(false, TEMPLATE),
            idle: |job| {
                (job["spec"]["suspend"] == true).then_some(
                    "is suspended (`spec.suspend: true`): its controller makes no Pod until it is \
                     resumed, so none is checked",
                )
            },
            makes: |job| match job["spec"]["parallelism"].as_u64().unwrap_or(1) {
                0 => vec![],
                _ => vec![pod(job, None)],
            },
        },
        ControllerId::CronJob => Derives {
            requires: requires(false, JOB_TEMPLATE),
            idle: |cj| {
                (cj["spec"]["suspend"] == true).then_some(
                    "is suspended (`spec.suspend: true`): its controller makes no Job until it is \
                     resumed, so none is checked",
                )
            },
            makes: |cj| vec![cronjob_job(cj)],
        },
    }
}

/// What the API server requires of an object of one kind before it takes
/// it (its validation, `pkg/apis/<group>/validation`): a kustomize patch
/// lacks it, and would derive nothing real.
/// Its schema is the `v1` of the kind's group.
#[derive(Debug, Clone, Copy)]
struct Requires {
    /// apps/v1 requires `spec.selector`.
    selector: bool,
    /// Where its (pod template's) containers are listed, of which it
    /// needs one.
    containers: &'static [&'static str],
}

const TEMPLATE: &[&str] = &["spec", "template", "spec", "containers"];
const JOB_TEMPLATE: &[&str] = &[
    "spec",
    "jobTemplate",
    "spec",
    "template",
    "spec",
    "containers",
];

/// A Pod, which no controller of the table makes others from.
const POD: Requires = Requires {
    selector: false,
    containers: &["spec", "containers"],
};

/// What `object` lacks of the fields its kind requires, as the
/// API server would name them; empty for an object the check has no rule
/// for.
fn missing_required(object: &Value) -> Vec<String> {
    let kind = object["kind"].as_str().unwrap_or_default();
    let (requires, group) = match controller_of(kind) {
        Some(controller) => (derives(controller).requires, controller.owner.group),
        None if kind == "Pod" => (POD, ""),
        None => return vec![],
    };
    // The `v1` of the kind's group, whose schema the rule is.
    let v1 = match object["apiVersion"].as_str() {
        Some("v1") => group.is_empty(),
        Some(api_version) => api_version.strip_suffix("/v1") == Some(group) && !group.is_empty(),
        None => false,
    };
    if !v1 {
        return vec![];
    }
    let mut missing = Vec::new();
    if requires.selector && !object["spec"]["selector"].is_object() {
        missing.push("`spec.selector`".to_string());
    }
    let listed = requires
        .containers
        .iter()
        .fold(object, |value, field| &value[field]);
    if listed.as_array().is_none_or(|list| list.is_empty()) {
        missing.push(format!(
            "a container in `{}`",
            requires.containers.join(".")
        ));
    }
    missing
}

/// Why the API server would refuse a workload that lacks what its kind
/// requires (a kustomize patch looks so): judged, it would derive nothing
/// real.
pub(crate) fn incomplete(object: &Value) -> Option<String> {
    let missing = missing_required(object);
    (!missing.is_empty()).then(|| {
        format!(
            "a {} without {}, which the API server refuses: not judged (a kustomize \
             patch? check what `kubectl kustomize` renders)",
            object["kind"].as_str().unwrap_or_default(),
            missing.join(" or ")
        )
    })
}

/// Why the controller of `object` makes nothing from it now, if it is
/// paused or suspended.
pub fn idle(object: &Value) -> Option<&'static str> {
    let controller = controller_of(object["kind"].as_str()?)?;
    (derives(controller).idle)(object)
}

/// The controller that makes objects from objects of `kind`, if any.
fn controller_of(kind: &str) -> Option<&'static controllers::Controller> {
    controllers::CONTROLLERS
        .iter()
        .find(|c| c.owner.kind == kind)
}

const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";
const TEMPLATE_GENERATION: &str = "deprecated.daemonset.template.generation";
const REVISION: &str = "deployment.kubernetes.io/revision";

/// The annotations the deployment controller does not copy from a
/// Deployment to its ReplicaSets.
const NOT_COPIED: [&str; 6] = [
    LAST_APPLIED,
    REVISION,
    "deployment.kubernetes.io/revision-history",
    "deployment.kubernetes.io/desired-replicas",
    "deployment.kubernetes.io/max-replicas",
    "deprecated.deployment.rollback.to",
];

/// The object of the input as admitted, then each object made from it.
/// `owners`: the controllers the input's objects name.
pub fn candidates(manifest: Value, admission: &Admission, owners: &Owners) -> Vec<Candidate> {
    // Made by a controller already, or its children are in the input.
    let made_already = owners::controller_of_object(&manifest).is_some()
        || owners.own_children_in_input(&manifest);
    let object = admitted(manifest, admission);
    let mut out = vec![Candidate {
        object,
        derived_from: Vec::new(),
        made_by: None,
    }];
    if admission.derive && !made_already {
        let mut i = 0;
        while i < out.len() {
            let parent = &out[i];
            let chain = {
                let mut chain = parent.derived_from.clone();
                chain.push(describe(&parent.object));
                chain
            };
            let kind = parent.object["kind"].as_str().unwrap_or_default();
            if let Some(controller) = controller_of(kind)
                && let derives = derives(controller)
                && (derives.idle)(&parent.object).is_none()
            {
                for child in (derives.makes)(&parent.object) {
                    out.push(Candidate {
                        object: child,
                        derived_from: chain.clone(),
                        made_by: Some(controller),
                    });
                }
            }
            i += 1;
        }
    }
    out
}

/// `Kind namespace/name`, or `Kind name` for a cluster-wide object.
pub fn describe(object: &Value) -> String {
    let kind = object["kind"].as_str().unwrap_or("object");
    format!("{kind} {}", place(object))
}

/// `namespace/name`, or `name` for a cluster-wide object; a generated
/// name's prefix where the object has no name yet.
pub fn place(object: &Value) -> String {
    let metadata = &object["metadata"];
    let name = metadata["name"]
        .as_str()
        .filter(|n| !n.is_empty())
        .or_else(|| metadata["generateName"].as_str())
        .unwrap_or("");
    match metadata["namespace"].as_str() {
        Some(namespace) => format!("{namespace}/{name}"),
        None => name.to_string(),
    }
}

fn deployment_replicaset(deployment: &Value) -> Value {
    let spec = &deployment["spec"];
    let replicas = replicas(deployment);
    let surge = match spec["strategy"]["type"].as_str() {
        Some("Recreate") => 0,
        _ => scaled(
            &spec["strategy"]["rollingUpdate"]["maxSurge"],
            replicas,
            "25%",
        ),
    };
    let revision = annotation(deployment, REVISION)
        .and_then(Value::as_str)
        .and_then(|r| r.parse::<u64>().ok())
        .map_or(1, |r| r + 1);
    let mut annotations = annotations(deployment);
    annotations.retain(|key, _| !NOT_COPIED.contains(&key.as_str()));
    annotations.insert(REVISION.into(), revision.to_string().into());
    annotations.insert(
        "deployment.kubernetes.io/desired-replicas".into(),
        replicas.to_string().into(),
    );
    annotations.insert(
        "deployment.kubernetes.io/max-replicas".into(),
        (replicas + surge).to_string().into(),
    );
    let mut template = spec["template"].clone();
    let hash = template_hash(&template);
    labels_mut(&mut template).insert("pod-template-hash".into(), hash.clone().into());
    let mut selector = spec["selector"].clone();
    if let Some(labels) = selector["matchLabels"].as_object_mut() {
        labels.insert("pod-template-hash".into(), hash.clone().into());
    }
    let name = format!("{}-{hash}", name(deployment));
    json!({
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {
            "name": name,
            "namespace": deployment["metadata"]["namespace"],
            "labels": template["metadata"]["labels"],
            "annotations": annotations,
            "ownerReferences": [owner(deployment)],
        },
        "spec": {"replicas": replicas, "selector": selector, "template": template},
    })
}

fn cronjob_job(cronjob: &Value) -> Value {
    let template = &cronjob["spec"]["jobTemplate"];
    let mut annotations = annotations(template);
    annotations.insert(
        "batch.kubernetes.io/cronjob-scheduled-timestamp".into(),
        "2026-12-02T12:00:00Z".into(),
    );
    json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            // The controller names a Job after its scheduled minute.
            "name": format!("{}-29413020", name(cronjob)),
            "namespace": cronjob["metadata"]["namespace"],
            "labels": template["metadata"]["labels"],
            "annotations": annotations,
            "ownerReferences": [owner(cronjob)],
        },
        "spec": template["spec"],
    })
}

/// The workload's `spec.replicas`, 1 where it names none.
fn replicas(workload: &Value) -> u64 {
    workload["spec"]["replicas"].as_u64().unwrap_or(1)
}

/// A Pod of a ReplicaSet or ReplicationController that wants any.
fn pods_if_scaled(workload: &Value, ordinal: Option<&str>) -> Vec<Value> {
    match replicas(workload) {
        0 => vec![],
        _ => vec![pod(workload, ordinal)],
    }
}

/// The claims the StatefulSet controller makes for the Pod at `ordinal`,
/// one per `volumeClaimTemplates` entry, named `<claim>-<set>-<ordinal>`,
/// with the template's annotations and the set's selector labels added to
/// the template's (`pkg/controller/statefulset/stateful_set_utils.go`).
fn statefulset_claims(set: &Value, ordinal: &str) -> Vec<Value> {
    let templates = set["spec"]["volumeClaimTemplates"].as_array();
    templates
        .into_iter()
        .flatten()
        .map(|template| {
            let mut labels = template["metadata"]["labels"]
                .as_object()
                .cloned()
                .unwrap_or_default();
            if let Some(selector) = set["spec"]["selector"]["matchLabels"].as_object() {
                labels.extend(selector.clone());
            }
            let claim = template["metadata"]["name"].as_str().unwrap_or_default();
            json!({
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "metadata": {
                    "name": format!("{claim}-{}-{ordinal}", name(set)),
                    "namespace": set["metadata"]["namespace"],
                    "labels": labels,
                    "annotations": annotations(template),
                },
                "spec": template["spec"],
            })
        })
        .collect()
}

/// The Pod a workload's controller makes from its template; a
/// StatefulSet's Pods are named by their ordinal.
fn pod(workload: &Value, ordinal: Option<&str>) -> Value {
    let template = &workload["spec"]["template"];
    let mut annotations = annotations(template);
    let indexed = workload["kind"] == "Job" && workload["spec"]["completionMode"] == "Indexed";
    if indexed {
        annotations.insert(
            "batch.kubernetes.io/job-completion-index".into(),
            "0".into(),
        );
    }
    let mut metadata = json!({
        "namespace": workload["metadata"]["namespace"],
        "labels": template["metadata"]["labels"],
        "annotations": annotations,
        "ownerReferences": [owner(workload)],
    });
    let fields = metadata.as_object_mut().expect("an object");
    match ordinal {
        Some(ordinal) => fields.insert(
            "name".into(),
            format!("{}-{ordinal}", name(workload)).into(),
        ),
        None => {
            let base = match indexed {
                true => indexed_pod_base(name(workload), "0"),
                false => format!("{}-", name(workload)),
            };
            fields.insert("name".into(), generated_name(&base).into());
            fields.insert("generateName".into(), base.into())
        }
    };
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": template["spec"]})
}

fn owner(object: &Value) -> Value {
    json!({
        "apiVersion": object["apiVersion"],
        "kind": object["kind"],
        "name": name(object),
        "uid": object["metadata"]["uid"].as_str().unwrap_or(""),
        "controller": true,
        "blockOwnerDeletion": true,
    })
}

fn name(object: &Value) -> &str {
    object["metadata"]["name"].as_str().unwrap_or("")
}

/// An int-or-percent (`maxSurge`) of `total`, rounded up as the deployment
/// controller rounds a surge.
fn scaled(value: &Value, total: u64, default: &str) -> u64 {
    let text = match value {
        Value::Number(n) => return n.as_u64().unwrap_or(0),
        Value::String(s) => s.as_str(),
        _ => default,
    };
    match text.strip_suffix('%').and_then(|p| p.parse::<u64>().ok()) {
        Some(percent) => (total * percent).div_ceil(100),
        None => text.parse().unwrap_or(0),
    }
}

/// One annotation of `object` (or of a template), looked up in place.
fn annotation<'v>(object: &'v Value, key: &str) -> Option<&'v Value> {
    object["metadata"]["annotations"].get(key)
}

/// A copy of the annotations of `object` (or of a template), to build a
/// derived object's from.
fn annotations(object: &Value) -> Map<String, Value> {
    object["metadata"]["annotations"]
        .as_object()
        .cloned()
        .unwrap_or_default()
}

/// The map at `path` in `value`, made (as an empty map) where it is
/// missing or not a map.
fn map_at<'v>(value: &'v mut Value, path: &[&str]) -> &'v mut Map<String, Value> {
    let mut here = value;
    for field in path {
        if !here.is_object() {
            *here = json!({});
        }
        here = here
            .as_object_mut()
            .expect("made an object above")
            .entry(*field)
            .or_insert_with(|| json!({}));
    }
    if !here.is_object() {
        *here = json!({});
    }
    here.as_object_mut().expect("made an object above")
}

fn metadata_mut(object: &mut Value) -> &mut Map<String, Value> {
    map_at(object, &["metadata"])
}

fn annotations_mut(object: &mut Value) -> &mut Map<String, Value> {
    map_at(object, &["metadata", "annotations"])
}

fn labels_mut(template: &mut Value) -> &mut Map<String, Value> {
    map_at(template, &["metadata", "labels"])
}

#[cfg(test)]
mod tests {

    /// The names a test result gives an object, and the name in
    /// `describe`'s rows: with its namespace where it has one, the
    /// generated name's prefix where it has no name yet.
    #[test]
    fn an_object_is_placed_with_its_namespace_where_it_has_one() {
        let pod = json!({"kind": "Pod", "metadata": {"name": "web", "namespace": "shop"}});
        assert_eq!(
            (place(&pod), describe(&pod)),
            ("shop/web".to_string(), "Pod shop/web".to_string())
        );
        let namespace = json!({"kind": "Namespace", "metadata": {"name": "shop"}});
        assert_eq!(place(&namespace), "shop");
        let generated = json!({"kind": "Pod", "metadata": {"name": "", "generateName": "web-", "namespace": "shop"}});
        assert_eq!(place(&generated), "shop/web-");
    }
    use super::*;

    /// A text read as `check` reads it.
    fn read_checked(text: &str) -> crate::check::Inputs {
        let mut read = crate::check::Inputs::default();
        policy_manifests::read_text("m.yaml", text, &mut read);
        read
    }

    /// A workload without what its kind requires (a kustomize patch) is
    /// unusable, naming what it lacks; with it, an object.
    #[test]
    fn a_workload_without_its_required_fields_is_unusable() {
        let patch = read_checked(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec: {replicas: 3}\n",
        );
        assert!(patch.manifests.is_empty());
        assert_eq!(
            patch.unusable[0].reason,
            "a Deployment without `spec.selector` or a container in \
             `spec.template.spec.containers`, which the API server refuses: not judged (a \
             kustomize patch? check what `kubectl kustomize` renders)"
        );
        let cron =
            read_checked("apiVersion: batch/v1\nkind: CronJob\nmetadata: {name: c}\nspec: {}\n");
        assert!(
            cron.unusable[0]
                .reason
                .contains("`spec.jobTemplate.spec.template.spec.containers`")
        );
        let whole = read_checked(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  selector: {matchLabels: {app: web}}\n  template: {spec: {containers: [{name: c, image: i}]}}\n",
        );
        assert_eq!((whole.manifests.len(), whole.unusable.len()), (1, 0));
        // Another API's Deployment is not Kubernetes'.
        let other =
            read_checked("apiVersion: example.com/v1\nkind: Deployment\nmetadata: {name: w}\n");
        assert_eq!(other.manifests.len(), 1);
    }

    #[test]
    fn surges_round_up() {
        assert_eq!(scaled(&json!("25%"), 2, "25%"), 1);
        assert_eq!(scaled(&json!("25%"), 4, "25%"), 1);
        assert_eq!(scaled(&json!("25%"), 5, "25%"), 2);
        assert_eq!(scaled(&json!(3), 5, "25%"), 3);
        assert_eq!(scaled(&Value::Null, 1, "25%"), 1);
    }

    /// Every kind a controller makes objects from, and a Pod, is refused
    /// bare and taken whole, as its own API version defines it.
    #[test]
    fn what_each_kind_requires() {
        let kinds = controllers::CONTROLLERS
            .iter()
            .map(|c| (c.owner, derives(c).requires))
            .chain([(
                policy_core::audit::Kind {
                    group: "",
                    kind: "Pod",
                },
                POD,
            )]);
        for (owner, requires) in kinds {
            let kind = owner.kind;
            let api_version = match owner.group {
                "" => "v1".to_string(),
                group => format!("{group}/v1"),
            };
            let bare = json!({"apiVersion": api_version, "kind": kind, "spec": {}});
            let mut missing = vec![format!(
                "a container in `{}`",
                requires.containers.join(".")
            )];
            if requires.selector {
                missing.insert(0, "`spec.selector`".to_string());
            }
            assert_eq!(missing_required(&bare), missing, "{kind}");

            let mut whole = bare.clone();
            whole["spec"]["selector"] = json!({"matchLabels": {"app": "a"}});
            let (last, path) = requires.containers.split_last().unwrap();
            let spec = map_at(&mut whole, path);
            spec.insert(last.to_string(), json!([{"name": "c", "image": "i"}]));
            assert!(missing_required(&whole).is_empty(), "{kind}");

            let other = json!({"apiVersion": "example.com/v1", "kind": kind});
            assert!(missing_required(&other).is_empty(), "{kind}");
        }
        assert!(missing_required(&json!({"apiVersion": "v1", "kind": "Service"})).is_empty());
    }
}
