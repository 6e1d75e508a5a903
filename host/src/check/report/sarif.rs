//! `--output sarif`: SARIF 2.1.0, which GitHub code scanning reads, so that
//! each rejection shows on its manifest's line in a pull request. The
//! policy is the tool; each rejected object is a result at the file and
//! line of the manifest it is (or is made from), an error in protect mode
//! and a warning in monitor mode; input that cannot be used is an error
//! result of a rule of its own. Built with `serde-sarif`, whose types follow
//! the SARIF schema.

use std::io::{self, Write};

use serde_sarif::sarif::{
    ArtifactLocation, Location, Message, MultiformatMessageString, PhysicalLocation, Region,
    ReportingDescriptor, Result as SarifResult, ResultLevel, Run, Tool, ToolComponent,
};

use super::super::Outcome;
use policy_manifests::Source;

/// The rule of input the check could not use.
const UNUSABLE: &str = "unusable-input";
/// The rule of a mutating policy's change.
const MUTATED: &str = "mutated";
/// A policy that could not judge an object: it trapped, answered out of
/// protocol, or ran past its deadline or memory.
const FAILED: &str = "policy-failed";

/// Where SARIF tools resolve relative paths: the repository's root.
const SOURCE_ROOT: &str = "%SRCROOT%";

pub fn sarif(outcome: &Outcome, mode: &str, policy: &str, out: &mut dyn Write) -> io::Result<()> {
    let rejection = match mode {
        "monitor" => ResultLevel::Warning,
        _ => ResultLevel::Error,
    };
    let rejected = outcome
        .rows
        .iter()
        .filter(|row| !row.as_ref().is_ok_and(|row| row.accepted))
        .map(move |row| {
            row.map(|row| {
                let made = match (row.derived_from.is_empty(), row.audited) {
                    (true, false) => String::new(),
                    (true, true) => " (judged as an audit)".to_string(),
                    (false, _) => format!(" (made from {})", row.derived_from.join(" → ")),
                };
                let text = format!("{}{made}: {}", row.object, super::without_subject(&row));
                match row.failed {
                    true => result(FAILED, ResultLevel::Error, text, &row.source),
                    false => result(policy, rejection, text, &row.source),
                }
            })
        });
    // What a set's mutating policies changed, a note on the object's line.
    let changed = outcome.rows.iter().filter_map(|row| match row {
        Err(e) => Some(Err(e)),
        Ok(row) => {
            let changes = super::changes(&row);
            (!changes.is_empty()).then(|| {
                let text = format!("{}: {}", row.object, changes.join("\n"));
                Ok(result(MUTATED, ResultLevel::Note, text, &row.source))
            })
        }
    });
    let unusable = outcome.unusable.iter().map(|unusable| {
        Ok(result(
            UNUSABLE,
            ResultLevel::Error,
            unusable.reason.clone(),
            &unusable.source,
        ))
    });
    let rules = vec![
        rule(
            policy,
            &format!("The annotations policy `{policy}` rejects the object"),
        ),
        rule(UNUSABLE, "The check cannot read the object"),
        rule(MUTATED, "A mutating policy changes the object"),
        rule(FAILED, "A policy could not judge the object"),
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
    // The run without its results, which are written as they are read
    // back (a dump's are hundreds of megabytes); each result is still
    // serde-sarif's, held to the schema by its types.
    let run = Run::builder()
        .tool(Tool::builder().driver(driver).build())
        .build();
    let serde_json::Value::Object(run) = serde_json::to_value(&run)? else {
        return Err(io::Error::other("a SARIF run is not a JSON object"));
    };
    let log = Log {
        schema: "https://json.schemastore.org/sarif-2.1.0.json",
        version: "2.1.0",
        runs: [StreamedRun {
            run,
            results: super::Streamed::new(rejected.chain(changed).chain(unusable)),
        }],
    };
    serde_json::to_writer_pretty(&mut *out, &log)?;
    out.write_all(b"\n")
}

/// SARIF's log: its schema, its version, its one run.
#[derive(serde::Serialize)]
struct Log<R> {
    #[serde(rename = "$schema")]
    schema: &'static str,
    version: &'static str,
    runs: [R; 1],
}

/// A run: its fields but the results, then the results as they come.
struct StreamedRun<I> {
    run: serde_json::Map<String, serde_json::Value>,
    results: super::Streamed<I>,
}

impl<I> serde::Serialize for StreamedRun<I>
where
    I: Iterator<Item = io::Result<SarifResult>>,
{
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(None)?;
        for (key, value) in &self.run {
            map.serialize_entry(key, value)?;
        }
        map.serialize_entry("results", &self.results)?;
        map.end()
    }
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
