//! The packaging files agree with each other and with the code: one version
//! number, one set of rules, one settings form.

use std::path::Path;

use annotations_policy::criterion::Criterion;
use serde_yaml::Value;

fn yaml(file: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(file);
    let text = std::fs::read_to_string(&path).expect(file);
    serde_yaml::from_str(&text).expect(file)
}

fn embedded(text: &Value) -> Value {
    serde_yaml::from_str(text.as_str().expect("embedded YAML is a string")).expect("embedded YAML")
}

const VERSION: &str = env!("CARGO_PKG_VERSION");

#[test]
fn one_version_number_everywhere() {
    let metadata = yaml("metadata.yml");
    let artifacthub = yaml("artifacthub-pkg.yml");
    assert_eq!(
        metadata["annotations"]["io.kubewarden.policy.version"].as_str(),
        Some(VERSION)
    );
    assert_eq!(artifacthub["version"].as_str(), Some(VERSION));
    let tag = format!(":v{VERSION}");
    let image = artifacthub["containersImages"][0]["image"]
        .as_str()
        .unwrap();
    assert!(image.ends_with(&tag), "{image}");
    let release = format!("/v{VERSION}/");
    let links = artifacthub["links"].as_sequence().unwrap();
    let policy_link = links.iter().find(|l| l["name"] == "policy").unwrap();
    assert!(policy_link["url"].as_str().unwrap().contains(&release));
    assert!(artifacthub["install"].as_str().unwrap().contains(&tag));
}

#[test]
fn metadata_declares_a_validating_wapc_policy_for_workloads() {
    let metadata = yaml("metadata.yml");
    assert_eq!(metadata["mutating"], Value::Bool(false));
    assert_eq!(metadata["backgroundAudit"], Value::Bool(true));
    assert_eq!(metadata["executionMode"].as_str(), Some("kubewarden-wapc"));
    assert_eq!(metadata["contextAwareResources"], Value::Sequence(vec![]));
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
    let annotations = &metadata["annotations"];
    for key in [
        "title",
        "description",
        "author",
        "url",
        "source",
        "license",
        "ociUrl",
        "severity",
    ] {
        let key = format!("io.kubewarden.policy.{key}");
        assert!(
            annotations[key.as_str()]
                .as_str()
                .is_some_and(|v| !v.is_empty()),
            "{key}"
        );
    }
    assert_eq!(
        annotations["io.kubewarden.policy.category"].as_str(),
        Some("Resource validation")
    );
    assert_eq!(
        annotations["io.kubewarden.policy.license"].as_str(),
        Some("Apache-2.0")
    );
}

#[test]
fn artifacthub_repeats_the_rules_and_the_settings_form() {
    let metadata = yaml("metadata.yml");
    let artifacthub = yaml("artifacthub-pkg.yml");
    let annotations = &artifacthub["annotations"];
    assert_eq!(
        embedded(&annotations["kubewarden/rules"]),
        metadata["rules"]
    );
    assert_eq!(
        embedded(&annotations["kubewarden/questions-ui"]),
        yaml("questions-ui.yml")
    );
    assert_eq!(annotations["kubewarden/mutation"].as_str(), Some("false"));
}

#[test]
fn the_settings_form_offers_the_six_criteria() {
    let questions = yaml("questions-ui.yml");
    let questions = questions["questions"].as_sequence().unwrap();
    let criteria = questions
        .iter()
        .find(|q| q["variable"] == "criteria")
        .unwrap();
    let options: Vec<&str> = criteria["options"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|o| o.as_str().unwrap())
        .collect();
    let names: Vec<&str> = Criterion::ALL.iter().map(|c| c.name()).collect();
    assert_eq!(options, names);
    assert_eq!(criteria["type"].as_str(), Some("enum"));
    let values = questions
        .iter()
        .find(|q| q["variable"] == "values")
        .unwrap();
    assert_eq!(values["type"].as_str(), Some("array["));
}
