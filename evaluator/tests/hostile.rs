//! The evaluator's hostile test policies (`tests/policies/hostile-wapc`,
//! `hostile-wasi`), which loop, sleep, eat memory, trap, recurse or answer
//! garbage as their settings say: every evaluation ends, with the failure
//! named, policy-server's answer for it, and the instance still usable.
//!
//! Each evaluation runs on a thread of its own that the test waits for
//! with a bound, so that a runner that lost its deadline fails the test
//! instead of hanging it.

mod common;

use std::sync::Arc;
use std::sync::mpsc;
use std::time::Duration;

use common::{create, module, pod};
use policy_evaluator::{
    Answer, CompiledPolicy, HostError, Limits, MAX_ANSWER, Policy, SettingsVerdict, WAPC_TIMEOUT,
};
use serde_json::{Value, json};

/// The deadline of these tests: short, and far from the naps that pass.
const DEADLINE: Duration = Duration::from_millis(1500);

/// How long a test waits for an evaluation before it calls it hung.
const HUNG: Duration = Duration::from_secs(60);

const MODES: [&str; 2] = ["hostile-wapc", "hostile-wasi"];

fn limits(memory_mib: usize) -> Limits {
    Limits {
        timeout: Some(DEADLINE),
        memory: Some(memory_mib << 20),
    }
}

fn instance(name: &str, limits: Limits) -> Policy {
    CompiledPolicy::from_file(&module(name))
        .and_then(|compiled| compiled.instantiate_bounded(Arc::default(), limits))
        .unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn request() -> Vec<u8> {
    serde_json::to_vec(&create(pod("p", "default", json!({}), json!({})))).unwrap()
}

/// `f` on a thread of its own, and its result; a panic when it has not
/// ended within [`HUNG`].
fn bounded<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (sender, receiver) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = sender.send(f());
    });
    receiver
        .recv_timeout(HUNG)
        .unwrap_or_else(|_| panic!("{what}: no answer within {HUNG:?}: the evaluation hung"))
}

/// The answer of `name` to a Pod with `settings`, on an instance made for
/// the call, and that instance's answer to the next call, made without
/// settings (an instance cannot move between threads).
fn answer(name: &'static str, settings: Value, memory_mib: usize) -> (Answer, Answer) {
    bounded(name, move || {
        let policy = instance(name, limits(memory_mib));
        let settings = serde_json::to_vec(&settings).unwrap();
        let answer = policy.answer(&request(), &settings, false);
        let next = policy.answer(&request(), b"{}", false);
        (answer, next)
    })
}

#[test]
fn a_loop_is_cut_at_its_deadline_and_the_next_call_is_answered() {
    for name in MODES {
        let (answer, next) = answer(name, json!({"validate": "loop"}), 256);
        assert_eq!(
            answer.failure,
            Some(HostError::Timeout {
                limit: DEADLINE,
                stderr: String::new()
            }),
            "{name}"
        );
        // policy-server's answer: its words for waPC, the program's (empty)
        // standard error for WASI; code 500 either way.
        assert!(!answer.verdict.accepted, "{name}");
        assert_eq!(answer.verdict.code, Some(500), "{name}");
        let expected = match name {
            "hostile-wapc" => WAPC_TIMEOUT,
            _ => "",
        };
        assert_eq!(answer.verdict.message.as_deref(), Some(expected), "{name}");
        assert_eq!(
            answer.failure.unwrap().to_string(),
            "interrupted at the deadline of 1500 ms: the evaluation took too long"
        );
        // The waPC instance was rebuilt: the next call is answered.
        assert_eq!(next.failure, None, "{name}");
        assert!(next.verdict.accepted, "{name}");
    }
}

#[test]
fn a_sleep_shorter_than_the_deadline_passes_and_a_longer_one_is_cut() {
    for name in MODES {
        let (short, _) = answer(
            name,
            json!({"validate": "sleep", "sleepMilliseconds": 300}),
            256,
        );
        assert_eq!(short.failure, None, "{name}");
        assert!(short.verdict.accepted, "{name}");
        let (long, _) = answer(
            name,
            json!({"validate": "sleep", "sleepMilliseconds": 5000}),
            256,
        );
        assert!(
            matches!(long.failure, Some(HostError::Timeout { .. })),
            "{name}: {:?}",
            long.failure
        );
    }
}

#[test]
fn settings_that_loop_are_invalid_and_say_the_deadline() {
    for name in MODES {
        let verdict: SettingsVerdict = bounded(name, move || {
            instance(name, limits(256)).settings_verdict(br#"{"validateSettings": "loop"}"#)
        });
        assert!(!verdict.valid, "{name}");
        let message = verdict.message.unwrap_or_default();
        assert!(
            message.starts_with("interrupted at the deadline of 1500 ms"),
            "{name}: {message}"
        );
    }
}

#[test]
fn memory_past_the_cap_fails_the_call() {
    for name in MODES {
        let (answer, _) = answer(name, json!({"validate": "memory"}), 64);
        let failure = answer.failure.expect("a failure");
        // The WASI program's store is the runner's own, whose limiter says
        // it refused memory; a waPC instance's is wasmtime-provider's, and
        // the refused allocation shows as the guest's abort.
        match name {
            "hostile-wapc" => assert!(
                matches!(&failure, HostError::Trap(_)),
                "{name}: {failure:?}"
            ),
            _ => assert_eq!(
                failure,
                HostError::Memory {
                    limit: Some(64 << 20)
                }
            ),
        }
        assert!(!answer.verdict.accepted, "{name}");
        assert_eq!(answer.verdict.code, Some(500), "{name}");
    }
}

#[test]
fn a_trap_and_a_stack_overflow_are_one_line_failures() {
    for name in MODES {
        for how in ["trap", "recurse"] {
            let (answer, _) = answer(name, json!({"validate": how}), 256);
            let failure = answer.failure.expect("a failure");
            let line = failure.to_string();
            assert!(!line.contains('\n'), "{name} {how}: {line}");
            match (name, how) {
                // wasmtime-provider keeps a waPC trap's backtrace, not its
                // reason: the line names where it trapped.
                ("hostile-wapc", _) => assert!(
                    line.starts_with("the guest trapped: in <wasm function ")
                        && line.ends_with("wasmtime gives no reason)"),
                    "{how}: {line}"
                ),
                // A WASI program's store is the runner's, which keeps
                // the reason.
                (_, "trap") => assert_eq!(
                    line,
                    "the guest trapped: wasm trap: out of bounds memory access"
                ),
                _ => assert_eq!(line, "the guest trapped: wasm trap: call stack exhausted"),
            }
            assert!(!answer.verdict.accepted, "{name} {how}");
            assert_eq!(answer.verdict.code, Some(500), "{name} {how}");
        }
    }
}

#[test]
fn answers_out_of_protocol_are_named() {
    for name in MODES {
        for how in ["garbage", "shape", "huge"] {
            let (answer, _) = answer(name, json!({"validate": how}), 256);
            let failure = answer.failure.expect("a failure");
            let HostError::BadAnswer { operation, reason } = &failure else {
                panic!("{name} {how}: {failure:?}");
            };
            assert_eq!(operation, "validate");
            // Abridged: a message never carries the answer whole.
            assert!(reason.len() < 1000, "{name} {how}: {} bytes", reason.len());
            if how == "huge" {
                assert!(
                    reason.starts_with(&format!("40 MiB, more than the {} MiB", MAX_ANSWER >> 20)),
                    "{reason}"
                );
            }
            assert_eq!(answer.verdict.code, Some(500), "{name} {how}");
        }
    }
}

#[test]
fn a_wasi_program_that_exits_or_writes_without_end_is_stopped() {
    let name = "hostile-wasi";
    let (exit, _) = answer(name, json!({"validate": "exit"}), 256);
    assert_eq!(
        exit.failure,
        Some(HostError::Guest(
            "hostile: exiting with status 3".to_string()
        ))
    );
    assert_eq!(
        exit.verdict.message.as_deref(),
        Some("hostile: exiting with status 3")
    );
    let (silent, _) = answer(name, json!({"validate": "silent"}), 256);
    assert!(
        matches!(silent.failure, Some(HostError::BadAnswer { .. })),
        "{:?}",
        silent.failure
    );
    for how in ["spew", "spewStderr"] {
        let (spew, _) = answer(name, json!({"validate": how}), 256);
        match spew.failure {
            Some(HostError::Timeout { stderr, .. }) => {
                // What it wrote to its standard error is kept, bounded.
                assert!(stderr.len() < 70 << 10, "{how}: {} bytes", stderr.len());
            }
            other => panic!("{how}: {other:?}"),
        }
    }
}

#[test]
fn rego_that_runs_long_or_large_is_stopped_in_both_modes() {
    for name in ["hostile-opa", "hostile-gatekeeper"] {
        // Quick with a small n, and the instance kept.
        let (quick, _) = answer(name, json!({"n": 100}), 256);
        assert_eq!(quick.failure, None, "{name}");
        assert!(quick.verdict.accepted, "{name}");
        // OPA's heap grows at each step: under a cap it would reach in
        // time, the deadline stops it first (a cap of 2 GiB, reached in
        // about four seconds)...
        let (long, next) = bounded(name, move || {
            let policy = instance(
                name,
                Limits {
                    timeout: Some(DEADLINE),
                    memory: Some(2048 << 20),
                },
            );
            let long = policy.answer(&request(), br#"{"n": 30000}"#, false);
            let next = policy.answer(&request(), br#"{"n": 100}"#, false);
            (long, next)
        });
        assert!(
            matches!(long.failure, Some(HostError::Timeout { .. })),
            "{name}: {:?}",
            long.failure
        );
        // ... which policy-server answers in burrego's words.
        assert_eq!(
            long.verdict.message.as_deref(),
            Some("internal server error: guest code interrupted, execution deadline exceeded"),
            "{name}"
        );
        // A fresh instance takes the next evaluation.
        assert_eq!(next.failure, None, "{name}");
        // ... and a small cap stops it first.
        let (large, _) = answer(name, json!({"n": 30000}), 64);
        assert_eq!(
            large.failure,
            Some(HostError::Memory {
                limit: Some(64 << 20)
            }),
            "{name}"
        );
    }
}
