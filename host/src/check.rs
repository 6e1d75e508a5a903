//! `policy-runner check`: a whole directory of manifests judged before they
//! are deployed, with the objects the controllers will make from them.
//!
//! Each object is judged as Kubewarden's audit scanner judges what is in a
//! cluster: as the CREATE request the API server would send for it
//! (`objects` says what the API server and the controllers add), under the
//! rules, selectors and settings of the policy manifest given (`policies`),
//! through the compiled module, compiled once.

pub mod manifests;
pub mod objects;
pub mod report;
mod rows;
mod spill;

pub use rows::Rows;

use std::collections::HashSet;
use std::io::{self, Write};
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use rayon::prelude::*;
use serde_json::Value;

use crate::admission::{Namespaces, Policy, Scope, audit, module_rules, request};
use manifests::{Input, Source};
use objects::{Admission, Candidate};
use policy_evaluator::capabilities::cluster::Cluster;
use policy_evaluator::capabilities::{Allowed, Context};
use policy_evaluator::group::Judging;
use policy_evaluator::kinds::Addressed;
use policy_evaluator::kinds::group_version;
use policy_evaluator::metadata::ExecutionMode;
use policy_evaluator::{CompiledPolicy, Policy as Instance};

/// Where the policy to apply comes from.
#[derive(Debug, Clone)]
pub enum PolicySource {
    /// A policy (group) manifest: its rules, selectors and settings.
    Manifest(PathBuf, Value),
    /// Settings alone: the rules are the module's own, if it is annotated,
    /// else every object is judged.
    Settings(Value),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Table,
    Json,
    /// GitHub Actions' workflow commands.
    Github,
    /// JUnit XML.
    Junit,
    /// SARIF 2.1.0, for code scanning.
    Sarif,
}

/// A whole `check`, as the command line gives it.
#[derive(Debug, Clone)]
pub struct Command {
    pub module: PathBuf,
    pub inputs: Vec<String>,
    pub policy: PolicySource,
    /// The namespace of objects that name none; `default` when `None`.
    pub namespace: Option<String>,
    pub kubectl_apply: bool,
    pub derive: bool,
    pub format: Format,
    /// Print only the rejected objects; the summary counts them all.
    pub only_rejected: bool,
    /// Fail (exit status 2) when a file was skipped as what a tool renders.
    pub strict: bool,
    /// Read hidden directories too.
    pub hidden: bool,
    /// How many workers judge; 0: one a core.
    pub jobs: usize,
    /// How the policy runs and what answers its lookups.
    pub evaluation: Evaluation,
}

/// How the module runs, and what answers its Kubernetes lookups: the
/// objects of the input, and the objects given besides.
#[derive(Debug, Clone, Default)]
pub struct Evaluation {
    /// `-e`: the module's metadata gives it otherwise.
    pub execution_mode: Option<ExecutionMode>,
    /// Trust the module's metadata for the kinds it may look up, when no
    /// policy manifest lists them (a ClusterAdmissionPolicy's
    /// `contextAwareResources` does).
    pub allow_context_aware: bool,
    /// Files and directories of objects that are in the cluster already.
    pub cluster_objects: Vec<String>,
}

/// How a check ended: its exit status, 0 when nothing is rejected, 1 when
/// something is, 2 when some input could not be used (with `strict`, or
/// was skipped as what a tool renders).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finished {
    pub status: u8,
    /// How many objects were judged, the derived ones included.
    pub checked: usize,
}

impl Command {
    /// Runs the check and writes its report to `out` as it goes; `Err`
    /// (exit status 2) when the module, the policy or its settings cannot
    /// be used, and nothing was checked, or when the report cannot be
    /// written. A reader that stops early (`| head`) ends the report, not
    /// the check.
    pub fn run(
        &self,
        progress: impl FnMut(usize, usize),
        out: &mut dyn Write,
    ) -> Result<Finished, String> {
        let module = self.module.display();
        let bytes =
            std::fs::read(&self.module).map_err(|e| format!("cannot read {module}: {e}"))?;
        policy_evaluator::webassembly(&self.module, &bytes)?;
        let compiled = CompiledPolicy::from_bytes_as(&bytes, self.evaluation.execution_mode)
            .map_err(|e| e.to_string())?;
        let listed = compiled
            .metadata()
            .map(|metadata| metadata.context_aware_resources.clone())
            .unwrap_or_default();
        let mut warnings = Vec::new();
        let policy = match &self.policy {
            PolicySource::Manifest(path, manifest) => {
                Policy::from_manifest(manifest).map_err(|e| format!("{}: {e}", path.display()))?
            }
            PolicySource::Settings(settings) => {
                let rules =
                    module_rules(compiled.metadata()).map_err(|e| format!("{module}: {e}"))?;
                let mut policy = Policy::from_settings(settings.clone(), rules);
                match self.evaluation.allow_context_aware {
                    true => policy.context_aware_resources = listed,
                    false if !listed.is_empty() => warnings.push(format!(
                        "the module looks up {} in the cluster (its metadata's \
                         contextAwareResources), which it may not here: give \
                         --allow-context-aware, or a ClusterAdmissionPolicy that lists them",
                        listed
                            .iter()
                            .map(ToString::to_string)
                            .collect::<Vec<_>>()
                            .join(", ")
                    )),
                    false => {}
                }
                policy
            }
        };
        let cluster = match self.evaluation.cluster_objects.is_empty() {
            true => Vec::new(),
            false => cluster_objects(&self.evaluation.cluster_objects, &self.namespace)?,
        };
        let mut checker = Checker::new(&compiled, policy).map_err(|e| e.0)?;
        checker.cluster = cluster;
        checker.warnings = warnings;
        let admission = Admission {
            namespace: self
                .namespace
                .clone()
                .unwrap_or_else(|| "default".to_string()),
            kubectl_apply: self.kubectl_apply,
            derive: self.derive,
            cluster_kinds: Default::default(),
        };
        let search = manifests::Search {
            hidden: self.hidden,
        };
        let outcome = checker.check(&self.inputs, search, admission, self.jobs, progress)?;
        let mode = checker.policy().mode.as_str();
        let written = match self.format {
            Format::Table => report::table(&outcome, mode, self.only_rejected, out),
            Format::Json => report::json(&outcome, mode, self.only_rejected, out),
            Format::Github => report::github(&outcome, mode, out),
            Format::Junit => report::junit(&outcome, &checker.policy().name, out),
            Format::Sarif => report::sarif(&outcome, mode, &checker.policy().name, out),
        };
        match written.and_then(|()| out.flush()) {
            Err(e) if e.kind() != io::ErrorKind::BrokenPipe => {
                return Err(format!("cannot write the report: {e}"));
            }
            _ => {}
        }
        let unjudged = !outcome.unusable.is_empty() || (self.strict && outcome.unrendered() > 0);
        let status = match (unjudged, outcome.rejected()) {
            (true, _) => 2,
            (false, 0) => 0,
            (false, _) => 1,
        };
        Ok(Finished {
            status,
            checked: outcome.rows.len(),
        })
    }
}

/// The verdict on one object.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Row {
    /// `Kind namespace/name`.
    pub object: String,
    /// The chain of objects it is made from, empty for an object of the
    /// input itself.
    pub derived_from: Vec<String>,
    pub source: Source,
    pub accepted: bool,
    /// The rejection, as the person whose request is rejected reads it.
    pub message: Option<String>,
    /// The keys of the object's annotations as judged, sorted: what the
    /// cluster tests hold to the objects a real cluster makes.
    pub annotations: Vec<String>,
    /// Judged as an audit: it came from a cluster (`kubectl get -o yaml`),
    /// and the audit scanner sends it with no sender.
    pub audited: bool,
}

/// What a check found.
#[derive(Debug, Default)]
pub struct Outcome {
    pub rows: Rows,
    pub unusable: Vec<manifests::Unusable>,
    /// Input skipped as no object to check, each with what to do instead.
    pub notes: Vec<manifests::Note>,
    /// Objects the policy's rules or selectors leave out.
    pub not_covered: usize,
    /// Objects that came from a cluster, judged as the audit scanner sends
    /// them.
    pub audited: usize,
    /// Said once each: what the check had to assume.
    pub warnings: Vec<String>,
}

impl Outcome {
    pub fn rejected(&self) -> usize {
        self.rows.rejected()
    }

    /// The files skipped as what a tool renders.
    pub fn unrendered(&self) -> usize {
        self.notes.iter().filter(|note| note.unrendered).count()
    }
}

/// Why a check could not run at all.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unusable(pub String);

/// A policy ready to judge: its settings checked, its module compiled, an
/// instance of it a worker.
pub struct Checker {
    policy: Policy,
    compiled: CompiledPolicy,
    judging: Judging,
    /// Tells this checker's instances from another's on a worker thread.
    id: usize,
    /// What answers the policy's lookups: the objects of the kinds it may
    /// read, the input's and those given besides, known once the input
    /// is read.
    context: OnceLock<Arc<Context>>,
    /// Objects already in the cluster (`--cluster-objects`).
    cluster: Vec<Value>,
    /// Said before any object is judged.
    warnings: Vec<String>,
}

thread_local! {
    /// One instance a worker thread, as policy-server keeps one a worker
    /// (an instance cannot move between threads), with the id of the
    /// checker it is for.
    static INSTANCE: std::cell::RefCell<Option<(usize, Instance)>> =
        const { std::cell::RefCell::new(None) };
}

/// What judging one object of the input gave, merged into the outcome in
/// the input's order whatever the order it was judged in.
#[derive(Default)]
struct Part {
    rows: Vec<Row>,
    /// An object the API server refuses as admitted (its annotations too
    /// big once kubectl adds its copy): nothing is judged of it.
    unusable: Vec<manifests::Unusable>,
    not_covered: usize,
    audited: usize,
    /// Each warning, and whether it is said once only.
    warnings: Vec<(String, bool)>,
}

impl Part {
    fn warn_once(&mut self, warning: String) {
        self.warnings.push((warning, true));
    }

    /// `said`: the warnings said once only that are said already.
    fn merge_into(self, outcome: &mut Outcome, said: &mut HashSet<String>) {
        for row in self.rows {
            outcome.rows.push(row);
        }
        outcome.unusable.extend(self.unusable);
        outcome.not_covered += self.not_covered;
        outcome.audited += self.audited;
        for (warning, once) in self.warnings {
            if !once || said.insert(warning.clone()) {
                outcome.warnings.push(warning);
            }
        }
    }
}

fn keeping(e: io::Error) -> String {
    format!("cannot keep the verdicts on disk: {e}")
}

/// How many objects of the input are judged at once: enough to keep every
/// worker busy, few enough that what waits is small.
const BATCH: usize = 256;

/// The fewest objects a worker takes of a batch: judging one takes
/// microseconds, making a worker's instance of the module milliseconds.
const PER_WORKER: usize = 8;

impl Checker {
    /// Instantiates `compiled` and validates the policy's settings (every
    /// member's, for a group), as policy-server does at start-up.
    pub fn new(compiled: &CompiledPolicy, policy: Policy) -> Result<Checker, Unusable> {
        static IDS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let instance = compiled
            .instantiate()
            .map_err(|e| Unusable(e.to_string()))?;
        let judging = policy.judging(&instance).map_err(Unusable)?;
        Ok(Checker {
            policy,
            compiled: compiled.clone(),
            judging,
            id: IDS.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            context: OnceLock::new(),
            cluster: Vec::new(),
            warnings: Vec::new(),
        })
    }

    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// Judges every object of `inputs`, and the objects made from them,
    /// in two passes: the first reads the whole input, learning what it
    /// says of owners, Namespaces and custom kinds while the objects wait
    /// on disk (`spill`); the second judges them in batches, the objects
    /// of a batch on `jobs` workers (0: one a core), merged in the input's
    /// order so that the outcome is the same however many judge; the
    /// verdicts wait on disk too (`rows`), for the report. `progress` hears
    /// how many of the input's objects are judged.
    pub fn check(
        &self,
        inputs: &[String],
        search: manifests::Search,
        mut admission: Admission,
        jobs: usize,
        mut progress: impl FnMut(usize, usize),
    ) -> Result<Outcome, String> {
        let mut outcome = Outcome {
            rows: Rows::on_disk().map_err(keeping)?,
            ..Outcome::default()
        };
        outcome.warnings.extend(self.policy.unaudited());
        outcome.warnings.extend(self.warnings.iter().cloned());
        // The objects a context-aware policy may look up, as the input
        // holds them.
        let resources = &self.policy.context_aware_resources;
        let mut readable: Vec<Value> = Vec::new();
        let mut said: HashSet<String> = outcome.warnings.iter().cloned().collect();
        let mut owners = objects::Owners::default();
        let mut namespaces = Namespaces::new();
        let spilling = |e: std::io::Error| format!("cannot keep the objects read on disk: {e}");
        let mut spill = spill::Spill::new().map_err(spilling)?;
        let mut identities = Identities::default();
        let workers = rayon::ThreadPoolBuilder::new()
            .num_threads(jobs)
            .build()
            .map_err(|e| format!("cannot start {jobs} workers: {e}"))?;
        // Reading is one worker's, but for what it parses in parallel (a
        // stream's documents, a List's entries), which takes them all.
        workers.install(|| {
            manifests::read_each(inputs, search, &mut |input| match input {
                Input::Manifest(manifest) => {
                    let facts = &manifest.facts;
                    if let Some(warning) = identities.again(&manifest, &admission) {
                        outcome.warnings.push(warning);
                    }
                    if let Some(identity) = &facts.identity
                        && resources.iter().any(|resource| {
                            resource.kind == identity.kind
                                && group_version(&resource.api_version).0 == identity.group
                        })
                    {
                        let mut object = manifest.object();
                        in_namespace(&mut object, &admission.namespace);
                        readable.push(object);
                    }
                    owners.insert_all(facts.owner);
                    namespaces.extend(facts.namespace.clone());
                    admission.cluster_kinds.extend(facts.cluster_kind.clone());
                    spill.push(&manifest);
                }
                Input::Unusable(unusable) => outcome.unusable.push(unusable),
                Input::Note(note) => outcome.notes.push(note),
            })
        });
        readable.extend(self.cluster.iter().cloned());
        let _ = self.context.set(Arc::new(Context {
            policy: self.policy.name.clone(),
            host: Arc::new(Cluster::new(readable)),
            resources: resources.clone(),
            allowed: Allowed::default(),
        }));
        let total = spill.len();
        let mut read_back = spill.read_back().map_err(spilling)?;
        let mut done = 0;
        loop {
            let batch = read_back
                .by_ref()
                .take(BATCH)
                .collect::<Result<Vec<_>, _>>()
                .map_err(spilling)?;
            if batch.is_empty() {
                break;
            }
            // Each object parsed back, and judged, on a worker; a few
            // objects on one, which alone makes an instance of the module.
            let parts: Vec<Result<Part, String>> = workers.install(|| {
                batch
                    .into_par_iter()
                    .with_min_len(PER_WORKER)
                    .map(|spilled| {
                        let object = spilled.object().map_err(spilling)?;
                        self.judge_manifest(
                            object,
                            &spilled.source,
                            &admission,
                            &owners,
                            &namespaces,
                        )
                    })
                    .collect()
            });
            for part in parts {
                part?.merge_into(&mut outcome, &mut said);
                done += 1;
                progress(done, total);
            }
        }
        outcome.rows.finish().map_err(keeping)?;
        let nothing = outcome.rows.is_empty() && outcome.not_covered == 0;
        if nothing && outcome.unusable.is_empty() && outcome.notes.is_empty() {
            outcome.warnings.push(
                "no manifests found: nothing in the input is a YAML or JSON file of \
                 Kubernetes objects, so nothing was checked"
                    .to_string(),
            );
        }
        Ok(outcome)
    }

    /// One object of the input and those made from it, on this thread's
    /// instance.
    fn judge_manifest(
        &self,
        object: Value,
        source: &Source,
        admission: &Admission,
        owners: &objects::Owners,
        namespaces: &Namespaces,
    ) -> Result<Part, String> {
        let mut part = Part::default();
        let idle = objects::idle(&object).filter(|_| admission.derive);
        let candidates = objects::candidates(object, admission, owners);
        if let Some(reason) = objects::annotations_too_big(&candidates[0].object) {
            part.unusable.push(manifests::Unusable {
                source: source.clone(),
                reason,
            });
            return Ok(part);
        }
        if let Some(idle) = idle {
            // Named as admitted, in its namespace, as its row names it;
            // a warning, since nothing of the input was skipped.
            let warning = format!(
                "{} ({source}) {idle}",
                objects::describe(&candidates[0].object),
            );
            part.warnings.push((warning, false));
        }
        INSTANCE.with(|cell| {
            let mut slot = cell.borrow_mut();
            if slot.as_ref().is_none_or(|(id, _)| *id != self.id) {
                let context = self.context.get().cloned().unwrap_or_default();
                let instance = self
                    .compiled
                    .instantiate_with(context)
                    .map_err(|e| e.to_string())?;
                *slot = Some((self.id, instance));
            }
            let (_, instance) = slot.as_ref().expect("instantiated above");
            for candidate in candidates {
                self.judge(candidate, source, namespaces, instance, &mut part)?;
            }
            Ok(part)
        })
    }

    fn judge(
        &self,
        candidate: Candidate,
        source: &Source,
        namespaces: &Namespaces,
        instance: &Instance,
        outcome: &mut Part,
    ) -> Result<(), String> {
        let object = &candidate.object;
        let addressed = Addressed::of(object);
        match self
            .policy
            .scope(object, None, "CREATE", &addressed, namespaces)
        {
            Scope::Out(_) => {
                outcome.not_covered += 1;
                return Ok(());
            }
            Scope::Assumed(warning) => outcome.warn_once(warning),
            Scope::In => {}
        }
        let audited = candidate.made_by.is_none() && stored(object);
        let mut request = match audited {
            true => audit::envelope(object),
            false => request::envelope(
                "CREATE",
                &addressed,
                object,
                request::sender(candidate.made_by),
            ),
        };
        // What the row says of the object, before it moves into the
        // request.
        let described = objects::describe(object);
        let generated = object["metadata"]["generateName"].is_string();
        let mut annotations: Vec<String> = object["metadata"]["annotations"]
            .as_object()
            .map(|a| a.keys().cloned().collect())
            .unwrap_or_default();
        annotations.sort_unstable();
        request["object"] = candidate.object;
        // The API server's conditions; the audit scanner never reads them
        // (adm-controller 1.35, `internal/audit-scanner`).
        if !audited {
            let unmet = self
                .policy
                .unmet_condition(&request)
                .map_err(|e| format!("{source}: {described}: {e}"))?;
            if unmet.is_some() {
                outcome.not_covered += 1;
                return Ok(());
            }
        }
        outcome.audited += usize::from(audited);
        let request = serde_json::to_vec(&request).unwrap_or_default();
        // A policy that fails on an object rejects it, as policy-server
        // answers it (code 500).
        let (accepted, message) = match self.judging.judge(instance, &request) {
            Ok(judged) => (judged.verdict.accepted, judged.line()),
            Err(e) => (false, Some(format!("internal server error: {e}"))),
        };
        if generated {
            outcome.warn_once(format!(
                "{ILLUSTRATIVE} `{}` are illustrative: the API server ends each name made from a \
                 `generateName` with five random characters of its own",
                objects::ILLUSTRATIVE_SUFFIX
            ));
        }
        outcome.rows.push(Row {
            object: described,
            derived_from: candidate.derived_from,
            source: source.clone(),
            accepted,
            message,
            annotations,
            audited,
        });
        Ok(())
    }
}

/// The objects of the input by what names them in a cluster, to say when
/// one is given twice (the second would replace, or be refused as, the
/// first). Fingerprints (`objects::fingerprint`), not names: eight bytes
/// an object.
#[derive(Default)]
struct Identities {
    seen: std::collections::HashSet<u64>,
}

impl Identities {
    /// A warning when `manifest` names an object the input already gave.
    fn again(&mut self, manifest: &manifests::Manifest, admission: &Admission) -> Option<String> {
        let objects::Identity {
            group,
            kind,
            namespace,
            name,
        } = manifest.facts.identity.as_ref()?;
        let namespace = match namespace {
            Some(namespace) => namespace.clone(),
            None if !admission.namespaced(kind) => String::new(),
            None => admission.namespace.clone(),
        };
        if self
            .seen
            .insert(objects::fingerprint((group, kind, &namespace, name)))
        {
            return None;
        }
        let place = match namespace.as_str() {
            "" => name.clone(),
            namespace => format!("{namespace}/{name}"),
        };
        Some(format!(
            "{kind} {place} is in the input more than once (again at {}): the cluster keeps one \
             object of that name, so each copy is judged as if it were the only one",
            manifest.source
        ))
    }
}

/// A namespaced object that names no namespace is in the one kubectl
/// would create it in.
fn in_namespace(object: &mut Value, namespace: &str) {
    let kind = object["kind"].as_str().unwrap_or_default();
    if policy_evaluator::kinds::namespaced(kind)
        && object["metadata"]["namespace"].as_str().is_none()
        && let Some(metadata) = object["metadata"].as_object_mut()
    {
        metadata.insert("namespace".to_string(), Value::from(namespace));
    }
}

/// The objects `--cluster-objects` names, read as manifests are: any that
/// cannot be read is an error, since a lookup would silently miss it.
fn cluster_objects(inputs: &[String], namespace: &Option<String>) -> Result<Vec<Value>, String> {
    let read = manifests::read_inputs(inputs);
    if let Some(unusable) = read.unusable.first() {
        return Err(format!(
            "--cluster-objects: {}: {}",
            unusable.source, unusable.reason
        ));
    }
    let namespace = namespace.as_deref().unwrap_or("default");
    Ok(read
        .manifests
        .iter()
        .map(|manifest| {
            let mut object = manifest.object();
            in_namespace(&mut object, namespace);
            object
        })
        .collect())
}

/// How the warning about made-up name suffixes starts.
const ILLUSTRATIVE: &str = "names ending in";

/// Whether `object` came from a cluster (`kubectl get -o yaml`): it carries
/// what only a stored object has. (`kubectl create --dry-run -o yaml`
/// writes `creationTimestamp: null`.)
fn stored(object: &Value) -> bool {
    let metadata = &object["metadata"];
    ["uid", "resourceVersion", "creationTimestamp"]
        .iter()
        .any(|field| !metadata[field].is_null())
}
