//! Modules pulled by reference into kwctl's store, from registries the
//! tests start on loopback: go-containerregistry's registry (built from
//! `host/tests/registry/`), over plain HTTP and over TLS with a CA made for
//! the run, and a one-file HTTP server for `http://`.

#[path = "../../evaluator/tests/common/mod.rs"]
mod policies;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use policy_host::modules::Store;

/// A registry on loopback, stopped when dropped.
struct Registry {
    child: Child,
    /// Over plain HTTP, where the tests push.
    address: String,
    /// The same registry over TLS, when asked for, and the directory that
    /// holds its CA's certificate (`ca.pem`).
    secure: Option<(String, tempfile::TempDir)>,
}

impl Drop for Registry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The registry's program (`host/tests/registry/`), built once for all the
/// tests of a run.
fn program() -> PathBuf {
    let target = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/test-registry");
    std::fs::create_dir_all(&target).unwrap();
    let lock = std::fs::File::create(target.join(".lock")).unwrap();
    lock.lock().unwrap();
    let binary = target.join("registry");
    let built = Command::new("go")
        .args(["build", "-trimpath", "-o"])
        .arg(&binary)
        .arg(".")
        .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/registry"))
        .env("GOWORK", "off")
        .output()
        .expect("go, to build the test registry");
    assert!(
        built.status.success(),
        "go build host/tests/registry: {}",
        String::from_utf8_lossy(&built.stderr)
    );
    binary
}

/// go-containerregistry's registry, started afresh.
fn registry() -> Registry {
    start(false)
}

/// The registry, served over TLS too.
fn secure_registry() -> Registry {
    start(true)
}

fn start(tls: bool) -> Registry {
    let ca = tempfile::tempdir().unwrap();
    let mut command = Command::new(program());
    if tls {
        command.arg("-tls").arg(ca.path());
    }
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut line = || lines.next().unwrap().unwrap().trim().to_string();
    let address = line();
    let secure = tls.then(|| (line(), ca));
    Registry {
        child,
        address,
        secure,
    }
}

/// Pushes `content` to `repository` as `kwctl push` does (one layer,
/// Kubewarden's Wasm media types, or `types` instead), with
/// go-containerregistry's client; gives the manifest's digest.
fn push(registry: &Registry, repository: &str, content: &[u8], types: &[&str]) -> String {
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), content).unwrap();
    let pushed = Command::new(program())
        .arg("push")
        .arg(format!("{}/{repository}", registry.address))
        .arg(file.path())
        .args(types)
        .output()
        .unwrap();
    assert!(
        pushed.status.success(),
        "push: {}",
        String::from_utf8_lossy(&pushed.stderr)
    );
    String::from_utf8(pushed.stdout).unwrap().trim().to_string()
}

fn module() -> Vec<u8> {
    // Any module will do: the store keeps bytes, it does not run them.
    b"\0asm\x01\0\0\0".to_vec()
}

fn store(root: &Path, offline: bool) -> Store {
    Store {
        root: Some(root.to_path_buf()),
        offline,
    }
}

#[test]
fn a_module_is_pulled_into_kwctls_store_once() {
    let registry = registry();
    push(&registry, "policies/annotations:v1", &module(), &[]);
    let root = tempfile::tempdir().unwrap();
    let reference = format!("registry://{}/policies/annotations:v1", registry.address);
    let manifest = Path::new("policies/p.yaml");
    // Offline, nothing is fetched: the error names the pull.
    let error = store(root.path(), true)
        .resolve(&reference, manifest)
        .unwrap_err();
    assert!(
        error.contains(&format!("kwctl pull {reference}")),
        "{error}"
    );
    let pulled = store(root.path(), false)
        .resolve(&reference, manifest)
        .unwrap();
    assert_eq!(
        pulled,
        root.path().join(format!(
            "registry/{}/policies/annotations:v1",
            registry.address
        ))
    );
    assert_eq!(std::fs::read(&pulled).unwrap(), module());
    // Then offline finds it where kwctl would.
    assert_eq!(
        store(root.path(), true).resolve(&reference, manifest),
        Ok(pulled)
    );
}

#[test]
fn a_pinned_digest_is_held() {
    let registry = registry();
    let digest = push(&registry, "policies/pinned:v1", &module(), &[]);
    let root = tempfile::tempdir().unwrap();
    let manifest = Path::new("p.yaml");
    let pinned = format!("{}/policies/pinned@{digest}", registry.address);
    let pulled = store(root.path(), false)
        .resolve(&pinned, manifest)
        .unwrap();
    assert_eq!(std::fs::read(pulled).unwrap(), module());
    // A digest the registry does not hold is not pulled.
    let other = format!(
        "{}/policies/pinned@sha256:{}",
        registry.address,
        "0".repeat(64)
    );
    let error = store(root.path(), false)
        .resolve(&other, manifest)
        .unwrap_err();
    assert!(error.contains("cannot pull"), "{error}");
}

#[test]
fn an_image_that_is_no_policy_is_refused() {
    let registry = registry();
    push(
        &registry,
        "images/app:v1",
        b"not wasm",
        &[
            "application/vnd.oci.image.config.v1+json",
            "application/vnd.oci.image.layer.v1.tar",
        ],
    );
    let root = tempfile::tempdir().unwrap();
    let error = store(root.path(), false)
        .resolve(
            &format!("registry://{}/images/app:v1", registry.address),
            Path::new("p.yaml"),
        )
        .unwrap_err();
    assert!(error.contains("cannot pull"), "{error}");
    assert!(
        !root
            .path()
            .join("registry")
            .join(&registry.address)
            .join("images/app:v1")
            .exists()
    );
}

#[test]
fn a_module_at_an_http_address_is_fetched() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    let served = std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().unwrap();
        let mut request = [0; 1024];
        let _ = stream.read(&mut request).unwrap();
        let body = module();
        write!(
            stream,
            "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
            body.len()
        )
        .unwrap();
        stream.write_all(&body).unwrap();
    });
    let root = tempfile::tempdir().unwrap();
    let reference = format!("http://{address}/modules/policy.wasm");
    let pulled = store(root.path(), false)
        .resolve(&reference, Path::new("p.yaml"))
        .unwrap();
    served.join().unwrap();
    assert_eq!(
        pulled,
        root.path()
            .join(format!("http/{address}/modules/policy.wasm"))
    );
    assert_eq!(std::fs::read(pulled).unwrap(), module());
}

/// Where `policy-runner check` finds the roots it trusts.
enum Roots<'a> {
    /// The platform's, which never hold the test CA.
    Platform,
    /// `SSL_CERT_FILE`, as the platform's roots are read on Linux.
    File(&'a Path),
}

/// `policy-runner check --policy` on a Pod, its policy's module at
/// `reference`, pulled into the store at `root`.
fn check_pulling(reference: &str, root: &Path, roots: Roots) -> std::process::Output {
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("policy.yaml");
    std::fs::write(
        &policy,
        format!(
            "apiVersion: policies.kubewarden.io/v1\nkind: ClusterAdmissionPolicy\n\
             metadata:\n  name: stamp\nspec:\n  module: {reference}\n  mutating: true\n\
             \x20 rules:\n    - apiGroups: [\"\"]\n      apiVersions: [v1]\n\
             \x20     resources: [pods]\n      operations: [CREATE]\n\
             \x20 settings:\n    annotation: example.com/stamped\n"
        ),
    )
    .unwrap();
    let pod = dir.path().join("pod.yaml");
    std::fs::write(
        &pod,
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: app\nspec:\n  containers:\n\
         \x20   - name: app\n      image: nginx\n",
    )
    .unwrap();
    let mut command = Command::new(env!("CARGO_BIN_EXE_policy-runner"));
    command
        .args(["check", "--no-cache", "-o", "json", "--store"])
        .arg(root)
        .arg("--policy")
        .arg(&policy)
        .arg(&pod)
        .env_remove("SSL_CERT_DIR")
        .env_remove("SSL_CERT_FILE");
    if let Roots::File(file) = roots {
        command.env("SSL_CERT_FILE", file);
    }
    command.output().unwrap()
}

/// The test CA's registry holding the waPC test policy at
/// `policies/stamp:v1`, and its reference over TLS.
fn stamp_over_tls() -> (Registry, String, Vec<u8>) {
    let registry = secure_registry();
    let module = std::fs::read(policies::module("wapc")).unwrap();
    push(&registry, "policies/stamp:v1", &module, &[]);
    let (secure, _) = registry.secure.as_ref().unwrap();
    let reference = format!("registry://{secure}/policies/stamp:v1");
    (registry, reference, module)
}

#[test]
fn check_pulls_over_tls_from_a_registry_whose_ca_it_trusts() {
    let (registry, reference, module) = stamp_over_tls();
    let (secure, ca) = registry.secure.as_ref().unwrap();
    let root = tempfile::tempdir().unwrap();
    let ran = check_pulling(
        &reference,
        root.path(),
        Roots::File(&ca.path().join("ca.pem")),
    );
    let stdout = String::from_utf8_lossy(&ran.stdout);
    let stderr = String::from_utf8_lossy(&ran.stderr);
    // Judged: the waPC test policy stamps the Pod and accepts it.
    assert_eq!(ran.status.code(), Some(0), "{stderr}");
    assert!(stdout.contains("example.com/stamped"), "{stdout}");
    let stored = root
        .path()
        .join(format!("registry/{secure}/policies/stamp:v1"));
    assert_eq!(std::fs::read(stored).unwrap(), module);
}

/// What `check` says, exit status 2 and no panic, when its pull over TLS
/// with `roots` fails.
fn refused_pull(roots: Roots) -> String {
    let (_registry, reference, _) = stamp_over_tls();
    let root = tempfile::tempdir().unwrap();
    let ran = check_pulling(&reference, root.path(), roots);
    let stderr = String::from_utf8_lossy(&ran.stderr).to_string();
    assert_eq!(ran.status.code(), Some(2), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(
        stderr.contains(&format!("cannot pull {reference}")),
        "{stderr}"
    );
    stderr
}

#[test]
fn a_registry_whose_certificate_nothing_trusts_is_an_error_naming_why() {
    // UnknownIssuer where the platform has roots; that it has none, where
    // it has none.
    let stderr = refused_pull(Roots::Platform);
    assert!(stderr.contains("certificate"), "{stderr}");
}

#[test]
fn roots_that_hold_no_certificate_are_an_error_not_a_panic() {
    let empty = tempfile::NamedTempFile::new().unwrap();
    let stderr = refused_pull(Roots::File(empty.path()));
    assert!(stderr.contains("No CA certificates"), "{stderr}");
}
