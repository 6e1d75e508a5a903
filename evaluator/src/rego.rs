//! Rego compiled to WebAssembly (`opa build -t wasm`), run as policy-server
//! runs it (kubewarden-controller 1.35, `runtimes/rego`), on OPA's ABI as
//! the maintained crate opa-wasm (matrix-org) implements it. The crate
//! serves the ABI (memory, heap, `eval`, builtin dispatch) and most
//! builtins; what it does not evaluate is named at load, with the
//! builtins Kubewarden does not offer either (`builtins`).
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

mod builtins;
mod inventory;

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::sync::Arc;

use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;
use wasmtime::{Engine, Linker, Memory, Module, Store};

use crate::capabilities::Context;
use crate::metadata::ExecutionMode;
use crate::{HostError, ValidationVerdict};

/// A Rego module checked once: what it calls and where it starts.
pub(crate) struct Prepared {
    engine: Engine,
    module: Module,
    gatekeeper: bool,
    /// The entrypoint policy-server evaluates: the one numbered 0.
    entrypoint: String,
}

pub(crate) fn prepare(
    engine: &Engine,
    module: &Module,
    mode: ExecutionMode,
) -> Result<Prepared, HostError> {
    let exported = pollster::block_on(exported(engine, module)).map_err(HostError::Load)?;
    builtins::check(exported.builtins.keys().map(String::as_str)).map_err(HostError::Load)?;
    let entrypoint = exported
        .entrypoints
        .iter()
        .find(|(_, id)| **id == 0)
        .map(|(name, _)| name.clone())
        .ok_or_else(|| HostError::Load("the Rego module has no entrypoint".to_string()))?;
    Ok(Prepared {
        engine: engine.clone(),
        module: module.clone(),
        gatekeeper: mode == ExecutionMode::Gatekeeper,
        entrypoint,
    })
}

/// What an OPA module says of itself: the builtins it calls and its
/// entrypoints, each by name with its number.
struct Exported {
    builtins: BTreeMap<String, i64>,
    entrypoints: BTreeMap<String, i64>,
}

/// Instantiates the module with stand-ins for its imports and asks it, so
/// that a builtin the runner cannot evaluate is named before anything runs
/// (opa-wasm refuses one without its name).
async fn exported(engine: &Engine, module: &Module) -> Result<Exported, String> {
    let not_rego = |what: &str, e: wasmtime::Error| format!("not an OPA module: {what}: {e:#}");
    let mut store = Store::new(engine, ());
    let memory_type = module
        .imports()
        .find(|import| import.module() == "env" && import.name() == "memory")
        .and_then(|import| import.ty().memory().cloned())
        .ok_or("not an OPA module: it imports no env.memory")?;
    let memory = Memory::new_async(&mut store, memory_type)
        .await
        .map_err(|e| not_rego("its memory", e))?;
    let mut linker: Linker<()> = Linker::new(engine);
    let unused = || wasmtime::Error::msg("a builtin was called while the module was only read");
    let defined = linker
        .define(&store, "env", "memory", memory)
        .and_then(|l| {
            l.func_wrap("env", "opa_abort", move |_: i32| -> wasmtime::Result<()> {
                Err(unused())
            })
        })
        .and_then(|l| l.func_wrap("env", "opa_println", |_: i32| {}))
        .and_then(|l| {
            l.func_wrap(
                "env",
                "opa_builtin0",
                move |_: i32, _: i32| -> wasmtime::Result<i32> { Err(unused()) },
            )
        })
        .and_then(|l| {
            l.func_wrap(
                "env",
                "opa_builtin1",
                move |_: i32, _: i32, _: i32| -> wasmtime::Result<i32> { Err(unused()) },
            )
        })
        .and_then(|l| {
            l.func_wrap(
                "env",
                "opa_builtin2",
                move |_: i32, _: i32, _: i32, _: i32| -> wasmtime::Result<i32> { Err(unused()) },
            )
        })
        .and_then(|l| {
            l.func_wrap(
                "env",
                "opa_builtin3",
                move |_: i32, _: i32, _: i32, _: i32, _: i32| -> wasmtime::Result<i32> {
                    Err(unused())
                },
            )
        })
        .and_then(|l| {
            l.func_wrap(
                "env",
                "opa_builtin4",
                move |_: i32, _: i32, _: i32, _: i32, _: i32, _: i32| -> wasmtime::Result<i32> {
                    Err(unused())
                },
            )
        });
    defined.map_err(|e| not_rego("its imports", e))?;
    let instance = linker
        .instantiate_async(&mut store, module)
        .await
        .map_err(|e| not_rego("instantiating it", e))?;
    let dump = instance
        .get_typed_func::<i32, i32>(&mut store, "opa_json_dump")
        .map_err(|e| not_rego("opa_json_dump", e))?;
    let mut read = async |function: &str| -> Result<BTreeMap<String, i64>, String> {
        let value = instance
            .get_typed_func::<(), i32>(&mut store, function)
            .map_err(|e| not_rego(function, e))?
            .call_async(&mut store, ())
            .await
            .map_err(|e| not_rego(function, e))?;
        let text = dump
            .call_async(&mut store, value)
            .await
            .map_err(|e| not_rego(function, e))?;
        let text = c_string(memory.data(&store), text)
            .ok_or_else(|| format!("not an OPA module: {function} answered outside memory"))?;
        let map: BTreeMap<String, Value> = serde_json::from_slice(text)
            .map_err(|e| format!("not an OPA module: {function}: {e}"))?;
        Ok(map
            .into_iter()
            .map(|(name, id)| (name, id.as_i64().unwrap_or(-1)))
            .collect())
    };
    let builtins = read("builtins").await?;
    let entrypoints = read("entrypoints").await?;
    Ok(Exported {
        builtins,
        entrypoints,
    })
}

/// The NUL-terminated string at `at`.
fn c_string(memory: &[u8], at: i32) -> Option<&[u8]> {
    let start = usize::try_from(at).ok()?;
    let rest = memory.get(start..)?;
    let end = rest.iter().position(|b| *b == 0)?;
    Some(&rest[..end])
}

/// A module loaded with a `data` document: policy-server loads the data
/// (the settings, and the inventory) again for every evaluation; the
/// runner keeps one loaded instance a settings, since they do not change
/// within a run.
struct Loaded {
    data: Vec<u8>,
    store: Store<()>,
    policy: opa_wasm::Policy<opa_wasm::DefaultContext>,
}

pub(crate) struct Instance {
    prepared: Arc<Prepared>,
    context: Arc<Context>,
    loaded: RefCell<Vec<Loaded>>,
}

/// The most settings a Rego instance keeps loaded at once: a group's
/// members, a test file's policies.
const LOADED: usize = 16;

impl Instance {
    pub(crate) fn new(prepared: Arc<Prepared>, context: Arc<Context>) -> Instance {
        Instance {
            prepared,
            context,
            loaded: RefCell::new(Vec::new()),
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
        let failed = |e: anyhow::Error| HostError::Guest(format!("{e:#}"));
        let data_text = serde_json::to_vec(data).expect("JSON values serialize");
        let mut loaded = self.loaded.borrow_mut();
        let at = match loaded.iter().position(|l| l.data == data_text) {
            Some(at) => at,
            None => {
                let mut store = Store::new(&self.prepared.engine, ());
                let runtime =
                    pollster::block_on(opa_wasm::Runtime::new(&mut store, &self.prepared.module))
                        .map_err(|e| HostError::Load(format!("{e:#}")))?;
                let policy =
                    pollster::block_on(runtime.with_data(&mut store, data)).map_err(failed)?;
                if loaded.len() == LOADED {
                    loaded.remove(0);
                }
                loaded.push(Loaded {
                    data: data_text,
                    store,
                    policy,
                });
                loaded.len() - 1
            }
        };
        let Loaded { store, policy, .. } = &mut loaded[at];
        pollster::block_on(policy.evaluate(&mut *store, &self.prepared.entrypoint, input))
            .map_err(failed)
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

    #[test]
    fn strings_end_at_their_nul() {
        assert_eq!(c_string(b"ab\0cd\0", 0), Some(&b"ab"[..]));
        assert_eq!(c_string(b"ab\0cd\0", 3), Some(&b"cd"[..]));
        assert_eq!(c_string(b"ab", 0), None);
        assert_eq!(c_string(b"ab", 9), None);
        assert_eq!(c_string(b"ab", -1), None);
    }
}
