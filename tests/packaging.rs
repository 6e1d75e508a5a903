//! What kwctl and Artifact Hub read, checked without them: one version
//! number everywhere, the metadata `kwctl annotate` and `kwctl scaffold
//! artifacthub` need in the form they accept, `artifacthub-pkg.yml` as kwctl
//! would write it, and every criterion wherever a list of them is written by
//! hand.

use std::path::{Path, PathBuf};
use std::process::Command;

use policy_core::criterion::Criterion;
use policy_core::kubernetes_keys;
use policy_core::settings::Field;
use yaml_serde::{Mapping, Value};

fn path(file: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(file)
}

fn text(file: &str) -> String {
    std::fs::read_to_string(path(file)).expect(file)
}

fn yaml(file: &str) -> Value {
    yaml_serde::from_str(&text(file)).expect(file)
}

fn embedded(text: &Value) -> Value {
    yaml_serde::from_str(text.as_str().expect("embedded YAML is a string")).expect("embedded YAML")
}

const VERSION: &str = env!("CARGO_PKG_VERSION");

fn annotation<'a>(metadata: &'a Value, key: &str) -> &'a str {
    metadata["annotations"][key]
        .as_str()
        .unwrap_or_else(|| panic!("metadata.yml lacks the annotation {key}"))
}

#[test]
fn one_version_number_everywhere() {
    // `policy-runner --version`, released beside the module, and the
    // decision both are built from.
    for manifest in ["host/Cargo.toml", "core/Cargo.toml"] {
        let text = text(manifest);
        let version = text
            .lines()
            .find_map(|line| line.strip_prefix("version = "))
            .unwrap_or_else(|| panic!("{manifest} has a version"));
        assert_eq!(version, format!("\"{VERSION}\""), "{manifest}");
    }
    let metadata = yaml("metadata.yml");
    assert_eq!(
        annotation(&metadata, "io.kubewarden.policy.version"),
        VERSION
    );
    assert_eq!(
        yaml("artifacthub-pkg.yml")["version"].as_str(),
        Some(VERSION)
    );
    let image = format!("policies/annotations:v{VERSION}");
    for file in [
        "README.md",
        "docs/deploying.md",
        "docs/test.md",
        "examples/cluster-admission-policy.yaml",
        "examples/policy-group.yaml",
    ] {
        let text = text(file);
        let tags: Vec<&str> = text
            .match_indices("policies/annotations:v")
            .map(|(at, _)| &text[at..])
            .collect();
        assert!(!tags.is_empty(), "{file} names no image");
        for tag in tags {
            assert!(
                tag.starts_with(&image),
                "{file}: {}",
                &tag[..40.min(tag.len())]
            );
        }
    }
}

/// The release workflow's check: the tag must be the version.
#[test]
fn a_release_tag_must_name_the_version() {
    let check = |tag: &str| {
        Command::new(path(".ci/check-tag"))
            .arg(tag)
            .output()
            .expect("run .ci/check-tag")
    };
    let right = check(&format!("v{VERSION}"));
    assert!(right.status.success(), "{right:?}");
    for wrong in [
        VERSION.to_string(),
        "v0.0.0".to_string(),
        format!("v{VERSION}.1"),
    ] {
        let output = check(&wrong);
        assert!(!output.status.success(), "{wrong} was accepted");
        assert!(
            String::from_utf8_lossy(&output.stderr).contains(&wrong),
            "{output:?}"
        );
    }
}

/// An RFC 5322 address list as kwctl reads `io.kubewarden.policy.author`:
/// `Name <local@domain>`, comma-separated, each address syntactically valid.
/// `Err` says which part is wrong.
fn maintainers(list: &str) -> Result<Vec<(String, String)>, String> {
    let atext = |c: char| c.is_ascii_alphanumeric() || "!#$%&'*+-/=?^_`{|}~".contains(c);
    let dot_atom = |s: &str| {
        !s.is_empty()
            && s.split('.')
                .all(|atom| !atom.is_empty() && atom.chars().all(atext))
    };
    let label = |l: &str| {
        (1..=63).contains(&l.len())
            && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
            && !l.starts_with('-')
            && !l.ends_with('-')
    };
    list.split(',')
        .map(|entry| {
            let entry = entry.trim();
            let (name, rest) = entry
                .split_once('<')
                .ok_or_else(|| format!("{entry:?} is not of the form `Name <email>`"))?;
            let address = rest
                .strip_suffix('>')
                .ok_or_else(|| format!("{entry:?} does not end with `>`"))?;
            let name = name.trim();
            if name.is_empty() || !name.chars().all(|c| atext(c) || c == ' ' || c == '.') {
                return Err(format!(
                    "{entry:?}: the name must be words before the address"
                ));
            }
            let (local, domain) = address
                .split_once('@')
                .ok_or_else(|| format!("{address:?} has no @"))?;
            if !dot_atom(local) {
                return Err(format!("{address:?}: invalid local part"));
            }
            let labels: Vec<&str> = domain.split('.').collect();
            if labels.len() < 2 || !labels.iter().all(|l| label(l)) {
                return Err(format!("{address:?}: invalid domain"));
            }
            Ok((name.to_string(), address.to_string()))
        })
        .collect()
}

#[test]
fn the_address_rule_is_the_one_kwctl_applies() {
    assert_eq!(
        maintainers("Tux Tuxedo <tux@example.com>, Pidgin <pidgin@example.com>"),
        Ok(vec![
            ("Tux Tuxedo".into(), "tux@example.com".into()),
            ("Pidgin".into(), "pidgin@example.com".into())
        ])
    );
    for bad in [
        "Annotations policy developers",
        "Foo foo@example.com",
        "Bar <#$%#$%>",
        "Bar <bar@>",
        "Bar <bar@localhost>",
        "<bar@example.com>",
        "Foo <foo@example.com>,,Bar <bar@example.com>",
        "Bar <bar@example.com",
    ] {
        assert!(maintainers(bad).is_err(), "{bad}");
    }
}

#[test]
fn metadata_holds_what_kwctl_annotate_and_scaffold_need() {
    let metadata = yaml("metadata.yml");
    assert_eq!(metadata["mutating"], Value::Bool(false));
    assert_eq!(metadata["backgroundAudit"], Value::Bool(true));
    assert_eq!(metadata["executionMode"].as_str(), Some("kubewarden-wapc"));
    assert_eq!(metadata["contextAwareResources"], Value::Sequence(vec![]));
    let author = annotation(&metadata, "io.kubewarden.policy.author");
    maintainers(author).unwrap_or_else(|e| panic!("io.kubewarden.policy.author: {e}"));
    for key in [
        "io.kubewarden.policy.title",
        "io.kubewarden.policy.description",
        "io.kubewarden.policy.ociUrl",
        "io.kubewarden.policy.severity",
        "io.artifacthub.displayName",
        "io.artifacthub.resources",
    ] {
        assert!(!annotation(&metadata, key).trim().is_empty(), "{key}");
    }
    for key in ["io.kubewarden.policy.url", "io.kubewarden.policy.source"] {
        assert!(annotation(&metadata, key).starts_with("https://"), "{key}");
    }
    let keywords = annotation(&metadata, "io.artifacthub.keywords");
    assert!(
        keywords.split(',').all(|k| !k.trim().is_empty()),
        "{keywords}"
    );
    assert_eq!(
        annotation(&metadata, "io.kubewarden.policy.license"),
        "Apache-2.0"
    );
    assert_eq!(
        annotation(&metadata, "io.kubewarden.policy.category"),
        "Resource validation"
    );
    let mut resources: Vec<String> = Vec::new();
    for rule in metadata["rules"].as_sequence().unwrap() {
        let group = rule["apiGroups"][0].as_str().unwrap();
        let operations: Vec<&str> = rule["operations"]
            .as_sequence()
            .unwrap()
            .iter()
            .map(|o| o.as_str().unwrap())
            .collect();
        assert_eq!(operations, ["CREATE", "UPDATE"]);
        for resource in rule["resources"].as_sequence().unwrap() {
            resources.push(format!("{group}/{}", resource.as_str().unwrap()));
        }
    }
    resources.sort();
    assert_eq!(
        resources,
        [
            "/pods",
            "/replicationcontrollers",
            "apps/daemonsets",
            "apps/deployments",
            "apps/replicasets",
            "apps/statefulsets",
            "batch/cronjobs",
            "batch/jobs",
        ]
    );
}

/// `artifacthub-pkg.yml` as `kwctl scaffold artifacthub` writes it from
/// `metadata.yml` and `questions-ui.yml`, field for field; only `createdAt`
/// (the time it was written) and `install` (kwctl's own text) are checked
/// apart.
#[test]
fn artifacthub_pkg_is_what_kwctl_scaffolds() {
    let metadata = yaml("metadata.yml");
    let annotation = |key: &str| annotation(&metadata, key).to_string();
    let source = annotation("io.kubewarden.policy.source");
    let image = format!("{}:v{VERSION}", annotation("io.kubewarden.policy.ociUrl"));
    let maintainers: Vec<Value> = maintainers(&annotation("io.kubewarden.policy.author"))
        .unwrap()
        .into_iter()
        .map(|(name, email)| {
            let mut m = Mapping::new();
            m.insert("name".into(), name.into());
            m.insert("email".into(), email.into());
            Value::Mapping(m)
        })
        .collect();
    let expected = yaml_serde::to_value(serde_json::json!({
        "version": VERSION,
        "name": annotation("io.kubewarden.policy.title"),
        "displayName": annotation("io.artifacthub.displayName"),
        "description": annotation("io.kubewarden.policy.description"),
        "license": annotation("io.kubewarden.policy.license"),
        "homeURL": annotation("io.kubewarden.policy.url"),
        "containersImages": [{"name": "policy", "image": image}],
        "keywords": annotation("io.artifacthub.keywords").split(',').map(str::trim).collect::<Vec<_>>(),
        "links": [
            {"name": "policy", "url": format!("{source}/releases/download/v{VERSION}/policy.wasm")},
            {"name": "source", "url": source},
        ],
        "maintainers": maintainers,
        "provider": {"name": "kubewarden"},
        "recommendations": [{"url": "https://artifacthub.io/packages/helm/kubewarden/kubewarden-controller"}],
    }))
    .unwrap();
    let mut actual = yaml("artifacthub-pkg.yml");
    let actual = actual.as_mapping_mut().unwrap();
    let created = actual.remove("createdAt").expect("createdAt");
    let created = created.as_str().unwrap_or_default();
    assert!(
        created.len() >= 20 && created.as_bytes()[10] == b'T',
        "createdAt {created:?}"
    );
    let install = actual.remove("install").expect("install");
    let install = install.as_str().unwrap();
    assert!(
        install.contains(&format!("kwctl pull {image}")),
        "{install}"
    );
    assert!(
        install.contains(&format!("registry://{image}")),
        "{install}"
    );
    let annotations = actual.remove("annotations").expect("annotations");
    for (key, value) in expected.as_mapping().unwrap() {
        assert_eq!(actual.get(key), Some(value), "{key:?}");
    }
    let extra: Vec<&Value> = actual
        .keys()
        .filter(|k| !expected.as_mapping().unwrap().contains_key(*k))
        .collect();
    assert!(extra.is_empty(), "fields kwctl does not write: {extra:?}");

    // kwctl leaves out `kubewarden/contextAwareResources` when the list is empty.
    let mut keys: Vec<&str> = annotations
        .as_mapping()
        .unwrap()
        .keys()
        .map(|k| k.as_str().unwrap())
        .collect();
    keys.sort();
    assert_eq!(
        keys,
        [
            "kubewarden/mutation",
            "kubewarden/questions-ui",
            "kubewarden/resources",
            "kubewarden/rules"
        ]
    );
    assert_eq!(annotations["kubewarden/mutation"].as_str(), Some("false"));
    assert_eq!(
        annotations["kubewarden/resources"].as_str(),
        Some(annotation("io.artifacthub.resources").as_str())
    );
    assert_eq!(
        embedded(&annotations["kubewarden/rules"]),
        metadata["rules"]
    );
    assert_eq!(
        embedded(&annotations["kubewarden/questions-ui"]),
        yaml("questions-ui.yml")
    );
}

/// The lists of criteria written by hand name every criterion: the settings
/// form, the truth table's header, and the end-to-end tests (the tables of
/// the README and `docs/deploying.md`, row by row, in
/// `every_criterion_has_its_row_in_each_readme_table`).
#[test]
fn every_criterion_is_offered_documented_and_tested() {
    let questions = yaml("questions-ui.yml");
    let questions = questions["questions"].as_sequence().unwrap();
    let question = |variable: &str| {
        questions
            .iter()
            .find(|q| q["variable"] == variable)
            .unwrap_or_else(|| panic!("questions-ui.yml lacks {variable}"))
    };
    let criteria = question(Field::Criteria.name());
    let options: Vec<&str> = criteria["options"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|o| o.as_str().unwrap())
        .collect();
    let names: Vec<&str> = Criterion::ALL.iter().map(|c| c.name()).collect();
    assert_eq!(options, names);
    assert_eq!(criteria["type"].as_str(), Some("enum"));
    assert_eq!(
        question(Field::Values.name())["type"].as_str(),
        Some("array[")
    );
    for flag in [
        Field::AllowExistingViolations,
        Field::AllowKubernetesBookkeeping,
    ] {
        assert_eq!(question(flag.name())["type"].as_str(), Some("boolean"));
        assert_eq!(question(flag.name())["default"], Value::Bool(true));
    }

    let readme = text("README.md");
    let header = format!("| resource annotations | {} |", names.join(" | "));
    assert!(
        readme.contains(&header),
        "the README's truth table lacks a column"
    );
    let e2e = text("e2e.bats");
    for name in names {
        for test in ["accepts", "rejects"] {
            let start = format!("@test \"{name}: {test}");
            assert!(
                e2e.contains(&start),
                "e2e.bats lacks a test that {name} {test}"
            );
        }
    }
}

/// The rows of the first table after `heading` in the README, as cells.
fn readme_rows(heading: &str) -> Vec<Vec<String>> {
    rows("README.md", heading)
}

/// The rows of the first table after `heading` in `file`, as cells.
fn rows(file: &str, heading: &str) -> Vec<Vec<String>> {
    let page = text(file);
    let start = page
        .find(heading)
        .unwrap_or_else(|| panic!("{file} lacks {heading:?}"));
    page[start..]
        .lines()
        .skip_while(|line| !line.starts_with('|'))
        .take_while(|line| line.starts_with('|'))
        .skip(2)
        .map(|row| {
            let row = row.trim().trim_matches('|');
            row.split('|').map(|cell| cell.trim().to_string()).collect()
        })
        .collect()
}

/// The `code` spans of a cell, in order.
fn code_spans(cell: &str) -> Vec<String> {
    cell.split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect()
}

/// The first column of the table after `heading` in the README: one `code`
/// span a row.
fn readme_table(heading: &str) -> Vec<String> {
    first_column("README.md", heading)
}

/// The first column of the table after `heading` in `file`: one `code` span
/// a row.
fn first_column(file: &str, heading: &str) -> Vec<String> {
    rows(file, heading)
        .iter()
        .map(|row| match &code_spans(&row[0])[..] {
            [one] => one.clone(),
            other => panic!("{file}: {heading}: a row names {other:?}"),
        })
        .collect()
}

fn criterion_names() -> Vec<String> {
    Criterion::ALL
        .iter()
        .map(|c| c.name().to_string())
        .collect()
}

/// Each table that speaks of every criterion has a row or column for each,
/// once, in the order of `Criterion::ALL`: the README's criteria table and
/// truth table, and the update table of `docs/deploying.md`.
#[test]
fn every_criterion_has_its_row_in_each_readme_table() {
    let names = criterion_names();
    let criteria = readme_rows("| criterion | the object is accepted when");
    let criteria: Vec<String> = criteria
        .iter()
        .map(|row| code_spans(&row[0])[0].clone())
        .collect();
    assert_eq!(criteria, names, "the criteria table");

    let truth = readme_rows("## Truth tables");
    assert_eq!(truth.len(), 8, "the truth table's rows");
    for row in &truth {
        assert_eq!(row.len(), 1 + names.len(), "a truth table row: {row:?}");
        assert!(
            row[1..].iter().all(|cell| cell == "A" || cell == "R"),
            "{row:?}"
        );
    }

    let updates = rows(
        "docs/deploying.md",
        "| criterion | the update passes when |",
    );
    let mut covered: Vec<String> = updates.iter().flat_map(|row| code_spans(&row[0])).collect();
    covered.sort();
    let mut expected = names.clone();
    expected.sort();
    assert_eq!(
        covered, expected,
        "the update table names each criterion once"
    );
}

/// The table of Kubernetes' own keys (`docs/kubernetes-keys.md`) is the set
/// in the code.
#[test]
fn the_kubernetes_keys_page_lists_them_as_the_code_does() {
    use kubernetes_keys::Writer;
    let (page, heading) = (
        "docs/kubernetes-keys.md",
        "# Annotations that Kubernetes and kubectl write themselves",
    );
    let mut listed: Vec<(String, String)> = first_column(page, heading)
        .into_iter()
        .zip(
            rows(page, heading)
                .iter()
                .map(|row| row[3].trim().to_string()),
        )
        .collect();
    let mut keys: Vec<(String, String)> = kubernetes_keys::KEYS
        .iter()
        .map(|entry| {
            let counts = match entry.writer {
                Writer::Anyone => "any request".to_string(),
                Writer::Node => "a node's requests".to_string(),
                Writer::Controller(controller) => match controller.account {
                    "job-controller" => "the job controller's requests".to_string(),
                    other => panic!("{page} names no column for {other}"),
                },
                Writer::AppArmorField => "where the value says what the field says".to_string(),
            };
            (entry.key.to_string(), counts)
        })
        .collect();
    keys.sort_unstable();
    listed.sort_unstable();
    assert_eq!(listed, keys);
}

/// Every setting is in the README's settings table, in the settings form,
/// and nothing else is.
#[test]
fn every_setting_is_documented_and_offered() {
    let fields = Field::ALL.map(Field::name);
    assert_eq!(readme_table("## Settings\n\n| field"), fields);
    let questions = yaml("questions-ui.yml");
    let variables: Vec<&str> = questions["questions"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|q| q["variable"].as_str().unwrap())
        .collect();
    assert_eq!(variables, fields);
}

/// The changelog says what this version changed.
#[test]
fn the_changelog_has_this_version() {
    let changelog = text("CHANGELOG.md");
    let first = changelog
        .lines()
        .find(|line| line.starts_with("## "))
        .expect("a version heading");
    assert_eq!(first, format!("## {VERSION}"));
}

/// `v1.31.0` as `1.31`.
fn minor(version: &str) -> String {
    let version = version.trim_start_matches('v');
    let mut parts = version.split('.');
    format!("{}.{}", parts.next().unwrap(), parts.next().unwrap())
}

/// The README's claims about Kubewarden versions, and those of
/// `docs/deploying.md`, are what CI runs: the end-to-end tests under the
/// oldest kwctl they say the policy supports and the newest, which the
/// release uses too.
#[test]
fn the_readme_claims_the_kubewarden_versions_ci_tests() {
    let ci = yaml(".github/workflows/ci.yml");
    let matrix = &ci["jobs"]["e2e-kwctl"]["strategy"]["matrix"]["kwctl"];
    let mut versions: Vec<(Vec<u32>, String)> = matrix
        .as_sequence()
        .expect("a kwctl matrix")
        .iter()
        .map(|v| {
            let v = v.as_str().unwrap().to_string();
            let key = v
                .trim_start_matches('v')
                .split('.')
                .map(|n| n.parse().unwrap())
                .collect();
            (key, v)
        })
        .collect();
    versions.sort();
    let (oldest, newest) = (&versions[0].1, &versions[versions.len() - 1].1);
    assert_ne!(oldest, newest, "CI tests two kwctl releases");
    // Words, whatever the line breaks.
    let words = |file: &str| text(file).split_whitespace().collect::<Vec<_>>().join(" ");
    let (readme, deploying) = (words("README.md"), words("docs/deploying.md"));
    for (file, page, claim) in [
        (
            "README.md",
            &readme,
            format!("runs on Kubewarden {} and later", minor(oldest)),
        ),
        (
            "README.md",
            &readme,
            format!("under kwctl {} and {})", minor(oldest), minor(newest)),
        ),
        (
            "docs/deploying.md",
            &deploying,
            format!(
                "the Kubewarden releases the policy supports, {} and later",
                minor(oldest)
            ),
        ),
    ] {
        assert!(page.contains(&claim), "{file} lacks {claim:?}");
    }
    let release = text(".github/workflows/release.yml");
    assert!(
        release.contains(&format!("kwctl-version: {newest}")),
        "the release runs the newest kwctl CI tests"
    );
}

/// The GitHub Action (action.yml) is composite, defaults to this release,
/// names only inputs it declares, runs the scripts the tests run
/// (e2e.bats), `check` or `test` as its `mode` says, and the release
/// attaches every file its install step downloads, each with its signature
/// bundle.
#[test]
fn the_action_uses_its_own_scripts_and_what_the_release_attaches() {
    let action = yaml("action.yml");
    assert_eq!(action["runs"]["using"], "composite");
    assert_eq!(
        action["inputs"]["version"]["default"],
        format!("v{VERSION}")
    );
    let declared: Vec<&str> = action["inputs"]
        .as_mapping()
        .expect("inputs")
        .keys()
        .map(|k| k.as_str().unwrap())
        .collect();
    let text = text("action.yml");
    for used in text.split("inputs.").skip(1) {
        let name: String = used
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
            .collect();
        assert!(
            declared.contains(&name.as_str()),
            "inputs.{name} is not declared"
        );
    }
    let mut scripts = Vec::new();
    for step in action["runs"]["steps"].as_sequence().expect("steps") {
        if let Some(run) = step["run"].as_str()
            && let Some(script) = run.strip_prefix("$GITHUB_ACTION_PATH/")
        {
            let mode = std::fs::metadata(path(script)).expect(script);
            assert!(
                std::os::unix::fs::PermissionsExt::mode(&mode.permissions()) & 0o111 != 0,
                "{script} is not executable"
            );
            scripts.push((script, step));
        }
    }
    let names: Vec<&str> = scripts.iter().map(|(script, _)| *script).collect();
    assert_eq!(
        names,
        [
            "scripts/action/install",
            "scripts/action/check",
            "scripts/action/test"
        ]
    );
    // `mode` picks one of check and test (check by default, and for any
    // other value, which scripts/action/check refuses); the status is the
    // one that ran, and the job fails on it.
    assert_eq!(action["inputs"]["mode"]["default"], "check");
    let (_, check) = scripts[1];
    let (_, test) = scripts[2];
    assert_eq!(check["id"], "check");
    assert_eq!(check["if"], "${{ inputs.mode != 'test' }}");
    assert_eq!(test["id"], "test");
    assert_eq!(test["if"], "${{ inputs.mode == 'test' }}");
    assert_eq!(check["env"]["MODE"], "${{ inputs.mode }}");
    let status = "steps.check.outputs.status || steps.test.outputs.status";
    assert_eq!(
        action["outputs"]["status"]["value"],
        format!("${{{{ {status} }}}}")
    );
    let fail = action["runs"]["steps"]
        .as_sequence()
        .unwrap()
        .last()
        .unwrap();
    assert_eq!(fail["if"], format!("${{{{ ({status}) != '0' }}}}"));
    assert!(fail["run"].as_str().unwrap().contains("exit 1"));
    // Each mode has its own default output: github is check's only.
    assert_eq!(action["inputs"]["output"]["default"], "");
    assert!(self::text("scripts/action/check").contains("${OUTPUT:-github}"));
    assert!(self::text("scripts/action/test").contains("output=${OUTPUT:-table}"));
    let install = self::text("scripts/action/install");
    assert!(
        install.contains("/platform\")"),
        "install asks scripts/action/platform"
    );
    assert!(install.contains("annotated-policy.wasm"));
    let release = self::text(".github/workflows/release.yml");
    let attached = release
        .split("gh release create")
        .nth(1)
        .expect("gh release create");
    // Every file it signs, each runner's included, with its bundle.
    assert!(release.contains("for file in policy-runner-* annotated-policy.wasm; do"));
    assert!(
        release.contains("cosign sign-blob --yes --bundle \"$file.bundle.sigstore\" \"$file\"")
    );
    // Each file once: the binaries, the module, SHA256SUMS and every
    // bundle (the runners' glob matches their bundles too).
    for file in [
        "files=(policy.wasm annotated-policy.wasm SHA256SUMS ./*.bundle.sigstore)",
        "for file in policy-runner-*; do",
        "*.bundle.sigstore) ;;",
        "*) files+=(\"$file\") ;;",
    ] {
        assert!(release.contains(file), "the release attaches {file}");
    }
    assert!(
        attached
            .trim_start()
            .starts_with("\"$TAG\" \"${files[@]}\"")
    );
}

/// Every platform a release carries: GitHub's RUNNER_OS and RUNNER_ARCH
/// (and uname's answer) pick the binary the release workflow builds for
/// its target, that `make dist` cross-builds under the same name, and that
/// `cargo binstall` fetches for that target. A platform with none is
/// refused by name.
#[test]
fn each_platform_gets_the_runner_built_for_it() {
    // (RUNNER_OS, RUNNER_ARCH, uname -s, uname -m, Rust target, file)
    let platforms = [
        (
            "Linux",
            "X64",
            "Linux",
            "x86_64",
            "x86_64-unknown-linux-musl",
            "policy-runner-linux-x86_64",
        ),
        (
            "Linux",
            "ARM64",
            "Linux",
            "aarch64",
            "aarch64-unknown-linux-musl",
            "policy-runner-linux-aarch64",
        ),
        (
            "macOS",
            "X64",
            "Darwin",
            "x86_64",
            "x86_64-apple-darwin",
            "policy-runner-darwin-x86_64",
        ),
        (
            "macOS",
            "ARM64",
            "Darwin",
            "arm64",
            "aarch64-apple-darwin",
            "policy-runner-darwin-aarch64",
        ),
        (
            "Windows",
            "X64",
            "MINGW64_NT-10.0-26100",
            "x86_64",
            "x86_64-pc-windows-msvc",
            "policy-runner-windows-x86_64.exe",
        ),
    ];
    let platform = |args: &[&str], env: &[(&str, &str)]| {
        let mut command = Command::new(path("scripts/action/platform"));
        command
            .args(args)
            .env_remove("RUNNER_OS")
            .env_remove("RUNNER_ARCH");
        command.envs(env.iter().copied());
        let output = command.output().expect("scripts/action/platform runs");
        (
            output.status.code(),
            String::from_utf8_lossy(&output.stdout).trim().to_string(),
            String::from_utf8_lossy(&output.stderr).to_string(),
        )
    };
    let release = self::text(".github/workflows/release.yml");
    let dist = self::text("scripts/dist");
    let manifest: toml::Value =
        toml::from_str(&self::text("host/Cargo.toml")).expect("host/Cargo.toml");
    let binstall = &manifest["package"]["metadata"]["binstall"];
    let repository = manifest["package"]["repository"]
        .as_str()
        .expect("a repository");
    assert_eq!(binstall["pkg-fmt"].as_str(), Some("bin"));
    for (os, arch, uname_s, uname_m, target, file) in platforms {
        let expected = (Some(0), file.to_string(), String::new());
        assert_eq!(
            platform(&[], &[("RUNNER_OS", os), ("RUNNER_ARCH", arch)]),
            expected,
            "{os} {arch}"
        );
        assert_eq!(
            platform(&[uname_s, uname_m], &[]),
            expected,
            "{uname_s} {uname_m}"
        );
        let name = file.strip_prefix("policy-runner-").unwrap();
        assert!(
            release.contains(&format!("{{ name: {name}, runner: "))
                && release.contains(&format!("target: {target} }}")),
            "the release workflow builds {file} for {target}"
        );
        let cross = target.replace("-msvc", "-gnu");
        assert!(
            dist.contains(&format!("{cross}) echo {file} ;;")),
            "make dist names {cross} {file}"
        );
        let url = binstall["overrides"]
            .get(target)
            .and_then(|o| o["pkg-url"].as_str())
            .or(binstall["pkg-url"].as_str())
            .expect("a pkg-url")
            .replace("{ repo }", repository)
            .replace("{ version }", env!("CARGO_PKG_VERSION"))
            .replace("{ target-arch }", target.split('-').next().unwrap());
        assert_eq!(
            url,
            format!(
                "{repository}/releases/download/v{}/{file}",
                env!("CARGO_PKG_VERSION")
            ),
            "cargo binstall on {target}"
        );
    }
    for (os, arch) in [
        ("Windows", "ARM64"),
        ("Linux", "ARM"),
        ("Linux", "X86"),
        ("FreeBSD", "amd64"),
    ] {
        let (status, out, err) = platform(&[os, arch], &[]);
        assert_eq!((status, out.as_str()), (Some(1), ""), "{os} {arch}");
        assert!(
            err.starts_with(&format!("no policy-runner is released for {os} on {arch}")),
            "{err}"
        );
    }
}

/// The pre-commit hooks: one runs the check on the staged manifests, the
/// other the test files, once, whenever a test file, a manifest or a
/// module is staged (the files of a test are its own: none is passed).
#[test]
fn the_pre_commit_hooks_check_manifests_and_run_the_tests() {
    let hooks = yaml(".pre-commit-hooks.yaml");
    let ids: Vec<&str> = hooks
        .as_sequence()
        .expect("a list of hooks")
        .iter()
        .map(|hook| hook["id"].as_str().expect("an id"))
        .collect();
    assert_eq!(ids, ["annotations-policy-check", "annotations-policy-test"]);
    let hook = &hooks[0];
    assert_eq!(hook["entry"], "policy-runner check");
    assert_eq!(hook["language"], "system");
    let files = hook["files"].as_str().unwrap();
    assert_eq!(files, r"\.(ya?ml|json)$");
    assert!(
        hook.get("pass_filenames").is_none(),
        "check judges the staged files"
    );
    let hook = &hooks[1];
    assert_eq!(hook["entry"], "policy-runner test");
    assert_eq!(hook["language"], "system");
    assert_eq!(hook["pass_filenames"], false);
    assert_eq!(hook["require_serial"], true);
    // pre-commit matches `files` with Python's re.search.
    let files = hook["files"].as_str().unwrap();
    let matches = |file: &str| {
        let output = Command::new("python3")
            .args([
                "-c",
                "import re, sys; sys.exit(0 if re.search(sys.argv[1], sys.argv[2]) else 1)",
            ])
            .args([files, file])
            .status()
            .expect("python3");
        output.success()
    };
    for staged in [
        "tests/suites/owner/policy-test.yaml",
        "deploy/web.yaml",
        "deploy/web.yml",
        "deploy/list.json",
        "policy/annotated-policy.wasm",
    ] {
        assert!(matches(staged), "{staged} does not run the tests");
    }
    for staged in ["README.md", "src/lib.rs", "policy-test.yaml.orig"] {
        assert!(!matches(staged), "{staged} runs the tests");
    }
}
