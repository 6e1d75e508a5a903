//! How long `policy-runner test` takes on a large suite: test files of 1,000
//! results each (10 files, 10,000 results by default), each over 250
//! Deployments (with the ReplicaSets and Pods derived from them), 250 bare
//! Pods and 250 ConfigMaps, under the example policy in protect mode. Each
//! result names one object: a Deployment's CREATE and its UPDATE (pass), a
//! Pod without an owner (fail, its message matched), a ConfigMap the rules
//! leave out (skip). Every result must pass, or the bench fails.
//!
//! ```console
//! $ target/release/test-bench policy.wasm [--results 10000] [--runs 3] [--jobs N]
//! ```

use std::fmt::Write as _;
use std::path::Path;
use std::time::Instant;

use policy_host::suite::{Command, Format, file};

const USAGE: &str = "usage: test-bench <module.wasm> [--results N] [--runs N] [--jobs N]";
/// Results a test file; each object's four results are a quarter of it.
const PER_FILE: usize = 1_000;

/// mimalloc, as many Rust CLIs ship: reading and judging allocate small
/// values by the million, which the system allocator serves slower
/// (docs/performance.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    if let Err(message) = run() {
        eprintln!("Error: {message}");
        std::process::exit(2);
    }
}

fn run() -> Result<(), String> {
    let mut args = std::env::args().skip(1);
    let (mut module, mut results, mut runs, mut jobs) = (None, 10_000, 3, 0);
    while let Some(arg) = args.next() {
        let mut number = || -> Result<usize, String> {
            args.next()
                .and_then(|n| n.parse().ok())
                .ok_or_else(|| USAGE.to_string())
        };
        match arg.as_str() {
            "--results" => results = number()?,
            "--runs" => runs = number()?.max(1),
            "--jobs" => jobs = number()?,
            "-h" | "--help" => return Err(USAGE.to_string()),
            flag if flag.starts_with('-') => return Err(format!("unknown option {flag}: {USAGE}")),
            path => module = Some(path.to_string()),
        }
    }
    if results == 0 || results % PER_FILE != 0 {
        return Err(format!(
            "--results is a multiple of {PER_FILE}: the suite's files hold {PER_FILE} each"
        ));
    }
    let module = module.ok_or(USAGE)?;
    let module = std::fs::canonicalize(&module).map_err(|e| format!("{module}: {e}"))?;
    let dir = std::env::temp_dir().join(format!("test-bench-{}", std::process::id()));
    let measured = measure(&dir, &module, results / PER_FILE, runs, jobs);
    let _ = std::fs::remove_dir_all(&dir);
    measured
}

/// Writes the suite of `files` test files in `dir`, and runs it `runs`
/// times with `jobs` workers.
fn measure(
    dir: &Path,
    module: &Path,
    files: usize,
    runs: usize,
    jobs: usize,
) -> Result<(), String> {
    write_suite(dir, module, files).map_err(|e| format!("cannot write the suite: {e}"))?;
    println!(
        "{files} test files of {PER_FILE} results ({} results) in {}",
        files * PER_FILE,
        dir.display()
    );
    let command = Command {
        paths: vec![dir.to_path_buf()],
        file_name: file::FILE_NAME.to_string(),
        run: None,
        fail_only: false,
        format: Format::Json,
        jobs,
        module: None,
        store: Default::default(),
        limits: Default::default(),
    };
    for run in 1..=runs {
        let start = Instant::now();
        let outcome = command.outcome();
        let took = start.elapsed().as_secs_f64();
        if !outcome.errors.is_empty() || outcome.failed() > 0 {
            return Err(format!(
                "the suite does not pass: {} failed, errors {:?}",
                outcome.failed(),
                outcome.errors.first()
            ));
        }
        println!(
            "run {run}: {took:.2} s for {} results: {:.0} µs a result",
            outcome.rows.len(),
            took * 1e6 / outcome.rows.len() as f64
        );
    }
    Ok(())
}

const POLICY: &str = "apiVersion: policies.kubewarden.io/v1
kind: ClusterAdmissionPolicy
metadata:
  name: require-owner
spec:
  module: ghcr.io/annotations-policy/policies/annotations:v0.5.0
  mode: protect
  rules:
    - apiGroups: [\"\"]
      apiVersions: [v1]
      resources: [pods]
      operations: [CREATE, UPDATE]
    - apiGroups: [apps]
      apiVersions: [v1]
      resources: [deployments, replicasets]
      operations: [CREATE, UPDATE]
  settings:
    criteria: containsAllOf
    values: [example.com/owner]
";

fn write_suite(dir: &Path, module: &Path, files: usize) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    std::fs::copy(module, dir.join("policy.wasm"))?;
    for f in 0..files {
        let sub = dir.join(format!("{f:03}"));
        std::fs::create_dir_all(&sub)?;
        std::fs::write(sub.join("policy.yaml"), POLICY)?;
        let (mut resources, mut results) = (String::new(), String::new());
        for i in 0..PER_FILE / 4 {
            let _ = write!(
                resources,
                "---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app-{i}\n  namespace: shop\n  \
                 annotations: {{example.com/owner: team-{i}}}\nspec:\n  replicas: 1\n  selector: {{matchLabels: {{app: app-{i}}}}}\n  \
                 template:\n    metadata:\n      labels: {{app: app-{i}}}\n      annotations: {{example.com/owner: team-{i}}}\n    \
                 spec:\n      containers: [{{name: app, image: app:1}}]\n\
                 ---\napiVersion: v1\nkind: Pod\nmetadata: {{name: pod-{i}, namespace: shop}}\nspec:\n  containers: [{{name: app, image: app:1}}]\n\
                 ---\napiVersion: v1\nkind: ConfigMap\nmetadata: {{name: config-{i}, namespace: shop}}\ndata: {{key: value}}\n"
            );
            let _ = write!(
                results,
                "  - {{policy: require-owner, kind: Deployment, resources: [shop/app-{i}], result: pass}}\n  \
                 - {{policy: require-owner, kind: Deployment, resources: [app-{i}], result: pass, operation: UPDATE}}\n  \
                 - {{policy: require-owner, kind: Pod, resources: [pod-{i}], result: fail, message: example\\.com/owner}}\n  \
                 - {{policy: require-owner, kind: ConfigMap, resources: [config-{i}], result: skip}}\n"
            );
        }
        std::fs::write(sub.join("app.yaml"), resources)?;
        std::fs::write(
            sub.join(file::FILE_NAME),
            format!(
                "apiVersion: {}\nkind: Test\nmetadata: {{name: bench-{f:03}}}\npolicies: [policy.yaml]\n\
                 modules: {{ghcr.io/annotations-policy/policies/annotations:v0.5.0: ../policy.wasm}}\n\
                 resources: [app.yaml]\nresults:\n{results}",
                file::API_VERSION
            ),
        )?;
    }
    Ok(())
}
