//! A policy's `spec.matchConditions`: CEL expressions the API server
//! evaluates before it calls the webhook, with `object`, `oldObject` and
//! `request` bound as it binds them (Kubernetes'
//! `staging/src/k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions`
//! and `plugin/cel/filter.go`): `request` is the AdmissionRequest without
//! its objects, `object` is null for a DELETE and `oldObject` for a CREATE.
//! The webhook is called when every condition is true and skipped when one
//! is false; a condition that fails to evaluate is an error here, named, as
//! its outcome depends on the webhook's `failurePolicy` and is no verdict of
//! the policy's.
//!
//! `authorizer` (an authorization check against the live cluster) has no
//! answer outside one, so a condition that names it is refused when the
//! policy is read, never guessed.

use std::sync::Arc;

use cel::{Context, Env, Program};
use serde_json::Value;

/// One named condition, compiled.
#[derive(Clone)]
pub struct Condition {
    pub name: String,
    expression: String,
    program: Arc<Program>,
}

impl std::fmt::Debug for Condition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.name, self.expression)
    }
}

/// The CEL environment: the standard library and the extensions of
/// Kubernetes' that the `cel` crate provides (strings, lists); an
/// extension it lacks (`url()`, `quantity()`) fails the evaluation, named.
fn environment() -> Arc<Env> {
    static ENV: std::sync::OnceLock<Arc<Env>> = std::sync::OnceLock::new();
    Arc::clone(ENV.get_or_init(|| {
        let mut env = Env::stdlib();
        // Both only add functions; an error would be a clash of names in
        // the crate itself, and the functions are then left out.
        let _ = env.add_extension(cel::extensions::strings);
        let _ = env.add_extension(cel::extensions::lists);
        Arc::new(env)
    }))
}

/// The variables the API server binds that the check cannot.
const UNKNOWABLE: [&str; 1] = ["authorizer"];

/// The conditions of `spec.matchConditions` (none when absent), each
/// compiled; `Err` names the condition that cannot be used.
pub fn read(spec: &Value) -> Result<Vec<Condition>, String> {
    let conditions = match &spec["matchConditions"] {
        Value::Null => return Ok(Vec::new()),
        Value::Array(conditions) => conditions,
        other => return Err(format!("`matchConditions` is {other} where a list belongs")),
    };
    let env = environment();
    let mut read: Vec<Condition> = Vec::with_capacity(conditions.len());
    for (i, condition) in conditions.iter().enumerate() {
        let name = condition["name"]
            .as_str()
            .ok_or_else(|| format!("`matchConditions[{i}]` has no `name`"))?;
        if read.iter().any(|c| c.name == name) {
            return Err(format!("`matchConditions` names `{name}` twice"));
        }
        let expression = condition["expression"]
            .as_str()
            .ok_or_else(|| format!("`matchConditions` `{name}` has no `expression`"))?;
        let program = env.compile(expression).map_err(|e| {
            format!("`matchConditions` `{name}`: the expression does not compile: {e}")
        })?;
        let references = program.references();
        if let Some(variable) = UNKNOWABLE.iter().find(|v| references.has_variable(v)) {
            return Err(format!(
                "`matchConditions` `{name}` uses `{variable}`, which only a live API server \
                 can answer: a check without a cluster cannot tell whether the policy is called"
            ));
        }
        read.push(Condition {
            name: name.to_string(),
            expression: expression.to_string(),
            program: Arc::new(program),
        });
    }
    Ok(read)
}

/// `Ok(None)` when every condition holds for `request` (an AdmissionRequest
/// with its objects), `Ok(Some(name))` for the first that does not, `Err`
/// when none is false and one cannot be evaluated: as the API server, a
/// false condition skips the webhook whatever the others do.
pub fn first_unmet(conditions: &[Condition], request: &Value) -> Result<Option<String>, String> {
    if conditions.is_empty() {
        return Ok(None);
    }
    let mut context = Context::with_env(environment());
    // The request's own fields, without copying the objects it carries.
    let attributes: serde_json::Map<String, Value> = request
        .as_object()
        .into_iter()
        .flatten()
        .filter(|(field, _)| !matches!(field.as_str(), "object" | "oldObject"))
        .map(|(field, value)| (field.clone(), value.clone()))
        .collect();
    let attributes = Value::Object(attributes);
    let bind = |context: &mut Context, name: &str, value: &Value| {
        context
            .add_variable(name, value)
            .map_err(|e| format!("cannot give CEL `{name}`: {e}"))
    };
    bind(&mut context, "object", &request["object"])?;
    bind(&mut context, "oldObject", &request["oldObject"])?;
    bind(&mut context, "request", &attributes)?;
    let mut failed = None;
    for condition in conditions {
        let error = match condition.program.execute(&context) {
            Ok(cel::Value::Bool(true)) => continue,
            Ok(cel::Value::Bool(false)) => return Ok(Some(condition.name.clone())),
            Ok(other) => format!(
                "`matchConditions` `{}` gives {other:?}, not a bool",
                condition.name
            ),
            Err(e) => format!(
                "`matchConditions` `{}` cannot be evaluated: {e}",
                condition.name
            ),
        };
        failed.get_or_insert(error);
    }
    match failed {
        Some(error) => Err(error),
        None => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn conditions(list: Value) -> Result<Vec<Condition>, String> {
        read(&json!({ "matchConditions": list }))
    }

    fn request(operation: &str, object: Value, old: Value) -> Value {
        json!({
            "operation": operation,
            "userInfo": {"username": "alice", "groups": ["system:authenticated"]},
            "object": object,
            "oldObject": old,
        })
    }

    #[test]
    fn conditions_see_the_object_the_old_object_and_the_request() {
        let read = conditions(json!([
            {"name": "not-a-node", "expression": "!request.userInfo.username.startsWith('system:node:')"},
            {"name": "labelled", "expression": "has(object.metadata.labels) && object.metadata.labels.team == 'shop'"},
        ]))
        .unwrap();
        let labelled = json!({"metadata": {"name": "p", "labels": {"team": "shop"}}});
        let create = request("CREATE", labelled.clone(), Value::Null);
        assert_eq!(first_unmet(&read, &create), Ok(None));
        let plain = request("CREATE", json!({"metadata": {"name": "p"}}), Value::Null);
        assert_eq!(first_unmet(&read, &plain), Ok(Some("labelled".to_string())));
        let mut node = create.clone();
        node["userInfo"]["username"] = json!("system:node:n1");
        assert_eq!(
            first_unmet(&read, &node),
            Ok(Some("not-a-node".to_string()))
        );
        // `request` holds no object: the API server binds them apart.
        let inside = conditions(json!([{"name": "o", "expression": "!has(request.object)"}]));
        assert_eq!(first_unmet(&inside.unwrap(), &create), Ok(None));
        let update =
            conditions(json!([{"name": "u", "expression": "oldObject.metadata.name == 'p'"}]));
        let updating = request("UPDATE", labelled.clone(), labelled);
        assert_eq!(first_unmet(&update.unwrap(), &updating), Ok(None));
    }

    #[test]
    fn what_cannot_be_known_or_evaluated_is_an_error_that_names_it() {
        let error = conditions(json!([
            {"name": "allowed", "expression": "authorizer.group('apps').resource('deployments').check('create').allowed()"}
        ]))
        .unwrap_err();
        assert!(error.contains("`allowed` uses `authorizer`"), "{error}");
        let error = conditions(json!([{"name": "broken", "expression": "object.("}])).unwrap_err();
        assert!(
            error.contains("`broken`") && error.contains("does not compile"),
            "{error}"
        );
        assert!(conditions(json!([{"expression": "true"}])).is_err());
        assert!(
            conditions(
                json!([{"name": "a", "expression": "true"}, {"name": "a", "expression": "true"}])
            )
            .is_err()
        );
        // A missing field fails the evaluation: it is named, not taken as
        // false.
        let read = conditions(
            json!([{"name": "team", "expression": "object.metadata.labels.team == 'x'"}]),
        )
        .unwrap();
        let error = first_unmet(
            &read,
            &request("CREATE", json!({"metadata": {}}), Value::Null),
        )
        .unwrap_err();
        assert!(error.contains("`team` cannot be evaluated"), "{error}");
        // A false condition skips the webhook, whatever the others do.
        let both = conditions(json!([
            {"name": "team", "expression": "object.metadata.labels.team == 'x'"},
            {"name": "never", "expression": "false"},
        ]))
        .unwrap();
        let unlabelled = request("CREATE", json!({"metadata": {}}), Value::Null);
        assert_eq!(
            first_unmet(&both, &unlabelled),
            Ok(Some("never".to_string()))
        );
        let read = conditions(json!([{"name": "text", "expression": "'a'"}])).unwrap();
        let error = first_unmet(&read, &request("CREATE", json!({}), Value::Null)).unwrap_err();
        assert!(error.contains("not a bool"), "{error}");
        assert!(super::read(&json!({})).unwrap().is_empty());
    }
}
