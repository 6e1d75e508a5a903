//! Evaluates a request with a policy module on a machine without a cluster or
//! kwctl, taking the options and printing the one-line verdict `kwctl run`
//! does for this use.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand, ValueEnum};
use policy_evaluator::metadata::ExecutionMode;
use policy_evaluator::{CompiledPolicy, Limits, Policy};
use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

/// Runs a Kubewarden policy module (waPC) outside a cluster: `run` and
/// `manifest` stand in for `kwctl run`, `check` judges manifests before they
/// are applied.
#[derive(Parser)]
#[command(name = "policy-runner", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// Where compiled modules are kept between runs [default: the user's
    /// cache directory, then `policy-runner`]
    #[arg(
        long,
        global = true,
        env = "POLICY_RUNNER_CACHE_DIR",
        value_name = "DIR"
    )]
    cache_dir: Option<PathBuf>,
    /// Compile each module afresh and keep nothing, whatever --cache-dir
    /// says
    #[arg(long, global = true)]
    no_cache: bool,
    /// Interrupt each evaluation of a policy after this many seconds, as
    /// policy-server's --policy-timeout does (a policy's or a group
    /// member's `timeoutEvalSeconds` instead, where it has one)
    #[arg(
        long,
        global = true,
        env = "KUBEWARDEN_POLICY_TIMEOUT",
        value_name = "SECONDS",
        default_value_t = 2,
        value_parser = clap::value_parser!(u64).range(1..)
    )]
    policy_timeout: u64,
    /// Let evaluations run without a deadline, as policy-server's flag
    /// does: its timeoutEvalSeconds too are then never reached
    #[arg(long, global = true, env = "KUBEWARDEN_DISABLE_TIMEOUT_PROTECTION")]
    disable_timeout_protection: bool,
    /// The most linear memory each instance of a module may hold, in MiB;
    /// a module that asks for more fails
    #[arg(
        long,
        global = true,
        value_name = "MIB",
        default_value_t = (policy_evaluator::limits::DEFAULT_MEMORY >> 20) as u64,
        value_parser = clap::value_parser!(u64).range(1..=4096)
    )]
    max_memory: u64,
}

impl Cli {
    /// What bounds each evaluation, as the flags say.
    fn limits(&self) -> Limits {
        Limits {
            timeout: (!self.disable_timeout_protection)
                .then(|| std::time::Duration::from_secs(self.policy_timeout)),
            memory: Some((self.max_memory as usize) << 20),
        }
    }
}

#[derive(Subcommand)]
enum Command {
    /// Evaluate one request and print the answer as `kwctl run` does: the
    /// AdmissionResponse, a mutation as its base64 JSONPatch.
    Run(RunArgs),
    /// Check the settings of every policy a ClusterAdmissionPolicy or a
    /// policy group declares, and, given a request, print each member's
    /// verdict. Exit status 1 when some settings are invalid.
    Manifest {
        /// The policy module (`policy.wasm`).
        module: PathBuf,
        /// The policy's manifest (YAML or JSON).
        manifest: PathBuf,
        /// A request to evaluate with each member's settings.
        #[arg(short = 'r', long)]
        request_path: Option<PathBuf>,
    },
    /// Judge every object in the manifests, and the objects the controllers
    /// will make from them, as the policy would. Exit status: 0 when
    /// nothing is rejected, 1 when something is, 2 when some input or the
    /// settings cannot be used (with --strict, or a file was skipped as a
    /// template, a Kustomization or a chart).
    Check(CheckArgs),
    /// Run test files (`kind: Test`) that say what each policy must decide
    /// of which objects, and report each expectation met or not. Exit
    /// status: 0 when every one is met, 1 when one is not, 2 when a test
    /// file, a policy, a module or a resource cannot be used, or no test
    /// file is found.
    Test(TestArgs),
    /// Answer AdmissionReview v1 over HTTPS with the module, as
    /// policy-server does, at `/validate/<policy>` and `/audit/<policy>`: a
    /// policy, or a policy group (--policy); where a review's time goes at
    /// `/metrics`. For the cluster tests and experiments only: deploy
    /// policy-server to enforce the policy.
    Serve(ServeArgs),
}

#[derive(Args)]
struct ServeArgs {
    /// The policy module (`policy.wasm`).
    module: PathBuf,
    #[command(flatten)]
    settings: SettingsArgs,
    /// A ClusterAdmissionPolicy or policy group manifest whose settings (or
    /// members, expression and message) to serve; its rules and selectors
    /// are the webhook's registration's business.
    #[arg(long, conflicts_with_all = ["settings_json", "settings_path"])]
    policy: Option<PathBuf>,
    /// The address to listen on.
    #[arg(long, default_value = "127.0.0.1:8443")]
    listen: std::net::SocketAddr,
    /// The serving certificate (PEM, with its chain).
    #[arg(long)]
    cert: PathBuf,
    /// The certificate's private key (PEM).
    #[arg(long)]
    key: PathBuf,
    /// Append each review received and its answer to this file, a JSON
    /// line each.
    #[arg(long)]
    record: Option<PathBuf>,
}

/// `kwctl run`'s flags, where the runner stands in for it.
#[derive(Args)]
struct RunArgs {
    /// The policy module (any execution mode), or a YAML file of
    /// ClusterAdmissionPolicies and AdmissionPolicies whose `spec.module`
    /// names local modules.
    module: PathBuf,
    /// The AdmissionRequest, bare or inside an AdmissionReview (JSON), or
    /// any JSON with --raw; `-` reads standard input.
    #[arg(short = 'r', long)]
    request_path: PathBuf,
    #[command(flatten)]
    settings: SettingsArgs,
    /// The execution mode (kubewarden, wasi, opa, gatekeeper); a module's
    /// metadata gives it, and must agree.
    #[arg(short = 'e', long, value_name = "MODE", value_parser = ExecutionMode::parse)]
    execution_mode: Option<ExecutionMode>,
    /// Validate a raw request: any JSON, not an AdmissionRequest.
    #[arg(long)]
    raw: bool,
    /// Let the policy look up the kinds its metadata lists
    /// (`contextAwareResources`); without it, it may look up none.
    #[arg(long)]
    allow_context_aware: bool,
    /// Record every host call and its answer to FILE, a kwctl session.
    #[arg(
        long,
        value_name = "FILE",
        conflicts_with = "replay_host_capabilities_interactions"
    )]
    record_host_capabilities_interactions: Option<PathBuf>,
    /// Answer the host calls from FILE, a session kwctl or this runner
    /// recorded, in its order.
    #[arg(long, value_name = "FILE")]
    replay_host_capabilities_interactions: Option<PathBuf>,
    /// The host capabilities the policy may call: `*`, a capability
    /// (`net/v1/dns_lookup_host`) or a prefix (`oci/*`).
    #[arg(long, num_args = 0.., default_values_t = ["*".to_string()])]
    allowed_host_capabilities: Vec<String>,
    /// Files and directories of objects (manifests, or `kubectl get -o
    /// yaml` output) that answer the policy's Kubernetes lookups, as if
    /// they were the cluster.
    #[arg(long, value_name = "PATH")]
    cluster_objects: Vec<String>,
    /// Answer the policy's Kubernetes lookups from the live cluster of
    /// the kubeconfig, through kubectl (reads only), as kwctl does.
    #[arg(long, conflicts_with = "cluster_objects")]
    live_cluster: bool,
    /// kwctl's name for --no-cache.
    #[arg(long)]
    disable_wasmtime_cache: bool,
}

/// The policy's settings, as `kwctl run` takes them.
#[derive(Args)]
struct SettingsArgs {
    /// The settings as JSON text.
    #[arg(long, conflicts_with = "settings_path")]
    settings_json: Option<String>,
    /// A file with the settings (YAML or JSON).
    #[arg(short = 's', long)]
    settings_path: Option<PathBuf>,
}

/// Where modules named by reference (a policy's `spec.module`) are found.
#[derive(Args)]
struct StoreArgs {
    /// kwctl's store, where modules named by reference are found
    /// [default: where kwctl keeps it]
    #[arg(long, value_name = "DIR")]
    store: Option<PathBuf>,
    /// Fetch no module: one that kwctl's store lacks is an error naming it.
    #[arg(long)]
    offline: bool,
}

impl StoreArgs {
    fn store(self) -> policy_host::modules::Store {
        policy_host::modules::Store {
            root: self.store,
            offline: self.offline,
        }
    }
}

#[derive(Args)]
struct CheckArgs {
    /// The policy module (a file whose name ends in .wasm, or that is
    /// WebAssembly); an annotated one brings its own rules when no --policy
    /// is given. With --policy it may be left out: each policy runs the
    /// module its `spec.module` names.
    module: String,
    /// Files and directories of manifests (searched for *.yaml, *.yml and
    /// *.json), or `-` for standard input.
    inputs: Vec<String>,
    /// ClusterAdmissionPolicy, AdmissionPolicy and policy group manifests
    /// (a file, or a directory searched as inputs are; repeat it for more):
    /// their rules, selectors and settings. One file with MODULE judges as
    /// that policy; otherwise they judge as a policy set, mutating policies
    /// first, each running its `spec.module` unless MODULE is given.
    #[arg(long, conflicts_with_all = ["settings_json", "settings_path"])]
    policy: Vec<PathBuf>,
    #[command(flatten)]
    store: StoreArgs,
    #[command(flatten)]
    settings: SettingsArgs,
    /// The namespace of objects that name none.
    #[arg(long, default_value = "default")]
    namespace: String,
    /// Judge the objects as `kubectl apply` sends them, with its
    /// `last-applied-configuration`.
    #[arg(long)]
    kubectl_apply: bool,
    /// Leave out the objects the controllers would make.
    #[arg(long)]
    no_derived: bool,
    /// How to print the results.
    #[arg(short = 'o', long, value_enum, default_value_t = Output::Table)]
    output: Output,
    /// Print only the rejected objects (the summary still counts them all).
    #[arg(long)]
    only_rejected: bool,
    /// Exit with status 2 when a file was skipped as what a tool renders (a
    /// template, a Kustomization, a Helm chart): objects meant for the
    /// cluster that were not judged.
    #[arg(long)]
    strict: bool,
    /// Read hidden directories too (`.config/`), as `kubectl apply -R`
    /// does; without it they are left out, and a note names them.
    #[arg(long)]
    hidden: bool,
    /// How many workers judge at once (default: one a core); the output
    /// is the same whatever the number.
    #[arg(short = 'j', long, env = "POLICY_RUNNER_JOBS", default_value_t = 0)]
    jobs: usize,
    /// The execution mode (kubewarden, wasi, opa, gatekeeper); a module's
    /// metadata gives it, and must agree.
    #[arg(short = 'e', long, value_name = "MODE", value_parser = ExecutionMode::parse)]
    execution_mode: Option<ExecutionMode>,
    /// Without --policy: let the module look up the kinds its metadata
    /// lists (`contextAwareResources`). Its lookups are answered from the
    /// objects checked and --cluster-objects.
    #[arg(long)]
    allow_context_aware: bool,
    /// Files and directories of objects already in the cluster, which the
    /// policy's Kubernetes lookups see beside the objects checked (they
    /// are not judged).
    #[arg(long, value_name = "PATH")]
    cluster_objects: Vec<String>,
}

#[derive(Args)]
struct TestArgs {
    /// Test files, or directories searched for them.
    #[arg(default_value = ".")]
    paths: Vec<PathBuf>,
    /// The name of the test files searched for in directories.
    #[arg(long, default_value = policy_host::suite::file::FILE_NAME)]
    file_name: String,
    /// Run only the results whose test name or object (`Kind name`) this
    /// regular expression matches.
    #[arg(long)]
    run: Option<String>,
    /// Print only the results that failed (the summary counts them all).
    #[arg(long)]
    fail_only: bool,
    /// How to print the results.
    #[arg(short = 'o', long, value_enum, default_value_t = TestOutput::Table)]
    output: TestOutput,
    /// How many test files to run at once (default: one a core).
    #[arg(short = 'j', long, env = "POLICY_RUNNER_JOBS", default_value_t = 0)]
    jobs: usize,
    /// Run every policy with this module, whatever the test files'
    /// `modules` say (such as the release's annotated-policy.wasm).
    #[arg(long)]
    module: Option<PathBuf>,
    #[command(flatten)]
    store: StoreArgs,
}

#[derive(Clone, Copy, ValueEnum)]
enum TestOutput {
    /// A table, then a summary line.
    Table,
    /// One JSON document, for machines.
    Json,
    /// JUnit XML: a test suite a test file, a test case a result.
    Junit,
}

#[derive(Clone, Copy, ValueEnum)]
enum Output {
    /// A table, then a summary line.
    Table,
    /// One JSON document, for machines.
    Json,
    /// GitHub Actions' workflow commands: each rejection shown on its
    /// manifest's line in a pull request.
    Github,
    /// JUnit XML: a test case an object, a failure for each rejection.
    Junit,
    /// SARIF 2.1.0: each rejection a result at its manifest's line, for
    /// GitHub code scanning.
    Sarif,
}

/// mimalloc, as many Rust CLIs ship: reading and judging allocate small
/// values by the million, which the system allocator serves slower
/// (docs/performance.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    // clap prints help and version on stdout (status 0) and a usage error
    // on stderr (status 2).
    let cli = Cli::parse();
    // Before any command can build a TLS client (a pull) or server.
    policy_host::tls::install_crypto_provider();
    // For `check` and `test`, 1 means that something was rejected or
    // failed.
    let checking = matches!(cli.command, Command::Check(_) | Command::Test(_));
    let no_cache = matches!(&cli.command, Command::Run(run) if run.disable_wasmtime_cache);
    if let Err(message) = keep_compiled_modules(&cli, no_cache) {
        eprintln!("Error: {message}");
        return ExitCode::from(if checking { 2 } else { 1 });
    }
    let limits = cli.limits();
    if limits.timeout.is_none() {
        // As policy-server: no deadline, no epoch checks compiled in.
        policy_evaluator::limits::without_deadlines();
    }
    let result = match cli.command {
        Command::Run(args) => run_request(args, limits),
        Command::Manifest {
            module,
            manifest,
            request_path,
        } => run_manifest(&module, &manifest, request_path.as_deref(), limits),
        Command::Check(args) => run_check(args, limits),
        Command::Test(args) => run_test(args, limits),
        Command::Serve(args) => run_serve(args, limits),
    };
    match result {
        Ok(code) => code,
        Err(message) => {
            eprintln!("Error: {message}");
            ExitCode::from(if checking { 2 } else { 1 })
        }
    }
}

/// Compiled modules kept where the command line says, or else in the
/// user's cache directory (`$XDG_CACHE_HOME` or `~/.cache` on Linux,
/// `~/Library/Caches` on macOS, `%LOCALAPPDATA%` on Windows). Where that
/// one cannot be used (a read-only home), a note says so and the run goes
/// on; a directory the user gave that cannot be used is an error.
fn keep_compiled_modules(cli: &Cli, no_cache: bool) -> Result<(), String> {
    use policy_evaluator::keep_compiled_modules as keep;
    if cli.no_cache || no_cache {
        return keep(None);
    }
    if let Some(directory) = &cli.cache_dir {
        return keep(Some(directory)).map_err(|e| format!("--cache-dir: {e}"));
    }
    let default =
        directories_next::BaseDirs::new().map(|dirs| dirs.cache_dir().join("policy-runner"));
    let Some(default) = default else {
        return keep(None);
    };
    if let Err(message) = keep(Some(&default)) {
        eprintln!(
            "note: {message} (--cache-dir DIR or POLICY_RUNNER_CACHE_DIR names another; --no-cache keeps none)"
        );
    }
    Ok(())
}

/// The settings given, if any.
fn settings(args: &SettingsArgs) -> Result<Option<Value>, String> {
    match (&args.settings_json, &args.settings_path) {
        (Some(json), _) => serde_json::from_str::<Value>(json)
            .map(Some)
            .map_err(|e| format!("--settings-json is not valid JSON: {e}")),
        (None, Some(path)) => read_yaml(path).map(Some),
        (None, None) => Ok(None),
    }
}

fn run_check(args: CheckArgs, limits: Limits) -> Result<ExitCode, String> {
    use policy_host::check::{Command, Format, PolicySource, report::Progress};
    let format = match args.output {
        Output::Table => Format::Table,
        Output::Json => Format::Json,
        Output::Github => Format::Github,
        Output::Junit => Format::Junit,
        Output::Sarif => Format::Sarif,
    };
    // The first operand is the module, unless policies are given and it
    // is not WebAssembly: then each policy names its own, and it is input.
    let mut inputs = args.inputs;
    let module = match args.policy.is_empty() || is_module(&args.module) {
        true => Some(PathBuf::from(args.module)),
        false => {
            inputs.insert(0, args.module);
            None
        }
    };
    if inputs.is_empty() {
        return Err(
            "give the manifests to check (files, directories, or - for standard input)".to_string(),
        );
    }
    let policy = match (args.policy.as_slice(), settings(&args.settings)?) {
        ([path], _) if module.is_some() && !path.is_dir() => {
            let manifest = read_yaml(path)?;
            PolicySource::Manifest(path.clone(), manifest)
        }
        ([], Some(settings)) => PolicySource::Settings(settings),
        ([], None) => {
            return Err(
                "give the policy's settings (--settings-json or --settings-path) or a policy manifest (--policy)"
                    .to_string(),
            );
        }
        (paths, _) => PolicySource::Set(policy_host::check::policy_set(paths)?),
    };
    let command = Command {
        module,
        store: args.store.store(),
        inputs,
        policy,
        namespace: Some(args.namespace),
        kubectl_apply: args.kubectl_apply,
        derive: !args.no_derived,
        format,
        only_rejected: args.only_rejected,
        strict: args.strict,
        hidden: args.hidden,
        jobs: args.jobs,
        evaluation: policy_host::check::Evaluation {
            execution_mode: args.execution_mode,
            allow_context_aware: args.allow_context_aware,
            cluster_objects: args.cluster_objects,
            limits,
        },
    };
    let mut progress: Option<Progress> = None;
    let mut out = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
    let finished = command.run(
        |done, total| {
            progress
                .get_or_insert_with(|| Progress::new(total))
                .update(done, total)
        },
        &mut out,
    )?;
    Ok(ExitCode::from(finished.status))
}

/// Whether `operand` is a module: named `*.wasm`, or WebAssembly.
fn is_module(operand: &str) -> bool {
    use std::io::Read;
    if operand.ends_with(".wasm") {
        return true;
    }
    let mut magic = [0; 4];
    std::fs::File::open(operand)
        .and_then(|mut file| file.read_exact(&mut magic))
        .is_ok_and(|()| magic == *b"\0asm")
}

/// Prints a report on standard output; a reader that stops early (`| head`)
/// ends the output, not the program with a panic.
fn report(output: &str) -> Result<(), String> {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    match stdout
        .write_all(output.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(format!("cannot write the report: {e}"))
        }
        _ => Ok(()),
    }
}

fn run_test(args: TestArgs, limits: Limits) -> Result<ExitCode, String> {
    use policy_host::suite::{Command, Format};
    let run = args
        .run
        .map(|re| {
            regex::Regex::new(&re).map_err(|e| format!("--run is not a regular expression: {e}"))
        })
        .transpose()?;
    let command = Command {
        paths: args.paths,
        file_name: args.file_name,
        run,
        fail_only: args.fail_only,
        jobs: args.jobs,
        module: args.module,
        store: args.store.store(),
        limits,
        format: match args.output {
            TestOutput::Table => Format::Table,
            TestOutput::Json => Format::Json,
            TestOutput::Junit => Format::Junit,
        },
    };
    let finished = command.run();
    for line in &finished.said {
        eprintln!("{line}");
    }
    report(&finished.output)?;
    Ok(ExitCode::from(finished.status))
}

fn run_serve(args: ServeArgs, limits: Limits) -> Result<ExitCode, String> {
    use policy_host::admission::Policy;
    let policy = match &args.policy {
        Some(path) => Policy::from_manifest(&read_yaml(path)?)
            .map_err(|e| format!("{}: {e}", path.display()))?,
        None => Policy::from_settings(
            settings(&args.settings)?.unwrap_or_else(|| Value::Object(Default::default())),
            None,
        ),
    };
    policy_host::serve::serve(policy_host::serve::Options {
        module: args.module,
        policy,
        listen: args.listen,
        certificate: args.cert,
        key: args.key,
        record: args.record,
        limits,
    })?;
    Ok(ExitCode::SUCCESS)
}

fn run_request(args: RunArgs, limits: Limits) -> Result<ExitCode, String> {
    use policy_host::run::{Command, Session};
    let request = match args.request_path.as_os_str() == "-" {
        true => {
            let mut text = String::new();
            std::io::Read::read_to_string(&mut std::io::stdin(), &mut text)
                .map_err(|e| format!("Error reading request from stdin: {e}"))?;
            text
        }
        false => std::fs::read_to_string(&args.request_path).map_err(|e| {
            format!(
                "Error opening request file {}; {e}",
                args.request_path.display()
            )
        })?,
    };
    let session = match (
        args.record_host_capabilities_interactions,
        args.replay_host_capabilities_interactions,
    ) {
        (Some(path), _) => Some(Session::Record(path)),
        (None, Some(path)) => Some(Session::Replay(path)),
        (None, None) => None,
    };
    let command = Command {
        target: args.module,
        request,
        settings: settings(&args.settings)?,
        execution_mode: args.execution_mode,
        raw: args.raw,
        allow_context_aware: args.allow_context_aware,
        session,
        allowed_host_capabilities: args.allowed_host_capabilities,
        cluster_objects: args.cluster_objects,
        live_cluster: args.live_cluster,
        limits,
    };
    let ran = command.run()?;
    for line in &ran.said {
        eprintln!("warning: {line}");
    }
    for line in &ran.lines {
        report(&format!("{line}\n"))?;
    }
    Ok(ExitCode::SUCCESS)
}

fn run_manifest(
    module: &Path,
    manifest: &Path,
    request_path: Option<&Path>,
    limits: Limits,
) -> Result<ExitCode, String> {
    let manifest = read_yaml(manifest)?;
    let members = policy_settings(&manifest)?;
    let request = request_path.map(read_request).transpose()?;
    let policy = load(module, limits)?;
    let mut all_valid = true;
    for (name, settings) in members {
        let settings = serde_json::to_vec(&settings).map_err(|e| e.to_string())?;
        let verdict = policy
            .validate_settings(&settings)
            .map_err(|e| format!("{name}: {e}"))?;
        if !verdict.valid {
            all_valid = false;
            println!(
                "{name}: invalid settings: {}",
                verdict.message.unwrap_or_default()
            );
        } else if let Some(request) = &request {
            println!("{name}: {}", evaluate(&policy, request, &settings)?);
        } else {
            println!("{name}: valid settings");
        }
    }
    Ok(if all_valid {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// The settings of each policy a manifest declares, by member name (the
/// policy's own name for a single policy).
fn policy_settings(manifest: &Value) -> Result<Vec<(String, Value)>, String> {
    use policy_host::admission::{Declared, manifest_name};
    Ok(match Declared::read(manifest)? {
        Declared::Policy(settings) => vec![(manifest_name(manifest), settings)],
        Declared::Group(members) => members,
    })
}

fn load(module: &Path, limits: Limits) -> Result<Policy, String> {
    CompiledPolicy::from_file(module)
        .and_then(|compiled| compiled.instantiate_bounded(Default::default(), limits))
        .map_err(|e| format!("{}: {e}", module.display()))
}

/// A request as read from a file: its exact JSON text, sent to the module
/// unchanged.
struct Request {
    json: String,
}

#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(borrow, default)]
    request: Option<&'a RawValue>,
}

/// Reads a bare AdmissionRequest, or the request inside an AdmissionReview.
/// Nothing is built of the object, so a custom resource of any depth passes.
fn read_request(path: &Path) -> Result<Request, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let outer = envelope(path, &text)?;
    let json = match outer.request {
        Some(inner) => inner.get(),
        None => text.as_str(),
    };
    Ok(Request {
        json: json.to_string(),
    })
}

fn envelope<'a>(path: &Path, json: &'a str) -> Result<Envelope<'a>, String> {
    let invalid = |e: serde_json::Error| format!("{} is not a valid request: {e}", path.display());
    if !json.trim_start().starts_with('{') {
        return Err(format!(
            "{} holds no AdmissionRequest object",
            path.display()
        ));
    }
    let mut de = serde_json::Deserializer::from_str(json);
    de.disable_recursion_limit();
    let envelope = Envelope::deserialize(&mut de).map_err(invalid)?;
    de.end().map_err(invalid)?;
    Ok(envelope)
}

/// The one document of a policy manifest or settings file (YAML or
/// JSON), read as `check` reads manifests: a `---` before or after it is
/// fine, a second document is refused.
fn read_yaml(path: &Path) -> Result<Value, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let mut documents = Vec::new();
    for (line, document) in policy_manifests::documents(&text) {
        match document {
            Ok(Value::Null) => {}
            Ok(value) => documents.push(value),
            Err(reason) => return Err(format!("{}:{line}: {reason}", path.display())),
        }
    }
    match documents.len() {
        1 => Ok(documents.remove(0)),
        0 => Err(format!("{} holds no document", path.display())),
        n => Err(format!(
            "{} holds {n} documents: give one policy, or one set of settings, a file",
            path.display()
        )),
    }
}

/// kwctl's one-line AdmissionResponse, field for field.
fn evaluate(policy: &Policy, request: &Request, settings: &[u8]) -> Result<String, String> {
    let response = policy.evaluate(request.json.as_bytes(), settings, false);
    serde_json::to_string(&response).map_err(|e| e.to_string())
}
