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

mod answer;
pub mod capabilities;
pub mod group;
pub mod kinds;
pub mod limits;
pub mod metadata;
mod rego;
pub mod response;
mod wapc;
mod wasi;

use std::path::Path;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use serde::Deserialize;
use wasmtime::{Cache, CacheConfig, Config, Engine, Module, ProfilingStrategy};

use answer::parse;
pub use answer::{
    Answer, HostError, MAX_ANSWER, REGO_TIMEOUT, SettingsVerdict, ValidationVerdict, WAPC_TIMEOUT,
};
use capabilities::Context;
pub use limits::Limits;
use metadata::{ExecutionMode, Metadata};
use response::AdmissionResponse;

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
    /// Compiled with deadline checks ([`limits::without_deadlines`]).
    deadlines: bool,
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
        let deadlines = limits::deadlines();
        let engine = Engine::new(&engine_config(deadlines)?)
            .map_err(|e| HostError::Load(format!("{e:#}")))?;
        if deadlines {
            limits::tick(&engine).map_err(HostError::Load)?;
        }
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
                deadlines,
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

    /// A fresh instance whose host calls nothing answers, bounded by
    /// policy-server's deadline (where the module checks deadlines) and the
    /// runner's memory cap.
    pub fn instantiate(&self) -> Result<Policy, HostError> {
        self.instantiate_bounded(Arc::new(Context::default()), self.default_limits())
    }

    /// A fresh instance whose host calls `context` checks and answers,
    /// with the default limits.
    pub fn instantiate_with(&self, context: Arc<Context>) -> Result<Policy, HostError> {
        self.instantiate_bounded(context, self.default_limits())
    }

    /// An instance whose linear memory may not grow past `max_memory` bytes:
    /// a guest that needs more fails its allocation.
    pub fn instantiate_limited(&self, max_memory: usize) -> Result<Policy, HostError> {
        let limits = Limits {
            memory: Some(max_memory),
            ..self.default_limits()
        };
        self.instantiate_bounded(Arc::new(Context::default()), limits)
    }

    /// policy-server's deadline and the runner's cap; no deadline where
    /// the module was compiled without its checks.
    fn default_limits(&self) -> Limits {
        Limits {
            timeout: Limits::default().timeout.filter(|_| self.deadlines),
            ..Limits::default()
        }
    }

    /// A fresh instance whose every call `limits` bounds; a waPC module's
    /// initialisation runs under the same deadline.
    pub fn instantiate_bounded(
        &self,
        context: Arc<Context>,
        limits: Limits,
    ) -> Result<Policy, HostError> {
        if limits.timeout.is_some() && !self.deadlines {
            return Err(HostError::Load(
                "the module was compiled without deadline checks (--disable-timeout-protection), \
                 and cannot be given a deadline"
                    .to_string(),
            ));
        }
        let runtime = match &self.prepared {
            Prepared::Wapc => Runtime::Wapc(wapc::Instance::new(
                &self.engine,
                &self.module,
                context,
                limits,
            )?),
            Prepared::Wasi(prepared) => Runtime::Wasi {
                prepared: prepared.clone(),
                context,
            },
            Prepared::Rego(prepared, _) => Runtime::Rego(Box::new(rego::Instance::new(
                prepared.clone(),
                context,
                limits,
            ))),
        };
        Ok(Policy { runtime, limits })
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
fn engine_config(deadlines: bool) -> Result<Config, HostError> {
    let mut config = Config::new();
    config.cache(MODULE_CACHE.get().cloned().flatten());
    // Every call has a deadline (`limits`), but where no run sets one; a
    // call without one is given more ticks than a run has.
    config.epoch_interruption(deadlines);
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
    limits: Limits,
}

enum Runtime {
    Wapc(wapc::Instance),
    /// A WASI program is instantiated afresh for each call.
    Wasi {
        prepared: Arc<wasi::Prepared>,
        context: Arc<Context>,
    },
    /// Boxed: an OPA instance holds a wasmtime store.
    Rego(Box<rego::Instance>),
}

impl Policy {
    pub fn mode(&self) -> ExecutionMode {
        match &self.runtime {
            Runtime::Wapc(_) => ExecutionMode::Wapc,
            Runtime::Wasi { .. } => ExecutionMode::Wasi,
            Runtime::Rego(instance) => instance.mode(),
        }
    }

    /// What bounds each of its calls.
    pub fn limits(&self) -> Limits {
        self.limits
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
            Runtime::Wasi { prepared, context } => {
                let ran = prepared
                    .run(context, &self.limits, "validate-settings", settings)
                    .map_err(|failed| failed.error(&self.limits))?;
                parse(&ran.stdout, "validate-settings").map_err(|(_, failure)| failure)
            }
            // policy-server takes any settings of a Rego policy.
            Runtime::Rego(_) => Ok(SettingsVerdict {
                valid: true,
                message: None,
            }),
        }
    }

    /// What policy-server makes of the settings: a guest that fails to
    /// answer makes them invalid, in policy-evaluator's words; one stopped
    /// at its deadline or memory cap says so first.
    pub fn settings_verdict(&self, settings: &[u8]) -> SettingsVerdict {
        let invalid = |message: String| SettingsVerdict {
            valid: false,
            message: Some(message),
        };
        match &self.runtime {
            Runtime::Wapc(instance) => match instance.call_raw("validate_settings", settings) {
                Ok(answer) => serde_json::from_slice(&answer)
                    .unwrap_or_else(|e| invalid(format!("error: InvalidResponseWithError({e:?})"))),
                Err(e) => {
                    let said = format!("Error invoking settings validation callback: {e:?}");
                    match instance.stopped(&e) {
                        Some(stop) => invalid(format!("{stop} ({said})")),
                        None => invalid(said),
                    }
                }
            },
            Runtime::Wasi { prepared, context } => {
                match prepared.run(context, &self.limits, "validate-settings", settings) {
                    Ok(ran) => serde_json::from_slice(&ran.stdout).unwrap_or_else(|e| {
                        invalid(format!(
                            "Cannot deserialize settings validation response: {e}"
                        ))
                    }),
                    Err(failed) if failed.timed_out || failed.refused => {
                        invalid(failed.error(&self.limits).to_string())
                    }
                    Err(failed) => invalid(failed.stderr),
                }
            }
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
            Runtime::Wasi { prepared, context } => {
                let ran = prepared
                    .run(context, &self.limits, "validate", payload)
                    .map_err(|failed| failed.error(&self.limits))?;
                parse(&ran.stdout, "validate").map_err(|(_, failure)| failure)
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

    /// The policy's verdict on `request` as policy-server takes it: what
    /// it answered, or, where it failed (a trap, an answer out of
    /// protocol, its deadline, its memory), the rejection policy-server
    /// answers in its place, beside the failure.
    pub fn answer(&self, request: &[u8], settings: &[u8], raw: bool) -> Answer {
        match &self.runtime {
            Runtime::Wapc(instance) => {
                let payload = validate_payload(request, settings);
                match instance.call_raw("validate", &payload) {
                    Ok(answer) => match parse(&answer, "validate") {
                        Ok(verdict) => Answer::given(verdict),
                        Err((e, failure)) => {
                            Answer::internal(&format!("invalid response from policy: {e}"), failure)
                        }
                    },
                    Err(e) => match instance.stopped(&e) {
                        Some(stop @ HostError::Timeout { .. }) => {
                            Answer::failed(WAPC_TIMEOUT.to_string(), stop)
                        }
                        Some(stop) => Answer::internal(&e.to_string(), stop),
                        None => Answer::internal(&e.to_string(), wapc::host_error(e)),
                    },
                }
            }
            Runtime::Wasi { prepared, context } => {
                let payload = validate_payload(request, settings);
                match prepared.run(context, &self.limits, "validate", &payload) {
                    Ok(ran) => match parse(&ran.stdout, "validate") {
                        Ok(verdict) => Answer::given(verdict),
                        Err((e, failure)) => Answer::internal(
                            &format!("Cannot deserialize policy validation response: {e}"),
                            failure,
                        ),
                    },
                    Err(failed) => {
                        let message = failed.stderr.clone();
                        Answer::failed(message, failed.error(&self.limits))
                    }
                }
            }
            Runtime::Rego(instance) => match instance.validate(request, settings, raw) {
                Ok(verdict) => Answer::given(verdict),
                Err(e) => {
                    let message = match &e {
                        HostError::Guest(m) | HostError::Trap(m) | HostError::Load(m) => m.clone(),
                        HostError::BadAnswer { reason, .. } => reason.clone(),
                        HostError::Timeout { .. } => REGO_TIMEOUT.to_string(),
                        HostError::Memory { .. } => e.to_string(),
                    };
                    Answer::internal(&message, e)
                }
            },
        }
    }

    /// The AdmissionResponse policy-server sends for `request`: the
    /// policy's answer, its mutation as a JSONPatch, and a policy that
    /// cannot answer turned into a rejection as policy-server turns it.
    pub fn evaluate(&self, request: &[u8], settings: &[u8], raw: bool) -> AdmissionResponse {
        self.answer(request, settings, raw).response(request, raw)
    }

    fn call_json<T: for<'de> Deserialize<'de>>(
        &self,
        operation: &str,
        payload: &[u8],
    ) -> Result<T, HostError> {
        let answer = self.call(operation, payload)?;
        parse(&answer, operation).map_err(|(_, failure)| failure)
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
