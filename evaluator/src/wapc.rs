//! waPC modules (Rust and TinyGo policies), run as policy-server runs them:
//! wasmtime underneath, waPC on top, the WASI imports linked, every host
//! call through [`capabilities::dispatch`].

use std::sync::Arc;

use wapc::WapcHost;
use wasmtime_provider::wasmtime::{Engine, Module};
use wasmtime_provider::{ResourceLimits, WasmtimeEngineProviderBuilder};

use crate::HostError;
use crate::capabilities::{self, Context};

pub(crate) struct Instance {
    host: WapcHost,
}

pub(crate) fn instantiate(
    engine: &Engine,
    module: &Module,
    context: Arc<Context>,
    max_memory: Option<usize>,
) -> Result<Instance, HostError> {
    let mut builder = WasmtimeEngineProviderBuilder::new()
        .engine(engine.clone())
        .module(module.clone());
    if let Some(max) = max_memory {
        builder = builder.enable_resource_limits(ResourceLimits {
            max_memory_size: Some(max),
            max_table_elements: None,
        });
    }
    let provider = builder
        .build()
        .map_err(|e| HostError::Load(e.to_string()))?;
    let callback = move |_id: u64,
                         binding: &str,
                         namespace: &str,
                         operation: &str,
                         payload: &[u8]|
          -> Result<Vec<u8>, Box<dyn std::error::Error + Send + Sync>> {
        capabilities::dispatch(&context, binding, namespace, operation, payload)
            .map_err(|e| e.into())
    };
    let host = WapcHost::new(Box::new(provider), Some(Box::new(callback)))
        .map_err(|e| HostError::Load(e.to_string()))?;
    Ok(Instance { host })
}

impl Instance {
    /// Calls a waPC function: its answer, or the error waPC gives.
    pub(crate) fn call_raw(
        &self,
        operation: &str,
        payload: &[u8],
    ) -> Result<Vec<u8>, wapc::errors::Error> {
        self.host.call(operation, payload)
    }

    pub(crate) fn call(&self, operation: &str, payload: &[u8]) -> Result<Vec<u8>, HostError> {
        self.call_raw(operation, payload).map_err(host_error)
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
