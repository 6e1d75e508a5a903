//! A policy group's `expression`, evaluated by Rhai as policy-server
//! evaluates it (kubewarden-controller's
//! `policy_group_evaluator/evaluator.rs`): a raw engine, with only Rhai's
//! operators and no standard library, each member registered as a function
//! of no argument that says whether the member accepts, and the expression
//! run with `eval_expression::<bool>`. policy-server accepts a group when
//! that evaluation succeeds with every member answering `true`, and rejects a
//! request whose evaluation fails.

use std::sync::{Arc, Mutex};

/// A group's expression, checked as policy-server checks it at start-up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expression {
    text: String,
}

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
        let expression = Expression {
            text: text.to_string(),
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
            .eval_expression::<bool>(&self.text)
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
