//! Runs a Kubewarden policy module the way Kubewarden's policy-server and
//! kwctl run it: what Kubewarden calls its policy evaluator. A module is
//! compiled once ([`CompiledPolicy`]) in the execution mode its metadata
//! (or the user) gives it: waPC (`wapc`), a WASI program (`wasi`), or Rego
//! for Open Policy Agent or Gatekeeper (`rego`); each instance
//! ([`Policy`]) answers settings and requests, its host calls answered by
//! the run's host (`capabilities`). What it answers becomes the
//! AdmissionResponse policy-server sends, a mutation as its JSONPatch
//! (`response`); a policy group combines its members' answers (`group`).
//!
//! `run`, `check`, `test` and `serve` run policies through this crate; it
//! knows none of them.

pub mod capabilities;
pub mod group;
pub mod kinds;
pub mod metadata;
mod rego;
pub mod response;
mod wapc;
mod wasi;

use std::fmt;
use std::path::Path;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_json::Value;
use wasmtime::{Cache, CacheConfig, Config, Engine, Module, ProfilingStrategy};

use capabilities::Context;
use metadata::{ExecutionMode, Metadata};
use response::AdmissionResponse;

/// Why a call into the guest did not give a usable answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostError {
    /// The module could not be compiled or instantiated.
    Load(String),
    /// The guest trapped (unreachable, out of bounds, stack overflow, ...).
    Trap(String),
    /// The guest returned an error, or a WASI program failed.
    Guest(String),
    /// The guest answered, but not with the JSON the protocol expects.
    BadAnswer { operation: String, reason: String },
}

impl fmt::Display for HostError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HostError::Load(m) => write!(f, "cannot load the module: {m}"),
            HostError::Trap(m) => write!(f, "the guest trapped: {m}"),
            HostError::Guest(m) => write!(f, "the guest returned an error: {m}"),
            HostError::BadAnswer { operation, reason } => {
                write!(
                    f,
                    "the guest's answer to `{operation}` is malformed: {reason}"
                )
            }
        }
    }
}

impl std::error::Error for HostError {}

/// `Err` with one line naming `path` when `bytes` are no WebAssembly
/// module: wasmtime would try them as the text format and answer with a
/// dump of the bytes it could not parse.
pub fn webassembly(path: &Path, bytes: &[u8]) -> Result<(), String> {
    match bytes.starts_with(b"\0asm") {
        true => Ok(()),
        false => Err(format!(
            "{}: not a WebAssembly module (a module's first bytes are \\0asm)",
            path.display()
        )),
    }
}

/// A compiled module in its execution mode, shareable between threads;
/// instantiate it to call it.
#[derive(Clone)]
pub struct CompiledPolicy {
    engine: Engine,
    module: Module,
    metadata: Option<Metadata>,
    prepared: Prepared,
}

#[derive(Clone)]
enum Prepared {
    Wapc,
    Wasi(Arc<wasi::Prepared>),
    Rego(Arc<rego::Prepared>, ExecutionMode),
}

impl CompiledPolicy {
    pub fn from_file(path: &Path) -> Result<CompiledPolicy, HostError> {
        CompiledPolicy::from_file_as(path, None)
    }

    /// A module run in `mode` (`-e`), which its metadata must agree with.
    pub fn from_file_as(
        path: &Path,
        mode: Option<ExecutionMode>,
    ) -> Result<CompiledPolicy, HostError> {
        let bytes =
            std::fs::read(path).map_err(|e| HostError::Load(format!("{}: {e}", path.display())))?;
        webassembly(path, &bytes).map_err(HostError::Load)?;
        CompiledPolicy::compile(&bytes, mode).map(|(policy, _)| policy)
    }

    pub fn from_bytes(bytes: &[u8]) -> Result<CompiledPolicy, HostError> {
        CompiledPolicy::compile(bytes, None).map(|(policy, _)| policy)
    }

    pub fn from_bytes_as(
        bytes: &[u8],
        mode: Option<ExecutionMode>,
    ) -> Result<CompiledPolicy, HostError> {
        CompiledPolicy::compile(bytes, mode).map(|(policy, _)| policy)
    }

    /// Compiles with a fresh engine, as policy-server does at start-up, and
    /// says how long `Module::new` took.
    pub fn timed_compile(bytes: &[u8]) -> Result<(CompiledPolicy, Duration), HostError> {
        CompiledPolicy::compile(bytes, None)
    }

    fn compile(
        bytes: &[u8],
        asked: Option<ExecutionMode>,
    ) -> Result<(CompiledPolicy, Duration), HostError> {
        // The text format (tests' hand-written guests) carries neither
        // metadata nor OPA's exports; wasmtime reads it.
        let binary = bytes.starts_with(b"\0asm");
        let metadata = match binary {
            true => Metadata::of(bytes).map_err(HostError::Load)?,
            false => None,
        };
        let rego = binary && metadata::built_from_rego(bytes).map_err(HostError::Load)?;
        let mode =
            metadata::execution_mode(metadata.as_ref(), asked, rego).map_err(HostError::Load)?;
        let engine =
            Engine::new(&engine_config()?).map_err(|e| HostError::Load(format!("{e:#}")))?;
        let start = Instant::now();
        let module = Module::new(&engine, bytes).map_err(|e| HostError::Load(format!("{e:#}")))?;
        let took = start.elapsed();
        let prepared = match mode {
            ExecutionMode::Wapc => Prepared::Wapc,
            ExecutionMode::Wasi => Prepared::Wasi(Arc::new(wasi::prepare(&engine, &module)?)),
            ExecutionMode::Opa | ExecutionMode::Gatekeeper => {
                Prepared::Rego(Arc::new(rego::prepare(&engine, &module, mode)?), mode)
            }
        };
        Ok((
            CompiledPolicy {
                engine,
                module,
                metadata,
                prepared,
            },
            took,
        ))
    }

    pub fn mode(&self) -> ExecutionMode {
        match &self.prepared {
            Prepared::Wapc => ExecutionMode::Wapc,
            Prepared::Wasi(_) => ExecutionMode::Wasi,
            Prepared::Rego(_, mode) => *mode,
        }
    }

    /// The module's Kubewarden metadata, if it is annotated.
    pub fn metadata(&self) -> Option<&Metadata> {
        self.metadata.as_ref()
    }

    /// A fresh instance whose host calls nothing answers.
    pub fn instantiate(&self) -> Result<Policy, HostError> {
        self.instance(Arc::new(Context::default()), None)
    }

    /// A fresh instance whose host calls `context` checks and answers.
    pub fn instantiate_with(&self, context: Arc<Context>) -> Result<Policy, HostError> {
        self.instance(context, None)
    }

    /// An instance whose linear memory may not grow past `max_memory` bytes:
    /// a guest that needs more fails its allocation, which shows as a trap.
    pub fn instantiate_limited(&self, max_memory: usize) -> Result<Policy, HostError> {
        self.instance(Arc::new(Context::default()), Some(max_memory))
    }

    fn instance(
        &self,
        context: Arc<Context>,
        max_memory: Option<usize>,
    ) -> Result<Policy, HostError> {
        let runtime = match &self.prepared {
            Prepared::Wapc => Runtime::Wapc(wapc::instantiate(
                &self.engine,
                &self.module,
                context,
                max_memory,
            )?),
            Prepared::Wasi(prepared) => Runtime::Wasi {
                prepared: prepared.clone(),
                context,
                max_memory,
            },
            Prepared::Rego(prepared, _) => {
                Runtime::Rego(Box::new(rego::Instance::new(prepared.clone(), context)))
            }
        };
        Ok(Policy { runtime })
    }
}

/// Where compiled modules are kept between runs, once set.
static MODULE_CACHE: OnceLock<Option<Cache>> = OnceLock::new();

/// Keeps the modules this process compiles in `directory` (created if
/// missing), for the next run to load instead of compiling them again, as
/// kwctl and policy-server keep theirs: a run on a few files is mostly
/// Cranelift's compile. wasmtime's own cache keys each entry by the
/// module's bytes, wasmtime's version and the compiler's settings with the
/// CPU's features, and writes it whole or not at all. Set once, before the
/// first compile; `None` keeps nothing. A directory that cannot be used is
/// an error, and nothing is kept.
pub fn keep_compiled_modules(directory: Option<&Path>) -> Result<(), String> {
    let cache = match directory {
        None => None,
        Some(directory) => {
            let at = std::path::absolute(directory)
                .map_err(|e| format!("{}: {e}", directory.display()))?;
            let mut config = CacheConfig::new();
            config.with_directory(&at);
            let cache = Cache::new(config)
                .map_err(|e| format!("cannot keep compiled modules in {}: {e:#}", at.display()))?;
            Some(cache)
        }
    };
    let set = MODULE_CACHE.set(cache);
    set.map_err(|_| "where compiled modules are kept is set once".to_string())
}

/// wasmtime's defaults, as policy-server uses. `POLICY_HOST_PROFILER=jitdump`
/// (or `perfmap`) names the compiled guest functions for `perf`.
fn engine_config() -> Result<Config, HostError> {
    let mut config = Config::new();
    config.cache(MODULE_CACHE.get().cloned().flatten());
    match std::env::var("POLICY_HOST_PROFILER").as_deref() {
        Err(_) => {}
        Ok("jitdump") => {
            config.profiler(ProfilingStrategy::JitDump);
        }
        Ok("perfmap") => {
            config.profiler(ProfilingStrategy::PerfMap);
        }
        Ok(other) => {
            return Err(HostError::Load(format!(
                "POLICY_HOST_PROFILER={other}: expected jitdump or perfmap"
            )));
        }
    }
    Ok(config)
}

/// One instance of the module, as policy-server keeps one per worker.
pub struct Policy {
    runtime: Runtime,
}

enum Runtime {
    Wapc(wapc::Instance),
    /// A WASI program is instantiated afresh for each call.
    Wasi {
        prepared: Arc<wasi::Prepared>,
        context: Arc<Context>,
        max_memory: Option<usize>,
    },
    /// Boxed: an OPA instance holds a wasmtime store.
    Rego(Box<rego::Instance>),
}

/// The guest's answer to `validate_settings`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct SettingsVerdict {
    pub valid: bool,
    pub message: Option<String>,
}

/// The guest's answer to `validate` (Kubewarden's ValidationResponse), or
/// what a Rego policy's answer says.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ValidationVerdict {
    pub accepted: bool,
    pub message: Option<String>,
    pub code: Option<u16>,
    #[serde(default)]
    pub mutated_object: Option<Value>,
    #[serde(default)]
    pub audit_annotations: Option<serde_json::Map<String, Value>>,
    #[serde(default)]
    pub warnings: Option<Vec<String>>,
    /// A JSONPatch (base64) the policy made itself: an `opa` policy answers
    /// with a whole AdmissionResponse.
    #[serde(skip)]
    pub patch: Option<String>,
}

impl ValidationVerdict {
    pub fn accepted() -> ValidationVerdict {
        ValidationVerdict {
            accepted: true,
            message: None,
            code: None,
            mutated_object: None,
            audit_annotations: None,
            warnings: None,
            patch: None,
        }
    }

    pub fn rejected(message: String, code: Option<u16>) -> ValidationVerdict {
        ValidationVerdict {
            accepted: false,
            message: Some(message),
            code,
            ..ValidationVerdict::accepted()
        }
    }
}

/// How a WASI program's failure is told apart from a malformed answer.
fn wasi_failed(failed: wasi::Failed) -> HostError {
    match failed.stderr.is_empty() {
        true => HostError::Guest(failed.reason),
        false => HostError::Guest(failed.stderr),
    }
}

impl Policy {
    pub fn mode(&self) -> ExecutionMode {
        match &self.runtime {
            Runtime::Wapc(_) => ExecutionMode::Wapc,
            Runtime::Wasi { .. } => ExecutionMode::Wasi,
            Runtime::Rego(instance) => instance.mode(),
        }
    }

    /// Calls a waPC function and returns its raw answer; a module of
    /// another mode has none.
    pub fn call(&self, operation: &str, payload: &[u8]) -> Result<Vec<u8>, HostError> {
        match &self.runtime {
            Runtime::Wapc(instance) => instance.call(operation, payload),
            _ => Err(HostError::Guest(format!(
                "a {} module has no waPC function `{operation}`",
                self.mode()
            ))),
        }
    }

    pub fn protocol_version(&self) -> Result<String, HostError> {
        self.call_json("protocol_version", b"")
    }

    /// The guest's own answer; an error where it gives none.
    pub fn validate_settings(&self, settings: &[u8]) -> Result<SettingsVerdict, HostError> {
        match &self.runtime {
            Runtime::Wapc(_) => self.call_json("validate_settings", settings),
            Runtime::Wasi {
                prepared,
                context,
                max_memory,
            } => {
                let ran = prepared
                    .run(context, *max_memory, "validate-settings", settings)
                    .map_err(wasi_failed)?;
                serde_json::from_slice(&ran.stdout).map_err(|e| HostError::BadAnswer {
                    operation: "validate-settings".to_string(),
                    reason: format!("{e}: {}", String::from_utf8_lossy(&ran.stdout)),
                })
            }
            // policy-server takes any settings of a Rego policy.
            Runtime::Rego(_) => Ok(SettingsVerdict {
                valid: true,
                message: None,
            }),
        }
    }

    /// What policy-server makes of the settings: a guest that fails to
    /// answer makes them invalid, in policy-evaluator's words.
    pub fn settings_verdict(&self, settings: &[u8]) -> SettingsVerdict {
        let invalid = |message: String| SettingsVerdict {
            valid: false,
            message: Some(message),
        };
        match &self.runtime {
            Runtime::Wapc(instance) => match instance.call_raw("validate_settings", settings) {
                Ok(answer) => serde_json::from_slice(&answer)
                    .unwrap_or_else(|e| invalid(format!("error: InvalidResponseWithError({e:?})"))),
                Err(e) => invalid(format!(
                    "Error invoking settings validation callback: {e:?}"
                )),
            },
            Runtime::Wasi {
                prepared,
                context,
                max_memory,
            } => match prepared.run(context, *max_memory, "validate-settings", settings) {
                Ok(ran) => serde_json::from_slice(&ran.stdout).unwrap_or_else(|e| {
                    invalid(format!(
                        "Cannot deserialize settings validation response: {e}"
                    ))
                }),
                Err(failed) => invalid(failed.stderr),
            },
            Runtime::Rego(_) => SettingsVerdict {
                valid: true,
                message: None,
            },
        }
    }

    /// Sends `{"request": <request>, "settings": <settings>}`, the payload
    /// policy-server builds; both arguments must be JSON texts.
    pub fn validate(
        &self,
        request: &[u8],
        settings: &[u8],
    ) -> Result<ValidationVerdict, HostError> {
        self.validate_request(request, settings, false)
    }

    /// `raw`: the request is any JSON value (`policyType: raw`, `--raw`),
    /// which the Gatekeeper mode refuses.
    pub fn validate_request(
        &self,
        request: &[u8],
        settings: &[u8],
        raw: bool,
    ) -> Result<ValidationVerdict, HostError> {
        match &self.runtime {
            Runtime::Rego(instance) => instance.validate(request, settings, raw),
            _ => self.validate_payload(&validate_payload(request, settings)),
        }
    }

    /// Sends an already built `validate` payload, well formed or not.
    pub fn validate_payload(&self, payload: &[u8]) -> Result<ValidationVerdict, HostError> {
        match &self.runtime {
            Runtime::Wapc(_) => self.call_json("validate", payload),
            Runtime::Wasi {
                prepared,
                context,
                max_memory,
            } => {
                let ran = prepared
                    .run(context, *max_memory, "validate", payload)
                    .map_err(wasi_failed)?;
                serde_json::from_slice(&ran.stdout).map_err(|e| HostError::BadAnswer {
                    operation: "validate".to_string(),
                    reason: format!("{e}: {}", String::from_utf8_lossy(&ran.stdout)),
                })
            }
            Runtime::Rego(instance) => {
                #[derive(Deserialize)]
                struct Payload<'a> {
                    #[serde(borrow)]
                    request: &'a serde_json::value::RawValue,
                    #[serde(borrow)]
                    settings: &'a serde_json::value::RawValue,
                }
                let payload: Payload =
                    serde_json::from_slice(payload).map_err(|e| HostError::BadAnswer {
                        operation: "validate".to_string(),
                        reason: format!("the payload: {e}"),
                    })?;
                instance.validate(
                    payload.request.get().as_bytes(),
                    payload.settings.get().as_bytes(),
                    false,
                )
            }
        }
    }

    /// The AdmissionResponse policy-server sends for `request`: the
    /// policy's answer, its mutation as a JSONPatch, and a policy that
    /// cannot answer turned into a rejection as policy-server turns it.
    pub fn evaluate(&self, request: &[u8], settings: &[u8], raw: bool) -> AdmissionResponse {
        let uid = uid(request);
        let verdict = match &self.runtime {
            Runtime::Wapc(instance) => {
                let payload = validate_payload(request, settings);
                match instance.call_raw("validate", &payload) {
                    Ok(answer) => serde_json::from_slice::<ValidationVerdict>(&answer)
                        .map_err(|e| format!("invalid response from policy: {e}")),
                    Err(e) => Err(e.to_string()),
                }
            }
            Runtime::Wasi {
                prepared,
                context,
                max_memory,
            } => {
                let payload = validate_payload(request, settings);
                match prepared.run(context, *max_memory, "validate", &payload) {
                    Ok(ran) => serde_json::from_slice::<ValidationVerdict>(&ran.stdout)
                        .map_err(|e| format!("Cannot deserialize policy validation response: {e}")),
                    Err(failed) => return AdmissionResponse::reject(&uid, failed.stderr, 500),
                }
            }
            Runtime::Rego(instance) => {
                instance
                    .validate(request, settings, raw)
                    .map_err(|e| match e {
                        HostError::Guest(m) | HostError::Trap(m) | HostError::Load(m) => m,
                        HostError::BadAnswer { reason, .. } => reason,
                    })
            }
        };
        match verdict {
            Ok(verdict) => {
                let object = match verdict.mutated_object.is_some() {
                    true => object(request, raw),
                    false => None,
                };
                AdmissionResponse::from_verdict(&uid, object.as_ref(), &verdict)
            }
            Err(message) => AdmissionResponse::internal_error(&uid, &message),
        }
    }

    fn call_json<T: for<'de> Deserialize<'de>>(
        &self,
        operation: &str,
        payload: &[u8],
    ) -> Result<T, HostError> {
        let answer = self.call(operation, payload)?;
        serde_json::from_slice(&answer).map_err(|e| HostError::BadAnswer {
            operation: operation.to_string(),
            reason: format!("{e}: {}", String::from_utf8_lossy(&answer)),
        })
    }
}

/// A request's `uid` (a raw request's, if it has one).
fn uid(request: &[u8]) -> String {
    #[derive(Deserialize)]
    struct Uid {
        #[serde(default)]
        uid: Option<Value>,
    }
    let mut de = serde_json::Deserializer::from_slice(request);
    de.disable_recursion_limit();
    match Uid::deserialize(&mut de) {
        Ok(Uid {
            uid: Some(Value::String(uid)),
        }) => uid,
        _ => String::new(),
    }
}

/// What the request asks to write, which a mutation is compared with: its
/// `object`, or a raw request whole; `None` when it writes nothing.
fn object(request: &[u8], raw: bool) -> Option<Value> {
    let mut de = serde_json::Deserializer::from_slice(request);
    de.disable_recursion_limit();
    let value = Value::deserialize(&mut de).ok()?;
    match raw {
        true => Some(value),
        false => match value {
            Value::Object(mut request) => match request.remove("object") {
                Some(Value::Null) | None => None,
                object => object,
            },
            _ => None,
        },
    }
}

/// The `validate` payload policy-server sends.
pub fn validate_payload(request: &[u8], settings: &[u8]) -> Vec<u8> {
    let mut payload = Vec::with_capacity(request.len() + settings.len() + 24);
    payload.extend_from_slice(br#"{"request":"#);
    payload.extend_from_slice(request);
    payload.extend_from_slice(br#","settings":"#);
    payload.extend_from_slice(settings);
    payload.push(b'}');
    payload
}
