//! `policy-runner test`: the project's own suites (`tests/suites/`) pass and
//! keep to the test file's schema, a suite that expects the wrong things
//! fails with each reason, what cannot be used is an error (exit status 2),
//! and the report is the same on one core as on every core.

mod common;
#[path = "../evaluator/tests/common/mod.rs"]
mod policies;

use std::path::{Path, PathBuf};

use common::{module_path, root};
use policy_host::suite::{Command, Format, Outcome};
use serde_json::Value;

fn command(paths: &[&Path], format: Format) -> Command {
    // The suites name the module at the root, and the evaluator's mutating
    // test policy: built fresh first.
    module_path();
    policies::built();
    Command {
        paths: paths.iter().map(|p| p.to_path_buf()).collect(),
        file_name: policy_host::suite::file::FILE_NAME.to_string(),
        run: None,
        fail_only: false,
        format,
        jobs: 0,
        module: None,
        // A store of the test's own, empty, and never fetched into: the
        // suites map their modules, and read nothing of the user's.
        store: policy_host::modules::Store {
            root: Some(std::env::temp_dir().join("policy-runner-suites-no-store")),
            offline: true,
        },
        limits: Default::default(),
    }
}

fn suites() -> PathBuf {
    root().join("tests/suites")
}

/// The suite that must fail, under a name of its own so that a walk for
/// `policy-test.yaml` (`policy-runner test` at the root) leaves it out.
fn failing() -> PathBuf {
    root().join("tests/suites-failing/expects-the-wrong-things.yaml")
}

fn outcome(paths: &[&Path]) -> Outcome {
    command(paths, Format::Table).outcome()
}

/// Every suite runs, every expectation is met, and every suite directory
/// has results of its own.
#[test]
fn the_projects_suites_pass() {
    let finished = command(&[&suites()], Format::Table).run();
    assert_eq!(
        (finished.status, &finished.said),
        (0, &Vec::<String>::new()),
        "{}",
        finished.output
    );
    let outcome = outcome(&[&suites()]);
    for entry in std::fs::read_dir(suites()).unwrap() {
        let dir = entry.unwrap().path();
        let file = dir.join("policy-test.yaml").display().to_string();
        let rows = outcome.rows.iter().filter(|r| r.file == file).count();
        assert!(rows > 0, "{} has no result", dir.display());
    }
    // Each verdict is expected somewhere, and each operation and the audit
    // are exercised.
    for verdict in ["pass", "fail", "skip", "warn"] {
        assert!(
            outcome.rows.iter().any(|r| r.expected.as_str() == verdict),
            "no suite expects {verdict}"
        );
    }
    for operation in ["CREATE", "UPDATE", "DELETE", "audit"] {
        assert!(
            outcome.rows.iter().any(|r| r.operation == operation),
            "no suite sends {operation}"
        );
    }
    assert!(
        outcome.rows.iter().any(|r| r.policy.contains('/')),
        "no group member"
    );
}

/// Each suite reads as the JSON Schema that `docs/test.md` links says, and
/// the schema refuses what the reader refuses.
#[test]
fn the_suites_keep_to_the_schema() {
    let schema: Value = serde_json::from_str(
        &std::fs::read_to_string(root().join("docs/policy-test.schema.json")).unwrap(),
    )
    .unwrap();
    jsonschema::meta::validate(&schema).expect("a valid JSON Schema");
    let validator = jsonschema::validator_for(&schema).unwrap();
    let mut files = 0;
    for entry in walkdir::WalkDir::new(suites()) {
        let entry = entry.unwrap();
        if entry.file_name() != "policy-test.yaml" {
            continue;
        }
        let text = std::fs::read_to_string(entry.path()).unwrap();
        let value: Value = yaml_serde::from_str(&text).unwrap();
        let errors: Vec<String> = validator
            .iter_errors(&value)
            .map(|e| e.to_string())
            .collect();
        assert!(errors.is_empty(), "{}: {errors:?}", entry.path().display());
        files += 1;
    }
    assert!(files >= 5, "only {files} suites");
    let valid: Value = yaml_serde::from_str(&std::fs::read_to_string(failing()).unwrap()).unwrap();
    assert!(validator.is_valid(&valid));
    let broken = |change: &dyn Fn(&mut Value)| {
        let mut value = valid.clone();
        change(&mut value);
        value
    };
    let refused = [
        broken(&|v| v["userinfo"] = "alice.yaml".into()),
        broken(&|v| v["results"] = Value::Array(Vec::new())),
        broken(&|v| v["results"][0]["result"] = "passed".into()),
        broken(&|v| {
            v["results"][0]["result"] = "pass".into();
            v["results"][0]["message"] = "x".into();
        }),
        broken(&|v| {
            v["results"][0]["audit"] = true.into();
            v["results"][0]["userInfo"] = serde_json::json!({"username": "u"});
        }),
    ];
    for value in refused {
        assert!(!validator.is_valid(&value), "{value}");
    }
}

/// A suite that expects the wrong things fails, one row for each, with
/// what to fix.
#[test]
fn a_suite_that_expects_the_wrong_things_fails_with_each_reason() {
    let failing = failing();
    let finished = command(&[&failing], Format::Table).run();
    assert_eq!(finished.status, 1, "{}", finished.output);
    let outcome = outcome(&[&failing]);
    assert!(outcome.errors.is_empty(), "{:?}", outcome.errors);
    let reasons: Vec<&str> = outcome
        .rows
        .iter()
        .filter(|r| !r.passed)
        .map(|r| r.reason.as_str())
        .collect();
    assert_eq!(reasons.len(), 5, "{reasons:#?}");
    for wanted in [
        "no policy named",
        "did you mean",
        "among the resources",
        "the message does not match",
        "the object as mutated is not the one in",
    ] {
        assert!(
            reasons.iter().any(|r| r.contains(wanted)),
            "no reason says {wanted:?}: {reasons:#?}"
        );
    }
    // The wrong expectation: the module decided otherwise.
    assert!(
        outcome
            .rows
            .iter()
            .any(|r| !r.passed && r.got.is_some() && r.got != Some(r.expected)),
        "{reasons:#?}"
    );
}

/// One core or every core: the same report, byte for byte.
#[test]
fn one_core_and_every_core_report_alike() {
    let paths = [suites(), failing()];
    let paths: Vec<&Path> = paths.iter().map(PathBuf::as_path).collect();
    let mut alone = command(&paths, Format::Json);
    alone.jobs = 1;
    let mut parallel = command(&paths, Format::Json);
    parallel.jobs = 4;
    assert_eq!(alone.run(), parallel.run());
}

/// JUnit that a CI system reads: `testsuites`, a `testsuite` a test file
/// whose counts agree with its cases, a `testcase` a row, a `failure` in
/// each row that failed.
#[test]
fn junit_reads_back_as_the_rows() {
    use quick_xml::events::Event;
    let paths = [suites(), failing()];
    let paths: Vec<&Path> = paths.iter().map(PathBuf::as_path).collect();
    let finished = command(&paths, Format::Junit).run();
    let outcome = outcome(&paths);
    let mut reader = quick_xml::Reader::from_str(&finished.output);
    let mut open: Vec<String> = Vec::new();
    // Each suite's stated (tests, failures), and what it holds.
    let mut stated = Vec::new();
    let mut held: Vec<(usize, usize)> = Vec::new();
    loop {
        let event = reader.read_event().expect("well-formed XML");
        let (element, empty) = match &event {
            Event::Eof => break,
            Event::End(_) => {
                open.pop();
                continue;
            }
            Event::Start(e) => (e, false),
            Event::Empty(e) => (e, true),
            _ => continue,
        };
        let name = String::from_utf8(element.name().as_ref().to_vec()).unwrap();
        let attribute = |name: &str| {
            element
                .try_get_attribute(name)
                .unwrap()
                .map(|a| a.unescape_value().unwrap().into_owned())
        };
        let parent = open.last().map(String::as_str).unwrap_or_default();
        match name.as_str() {
            "testsuites" => assert_eq!(parent, ""),
            "testsuite" => {
                assert_eq!(parent, "testsuites");
                let count = |n: &str| attribute(n).unwrap().parse::<usize>().unwrap();
                stated.push((count("tests"), count("failures")));
                held.push((0, 0));
            }
            "testcase" => {
                assert_eq!(parent, "testsuite");
                assert!(attribute("name").is_some() && attribute("classname").is_some());
                held.last_mut().unwrap().0 += 1;
            }
            "failure" => {
                assert_eq!(parent, "testcase");
                assert!(attribute("message").is_some() && attribute("type").is_some());
                held.last_mut().unwrap().1 += 1;
            }
            other => panic!("unexpected element {other}"),
        }
        if !empty {
            open.push(name);
        }
    }
    assert_eq!(stated, held);
    let cases: usize = held.iter().map(|(cases, _)| cases).sum();
    let failures: usize = held.iter().map(|(_, failures)| failures).sum();
    assert_eq!((cases, failures), (outcome.rows.len(), outcome.failed()));
    assert!(failures > 0);
}

/// What cannot be used is an error with its file and what is wrong: exit
/// status 2, and the other files still run.
#[test]
fn what_cannot_be_used_is_an_error_that_names_it() {
    let dir = std::env::temp_dir().join(format!("suites-errors-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let module = module_path();
    let write = |name: &str, modules: &str, resources: &str| {
        let sub = dir.join(name);
        std::fs::create_dir_all(&sub).unwrap();
        std::fs::copy(
            root().join("examples/cluster-admission-policy.yaml"),
            sub.join("policy.yaml"),
        )
        .unwrap();
        std::fs::copy(&module, sub.join("policy.wasm")).unwrap();
        std::fs::copy(
            root().join("examples/manifests/web.yaml"),
            sub.join("web.yaml"),
        )
        .unwrap();
        std::fs::write(
            sub.join("policy-test.yaml"),
            format!(
                "apiVersion: {}\nkind: Test\npolicies: [policy.yaml]\nmodules: {modules}\n\
                 resources: [{resources}]\nresults:\n  - {{policy: require-owner, kind: Deployment, \
                 resources: [web], result: pass}}\n",
                policy_host::suite::file::API_VERSION
            ),
        )
        .unwrap();
    };
    let map =
        |file: &str| format!("{{ghcr.io/annotations-policy/policies/annotations:v0.5.0: {file}}}");
    write("passes", &map("policy.wasm"), "web.yaml");
    write("no-module", "{}", "web.yaml");
    write(
        "absolute-module",
        &map(&module.display().to_string()),
        "web.yaml",
    );
    write("not-a-module", &map("policy.yaml"), "web.yaml");
    write("missing-resource", &map("policy.wasm"), "app.yaml");
    let outcome = outcome(&[&dir, &dir.join("nowhere")]);
    let errors = outcome.errors.join("\n");
    for wanted in [
        "or map it to a file under `modules`",
        "absolute path",
        "not a WebAssembly module",
        "app.yaml",
        "nowhere: no such file or directory",
    ] {
        assert!(
            errors.contains(wanted),
            "no error says {wanted:?}:\n{errors}"
        );
    }
    assert_eq!(outcome.errors.len(), 5, "{errors}");
    // The usable file ran.
    assert_eq!((outcome.rows.len(), outcome.passed()), (1, 1));
    assert_eq!(outcome.status(), 2);
    let empty = dir.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let outcome = self::outcome(&[&empty]);
    assert!(outcome.errors[0].contains("no test file (`policy-test.yaml`) found"));
    assert_eq!(outcome.status(), 2);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The first test file of `docs/test.md` ("A first test file"), beside the
/// files it names, passes, and its output is the one the page shows.
#[test]
fn the_first_test_file_of_the_test_page_passes_as_shown() {
    let page = std::fs::read_to_string(root().join("docs/test.md")).unwrap();
    let section = &page[page.find("## A first test file").expect("the section")..];
    let block = |fence: &str| {
        let start = section.find(fence).expect(fence) + fence.len();
        section[start..start + section[start..].find("```").unwrap()].to_string()
    };
    let dir = std::env::temp_dir().join(format!("suites-readme-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("manifests")).unwrap();
    std::fs::write(dir.join("policy-test.yaml"), block("```yaml\n")).unwrap();
    std::fs::copy(
        root().join("examples/cluster-admission-policy.yaml"),
        dir.join("policy.yaml"),
    )
    .unwrap();
    std::fs::copy(module_path(), dir.join("annotated-policy.wasm")).unwrap();
    for entry in std::fs::read_dir(root().join("examples/manifests")).unwrap() {
        let path = entry.unwrap().path();
        std::fs::copy(&path, dir.join("manifests").join(path.file_name().unwrap())).unwrap();
    }
    let outcome = outcome(&[&dir]);
    assert_eq!(outcome.status(), 0, "{:?}", outcome.errors);
    // As printed off a terminal with no `COLUMNS`: as wide as the rows.
    let printed = policy_host::suite::report::table_for(&outcome, false, None, false);
    let shown = block("```console\n$ policy-runner test\n");
    assert_eq!(printed, shown);
    let _ = std::fs::remove_dir_all(&dir);
}

/// `check` and `test` read a policy alike: of every object a suite sends as
/// a plain CREATE, `check` with the same policy over the same resources
/// judges what the suite got (pass, or a rejection), and leaves out what it
/// skipped. (A stored object is left aside: `check` judges it as an audit
/// by itself, `test` only when told.)
#[test]
fn check_judges_and_leaves_out_as_the_suites_do() {
    use policy_host::check::{Command as Check, PolicySource};
    use policy_host::suite::file::{TestFile, Verdict};
    let outcome = outcome(&[&suites()]);
    let mut compared = 0;
    for row in &outcome.rows {
        assert!(row.passed, "{row:?}");
    }
    let mut files: Vec<&str> = outcome.rows.iter().map(|r| r.file.as_str()).collect();
    files.dedup();
    for file in files {
        let test = TestFile::read(Path::new(file)).unwrap();
        // A suite with mutating policies judges each object as they leave
        // it, which one policy's check cannot: tests/set.rs checks the
        // mutation suite's policies and objects as a set.
        let mutating = test.policies.iter().any(|path| {
            let text = std::fs::read_to_string(path).unwrap();
            policy_manifests::documents(&text)
                .into_iter()
                .any(|(_, manifest)| manifest.unwrap()["spec"]["mutating"] == true)
        });
        if mutating {
            continue;
        }
        for path in &test.policies {
            let text = std::fs::read_to_string(path).unwrap();
            for (_, manifest) in policy_manifests::documents(&text) {
                let manifest = manifest.unwrap();
                let name = manifest["metadata"]["name"].as_str().unwrap().to_string();
                let check = Check {
                    module: Some(module_path()),
                    store: Default::default(),
                    inputs: test
                        .resources
                        .iter()
                        .map(|p| p.display().to_string())
                        .collect(),
                    policy: PolicySource::Manifest(path.clone(), manifest),
                    namespace: None,
                    kubectl_apply: false,
                    derive: true,
                    format: policy_host::check::Format::Json,
                    only_rejected: false,
                    strict: false,
                    hidden: false,
                    jobs: 0,
                    evaluation: Default::default(),
                };
                let mut output = Vec::new();
                check.run(|_, _| {}, &mut output).unwrap();
                let report: Value = serde_json::from_slice(&output).unwrap();
                let judged = |object: &str| {
                    report["results"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .find(|r| r["object"] == object)
                        .cloned()
                };
                let plain = outcome.rows.iter().filter(|r| {
                    r.file == file
                        && r.policy == name
                        && r.operation == "CREATE"
                        && r.sender.is_none()
                });
                for row in plain {
                    let judged = judged(&row.object);
                    if judged.as_ref().is_some_and(|j| j["audit"] == true) {
                        continue;
                    }
                    let check_says = match judged {
                        None => Verdict::Skip,
                        Some(j) if j["allowed"] == true => Verdict::Pass,
                        Some(_) if report["mode"] == "monitor" => Verdict::Warn,
                        Some(_) => Verdict::Fail,
                    };
                    assert_eq!(
                        Some(check_says),
                        row.got,
                        "{file}: {} {}",
                        row.policy,
                        row.object
                    );
                    compared += 1;
                }
            }
        }
    }
    assert!(compared >= 30, "only {compared} rows compared");
}

/// What a test cannot know is an error, never a guess: a namespace's labels
/// that no Namespace among the resources gives; a `--run` that leaves every
/// result out; and a module mapped for no policy is said.
#[test]
fn what_a_test_cannot_know_is_an_error() {
    let dir = std::env::temp_dir().join(format!("suites-unknown-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(module_path(), dir.join("policy.wasm")).unwrap();
    std::fs::write(
        dir.join("policy.yaml"),
        "apiVersion: policies.kubewarden.io/v1\nkind: ClusterAdmissionPolicy\nmetadata: {name: prod-only}\n\
         spec:\n  module: m\n  namespaceSelector: {matchLabels: {env: prod}}\n  rules:\n  \
         - {apiGroups: [''], apiVersions: [v1], resources: [pods], operations: [CREATE]}\n  \
         settings: {criteria: containsAllOf, values: [example.com/owner]}\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("pod.yaml"),
        "apiVersion: v1\nkind: Pod\nmetadata: {name: web, namespace: shop}\nspec: {containers: [{name: c, image: i}]}\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("policy-test.yaml"),
        format!(
            "apiVersion: {}\nkind: Test\nmetadata: {{name: unknowable}}\npolicies: [policy.yaml]\n\
             modules: {{m: policy.wasm, unused: policy.wasm}}\nresources: [pod.yaml]\n\
             results:\n  - {{policy: prod-only, kind: Pod, resources: [shop/web], result: skip}}\n",
            policy_host::suite::file::API_VERSION
        ),
    )
    .unwrap();
    let outcome = outcome(&[&dir]);
    assert_eq!(outcome.status(), 2);
    let errors = outcome.errors.join("\n");
    assert!(
        errors.contains("Pod shop/web") && errors.contains("add the Namespace to the resources"),
        "{errors}"
    );
    assert_eq!(outcome.notes.len(), 1, "{:?}", outcome.notes);
    assert!(
        outcome.notes[0].contains("`modules` maps `unused`"),
        "{:?}",
        outcome.notes
    );
    // Given the Namespace, the test knows, and passes.
    std::fs::write(
        dir.join("namespace.yaml"),
        "apiVersion: v1\nkind: Namespace\nmetadata: {name: shop, labels: {env: dev}}\n",
    )
    .unwrap();
    let test = std::fs::read_to_string(dir.join("policy-test.yaml")).unwrap();
    std::fs::write(
        dir.join("policy-test.yaml"),
        test.replace("[pod.yaml]", "[pod.yaml, namespace.yaml]"),
    )
    .unwrap();
    assert_eq!(self::outcome(&[&dir]).status(), 0);
    let mut filtered = command(&[&dir], Format::Table);
    filtered.run = Some(regex::Regex::new("nothing-matches").unwrap());
    let outcome = filtered.outcome();
    assert_eq!((outcome.status(), outcome.left_out), (2, 1));
    assert!(outcome.errors[0].contains("--run `nothing-matches` matches no test and no object"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// A module the test file does not map is found in kwctl's store, as the
/// policy names it; where the store lacks it, the error names the pull.
#[test]
fn a_module_the_file_does_not_map_comes_from_kwctls_store() {
    let dir = std::env::temp_dir().join(format!("suites-store-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let set = root().join("test_data/set");
    std::fs::copy(
        set.join("policies/require-owner.yaml"),
        dir.join("policy.yaml"),
    )
    .unwrap();
    std::fs::copy(set.join("manifests/shop.yaml"), dir.join("shop.yaml")).unwrap();
    std::fs::write(
        dir.join("policy-test.yaml"),
        "apiVersion: test.annotations-policy.github.io/v1alpha1\nkind: Test\n\
         policies: [policy.yaml]\nresources: [shop.yaml]\nresults:\n\
         - {policy: require-owner, kind: Pod, resources: [legacy/old], result: fail}\n",
    )
    .unwrap();
    let store = dir.join("store");
    let mut command = command(&[&dir.join("policy-test.yaml")], Format::Table);
    command.store = policy_host::modules::Store {
        root: Some(store.clone()),
        offline: true,
    };
    let missing = command.run();
    assert_eq!(missing.status, 2, "{}", missing.output);
    assert!(
        missing.said.iter().any(|said| said
            .contains("kwctl pull registry://registry.test:5000/policies/annotations:v1")),
        "{:?}",
        missing.said
    );
    let at = store.join("registry/registry.test:5000/policies");
    std::fs::create_dir_all(&at).unwrap();
    std::fs::copy(module_path(), at.join("annotations:v1")).unwrap();
    let found = command.run();
    assert_eq!(
        (found.status, &found.said),
        (0, &Vec::new()),
        "{}",
        found.output
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
