//! The objects `check` derives, held to what a real cluster sent
//! (`test_data/cluster/recorded/`, written by cluster/run; Helm's release
//! by hand in `test_data/cluster/written/`): from each recorded object, the object
//! its controller made next must carry exactly the annotation keys of the
//! recorded one, and an object as admitted the keys the API server added.
//! (cluster/run itself holds `check` to the objects the controllers made.)

use std::collections::BTreeSet;
use std::path::Path;

use policy_core::controllers::CONTROLLERS;
use policy_host::check::objects::{Admission, Candidate, Owners, candidates};
use serde_json::Value;

fn recorded(name: &str) -> Value {
    recorded_request(name)["object"].clone()
}

/// The request of a recording (`1.37/<file>`), or of a hand-written request
/// by the number its file starts with.
fn recorded_request(name: &str) -> Value {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../test_data/cluster");
    let path = match name.contains('/') {
        true => dir.join("recorded").join(name),
        false => std::fs::read_dir(dir.join("written"))
            .expect("test_data/cluster/written")
            .map(|entry| entry.expect("an entry").path())
            .find(|path| {
                path.file_name()
                    .unwrap()
                    .to_string_lossy()
                    .starts_with(name)
            })
            .unwrap_or_else(|| panic!("no request {name}-*")),
    };
    let json: Value = serde_json::from_slice(&std::fs::read(&path).expect(name)).unwrap();
    match json["request"].is_object() {
        true => json["request"].clone(),
        false => json,
    }
}

// What a real cluster sent, by what it is.
const DEPLOYMENT: &str = "1.37/deployment-create-kubernetes-admin-2.json";
const ITS_REPLICASET: &str = "1.37/replicaset-create-deployment-controller-3.json";
const ITS_POD: &str = "1.37/pod-create-replicaset-controller-3.json";
const DAEMONSET: &str = "1.37/daemonset-create-kubernetes-admin.json";
const STATEFULSET: &str = "1.37/statefulset-create-kubernetes-admin.json";
const REPLICATIONCONTROLLER: &str = "1.37/replicationcontroller-create-kubernetes-admin.json";
/// `kubectl create job --from=cronjob/...`.
const JOB_FROM_CRONJOB: &str = "1.37/job-create-kubernetes-admin.json";

fn keys(object: &Value) -> BTreeSet<String> {
    object["metadata"]["annotations"]
        .as_object()
        .map(|a| a.keys().cloned().collect())
        .unwrap_or_default()
}

fn admission() -> Admission {
    Admission {
        namespace: "default".to_string(),
        kubectl_apply: false,
        derive: true,
        cluster_kinds: Default::default(),
    }
}

fn derived(object: &Value) -> Vec<Candidate> {
    candidates(object.clone(), &admission(), &Owners::default())
}

/// (the recorded object, the recorded objects made from it, in order):
/// together they hold every row of `CONTROLLERS` to what that controller
/// sent a real API server.
const CHAINS: [(&str, &[&str]); 8] = [
    // A Deployment applied, its ReplicaSet, that ReplicaSet's Pod.
    (DEPLOYMENT, &[ITS_REPLICASET, ITS_POD]),
    // A Deployment installed by Helm, and its ReplicaSet (by hand).
    ("29", &["30"]),
    (DAEMONSET, &["1.37/pod-create-daemon-set-controller-2.json"]),
    // `kubectl rollout restart`, and the Pods made after it.
    (
        "1.37/daemonset-update-kubernetes-admin.json",
        &["1.37/pod-create-daemon-set-controller.json"],
    ),
    (
        STATEFULSET,
        &["1.37/pod-create-statefulset-controller.json"],
    ),
    (
        REPLICATIONCONTROLLER,
        &["1.37/pod-create-replication-controller.json"],
    ),
    // A CronJob's Job, and a Job's Pod.
    (
        "1.37/cronjob-create-kubernetes-admin.json",
        &["1.37/job-create-cronjob-controller.json"],
    ),
    (
        "1.37/job-create-cronjob-controller.json",
        &["1.37/pod-create-job-controller-2.json"],
    ),
];

#[test]
fn derived_objects_carry_the_keys_the_controllers_wrote() {
    let mut held = BTreeSet::new();
    for (from, made) in CHAINS {
        // The recorded object stands for one of the input: no owner.
        let mut root = recorded(from);
        root["metadata"]
            .as_object_mut()
            .unwrap()
            .remove("ownerReferences");
        let chain = derived(&root);
        // Each object made is of a kind the policy's table says its maker
        // makes.
        for candidate in &chain[1..] {
            let maker = candidate.made_by.expect("a derived object has its maker");
            let kind = &candidate.object["kind"];
            assert!(
                maker.makes.iter().any(|made| kind == made),
                "{from}: {} makes {kind}, which controllers::CONTROLLERS does not say",
                maker.account
            );
        }
        for expected in made.iter() {
            // The recorded object's kind among those made (a StatefulSet
            // makes its claims before its Pod).
            let kind = recorded(expected)["kind"].clone();
            let candidate = chain[1..]
                .iter()
                .find(|c| c.object["kind"] == kind)
                .unwrap_or_else(|| panic!("{from} made no object for {expected}"));
            let sent = recorded_request(expected);
            let controller = candidate.made_by.expect("a derived object has its maker");
            assert_eq!(
                policy_host::admission::request::sender(Some(controller))["username"],
                sent["userInfo"]["username"],
                "{from} -> {expected}: the controller's identity"
            );
            held.insert(controller.account);
            let expected = recorded(expected);
            assert_eq!(candidate.object["kind"], expected["kind"], "{from}");
            assert_eq!(
                keys(&candidate.object),
                keys(&expected),
                "{from} -> {}",
                candidate.object["kind"]
            );
            assert_eq!(
                candidate.object["metadata"]["namespace"], expected["metadata"]["namespace"],
                "{from}"
            );
        }
    }
    // Every controller the check derives with, held to a recorded sender.
    let all: BTreeSet<&str> = CONTROLLERS.iter().map(|c| c.account).collect();
    assert_eq!(held, all, "a row of CONTROLLERS that no chain holds");
}

#[test]
fn derived_objects_say_what_they_come_from() {
    let chain = derived(&recorded(DEPLOYMENT));
    let from: Vec<String> = chain.iter().map(|c| c.derived_from.join(" → ")).collect();
    assert_eq!(from[0], "");
    assert_eq!(from[1], "Deployment shop/web");
    assert!(
        from[2].starts_with("Deployment shop/web → ReplicaSet shop/web-"),
        "{}",
        from[2]
    );
    assert_eq!(chain[2].object["kind"], "Pod");
}

/// A manifest as people write it reaches a webhook with what the API
/// server adds: the DaemonSet's template generation, kubectl's record of
/// the manifest, and kubectl's namespace.
#[test]
fn manifests_are_judged_as_admitted() {
    let mut daemonset = recorded(DAEMONSET);
    let metadata = daemonset["metadata"].as_object_mut().unwrap();
    metadata.remove("namespace");
    let annotations = metadata["annotations"].as_object_mut().unwrap();
    annotations.remove("deprecated.daemonset.template.generation");
    annotations.remove("kubectl.kubernetes.io/last-applied-configuration");
    let applied = Admission {
        namespace: "shop".to_string(),
        kubectl_apply: true,
        derive: false,
        cluster_kinds: Default::default(),
    };
    let admitted = candidates(daemonset.clone(), &applied, &Owners::default());
    assert_eq!(admitted.len(), 1, "nothing derived");
    assert!(admitted[0].made_by.is_none(), "the user sends it");
    assert_eq!(keys(&admitted[0].object), keys(&recorded(DAEMONSET)));
    assert_eq!(admitted[0].object["metadata"]["namespace"], "shop");
    let record = admitted[0].object["metadata"]["annotations"]
        ["kubectl.kubernetes.io/last-applied-configuration"]
        .as_str()
        .unwrap();
    let record: Value = serde_json::from_str(record).unwrap();
    assert_eq!(record, daemonset, "kubectl records the manifest as given");
    // Without kubectl apply, nothing of kubectl's.
    let plain = candidates(
        daemonset.clone(),
        &Admission {
            kubectl_apply: false,
            ..applied
        },
        &Owners::default(),
    );
    assert!(!keys(&plain[0].object).contains("kubectl.kubernetes.io/last-applied-configuration"));
}

#[test]
fn an_indexed_jobs_pods_carry_their_index() {
    let mut job = job_of_the_input();
    job["spec"]["completionMode"] = "Indexed".into();
    let chain = derived(&job);
    let pod = &chain[1].object;
    assert_eq!(pod["kind"], "Pod");
    assert_eq!(
        pod["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"],
        "0"
    );
    assert!(keys(pod).contains("example.com/owner"));
}

#[test]
fn a_cronjobs_job_takes_the_job_template_and_the_schedule() {
    let cronjob: Value = yaml_serde::from_str(
        "apiVersion: batch/v1
kind: CronJob
metadata: {name: report, annotations: {example.com/owner: a, kubectl.kubernetes.io/last-applied-configuration: x}}
spec:
  schedule: '0 * * * *'
  jobTemplate:
    metadata: {annotations: {example.com/owner: a}}
    spec:
      template:
        metadata: {annotations: {example.com/team: b}}
        spec: {containers: [{name: c, image: i}]}
",
    )
    .unwrap();
    let chain = derived(&cronjob);
    let kinds: Vec<&str> = chain
        .iter()
        .map(|c| c.object["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["CronJob", "Job", "Pod"]);
    assert_eq!(
        keys(&chain[1].object),
        BTreeSet::from([
            "batch.kubernetes.io/cronjob-scheduled-timestamp".to_string(),
            "example.com/owner".to_string()
        ])
    );
    assert_eq!(
        keys(&chain[2].object),
        BTreeSet::from(["example.com/team".to_string()])
    );
    assert_eq!(chain[2].object["metadata"]["namespace"], "default");
}

/// The recorded Job, as a manifest of the input (no owner).
fn job_of_the_input() -> Value {
    let mut job = recorded(JOB_FROM_CRONJOB);
    job["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("ownerReferences");
    job
}

fn kinds(chain: &[Candidate]) -> Vec<String> {
    chain
        .iter()
        .map(|c| c.object["kind"].as_str().unwrap().to_string())
        .collect()
}

/// What the controllers make nothing from: a workload at zero, paused or
/// suspended; a Deployment at zero still gets its ReplicaSet, at zero.
#[test]
fn nothing_is_made_where_no_controller_makes_anything() {
    let with = |prefix: &str, change: &dyn Fn(&mut Value)| {
        let mut object = recorded(prefix);
        change(&mut object);
        kinds(&derived(&object))
    };
    assert_eq!(
        with(DEPLOYMENT, &|d| d["spec"]["replicas"] = 0.into()),
        ["Deployment", "ReplicaSet"]
    );
    assert_eq!(
        with(DEPLOYMENT, &|d| d["spec"]["paused"] = true.into()),
        ["Deployment"]
    );
    assert_eq!(
        with(DEPLOYMENT, &|_| {}),
        ["Deployment", "ReplicaSet", "Pod"]
    );
    assert_eq!(
        with(STATEFULSET, &|s| s["spec"]["replicas"] = 0.into()),
        ["StatefulSet"]
    );
    assert_eq!(
        with(REPLICATIONCONTROLLER, &|rc| rc["spec"]["replicas"] =
            0.into()),
        ["ReplicationController"]
    );
    let job = |change: &dyn Fn(&mut Value)| {
        let mut job = job_of_the_input();
        change(&mut job);
        kinds(&derived(&job))
    };
    assert_eq!(job(&|j| j["spec"]["suspend"] = true.into()), ["Job"]);
    assert_eq!(job(&|j| j["spec"]["parallelism"] = 0.into()), ["Job"]);
    assert_eq!(job(&|_| {}), ["Job", "Pod"]);
    // `kubectl create job --from=cronjob` names the CronJob its controller:
    // such a Job is a child already, as in a dump.
    assert_eq!(kinds(&derived(&recorded(JOB_FROM_CRONJOB))), ["Job"]);
}

/// A cluster dump holds what the controllers made: an object with a
/// controller's ownerReference, or whose children the input holds, makes
/// nothing again.
#[test]
fn a_dump_is_not_made_twice() {
    let deployment = recorded(DEPLOYMENT);
    let replicaset = recorded(ITS_REPLICASET);
    let pod = recorded(ITS_POD);
    let dump = [deployment.clone(), replicaset.clone(), pod.clone()];
    let owners = Owners::of(dump.iter());
    let all: Vec<Vec<String>> = dump
        .iter()
        .map(|object| kinds(&candidates(object.clone(), &admission(), &owners)))
        .collect();
    assert_eq!(all, [["Deployment"], ["ReplicaSet"], ["Pod"]]);
    // The Deployment alone still makes its ReplicaSet and Pod.
    let alone = Owners::of([&deployment]);
    assert_eq!(
        kinds(&candidates(deployment.clone(), &admission(), &alone)),
        ["Deployment", "ReplicaSet", "Pod"]
    );
}

/// A StatefulSet's claims, as its controller names and annotates them.
#[test]
fn a_statefulsets_claims_take_their_templates_annotations() {
    let mut set = recorded(STATEFULSET);
    set["spec"]["volumeClaimTemplates"] = serde_json::json!([{
        "metadata": {"name": "data", "annotations": {"example.com/backup": "daily"}},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
    }]);
    let chain = derived(&set);
    assert_eq!(
        kinds(&chain),
        ["StatefulSet", "PersistentVolumeClaim", "Pod"]
    );
    let claim = &chain[1];
    let set_name = set["metadata"]["name"].as_str().unwrap();
    assert_eq!(
        claim.object["metadata"]["name"],
        format!("data-{set_name}-0")
    );
    assert_eq!(
        keys(&claim.object),
        BTreeSet::from(["example.com/backup".to_string()])
    );
    assert_eq!(claim.made_by.unwrap().account, "statefulset-controller");
}
