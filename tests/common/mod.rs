//! Shared by the tests that run the compiled module: builds `policy.wasm`
//! when it is missing or older than the sources, compiles it once per test
//! binary, and hands each test a fresh instance.

#![allow(dead_code)]

pub mod recorded;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::SystemTime;

use policy_evaluator::{CompiledPolicy, Policy, ValidationVerdict};

pub fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn newest_source() -> SystemTime {
    fn walk(dir: &Path, newest: &mut SystemTime) {
        for entry in std::fs::read_dir(dir).expect("read src") {
            let path = entry.expect("dir entry").path();
            if path.is_dir() {
                walk(&path, newest);
            } else if let Ok(modified) = path.metadata().and_then(|m| m.modified()) {
                *newest = (*newest).max(modified);
            }
        }
    }
    let mut newest = SystemTime::UNIX_EPOCH;
    walk(&root().join("src"), &mut newest);
    walk(&root().join("core/src"), &mut newest);
    // The same inputs as the Makefile's SOURCES: `.cargo/config.toml` sets
    // the module's target features.
    for file in [
        "Cargo.toml",
        "core/Cargo.toml",
        "Cargo.lock",
        ".cargo/config.toml",
    ] {
        let modified = root().join(file).metadata().and_then(|m| m.modified());
        newest = newest.max(modified.expect(file));
    }
    newest
}

/// The path of an up-to-date `policy.wasm`, built with `make` if needed.
pub fn module_path() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            let module = root().join("policy.wasm");
            let fresh = module
                .metadata()
                .and_then(|m| m.modified())
                .is_ok_and(|built| built >= newest_source());
            if !fresh {
                let status = Command::new("make")
                    .arg("policy.wasm")
                    .current_dir(root())
                    .status()
                    .expect("run make policy.wasm");
                assert!(status.success(), "make policy.wasm failed");
            }
            module
        })
        .clone()
}

pub fn compiled() -> &'static CompiledPolicy {
    static COMPILED: OnceLock<CompiledPolicy> = OnceLock::new();
    COMPILED
        .get_or_init(|| CompiledPolicy::from_file(&module_path()).unwrap_or_else(|e| panic!("{e}")))
}

/// A fresh instance of the module.
pub fn policy() -> Policy {
    compiled().instantiate().unwrap_or_else(|e| panic!("{e}"))
}

/// An AdmissionRequest for a Pod with these annotation keys.
pub fn pod_request(keys: &[&str]) -> String {
    let annotations: serde_json::Map<String, serde_json::Value> = keys
        .iter()
        .map(|k| (k.to_string(), serde_json::Value::from("v")))
        .collect();
    serde_json::json!({
        "uid": "test",
        "operation": "CREATE",
        "kind": {"group": "", "version": "v1", "kind": "Pod"},
        "object": {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "web", "namespace": "default", "annotations": annotations},
            "spec": {"containers": [{"name": "web", "image": "nginx"}]}
        }
    })
    .to_string()
}

pub fn settings(criteria: &str, values: &[&str]) -> String {
    serde_json::json!({"criteria": criteria, "values": values}).to_string()
}

/// Runs `validate`, failing the test on a trap or a malformed answer.
pub fn validate(policy: &Policy, request: &str, settings: &str) -> ValidationVerdict {
    policy
        .validate(request.as_bytes(), settings.as_bytes())
        .unwrap_or_else(|e| panic!("{e}"))
}

pub fn read_test_data(name: &str) -> String {
    std::fs::read_to_string(root().join("test_data").join(name)).expect(name)
}
