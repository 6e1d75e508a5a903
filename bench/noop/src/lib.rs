//! A policy that accepts every request without reading it, and any
//! settings: served beside the policy under the same load
//! (`cluster/run --load`), it is what a webhook costs the API server when
//! the module does nothing, so that the policy's figures are a ratio to it
//! and not this machine's absolute times.

#[cfg(target_arch = "wasm32")]
use kubewarden_policy_sdk::{
    protocol_version_guest,
    wapc_guest::{self as guest, CallResult},
};

#[cfg(target_arch = "wasm32")]
#[unsafe(no_mangle)]
pub extern "C" fn wapc_init() {
    guest::register_function("validate", validate);
    guest::register_function("validate_settings", validate_settings);
    guest::register_function("protocol_version", protocol_version_guest);
}

#[cfg(target_arch = "wasm32")]
fn validate(_payload: &[u8]) -> CallResult {
    Ok(br#"{"accepted":true}"#.to_vec())
}

#[cfg(target_arch = "wasm32")]
fn validate_settings(_payload: &[u8]) -> CallResult {
    Ok(br#"{"valid":true}"#.to_vec())
}
