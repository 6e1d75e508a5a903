//! The policies a check applies: the policy set `--policy` names, read
//! from its files and directories, and each policy's modules found (a
//! reference through kwctl's store) and compiled once, into the chain an
//! object takes (`chain.rs`).

use std::path::{Path, PathBuf};

use rayon::prelude::*;
use serde_json::Value;

use super::chain::Chain;
use super::{Command, PolicySource, objects};
use crate::admission::{Declared, Policy, module_rules};
use policy_evaluator::CompiledPolicy;
use policy_manifests::Source;

/// The policies `--policy` names, read from its files and directories.
#[derive(Debug, Clone, Default)]
pub struct PolicySet {
    /// Each policy (group) manifest, where it was read.
    pub manifests: Vec<(Source, Value)>,
    /// What was read that is not a policy, each with where.
    pub left_out: Vec<String>,
}

/// The policy set in `paths` (files, and directories searched as inputs
/// are): each ClusterAdmissionPolicy, AdmissionPolicy and policy group; an
/// object of another kind is left out, and said so.
pub fn policy_set(paths: &[PathBuf]) -> Result<PolicySet, String> {
    let inputs: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
    let read: super::Inputs = policy_manifests::read_inputs(&inputs);
    if let Some(unusable) = read.unusable.first() {
        return Err(format!(
            "--policy: {}: {}",
            unusable.source, unusable.reason
        ));
    }
    let mut set = PolicySet::default();
    for note in read.notes {
        set.left_out
            .push(format!("--policy: {}: {}", note.source, note.text));
    }
    for manifest in read.manifests {
        let object = manifest.object();
        match Declared::read(&object) {
            Ok(_) => set.manifests.push((manifest.source, object)),
            Err(_) => set.left_out.push(format!(
                "--policy: {} ({}) is not a policy: left out",
                objects::describe(&object),
                manifest.source
            )),
        }
    }
    Ok(set)
}

impl Command {
    /// The policies to apply, their modules compiled once each (on every
    /// core), and what to warn of before anything is judged.
    pub(super) fn chain(&self) -> Result<(Chain, Vec<String>), String> {
        let mut warnings = Vec::new();
        let mut files: Vec<PathBuf> = Vec::new();
        // Each module file once, by the index `files` gives it.
        let mut index_of = |file: PathBuf| match files.iter().position(|f| *f == file) {
            Some(index) => index,
            None => {
                files.push(file);
                files.len() - 1
            }
        };
        let mut policies: Vec<(Policy, Vec<usize>)> = Vec::new();
        let mut settings_only = None;
        match &self.policy {
            PolicySource::Manifest(path, manifest) => {
                let module = self.module.clone().ok_or_else(no_module)?;
                let policy = Policy::from_manifest(manifest)
                    .map_err(|e| format!("{}: {e}", path.display()))?;
                let members = members(manifest).len();
                let index = index_of(module);
                policies.push((policy, vec![index; members]));
            }
            PolicySource::Settings(settings) => {
                let module = self.module.clone().ok_or_else(no_module)?;
                index_of(module);
                settings_only = Some(settings);
            }
            PolicySource::Set(set) => {
                warnings.extend(set.left_out.iter().cloned());
                let manifests = &set.manifests;
                if manifests.is_empty() {
                    return Err("--policy names no ClusterAdmissionPolicy, AdmissionPolicy \
                         or policy group"
                        .to_string());
                }
                for (source, manifest) in manifests {
                    let path = Path::new(&source.file);
                    let policy =
                        Policy::from_manifest(manifest).map_err(|e| format!("{source}: {e}"))?;
                    let mut indexes = Vec::new();
                    for reference in members(manifest) {
                        let file = match &self.module {
                            Some(module) => module.clone(),
                            None => self
                                .store
                                .resolve(reference, path)
                                .map_err(|e| format!("{source}: {}: {e}", policy.name))?,
                        };
                        indexes.push(index_of(file));
                    }
                    policies.push((policy, indexes));
                }
            }
        }
        let modules = files
            .par_iter()
            .map(|file| {
                let shown = file.display();
                let bytes = std::fs::read(file).map_err(|e| format!("cannot read {shown}: {e}"))?;
                policy_evaluator::webassembly(file, &bytes)?;
                CompiledPolicy::from_bytes_as(&bytes, self.evaluation.execution_mode)
                    .map_err(|e| format!("{shown}: {e}"))
            })
            .collect::<Result<Vec<_>, String>>()?;
        if let Some(settings) = settings_only {
            let compiled = &modules[0];
            let module = files[0].display();
            let listed = compiled
                .metadata()
                .map(|metadata| metadata.context_aware_resources.clone())
                .unwrap_or_default();
            let rules = module_rules(compiled.metadata()).map_err(|e| format!("{module}: {e}"))?;
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
            policies.push((policy, vec![0]));
        }
        let chain = Chain::new(policies, modules, self.evaluation.limits).map_err(|e| e.0)?;
        Ok((chain, warnings))
    }
}

fn no_module() -> String {
    "give the policy module (policy.wasm), or policies whose `spec.module` names theirs \
     (--policy without a module)"
        .to_string()
}

/// The module reference of each policy a manifest declares: its own, or
/// each member's, in name order.
fn members(manifest: &Value) -> Vec<&str> {
    let spec = &manifest["spec"];
    match Declared::read(manifest) {
        Ok(Declared::Group(_)) => spec["policies"]
            .as_object()
            .map(|members| {
                members
                    .values()
                    .map(|member| member["module"].as_str().unwrap_or_default())
                    .collect()
            })
            .unwrap_or_default(),
        _ => vec![spec["module"].as_str().unwrap_or_default()],
    }
}
