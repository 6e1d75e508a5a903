//! The evaluator's test policies, one per execution mode
//! (`tests/policies/`), built once per test binary by
//! `tests/policies/build` and annotated with their `metadata.yml` as kwctl
//! annotates a module: the metadata, as JSON, in the custom section
//! `io.kubewarden.metadata`.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use serde_json::Value;

/// The four test policies.
pub const POLICIES: [&str; 4] = ["wapc", "wasi", "opa", "gatekeeper"];

/// Those that misbehave as their settings say.
pub const HOSTILE: [&str; 4] = [
    "hostile-wapc",
    "hostile-wasi",
    "hostile-opa",
    "hostile-gatekeeper",
];

/// The repository: the evaluator's parent, or the root package itself,
/// whose tests include this file too.
fn root() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    match manifest.join("evaluator").is_dir() {
        true => manifest.to_path_buf(),
        false => manifest
            .parent()
            .expect("the evaluator is in the repository")
            .to_path_buf(),
    }
}

/// Where the built modules are: `<name>.wasm` annotated, `raw/<name>.wasm`
/// as built.
pub fn built() -> &'static Path {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(|| {
        let out = root().join("target/test-policies");
        std::fs::create_dir_all(&out).expect("target/test-policies");
        // Test binaries run at once: one builds, the others wait for it.
        let lock = std::fs::File::create(out.join(".lock")).expect("the build's lock");
        lock.lock().expect("lock the build");
        let status = Command::new(root().join("evaluator/tests/policies/build"))
            .arg(out.join("raw"))
            .status()
            .expect("run evaluator/tests/policies/build");
        assert!(status.success(), "evaluator/tests/policies/build failed");
        for name in POLICIES.iter().chain(&HOSTILE) {
            let module = std::fs::read(out.join("raw").join(format!("{name}.wasm")))
                .unwrap_or_else(|e| panic!("{name}.wasm: {e}"));
            let annotated = annotate(&module, &metadata(name));
            std::fs::write(out.join(format!("{name}.wasm")), annotated).expect("write a module");
        }
        out
    })
}

/// The annotated module of a test policy.
pub fn module(name: &str) -> PathBuf {
    built().join(format!("{name}.wasm"))
}

/// The module as built, without metadata.
pub fn raw(name: &str) -> PathBuf {
    built().join("raw").join(format!("{name}.wasm"))
}

/// A test policy's metadata, as JSON.
pub fn metadata(name: &str) -> Value {
    let path = root().join(format!("evaluator/tests/policies/{name}/metadata.yml"));
    let text = std::fs::read_to_string(&path).expect("metadata.yml");
    yaml_serde::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// `module` with `metadata` in its custom section, as `kwctl annotate`
/// writes it.
pub fn annotate(module: &[u8], metadata: &Value) -> Vec<u8> {
    fn leb128(mut n: usize, out: &mut Vec<u8>) {
        loop {
            let byte = (n & 0x7f) as u8;
            n >>= 7;
            if n == 0 {
                out.push(byte);
                return;
            }
            out.push(byte | 0x80);
        }
    }
    let name = policy_evaluator::metadata::SECTION.as_bytes();
    let payload = serde_json::to_vec(metadata).expect("metadata serializes");
    let mut content = Vec::new();
    leb128(name.len(), &mut content);
    content.extend_from_slice(name);
    content.extend_from_slice(&payload);
    let mut annotated = module.to_vec();
    annotated.push(0);
    leb128(content.len(), &mut annotated);
    annotated.extend_from_slice(&content);
    annotated
}

/// A CREATE of `object` as the API server sends it.
pub fn create(object: Value) -> Value {
    let kind = object["kind"].as_str().unwrap_or_default().to_string();
    let (group, version) =
        policy_core::kinds::group_version(object["apiVersion"].as_str().unwrap_or_default());
    let namespace = object["metadata"]["namespace"].clone();
    serde_json::json!({
        "uid": "test-uid",
        "kind": {"group": group, "version": version, "kind": kind},
        "resource": {"group": group, "version": version, "resource": policy_core::kinds::resource(&kind)},
        "requestKind": {"group": group, "version": version, "kind": kind},
        "requestResource": {"group": group, "version": version, "resource": policy_core::kinds::resource(&kind)},
        "name": object["metadata"]["name"],
        "namespace": namespace,
        "operation": "CREATE",
        "userInfo": {"username": "alice"},
        "object": object,
        "oldObject": null,
        "dryRun": false,
        "options": {"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions"}
    })
}

/// A Pod named `name` in `namespace`, with these labels and annotations.
pub fn pod(name: &str, namespace: &str, labels: Value, annotations: Value) -> Value {
    serde_json::json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": labels, "annotations": annotations},
        "spec": {"containers": [{"name": "app", "image": "nginx"}]}
    })
}

/// A Namespace with these labels.
pub fn namespace(name: &str, labels: Value) -> Value {
    serde_json::json!({
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": name, "labels": labels}
    })
}
