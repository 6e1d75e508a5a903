//! WASI programs (`executionMode: wasi`, Kubewarden's Go policies), run
//! as policy-server runs them (kubewarden-controller 1.35,
//! `runtimes/wasi_cli`): a fresh instance a call, its arguments
//! `policy.wasm validate` or `policy.wasm validate-settings`, the input on
//! its standard input and the answer read from its standard output once it
//! exits with status 0. A host call is the import `host.call`, whose
//! answer the host appends to the program's standard input.

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::Poll;

use wasmtime::{Caller, Engine, InstancePre, Linker, Module, Store};
use wasmtime_wasi::cli::{IsTerminal, StdinStream};
use wasmtime_wasi::p1::WasiP1Ctx;
use wasmtime_wasi::p2::pipe::MemoryOutputPipe;
use wasmtime_wasi::p2::{InputStream, Pollable, StreamError};

use crate::HostError;
use crate::capabilities::{self, Context};
use crate::limits::{self, Limiter, Limits};

/// How much a program may write to its standard output or error: far more
/// than any answer, and bounded.
const OUTPUT_LIMIT: usize = 64 << 20;

/// How much of its standard error a failed program's message holds.
const STDERR_SAID: usize = 64 << 10;

pub(crate) struct State {
    wasi: WasiP1Ctx,
    stdin: SharedStdin,
    context: Arc<Context>,
    limiter: Limiter,
}

/// A module linked once; each call instantiates it afresh.
pub(crate) struct Prepared {
    engine: Engine,
    pre: InstancePre<State>,
}

pub(crate) fn prepare(engine: &Engine, module: &Module) -> Result<Prepared, HostError> {
    let mut linker: Linker<State> = Linker::new(engine);
    wasmtime_wasi::p1::add_to_linker_sync(&mut linker, |state: &mut State| &mut state.wasi)
        .map_err(|e| HostError::Load(format!("cannot link WASI: {e:#}")))?;
    linker
        .func_wrap("host", "call", host_call)
        .map_err(|e| HostError::Load(format!("cannot link host.call: {e:#}")))?;
    let pre = linker
        .instantiate_pre(module)
        .map_err(|e| HostError::Load(format!("cannot instantiate the WASI program: {e:#}")))?;
    Ok(Prepared {
        engine: engine.clone(),
        pre,
    })
}

/// What a program that exited 0 wrote on its standard output (its
/// standard error goes where guest logs go: `POLICY_HOST_LOG`).
pub(crate) struct Ran {
    pub stdout: Vec<u8>,
}

/// Why a program gave no answer: what it wrote to its standard error
/// (what policy-server reports), with wasmtime's reason.
#[derive(Debug)]
pub(crate) struct Failed {
    pub stderr: String,
    pub reason: String,
    /// Interrupted at its deadline.
    pub timed_out: bool,
    /// The trap that stopped it, in wasmtime's words (`wasm trap: …`).
    pub trap: Option<String>,
    /// Refused memory (or a table) past its cap while it ran.
    pub refused: bool,
}

impl Failed {
    /// The error it makes: a deadline or the cap where one stopped it,
    /// what the program said otherwise.
    pub(crate) fn error(self, limits: &Limits) -> HostError {
        match (self.timed_out, self.refused) {
            (true, _) => HostError::Timeout {
                limit: limits.timeout.unwrap_or_default(),
                stderr: self.stderr,
            },
            (false, true) => HostError::Memory {
                limit: limits.memory,
            },
            (false, false) => match (self.trap, self.stderr.is_empty()) {
                (Some(trap), _) => HostError::Trap(trap),
                (None, true) => HostError::Guest(self.reason),
                (None, false) => HostError::Guest(self.stderr),
            },
        }
    }
}

impl Prepared {
    pub(crate) fn run(
        &self,
        context: &Arc<Context>,
        limits: &Limits,
        operation: &str,
        input: &[u8],
    ) -> Result<Ran, Failed> {
        let stdin = SharedStdin::new(input);
        let stdout = MemoryOutputPipe::new(OUTPUT_LIMIT);
        let stderr = MemoryOutputPipe::new(OUTPUT_LIMIT);
        let wasi = wasmtime_wasi::WasiCtxBuilder::new()
            .args(&["policy.wasm", operation])
            .stdin(stdin.clone())
            .stdout(stdout.clone())
            .stderr(stderr.clone())
            .build_p1();
        let mut store = Store::new(
            &self.engine,
            State {
                wasi,
                stdin,
                context: context.clone(),
                limiter: limits.limiter(),
            },
        );
        store.limiter(|state| &mut state.limiter);
        // The Go runtime's start-up runs under the deadline too, as in
        // policy-server.
        store.set_epoch_deadline(limits.ticks());
        let ran = self.pre.instantiate(&mut store).and_then(|instance| {
            instance
                .get_typed_func::<(), ()>(&mut store, "_start")?
                .call(&mut store, ())
        });
        let refused = store.data().limiter.refused;
        drop(store);
        let written = |pipe: MemoryOutputPipe| pipe.contents().to_vec();
        let stderr = said(&written(stderr));
        let mut timed_out = false;
        let mut trap = None;
        let exited = match ran {
            Ok(()) => Ok(()),
            Err(error) => match error.downcast_ref::<wasmtime_wasi::I32Exit>() {
                Some(wasmtime_wasi::I32Exit(0)) => Ok(()),
                Some(wasmtime_wasi::I32Exit(status)) => Err(format!("exited with status {status}")),
                None => {
                    timed_out = limits::interrupted(&error);
                    trap = error
                        .downcast_ref::<wasmtime::Trap>()
                        .map(ToString::to_string);
                    Err(format!("{error:#}"))
                }
            },
        };
        if !stderr.is_empty() && std::env::var_os("POLICY_HOST_LOG").is_some() {
            eprintln!("guest stderr ({operation}): {stderr}");
        }
        match exited {
            Ok(()) => Ok(Ran {
                stdout: written(stdout),
            }),
            Err(reason) => Err(Failed {
                stderr,
                reason,
                timed_out,
                trap,
                refused,
            }),
        }
    }
}

/// What a program wrote to its standard error, as the message it fails
/// with: its first [`STDERR_SAID`] bytes, so that a program that writes
/// without end does not make a message of 64 MiB.
fn said(stderr: &[u8]) -> String {
    let shown = &stderr[..stderr.len().min(STDERR_SAID)];
    let mut text = String::from_utf8_lossy(shown).trim().to_string();
    if stderr.len() > STDERR_SAID {
        text.push_str(&format!(" … ({} more bytes)", stderr.len() - STDERR_SAID));
    }
    text
}

/// `host.call(binding, namespace, operation, payload)`, each a pointer and
/// a length into the program's memory: 0 and the answer appended to its
/// standard input, or 1 and the error there instead.
#[allow(clippy::too_many_arguments)]
fn host_call(
    mut caller: Caller<'_, State>,
    binding_at: i32,
    binding_len: i32,
    namespace_at: i32,
    namespace_len: i32,
    operation_at: i32,
    operation_len: i32,
    payload_at: i32,
    payload_len: i32,
) -> wasmtime::Result<i32> {
    let memory = caller
        .get_export("memory")
        .and_then(|export| export.into_memory())
        .ok_or_else(|| wasmtime::Error::msg("host.call: the program exports no memory"))?;
    let data = memory.data(&caller);
    let read = |at: i32, len: i32| -> wasmtime::Result<&[u8]> {
        let start = usize::try_from(at)?;
        let end = start.checked_add(usize::try_from(len)?);
        end.and_then(|end| data.get(start..end))
            .ok_or_else(|| wasmtime::Error::msg("host.call: an argument lies outside memory"))
    };
    let text = |bytes: &[u8]| -> wasmtime::Result<String> {
        String::from_utf8(bytes.to_vec())
            .map_err(|e| wasmtime::Error::msg(format!("host.call: not UTF-8: {e}")))
    };
    let binding = text(read(binding_at, binding_len)?)?;
    let namespace = text(read(namespace_at, namespace_len)?)?;
    let operation = text(read(operation_at, operation_len)?)?;
    let payload = read(payload_at, payload_len)?.to_vec();
    let state = caller.data();
    let answer = capabilities::dispatch(&state.context, &binding, &namespace, &operation, &payload);
    let (status, bytes) = match answer {
        Ok(bytes) => (0, bytes),
        Err(message) => (1, message.into_bytes()),
    };
    state.stdin.append(&bytes);
    Ok(status)
}

/// A standard input that can grow while the program runs: `host.call`'s
/// answers arrive on it. Empty, it reads as the end of the input.
#[derive(Clone)]
struct SharedStdin {
    buffer: Arc<Mutex<VecDeque<u8>>>,
}

impl SharedStdin {
    fn new(input: &[u8]) -> SharedStdin {
        SharedStdin {
            buffer: Arc::new(Mutex::new(input.iter().copied().collect())),
        }
    }

    fn append(&self, bytes: &[u8]) {
        self.lock().extend(bytes);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, VecDeque<u8>> {
        self.buffer.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn take(&self, size: usize) -> Vec<u8> {
        let mut buffer = self.lock();
        let size = size.min(buffer.len());
        buffer.drain(..size).collect()
    }
}

impl IsTerminal for SharedStdin {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdinStream for SharedStdin {
    fn p2_stream(&self) -> Box<dyn InputStream> {
        Box::new(self.clone())
    }

    fn async_stream(&self) -> Box<dyn tokio::io::AsyncRead + Send + Sync> {
        Box::new(self.clone())
    }
}

#[wasmtime_wasi::async_trait]
impl InputStream for SharedStdin {
    fn read(&mut self, size: usize) -> Result<bytes::Bytes, StreamError> {
        let taken = self.take(size);
        match taken.is_empty() {
            true => Err(StreamError::Closed),
            false => Ok(taken.into()),
        }
    }
}

#[wasmtime_wasi::async_trait]
impl Pollable for SharedStdin {
    async fn ready(&mut self) {}
}

impl tokio::io::AsyncRead for SharedStdin {
    fn poll_read(
        self: Pin<&mut Self>,
        _context: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let taken = self.take(buf.remaining());
        buf.put_slice(&taken);
        Poll::Ready(Ok(()))
    }
}
