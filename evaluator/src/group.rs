//! A policy group, run as policy-server runs a ClusterAdmissionPolicyGroup
//! (kubewarden-controller's `policy_group_evaluator/evaluator.rs`): each
//! member is the module with settings of its own; the group's `expression`,
//! evaluated by Rhai, combines what the members answer.
//!
//! The expression runs as policy-server runs it: a raw engine, with only
//! Rhai's operators and no standard library, each member registered as a
//! function of no argument that says whether the member accepts, and the
//! expression compiled once (`compile_expression`) and run with `eval_ast::<bool>`. A group accepts when that
//! evaluation succeeds with `true`; it rejects with its `message`, the
//! message of each member that the expression called and that rejected going
//! into the response's `status.details.causes`, and rejects (code 500) a
//! request whose evaluation fails.
//!
//! `check` and `serve` both judge through [`Judging`], so that a group says
//! the same in both.

use std::sync::{Arc, Mutex};

use serde_json::Value;

use crate::response::not_allowed_to_mutate;
use crate::{Answer, HostError, Policy, ValidationVerdict};

/// What judges a request: one policy's settings, or a group of members.
#[derive(Debug, Clone)]
pub enum Judging {
    Single {
        /// The settings, as JSON text.
        settings: Vec<u8>,
        /// Whether the policy may answer with a changed object
        /// (`spec.mutating`): one that may not and does is refused, as
        /// policy-server refuses it.
        mutating: bool,
        /// Its name, in that refusal.
        name: String,
    },
    Group(Group),
}

/// A policy group ready to judge.
#[derive(Debug, Clone)]
pub struct Group {
    /// Each member's name and settings (JSON text), in name order.
    members: Vec<(String, Vec<u8>)>,
    expression: Expression,
    /// The group's `message`, said of each rejection.
    message: String,
}

/// A rejecting member's part in a group's rejection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cause {
    pub member: String,
    pub message: String,
}

/// What a policy or a group answered.
#[derive(Debug, Clone, PartialEq)]
pub struct Judged {
    /// A group's: accepted, its message (or why its expression failed)
    /// and code; a single policy's: the module's answer.
    pub verdict: ValidationVerdict,
    /// The members that the expression called and that rejected, in name
    /// order (policy-server lists them in a hash map's order).
    pub causes: Vec<Cause>,
    /// The members (or the one policy) that gave no verdict, and why:
    /// policy-server answered each with a rejection of code 500, which
    /// the verdict takes in as it would.
    pub failures: Vec<Failure>,
}

/// A member that failed to judge: it trapped, answered out of protocol,
/// ran past its deadline or its memory.
#[derive(Debug, Clone, PartialEq)]
pub struct Failure {
    /// The group's member; `None` for a policy alone.
    pub member: Option<String>,
    pub error: HostError,
}

impl Failure {
    /// The failure in one line, naming the policy (and the member):
    /// `annotations: interrupted at the deadline of 2 s: …`.
    pub fn line(&self, policy: &str) -> String {
        let whose = match &self.member {
            None => policy.to_string(),
            Some(member) => format!("{policy} (member {member})"),
        };
        format!(
            "{whose}: {}; policy-server answers with a rejection of code 500",
            self.error
        )
    }
}

impl Judged {
    /// The rejection in one line, the group's message followed by its
    /// members' in brackets; `None` when accepted.
    pub fn line(&self) -> Option<String> {
        if self.verdict.accepted {
            return None;
        }
        let message = self.verdict.message.clone().unwrap_or_default();
        if self.causes.is_empty() {
            return Some(message);
        }
        let causes: Vec<String> = self
            .causes
            .iter()
            .map(|c| format!("{}: {}", c.member, c.message))
            .collect();
        Some(format!("{message} ({})", causes.join("; ")))
    }
}

impl Judging {
    /// One policy's settings, or a group's members with their expression and
    /// message; every member's settings validated by `instance`, as
    /// policy-server validates them before it starts (a guest that fails
    /// to answer makes them invalid, in policy-server's words). `name`
    /// names the policy in the error; `mutating` is a single policy's
    /// `spec.mutating` (a group's members never mutate).
    pub fn new(
        instance: &Policy,
        name: &str,
        members: &[(String, Value)],
        group: Option<(&Expression, &str)>,
        mutating: bool,
    ) -> Result<Judging, String> {
        Judging::new_each(&|_| instance, name, members, group, mutating)
    }

    /// As [`Judging::new`], each member on its own module's instance
    /// (`instance(i)` for the `i`th member): a group whose members name
    /// different modules.
    pub fn new_each<'a>(
        instance: &dyn Fn(usize) -> &'a Policy,
        name: &str,
        members: &[(String, Value)],
        group: Option<(&Expression, &str)>,
        mutating: bool,
    ) -> Result<Judging, String> {
        let mut settings = Vec::with_capacity(members.len());
        for (i, (member, value)) in members.iter().enumerate() {
            let bytes = serde_json::to_vec(value).map_err(|e| e.to_string())?;
            let verdict = instance(i).settings_verdict(&bytes);
            if !verdict.valid {
                let whose = match group {
                    Some(_) => format!("{member} in {name}"),
                    None => name.to_string(),
                };
                return Err(format!(
                    "the settings of {whose} are not valid: {}",
                    verdict.message.unwrap_or_default()
                ));
            }
            settings.push((member.clone(), bytes));
        }
        Ok(match group {
            None => Judging::Single {
                settings: settings.pop().map(|(_, s)| s).unwrap_or_default(),
                mutating,
                name: name.to_string(),
            },
            Some((expression, message)) => Judging::Group(Group {
                members: settings,
                expression: expression.clone(),
                message: message.to_string(),
            }),
        })
    }

    /// Judges `request` (an AdmissionRequest's JSON text).
    pub fn judge(&self, instance: &Policy, request: &[u8]) -> Judged {
        self.judge_each(&|_| instance, request)
    }

    /// As [`Judging::judge`], each member on its own module's instance.
    pub fn judge_each<'a>(&self, instance: &dyn Fn(usize) -> &'a Policy, request: &[u8]) -> Judged {
        match self {
            Judging::Single {
                settings,
                mutating,
                name,
            } => {
                let Answer { verdict, failure } = instance(0).answer(request, settings, false);
                let verdict = match !mutating && changes(request, &verdict) {
                    true => ValidationVerdict::rejected(not_allowed_to_mutate(name), None),
                    false => verdict,
                };
                Judged {
                    verdict,
                    causes: Vec::new(),
                    failures: failure
                        .map(|error| Failure {
                            member: None,
                            error,
                        })
                        .into_iter()
                        .collect(),
                }
            }
            Judging::Group(group) => group.judge(instance, request),
        }
    }

    /// The settings each member is judged with, by name.
    pub fn settings(&self) -> Vec<(&str, &[u8])> {
        match self {
            Judging::Single { settings, name, .. } => vec![(name.as_str(), settings.as_slice())],
            Judging::Group(group) => group
                .members
                .iter()
                .map(|(name, settings)| (name.as_str(), settings.as_slice()))
                .collect(),
        }
    }
}

/// Whether a verdict changes the request's object: its JSONPatch would
/// not be empty.
fn changes(request: &[u8], verdict: &ValidationVerdict) -> bool {
    if verdict.patch.is_some() {
        return true;
    }
    let Some(mutated) = &verdict.mutated_object else {
        return false;
    };
    #[derive(serde::Deserialize)]
    struct Object {
        #[serde(default)]
        object: Option<Value>,
    }
    let mut de = serde_json::Deserializer::from_slice(request);
    de.disable_recursion_limit();
    let object = serde::Deserialize::deserialize(&mut de)
        .map(|o: Object| o.object)
        .unwrap_or_default();
    object.as_ref() != Some(mutated)
}

impl Group {
    fn judge<'a>(&self, instance: &dyn Fn(usize) -> &'a Policy, request: &[u8]) -> Judged {
        // Every member's verdict first: Rhai needs its functions to own what
        // they answer. Members have no side effects, so only the calls the
        // expression makes count. A member that fails rejects, in
        // policy-server's words.
        let mut verdicts = Vec::with_capacity(self.members.len());
        let mut failures = Vec::new();
        for (i, (name, settings)) in self.members.iter().enumerate() {
            let Answer { verdict, failure } = instance(i).answer(request, settings, false);
            if let Some(error) = failure {
                failures.push(Failure {
                    member: Some(name.clone()),
                    error,
                });
            }
            // policy-server refuses a member's mutation as the member's
            // rejection.
            let verdict = match changes(request, &verdict) {
                true => ValidationVerdict::rejected(
                    "mutation is not allowed inside of policy group".to_string(),
                    None,
                ),
                false => verdict,
            };
            verdicts.push((name.as_str(), verdict));
        }
        let answers: Vec<(&str, bool)> = verdicts.iter().map(|(n, v)| (*n, v.accepted)).collect();
        let evaluation = self.expression.evaluate(&answers);
        let (accepted, message, code) = match &evaluation.accepted {
            Ok(accepted) => (*accepted, self.message.clone(), None),
            Err(error) => (
                false,
                format!("error evaluating policy group expression: {error}"),
                Some(500),
            ),
        };
        // A failed expression has no causes: policy-server answers it
        // before it looks at the members.
        let causes = match evaluation.accepted {
            Ok(true) | Err(_) => Vec::new(),
            Ok(false) => verdicts
                .into_iter()
                .filter(|(name, verdict)| {
                    !verdict.accepted && evaluation.called.iter().any(|c| c == name)
                })
                .map(|(name, verdict)| Cause {
                    member: name.to_string(),
                    message: verdict.message.unwrap_or_default(),
                })
                .collect(),
        };
        // policy-server runs a member only where the expression calls it.
        failures.retain(|f: &Failure| {
            f.member
                .as_ref()
                .is_some_and(|m| evaluation.called.contains(m))
        });
        Judged {
            verdict: ValidationVerdict {
                accepted,
                message: (!accepted).then_some(message),
                code: if accepted { None } else { code },
                ..ValidationVerdict::accepted()
            },
            causes,
            failures,
        }
    }
}

/// A group's expression, checked as policy-server checks it at start-up,
/// and compiled once: evaluated for every object of a dump, it was parsed
/// again each time.
#[derive(Debug, Clone)]
pub struct Expression {
    text: String,
    ast: rhai::AST,
}

impl PartialEq for Expression {
    fn eq(&self, other: &Expression) -> bool {
        self.text == other.text
    }
}

impl Eq for Expression {}

/// How an evaluation ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Evaluation {
    /// `Err`: the expression failed, which policy-server answers with a
    /// rejection (`error evaluating policy group expression: …`).
    pub accepted: Result<bool, String>,
    /// The members the expression called, in the order it called them.
    pub called: Vec<String>,
}

impl Expression {
    /// The expression `text` over `members`, refused where policy-server's
    /// settings validation refuses it.
    pub fn parse(text: &str, members: &[&str]) -> Result<Expression, String> {
        let answers: Vec<(&str, bool)> = members.iter().map(|m| (*m, true)).collect();
        let ast = rhai::Engine::new_raw()
            .compile_expression(text)
            .map_err(|e| e.to_string())?;
        let expression = Expression {
            text: text.to_string(),
            ast,
        };
        expression.evaluate(&answers).accepted?;
        Ok(expression)
    }

    /// Evaluates the expression where each member answers as `answers`
    /// says; a member is called, and can reject, only where Rhai calls it.
    pub fn evaluate(&self, answers: &[(&str, bool)]) -> Evaluation {
        let mut engine = rhai::Engine::new_raw();
        let called = Arc::new(Mutex::new(Vec::new()));
        for (name, accepts) in answers {
            let (name, accepts, called) = (name.to_string(), *accepts, Arc::clone(&called));
            engine.register_fn(name.clone(), move || {
                if let Ok(mut called) = called.lock() {
                    called.push(name.clone());
                }
                accepts
            });
        }
        let accepted = engine
            .eval_ast::<bool>(&self.ast)
            .map_err(|e| e.to_string());
        let called = called.lock().map(|c| c.clone()).unwrap_or_default();
        Evaluation { accepted, called }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(text: &str, answers: &[(&str, bool)]) -> (bool, Vec<String>) {
        let names: Vec<&str> = answers.iter().map(|(n, _)| *n).collect();
        let expression = Expression::parse(text, &names).unwrap();
        let evaluation = expression.evaluate(answers);
        (evaluation.accepted.unwrap(), evaluation.called)
    }

    #[test]
    fn members_combine_and_stop_as_rhai_does() {
        let members = [("required", false), ("not_denied", true)];
        assert_eq!(
            run("required() && not_denied()", &members),
            (false, vec!["required".into()])
        );
        assert_eq!(
            run("required() || not_denied()", &members),
            (true, vec!["required".into(), "not_denied".into()])
        );
        assert_eq!(
            run("!required()", &members),
            (true, vec!["required".into()])
        );
        assert_eq!(
            run("(required() || true) && !(not_denied() && false)", &members),
            (true, vec!["required".into(), "not_denied".into()])
        );
        // && binds tighter than ||.
        assert!(run("true || required() && false", &members).0);
    }

    /// What policy-server's engine takes, the check takes, and what it
    /// refuses, the check refuses: the answers are Rhai's own.
    #[test]
    fn expressions_are_taken_or_refused_as_policy_server_does() {
        let members = ["a", "b"];
        for taken in [
            "a() && b()",
            "2 > 1",
            "a() == true",
            "a() != b()",
            "if a() { b() } else { false }",
            "(a() || b()) && !false",
            "a() ^ b()",
            // Rhai's `&` on booleans: both sides always called.
            "a() & b()",
        ] {
            assert!(
                Expression::parse(taken, &members).is_ok(),
                "{taken}: {:?}",
                Expression::parse(taken, &members)
            );
        }
        for (refused, fragment) in [
            ("a && b()", "Variable not found: a"),
            ("a() && c()", "Function not found: c ()"),
            ("(a()", ""),
            ("", ""),
            ("1 + 1", "Output type incorrect"),
            ("let x = a(); x", ""),
            ("a(1)", "Function not found: a (i64)"),
        ] {
            let error = Expression::parse(refused, &members).unwrap_err();
            assert!(error.contains(fragment), "{refused}: {error}");
        }
    }

    #[test]
    fn a_member_that_rejects_is_called_only_where_rhai_calls_it() {
        let expression = Expression::parse("a() || b()", &["a", "b"]).unwrap();
        let evaluation = expression.evaluate(&[("a", true), ("b", false)]);
        assert_eq!(evaluation.accepted, Ok(true));
        assert_eq!(evaluation.called, ["a"]);
    }
}
