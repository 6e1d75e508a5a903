//! `policy-runner check` beside its peers: Kyverno's CLI
//! (`kubectl-kyverno apply`), Gatekeeper's `gator test` and `conftest
//! test`, each with the same two rules written in its own language
//! (`bench/peers/`), on the same inputs: the repository's `examples/`, a
//! real repository's manifests (`bench/peers/kube-prometheus/`) and made-up
//! cluster dumps. Each tool runs as a process of its own, in turn with the
//! others, `--runs` times; reported are the median wall time, the peak
//! resident memory (wait4's `ru_maxrss`), the objects each judges and
//! rejects, and every object on which tools that judge it disagree.
//!
//! The "reading floor" is this program reading the same input with
//! `yaml_serde` into values and nothing else (`peer-bench floor PATH…`).
//!
//! ```console
//! $ make bench-peers                      # scripts/peers installs the peers
//! $ target/release/peer-bench [--runs 5] [--objects 1000,10000,100000]
//! ```
//!
//! A peer that is not installed in `target/peers/bin` is left out, and said
//! to be.

use policy_benches::dump;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use serde::Deserialize;
use serde_json::Value;

const USAGE: &str = "usage: peer-bench [--runs N] [--objects N,N,…] [--only INPUT]\n       peer-bench floor PATH…\n       peer-bench dump N FILE";

/// The kinds both rules cover (metadata.yml), by apiVersion.
const WORKLOADS: [(&str, &str); 8] = [
    ("v1", "Pod"),
    ("v1", "ReplicationController"),
    ("apps/v1", "Deployment"),
    ("apps/v1", "ReplicaSet"),
    ("apps/v1", "StatefulSet"),
    ("apps/v1", "DaemonSet"),
    ("batch/v1", "Job"),
    ("batch/v1", "CronJob"),
];

/// mimalloc, as many Rust CLIs ship: reading and judging allocate small
/// values by the million, which the system allocator serves slower
/// (docs/performance.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("floor") => floor(&args[1..]),
        Some("dump") => match args.get(1..3) {
            Some([objects, path]) => {
                objects
                    .parse()
                    .map_err(|_| USAGE.to_string())
                    .and_then(|objects| {
                        dump::write_file(path.as_ref(), |out| dump::write_stream(objects, out))
                    })
            }
            _ => Err(USAGE.to_string()),
        },
        _ => run(&args),
    };
    if let Err(message) = result {
        eprintln!("Error: {message}");
        std::process::exit(2);
    }
}

/// The YAML library alone: every document of every file under `paths`
/// into a value, counted, nothing kept.
fn floor(paths: &[String]) -> Result<(), String> {
    println!("{}", documents(paths)?);
    Ok(())
}

fn documents(paths: &[String]) -> Result<usize, String> {
    let mut documents = 0;
    for path in paths {
        for entry in walkdir::WalkDir::new(path).sort_by_file_name() {
            let entry = entry.map_err(|e| e.to_string())?;
            let name = entry.file_name().to_string_lossy();
            if !entry.file_type().is_file()
                || !(name.ends_with(".yaml") || name.ends_with(".yml") || name.ends_with(".json"))
            {
                continue;
            }
            let text = std::fs::read_to_string(entry.path()).map_err(|e| e.to_string())?;
            for document in yaml_serde::Deserializer::from_str(&text) {
                // A document that does not parse is counted all the same:
                // the floor is the reading, not the judging.
                let _ = Value::deserialize(document);
                documents += 1;
            }
        }
    }
    Ok(documents)
}

struct Options {
    runs: usize,
    objects: Vec<usize>,
    only: Option<String>,
}

fn options(args: &[String]) -> Result<Options, String> {
    let mut options = Options {
        runs: 5,
        objects: vec![1_000, 10_000, 100_000],
        only: None,
    };
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or_else(|| USAGE.to_string());
        match arg.as_str() {
            "--runs" => options.runs = value()?.parse().ok().filter(|&n| n > 0).ok_or(USAGE)?,
            "--objects" => {
                options.objects = value()?
                    .split(',')
                    .map(|n| n.parse().ok().filter(|&n| n > 0).ok_or(USAGE))
                    .collect::<Result<_, _>>()?
            }
            "--only" => options.only = Some(value()?.clone()),
            _ => return Err(USAGE.to_string()),
        }
    }
    Ok(options)
}

/// The repository's root: peer-bench runs from it or from `host/`.
fn root() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    root.canonicalize().unwrap_or(root)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Tool {
    /// On every core, the compiled module read from its cache.
    Check,
    /// On every core, the cache emptied first: the module compiled, then
    /// kept.
    CheckCold,
    /// On one core (`-j 1`), the module from its cache.
    CheckOne,
    /// `policy-runner test` on the three objects' suite, the module from
    /// its cache.
    Test,
    /// The same, the cache emptied first.
    TestCold,
    Kyverno,
    Gator,
    Conftest,
    Floor,
}

impl Tool {
    const ALL: [Tool; 9] = [
        Tool::Check,
        Tool::CheckCold,
        Tool::CheckOne,
        Tool::Test,
        Tool::TestCold,
        Tool::Kyverno,
        Tool::Gator,
        Tool::Conftest,
        Tool::Floor,
    ];

    fn name(self) -> &'static str {
        match self {
            Tool::Check => "policy-runner check",
            Tool::CheckCold => "policy-runner check, cold cache",
            Tool::CheckOne => "policy-runner check -j 1",
            Tool::Test => "policy-runner test",
            Tool::TestCold => "policy-runner test, cold cache",
            Tool::Kyverno => "kyverno apply",
            Tool::Gator => "gator test",
            Tool::Conftest => "conftest test",
            Tool::Floor => "reading floor (yaml_serde alone)",
        }
    }

    fn program(self) -> PathBuf {
        let root = root();
        match self {
            Tool::Check | Tool::CheckCold | Tool::CheckOne | Tool::Test | Tool::TestCold => {
                root.join("target/release/policy-runner")
            }
            Tool::Kyverno => root.join("target/peers/bin/kubectl-kyverno"),
            Tool::Gator => root.join("target/peers/bin/gator"),
            Tool::Conftest => root.join("target/peers/bin/conftest"),
            Tool::Floor => std::env::current_exe().unwrap_or_default(),
        }
    }

    fn command(self, input: &Path) -> Command {
        let peers = root().join("bench/peers");
        let mut command = Command::new(self.program());
        match self {
            Tool::Test | Tool::TestCold => command
                .arg("--cache-dir")
                .arg(self.cache())
                .arg("test")
                .args(["--output", "json"])
                .arg(three().join("suite.yaml")),
            Tool::Check | Tool::CheckCold | Tool::CheckOne => command
                .arg("--cache-dir")
                .arg(self.cache())
                .arg("check")
                .args(match self {
                    Tool::CheckOne => &["-j", "1"][..],
                    _ => &[][..],
                })
                .arg(root().join("policy.wasm"))
                .arg("--policy")
                .arg(peers.join("kubewarden.yaml"))
                .args(["--output", "json"])
                .arg(input),
            Tool::Kyverno => command
                .arg("apply")
                .arg(peers.join("kyverno.yaml"))
                .arg("--resource")
                .arg(input)
                .args(["--policy-report", "--output-format", "json"]),
            Tool::Gator => command
                .arg("test")
                .arg("-f")
                .arg(peers.join("gatekeeper"))
                .arg("-f")
                .arg(input)
                .args(["-o", "json"]),
            Tool::Conftest => command
                .arg("test")
                .arg("-p")
                .arg(peers.join("conftest"))
                .arg(input)
                .args(["-o", "json"]),
            Tool::Floor => command.arg("floor").arg(input),
        };
        command
    }

    /// Where the runner keeps its compiled module: one directory for the
    /// warm runs, filled before they are timed, one emptied before each
    /// cold run.
    fn cache(self) -> PathBuf {
        let peers = root().join("target/peers");
        match self {
            Tool::CheckCold | Tool::TestCold => peers.join("cache-cold"),
            _ => peers.join("cache"),
        }
    }

    fn cold(self) -> bool {
        matches!(self, Tool::CheckCold | Tool::TestCold)
    }

    /// The cold runs and `test` matter where a run is mostly its start: on
    /// the small inputs; `test` has a suite for the three objects only.
    fn times(self, input: &Input) -> bool {
        match self {
            Tool::Test | Tool::TestCold => input.path == three().join("objects.yaml"),
            Tool::CheckCold => input.small,
            _ => true,
        }
    }

    /// What the tool judged and rejected, from what it printed; `in_scope`
    /// stands for what it judged where it reports only what fails.
    fn verdicts(self, output: &str, in_scope: &BTreeSet<String>) -> Result<Verdicts, String> {
        let json = |text: &str| -> Result<Value, String> {
            let start = text.find(['{', '[']).unwrap_or(0);
            serde_json::from_str(&text[start..])
                .map_err(|e| format!("{}: output is not its JSON: {e}", self.name()))
        };
        let mut verdicts = Verdicts::default();
        match self {
            Tool::Test | Tool::TestCold => {
                for result in json(output)?["results"].as_array().into_iter().flatten() {
                    let id = result["object"].as_str().unwrap_or_default().to_string();
                    if result["got"] == "fail" {
                        verdicts.rejected.insert(id.clone());
                    }
                    verdicts.judged.insert(id);
                }
            }
            Tool::Check | Tool::CheckCold | Tool::CheckOne => {
                for result in json(output)?["results"].as_array().into_iter().flatten() {
                    let id = result["object"].as_str().unwrap_or_default().to_string();
                    let derived = result["derivedFrom"]
                        .as_array()
                        .is_some_and(|d| !d.is_empty());
                    match derived {
                        true => {
                            verdicts.derived += 1;
                            verdicts.derived_rejected += usize::from(result["allowed"] == false);
                        }
                        false => {
                            if result["allowed"] == false {
                                verdicts.rejected.insert(id.clone());
                            }
                            verdicts.judged.insert(id);
                        }
                    }
                }
            }
            Tool::Kyverno => {
                for result in json(output)?["results"].as_array().into_iter().flatten() {
                    let resource = &result["resources"][0];
                    let id = identity(&resource["kind"], &resource["namespace"], &resource["name"]);
                    match result["result"].as_str() {
                        Some("fail") => {
                            verdicts.rejected.insert(id.clone());
                        }
                        Some("error") => {
                            verdicts.errors.insert(id.clone());
                        }
                        _ => {}
                    }
                    verdicts.judged.insert(id);
                }
            }
            Tool::Gator => {
                // `null` when nothing fails.
                for violation in json(output)?.as_array().into_iter().flatten() {
                    let object = &violation["violatingObject"];
                    let metadata = &object["metadata"];
                    verdicts.rejected.insert(identity(
                        &object["kind"],
                        &metadata["namespace"],
                        &metadata["name"],
                    ));
                }
                verdicts.judged = in_scope.clone();
            }
            Tool::Conftest => {
                for file in json(output)?.as_array().into_iter().flatten() {
                    for failure in file["failures"].as_array().into_iter().flatten() {
                        let message = failure["msg"].as_str().unwrap_or_default();
                        let id = message.split_once(": ").map_or(message, |(id, _)| id);
                        verdicts.rejected.insert(id.to_string());
                    }
                }
                verdicts.judged = in_scope.clone();
            }
            Tool::Floor => {}
        }
        Ok(verdicts)
    }
}

/// The peak resident memory of this process so far.
fn own_peak_kib() -> i64 {
    // SAFETY: getrusage writes into the zeroed struct it is given, which
    // lives across the call.
    unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage.ru_maxrss
    }
}

/// Why a tool printed no report: the first line of its standard error
/// that says (a Go panic, an error).
fn failure(err: &Path) -> String {
    let text = std::fs::read_to_string(err).unwrap_or_default();
    text.lines()
        .find(|line| line.starts_with("panic:") || line.to_lowercase().starts_with("error"))
        .unwrap_or("no report")
        .replace('|', "/")
}

/// An object as every tool's report can name it: `Kind namespace/name`,
/// a namespaced object without a namespace in `default` (where kubectl
/// puts it; every kind the rules cover is namespaced).
fn identity(kind: &Value, namespace: &Value, name: &Value) -> String {
    let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
    let namespace = Some(text(namespace))
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| "default".to_string());
    format!("{} {namespace}/{}", text(kind), text(name))
}

#[derive(Debug, Default)]
struct Verdicts {
    judged: BTreeSet<String>,
    rejected: BTreeSet<String>,
    errors: BTreeSet<String>,
    derived: usize,
    derived_rejected: usize,
}

/// One run of one tool.
#[derive(Debug, Clone, Copy)]
struct Measured {
    seconds: f64,
    peak_kib: i64,
    status: i32,
}

/// Runs `command` to its end, its output in `out` (and `out`.err), and
/// measures it: the wall time, and the peak resident memory of it and its
/// children, which only wait4(2) reports.
fn measure(mut command: Command, out: &Path) -> Result<Measured, String> {
    let file = |path: PathBuf| File::create(&path).map_err(|e| format!("{}: {e}", path.display()));
    command
        .stdin(Stdio::null())
        .stdout(file(out.to_path_buf())?)
        .stderr(file(out.with_extension("err"))?);
    let start = Instant::now();
    let child = command
        .spawn()
        .map_err(|e| format!("{:?}: {e}", command.get_program()))?;
    let pid = libc::pid_t::try_from(child.id()).map_err(|e| e.to_string())?;
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value of the plain C struct,
    // and wait4 writes only into the two places it is given, which live
    // across the call. `child` is never waited for by std: it is reaped
    // here, once.
    let (reaped, usage) = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        let reaped = libc::wait4(pid, &mut status, 0, &mut usage);
        (reaped, usage)
    };
    let seconds = start.elapsed().as_secs_f64();
    if reaped != pid {
        return Err(format!("wait4: {}", std::io::Error::last_os_error()));
    }
    let status = match libc::WIFEXITED(status) {
        true => libc::WEXITSTATUS(status),
        false => 128 + libc::WTERMSIG(status),
    };
    Ok(Measured {
        seconds,
        peak_kib: usage.ru_maxrss,
        status,
    })
}

struct Input {
    name: String,
    path: PathBuf,
    /// A run on it is mostly the tools' start.
    small: bool,
}

/// The three objects a pre-commit hook might see, and their suite.
fn three() -> PathBuf {
    root().join("bench/peers/three")
}

fn inputs(options: &Options) -> Result<Vec<Input>, String> {
    let root = root();
    let mut inputs = vec![
        Input {
            name: "three objects".to_string(),
            path: three().join("objects.yaml"),
            small: true,
        },
        Input {
            name: "examples/".to_string(),
            path: root.join("examples/manifests"),
            small: true,
        },
        Input {
            name: "differences/".to_string(),
            path: root.join("bench/peers/differences"),
            small: false,
        },
        Input {
            name: "kube-prometheus manifests/".to_string(),
            path: root.join("bench/peers/kube-prometheus"),
            small: false,
        },
    ];
    let dir = root.join("target/peers/inputs");
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    for &objects in &options.objects {
        let path = dir.join(format!("dump-{objects}.yaml"));
        if !path.exists() {
            // In a process of its own: see `run`.
            let made = Command::new(Tool::Floor.program())
                .arg("dump")
                .arg(objects.to_string())
                .arg(&path)
                .status()
                .map_err(|e| e.to_string())?;
            if !made.success() {
                return Err(format!("{}: not written", path.display()));
            }
        }
        inputs.push(Input {
            name: format!("dump of {objects} objects"),
            path,
            small: false,
        });
    }
    if let Some(only) = &options.only {
        inputs.retain(|input| input.name.contains(only.as_str()));
    }
    Ok(inputs)
}

/// The workloads of `path` (every kind the rules cover), read as `check`
/// reads them.
fn in_scope(path: &Path) -> BTreeSet<String> {
    use policy_host::check::Input as Read;
    use policy_manifests::read_each;
    let mut objects = BTreeSet::new();
    read_each(
        &[path.display().to_string()],
        Default::default(),
        &mut |input| {
            if let Read::Manifest(manifest) = input {
                let object = &manifest.object();
                let covered = WORKLOADS
                    .iter()
                    .any(|(v, k)| object["apiVersion"] == *v && object["kind"] == *k);
                if covered {
                    let metadata = &object["metadata"];
                    objects.insert(identity(
                        &object["kind"],
                        &metadata["namespace"],
                        &metadata["name"],
                    ));
                }
            }
        },
    );
    objects
}

fn run(args: &[String]) -> Result<(), String> {
    let options = options(args)?;
    let mut tools = Vec::new();
    for tool in Tool::ALL {
        match tool.program().exists() {
            true => tools.push(tool),
            false => eprintln!(
                "{}: left out, {} is not installed (scripts/peers installs it)",
                tool.name(),
                tool.program().display()
            ),
        }
    }
    if !tools.contains(&Tool::Check) {
        return Err("target/release/policy-runner is missing: run `make bench-peers`".into());
    }
    // The warm runs' cache, filled once, untimed.
    let _ = std::fs::remove_dir_all(Tool::Check.cache());
    let warmed = Tool::Check
        .command(&three().join("objects.yaml"))
        .stdout(Stdio::null())
        .status()
        .map_err(|e| e.to_string())?;
    if warmed.code() != Some(1) {
        return Err(format!(
            "policy-runner check on the three objects: {warmed}"
        ));
    }
    let out = root().join("target/peers/out");
    std::fs::create_dir_all(&out).map_err(|e| e.to_string())?;
    let mut report = String::new();
    let mut disagreements = String::new();
    let mut starts = String::new();
    let _ = writeln!(
        report,
        "| input | tool | wall (median of {}) | peak RSS | ×reading floor, time | ×reading floor, memory | objects judged | rejected | derived judged (rejected) |\n|---|---|---|---|---|---|---|---|---|",
        options.runs
    );
    // First every measurement, then every report read: the memory this
    // process holds when it starts a tool counts in that tool's peak
    // (Linux keeps the high-water mark of the memory a child leaves at
    // exec), so it holds nothing big until the tools are done.
    let inputs = inputs(&options)?;
    let mut measured_inputs = Vec::new();
    for (index, input) in inputs.iter().enumerate() {
        eprintln!("{}: {}", input.name, input.path.display());
        let mut runs: BTreeMap<Tool, Vec<Measured>> = BTreeMap::new();
        for run in 0..options.runs {
            // Interleaved, and each run starts with another tool.
            for i in 0..tools.len() {
                let tool = tools[(i + run) % tools.len()];
                if !tool.times(input) {
                    continue;
                }
                if tool.cold() {
                    let _ = std::fs::remove_dir_all(tool.cache());
                }
                let file = out.join(format!("{index}-{tool:?}.json").to_lowercase());
                let measured = measure(tool.command(&input.path), &file)?;
                eprintln!(
                    "  run {}: {:<26} {:>8.2} s {:>8} MiB exit {}",
                    run + 1,
                    tool.name(),
                    measured.seconds,
                    measured.peak_kib / 1024,
                    measured.status
                );
                runs.entry(tool).or_default().push(measured);
            }
        }
        measured_inputs.push(runs);
    }
    let own_peak = own_peak_kib();
    for (index, (input, runs)) in inputs.iter().zip(&measured_inputs).enumerate() {
        let scope = in_scope(&input.path);
        let median = |tool: Tool| -> Option<(f64, i64)> {
            let measured = runs.get(&tool)?;
            let mut seconds: Vec<f64> = measured.iter().map(|m| m.seconds).collect();
            seconds.sort_by(f64::total_cmp);
            let mut peaks: Vec<i64> = measured.iter().map(|m| m.peak_kib).collect();
            peaks.sort_unstable();
            Some((seconds[seconds.len() / 2], peaks[peaks.len() / 2]))
        };
        let floor = median(Tool::Floor);
        let mut verdicts = BTreeMap::new();
        for &tool in &tools {
            // A tool that does not time this input ran on it not at all.
            let Some((seconds, peak)) = median(tool) else {
                continue;
            };
            let file = out.join(format!("{index}-{tool:?}.json").to_lowercase());
            let output = std::fs::read_to_string(&file).map_err(|e| e.to_string())?;
            let ratio = |x: f64, floor: f64| format!("{:.1}", x / floor);
            let (time_ratio, memory_ratio) = match floor {
                Some((floor_seconds, floor_peak)) if tool != Tool::Floor => (
                    ratio(seconds, floor_seconds),
                    ratio(peak as f64, floor_peak as f64),
                ),
                _ => ("".into(), "".into()),
            };
            let (judged, rejected, derived) = match tool {
                Tool::Floor => (String::new(), String::new(), String::new()),
                _ => {
                    let v = match tool.verdicts(&output, &scope) {
                        Ok(v) => v,
                        Err(_) => {
                            let why = failure(&file.with_extension("err"));
                            let _ = writeln!(
                                report,
                                "| {} | {} | {seconds:.2} s | {} MiB | {time_ratio} | {memory_ratio} | fails: {why} | | |",
                                input.name,
                                tool.name(),
                                peak / 1024
                            );
                            continue;
                        }
                    };
                    let judged = match tool {
                        Tool::Gator | Tool::Conftest => format!("{} (in scope)", v.judged.len()),
                        _ => v.judged.len().to_string(),
                    };
                    let derived = match tool {
                        Tool::Check | Tool::CheckCold | Tool::CheckOne => {
                            format!("{} ({})", v.derived, v.derived_rejected)
                        }
                        _ => "–".to_string(),
                    };
                    let rejected = match v.errors.len() {
                        0 => v.rejected.len().to_string(),
                        n => format!("{} ({n} errors)", v.rejected.len()),
                    };
                    verdicts.insert(tool, v);
                    (judged, rejected, derived)
                }
            };
            let _ = writeln!(
                report,
                "| {} | {} | {:.2} s | {} MiB | {} | {} | {} | {} | {} |",
                input.name,
                tool.name(),
                seconds,
                peak / 1024,
                time_ratio,
                memory_ratio,
                judged,
                rejected,
                derived
            );
        }
        // Where a run is mostly its start, each of ours against conftest.
        if let (true, Some((conftest, _))) = (input.small, median(Tool::Conftest)) {
            for tool in [Tool::Check, Tool::CheckCold, Tool::Test, Tool::TestCold] {
                if let Some((seconds, _)) = median(tool) {
                    let _ = writeln!(
                        starts,
                        "- {}: {} {seconds:.3} s, {:.1}× conftest's {conftest:.3} s",
                        input.name,
                        tool.name(),
                        seconds / conftest
                    );
                }
            }
        }
        // The objects every tool judges, and where their verdicts differ.
        let mut all: Option<BTreeSet<String>> = None;
        for v in verdicts.values() {
            all = Some(match all {
                None => v.judged.clone(),
                Some(all) => all.intersection(&v.judged).cloned().collect(),
            });
        }
        let all = all.unwrap_or_default();
        let differ: Vec<&String> = all
            .iter()
            .filter(|id| {
                let mut said = verdicts.values().map(|v| v.rejected.contains(*id));
                let first = said.next();
                said.any(|s| Some(s) != first)
            })
            .collect();
        let failed: Vec<&str> = tools
            .iter()
            .filter(|t| **t != Tool::Floor && t.times(input) && !verdicts.contains_key(*t))
            .map(|t| t.name())
            .collect();
        let without = match failed.is_empty() {
            true => String::new(),
            false => format!(" (without {}, which printed no report)", failed.join(", ")),
        };
        let _ = writeln!(
            disagreements,
            "- {}: {} objects judged by every tool{without}, {} with differing verdicts",
            input.name,
            all.len(),
            differ.len()
        );
        for id in differ.iter().take(20) {
            let said: Vec<String> = verdicts
                .iter()
                .map(|(tool, v)| {
                    let verdict = match v.rejected.contains(*id) {
                        true => "rejects",
                        false => "accepts",
                    };
                    format!("{} {verdict}", tool.name())
                })
                .collect();
            let _ = writeln!(disagreements, "  - {id}: {}", said.join(", "));
        }
    }
    let text = format!(
        "{report}\nEach peak includes up to {} MiB that the measuring process held when it started the tool.\n\n{starts}\n{disagreements}",
        own_peak / 1024 + 1
    );
    std::fs::write(root().join("target/peers/report.md"), &text).map_err(|e| e.to_string())?;
    println!("{text}");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ids(list: &[&str]) -> BTreeSet<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    /// Each tool's report, in the shape it prints, names the same objects.
    #[test]
    fn every_report_names_objects_alike() {
        let scope = ids(&["Deployment shop/web", "Pod default/lone"]);
        let check = json!({"results": [
            {"object": "Deployment shop/web", "allowed": false, "derivedFrom": []},
            {"object": "Pod default/lone", "allowed": true, "derivedFrom": []},
            {"object": "ReplicaSet shop/web-5d8f6b7c9d", "allowed": false,
             "derivedFrom": ["Deployment shop/web"]},
        ]});
        let kyverno = json!({"summary": {}, "results": [
            {"rule": "owned", "result": "fail",
             "resources": [{"kind": "Deployment", "namespace": "shop", "name": "web"}]},
            {"rule": "allowed", "result": "pass",
             "resources": [{"kind": "Deployment", "namespace": "shop", "name": "web"}]},
            {"rule": "owned", "result": "pass",
             "resources": [{"kind": "Pod", "namespace": "default", "name": "lone"}]},
        ]});
        let gator = json!([{"msg": "…", "violatingObject":
            {"kind": "Deployment", "metadata": {"namespace": "shop", "name": "web"}}}]);
        let conftest = json!([{"filename": "a.yaml", "failures": [
            {"msg": "Deployment shop/web: lacks the annotation example.com/owner"},
            {"msg": "Deployment shop/web: carries x, outside example.com/"}]}]);
        for (tool, output) in [
            (Tool::Check, check),
            (Tool::Kyverno, kyverno),
            (Tool::Gator, gator),
            (Tool::Conftest, conftest),
        ] {
            // A line before the JSON, as Kyverno warns.
            let text = format!("Warning: deprecated\n{output}");
            let verdicts = tool.verdicts(&text, &scope).unwrap();
            assert_eq!(verdicts.judged, scope, "{tool:?}");
            assert_eq!(verdicts.rejected, ids(&["Deployment shop/web"]), "{tool:?}");
            let derived = usize::from(tool == Tool::Check);
            assert_eq!(
                (verdicts.derived, verdicts.derived_rejected),
                (derived, derived)
            );
        }
        // gator prints `null` when nothing fails.
        let none = Tool::Gator.verdicts("null", &scope).unwrap();
        assert!(none.rejected.is_empty());
        assert!(Tool::Kyverno.verdicts("panic: not a list", &scope).is_err());
    }

    #[test]
    fn an_object_without_a_namespace_is_in_default() {
        let id = identity(&json!("Pod"), &Value::Null, &json!("a"));
        assert_eq!(id, "Pod default/a");
        assert_eq!(identity(&json!("Pod"), &json!("x"), &json!("a")), "Pod x/a");
    }

    /// The floor reads every document of the YAML files, and nothing else.
    #[test]
    fn the_floor_counts_documents() {
        let dir = std::env::temp_dir().join(format!("peer-bench-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        std::fs::write(dir.join("a.yaml"), "a: 1\n---\nb: 2\n").unwrap();
        std::fs::write(dir.join("sub/c.yml"), "c: 3\n").unwrap();
        std::fs::write(dir.join("notes.md"), "d: 4\n").unwrap();
        let counted = documents(&[dir.display().to_string()]);
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(counted, Ok(3));
    }
}
