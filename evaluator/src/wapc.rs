//! waPC modules (Rust and TinyGo policies), run as policy-server runs them:
//! wasmtime underneath, waPC on top, the WASI imports linked, every host
//! call through [`capabilities::dispatch`], each call and the module's
//! initialisation under the instance's deadline, its memory and tables
//! under its cap.

use std::cell::RefCell;
use std::sync::Arc;

use wapc::WapcHost;
use wasmtime_provider::wasmtime::{Engine, Module};
use wasmtime_provider::{EpochDeadlines, WasmtimeEngineProviderBuilder};

use crate::HostError;
use crate::capabilities::{self, Context};
use crate::limits::Limits;

/// wasmtime-provider's words for a call interrupted at its deadline, and
/// for an initialisation that was (it gives no typed error; policy-evaluator
/// looks for the same text).
const INTERRUPTED: &str = "guest code interrupted, execution deadline exceeded";
const INIT_INTERRUPTED: &str = "init interrupted, execution deadline exceeded";

pub(crate) struct Instance {
    /// Rebuilt after a call is interrupted, as policy-server rebuilds it:
    /// the guest stopped wherever it was, its state (a lock held, a heap
    /// half updated) is not to be called again.
    host: RefCell<WapcHost>,
    /// Why the instance could not be rebuilt after a timeout: every call
    /// then fails with it, rather than run on the interrupted state.
    broken: RefCell<Option<String>>,
    engine: Engine,
    module: Module,
    context: Arc<Context>,
    limits: Limits,
}

impl Instance {
    pub(crate) fn new(
        engine: &Engine,
        module: &Module,
        context: Arc<Context>,
        limits: Limits,
    ) -> Result<Instance, HostError> {
        let host = host(engine, module, &context, &limits)?;
        Ok(Instance {
            host: RefCell::new(host),
            broken: RefCell::new(None),
            engine: engine.clone(),
            module: module.clone(),
            context,
            limits,
        })
    }

    /// Calls a waPC function: its answer, or the error waPC gives. A call
    /// interrupted at its deadline leaves a new instance in its place.
    pub(crate) fn call_raw(
        &self,
        operation: &str,
        payload: &[u8],
    ) -> Result<Vec<u8>, wapc::errors::Error> {
        if let Some(why) = self.broken.borrow().as_ref() {
            return Err(wapc::errors::Error::General(format!(
                "the instance interrupted at its deadline could not be made anew: {why}"
            )));
        }
        let called = self.host.borrow().call(operation, payload);
        if let Err(error) = &called
            && error.to_string().contains(INTERRUPTED)
        {
            match host(&self.engine, &self.module, &self.context, &self.limits) {
                Ok(host) => *self.host.borrow_mut() = host,
                Err(why) => *self.broken.borrow_mut() = Some(why.to_string()),
            }
        }
        called
    }

    pub(crate) fn call(&self, operation: &str, payload: &[u8]) -> Result<Vec<u8>, HostError> {
        self.call_raw(operation, payload)
            .map_err(|e| self.stopped(&e).unwrap_or_else(|| host_error(e)))
    }

    /// The deadline, where it interrupted the call; `None` for any other
    /// error. (wasmtime-provider keeps the store's limiter to itself, so a
    /// guest refused memory shows as the trap it then makes.)
    pub(crate) fn stopped(&self, error: &wapc::errors::Error) -> Option<HostError> {
        let text = error.to_string();
        (text.contains(INTERRUPTED) || text.contains(INIT_INTERRUPTED)).then(|| {
            HostError::Timeout {
                limit: self.limits.timeout.unwrap_or_default(),
                stderr: String::new(),
            }
        })
    }
}

/// A waPC host on a fresh store; its `wapc_init` (or `_start`) runs under
/// the deadline.
fn host(
    engine: &Engine,
    module: &Module,
    context: &Arc<Context>,
    limits: &Limits,
) -> Result<WapcHost, HostError> {
    let ticks = limits.ticks();
    let provider = WasmtimeEngineProviderBuilder::new()
        .engine(engine.clone())
        .module(module.clone())
        .enable_epoch_interruptions(EpochDeadlines {
            wapc_init: ticks,
            wapc_func: ticks,
        })
        .enable_resource_limits(limits.resource_limits())
        .build()
        .map_err(|e| load_error(e.to_string(), limits))?;
    let context = context.clone();
    let callback = move |_id: u64,
                         binding: &str,
                         namespace: &str,
                         operation: &str,
                         payload: &[u8]|
          -> Result<Vec<u8>, Box<dyn std::error::Error + Send + Sync>> {
        capabilities::dispatch(&context, binding, namespace, operation, payload)
            .map_err(|e| e.into())
    };
    WapcHost::new(Box::new(provider), Some(Box::new(callback)))
        .map_err(|e| load_error(e.to_string(), limits))
}

/// A module that cannot be made ready: its initialisation interrupted at
/// the deadline, or another reason.
fn load_error(message: String, limits: &Limits) -> HostError {
    match message.contains(INIT_INTERRUPTED) {
        true => HostError::Timeout {
            limit: limits.timeout.unwrap_or_default(),
            stderr: String::new(),
        },
        false => HostError::Load(message),
    }
}

/// A trap (the message carries wasmtime's backtrace) told from an error the
/// guest returned.
pub(crate) fn host_error(error: wapc::errors::Error) -> HostError {
    let message = match error {
        wapc::errors::Error::GuestCallFailure(m) => m,
        other => other.to_string(),
    };
    if message.contains("wasm backtrace") || message.contains("wasm trap") {
        HostError::Trap(message)
    } else {
        HostError::Guest(message)
    }
}
