use serde_json::Value;
use wapc_guest::{self as guest, CallResult};

#[unsafe(no_mangle)]
pub extern "C" fn wapc_init() {
    guest::register_function("validate", validate);
    guest::register_function("validate_settings", validate_settings);
    guest::register_function("protocol_version", |_: &[u8]| Ok(br#""v1""#.to_vec()));
}

fn validate(payload: &[u8]) -> CallResult {
    let payload: Value = serde_json::from_slice(payload).map_err(|e| e.to_string())?;
    // The object's annotation, where it has one, says how instead.
    let mut settings = payload["settings"].clone();
    let annotation = &payload["request"]["object"]["metadata"]["annotations"][ANNOTATION];
    if let (Some(how), Some(settings)) = (annotation.as_str(), settings.as_object_mut()) {
        settings.insert("validate".to_string(), Value::from(how));
    }
    misbehave(&settings, "validate", br#"{"accepted":true}"#)
}

/// The annotation that says how `validate` misbehaves on its object.
const ANNOTATION: &str = "hostile.example.com/validate";

fn validate_settings(payload: &[u8]) -> CallResult {
    let settings: Value = serde_json::from_slice(payload).map_err(|e| e.to_string())?;
    misbehave(&settings, "validateSettings", br#"{"valid":true}"#)
}

/// Does what `settings[field]` says, or answers `sane`.
fn misbehave(settings: &Value, field: &str, sane: &[u8]) -> CallResult {
    match settings[field].as_str() {
        None => Ok(sane.to_vec()),
        Some("loop") => {
            let mut n: u64 = 0;
            loop {
                n = std::hint::black_box(n.wrapping_add(1));
            }
        }
        Some("sleep") => {
            let total = settings["sleepMilliseconds"].as_u64().unwrap_or(0);
            for _ in 0..total / 100 {
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
            Ok(sane.to_vec())
        }
        Some("memory") => {
            let mut held: Vec<Vec<u8>> = Vec::new();
            loop {
                held.push(vec![1; 1 << 20]);
                std::hint::black_box(&held);
            }
        }
        Some("trap") => core::arch::wasm32::unreachable(),
        Some("recurse") => Ok(vec![recurse(std::hint::black_box(1))]),
        Some("garbage") => Ok(b"\x00this is not JSON".to_vec()),
        Some("shape") => Ok(br#"{"accepted":"yes","valid":"yes"}"#.to_vec()),
        Some("huge") => {
            let mut answer = br#"{"accepted":true,"valid":true,"message":""#.to_vec();
            answer.resize(answer.len() + (40 << 20), b'x');
            answer.extend_from_slice(br#""}"#);
            Ok(answer)
        }
        Some(other) => Err(format!("unknown behaviour {other:?}").into()),
    }
}

#[inline(never)]
fn recurse(depth: u8) -> u8 {
    let mut frame = [depth; 64];
    frame[0] = recurse(std::hint::black_box(depth.wrapping_add(1)));
    std::hint::black_box(frame)[1]
}
