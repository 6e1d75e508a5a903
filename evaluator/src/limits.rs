//! What bounds an evaluation: a deadline on each call into a module and a
//! cap on each instance's memory, so that a module nobody here wrote can
//! neither hang a command nor take the machine's memory.
//!
//! policy-server (kubewarden-controller 1.35, `crates/policy-server/src/lib.rs`)
//! turns on wasmtime's epoch interruption, ticks the engine's epoch once a
//! second, and gives each call `--policy-timeout` ticks (2 by default), or
//! the policy's own `spec.timeoutEvalSeconds`; `--disable-timeout-protection`
//! turns the deadline off. A tick a second cuts a call somewhere between
//! N − 1 and N seconds after it starts, depending on when the tick falls.
//! The runner ticks every [`TICK`], so that a call is cut at N seconds to
//! within a tick, whatever the phase: the same deadline, without the
//! second of chance.
//!
//! The memory cap is wasmtime's `StoreLimits` on an instance's linear
//! memories and tables; policy-server sets none, so the default
//! ([`DEFAULT_MEMORY`]) comes from measuring Kubewarden's own policies
//! (docs/performance.md, "What a policy may use").

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use wasmtime::{Engine, EngineWeak, ResourceLimiter, StoreLimits, StoreLimitsBuilder};

/// policy-server's `--policy-timeout` default.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(2);

/// The default cap on an instance's linear memory: 512 MiB, ten times
/// the most any of Kubewarden's own policies built here needs over its own
/// tests (kyverno-dsl-policy, 40 to 48 MiB; docs/performance.md).
pub const DEFAULT_MEMORY: usize = 512 << 20;

/// How often the epoch of every engine advances.
pub const TICK: Duration = Duration::from_millis(10);

/// Table elements an instance may have: far more than any compiler emits
/// (a Go policy's function table holds some thousands), and bounded.
const MAX_TABLE_ELEMENTS: usize = 1 << 20;

/// What bounds each call into an instance.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The deadline of each call; `None`, as `--disable-timeout-protection`.
    pub timeout: Option<Duration>,
    /// The bytes of linear memory an instance may hold; `None`: no cap
    /// (wasmtime's own, 4 GiB for a 32-bit memory).
    pub memory: Option<usize>,
}

impl Default for Limits {
    /// policy-server's deadline and the runner's memory cap.
    fn default() -> Limits {
        Limits {
            timeout: Some(DEFAULT_TIMEOUT),
            memory: Some(DEFAULT_MEMORY),
        }
    }
}

impl Limits {
    /// No deadline and no cap: what the benchmarks measure beside.
    pub const NONE: Limits = Limits {
        timeout: None,
        memory: None,
    };

    /// The epoch ticks a call may run for: the timeout rounded up to a
    /// tick, or a count no run reaches.
    pub(crate) fn ticks(&self) -> u64 {
        match self.timeout {
            // `set_epoch_deadline` adds this to the current epoch: half of
            // u64 leaves room for any number of ticks.
            None => u64::MAX / 2,
            // Bounded as `None` is: a timeout of centuries must not wrap.
            Some(timeout) => timeout
                .as_nanos()
                .div_ceil(TICK.as_nanos())
                .clamp(1, u128::from(u64::MAX / 2)) as u64,
        }
    }

    /// The cap on memory and tables, as a store's limiter.
    pub(crate) fn limiter(&self) -> Limiter {
        Limiter {
            limits: self.store_limits(),
            refused: false,
        }
    }

    /// wasmtime-provider's limits for a waPC instance: the same caps.
    pub(crate) fn resource_limits(&self) -> wasmtime_provider::ResourceLimits {
        wasmtime_provider::ResourceLimits {
            max_memory_size: self.memory,
            max_table_elements: Some(MAX_TABLE_ELEMENTS),
        }
    }

    fn store_limits(&self) -> StoreLimits {
        let mut limits = StoreLimitsBuilder::new().table_elements(MAX_TABLE_ELEMENTS);
        if let Some(memory) = self.memory {
            limits = limits.memory_size(memory);
        }
        limits.build()
    }

    /// What the timeout reads as in a message: `2 s`, `1500 ms`.
    pub fn deadline(&self) -> String {
        match self.timeout {
            None => "none".to_string(),
            Some(timeout) => seconds(timeout),
        }
    }
}

/// `2 s`, or `1500 ms` when it is not a whole number of seconds.
pub fn seconds(duration: Duration) -> String {
    match duration.subsec_millis() {
        0 => format!("{} s", duration.as_secs()),
        _ => format!("{} ms", duration.as_millis()),
    }
}

/// A store's limiter: wasmtime's `StoreLimits`, and whether it refused a
/// growth, so that a guest that fails for want of memory is told from one
/// that trapped for another reason (the guest sees only a failed
/// `memory.grow`).
pub(crate) struct Limiter {
    limits: StoreLimits,
    pub(crate) refused: bool,
}

impl ResourceLimiter for Limiter {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let granted = self.limits.memory_growing(current, desired, maximum)?;
        self.refused |= !granted;
        Ok(granted)
    }

    fn table_growing(
        &mut self,
        current: usize,
        desired: usize,
        maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let granted = self.limits.table_growing(current, desired, maximum)?;
        self.refused |= !granted;
        Ok(granted)
    }

    fn instances(&self) -> usize {
        self.limits.instances()
    }

    fn tables(&self) -> usize {
        self.limits.tables()
    }

    fn memories(&self) -> usize {
        self.limits.memories()
    }
}

/// Whether `error` is wasmtime's interruption at an epoch deadline.
pub(crate) fn interrupted(error: &wasmtime::Error) -> bool {
    matches!(
        error.downcast_ref::<wasmtime::Trap>(),
        Some(wasmtime::Trap::Interrupt)
    )
}

/// Whether the engines compiled from now on check deadlines.
static DEADLINES: AtomicBool = AtomicBool::new(true);

/// Compiles every module from now on without deadline checks, as
/// policy-server's `--disable-timeout-protection` does: wasmtime's epoch
/// checks, at each function's entry and each loop's back edge, cost this
/// policy's `validate` a fifth to two fifths of its time
/// (docs/performance.md), which a run that sets no deadline need not pay.
/// An instance of such a module cannot be given a deadline.
pub fn without_deadlines() {
    DEADLINES.store(false, Ordering::Relaxed);
}

/// Whether a module compiled now checks deadlines.
pub(crate) fn deadlines() -> bool {
    DEADLINES.load(Ordering::Relaxed)
}

/// The engines whose epoch the ticker advances, held weakly: an engine
/// dropped with its module is forgotten at the next tick.
static ENGINES: Mutex<Vec<EngineWeak>> = Mutex::new(Vec::new());

/// Advances `engine`'s epoch every [`TICK`] from now on. The first call
/// starts the one thread that ticks every engine of the process; `Err`
/// when it cannot be started.
pub(crate) fn tick(engine: &Engine) -> Result<(), String> {
    static TICKER: OnceLock<Result<(), String>> = OnceLock::new();
    TICKER
        .get_or_init(|| {
            std::thread::Builder::new()
                .name("epoch-ticker".to_string())
                .spawn(|| {
                    loop {
                        std::thread::sleep(TICK);
                        lock().retain(|weak| match weak.upgrade() {
                            Some(engine) => {
                                engine.increment_epoch();
                                true
                            }
                            None => false,
                        });
                    }
                })
                .map(|_| ())
                .map_err(|e| format!("cannot start the thread that times evaluations: {e}"))
        })
        .clone()?;
    lock().push(engine.weak());
    Ok(())
}

fn lock() -> std::sync::MutexGuard<'static, Vec<EngineWeak>> {
    ENGINES.lock().unwrap_or_else(|p| p.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_timeout_is_counted_in_ticks_rounded_up() {
        let limits = |ms| Limits {
            timeout: Some(Duration::from_millis(ms)),
            memory: None,
        };
        assert_eq!(limits(2000).ticks(), 200);
        assert_eq!(limits(2001).ticks(), 201);
        assert_eq!(limits(1).ticks(), 1);
        assert_eq!(limits(0).ticks(), 1);
        assert!(Limits::NONE.ticks() > 1 << 62);
        let forever = Limits {
            timeout: Some(Duration::from_secs(u64::MAX)),
            memory: None,
        };
        assert_eq!(forever.ticks(), u64::MAX / 2);
    }
}
