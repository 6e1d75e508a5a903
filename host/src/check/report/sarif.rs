//! `--output sarif`: SARIF 2.1.0, which GitHub code scanning reads, so that
//! each rejection shows on its manifest's line in a pull request. The
//! policy is the tool; each rejected object is a result at the file and
//! line of the manifest it is (or is made from), an error in protect mode
//! and a warning in monitor mode; input that cannot be used is an error
//! result of a rule of its own. Built with `serde-sarif`, whose types follow
//! the SARIF schema.

use serde_sarif::sarif::{
    ArtifactLocation, Location, Message, MultiformatMessageString, PhysicalLocation, Region,
    ReportingDescriptor, Result as SarifResult, ResultLevel, Run, Sarif, Tool, ToolComponent,
};

use super::super::Outcome;
use super::super::manifests::Source;

/// The rule of input the check could not use.
const UNUSABLE: &str = "unusable-input";

/// Where SARIF tools resolve relative paths: the repository's root.
const SOURCE_ROOT: &str = "%SRCROOT%";

pub fn sarif(outcome: &Outcome, mode: &str, policy: &str) -> String {
    let rejection = match mode {
        "monitor" => ResultLevel::Warning,
        _ => ResultLevel::Error,
    };
    let mut results = Vec::new();
    for row in outcome.rows.iter().filter(|row| !row.accepted) {
        let made = match (row.derived_from.is_empty(), row.audited) {
            (true, false) => String::new(),
            (true, true) => " (judged as an audit)".to_string(),
            (false, _) => format!(" (made from {})", row.derived_from.join(" → ")),
        };
        let text = format!("{}{made}: {}", row.object, super::without_subject(row));
        results.push(result(policy, rejection, text, &row.source));
    }
    for unusable in &outcome.unusable {
        results.push(result(
            UNUSABLE,
            ResultLevel::Error,
            unusable.reason.clone(),
            &unusable.source,
        ));
    }
    let rules = vec![
        rule(
            policy,
            &format!("The annotations policy `{policy}` rejects the object"),
        ),
        rule(UNUSABLE, "The check cannot read the object"),
    ];
    let driver = ToolComponent::builder()
        .name(policy)
        .full_name(format!(
            "{policy} (annotations policy, policy-runner check)"
        ))
        .semantic_version(env!("CARGO_PKG_VERSION"))
        .information_uri("https://github.com/annotations-policy/annotations-policy")
        .rules(rules)
        .build();
    let run = Run::builder()
        .tool(Tool::builder().driver(driver).build())
        .results(results)
        .build();
    let log = Sarif::builder()
        .schema("https://json.schemastore.org/sarif-2.1.0.json")
        .version(serde_json::json!("2.1.0"))
        .runs(vec![run])
        .build();
    serde_json::to_string_pretty(&log).unwrap_or_default() + "\n"
}

fn rule(id: &str, description: &str) -> ReportingDescriptor {
    ReportingDescriptor::builder()
        .id(id)
        .short_description(
            MultiformatMessageString::builder()
                .text(description)
                .build(),
        )
        .build()
}

fn result(rule: &str, level: ResultLevel, text: String, source: &Source) -> SarifResult {
    let message = Message::builder().text(text).build();
    let builder = SarifResult::builder()
        .rule_id(rule)
        .level(level)
        .message(message);
    // Standard input is the artifact `-`, a relative reference resolved
    // against no base: its lines are the stream's.
    let mut artifact = ArtifactLocation::builder().uri(uri(&source.file)).build();
    if !source.file.starts_with('/') && source.file != "-" {
        artifact.uri_base_id = Some(SOURCE_ROOT.to_string());
    }
    let physical = PhysicalLocation::builder()
        .artifact_location(artifact)
        .region(Region::builder().start_line(source.line as i64).build())
        .build();
    builder
        .locations(vec![
            Location::builder().physical_location(physical).build(),
        ])
        .build()
}

/// A path as a URI reference: forward slashes, `./` dropped, and the
/// characters a URI may not hold percent-encoded.
fn uri(path: &str) -> String {
    let path = path.strip_prefix("./").unwrap_or(path);
    let mut out = String::with_capacity(path.len());
    for byte in path.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' | b'/' => {
                out.push(byte as char)
            }
            _ => out.push_str(&format!("%{byte:02X}")),
        }
    }
    match path.starts_with('/') {
        true => format!("file://{out}"),
        false => out,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_become_uri_references() {
        assert_eq!(uri("./deploy/web app.yaml"), "deploy/web%20app.yaml");
        assert_eq!(uri("/srv/k8s/ä.yaml"), "file:///srv/k8s/%C3%A4.yaml");
        assert_eq!(uri("a#b?.yaml"), "a%23b%3F.yaml");
    }

    /// Standard input is located too: the artifact `-`, with no base, at
    /// the stream's line.
    #[test]
    fn standard_input_is_the_artifact_dash() {
        let source = Source {
            file: "-".to_string(),
            line: 12,
            item: Some(3),
        };
        let result = result("rule", ResultLevel::Error, "text".to_string(), &source);
        let json = serde_json::to_value(&result).unwrap();
        let location = &json["locations"][0]["physicalLocation"];
        assert_eq!(location["artifactLocation"]["uri"], "-");
        assert!(location["artifactLocation"].get("uriBaseId").is_none());
        assert_eq!(location["region"]["startLine"], 12);
    }
}
