//! A waPC (`kubewarden-wapc`) policy for the evaluator's tests that does
//! what no policy should, so that the tests hold the runner to bounding it.
//!
//! Settings: `{"validate": "<how>", "validateSettings": "<how>",
//! "sleepMilliseconds": <n>}`, each optional. `validate` and
//! `validate_settings` do as their field says, or, without it, accept and
//! find the settings valid; an object annotated
//! `hostile.example.com/validate: <how>` says how `validate` does instead
//! (so that one policy can be sane and hostile by turns, as `serve` needs).
//! `<how>` is one of:
//! - `loop`: spins for ever;
//! - `sleep`: sleeps `sleepMilliseconds` in naps of 100 ms (a WASI
//!   `poll_oneoff` each), as Kubewarden's own sleeping-policy does, then
//!   answers as without the field;
//! - `memory`: takes 1 MiB more of linear memory, and writes to it, until
//!   an allocation fails;
//! - `trap`: executes `unreachable`;
//! - `recurse`: calls itself until the stack overflows;
//! - `garbage`: answers bytes that are not JSON;
//! - `shape`: answers JSON of the wrong shape (`{"accepted": "yes"}`);
//! - `huge`: answers a valid verdict of 40 MiB (its message).
//!
//! Everything is gated on wasm32: natively the crate is an empty cdylib.

#[cfg(target_arch = "wasm32")]
mod policy;
