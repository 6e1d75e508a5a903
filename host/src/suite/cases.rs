//! One test file run: each expected result held to what the policy decides
//! of each object it names.

use serde_json::Value;

use super::Outcome;
use super::file::{Expected, Operation, TestFile, Verdict};
use super::loaded::{Modules, Object, ReadyPolicy, Test, read_objects};
use crate::admission::{Scope, audit, request};
use crate::check::objects::{self, Admission};
use policy_evaluator::group::Judging;
use policy_evaluator::kinds::Addressed;

/// One expected result for one object, and what came of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    pub test: String,
    /// The test file.
    pub file: String,
    pub policy: String,
    /// `Kind namespace/name` as `check` prints it; what the result named
    /// when no object matches.
    pub object: String,
    /// `CREATE`, `UPDATE`, `DELETE`, or `audit`.
    pub operation: String,
    /// The sender the result names, if it names one.
    pub sender: Option<String>,
    /// The file of an UPDATE's old objects, as the result gives it.
    pub old_resource: Option<String>,
    pub expected: Verdict,
    /// `None` when there was nothing to decide: no such object, policy or
    /// member.
    pub got: Option<Verdict>,
    pub passed: bool,
    /// The rejection, why the object was skipped, or what does not match.
    pub reason: String,
}

impl Row {
    /// The request in a few words: `UPDATE as alice over old.yaml`, so
    /// that rows that differ only in what they send can be told apart.
    pub fn request(&self) -> String {
        let mut request = self.operation.clone();
        if let Some(sender) = &self.sender {
            request = format!("{request} as {sender}");
        }
        if let Some(old) = &self.old_resource {
            let name = std::path::Path::new(old)
                .file_name()
                .map(|n| n.to_string_lossy());
            request = format!("{request} over {}", name.unwrap_or_default());
        }
        request
    }
}

/// What a policy decided of an object, and why.
struct Decided {
    got: Option<Verdict>,
    reason: String,
    /// How the object as mutated differs from `patchedResource`'s.
    unlike: Option<String>,
}

/// Whether two objects are the same one: the same kind and name.
fn same(a: &Value, b: &Value) -> bool {
    let field = |value: &Value, name: &str| value["metadata"][name].clone();
    a["kind"] == b["kind"]
        && field(a, "name") == field(b, "name")
        && field(a, "namespace") == field(b, "namespace")
}

/// Runs `test`; `selected` says which rows to decide (`--run`).
pub fn run(test: &TestFile, modules: &Modules, selected: &dyn Fn(&str, &str) -> bool) -> Outcome {
    let mut ran = Outcome::default();
    let mut errors = Vec::new();
    let loaded = Test::load(test, modules, &mut errors);
    let file = test.path.display();
    ran.errors = errors.into_iter().map(|e| format!("{file}: {e}")).collect();
    let Some(run) = loaded else {
        return ran;
    };
    ran.notes.extend(run.notes.iter().cloned());
    for expected in &test.results {
        run.check(expected, selected, &mut ran);
    }
    ran
}

impl Test<'_> {
    /// The rows of one expected result: one for each object it names.
    fn check(&self, expected: &Expected, selected: &dyn Fn(&str, &str) -> bool, ran: &mut Outcome) {
        let operation = match expected.audit {
            true => "audit",
            false => expected.operation.as_str(),
        };
        let row = |object: String, got: Option<Verdict>, passed: bool, reason: String| Row {
            test: self.test.name.clone(),
            file: self.test.path.display().to_string(),
            policy: expected.policy.clone(),
            object,
            operation: operation.to_string(),
            sender: expected.user_info.as_ref().map(|u| u.username.clone()),
            old_resource: expected
                .old_resource
                .as_ref()
                .map(|p| p.display().to_string()),
            expected: expected.result,
            got,
            passed,
            reason,
        };
        let (group, member) = match expected.policy.split_once('/') {
            Some((group, member)) => (group, Some(member)),
            None => (expected.policy.as_str(), None),
        };
        let policy = self.policies.iter().find(|p| p.policy.name == group);
        let olds = self.old_objects(expected);
        for resource in &expected.resources {
            let named = format!("{} {resource}", expected.kind);
            if !selected(&self.test.name, &named) {
                ran.left_out += 1;
                continue;
            }
            let Some(policy) = policy else {
                let names = self.policies.iter().map(|p| p.policy.name.as_str());
                let reason = format!("no policy named `{group}`{}", nearest(group, names));
                ran.rows.push(row(named, None, false, reason));
                continue;
            };
            let judging = match member {
                None => &policy.judging,
                Some(member) => match policy.members.iter().find(|(m, _)| m == member) {
                    Some((_, judging)) => judging,
                    None => {
                        let names = policy.members.iter().map(|(m, _)| m.as_str());
                        let reason =
                            format!("{group} has no member `{member}`{}", nearest(member, names));
                        ran.rows.push(row(named, None, false, reason));
                        continue;
                    }
                },
            };
            let key = (expected.kind.clone(), resource.clone());
            let matching: Vec<&Object> = self
                .named
                .get(&key)
                .into_iter()
                .flatten()
                .map(|&i| &self.objects[i])
                .collect();
            if matching.is_empty() {
                ran.rows.push(row(
                    named,
                    None,
                    false,
                    self.not_found(&expected.kind, resource),
                ));
                continue;
            }
            for object in matching {
                let decided = old_object(&olds, expected, object)
                    .and_then(|old| self.decide(policy, judging, expected, object, old));
                let (got, reason, unlike) = match decided {
                    Ok(decided) => (decided.got, decided.reason, decided.unlike),
                    Err(error) => {
                        let file = self.test.path.display();
                        ran.errors
                            .push(format!("{file}: {}: {error}", object.described));
                        (None, error, None)
                    }
                };
                let (passed, reason) = match (grade(expected, got, reason), unlike) {
                    ((true, _), Some(unlike)) => (false, unlike),
                    (graded, _) => graded,
                };
                ran.rows
                    .push(row(object.described.clone(), got, passed, reason));
            }
        }
    }

    /// What `policy` (through `judging`: the policy's, or one member's)
    /// decides of `object` (over `old`, for an UPDATE), and why; with
    /// `patchedResource`, how the object as mutated differs from it.
    fn decide(
        &self,
        loaded: &ReadyPolicy,
        judging: &Judging,
        expected: &Expected,
        object: &Object,
        old: Option<&Value>,
    ) -> Result<Decided, String> {
        let policy = &loaded.policy;
        let decided = |got: Verdict, reason: String| Decided {
            got: Some(got),
            reason,
            unlike: None,
        };
        // The API server sends a creation or an update through the
        // mutating policies first, in their webhooks' order (`check`'s
        // chain); the audit scanner sends the object as stored.
        let mut subject = object.object.clone();
        if !expected.audit && expected.operation != Operation::Delete {
            for before in self.mutating_before(loaded) {
                let Ok(judged) =
                    self.judged(before, &before.judging, expected, object, &subject, old)?
                else {
                    continue;
                };
                match judged.line() {
                    Some(line) if before.policy.mode != "monitor" => {
                        let why = format!(
                            "not sent to {}: {} rejects it first: {line}",
                            policy.name, before.policy.name
                        );
                        return Ok(decided(Verdict::Skip, why));
                    }
                    Some(_) => {}
                    None if before.policy.mode == "monitor" => {}
                    None => {
                        if let Some((changed, _)) =
                            policy_evaluator::response::applied(&subject, &judged.verdict)?
                        {
                            subject = changed;
                        }
                    }
                }
            }
        }
        let addressed = Addressed::of(&subject);
        let (group, version, resource) = (addressed.group, addressed.version, &addressed.resource);
        if expected.audit && !policy.audits(group, version, resource) {
            let why = policy.unaudited().unwrap_or_else(|| {
                format!(
                    "no rule of {} that the audit scanner keeps names {resource}",
                    policy.name
                )
            });
            return Ok(decided(Verdict::Skip, why));
        }
        let judged = match self.judged(loaded, judging, expected, object, &subject, old)? {
            Ok(judged) => judged,
            Err(why) => return Ok(decided(Verdict::Skip, why)),
        };
        // Monitor mode lets a request through with a log line; the audit
        // scanner reports a rejection as a failure whatever the mode.
        let monitored = policy.mode == "monitor" && !expected.audit;
        let mut result = match judged.line() {
            None => decided(Verdict::Pass, String::new()),
            Some(message) if monitored => decided(Verdict::Warn, message),
            Some(message) => decided(Verdict::Fail, message),
        };
        if let Some(path) = &expected.patched_resource {
            if judged.verdict.accepted
                && policy.mutating
                && !monitored
                && let Some((changed, _)) =
                    policy_evaluator::response::applied(&subject, &judged.verdict)?
            {
                subject = changed;
            }
            let wanted = self.patched_object(path, object)?;
            let difference = policy_evaluator::response::difference(&wanted, &subject);
            if difference != serde_json::json!([]) {
                result.unlike = Some(format!(
                    "the object as mutated is not the one in {}: the JSONPatch from that one to it is {difference}",
                    path.display()
                ));
            }
        }
        Ok(result)
    }

    /// The mutating policies the API server calls before `policy`: all of
    /// them for a validating policy, those whose webhook configuration's
    /// name sorts first for a mutating one.
    fn mutating_before<'p>(
        &'p self,
        policy: &'p ReadyPolicy,
    ) -> impl Iterator<Item = &'p ReadyPolicy> + 'p {
        let webhook = policy.policy.webhook();
        let mut before: Vec<&ReadyPolicy> = self
            .policies
            .iter()
            .filter(|p| p.policy.mutating)
            .filter(|p| !policy.policy.mutating || p.policy.webhook() < webhook)
            .collect();
        before.sort_by_key(|p| p.policy.webhook());
        before.into_iter()
    }

    /// What `loaded` (through `judging`) answers for `subject`, the object
    /// as it reaches the policy; `Ok(Err(why))` when the policy's rules,
    /// selectors or conditions leave it out.
    fn judged(
        &self,
        loaded: &ReadyPolicy,
        judging: &Judging,
        expected: &Expected,
        object: &Object,
        subject: &Value,
        old: Option<&Value>,
    ) -> Result<Result<policy_evaluator::group::Judged, String>, String> {
        let policy = &loaded.policy;
        let addressed = Addressed::of(subject);
        let operation = match expected.audit {
            true => "CREATE",
            false => expected.operation.as_str(),
        };
        match policy.scope(subject, old, operation, &addressed, &self.namespaces) {
            Scope::Out(why) => {
                let why = format!("not sent to {} for a {operation}: {why}", policy.name);
                return Ok(Err(why));
            }
            // A test says what must happen: a guess would pass or fail it
            // by chance.
            Scope::Assumed(why) => {
                return Err(format!(
                    "{why}; add the Namespace to the resources, with its labels"
                ));
            }
            Scope::In => {}
        }
        let request = match (expected.audit, expected.operation) {
            (true, _) => audit::request(subject),
            (false, operation) => {
                let user = match &expected.user_info {
                    Some(user) => serde_json::to_value(user).map_err(|e| e.to_string())?,
                    None => request::sender(object.made_by),
                };
                let (new, old) = match operation {
                    Operation::Create => (Some(subject), None),
                    Operation::Update => (Some(subject), old),
                    Operation::Delete => (None, Some(subject)),
                };
                request::request(operation.as_str(), &addressed, new, old, user)
            }
        };
        // The audit scanner never reads `matchConditions` (adm-controller
        // 1.35, `internal/audit-scanner`); the API server does.
        if !expected.audit
            && let Some(condition) = policy.unmet_condition(&request)?
        {
            let why = format!("{}'s matchCondition `{condition}` is false", policy.name);
            return Ok(Err(why));
        }
        let request = serde_json::to_vec(&request).map_err(|e| e.to_string())?;
        let judged = judging.judge(&self.instances[loaded.instance], &request);
        // A policy that could not judge leaves the case undecided, but a
        // group that accepts whatever its failed member answered.
        match judged.failures.first() {
            Some(failure) if !judged.verdict.accepted => Err(failure.line(&policy.name)),
            _ => Ok(Ok(judged)),
        }
    }

    /// The object of `patchedResource` that has `object`'s kind and name,
    /// as admitted.
    fn patched_object(&self, path: &std::path::Path, object: &Object) -> Result<Value, String> {
        let mut errors = Vec::new();
        let found = read_objects(std::slice::from_ref(&path.to_path_buf()), &mut errors);
        if let Some(error) = errors.into_iter().next() {
            return Err(error);
        }
        let alone = Admission {
            derive: false,
            ..self.admission.clone()
        };
        found
            .into_iter()
            .map(|patched| {
                objects::candidates(patched, &alone, &self.owners)
                    .swap_remove(0)
                    .object
            })
            .find(|patched| same(patched, &object.object))
            .ok_or_else(|| {
                format!(
                    "{} holds no {}: a patched object has the object's kind and name",
                    path.display(),
                    object.described
                )
            })
    }

    /// The objects of a result's `oldResource` as admitted (a namespace
    /// where none is written), read once for all the objects it names.
    fn old_objects(&self, expected: &Expected) -> Result<Vec<Value>, String> {
        let Some(path) = &expected.old_resource else {
            return Ok(Vec::new());
        };
        let mut errors = Vec::new();
        let found = read_objects(std::slice::from_ref(path), &mut errors);
        if let Some(error) = errors.into_iter().next() {
            return Err(error);
        }
        let alone = Admission {
            derive: false,
            ..self.admission.clone()
        };
        Ok(found
            .iter()
            .map(|old| {
                objects::candidates(old.clone(), &alone, &self.owners)
                    .swap_remove(0)
                    .object
            })
            .collect())
    }

    /// Why no object is `resource` of `kind`, with the nearest names.
    fn not_found(&self, kind: &str, resource: &str) -> String {
        let of_kind: Vec<String> = self
            .objects
            .iter()
            .filter(|o| o.object["kind"] == kind)
            .map(|o| objects::place(&o.object))
            .collect();
        if of_kind.is_empty() {
            let mut kinds: Vec<&str> = self
                .objects
                .iter()
                .filter_map(|o| o.object["kind"].as_str())
                .collect();
            kinds.sort_unstable();
            kinds.dedup();
            return format!(
                "no {kind} among the resources (their kinds: {})",
                kinds.join(", ")
            );
        }
        format!(
            "no {kind} named `{resource}` among the resources{}",
            nearest(resource, of_kind.iter().map(String::as_str))
        )
    }
}

/// Whether what was got is what was expected, message included, and the
/// reason to show: the message, or why it does not match.
fn grade(expected: &Expected, got: Option<Verdict>, reason: String) -> (bool, String) {
    if got != Some(expected.result) {
        return (false, reason);
    }
    match &expected.message {
        Some(wanted) if !wanted.is_match(&reason) => (
            false,
            format!("the message does not match /{wanted}/: {reason}"),
        ),
        _ => (true, reason),
    }
}

/// The object before an UPDATE: its namesake among `olds` (the objects of
/// `oldResource`), or the object itself when none is given.
fn old_object<'o>(
    olds: &'o Result<Vec<Value>, String>,
    expected: &Expected,
    object: &'o Object,
) -> Result<Option<&'o Value>, String> {
    match (expected.operation, &expected.old_resource) {
        (Operation::Update, Some(path)) => {
            let olds = olds.as_ref().map_err(Clone::clone)?;
            olds.iter()
                .find(|old| same(old, &object.object))
                .map(Some)
                .ok_or_else(|| {
                    format!(
                        "{} holds no {}: an UPDATE's old object has the new one's kind and name",
                        path.display(),
                        object.described
                    )
                })
        }
        (Operation::Update, None) => Ok(Some(&object.object)),
        (Operation::Create | Operation::Delete, _) => Ok(None),
    }
}

/// `: did you mean …?` with the names within a few edits of `wanted`,
/// nearest first; nothing when none is near.
fn nearest<'n>(wanted: &str, names: impl Iterator<Item = &'n str>) -> String {
    let limit = (wanted.chars().count() / 3).max(2);
    let mut near: Vec<(usize, &str)> = names
        .map(|name| (strsim::levenshtein(wanted, name), name))
        .filter(|(distance, _)| *distance <= limit)
        .collect();
    near.sort_unstable();
    near.dedup();
    let near: Vec<String> = near.iter().take(3).map(|(_, n)| format!("`{n}`")).collect();
    match near.is_empty() {
        true => String::new(),
        false => format!(" (did you mean {}?)", near.join(" or ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_nearest_names_are_offered_nearest_first() {
        let names = ["shop/web", "shop/wbe", "shop/api", "lab/web"].into_iter();
        assert_eq!(
            nearest("shop/weeb", names),
            " (did you mean `shop/web` or `shop/wbe`?)"
        );
        assert_eq!(nearest("database", ["web", "api"].into_iter()), "");
    }
}
