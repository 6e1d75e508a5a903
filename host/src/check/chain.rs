//! The policies a check applies, and an object's way through them in the
//! order the API server calls their webhooks: each mutating policy, by its
//! webhook configuration's name, changes the object before the next sees
//! it, and a rejection ends the way; then every validating policy judges
//! the object as mutated (docs/check.md, "A policy set").

use std::sync::{Arc, OnceLock};

use serde_json::Value;

use crate::admission::{Namespaces, Policy, Scope};
use policy_evaluator::capabilities::Context;
use policy_evaluator::capabilities::cluster::Cluster;
use policy_evaluator::group::Judging;
use policy_evaluator::kinds::Addressed;
use policy_evaluator::{CompiledPolicy, Limits, Policy as Instance};

use super::Unusable;

/// One policy of a check, ready to judge.
pub struct Member {
    pub policy: Policy,
    /// The module each of its members runs, an index into `Chain::modules`:
    /// one for a policy, one a member (in name order) for a group.
    pub modules: Vec<usize>,
    judging: Judging,
    /// What answers its lookups, known once the input is read.
    pub context: OnceLock<Arc<Context>>,
    /// What bounds each of its members' calls, in member order.
    limits: Vec<Limits>,
}

/// Every policy of a check, mutating ones first, each kind in the API
/// server's order, and the modules they run, each compiled once.
pub struct Chain {
    pub members: Vec<Member>,
    pub modules: Vec<CompiledPolicy>,
    /// Tells this chain's instances from another's on a worker thread.
    id: usize,
}

thread_local! {
    /// A worker thread's instances, one for each policy and module of the
    /// chain it is for (an instance cannot move between threads, and its
    /// lookups are its policy's), made when first needed.
    static INSTANCES: std::cell::RefCell<(usize, Vec<Vec<Option<Instance>>>)> =
        const { std::cell::RefCell::new((usize::MAX, Vec::new())) };
}

/// What one policy made of an object.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Verdict {
    /// The policy's name (`metadata.name`).
    pub policy: String,
    pub accepted: bool,
    /// The policy could not judge it (a trap, an answer out of protocol,
    /// its deadline or its memory cap): `message` says why, and
    /// policy-server rejects it with code 500.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub failed: bool,
    /// In monitor mode: policy-server logs its rejection and lets the
    /// object through unchanged.
    pub monitor: bool,
    pub message: Option<String>,
    /// What it changed, as the API server receives it: a JSONPatch's
    /// operations.
    pub patch: Option<Value>,
}

impl Verdict {
    /// What it changed, a line an operation, as a person reads a diff:
    /// `+ /metadata/labels/team: "shop"` (added), `- path` (removed),
    /// `~ path: value` (replaced), and the others by name.
    pub fn changes(&self) -> Vec<String> {
        let Some(Value::Array(operations)) = &self.patch else {
            return Vec::new();
        };
        operations
            .iter()
            .map(|operation| {
                let path = operation["path"].as_str().unwrap_or_default();
                let value = || serde_json::to_string(&operation["value"]).unwrap_or_default();
                let from = operation["from"].as_str().unwrap_or_default();
                match operation["op"].as_str().unwrap_or_default() {
                    "add" => format!("+ {path}: {}", value()),
                    "remove" => format!("- {path}"),
                    "replace" => format!("~ {path}: {}", value()),
                    "move" => format!("move {from} to {path}"),
                    "copy" => format!("copy {from} to {path}"),
                    other => format!("{other} {path}: {}", value()),
                }
            })
            .collect()
    }
}

/// An object's way through the chain.
#[derive(Debug, Default)]
pub struct Way {
    /// Each policy that judged it, in the order called.
    pub verdicts: Vec<Verdict>,
    /// Warnings said once: a selector the check cannot settle.
    pub warnings: Vec<String>,
}

impl Chain {
    /// The policies with the modules they name (`modules[i]` for each
    /// member of `policies[i]`), each policy's settings validated as
    /// policy-server validates them before it starts.
    pub fn new(
        policies: Vec<(Policy, Vec<usize>)>,
        modules: Vec<CompiledPolicy>,
        limits: Limits,
    ) -> Result<Chain, Unusable> {
        static IDS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let mut members = Vec::with_capacity(policies.len());
        for (policy, indexes) in policies {
            // Each member's settings validated on an instance bounded as
            // its evaluations are.
            let bounds: Vec<Limits> = (0..indexes.len().max(policy.timeouts.len()))
                .map(|member| policy.limits(member, &limits))
                .collect();
            let instances = indexes
                .iter()
                .zip(&bounds)
                .map(|(&index, bounds)| {
                    modules[index]
                        .instantiate_bounded(Arc::default(), *bounds)
                        .map_err(|e| Unusable(format!("{}: {e}", policy.name)))
                })
                .collect::<Result<Vec<_>, _>>()?;
            let instance = |member: usize| &instances[member.min(instances.len() - 1)];
            let judging = policy.judging_each(&instance).map_err(Unusable)?;
            members.push(Member {
                policy,
                modules: indexes,
                judging,
                context: OnceLock::new(),
                limits: bounds,
            });
        }
        // The API server calls mutating webhooks one after the other, their
        // configurations sorted by name, and validating ones all at once;
        // those are kept in name order too, so that a report is the same
        // every run.
        members.sort_by(|a, b| {
            (!a.policy.mutating, a.policy.webhook()).cmp(&(!b.policy.mutating, b.policy.webhook()))
        });
        Ok(Chain {
            members,
            modules,
            id: IDS.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
        })
    }

    /// Takes `object` through each policy that covers it; `request` is the
    /// request a policy is sent, without its object, which goes into it as
    /// it stands at each policy. An audited
    /// object goes to each policy as stored: the audit scanner changes
    /// nothing. `None` when no policy covers the object.
    pub fn take(
        &self,
        object: &mut Value,
        request: &Value,
        audited: bool,
        namespaces: &Namespaces,
    ) -> Result<Option<Way>, String> {
        let mut way = Way::default();
        let mut covered = false;
        INSTANCES.with(|cell| {
            let mut cell = cell.borrow_mut();
            if cell.0 != self.id {
                *cell = (
                    self.id,
                    self.members
                        .iter()
                        .map(|m| m.modules.iter().map(|_| None).collect())
                        .collect(),
                );
            }
            for (at, member) in self.members.iter().enumerate() {
                let addressed = Addressed::of(object);
                match member
                    .policy
                    .scope(object, None, "CREATE", &addressed, namespaces)
                {
                    Scope::Out(_) => continue,
                    Scope::Assumed(warning) => way.warnings.push(warning),
                    Scope::In => {}
                }
                // The object moves into the request and back: a dump's
                // objects are not copied for each policy.
                let mut sent = request.clone();
                sent["object"] = std::mem::take(object);
                // The API server's conditions; the audit scanner never
                // reads them (adm-controller 1.35, `internal/audit-scanner`).
                let unmet = match audited {
                    true => Ok(None),
                    false => member.policy.unmet_condition(&sent),
                };
                let bytes = serde_json::to_vec(&sent).unwrap_or_default();
                *object = sent["object"].take();
                if unmet?.is_some() {
                    continue;
                }
                covered = true;
                let slots = &mut cell.1[at];
                for ((slot, &index), limits) in
                    slots.iter_mut().zip(&member.modules).zip(&member.limits)
                {
                    if slot.is_none() {
                        let context = member.context.get().cloned().unwrap_or_default();
                        let instance = self.modules[index]
                            .instantiate_bounded(context, *limits)
                            .map_err(|e| format!("{}: {e}", member.policy.name))?;
                        *slot = Some(instance);
                    }
                }
                let slots = &cell.1[at];
                let instance = |member: usize| {
                    slots[member.min(slots.len() - 1)]
                        .as_ref()
                        .expect("instantiated above")
                };
                let monitor = member.policy.mode == "monitor";
                let mut verdict = Verdict {
                    policy: member.policy.name.clone(),
                    accepted: true,
                    failed: false,
                    monitor,
                    message: None,
                    patch: None,
                };
                // A policy that fails on an object rejects it, as
                // policy-server answers it (code 500), and the row says it
                // could not be judged.
                // A creation is judged before the API server stores the
                // object: no lookup may find it. A stored object, audited,
                // is in the cluster.
                let judged = match audited {
                    true => member.judging.judge_each(&instance, &bytes),
                    false => Cluster::while_absent(object, || {
                        member.judging.judge_each(&instance, &bytes)
                    }),
                };
                verdict.accepted = judged.verdict.accepted;
                verdict.message = judged.line();
                match (judged.failures.first(), judged.verdict.accepted) {
                    (Some(failure), false) => {
                        verdict.failed = true;
                        verdict.message = Some(failure.line(&member.policy.name));
                    }
                    // A group that accepts whatever its failed member
                    // answered: policy-server admits the object, and the
                    // failure is said once.
                    (Some(failure), true) => {
                        way.warnings.push(failure.line(&member.policy.name));
                    }
                    (None, _) => {}
                }
                let changes = match (judged.verdict.accepted, monitor || audited) {
                    (true, false) if member.policy.mutating => {
                        policy_evaluator::response::applied(object, &judged.verdict)
                    }
                    _ => Ok(None),
                };
                match changes {
                    Ok(Some((changed, patch))) => {
                        *object = changed;
                        verdict.patch = Some(patch);
                    }
                    Ok(None) => {}
                    Err(e) => {
                        verdict.accepted = false;
                        verdict.message = Some(format!("internal server error: {e}"));
                    }
                }
                // A mutating webhook's rejection ends the request: the
                // policies after it never see it.
                let ends = member.policy.mutating && !verdict.accepted && !monitor && !audited;
                way.verdicts.push(verdict);
                if ends {
                    break;
                }
            }
            Ok::<(), String>(())
        })?;
        Ok(covered.then_some(way))
    }
}
