//! How long `policy-runner check` takes on a cluster dump: N objects as
//! `kubectl get -A -o yaml` writes them (one `List`, with `managedFields`,
//! status and the annotations kubectl, the controllers and Helm write),
//! judged under an allowlist, with the objects derived from the workloads.
//!
//! ```console
//! $ target/release/check-bench policy.wasm [--objects 10000] [--runs 3] [--jobs N] [--dump FILE]
//! ```
//!
//! `--dump FILE` keeps the dump there, to measure `policy-runner check` on
//! it alone. The dump is written an application at a time, so that one of
//! a million objects (`--objects 1000000`, 1.5 GB) is never held; the
//! bench ends with its peak resident memory.

use std::time::Instant;

use policy_benches::dump;

use policy_host::check::{Command, Format, Input, PolicySource};
use serde_json::json;

const USAGE: &str =
    "usage: check-bench <module.wasm> [--objects N] [--runs N] [--jobs N] [--dump FILE]";

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
    let (mut module, mut objects, mut runs, mut keep, mut jobs) = (None, 10_000, 3, None, 0);
    while let Some(arg) = args.next() {
        let mut number = || -> Result<usize, String> {
            args.next()
                .and_then(|n| n.parse().ok())
                .filter(|&n| n > 0)
                .ok_or_else(|| USAGE.to_string())
        };
        match arg.as_str() {
            "--objects" => objects = number()?,
            "--runs" => runs = number()?,
            "--jobs" => jobs = number()?,
            "--dump" => keep = Some(args.next().ok_or(USAGE)?),
            "-h" | "--help" => return Err(USAGE.to_string()),
            path => module = Some(path.to_string()),
        }
    }
    let module = module.ok_or(USAGE)?;
    let path = match &keep {
        Some(file) => file.into(),
        None => std::env::temp_dir().join(format!("check-bench-{}.yaml", std::process::id())),
    };
    dump::write_file(&path, |out| dump::write_list(objects, out))?;
    let bytes = std::fs::metadata(&path).map_err(|e| e.to_string())?.len();
    println!(
        "a dump of {objects} objects, {:.1} MB of YAML ({})",
        bytes as f64 / 1e6,
        path.display()
    );

    let inputs = vec![path.display().to_string()];
    let start = Instant::now();
    let mut read = 0;
    policy_manifests::read_each(&inputs, Default::default(), &mut |input| match input {
        Input::Manifest(_) => read += 1,
        other => panic!("{other:?}"),
    });
    let reading = start.elapsed();
    assert_eq!(read, objects);
    println!("reading and parsing alone: {:.2} s", reading.as_secs_f64());

    let command = Command {
        module: Some(module.into()),
        store: Default::default(),
        inputs,
        policy: PolicySource::Settings(json!({
            "criteria": "doesNotContainOtherThan",
            "values": ["example.com/*", "meta.helm.sh/release-name", "meta.helm.sh/release-namespace"],
        })),
        namespace: None,
        kubectl_apply: false,
        derive: true,
        format: Format::Json,
        only_rejected: false,
        strict: false,
        hidden: false,
        jobs,
        evaluation: Default::default(),
    };
    for run in 1..=runs {
        let start = Instant::now();
        let finished = command.run(|_, _| {}, &mut std::io::sink())?;
        let took = start.elapsed().as_secs_f64();
        println!(
            "run {run}: {:.2} s for {objects} objects ({} judged with the derived ones): {:.0} µs an object of the dump, {:.0} µs a judged object",
            took,
            finished.checked,
            took * 1e6 / objects as f64,
            took * 1e6 / finished.checked as f64,
        );
    }
    println!(
        "peak resident memory of this process (the dump was written first): {:.0} MiB",
        peak_resident() as f64 / 1024.0
    );
    if keep.is_none() {
        let _ = std::fs::remove_file(&path);
    }
    Ok(())
}

/// This process's peak resident memory, in KiB (getrusage's `ru_maxrss`).
fn peak_resident() -> i64 {
    // SAFETY: getrusage writes only into the struct it is given, which
    // lives across the call; a zeroed rusage is a valid value of it.
    unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        match libc::getrusage(libc::RUSAGE_SELF, &mut usage) {
            0 => usage.ru_maxrss,
            _ => 0,
        }
    }
}
