//! What a test file names, loaded: its policies with their modules'
//! instances and settings validated, its resources read as `check` reads
//! them with the objects the controllers make from them, each found by the
//! names a result may give it.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use serde_json::Value;

use super::file::TestFile;
use crate::admission::{self, Declared, Judge, Namespaces, Policy};
use crate::check::Input;
use crate::check::objects::{self, Admission, Candidate};
use crate::modules::Store;
use policy_evaluator::group::Judging;
use policy_evaluator::{CompiledPolicy, Limits, Policy as Instance};

/// A module compiled once, when first needed, or why it cannot be.
type Compiled = OnceLock<Result<CompiledPolicy, String>>;

/// The modules of a run, each compiled once, by the first worker that
/// needs it: a module no policy names is never compiled.
#[derive(Default)]
pub struct Modules {
    /// By [`canonical`] path: those `modules` map, then those found in
    /// kwctl's store as policies name them.
    compiled: Mutex<BTreeMap<PathBuf, Arc<Compiled>>>,
    /// The one module every policy runs (`--module`), whatever the test
    /// files map.
    every: Option<PathBuf>,
    /// Where a module that `modules` does not map is found.
    store: Store,
    /// What bounds each evaluation, before a policy's own deadline.
    limits: Limits,
}

impl Modules {
    /// The modules `tests` map, or `every` one instead; others are found in
    /// `store` as the policies name them.
    pub fn new<'t>(
        tests: impl Iterator<Item = &'t TestFile>,
        every: Option<PathBuf>,
        store: Store,
        limits: Limits,
    ) -> Modules {
        let files: Vec<PathBuf> = match &every {
            Some(every) => vec![every.clone()],
            None => tests.flat_map(|t| t.modules.values().cloned()).collect(),
        };
        Modules {
            compiled: Mutex::new(
                files
                    .iter()
                    .map(|file| (canonical(file), Arc::default()))
                    .collect(),
            ),
            every,
            store,
            limits,
        }
    }

    fn compiled(&self, file: &Path) -> Result<CompiledPolicy, String> {
        let slot = self
            .compiled
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .entry(canonical(file))
            .or_default()
            .clone();
        slot.get_or_init(|| CompiledPolicy::from_file(file).map_err(|e| e.to_string()))
            .clone()
    }
}

/// One name for each file, however the test files reach it; the path as
/// given when it cannot be resolved (its compilation then says why).
pub fn canonical(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}

/// A policy of the test, ready to judge.
pub struct ReadyPolicy {
    pub(super) policy: Policy,
    /// Its module's instance, an index into `Test::instances`.
    pub(super) instance: usize,
    pub(super) judging: Judging,
    /// A group's members, each judging alone: a result may name one.
    pub(super) members: Vec<(String, Judging)>,
}

/// An object the results can name.
pub struct Object {
    pub(super) object: Value,
    /// Who sends it when the result names nobody.
    pub(super) made_by: Option<&'static policy_core::controllers::Controller>,
    /// `Kind namespace/name`, as `check` prints it.
    pub(super) described: String,
}

/// A test file with everything it names, ready to run its results.
pub struct Test<'t> {
    pub(super) test: &'t TestFile,
    /// One instance a module file, shared by the policies that run it.
    pub(super) instances: Vec<Instance>,
    pub(super) policies: Vec<ReadyPolicy>,
    pub(super) objects: Vec<Object>,
    /// The objects by kind and by each name a result may give them
    /// (`name`, `namespace/name`), in the order read.
    pub(super) named: HashMap<(String, String), Vec<usize>>,
    pub(super) namespaces: Namespaces,
    pub(super) admission: Admission,
    pub(super) owners: objects::Owners,
    /// What the run should know but does not stop it.
    pub(super) notes: Vec<String>,
}

impl<'t> Test<'t> {
    /// Loads what `test` names; `None`, with `errors`, when some of it
    /// cannot be used.
    pub fn load(
        test: &'t TestFile,
        modules: &Modules,
        errors: &mut Vec<String>,
    ) -> Option<Test<'t>> {
        let mut loaded = Test {
            test,
            instances: Vec::new(),
            policies: Vec::new(),
            objects: Vec::new(),
            named: HashMap::new(),
            namespaces: Default::default(),
            admission: Admission {
                namespace: "default".to_string(),
                kubectl_apply: false,
                derive: true,
                cluster_kinds: Default::default(),
            },
            owners: Default::default(),
            notes: Vec::new(),
        };
        loaded.load_policies(modules, errors);
        loaded.load_resources(errors);
        errors.is_empty().then_some(loaded)
    }

    fn load_policies(&mut self, modules: &Modules, errors: &mut Vec<String>) {
        // The module files instantiated with their limits, in the order
        // of `instances`.
        let mut files: Vec<(PathBuf, Limits)> = Vec::new();
        let mut named: Vec<String> = Vec::new();
        for manifest in read_objects(&self.test.policies, errors) {
            match self.load_policy(&manifest, modules, &mut files, &mut named) {
                Ok(ready) => self.policies.push(ready),
                Err(e) => errors.push(e),
            }
        }
        let mut names: Vec<&str> = self
            .policies
            .iter()
            .map(|p| p.policy.name.as_str())
            .collect();
        names.sort_unstable();
        if let Some(twice) = names.windows(2).find(|w| w[0] == w[1]) {
            errors.push(format!("two policies are named `{}`", twice[0]));
        }
        if modules.every.is_none() {
            for reference in self.test.modules.keys().filter(|r| !named.contains(r)) {
                self.notes.push(format!(
                    "{}: `modules` maps `{reference}`, which none of its policies names",
                    self.test.path.display()
                ));
            }
        }
    }

    fn load_policy(
        &mut self,
        manifest: &Value,
        modules: &Modules,
        files: &mut Vec<(PathBuf, Limits)>,
        named: &mut Vec<String>,
    ) -> Result<ReadyPolicy, String> {
        let policy = Policy::from_manifest(manifest)
            .map_err(|e| format!("policy {}: {e}", admission::manifest_name(manifest)))?;
        let spec = &manifest["spec"];
        // A policy names its module; a group, each member's.
        let references: Vec<&str> = match Declared::read(manifest)? {
            Declared::Policy(_) => vec![spec["module"].as_str().unwrap_or_default()],
            Declared::Group(_) => spec["policies"]
                .as_object()
                .into_iter()
                .flatten()
                .map(|(_, member)| member["module"].as_str().unwrap_or_default())
                .collect(),
        };
        let mut file: Option<PathBuf> = modules.every.clone();
        for reference in references.into_iter().filter(|_| modules.every.is_none()) {
            named.push(reference.to_string());
            let mapped = match self.test.modules.get(reference) {
                Some(mapped) => mapped.clone(),
                None => modules
                    .store
                    .resolve(reference, &self.test.path)
                    .map_err(|e| {
                        format!(
                            "{}: {e}; or map it to a file under `modules` (or give `--module`)",
                            policy.name
                        )
                    })?,
            };
            if file.as_ref().is_some_and(|f| *f != mapped) {
                return Err(format!(
                    "the members of {} map to different module files: a group is judged with one",
                    policy.name
                ));
            }
            file = Some(mapped);
        }
        let file = file.ok_or_else(|| format!("{} has no member", policy.name))?;
        // One instance judges every member: they must share a deadline.
        let limits = policy.limits(0, &modules.limits);
        if (1..policy.timeouts.len()).any(|member| policy.limits(member, &modules.limits) != limits)
        {
            return Err(format!(
                "the members of {} have different timeoutEvalSeconds: test judges a group on \
                 one instance, with one deadline",
                policy.name
            ));
        }
        let key = (file, limits);
        let instance = match files.iter().position(|f| *f == key) {
            Some(i) => i,
            None => {
                let compiled = modules
                    .compiled(&key.0)
                    .map_err(|e| format!("{}: {e}", policy.name))?;
                let instance = compiled
                    .instantiate_bounded(Default::default(), limits)
                    .map_err(|e| format!("{}: {}: {e}", policy.name, key.0.display()))?;
                self.instances.push(instance);
                files.push(key);
                files.len() - 1
            }
        };
        // The group's judging validates every member's settings, as
        // policy-server does; each member alone then needs no second look.
        let judging = policy.judging(&self.instances[instance])?;
        let members = match &policy.judge {
            Judge::Single { .. } => Vec::new(),
            Judge::Group { members, .. } => members
                .iter()
                .map(|(name, settings)| {
                    let settings = serde_json::to_vec(settings).map_err(|e| e.to_string())?;
                    // A member alone, as the group judges it: it may not
                    // mutate.
                    let alone = Judging::Single {
                        settings,
                        mutating: false,
                        name: format!("{}/{name}", policy.name),
                    };
                    Ok((name.clone(), alone))
                })
                .collect::<Result<_, String>>()?,
        };
        Ok(ReadyPolicy {
            policy,
            instance,
            judging,
            members,
        })
    }

    /// The resources' objects and those made from them, each indexed by
    /// the names a result may give it.
    fn load_resources(&mut self, errors: &mut Vec<String>) {
        let read = read_objects(&self.test.resources, errors);
        for object in &read {
            self.owners.learn(object);
            self.admission.learn(object);
            self.namespaces.extend(admission::namespace(object));
        }
        for object in &read {
            for Candidate {
                object, made_by, ..
            } in objects::candidates(object.clone(), &self.admission, &self.owners)
            {
                let kind = object["kind"].as_str().unwrap_or_default().to_string();
                let place = objects::place(&object);
                let mut names = vec![place.clone()];
                if let Some((_, name)) = place.rsplit_once('/') {
                    names.push(name.to_string());
                }
                for name in names {
                    self.named
                        .entry((kind.clone(), name))
                        .or_default()
                        .push(self.objects.len());
                }
                self.objects.push(Object {
                    described: objects::describe(&object),
                    object,
                    made_by,
                });
            }
        }
    }
}

/// The objects of `inputs` (files and directories, hidden ones included:
/// a test names them), an error for each document that cannot be used and
/// for what `check` would only note (a template, a Kustomization), and for
/// inputs that hold no object at all.
pub fn read_objects(paths: &[PathBuf], errors: &mut Vec<String>) -> Vec<Value> {
    let inputs: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
    let mut found = Vec::new();
    let before = errors.len();
    let search = policy_manifests::Search { hidden: true };
    policy_manifests::read_each(&inputs, search, &mut |input| match input {
        Input::Manifest(manifest) => found.push(manifest.object()),
        Input::Unusable(unusable) => {
            errors.push(format!("{}: {}", unusable.source, unusable.reason))
        }
        Input::Note(note) => errors.push(format!("{}: cannot be used: {}", note.source, note.text)),
    });
    if found.is_empty() && errors.len() == before {
        errors.push(format!("{}: holds no object", inputs.join(", ")));
    }
    found
}
