//! `policy-runner check`: a whole directory of manifests judged before they
//! are deployed, with the objects the controllers will make from them.
//!
//! Each object is judged as Kubewarden's audit scanner judges what is in a
//! cluster: as the CREATE request the API server would send for it
//! (`objects` says what the API server and the controllers add), under the
//! rules, selectors and settings of the policy manifest given (`policies`),
//! through the compiled module, compiled once.

mod chain;
pub mod objects;
mod policies;
pub mod report;
mod rows;
mod spill;

pub use chain::Verdict;
pub use policies::{PolicySet, policy_set};
pub use rows::Rows;

/// What the commands read: the reader's objects, each with the facts
/// `check` learns of it on the worker that parsed it.
pub type Manifest = policy_manifests::Manifest<objects::Facts>;
pub type Input = policy_manifests::Input<objects::Facts>;
pub type Inputs = policy_manifests::Inputs<objects::Facts>;

use std::collections::HashSet;
use std::io::{self, Write};
use std::path::PathBuf;
use std::sync::Arc;

use rayon::prelude::*;
use serde_json::Value;

use crate::admission::{Namespaces, audit, request};
use chain::Chain;
use objects::{Admission, Candidate};
use policy_core::kinds::group_version;
use policy_evaluator::capabilities::cluster::Cluster;
use policy_evaluator::capabilities::{Allowed, Context};
use policy_evaluator::kinds::Addressed;
use policy_evaluator::metadata::ExecutionMode;
use policy_manifests::Source;

/// Where the policy to apply comes from.
#[derive(Debug, Clone)]
pub enum PolicySource {
    /// A policy (group) manifest: its rules, selectors and settings.
    Manifest(PathBuf, Value),
    /// Settings alone: the rules are the module's own, if it is annotated,
    /// else every object is judged.
    Settings(Value),
    /// A policy set: each policy (group) manifest runs the module its
    /// `spec.module` names (each member's, for a group), or `module` when
    /// one is given; mutating ones change an object before the next
    /// judges it.
    Set(PolicySet),
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
    /// The one module every policy runs; a policy set may leave each
    /// policy to name its own.
    pub module: Option<PathBuf>,
    /// Where modules named by reference are found.
    pub store: crate::modules::Store,
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
    /// What bounds each evaluation: `--policy-timeout` (which a policy's
    /// `timeoutEvalSeconds` overrides), `--max-memory`.
    pub limits: policy_evaluator::Limits,
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
        progress: impl FnMut(usize, usize) + Send,
        out: &mut dyn Write,
    ) -> Result<Finished, String> {
        let (chain, warnings) = self.chain()?;
        let each = matches!(self.policy, PolicySource::Set(_));
        let cluster = match self.evaluation.cluster_objects.is_empty() {
            true => Vec::new(),
            false => cluster_objects(&self.evaluation.cluster_objects, &self.namespace)?,
        };
        let checker = Checker {
            chain,
            cluster,
            warnings,
            each,
        };
        let admission = Admission {
            namespace: self
                .namespace
                .clone()
                .unwrap_or_else(|| "default".to_string()),
            kubectl_apply: self.kubectl_apply,
            derive: self.derive,
            cluster_kinds: Default::default(),
        };
        let search = policy_manifests::Search {
            hidden: self.hidden,
        };
        let outcome = checker.check(&self.inputs, search, admission, self.jobs, progress)?;
        // A set's rows say each policy's mode; the report's is its one
        // policy's.
        let (mode, name) = match (each, checker.chain.members.as_slice()) {
            (false, [member]) => (member.policy.mode.as_str(), member.policy.name.as_str()),
            _ => ("protect", "policy set"),
        };
        let written = match self.format {
            Format::Table => report::table(&outcome, mode, self.only_rejected, out),
            Format::Json => report::json(&outcome, mode, self.only_rejected, out),
            Format::Github => report::github(&outcome, mode, out),
            Format::Junit => report::junit(&outcome, name, out),
            Format::Sarif => report::sarif(&outcome, mode, name, out),
        };
        match written.and_then(|()| out.flush()) {
            Err(e) if e.kind() != io::ErrorKind::BrokenPipe => {
                return Err(format!("cannot write the report: {e}"));
            }
            _ => {}
        }
        let unjudged = !outcome.unusable.is_empty()
            || outcome.failed() > 0
            || (self.strict && outcome.unrendered() > 0);
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
    /// A policy could not judge it (a trap, an answer out of protocol,
    /// its deadline or memory cap): not accepted, as policy-server rejects
    /// it with code 500, and not counted as a rejection; `message` says
    /// which policy failed and why.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub failed: bool,
    /// The rejection, as the person whose request is rejected reads it.
    pub message: Option<String>,
    /// The keys of the object's annotations as judged, sorted: what the
    /// cluster tests hold to the objects a real cluster makes.
    pub annotations: Vec<String>,
    /// Judged as an audit: it came from a cluster (`kubectl get -o yaml`),
    /// and the audit scanner sends it with no sender.
    pub audited: bool,
    /// A policy set's: what each policy that judged it made of it, in the
    /// order the API server calls them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub verdicts: Vec<Verdict>,
}

/// What a check found.
#[derive(Debug, Default)]
pub struct Outcome {
    pub rows: Rows,
    pub unusable: Vec<policy_manifests::Unusable>,
    /// Input skipped as no object to check, each with what to do instead.
    pub notes: Vec<policy_manifests::Note>,
    /// Objects the policy's rules or selectors leave out.
    pub not_covered: usize,
    /// Objects that came from a cluster, judged as the audit scanner sends
    /// them.
    pub audited: usize,
    /// Said once each: what the check had to assume.
    pub warnings: Vec<String>,
    /// How many policies judged: more than one for a policy set.
    pub policies: usize,
    /// Objects a mutating policy changed.
    pub changed: usize,
}

impl Row {
    /// A policy rejected it: not accepted, and judged.
    pub fn rejected(&self) -> bool {
        !self.accepted && !self.failed
    }
}

impl Outcome {
    pub fn rejected(&self) -> usize {
        self.rows.rejected()
    }

    /// Objects some policy could not judge.
    pub fn failed(&self) -> usize {
        self.rows.failed()
    }

    /// The files skipped as what a tool renders.
    pub fn unrendered(&self) -> usize {
        self.notes.iter().filter(|note| note.unrendered).count()
    }
}

/// Why a check could not run at all.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unusable(pub String);

/// The policies ready to judge (their settings checked, their modules
/// compiled), and what they see besides the input.
pub struct Checker {
    chain: Chain,
    /// Objects already in the cluster (`--cluster-objects`).
    cluster: Vec<Value>,
    /// Said before any object is judged.
    warnings: Vec<String>,
    /// A policy set: each row says what each policy made of its object.
    each: bool,
}

/// What judging one object of the input gave, merged into the outcome in
/// the input's order whatever the order it was judged in.
#[derive(Default)]
struct Part {
    rows: Vec<Row>,
    /// An object the API server refuses as admitted (its annotations too
    /// big once kubectl adds its copy): nothing is judged of it.
    unusable: Vec<policy_manifests::Unusable>,
    not_covered: usize,
    audited: usize,
    changed: usize,
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
        outcome.changed += self.changed;
        for (warning, once) in self.warnings {
            if !once || said.insert(warning.clone()) {
                outcome.warnings.push(warning);
            }
        }
    }
}

/// Merges the parts of a batch into `outcome`, in the input's order,
/// telling `merged` of each.
fn merge_all(
    parts: Vec<Result<Part, String>>,
    outcome: &mut Outcome,
    said: &mut HashSet<String>,
    merged: &mut impl FnMut(),
) -> Result<(), String> {
    for part in parts {
        part?.merge_into(outcome, said);
        merged();
    }
    Ok(())
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
        search: policy_manifests::Search,
        mut admission: Admission,
        jobs: usize,
        mut progress: impl FnMut(usize, usize) + Send,
    ) -> Result<Outcome, String> {
        let mut outcome = Outcome {
            rows: Rows::on_disk().map_err(keeping)?,
            policies: self.chain.members.len(),
            ..Outcome::default()
        };
        let members = &self.chain.members;
        outcome
            .warnings
            .extend(members.iter().filter_map(|m| m.policy.unaudited()));
        outcome.warnings.extend(self.warnings.iter().cloned());
        // The objects a context-aware policy may look up, as the input
        // holds them.
        let resources: std::collections::BTreeSet<_> = members
            .iter()
            .flat_map(|m| m.policy.context_aware_resources.iter().cloned())
            .collect();
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
            policy_manifests::read_each(inputs, search, &mut |input| match input {
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
        let host = Arc::new(Cluster::new(readable));
        for member in members {
            let _ = member.context.set(Arc::new(Context {
                policy: member.policy.name.clone(),
                host: host.clone(),
                resources: member.policy.context_aware_resources.clone(),
                allowed: Allowed::default(),
            }));
        }
        let total = spill.len();
        let mut read_back = spill.read_back().map_err(spilling)?;
        let mut next_batch = || {
            read_back
                .by_ref()
                .take(BATCH)
                .collect::<Result<Vec<_>, _>>()
                .map_err(spilling)
        };
        let mut done = 0;
        // Each part merged is one object of the input judged.
        let mut merged = || {
            done += 1;
            progress(done, total);
        };
        let mut batch = next_batch()?;
        let mut judged: Vec<Result<Part, String>> = Vec::new();
        while !batch.is_empty() {
            // Each object parsed back, and judged, on a worker; a few
            // objects on one, which alone makes an instance of the module.
            // Beside them, what is serial: the batch judged before merged
            // in the input's order, and the next read back.
            let judge = || {
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
            };
            let mut merge = |parts| merge_all(parts, &mut outcome, &mut said, &mut merged);
            let merge_and_read = || {
                merge(judged)?;
                next_batch()
            };
            let (parts, next) = workers.install(|| rayon::join(judge, merge_and_read));
            judged = parts;
            batch = next?;
        }
        merge_all(judged, &mut outcome, &mut said, &mut merged)?;
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
            part.unusable.push(policy_manifests::Unusable {
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
        // The controllers make their objects from the object as the
        // mutating policies left it.
        let mut candidates = candidates.into_iter();
        let first = candidates
            .next()
            .expect("an object is its own first candidate");
        let rest: Vec<Candidate> = match self.judge(first, source, namespaces, &mut part)? {
            Some(changed) => objects::candidates(changed, admission, owners)
                .into_iter()
                .skip(1)
                .collect(),
            None => candidates.collect(),
        };
        for candidate in rest {
            self.judge(candidate, source, namespaces, &mut part)?;
        }
        Ok(part)
    }

    fn judge(
        &self,
        candidate: Candidate,
        source: &Source,
        namespaces: &Namespaces,
        outcome: &mut Part,
    ) -> Result<Option<Value>, String> {
        let mut object = candidate.object;
        let addressed = Addressed::of(&object);
        let audited = candidate.made_by.is_none() && stored(&object);
        let request = match audited {
            true => audit::envelope(&object),
            false => request::envelope(
                "CREATE",
                &addressed,
                &object,
                request::sender(candidate.made_by),
            ),
        };
        // What the row says of the object, before any policy changes it.
        let described = objects::describe(&object);
        let generated = object["metadata"]["generateName"].is_string();
        let way = self
            .chain
            .take(&mut object, &request, audited, namespaces)
            .map_err(|e| format!("{source}: {described}: {e}"))?;
        let Some(way) = way else {
            outcome.not_covered += 1;
            return Ok(None);
        };
        let changed = way.verdicts.iter().any(|v| v.patch.is_some());
        outcome.changed += usize::from(changed);
        for warning in way.warnings {
            outcome.warn_once(warning);
        }
        outcome.audited += usize::from(audited);
        let mut annotations: Vec<String> = object["metadata"]["annotations"]
            .as_object()
            .map(|a| a.keys().cloned().collect())
            .unwrap_or_default();
        annotations.sort_unstable();
        // One policy's row is its verdict; a set's is accepted unless a
        // policy in protect mode rejects, and says each rejection.
        let failed = way.verdicts.iter().any(|v| v.failed);
        let (accepted, message) = match self.each {
            false => {
                let verdict = way.verdicts.first();
                let accepted = verdict.is_none_or(|v| v.accepted);
                (accepted, verdict.and_then(|v| v.message.clone()))
            }
            true => {
                // A failure names its policy itself.
                let rejections: Vec<String> = way
                    .verdicts
                    .iter()
                    .filter(|v| v.failed || (!v.accepted && !v.monitor))
                    .map(|v| match v.failed {
                        true => v.message.clone().unwrap_or_default(),
                        false => format!("{}: {}", v.policy, v.message.as_deref().unwrap_or("")),
                    })
                    .collect();
                let message = (!rejections.is_empty()).then(|| rejections.join("\n"));
                (rejections.is_empty(), message)
            }
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
            failed,
            message,
            annotations,
            audited,
            verdicts: match self.each {
                true => way.verdicts,
                false => Vec::new(),
            },
        });
        Ok(changed.then_some(object))
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
    fn again(&mut self, manifest: &Manifest, admission: &Admission) -> Option<String> {
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
    if policy_core::kinds::namespaced(kind)
        && object["metadata"]["namespace"].as_str().is_none()
        && let Some(metadata) = object["metadata"].as_object_mut()
    {
        metadata.insert("namespace".to_string(), Value::from(namespace));
    }
}

/// The objects `--cluster-objects` names, read as manifests are: any that
/// cannot be read is an error, since a lookup would silently miss it.
fn cluster_objects(inputs: &[String], namespace: &Option<String>) -> Result<Vec<Value>, String> {
    let read: Inputs = policy_manifests::read_inputs(inputs);
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
