//! Rego compiled to WebAssembly (`opa build -t wasm`), run as policy-server
//! runs it (kubewarden-controller 1.35, `runtimes/rego`): on OPA's ABI
//! (`abi`), with the builtins Kubewarden's own host offers, computed as it
//! computes them (`builtins`); a module that calls another is refused at
//! load, as policy-server refuses it.
//!
//! The two Rego modes differ in what the policy reads and answers:
//! - `opa`: `input` is `{"request": <AdmissionRequest>}`, `data` the
//!   settings (and `data.kubernetes`, the inventory of the kinds the policy
//!   may read, by plural, namespace and name); the first entrypoint's
//!   `response` is the AdmissionResponse.
//! - `gatekeeper`: `input` is `{"parameters": <settings>, "review":
//!   <AdmissionRequest>}`, `data` `{"inventory": …}` by group version, kind
//!   and name; each result of the entrypoint is a violation, whose `msg`s
//!   joined with ", " are the rejection.

mod abi;
mod builtins;
mod inventory;

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::sync::Arc;

use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;
use wasmtime::{Engine, Module};

use crate::capabilities::Context;
use crate::limits::Limits;
use crate::metadata::ExecutionMode;
use crate::{HostError, ValidationVerdict};
use abi::{Abi, Dispatch};

/// A Rego module checked once: the builtins it calls, and where it
/// starts.
pub(crate) struct Prepared {
    engine: Engine,
    module: Module,
    gatekeeper: bool,
    dispatch: Arc<Dispatch>,
    /// The entrypoint policy-server evaluates: the one numbered 0.
    entrypoint: i32,
}

pub(crate) fn prepare(
    engine: &Engine,
    module: &Module,
    mode: ExecutionMode,
) -> Result<Prepared, HostError> {
    // Reading its builtins and entrypoints runs the module: bounded as an
    // evaluation is.
    let mut abi = Abi::new(engine, module, Arc::new(Vec::new()), &Limits::default())
        .map_err(HostError::Load)?;
    let called = abi.builtins().map_err(HostError::Load)?;
    builtins::check(called.iter().map(|(name, _)| name.as_str())).map_err(HostError::Load)?;
    let dispatch = called
        .into_iter()
        .filter_map(|(name, id)| builtins::find(&name).map(|function| (id, name, function)))
        .collect();
    let entrypoint = abi
        .entrypoints()
        .map_err(HostError::Load)?
        .into_iter()
        .find(|(_, id)| *id == 0)
        .map(|(_, id)| id)
        .ok_or_else(|| HostError::Load("the Rego module has no entrypoint".to_string()))?;
    Ok(Prepared {
        engine: engine.clone(),
        module: module.clone(),
        gatekeeper: mode == ExecutionMode::Gatekeeper,
        dispatch: Arc::new(dispatch),
        entrypoint,
    })
}

/// An instance of the module, and the `data` it has loaded: policy-server
/// loads the data (the settings, and the inventory) for every evaluation;
/// the runner loads it again only when it changes.
pub(crate) struct Instance {
    prepared: Arc<Prepared>,
    context: Arc<Context>,
    limits: Limits,
    loaded: RefCell<Option<(Abi, Vec<u8>)>>,
}

impl Instance {
    pub(crate) fn new(prepared: Arc<Prepared>, context: Arc<Context>, limits: Limits) -> Instance {
        Instance {
            prepared,
            context,
            limits,
            loaded: RefCell::new(None),
        }
    }

    pub(crate) fn mode(&self) -> ExecutionMode {
        match self.prepared.gatekeeper {
            true => ExecutionMode::Gatekeeper,
            false => ExecutionMode::Opa,
        }
    }

    /// The policy's answer to `request` (JSON text); `raw` for a request
    /// that is no AdmissionRequest, which Gatekeeper's mode refuses.
    pub(crate) fn validate(
        &self,
        request: &[u8],
        settings: &[u8],
        raw: bool,
    ) -> Result<ValidationVerdict, HostError> {
        let bad = |what: &str, e: serde_json::Error| HostError::BadAnswer {
            operation: "validate".to_string(),
            reason: format!("{what}: {e}"),
        };
        if raw && self.prepared.gatekeeper {
            return Err(HostError::Guest(
                "Gatekeeper does not support raw validation requests".to_string(),
            ));
        }
        let request: &RawValue =
            serde_json::from_slice(request).map_err(|e| bad("the request", e))?;
        let settings: serde_json::Map<String, Value> =
            serde_json::from_slice(settings).map_err(|e| bad("the settings", e))?;
        let data = match inventory::build(&self.context, self.prepared.gatekeeper) {
            Ok(data) => data,
            Err(message) => return Ok(ValidationVerdict::rejected(message, Some(500))),
        };
        let (input, data) = match self.prepared.gatekeeper {
            false => {
                let mut data_document = settings;
                if let Some(kubernetes) = data {
                    data_document.insert("kubernetes".to_string(), kubernetes);
                }
                (
                    serde_json::json!({ "request": request }),
                    Value::Object(data_document),
                )
            }
            true => (
                serde_json::json!({ "parameters": settings, "review": request }),
                data.map(|inventory| serde_json::json!({ "inventory": inventory }))
                    .unwrap_or_else(|| Value::Object(Default::default())),
            ),
        };
        let result = self.evaluate(&data, &input)?;
        match self.prepared.gatekeeper {
            false => opa_response(&result),
            true => Ok(gatekeeper_violations(&result)),
        }
    }

    fn evaluate(&self, data: &Value, input: &Value) -> Result<Value, HostError> {
        let data = serde_json::to_vec(data).expect("JSON values serialize");
        let input = serde_json::to_vec(input).expect("JSON values serialize");
        let mut loaded = self.loaded.borrow_mut();
        if loaded.is_none() {
            let prepared = &self.prepared;
            let abi = Abi::new(
                &prepared.engine,
                &prepared.module,
                prepared.dispatch.clone(),
                &self.limits,
            )
            .map_err(|e| self.stopped(e, false))?;
            *loaded = Some((abi, b"{}".to_vec()));
        }
        let (abi, loaded_data) = loaded.as_mut().expect("instantiated above");
        let evaluated = match *loaded_data != data {
            true => abi.load_data(&data).map(|()| *loaded_data = data),
            false => Ok(()),
        }
        .and_then(|()| abi.evaluate(self.prepared.entrypoint, &input));
        match evaluated {
            Ok(result) => Ok(result),
            Err(message) => {
                let error = self.stopped(message, abi.refused());
                // Stopped wherever it was, the instance is not called
                // again, as burrego resets its evaluator after a deadline.
                if matches!(error, HostError::Timeout { .. } | HostError::Memory { .. }) {
                    *loaded = None;
                }
                Err(error)
            }
        }
    }

    /// A failure as an error: the deadline or the memory cap where one
    /// stopped the module (`refused`: the cap refused it memory).
    fn stopped(&self, message: String, refused: bool) -> HostError {
        if message.contains(crate::REGO_TIMEOUT) {
            HostError::Timeout {
                limit: self.limits.timeout.unwrap_or_default(),
                stderr: String::new(),
            }
        } else if refused {
            HostError::Memory {
                limit: self.limits.memory,
            }
        } else {
            HostError::Guest(message)
        }
    }
}

/// The `opa` mode's answer: `result[0].result.response`, an
/// AdmissionResponse, as policy-evaluator reads it (its `uid` and
/// `allowed` required).
fn opa_response(result: &Value) -> Result<ValidationVerdict, HostError> {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Response {
        #[allow(dead_code)]
        uid: String,
        allowed: bool,
        #[serde(default)]
        patch: Option<String>,
        #[serde(default)]
        status: Option<Status>,
        #[serde(default)]
        audit_annotations: Option<BTreeMap<String, String>>,
        #[serde(default)]
        warnings: Option<Vec<String>>,
    }
    #[derive(Deserialize)]
    struct Status {
        #[serde(default)]
        message: Option<String>,
        #[serde(default)]
        code: Option<u16>,
    }
    let response = result
        .get(0)
        .and_then(|r| r.get("result"))
        .and_then(|r| r.get("response"))
        .ok_or_else(|| HostError::BadAnswer {
            operation: "validate".to_string(),
            reason: "cannot interpret OPA policy result".to_string(),
        })?;
    let response: Response =
        serde_json::from_value(response.clone()).map_err(|e| HostError::BadAnswer {
            operation: "validate".to_string(),
            reason: e.to_string(),
        })?;
    let status = response.status.unwrap_or(Status {
        message: None,
        code: None,
    });
    Ok(ValidationVerdict {
        accepted: response.allowed,
        message: status.message,
        code: status.code,
        mutated_object: None,
        audit_annotations: response.audit_annotations.map(|annotations| {
            annotations
                .into_iter()
                .map(|(k, v)| (k, Value::String(v)))
                .collect()
        }),
        warnings: response.warnings,
        patch: response.patch,
    })
}

/// Gatekeeper's answer: each element of `result[0].result` a violation.
/// A result of another shape counts as no violation, as policy-evaluator
/// counts it.
fn gatekeeper_violations(result: &Value) -> ValidationVerdict {
    #[derive(Deserialize)]
    struct Violation {
        #[serde(default)]
        msg: Option<String>,
    }
    #[derive(Deserialize, Default)]
    struct Violations {
        result: Vec<Violation>,
    }
    let violations: Violations = result
        .get(0)
        .and_then(|r| serde_json::from_value(r.clone()).ok())
        .unwrap_or_default();
    if violations.result.is_empty() {
        return ValidationVerdict::accepted();
    }
    let messages: Vec<String> = violations
        .result
        .into_iter()
        .filter_map(|v| v.msg)
        .collect();
    ValidationVerdict {
        accepted: false,
        message: Some(messages.join(", ")),
        ..ValidationVerdict::accepted()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn violations_are_joined_and_other_shapes_accept() {
        let rejected =
            gatekeeper_violations(&json!([{"result": [{"msg": "a"}, {"msg": "b"}, {}]}]));
        assert!(!rejected.accepted);
        assert_eq!(rejected.message.as_deref(), Some("a, b"));
        assert!(gatekeeper_violations(&json!([{"result": []}])).accepted);
        assert!(gatekeeper_violations(&json!([{"result": "odd"}])).accepted);
        assert!(gatekeeper_violations(&json!([])).accepted);
    }

    #[test]
    fn an_opa_response_is_read_as_policy_evaluator_reads_it() {
        let result = json!([{"result": {"response": {"uid": "u", "allowed": false, "status": {"message": "no", "code": 403}}}}]);
        let verdict = opa_response(&result).unwrap();
        assert!(!verdict.accepted);
        assert_eq!(
            (verdict.message.as_deref(), verdict.code),
            (Some("no"), Some(403))
        );
        let without_uid = json!([{"result": {"response": {"allowed": true}}}]);
        assert!(opa_response(&without_uid).is_err());
        assert!(opa_response(&json!([{"result": {}}])).is_err());
    }
}
