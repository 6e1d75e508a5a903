//! A small waPC host that runs a policy module the way Kubewarden's
//! policy-server and kwctl do: wasmtime underneath, waPC on top, the same
//! payloads going in. Used by the integration tests, the local runner and the
//! benchmark.

pub mod admission;
pub mod check;
pub mod group;
pub mod serve;
pub mod suite;

use std::fmt;
use std::path::Path;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde::Deserialize;
use wapc::WapcHost;
use wasmtime_provider::wasmtime::{Cache, CacheConfig, Config, Engine, Module, ProfilingStrategy};
use wasmtime_provider::{ResourceLimits, WasmtimeEngineProviderBuilder};

/// Why a call into the guest did not give a usable answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostError {
    /// The module could not be compiled or instantiated.
    Load(String),
    /// The guest trapped (unreachable, out of bounds, stack overflow, ...).
    Trap(String),
    /// The guest returned a waPC error.
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

/// A compiled module, shareable between threads; instantiate it to call it.
#[derive(Clone)]
pub struct CompiledPolicy {
    engine: Engine,
    module: Module,
}

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

impl CompiledPolicy {
    pub fn from_file(path: &Path) -> Result<CompiledPolicy, HostError> {
        let bytes =
            std::fs::read(path).map_err(|e| HostError::Load(format!("{}: {e}", path.display())))?;
        webassembly(path, &bytes).map_err(HostError::Load)?;
        CompiledPolicy::from_bytes(&bytes)
    }

    pub fn from_bytes(bytes: &[u8]) -> Result<CompiledPolicy, HostError> {
        CompiledPolicy::timed_compile(bytes).map(|(policy, _)| policy)
    }

    /// Compiles with a fresh engine, as policy-server does at start-up, and
    /// says how long `Module::new` took.
    pub fn timed_compile(bytes: &[u8]) -> Result<(CompiledPolicy, Duration), HostError> {
        let engine =
            Engine::new(&engine_config()?).map_err(|e| HostError::Load(format!("{e:#}")))?;
        let start = Instant::now();
        let module = Module::new(&engine, bytes).map_err(|e| HostError::Load(format!("{e:#}")))?;
        Ok((CompiledPolicy { engine, module }, start.elapsed()))
    }

    /// A fresh instance with its own linear memory, `wapc_init` already run.
    pub fn instantiate(&self) -> Result<Policy, HostError> {
        self.instantiate_with(None)
    }

    /// An instance whose linear memory may not grow past `max_memory` bytes:
    /// a guest that needs more fails its allocation, which shows as a trap.
    pub fn instantiate_limited(&self, max_memory: usize) -> Result<Policy, HostError> {
        self.instantiate_with(Some(max_memory))
    }

    fn instantiate_with(&self, max_memory: Option<usize>) -> Result<Policy, HostError> {
        let mut builder = WasmtimeEngineProviderBuilder::new()
            .engine(self.engine.clone())
            .module(self.module.clone());
        if let Some(max) = max_memory {
            builder = builder.enable_resource_limits(ResourceLimits {
                max_memory_size: Some(max),
                max_table_elements: None,
            });
        }
        let provider = builder
            .build()
            .map_err(|e| HostError::Load(e.to_string()))?;
        let host = WapcHost::new(Box::new(provider), Some(Box::new(host_callback)))
            .map_err(|e| HostError::Load(e.to_string()))?;
        Ok(Policy { host })
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

/// wasmtime's defaults, as policy-server uses; `POLICY_HOST_PROFILER=jitdump`
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

/// Answers the guest's host calls. The only one a policy like ours makes is
/// logging (`kubewarden`/`tracing`/`log`), which goes to stderr when
/// `POLICY_HOST_LOG` is set; other capabilities are not offered.
fn host_callback(
    _id: u64,
    binding: &str,
    namespace: &str,
    operation: &str,
    payload: &[u8],
) -> Result<Vec<u8>, Box<dyn std::error::Error + Send + Sync>> {
    match (binding, namespace, operation) {
        ("kubewarden", "tracing", "log") => {
            if std::env::var_os("POLICY_HOST_LOG").is_some() {
                eprintln!("guest log: {}", String::from_utf8_lossy(payload));
            }
            Ok(Vec::new())
        }
        _ => {
            Err(format!("host capability {binding}/{namespace}/{operation} is not offered").into())
        }
    }
}

/// One instance of the module, as policy-server keeps one per worker.
pub struct Policy {
    host: WapcHost,
}

/// The guest's answer to `validate_settings`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct SettingsVerdict {
    pub valid: bool,
    pub message: Option<String>,
}

/// The guest's answer to `validate` (Kubewarden's ValidationResponse).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ValidationVerdict {
    pub accepted: bool,
    pub message: Option<String>,
    pub code: Option<u16>,
    #[serde(default)]
    pub mutated_object: Option<serde_json::Value>,
    #[serde(default)]
    pub audit_annotations: Option<serde_json::Map<String, serde_json::Value>>,
    #[serde(default)]
    pub warnings: Option<Vec<String>>,
}

impl Policy {
    /// Calls a waPC function and returns its raw answer.
    pub fn call(&self, operation: &str, payload: &[u8]) -> Result<Vec<u8>, HostError> {
        self.host.call(operation, payload).map_err(|e| {
            let message = match e {
                wapc::errors::Error::GuestCallFailure(m) => m,
                other => other.to_string(),
            };
            if message.contains("wasm backtrace") || message.contains("wasm trap") {
                HostError::Trap(message)
            } else {
                HostError::Guest(message)
            }
        })
    }

    pub fn protocol_version(&self) -> Result<String, HostError> {
        self.call_json("protocol_version", b"")
    }

    pub fn validate_settings(&self, settings: &[u8]) -> Result<SettingsVerdict, HostError> {
        self.call_json("validate_settings", settings)
    }

    /// Sends `{"request": <request>, "settings": <settings>}`, the payload
    /// policy-server builds; both arguments must be JSON texts.
    pub fn validate(
        &self,
        request: &[u8],
        settings: &[u8],
    ) -> Result<ValidationVerdict, HostError> {
        self.validate_payload(&validate_payload(request, settings))
    }

    /// Sends an already built `validate` payload, well formed or not.
    pub fn validate_payload(&self, payload: &[u8]) -> Result<ValidationVerdict, HostError> {
        self.call_json("validate", payload)
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
