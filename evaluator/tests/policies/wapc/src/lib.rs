//! A waPC (`kubewarden-wapc`) policy for the evaluator's tests, written
//! against the waPC guest alone so that the tests hold the runner to the
//! wire protocol rather than to the Kubewarden SDK.
//!
//! Settings: `{"annotation": "<key>", "value": "<text>", "denyLabel": "<label key>",
//! "canI": {"verb": "<verb>", "resource": "<core resource>"}}`; `annotation` is
//! required, `value` defaults to `"yes"`, the others are optional.
//! `{"fail": true}` makes `validate_settings` fail as a guest call.
//!
//! `validate`:
//! - no object (DELETE): accepted unchanged;
//! - `denyLabel` set and the object namespaced: its Namespace is fetched
//!   through the host (`kubewarden`/`kubernetes`/`get_resource`); a failed
//!   lookup rejects with `cannot look up Namespace <ns>: <error>`, a
//!   Namespace labelled `<denyLabel>=true` rejects with
//!   `Namespace <ns> is labelled <denyLabel>=true`;
//! - `canI` set: whether the request's sender may do it in the object's
//!   namespace is asked through the host (`kubernetes`/`can_i`); not
//!   allowed rejects with `<user> may not <verb> <resource> in <ns>`;
//! - the annotation absent: accepted, mutated with `annotation: value`;
//! - the annotation present: accepted unchanged.
//!
//! Everything is gated on wasm32: natively the crate is an empty cdylib.

#[cfg(target_arch = "wasm32")]
mod policy;
