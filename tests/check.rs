//! `policy-runner check` with the compiled module: the examples, a policy
//! group, the module's own rules, every kind of bad input, the exit status
//! and both outputs.

mod common;

use std::path::{Path, PathBuf};

use common::{module_path, root};
use policy_host::check::{Command, Format, PolicySource};
use serde_json::{Value, json};

fn manifest(path: &str) -> PolicySource {
    let path = root().join(path);
    let text = std::fs::read_to_string(&path).expect("a manifest");
    PolicySource::Manifest(path, yaml_serde::from_str(&text).expect("YAML"))
}

fn settings(json: Value) -> PolicySource {
    PolicySource::Settings(json)
}

fn check(
    module: &Path,
    policy: PolicySource,
    inputs: &[&str],
    format: Format,
) -> Result<Finished, String> {
    printed(&command(module, policy, inputs, format))
}

/// How a check ended, with the report it wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Finished {
    status: u8,
    output: String,
    checked: usize,
}

/// Runs `command`, its report written to memory.
fn printed(command: &Command) -> Result<Finished, String> {
    let mut out = Vec::new();
    let finished = command.run(|_, _| {}, &mut out)?;
    Ok(Finished {
        status: finished.status,
        output: String::from_utf8(out).expect("a report in UTF-8"),
        checked: finished.checked,
    })
}

/// The command `check` runs: the inputs under the repository's root (or
/// absolute), objects derived, every object shown, nothing strict.
fn command(module: &Path, policy: PolicySource, inputs: &[&str], format: Format) -> Command {
    Command {
        module: Some(module.to_path_buf()),
        store: Default::default(),
        inputs: inputs
            .iter()
            .map(|i| root().join(i).display().to_string())
            .collect(),
        policy,
        namespace: None,
        kubectl_apply: false,
        derive: true,
        format,
        only_rejected: false,
        strict: false,
        hidden: false,
        jobs: 0,
        evaluation: Default::default(),
    }
}

fn owner_required() -> PolicySource {
    settings(json!({"criteria": "containsAllOf", "values": ["example.com/owner"]}))
}

/// A check of `dir` under the owner requirement, in JSON.
fn owner_required_check(dir: &Path) -> Finished {
    check(
        &module_path(),
        owner_required(),
        &[dir.to_str().unwrap()],
        Format::Json,
    )
    .unwrap()
}

/// The objects a JSON report names, in order.
fn objects(report: &Value) -> Vec<&str> {
    report["results"]
        .as_array()
        .expect("results")
        .iter()
        .map(|r| r["object"].as_str().expect("an object"))
        .collect()
}

/// Checks the manifests in `text`, a file in a directory of its own, and
/// reads the JSON report.
fn check_text(name: &str, text: &str, policy: PolicySource) -> (Finished, Value) {
    let dir = scratch(name);
    std::fs::write(dir.join("manifests.yaml"), text).unwrap();
    let finished = check(
        &module_path(),
        policy,
        &[dir.to_str().unwrap()],
        Format::Json,
    )
    .unwrap();
    let report = serde_json::from_str(&finished.output).expect("a JSON report");
    (finished, report)
}

/// A directory of its own for a test's files.
fn scratch(name: &str) -> PathBuf {
    let dir = scratch_path(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The example of `docs/check.md`: `examples/` under the example policy.
fn check_the_examples() -> Finished {
    check(
        &module_path(),
        manifest("examples/cluster-admission-policy.yaml"),
        &["examples"],
        Format::Table,
    )
    .unwrap()
}

/// The example of `docs/check.md`: the Deployment's pod template lacks the
/// owner, so the Pods its ReplicaSet makes are rejected, and nothing else is.
#[test]
fn the_examples_under_the_example_policy() {
    let finished = check_the_examples();
    assert_eq!(finished.status, 1, "{}", finished.output);
    let lines: Vec<&str> = finished.output.lines().collect();
    // A heading a file, then its table.
    assert!(
        lines[0].ends_with("examples/manifests/node-agent.yaml"),
        "{}",
        lines[0]
    );
    let header: Vec<&str> = lines[1].split_whitespace().collect();
    assert_eq!(header, ["LINE", "OBJECT", "VERDICT", "MESSAGE"]);
    let rejected: Vec<usize> = (0..lines.len())
        .filter(|&i| lines[i].contains(" rejected "))
        .collect();
    assert_eq!(rejected.len(), 1, "{}", finished.output);
    let row = lines[rejected[0]].trim_start();
    assert!(row.starts_with("4     Pod shop/web-"), "{row}");
    assert!(
        row.ends_with(r#"rejected  lacks required annotations; add "example.com/owner""#),
        "{row}"
    );
    // What it is made from, under it.
    assert!(
        lines[rejected[0] + 1]
            .trim_start()
            .starts_with("from Deployment shop/web → ReplicaSet"),
        "{}",
        finished.output
    );
    assert!(
        finished.output.contains("monitor mode"),
        "{}",
        finished.output
    );
    assert!(
        finished.output.ends_with(
            "6 objects checked, 1 rejected, 5 left out by the policy's rules or selectors\n"
        ),
        "{}",
        finished.output
    );
}

#[test]
fn json_for_machines() {
    let finished = check(
        &module_path(),
        manifest("examples/cluster-admission-policy.yaml"),
        &["examples/manifests/web.yaml"],
        Format::Json,
    )
    .unwrap();
    let report: Value = serde_json::from_str(&finished.output).unwrap();
    assert_eq!(report["checked"], 3);
    assert_eq!(report["rejected"], 1);
    let pod = &report["results"][2];
    assert_eq!(pod["allowed"], false);
    assert_eq!(pod["derivedFrom"][0], "Deployment shop/web");
    assert!(
        pod["source"].as_str().unwrap().ends_with("web.yaml:4"),
        "{pod}"
    );
    assert!(
        pod["message"]
            .as_str()
            .unwrap()
            .contains("lacks required annotations")
    );
    // Each object's annotation keys as judged, sorted: the ReplicaSet
    // carries what the deployment controller writes on it.
    assert_eq!(
        report["results"][1]["annotations"],
        json!([
            "deployment.kubernetes.io/desired-replicas",
            "deployment.kubernetes.io/max-replicas",
            "deployment.kubernetes.io/revision",
            "example.com/owner"
        ])
    );
    assert_eq!(pod["annotations"], json!([]));
}

/// Under the allowlist, the job controller's index on an Indexed Job's
/// Pod counts as Kubernetes' own because the check sends that Pod as the
/// job controller; the same key on a Pod of the input, sent by a user,
/// does not, even where the Pod names a Job as its controller. The same
/// Pod as a cluster holds it (with a `uid`) is judged as the audit scanner
/// sends it, and there its Job owner counts.
#[test]
fn keys_a_controller_writes_count_only_in_its_requests() {
    let owner = "ownerReferences: [{apiVersion: batch/v1, kind: Job, name: render, uid: u1, controller: true}]";
    let (finished, report) = check_text(
        "writers",
        &format!(
            "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: render\n  namespace: shop\nspec:\n  completionMode: Indexed\n  completions: 2\n  template:\n    metadata: {{annotations: {{example.com/owner: me}}}}\n    spec: {{restartPolicy: Never, containers: [{{name: r, image: r}}]}}\n---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: posing\n  namespace: shop\n  annotations: {{example.com/owner: me, batch.kubernetes.io/job-completion-index: '0'}}\n  {owner}\nspec: {{containers: [{{name: r, image: r}}]}}\n---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: stored\n  namespace: shop\n  uid: 5a1c\n  annotations: {{example.com/owner: me, batch.kubernetes.io/job-completion-index: '0'}}\n  {owner}\nspec: {{containers: [{{name: r, image: r}}]}}\n"
        ),
        settings(json!({"criteria": "doesNotContainOtherThan", "values": ["example.com/*"]})),
    );
    let verdicts: Vec<(String, bool)> = report["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["object"].as_str().unwrap().to_string(),
                r["allowed"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        verdicts,
        [
            ("Job shop/render".to_string(), true),
            ("Pod shop/render-0-x7k2p".to_string(), true),
            ("Pod shop/posing".to_string(), false),
            ("Pod shop/stored".to_string(), true),
        ],
        "{}",
        finished.output
    );
    assert_eq!(report["audited"], 1, "{}", finished.output);
    // The stored Pod's row says it was judged as an audit; no other does.
    let audits: Vec<bool> = report["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["audit"].as_bool().unwrap())
        .collect();
    assert_eq!(audits, [false, false, false, true], "{}", finished.output);
    let posing = &report["results"][2]["message"];
    assert!(
        posing
            .as_str()
            .unwrap()
            .contains("batch.kubernetes.io/job-completion-index"),
        "{posing}"
    );
}

/// Names and scope as the cluster forms them: a generated name cut to 58
/// characters before its suffix, which the output calls illustrative; no
/// namespace on a cluster-wide object, custom resources included where
/// the input's CRD says `scope: Cluster`.
#[test]
fn names_and_scope_are_the_clusters() {
    let long = "a".repeat(60);
    let text = format!(
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {{name: widgets.example.com}}\nspec:\n  group: example.com\n  scope: Cluster\n  names: {{kind: Widget, plural: widgets}}\n  versions: [{{name: v1, served: true, storage: true}}]\n---\napiVersion: example.com/v1\nkind: Widget\nmetadata: {{name: w, namespace: ignored}}\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {{name: reader, namespace: ignored}}\n---\napiVersion: apps/v1\nkind: ReplicaSet\nmetadata: {{name: {long}, namespace: shop}}\nspec: {{selector: {{matchLabels: {{app: a}}}}, template: {{metadata: {{}}, spec: {{containers: [{{name: c, image: i}}]}}}}}}\n"
    );
    let (finished, report) = check_text(
        "names",
        &text,
        settings(json!({"criteria": "doesNotContainAnyOf", "values": ["x"]})),
    );
    let objects = objects(&report);
    let pod = format!("Pod shop/{}x7k2p", &format!("{long}-")[..58]);
    assert_eq!(
        objects,
        [
            "CustomResourceDefinition widgets.example.com",
            "Widget w",
            "ClusterRole reader",
            &format!("ReplicaSet shop/{long}"),
            &pod,
        ],
        "{}",
        finished.output
    );
    assert_eq!(pod.len() - "Pod shop/".len(), 63);
    assert_eq!(
        report["warnings"],
        json!([
            "names ending in `x7k2p` are illustrative: the API server ends each name made from a `generateName` with five random characters of its own"
        ])
    );
}

/// Only the rejected objects, and workflow commands GitHub shows on the
/// pull request's lines; the summary counts every object either way.
#[test]
fn only_rejected_and_github_outputs() {
    let policy = || manifest("examples/cluster-admission-policy.yaml");
    let examples = |format, only_rejected| Command {
        inputs: vec!["examples".to_string()],
        only_rejected,
        ..command(&module_path(), policy(), &[], format)
    };
    // The examples given as a relative path, as in a repository: the
    // workflow commands name files relative to it. (No other test here
    // depends on the working directory.)
    std::env::set_current_dir(root()).unwrap();
    let table = printed(&examples(Format::Table, true)).unwrap();
    let rows: Vec<&str> = table.output.lines().take_while(|l| !l.is_empty()).collect();
    // The file, the header, the one rejected object and what it is made from.
    assert_eq!(rows[0], "examples/manifests/web.yaml", "{}", table.output);
    assert!(
        rows[2]
            .trim_start()
            .starts_with("4     Pod shop/web-796cb6795c-x7k2p "),
        "{}",
        rows[2]
    );
    assert!(rows[3].trim_start().starts_with("from Deployment shop/web"));
    assert!(rows.len() <= 5, "{}", table.output);
    assert!(
        table.output.ends_with(
            "6 objects checked, 1 rejected, 5 left out by the policy's rules or selectors\n"
        ),
        "{}",
        table.output
    );
    let github = printed(&examples(Format::Github, false)).unwrap();
    assert_eq!(github.status, 1);
    let lines: Vec<&str> = github.output.lines().collect();
    assert_eq!(
        lines,
        [
            "::warning file=examples/manifests/web.yaml,line=4,title=Pod shop/web-796cb6795c-x7k2p (from Deployment shop/web → ReplicaSet shop/web-796cb6795c)::Pod \"shop/web-796cb6795c-x7k2p\" lacks required annotations; add \"example.com/owner\"",
            "::notice::names ending in `x7k2p` are illustrative: the API server ends each name made from a `generateName` with five random characters of its own",
            "::notice::the policy is in monitor mode: policy-server would log these rejections, not make them",
            "6 objects checked, 1 rejected, 5 left out by the policy's rules or selectors",
        ]
    );
}

/// JUnit XML that an XML reader takes, holding one test case per object
/// and per unusable document, with the counts its suites state.
#[test]
fn junit_output_reads_back_as_the_results() {
    use quick_xml::events::Event;
    let dir = scratch("junit");
    std::fs::write(
        dir.join("bad.yaml"),
        "kind: Pod\nmetadata: {name: \"a&<b>\"}\n",
    )
    .unwrap();
    let finished = check(
        &module_path(),
        manifest("examples/cluster-admission-policy.yaml"),
        &["examples", dir.to_str().unwrap()],
        Format::Junit,
    )
    .unwrap();
    assert_eq!(finished.status, 2);
    let mut reader = quick_xml::Reader::from_str(&finished.output);
    let (mut cases, mut failures, mut errors) = (Vec::new(), Vec::new(), 0);
    let mut stated = Vec::new();
    loop {
        match reader.read_event().expect("well-formed XML") {
            Event::Eof => break,
            Event::Start(e) | Event::Empty(e) => {
                let attribute = |name: &str| {
                    e.try_get_attribute(name)
                        .unwrap()
                        .map(|a| a.unescape_value().unwrap().into_owned())
                };
                match e.name().as_ref() {
                    b"testsuites" | b"testsuite" => stated.push((
                        attribute("tests").unwrap(),
                        attribute("failures").unwrap(),
                        attribute("errors").unwrap(),
                    )),
                    b"testcase" => cases.push(attribute("name").unwrap()),
                    b"failure" => failures.push(attribute("message").unwrap()),
                    b"error" => errors += 1,
                    _ => {}
                }
            }
            _ => {}
        }
    }
    assert_eq!(cases.len(), 7, "{cases:?}");
    assert_eq!(failures.len(), 1);
    assert!(failures[0].contains("lacks required annotations; add \"example.com/owner\""));
    assert_eq!(errors, 1);
    let counts = ("7".to_string(), "1".to_string(), "1".to_string());
    assert_eq!(stated, [counts.clone(), counts]);
    assert!(cases.iter().any(|c| c.starts_with("Pod shop/web-")));
    assert!(cases.iter().any(|c| c.ends_with("bad.yaml:1")), "{cases:?}");
}

/// The SARIF 2.1.0 JSON schema, as the `serde-sarif` package the runner
/// builds its SARIF with carries it (no copy of our own to drift).
///
/// Cargo is asked offline, and for this machine's platform only
/// (`host-tuple`): that graph's crates are the ones this very `cargo test`
/// downloaded to build the runner. Without `--filter-platform` it wants
/// every platform's crates (Windows' `anstyle-wincon`), which only a
/// long-used crate cache holds.
fn sarif_schema() -> Value {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
    let output = std::process::Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--offline"])
        .args(["--filter-platform", "host-tuple"])
        .current_dir(root())
        .output()
        .expect("cargo metadata");
    assert!(
        output.status.success(),
        "cargo metadata failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let metadata: Value = serde_json::from_slice(&output.stdout).unwrap();
    let manifest = metadata["packages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "serde-sarif")
        .expect("serde-sarif in the dependency graph")["manifest_path"]
        .as_str()
        .unwrap()
        .to_string();
    let schema = PathBuf::from(manifest).with_file_name("src/schema.json");
    let schema: Value = serde_json::from_slice(&std::fs::read(&schema).unwrap()).unwrap();
    assert_eq!(
        schema["title"],
        "Static Analysis Results Format (SARIF) Version 2.1.0 JSON Schema"
    );
    schema
}

/// SARIF that the 2.1.0 schema accepts: one result a rejection and one an
/// unusable document, each at its file and line, the policy as the tool.
#[test]
fn sarif_output_validates_against_the_sarif_schema() {
    let dir = scratch("sarif");
    std::fs::write(dir.join("bad.yaml"), "kind: Pod\n").unwrap();
    let finished = check(
        &module_path(),
        manifest("examples/cluster-admission-policy.yaml"),
        &["examples", dir.to_str().unwrap()],
        Format::Sarif,
    )
    .unwrap();
    assert_eq!(finished.status, 2);
    let log: Value = serde_json::from_str(&finished.output).expect("SARIF is JSON");
    // The published schema's `language` pattern has a stray `]`, which
    // ECMAScript (the schema's regex dialect) reads as a literal and the
    // validator's check of the schema against its meta-schema refuses: the
    // pattern the schema means, for a property we never write.
    let mut schema = sarif_schema();
    for definition in ["run", "toolComponent"] {
        let language = &mut schema["definitions"][definition]["properties"]["language"]["pattern"];
        assert_eq!(language, "^[a-zA-Z]{2}|^[a-zA-Z]{2}-[a-zA-Z]{2}]?$");
        *language = "^[a-zA-Z]{2}(-[a-zA-Z]{2})?$".into();
    }
    let validator = jsonschema::validator_for(&schema).expect("the schema compiles");
    let errors: Vec<String> = validator.iter_errors(&log).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:#?}");
    // The schema can fail: a result without its message is refused.
    let mut broken = log.clone();
    broken["runs"][0]["results"][0]
        .as_object_mut()
        .unwrap()
        .remove("message");
    assert!(!validator.is_valid(&broken));

    let run = &log["runs"][0];
    assert_eq!(run["tool"]["driver"]["name"], "require-owner");
    let results = run["results"].as_array().unwrap();
    assert_eq!(results.len(), 2, "{results:#?}");
    let rejected = &results[0];
    assert_eq!(rejected["ruleId"], "require-owner");
    // The example policy is in monitor mode: a warning, not an error.
    assert_eq!(rejected["level"], "warning");
    let location = &rejected["locations"][0]["physicalLocation"];
    assert!(
        location["artifactLocation"]["uri"]
            .as_str()
            .unwrap()
            .ends_with("examples/manifests/web.yaml"),
        "{location}"
    );
    assert_eq!(location["region"]["startLine"], 4);
    let text = rejected["message"]["text"].as_str().unwrap();
    assert!(
        text.starts_with("Pod shop/web-")
            && text.contains("(made from Deployment shop/web → ReplicaSet shop/web-")
            && text.ends_with("lacks required annotations; add \"example.com/owner\""),
        "{text}"
    );
    assert_eq!(results[1]["ruleId"], "unusable-input");
    assert_eq!(results[1]["level"], "error");
}

/// A group is judged member by member, as its expression calls them; a
/// rejection says the group's message and each member's.
#[test]
fn a_policy_group_with_its_expression() {
    let dir = scratch("group");
    std::fs::write(
        dir.join("debug.yaml"),
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: debugged\n  namespace: shop\n  annotations: {example.com/owner: me, example.com/debug: 'on'}\nspec: {selector: {matchLabels: {app: d}}, template: {metadata: {}, spec: {containers: [{name: c, image: i}]}}}\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: orphan\n  namespace: shop\nspec: {selector: {matchLabels: {app: o}}, template: {metadata: {}, spec: {containers: [{name: c, image: i}]}}}\n",
    )
    .unwrap();
    let finished = check(
        &module_path(),
        manifest("examples/policy-group.yaml"),
        &[dir.to_str().unwrap()],
        Format::Json,
    )
    .unwrap();
    let report: Value = serde_json::from_str(&finished.output).unwrap();
    let results = report["results"].as_array().unwrap();
    // The group covers Deployments only.
    assert_eq!(results.len(), 2, "{report:#}");
    let debugged = results[0]["message"].as_str().unwrap();
    assert!(
        debugged.starts_with(
            "the object must name an owner and carry no debugging annotation (not_denied: "
        ) && debugged.contains(r#"remove "example.com/debug""#),
        "{debugged}"
    );
    // `required() && not_denied()`: the orphan fails `required`, and
    // `not_denied` is never called.
    let orphan = results[1]["message"].as_str().unwrap();
    assert!(
        orphan.contains("(required: ") && !orphan.contains("not_denied"),
        "{orphan}"
    );
    assert_eq!(finished.status, 1);
}

/// Without a manifest, an annotated module's own rules say what is judged;
/// a module without metadata judges everything.
#[test]
fn the_modules_own_rules_or_every_object() {
    let everything = check(
        &module_path(),
        owner_required(),
        &["examples/manifests/node-agent.yaml"],
        Format::Json,
    )
    .unwrap();
    let report: Value = serde_json::from_str(&everything.output).unwrap();
    assert_eq!(report["checked"], 3, "the ConfigMap too: {report:#}");

    let metadata: Value =
        yaml_serde::from_str(&std::fs::read_to_string(root().join("metadata.yml")).unwrap())
            .unwrap();
    let annotated = scratch("annotated").join("annotated.wasm");
    std::fs::write(
        &annotated,
        with_custom_section(
            &std::fs::read(module_path()).unwrap(),
            "io.kubewarden.metadata",
            &serde_json::to_vec(&metadata).unwrap(),
        ),
    )
    .unwrap();
    let ruled = check(
        &annotated,
        owner_required(),
        &["examples/manifests/node-agent.yaml"],
        Format::Json,
    )
    .unwrap();
    let report: Value = serde_json::from_str(&ruled.output).unwrap();
    assert_eq!(
        report["checked"], 2,
        "the DaemonSet and its Pod: {report:#}"
    );
    assert_eq!(report["notCovered"], 1);
}

/// `module` with a custom section appended, as `kwctl annotate` adds its
/// metadata.
fn with_custom_section(module: &[u8], name: &str, data: &[u8]) -> Vec<u8> {
    fn leb128(mut n: usize, out: &mut Vec<u8>) {
        loop {
            let byte = (n & 0x7f) as u8;
            n >>= 7;
            out.push(if n == 0 { byte } else { byte | 0x80 });
            if n == 0 {
                break;
            }
        }
    }
    let mut content = Vec::new();
    leb128(name.len(), &mut content);
    content.extend_from_slice(name.as_bytes());
    content.extend_from_slice(data);
    let mut out = module.to_vec();
    out.push(0);
    leb128(content.len(), &mut out);
    out.extend(content);
    out
}

#[test]
fn exit_status_zero_when_nothing_is_rejected() {
    let finished = check(
        &module_path(),
        manifest("examples/cluster-admission-policy.yaml"),
        &[
            "examples/manifests/node-agent.yaml",
            "examples/manifests/report.yaml",
        ],
        Format::Table,
    )
    .unwrap();
    assert_eq!(finished.status, 0, "{}", finished.output);
}

/// Every kind of bad input is named with its file and line, and the rest
/// is still checked; the status is then 2.
#[test]
fn unusable_input_is_reported_and_the_rest_checked() {
    let dir = scratch("bad");
    std::fs::write(dir.join("a.yaml"), "- not\n- an object\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: fine}\n---\nkind: Pod\nmetadata: {name: x}\n").unwrap();
    std::fs::write(
        dir.join("b.yml"),
        "apiVersion: v1\nkind: Pod\nmetadata: {name: [oops\n",
    )
    .unwrap();
    std::fs::write(dir.join("c.json"), "{\"kind\": ").unwrap();
    std::fs::write(dir.join("ignored.txt"), "not read").unwrap();
    std::fs::create_dir_all(dir.join("deeper")).unwrap();
    std::fs::write(
        dir.join("deeper/d.yaml"),
        "apiVersion: v1\nkind: List\nitems: 3\n",
    )
    .unwrap();
    let missing = dir.join("missing.yaml");
    let inputs = [dir.to_str().unwrap(), missing.to_str().unwrap()];
    let finished = check(&module_path(), owner_required(), &inputs, Format::Table).unwrap();
    assert_eq!(finished.status, 2, "{}", finished.output);
    let shown = |file: &str| dir.join(file).display().to_string();
    for line in [
        format!(
            "note: {}:1: not a Kubernetes object (a list, without a `kind`): skipped",
            shown("a.yaml")
        ),
        format!(
            "{}:8: not a Kubernetes object: no `apiVersion`",
            shown("a.yaml")
        ),
        format!("{}:3: not YAML", shown("b.yml")),
        format!("{}:1: not JSON", shown("c.json")),
        format!(
            "{}:1: a List whose `items` is not a list",
            shown("deeper/d.yaml")
        ),
        format!("{}:1: cannot read", missing.display()),
    ] {
        assert!(
            finished.output.contains(&line),
            "{line} in:\n{}",
            finished.output
        );
    }
    assert!(
        finished.output.contains("ConfigMap default/fine"),
        "{}",
        finished.output
    );
    assert!(
        finished
            .output
            .ends_with("1 object checked, 1 rejected, 1 skipped, 5 unusable documents\n"),
        "{}",
        finished.output
    );
}

/// What the API server refuses of what `check` reads: a Secret whose
/// `data` is not base64, a name its kind's validation refuses, an object
/// whose annotations pass 262,144 bytes once `kubectl apply` adds its copy
/// of the object. Each is unusable at its line, and nothing is judged or
/// derived from it; without `--kubectl-apply` the large object is judged.
#[test]
fn what_the_api_server_refuses_is_unusable_with_its_reason() {
    let big = "x".repeat(140_000);
    let text = format!(
        "apiVersion: v1\nkind: Secret\nmetadata: {{name: token, annotations: {{example.com/owner: me}}}}\ndata:\n  token: not base64!\n---\napiVersion: batch/v1\nkind: Job\nmetadata:\n  name: cleanup-<node-hostname>\n  annotations: {{example.com/owner: me}}\nspec:\n  template:\n    spec:\n      restartPolicy: Never\n      containers: [{{name: c, image: i}}]\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: large\n  annotations: {{example.com/owner: me, example.com/notes: {big}}}\n"
    );
    let dir = scratch("refused-by-the-api-server");
    let file = dir.join("manifests.yaml");
    std::fs::write(&file, &text).unwrap();
    let run = |kubectl_apply: bool| {
        let mut command = command(
            &module_path(),
            owner_required(),
            &[file.to_str().unwrap()],
            Format::Json,
        );
        command.kubectl_apply = kubectl_apply;
        let finished = printed(&command).unwrap();
        let report: Value = serde_json::from_str(&finished.output).unwrap();
        (finished, report)
    };
    let reasons = |report: &Value| -> Vec<String> {
        report["unusable"]
            .as_array()
            .unwrap()
            .iter()
            .map(|u| {
                format!(
                    "{} {}",
                    u["source"].as_str().unwrap().rsplit('/').next().unwrap(),
                    u["reason"].as_str().unwrap()
                )
            })
            .collect()
    };
    let (applied, report) = run(true);
    assert_eq!(applied.status, 2, "{}", applied.output);
    assert!(objects(&report).is_empty(), "{}", applied.output);
    let reasons = reasons(&report);
    assert_eq!(reasons.len(), 3, "{reasons:#?}");
    assert!(
        reasons[0].starts_with("manifests.yaml:1 `data[\"token\"]` is not base64"),
        "{reasons:#?}"
    );
    assert!(
        reasons[1].starts_with("manifests.yaml:7 `metadata.name` \"cleanup-<node-hostname>\" is not a DNS-1123 subdomain"),
        "{reasons:#?}"
    );
    assert!(
        reasons[2].starts_with("manifests.yaml:18 its annotations hold ")
            && reasons[2].contains("kubectl apply --server-side"),
        "{reasons:#?}"
    );
    let (created, report) = run(false);
    assert_eq!(
        objects(&report),
        ["ConfigMap default/large"],
        "{}",
        created.output
    );
}

/// A repository holds more than manifests: what is no object is noted and
/// skipped without failing the check, what a tool renders says how to
/// render it, hidden directories are left out and named, and links to
/// directories are named and not walked, as kubectl walks none.
#[test]
fn a_repository_is_walked_as_a_person_would_check_it() {
    let dir = scratch("repository");
    let write = |file: &str, text: &str| {
        let path = dir.join(file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write(
        "deploy/job.yaml",
        "apiVersion: batch/v1\nkind: Job\nmetadata: {name: once, namespace: shop, annotations: {example.com/owner: me}}\nspec: {template: {metadata: {annotations: {example.com/owner: me}}, spec: {restartPolicy: Never, containers: [{name: c, image: i}]}}}\n",
    );
    write(
        "package.json",
        "{\"name\": \"site\", \"version\": \"1.0.0\"}\n",
    );
    write("renovate.json", "{\"extends\": [\"config:base\"]}\n");
    write(".github/workflows/ci.yml", "on: push\njobs: {}\n");
    write(
        "chart/Chart.yaml",
        "apiVersion: v2\nname: shop\nversion: 0.1.0\n",
    );
    write(
        "chart/templates/deployment.yaml",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ .Release.Name }}\n",
    );
    write("overlays/kustomization.yaml", "resources: [../deploy]\n");
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(&dir, dir.join("deploy/back-to-the-top")).unwrap();
        std::os::unix::fs::symlink(dir.join("deploy"), dir.join("deploy-again")).unwrap();
    }
    let finished = owner_required_check(&dir);
    assert_eq!(finished.status, 0, "{}", finished.output);
    let report: Value = serde_json::from_str(&finished.output).unwrap();
    assert_eq!(
        objects(&report),
        ["Job shop/once", "Pod shop/once-x7k2p"],
        "each file once"
    );
    assert_eq!(report["unusable"], json!([]));
    let notes: Vec<String> = report["notes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| {
            let source = n["source"].as_str().unwrap();
            let file = source.strip_prefix(dir.to_str().unwrap()).unwrap_or(source);
            format!("{file}: {}", n["note"].as_str().unwrap())
        })
        .collect();
    let shown = |file: &str| dir.join(file).display().to_string();
    // A chart is noted once, at its `Chart.yaml` (by its real path), and
    // none of its files is judged.
    let real = |file: &str| std::fs::canonicalize(dir.join(file)).unwrap();
    let in_dir = |path: &Path| {
        let path = path.display().to_string();
        path.strip_prefix(dir.to_str().unwrap())
            .map_or(path.clone(), str::to_string)
    };
    let mut expected = vec![
        format!(
            ":1: hidden directories left out: {} (1 file); `kubectl apply -R` reads them, `--hidden` checks them too",
            shown(".github")
        ),
        format!(
            "{}:1: a Helm chart: its files are not judged as they stand; check what it renders with `helm template RELEASE {} | policy-runner check … -`",
            in_dir(&real("chart").join("Chart.yaml")),
            real("chart").display()
        ),
        format!(
            "/overlays/kustomization.yaml:1: a Kustomization: check what it renders with `kubectl kustomize {} | policy-runner check … -`",
            shown("overlays")
        ),
        "/package.json:1: not a Kubernetes object (a mapping, without a `kind`): skipped"
            .to_string(),
        "/renovate.json:1: not a Kubernetes object (a mapping, without a `kind`): skipped"
            .to_string(),
    ];
    // Links to directories are not walked, as `kubectl apply -R` walks
    // none.
    if cfg!(unix) {
        for (at, (link, target, files)) in [
            ("/deploy/back-to-the-top", "", "7 manifest files"),
            ("/deploy-again", "/deploy", "1 manifest file"),
        ]
        .into_iter()
        .enumerate()
        {
            expected.insert(
                at,
                format!(
                    "{link}:1: a link to the directory {}{target} ({files}), which `kubectl \
                     apply -R` does not follow: not checked; give the directory itself to check it",
                    dir.display()
                ),
            );
        }
    }
    assert_eq!(notes, expected, "{}", finished.output);
}

/// A paused Deployment, a suspended Job or CronJob derives nothing, and a
/// warning says so, naming the object as its row does (nothing of the input
/// was skipped); resumed, each derives again and no warning is left.
#[test]
fn what_makes_nothing_now_is_noted() {
    let dir = scratch("idle");
    let write = |suspended: bool| {
        std::fs::write(
            dir.join("idle.yaml"),
            format!(
                "apiVersion: batch/v1\nkind: CronJob\nmetadata: {{name: nightly, namespace: ops}}\nspec:\n  suspend: {suspended}\n  schedule: \"0 1 * * *\"\n  jobTemplate:\n    spec:\n      template:\n        spec: {{restartPolicy: Never, containers: [{{name: c, image: i}}]}}\n---\napiVersion: batch/v1\nkind: Job\nmetadata: {{name: once}}\nspec:\n  suspend: {suspended}\n  template:\n    spec: {{restartPolicy: Never, containers: [{{name: c, image: i}}]}}\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: web}}\nspec:\n  paused: {suspended}\n  selector: {{matchLabels: {{app: web}}}}\n  template:\n    metadata: {{labels: {{app: web}}}}\n    spec: {{containers: [{{name: c, image: i}}]}}\n"
            ),
        )
        .unwrap();
        serde_json::from_str::<Value>(&owner_required_check(&dir).output).unwrap()
    };
    let idle = write(true);
    assert_eq!(
        objects(&idle),
        [
            "CronJob ops/nightly",
            "Job default/once",
            "Deployment default/web"
        ]
    );
    // Warnings, not notes: nothing of the input was skipped.
    assert_eq!(idle["notes"], json!([]));
    let warnings: Vec<&str> = idle["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .filter(|w| w.contains(") is "))
        .collect();
    assert_eq!(warnings.len(), 3, "{warnings:?}");
    let file = dir.join("idle.yaml").display().to_string();
    assert!(
        warnings[0].starts_with(&format!(
            "CronJob ops/nightly ({file}:1) is suspended (`spec.suspend: true`): its controller makes no Job"
        )),
        "{warnings:?}"
    );
    assert!(
        warnings[1].starts_with("Job default/once (") && warnings[1].contains(") is suspended")
    );
    assert!(warnings[2].contains(") is paused (`spec.paused: true`)"));
    let resumed = write(false);
    assert!(
        !resumed["warnings"].to_string().contains(") is "),
        "{resumed}"
    );
    assert_eq!(objects(&resumed).len(), 8, "{resumed}");
}

#[test]
fn unusable_settings_or_policy_check_nothing() {
    let invalid = settings(json!({"criteria": "containsAllOf", "values": []}));
    let error = check(&module_path(), invalid, &["examples"], Format::Table).unwrap_err();
    assert!(
        error.contains("not valid") && error.contains("`values` is empty"),
        "{error}"
    );
    let not_a_policy = manifest("examples/manifests/web.yaml");
    let error = check(&module_path(), not_a_policy, &["examples"], Format::Table).unwrap_err();
    assert!(
        error.contains("not a Kubewarden policy manifest"),
        "{error}"
    );
    let error = check(
        &root().join("README.md"),
        owner_required(),
        &["examples"],
        Format::Table,
    )
    .unwrap_err();
    assert!(
        error.contains("cannot load the module") || error.contains("not a WebAssembly module"),
        "{error}"
    );
}

/// `docs/check.md` shows the check of the examples as it prints.
#[test]
fn the_check_page_shows_what_the_check_prints() {
    let page = std::fs::read_to_string(root().join("docs/check.md")).unwrap();
    let command = "$ policy-runner check annotated-policy.wasm --policy examples/cluster-admission-policy.yaml examples/\n";
    let start = page.find(command).expect("the example of docs/check.md") + command.len();
    let shown = &page[start..start + page[start..].find("```").unwrap()];
    let finished = check_the_examples();
    let relative = finished
        .output
        .replace(&format!("{}/", root().display()), "");
    assert_eq!(shown, relative);
}

/// What `helm template … > rendered.yaml` saves, and an istio-style addon
/// whose ConfigMap holds a Grafana dashboard: files that hold `{{` and parse,
/// every object judged. A document that holds `{{` in its name (or does not
/// parse) is a template: skipped, noted, counted in the summary as to
/// render first, and with `strict` the run fails with status 2.
#[test]
fn braces_in_files_that_parse_are_content_and_templates_are_counted() {
    let dir = scratch("braces");
    std::fs::write(
        dir.join("rendered.yaml"),
        "---\n# Source: shop/templates/serviceaccount.yaml\napiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: shop\n---\n# Source: shop/templates/deployment.yaml\n# image from {{ .Values.image.repository }}\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: shop\n  annotations: {example.com/owner: team-shop}\nspec:\n  selector: {matchLabels: {app: shop}}\n  template:\n    metadata: {labels: {app: shop}, annotations: {example.com/owner: team-shop}}\n    spec:\n      containers:\n      - name: app\n        image: registry.example/shop:1\n        args: [\"--log-format\", \"{{.Time}} {{.Level}}\"]\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("grafana.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: dashboards\n  namespace: observability\ndata:\n  mesh.json: |\n    {\"panels\": [{\"targets\": [{\"legendFormat\": \"{{pod}} {{destination_service}}\"}]}]}\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: grafana\n  namespace: observability\nspec:\n  selector: {matchLabels: {app: grafana}}\n  template:\n    metadata: {labels: {app: grafana}}\n    spec: {containers: [{name: grafana, image: grafana/grafana:1}]}\n",
    )
    .unwrap();
    std::fs::create_dir_all(dir.join("chart/templates")).unwrap();
    std::fs::write(
        dir.join("chart/templates/deployment.yaml"),
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ .Release.Name }}\n",
    )
    .unwrap();
    let run = |strict: bool, format: Format| {
        printed(&Command {
            derive: false,
            strict,
            ..command(
                &module_path(),
                owner_required(),
                &[dir.to_str().unwrap()],
                format,
            )
        })
        .unwrap()
    };
    let finished = run(false, Format::Json);
    let report: Value = serde_json::from_str(&finished.output).unwrap();
    let mut judged = objects(&report);
    judged.sort_unstable();
    assert_eq!(
        judged,
        [
            "ConfigMap observability/dashboards",
            "Deployment default/shop",
            "Deployment observability/grafana",
            "ServiceAccount default/shop",
        ],
        "{}",
        finished.output
    );
    // Only the grafana Deployment lacks its owner.
    assert_eq!(finished.status, 1, "{}", finished.output);
    let notes = report["notes"].as_array().unwrap();
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(
        notes[0]["note"]
            .as_str()
            .unwrap()
            .starts_with("a template (`{{` "),
        "{notes:?}"
    );
    assert_eq!(notes[0]["unrendered"], true);
    let table = run(false, Format::Table).output;
    assert!(table.contains(", 1 skipped (1 to render first)"), "{table}");
    assert_eq!(run(true, Format::Json).status, 2);
}

/// The notes fit the run: an object given twice is warned of, a run that
/// found no manifests says so, and the monitor-mode note shows only when
/// something was rejected.
#[test]
fn notes_that_fit_the_run() {
    let pod = |name: &str, owner: bool| {
        let annotations = match owner {
            true => "{example.com/owner: me}",
            false => "{}",
        };
        format!(
            "apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, annotations: {annotations}}}\nspec: {{containers: [{{name: c, image: i}}]}}\n"
        )
    };
    let twice = format!(
        "{}---\n{}---\n{}",
        pod("a", true),
        pod("b", true),
        pod("a", true)
    );
    let (_, report) = check_text("twice", &twice, owner_required());
    assert_eq!(
        report["warnings"],
        json!([format!(
            "Pod default/a is in the input more than once (again at {}): the cluster keeps one object of that name, so each copy is judged as if it were the only one",
            scratch_file("twice", "manifests.yaml", 11)
        )])
    );
    // The same name in another namespace is another object.
    let elsewhere = format!(
        "{}---\n{}",
        pod("a", true),
        pod("a", true).replace("name: a,", "name: a, namespace: shop,")
    );
    let (_, report) = check_text("elsewhere", &elsewhere, owner_required());
    assert_eq!(report["warnings"], json!([]));

    let empty = scratch("empty");
    let finished = check(
        &module_path(),
        owner_required(),
        &[empty.to_str().unwrap()],
        Format::Json,
    )
    .unwrap();
    let report: Value = serde_json::from_str(&finished.output).unwrap();
    assert_eq!(finished.status, 0);
    assert!(
        report["warnings"][0]
            .as_str()
            .unwrap()
            .starts_with("no manifests found"),
        "{report}"
    );

    let monitor = |owner: bool| {
        let dir = scratch(&format!("monitor-{owner}"));
        std::fs::write(dir.join("pod.yaml"), pod("a", owner)).unwrap();
        let policy = PolicySource::Manifest(
            dir.join("policy.yaml"),
            json!({
                "apiVersion": "policies.kubewarden.io/v1", "kind": "ClusterAdmissionPolicy",
                "metadata": {"name": "owners"},
                "spec": {"mode": "monitor", "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"], "operations": ["CREATE"]}], "settings": {"criteria": "containsAllOf", "values": ["example.com/owner"]}},
            }),
        );
        check(
            &module_path(),
            policy,
            &[dir.to_str().unwrap()],
            Format::Table,
        )
        .unwrap()
        .output
    };
    assert!(monitor(false).contains("note: the policy is in monitor mode"));
    assert!(!monitor(true).contains("monitor mode"), "{}", monitor(true));
}

/// `file:line` of a file written by `check_text(name, …)`.
fn scratch_file(name: &str, file: &str, line: usize) -> String {
    format!("{}:{line}", scratch_path(name).join(file).display())
}

/// Where `scratch(name)` makes its directory.
fn scratch_path(name: &str) -> PathBuf {
    // Cargo's scratch directory for integration tests, under target/:
    // each test makes its directory anew, and none is left in /tmp.
    Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("check-{name}"))
}

/// `make bench-peers` finds `check` and its peers differing on the objects
/// of `bench/peers/differences/`, each for a reason docs/performance.md
/// gives; check's side of each is held here (the peers are never part of
/// `make test`), with the benchmark's own policy group.
#[test]
fn check_refuses_what_only_kubernetes_writes_where_the_peers_cannot_tell() {
    let finished = check(
        &module_path(),
        manifest("bench/peers/kubewarden.yaml"),
        &["bench/peers/differences"],
        Format::Json,
    )
    .unwrap();
    let report: Value = serde_json::from_str(&finished.output).unwrap();
    let verdicts: std::collections::BTreeMap<&str, (bool, &str)> = report["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let message = r["message"].as_str().unwrap_or_default();
            (
                r["object"].as_str().unwrap(),
                (r["allowed"] == true, message),
            )
        })
        .collect();
    // The peers accept each of these three: their list of Kubernetes'
    // keys cannot say who wrote a key.
    for (object, key) in [
        ("Pod shop/forged-mirror", "kubernetes.io/config.mirror"),
        (
            "Pod shop/forged-index",
            "batch.kubernetes.io/job-completion-index",
        ),
        (
            "Pod shop/apparmor-key",
            "container.apparmor.security.beta.kubernetes.io/app",
        ),
    ] {
        let (allowed, message) = verdicts[object];
        assert!(!allowed, "{object}");
        assert!(message.contains("(allowed: "), "{object}: {message}");
        assert!(
            message.contains(&format!("remove \"{key}\"")),
            "{object}: {message}"
        );
    }
    // Where all agree: accepted.
    for object in ["Deployment shop/restarted", "CronJob shop/nightly"] {
        assert!(verdicts[object].0, "{object}: {:?}", verdicts[object]);
    }
    // What only check judges: the CronJob's Job and Pod lack the owner.
    let derived: Vec<(&str, bool)> = report["results"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["derivedFrom"][0] == "CronJob shop/nightly")
        .map(|r| (r["object"].as_str().unwrap(), r["allowed"] == true))
        .collect();
    assert_eq!(derived.len(), 2, "{derived:?}");
    assert!(derived.iter().all(|(_, allowed)| !allowed), "{derived:?}");
    assert_eq!(finished.status, 1);
}

/// `check` leaves out what a policy's `matchConditions` leave out, as
/// `test` does (one reading of the policy serves both), except in an audit,
/// whose scanner never evaluates them; a condition it cannot know is an
/// error, never a guess.
#[test]
fn check_leaves_out_what_match_conditions_leave_out() {
    let policy = |conditions: Value| {
        PolicySource::Manifest(
            PathBuf::from("policy.yaml"),
            json!({
                "apiVersion": "policies.kubewarden.io/v1",
                "kind": "ClusterAdmissionPolicy",
                "metadata": {"name": "owned"},
                "spec": {
                    "module": "m",
                    "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"], "operations": ["CREATE"]}],
                    "matchConditions": conditions,
                    "settings": {"criteria": "containsAllOf", "values": ["example.com/owner"]},
                },
            }),
        )
    };
    let pods = "apiVersion: v1\nkind: Pod\nmetadata: {name: a, namespace: shop, labels: {checked: 'yes'}}\n\
                spec: {containers: [{name: c, image: i}]}\n---\n\
                apiVersion: v1\nkind: Pod\nmetadata: {name: b, namespace: shop}\nspec: {containers: [{name: c, image: i}]}\n---\n\
                apiVersion: v1\nkind: Pod\nmetadata: {name: c, namespace: shop, uid: 0b8f, resourceVersion: '7'}\n\
                spec: {containers: [{name: c, image: i}]}\n";
    let labelled = json!([{"name": "labelled", "expression": "has(object.metadata.labels) && object.metadata.labels.checked == 'yes'"}]);
    let (finished, report) = check_text("conditions", pods, policy(labelled));
    assert_eq!(finished.status, 1, "{}", finished.output);
    // `b` is left out by the condition; `c` is stored, and its audit does
    // not read conditions.
    assert_eq!(objects(&report), ["Pod shop/a", "Pod shop/c"]);
    let dir = scratch("conditions-authorizer");
    std::fs::write(dir.join("pods.yaml"), pods).unwrap();
    let asks = json!([{"name": "may", "expression": "authorizer.requestResource.check('create').allowed()"}]);
    let error = check(
        &module_path(),
        policy(asks),
        &[dir.to_str().unwrap()],
        Format::Json,
    )
    .unwrap_err();
    assert!(error.contains("`may` uses `authorizer`"), "{error}");
}

#[path = "../bench/src/dump.rs"]
#[allow(dead_code)]
mod dump;

/// One worker or several: every format prints the same, byte for byte, on
/// the repository's inputs and on a made-up cluster dump of several
/// batches (`check-bench`'s, with its derived objects).
#[test]
fn one_worker_and_many_print_alike() {
    let dir = scratch("workers");
    dump::write_file(&dir.join("dump.yaml"), |out| dump::write_list(1_200, out)).unwrap();
    let dump = dir.join("dump.yaml").display().to_string();
    let formats = [
        Format::Table,
        Format::Json,
        Format::Github,
        Format::Junit,
        Format::Sarif,
    ];
    let cases: [(&[&str], &[Format]); 3] = [
        (&["test_data", "examples"], &formats),
        (&["bench/peers/kube-prometheus"], &[Format::Json]),
        (&[dump.as_str()], &[Format::Json, Format::Table]),
    ];
    for (inputs, formats) in cases {
        for &format in formats {
            let run = |jobs: usize| {
                let mut command = command(
                    &module_path(),
                    manifest("bench/peers/kubewarden.yaml"),
                    inputs,
                    format,
                );
                command.jobs = jobs;
                printed(&command).unwrap()
            };
            let alone = run(1);
            assert!(alone.checked > 0, "{inputs:?}");
            assert_eq!(alone, run(3), "{inputs:?} {format:?}");
        }
    }
}
