//! Evaluates a request with a policy module on a machine without a cluster or
//! kwctl, taking the options and printing the one-line verdict `kwctl run`
//! does for this use.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use policy_host::{CompiledPolicy, Policy, ValidationVerdict};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;

const USAGE: &str = "\
usage:
  policy-runner run <module.wasm> -r|--request-path <file> [--settings-json <json> | --settings-path <file>]
  policy-runner manifest <module.wasm> <manifest.yaml> [-r|--request-path <file>]
  policy-runner check <module.wasm> [--policy <manifest.yaml> | --settings-json <json> | --settings-path <file>]
                      [--namespace <name>] [--kubectl-apply] [--no-derived] [--output table|json] <path>... | -

`run` prints the verdict as `kwctl run` does. `manifest` checks the settings of
every policy in a ClusterAdmissionPolicy or (Cluster)AdmissionPolicyGroup
manifest against the module and, given a request, prints each member's verdict.
`check` judges every object in the manifests given (files, directories, `-` for
stdin), and the objects controllers will make from them, as the policy would:
with the rules and settings of --policy, or the module's own rules and the
settings given. Exit status: 0 when nothing is rejected, 1 when something is,
2 on unusable input or settings.";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let checking = args.first().is_some_and(|command| command == "check");
    match run(&args) {
        Ok(code) => code,
        Err(message) => {
            eprintln!("Error: {message}");
            // For `check`, 1 means that something was rejected.
            ExitCode::from(if checking { 2 } else { 1 })
        }
    }
}

#[derive(Default)]
struct Options {
    positional: Vec<String>,
    request_path: Option<PathBuf>,
    settings_json: Option<String>,
    settings_path: Option<PathBuf>,
    policy: Option<PathBuf>,
    namespace: Option<String>,
    kubectl_apply: bool,
    no_derived: bool,
    output: Option<String>,
}

fn parse_options(args: &[String]) -> Result<Options, String> {
    let mut options = Options::default();
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((flag, value)) if flag.starts_with("--") => (flag, Some(value.to_string())),
            _ => (arg.as_str(), None),
        };
        let mut value = |name: &str| {
            inline
                .clone()
                .or_else(|| args.next().cloned())
                .ok_or_else(|| format!("{name} needs a value\n{USAGE}"))
        };
        match flag {
            "-r" | "--request-path" => options.request_path = Some(value(flag)?.into()),
            "--settings-json" => options.settings_json = Some(value(flag)?),
            "--settings-path" => options.settings_path = Some(value(flag)?.into()),
            "--policy" => options.policy = Some(value(flag)?.into()),
            "--namespace" => options.namespace = Some(value(flag)?),
            "--output" | "-o" => options.output = Some(value(flag)?),
            "--kubectl-apply" => options.kubectl_apply = true,
            "--no-derived" => options.no_derived = true,
            "-h" | "--help" => return Err(USAGE.to_string()),
            other if other.starts_with('-') && other.len() > 1 => {
                return Err(format!("unknown option {other}\n{USAGE}"));
            }
            _ => options.positional.push(arg.clone()),
        }
    }
    if options.settings_json.is_some() && options.settings_path.is_some() {
        return Err("--settings-json and --settings-path exclude each other".to_string());
    }
    Ok(options)
}

fn run(args: &[String]) -> Result<ExitCode, String> {
    let (command, rest) = args.split_first().ok_or_else(|| USAGE.to_string())?;
    let options = parse_options(rest)?;
    match (command.as_str(), options.positional.as_slice()) {
        ("run", [module]) => run_request(Path::new(module), &options),
        ("manifest", [module, manifest]) => {
            run_manifest(Path::new(module), Path::new(manifest), &options)
        }
        ("check", [module, inputs @ ..]) if !inputs.is_empty() => {
            run_check(Path::new(module), inputs, &options)
        }
        _ => Err(USAGE.to_string()),
    }
}

fn run_check(module: &Path, inputs: &[String], options: &Options) -> Result<ExitCode, String> {
    use policy_host::check::{Command, Format, PolicySource, report::Progress};
    let format = match options.output.as_deref() {
        None | Some("table") => Format::Table,
        Some("json") => Format::Json,
        Some(other) => return Err(format!("--output {other}: expected table or json")),
    };
    let settings = match (&options.settings_json, &options.settings_path) {
        (Some(json), _) => Some(
            serde_json::from_str::<Value>(json)
                .map_err(|e| format!("--settings-json is not valid JSON: {e}"))?,
        ),
        (None, Some(path)) => Some(read_yaml(path)?),
        (None, None) => None,
    };
    let policy = match (&options.policy, settings) {
        (Some(_), Some(_)) => {
            return Err("--policy brings its own settings: give it alone".to_string());
        }
        (Some(path), None) => PolicySource::Manifest(path.clone(), read_yaml(path)?),
        (None, Some(settings)) => PolicySource::Settings(settings),
        (None, None) => {
            return Err(
                "give the policy's settings (--settings-json or --settings-path) or a policy manifest (--policy)"
                    .to_string(),
            );
        }
    };
    let command = Command {
        module: module.to_path_buf(),
        inputs: inputs.to_vec(),
        policy,
        namespace: options.namespace.clone(),
        kubectl_apply: options.kubectl_apply,
        derive: !options.no_derived,
        format,
    };
    let mut progress: Option<Progress> = None;
    let finished = command.run(|done, total| {
        progress
            .get_or_insert_with(|| Progress::new(total))
            .update(done, total)
    })?;
    print!("{}", finished.output);
    Ok(ExitCode::from(finished.status))
}

fn run_request(module: &Path, options: &Options) -> Result<ExitCode, String> {
    let request_path = options
        .request_path
        .as_deref()
        .ok_or_else(|| format!("--request-path is required\n{USAGE}"))?;
    let settings = match (&options.settings_json, &options.settings_path) {
        (Some(json), _) => serde_json::from_str::<Value>(json)
            .map_err(|e| format!("--settings-json is not valid JSON: {e}"))?,
        (None, Some(path)) => read_yaml(path)?,
        (None, None) => Value::Object(Default::default()),
    };
    let request = read_request(request_path)?;
    let policy = load(module)?;
    let settings = serde_json::to_vec(&settings).map_err(|e| e.to_string())?;
    let verdict = policy
        .validate_settings(&settings)
        .map_err(|e| e.to_string())?;
    if !verdict.valid {
        return Err(format!(
            "Provided settings are not valid: {}",
            verdict.message.unwrap_or_default()
        ));
    }
    println!("{}", evaluate(&policy, &request, &settings)?);
    Ok(ExitCode::SUCCESS)
}

fn run_manifest(module: &Path, manifest: &Path, options: &Options) -> Result<ExitCode, String> {
    let manifest = read_yaml(manifest)?;
    let members = policy_settings(&manifest)?;
    let request = options
        .request_path
        .as_deref()
        .map(read_request)
        .transpose()?;
    let policy = load(module)?;
    let mut all_valid = true;
    for (name, settings) in members {
        let settings = serde_json::to_vec(&settings).map_err(|e| e.to_string())?;
        let verdict = policy
            .validate_settings(&settings)
            .map_err(|e| e.to_string())?;
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
    use policy_host::check::policies::{Declared, manifest_name};
    Ok(match Declared::read(manifest)? {
        Declared::Policy(settings) => vec![(manifest_name(manifest), settings)],
        Declared::Group(members) => members,
    })
}

fn load(module: &Path) -> Result<Policy, String> {
    CompiledPolicy::from_file(module)
        .and_then(|compiled| compiled.instantiate())
        .map_err(|e| e.to_string())
}

/// A request as read from a file: its exact JSON text, sent to the module
/// unchanged, and its uid for the answer.
struct Request {
    json: String,
    uid: String,
}

#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(borrow, default)]
    request: Option<&'a RawValue>,
    #[serde(default)]
    uid: Option<String>,
}

/// Reads a bare AdmissionRequest, or the request inside an AdmissionReview.
/// Nothing is built of the object, so a custom resource of any depth passes.
fn read_request(path: &Path) -> Result<Request, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let outer = envelope(path, &text)?;
    let (json, uid) = match outer.request {
        Some(inner) => (inner.get(), envelope(path, inner.get())?.uid),
        None => (text.as_str(), outer.uid),
    };
    Ok(Request {
        json: json.to_string(),
        uid: uid.unwrap_or_default(),
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

fn read_yaml(path: &Path) -> Result<Value, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    yaml_serde::from_str(&text)
        .map_err(|e| format!("{} is not valid YAML or JSON: {e}", path.display()))
}

/// kwctl's one-line AdmissionResponse, field for field.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct AdmissionResponse<'a> {
    uid: &'a str,
    allowed: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    status: Option<Status<'a>>,
    audit_annotations: &'a Option<serde_json::Map<String, Value>>,
    warnings: &'a Option<Vec<String>>,
}

#[derive(Serialize)]
struct Status<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    message: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    code: Option<u16>,
}

fn evaluate(policy: &Policy, request: &Request, settings: &[u8]) -> Result<String, String> {
    let verdict: ValidationVerdict = policy
        .validate(request.json.as_bytes(), settings)
        .map_err(|e| e.to_string())?;
    let response = AdmissionResponse {
        uid: &request.uid,
        allowed: verdict.accepted,
        status: (!verdict.accepted).then_some(Status {
            message: verdict.message.as_deref(),
            code: verdict.code,
        }),
        audit_annotations: &verdict.audit_annotations,
        warnings: &verdict.warnings,
    };
    serde_json::to_string(&response).map_err(|e| e.to_string())
}
