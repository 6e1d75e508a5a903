//! The host against tiny hand-written guests, so that each failure mode is
//! seen for real: a trap, a waPC error, an answer that is not JSON.

use policy_evaluator::{CompiledPolicy, HostError};

/// A waPC guest that picks its behaviour by the length of the operation
/// name: 4 ("trap") traps, 5 ("error") returns a waPC error, anything else
/// answers `not json`. It logs through the host first, as policies do.
const GUEST: &str = r#"
(module
  (import "wapc" "__guest_response" (func $response (param i32 i32)))
  (import "wapc" "__guest_error" (func $error (param i32 i32)))
  (import "wapc" "__host_call"
    (func $host_call (param i32 i32 i32 i32 i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 0) "not json")
  (data (i32.const 16) "guest says no")
  (data (i32.const 32) "kubewarden")
  (data (i32.const 48) "tracing")
  (data (i32.const 64) "log")
  (data (i32.const 80) "{\"level\":\"info\",\"message\":\"hello\"}")
  (func (export "__guest_call") (param $op_len i32) (param $msg_len i32) (result i32)
    (drop (call $host_call
      (i32.const 32) (i32.const 10) (i32.const 48) (i32.const 7)
      (i32.const 64) (i32.const 3) (i32.const 80) (i32.const 35)))
    (if (i32.eq (local.get $op_len) (i32.const 4)) (then unreachable))
    (if (i32.eq (local.get $op_len) (i32.const 5))
      (then
        (call $error (i32.const 16) (i32.const 13))
        (return (i32.const 0))))
    (call $response (i32.const 0) (i32.const 8))
    (i32.const 1)))
"#;

fn guest() -> policy_evaluator::Policy {
    CompiledPolicy::from_bytes(GUEST.as_bytes())
        .and_then(|compiled| compiled.instantiate())
        .unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn a_trap_is_reported_as_a_trap() {
    match guest().call("trap", b"") {
        Err(HostError::Trap(message)) => assert!(message.contains("wasm"), "{message}"),
        other => panic!("expected a trap, got {other:?}"),
    }
}

#[test]
fn a_guest_error_carries_the_guests_message() {
    assert_eq!(
        guest().call("error", b""),
        Err(HostError::Guest("guest says no".to_string()))
    );
}

#[test]
fn an_answer_of_the_wrong_shape_is_reported() {
    let policy = guest();
    assert_eq!(policy.call("answer", b"").unwrap(), b"not json");
    match policy.validate_settings(b"{}") {
        Err(HostError::BadAnswer { operation, reason }) => {
            assert_eq!(operation, "validate_settings");
            assert!(reason.contains("not json"), "{reason}");
        }
        other => panic!("expected a malformed answer, got {other:?}"),
    }
    // The instance survives a failed call.
    assert!(matches!(
        policy.call("error", b""),
        Err(HostError::Guest(_))
    ));
}

#[test]
fn a_file_that_is_not_a_module_fails_to_load() {
    assert!(matches!(
        CompiledPolicy::from_bytes(b"\0asm\x01\0\0\0garbage"),
        Err(HostError::Load(_))
    ));
}

#[test]
fn a_file_that_is_not_webassembly_is_named_in_one_line() {
    let path = std::env::temp_dir().join(format!("not-a-module-{}.wasm", std::process::id()));
    std::fs::write(&path, "apiVersion: v1\nkind: ConfigMap\n").unwrap();
    let error = CompiledPolicy::from_file(&path).err().expect("refused");
    let message = error.to_string();
    assert!(
        message.ends_with(
            "not-a-module-{}.wasm: not a WebAssembly module (a module's first bytes are \\0asm)"
                .replace("{}", &std::process::id().to_string())
                .as_str()
        ),
        "{message}"
    );
    assert_eq!(message.lines().count(), 1, "{message}");
    std::fs::remove_file(path).unwrap();
}

#[test]
fn the_validate_payload_is_policy_servers() {
    assert_eq!(
        policy_evaluator::validate_payload(br#"{"uid":"1"}"#, br#"{"a":1}"#),
        br#"{"request":{"uid":"1"},"settings":{"a":1}}"#
    );
}
