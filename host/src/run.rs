//! `policy-runner run`: one request evaluated as `kwctl run` evaluates it,
//! flag for flag, and the same one line printed: the AdmissionResponse,
//! with a mutation as its base64 JSONPatch. The target is a module, or a
//! YAML file of Kubewarden policies whose `spec.module` names local
//! modules, each run in turn as kwctl runs them.
//!
//! A policy's host calls are answered by a kwctl session file
//! (`--replay-host-capabilities-interactions`), or, for Kubernetes
//! lookups, by objects the user gives (`--cluster-objects`) or by the live
//! cluster of the kubeconfig (`--live-cluster`, which kwctl reaches
//! without being asked); what nothing answers fails the call with a
//! message that says what would.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use policy_evaluator::capabilities::cluster::Cluster;
use policy_evaluator::capabilities::kubectl::Kubectl;
use policy_evaluator::capabilities::session::{Record, Replay};
use policy_evaluator::capabilities::{Allowed, Context, Host, Unanswered};
use policy_evaluator::metadata::{ExecutionMode, Resource};
use policy_evaluator::response::{AdmissionResponse, Handling, Mode};
use policy_evaluator::{CompiledPolicy, HostError, Limits};
use serde_json::Value;

use crate::admission::{Declared, manifest_name};

/// Where a policy's host calls are recorded to or replayed from.
#[derive(Debug, Clone)]
pub enum Session {
    Record(PathBuf),
    Replay(PathBuf),
}

/// A `run`, as the command line gives it.
#[derive(Debug, Clone)]
pub struct Command {
    /// A module, or a YAML file of policies (`.yaml`, `.yml`).
    pub target: PathBuf,
    /// The request's JSON text: an AdmissionRequest, bare or in an
    /// AdmissionReview, or any JSON with `raw`.
    pub request: String,
    /// The settings of a module (a policies file brings its own).
    pub settings: Option<Value>,
    pub execution_mode: Option<ExecutionMode>,
    pub raw: bool,
    /// Trust the module's metadata for the kinds it may look up.
    pub allow_context_aware: bool,
    pub session: Option<Session>,
    pub allowed_host_capabilities: Vec<String>,
    /// Files and directories of objects that answer Kubernetes lookups.
    pub cluster_objects: Vec<String>,
    /// Answer Kubernetes lookups from the live cluster of the kubeconfig,
    /// through kubectl.
    pub live_cluster: bool,
    /// What bounds each evaluation (`--policy-timeout`, which a policy's
    /// `timeoutEvalSeconds` overrides, and `--max-memory`).
    pub limits: Limits,
}

/// What a run printed and said.
#[derive(Debug, Default)]
pub struct Ran {
    /// One AdmissionResponse a policy, as kwctl prints them.
    pub lines: Vec<String>,
    /// Warnings for standard error, as kwctl logs them.
    pub said: Vec<String>,
}

/// One policy to run: its module, how policy-server would treat its
/// response, and what it may look up.
struct Target {
    module: PathBuf,
    settings: Value,
    handling: Handling,
    resources: BTreeSet<Resource>,
    /// From a policies file: its `-e`, `--raw` and `--allow-context-aware`
    /// do not apply, as in kwctl.
    declared: bool,
    /// Its `spec.timeoutEvalSeconds`.
    timeout: Option<Duration>,
}

impl Target {
    /// How an error names it: the policy, or the module given.
    fn name(&self) -> String {
        match self.declared {
            true => format!("policy {}", self.handling.policy),
            false => self.module.display().to_string(),
        }
    }
}

impl Command {
    pub fn run(&self) -> Result<Ran, String> {
        let mut ran = Ran::default();
        let allowed = Allowed::new(&self.allowed_host_capabilities)
            .map_err(|e| format!("--allowed-host-capabilities: {e}"))?;
        let targets = self.targets(&mut ran)?;
        let request = request(&self.request, self.raw)?;
        if self.live_cluster && !self.cluster_objects.is_empty() {
            return Err(
                "--live-cluster and --cluster-objects both answer the lookups: give one"
                    .to_string(),
            );
        }
        let cluster: Option<Arc<dyn Host>> =
            match (self.live_cluster, self.cluster_objects.is_empty()) {
                (true, _) => Some(Arc::new(Kubectl::new(None))),
                (false, true) => None,
                (false, false) => Some(Arc::new(cluster(&self.cluster_objects, &mut ran)?)),
            };
        if targets.len() > 1 {
            ran.said.push(
                "Multiple policies defined inside of the CRD file. All of them will run sequentially using the same request."
                    .to_string(),
            );
        }
        // One host for the run: a recording holds every policy's calls in
        // order, and a replay of it answers them in that order.
        let (host, replay, record) = self.host(cluster)?;
        for target in targets {
            let compiled = CompiledPolicy::from_file_as(
                &target.module,
                if target.declared {
                    None
                } else {
                    self.execution_mode
                },
            )
            .map_err(|e| format!("{}: {e}", target.name()))?;
            let resources = match target.declared {
                true => target.resources.clone(),
                false => self.resources(&compiled, &mut ran),
            };
            let raw = !target.declared && self.raw
                || compiled.metadata().is_some_and(|metadata| metadata.raw);
            let context = Arc::new(Context {
                policy: target.handling.policy.clone(),
                host: host.clone(),
                resources,
                allowed: allowed.clone(),
            });
            let limits = Limits {
                timeout: self
                    .limits
                    .timeout
                    .map(|timeout| target.timeout.unwrap_or(timeout)),
                ..self.limits
            };
            let instance = compiled
                .instantiate_bounded(context, limits)
                .map_err(|e| format!("{}: {e}", target.name()))?;
            let settings = serde_json::to_vec(&target.settings).map_err(|e| e.to_string())?;
            let verdict = instance.settings_verdict(&settings);
            if !verdict.valid {
                return Err(format!(
                    "Provided settings are not valid: {}",
                    verdict.message.unwrap_or_default()
                ));
            }
            let body = match raw {
                true => request.whole.as_bytes(),
                false => request.admission()?.as_bytes(),
            };
            let answer = instance.answer(body, &settings, raw);
            // kwctl has no deadline, and would wait for ever: a policy cut
            // at its deadline is an error here, where any other failure is
            // printed as the 500 rejection kwctl prints.
            match &answer.failure {
                Some(failure @ HostError::Timeout { .. }) => {
                    return Err(format!("{}: {failure}", target.name()));
                }
                Some(failure) => ran.said.push(format!("{}: {failure}", target.name())),
                None => {}
            }
            let response = target.handling.apply(answer.response(body, raw));
            ran.lines.push(line(&response)?);
        }
        if let Some((record, path)) = record {
            record.write(&path)?;
        }
        if let Some(leftovers) = replay.and_then(|replay| replay.leftovers()) {
            ran.said.push(leftovers);
        }
        Ok(ran)
    }

    /// The policies to run: the module with the settings given, or each
    /// policy of a YAML file, with its own.
    fn targets(&self, ran: &mut Ran) -> Result<Vec<Target>, String> {
        let file = self.target.to_string_lossy();
        if !(file.ends_with(".yaml") || file.ends_with(".yml")) {
            return Ok(vec![Target {
                module: self.target.clone(),
                settings: self
                    .settings
                    .clone()
                    .unwrap_or_else(|| Value::Object(Default::default())),
                handling: Handling::run(),
                resources: BTreeSet::new(),
                declared: false,
                timeout: None,
            }]);
        }
        if self.raw {
            return Err(format!(
                "The --raw option cannot be used with a YAML file: {file}"
            ));
        }
        if self.settings.is_some() {
            ran.said.push(
                "The --settings-json and --settings-path options are ignored when using a YAML file"
                    .to_string(),
            );
        }
        let text = std::fs::read_to_string(&self.target)
            .map_err(|e| format!("Cannot open YAML file {file:?}: {e}"))?;
        let mut targets = Vec::new();
        for (line, document) in policy_manifests::documents(&text) {
            let manifest = match document {
                Ok(Value::Null) => continue,
                Ok(manifest) => manifest,
                Err(reason) => return Err(format!("{file}:{line}: {reason}")),
            };
            targets.push(declared(&self.target, &manifest)?);
        }
        if targets.is_empty() {
            return Err(format!("{file} holds no policy"));
        }
        Ok(targets)
    }

    /// The kinds a module run from the command line may look up: what its
    /// metadata lists, with `--allow-context-aware`, else none, as kwctl
    /// warns.
    fn resources(&self, compiled: &CompiledPolicy, ran: &mut Ran) -> BTreeSet<Resource> {
        let listed = compiled
            .metadata()
            .map(|metadata| metadata.context_aware_resources.clone())
            .unwrap_or_default();
        if self.allow_context_aware {
            return listed;
        }
        if !listed.is_empty() {
            ran.said.push(
                "Policy requires access to Kubernetes resources at evaluation time. During this execution the access to Kubernetes resources is denied. This can cause the policy to not behave properly"
                    .to_string(),
            );
            ran.said.push(
                "Carefully review which types of Kubernetes resources the policy needs via the `inspect` command, then run the policy using the `--allow-context-aware` flag."
                    .to_string(),
            );
        }
        BTreeSet::new()
    }

    /// The run's host: a replayed session, else the objects given (or
    /// nothing), recorded when asked.
    #[allow(clippy::type_complexity)]
    fn host(
        &self,
        cluster: Option<Arc<dyn Host>>,
    ) -> Result<
        (
            Arc<dyn Host>,
            Option<Arc<Replay>>,
            Option<(Arc<Record>, PathBuf)>,
        ),
        String,
    > {
        if let Some(Session::Replay(path)) = &self.session {
            let replay = Arc::new(Replay::read(path)?);
            return Ok((replay.clone(), Some(replay), None));
        }
        let answering: Box<dyn Host> = match cluster {
            Some(cluster) => Box::new(Shared(cluster)),
            None => Box::new(Unanswered),
        };
        match &self.session {
            Some(Session::Record(path)) => {
                let record = Arc::new(Record::new(answering));
                Ok((record.clone(), None, Some((record, path.clone()))))
            }
            _ => Ok((Arc::from(answering), None, None)),
        }
    }
}

/// A cluster several policies of one run share.
struct Shared(Arc<dyn Host>);

impl Host for Shared {
    fn answer(&self, request: &policy_evaluator::capabilities::Request) -> Result<Vec<u8>, String> {
        self.0.answer(request)
    }
}

/// A policy of a policies file, as kwctl reads it: a ClusterAdmissionPolicy
/// or AdmissionPolicy (its mode, `mutating`, `message`, and a
/// ClusterAdmissionPolicy's `contextAwareResources`).
fn declared(file: &Path, manifest: &Value) -> Result<Target, String> {
    let kind = manifest["kind"].as_str().unwrap_or_default();
    let name = manifest_name(manifest);
    let spec = &manifest["spec"];
    let settings = match Declared::read(manifest)? {
        Declared::Policy(settings) => settings,
        Declared::Group(_) => {
            return Err(format!(
                "{}: {kind} {name}: policy-runner run takes a ClusterAdmissionPolicy or an AdmissionPolicy; check and test judge with a group",
                file.display()
            ));
        }
    };
    let policy = crate::admission::Policy::from_manifest(manifest)
        .map_err(|e| format!("{}: {e}", file.display()))?;
    let module = spec["module"]
        .as_str()
        .ok_or_else(|| format!("{}: {kind} {name} has no `spec.module`", file.display()))?;
    Ok(Target {
        module: local_module(file, module)?,
        settings,
        handling: Handling {
            policy: name,
            mode: Mode::parse(&policy.mode)?,
            mutating: policy.mutating,
            message: spec["message"].as_str().map(str::to_string),
        },
        resources: policy.context_aware_resources,
        declared: true,
        timeout: policy.timeouts.first().copied().flatten(),
    })
}

/// The file a `spec.module` names: a path (relative to the policies file's
/// directory, then to the working directory) or a `file://` URL.
fn local_module(file: &Path, module: &str) -> Result<PathBuf, String> {
    let path = match module.split_once("://") {
        None => PathBuf::from(module),
        Some(("file", path)) => PathBuf::from(path),
        Some((scheme, _)) => {
            return Err(format!(
                "{}: the module {module} is fetched with {scheme}://, which policy-runner run does not do: pull it (kwctl pull) and name the file",
                file.display()
            ));
        }
    };
    let beside = file.parent().map(|dir| dir.join(&path));
    match beside {
        Some(beside) if path.is_relative() && beside.exists() => Ok(beside),
        _ => Ok(path),
    }
}

/// The request as given: its text whole (for `--raw`), and the
/// AdmissionRequest inside an AdmissionReview.
struct Request {
    whole: String,
    inner: Option<String>,
}

impl Request {
    fn admission(&self) -> Result<&str, String> {
        self.inner
            .as_deref()
            .ok_or_else(|| "Invalid request object".to_string())
    }
}

fn request(text: &str, raw: bool) -> Result<Request, String> {
    let invalid = |e: serde_json::Error| format!("the request is not valid JSON: {e}");
    let mut de = serde_json::Deserializer::from_str(text);
    de.disable_recursion_limit();
    let value: Value = serde::Deserialize::deserialize(&mut de).map_err(invalid)?;
    de.end().map_err(invalid)?;
    let inner = match &value {
        Value::Object(map)
            if map.get("kind").and_then(Value::as_str) == Some("AdmissionReview") =>
        {
            match map.get("request") {
                Some(request @ Value::Object(_)) => Some(request.to_string()),
                _ if raw => None,
                _ => return Err("invalid AdmissionReview object".to_string()),
            }
        }
        Value::Object(_) => Some(text.trim().to_string()),
        _ => None,
    };
    Ok(Request {
        whole: text.trim().to_string(),
        inner,
    })
}

/// The objects that answer Kubernetes lookups, read as `check` reads
/// manifests; a namespaced object that names no namespace is in
/// `default`, where kubectl would create it.
fn cluster(inputs: &[String], ran: &mut Ran) -> Result<Cluster, String> {
    let read: crate::check::Inputs = policy_manifests::read_inputs(inputs);
    if let Some(unusable) = read.unusable.first() {
        return Err(format!(
            "--cluster-objects: {}: {}",
            unusable.source, unusable.reason
        ));
    }
    for note in &read.notes {
        ran.said
            .push(format!("--cluster-objects: {}: {}", note.source, note.text));
    }
    let objects = read.manifests.iter().map(|manifest| {
        let mut object = manifest.object();
        let kind = object["kind"].as_str().unwrap_or_default().to_string();
        if policy_core::kinds::namespaced(&kind)
            && object["metadata"]["namespace"].as_str().is_none()
            && let Some(metadata) = object["metadata"].as_object_mut()
        {
            metadata.insert("namespace".to_string(), Value::from("default"));
        }
        object
    });
    Ok(Cluster::new(objects))
}

fn line(response: &AdmissionResponse) -> Result<String, String> {
    serde_json::to_string(response).map_err(|e| e.to_string())
}
