//! Reading manifests as people keep them: files and directories (searched
//! recursively for `*.yaml`, `*.yml` and `*.json`, each file once, links
//! followed, hidden directories left out), standard input (`-`),
//! multi-document YAML, and `kind: List` (what `kubectl get -o yaml`
//! writes). A repository holds more than manifests: a document without a
//! `kind` (a chart's `Chart.yaml`, `package.json`) is named in a note and
//! skipped, a Kustomization or a Helm template gets a note saying how to
//! render it; a document that is meant as an object but cannot be used is
//! reported with its file and line, and the rest is read on.

use std::collections::HashSet;
use std::fmt;
use std::io::{BufReader, Cursor, Read, Seek};
use std::path::{Path, PathBuf};

use serde_json::Value;

mod cut;
mod documents;
mod json;
mod stream;

use documents::Found;

/// Where a document or object came from: a file (or `-`) and the line its
/// document starts on, and its place in a `List`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Source {
    pub file: String,
    pub line: usize,
    pub item: Option<usize>,
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.file, self.line)?;
        if let Some(item) = self.item {
            write!(f, " (List item {item})")?;
        }
        Ok(())
    }
}

/// A Kubernetes object read from the input.
#[derive(Debug, Clone)]
pub struct Manifest {
    pub object: Value,
    pub source: Source,
}

/// Input that could not be used, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unusable {
    pub source: Source,
    pub reason: String,
}

/// Input that is not for the check, and what to do with it instead: said,
/// and skipped without failing the check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Note {
    pub source: Source,
    pub text: String,
    /// What a tool renders (a template, a Kustomization, a chart): objects
    /// meant for the cluster that the check did not judge.
    pub unrendered: bool,
}

/// Everything read from the inputs, in order.
#[derive(Debug, Default)]
pub struct Inputs {
    pub manifests: Vec<Manifest>,
    pub unusable: Vec<Unusable>,
    pub notes: Vec<Note>,
}

/// One thing the inputs hold.
#[derive(Debug)]
pub enum Input {
    Manifest(Manifest),
    Unusable(Unusable),
    Note(Note),
}

impl Inputs {
    fn take(&mut self, input: Input) {
        match input {
            Input::Manifest(manifest) => self.manifests.push(manifest),
            Input::Unusable(unusable) => self.unusable.push(unusable),
            Input::Note(note) => self.notes.push(note),
        }
    }
}

/// Reads every input (paths to files or directories, or `-` for stdin),
/// all of it held at once.
pub fn read_inputs(inputs: &[String]) -> Inputs {
    let mut read = Inputs::default();
    read_each(inputs, &mut |input| read.take(input));
    read
}

/// Reads every input, handing out what it holds as it is read: no more
/// than one object of a file is held at once (`stream`).
pub fn read_each(inputs: &[String], found: &mut dyn FnMut(Input)) {
    // Each file once, however many inputs or links lead to it.
    let mut seen = HashSet::new();
    for input in inputs {
        if input == "-" {
            // Spooled to a file: the stream is read twice, and never held.
            let spooled = tempfile::tempfile().and_then(|mut file| {
                std::io::copy(&mut std::io::stdin().lock(), &mut file)?;
                file.rewind()?;
                Ok(file)
            });
            match spooled {
                Ok(file) => read_stream("-", None, file, found),
                Err(e) => found(Input::Unusable(whole("-", format!("cannot read: {e}")))),
            }
            continue;
        }
        let path = Path::new(input);
        if path.is_dir() {
            for file in walk(path, found) {
                if first_time(&file, &mut seen) {
                    read_file(&file, found);
                }
            }
        } else if first_time(path, &mut seen) {
            read_file(path, found);
        }
    }
}

/// Whether `path` is read for the first time; a path that cannot be
/// resolved is read, to report why.
fn first_time(path: &Path, seen: &mut HashSet<PathBuf>) -> bool {
    match std::fs::canonicalize(path) {
        Ok(real) => seen.insert(real),
        Err(_) => true,
    }
}

/// A whole file that could not be used.
fn whole(file: &str, reason: String) -> Unusable {
    Unusable {
        source: file_source(file, 1),
        reason,
    }
}

/// The manifest files below `dir`, at any depth, sorted by name: links
/// followed, each directory walked once, a link back to a directory it is
/// in noted and not followed again, hidden directories (`.github`, `.git`)
/// left out.
fn walk(dir: &Path, found: &mut dyn FnMut(Input)) -> Vec<PathBuf> {
    let hidden = |entry: &walkdir::DirEntry| {
        entry.depth() > 0
            && entry.file_type().is_dir()
            && entry.file_name().to_string_lossy().starts_with('.')
    };
    // A directory that two links lead to is walked once.
    let mut walked = HashSet::new();
    let mut first_walk = |entry: &walkdir::DirEntry| {
        !entry.file_type().is_dir()
            || std::fs::canonicalize(entry.path()).map_or(true, |real| walked.insert(real))
    };
    let mut files = Vec::new();
    let entries = walkdir::WalkDir::new(dir)
        .follow_links(true)
        .sort_by_file_name()
        .into_iter()
        .filter_entry(|entry| !hidden(entry) && first_walk(entry));
    for entry in entries {
        match entry {
            Ok(entry) => {
                let path = entry.path();
                if entry.file_type().is_file()
                    && matches!(
                        path.extension().and_then(|e| e.to_str()),
                        Some("yaml" | "yml" | "json")
                    )
                {
                    files.push(path.to_path_buf());
                }
            }
            Err(e) => {
                let at = e
                    .path()
                    .map_or_else(|| dir.display().to_string(), |p| p.display().to_string());
                match e.loop_ancestor() {
                    Some(ancestor) => found(Input::Note(Note {
                        source: file_source(&at, 1),
                        text: format!(
                            "a link to {}, which holds it: not followed again",
                            ancestor.display()
                        ),
                        unrendered: false,
                    })),
                    None => found(Input::Unusable(whole(&at, format!("cannot read: {e}")))),
                }
            }
        }
    }
    files
}

fn file_source(file: &str, line: usize) -> Source {
    Source {
        file: file.to_string(),
        line,
        item: None,
    }
}

/// Why a file is not read as manifests, and what to run instead: a
/// Kustomization and a Helm chart describe objects that their tool makes.
fn rendered_by_a_tool(path: &Path) -> Option<String> {
    let name = path.file_name()?.to_string_lossy();
    let dir = path
        .parent()
        .map_or_else(|| ".".to_string(), |d| d.display().to_string());
    let dir = if dir.is_empty() { ".".to_string() } else { dir };
    if matches!(
        name.as_ref(),
        "kustomization.yaml" | "kustomization.yml" | "Kustomization"
    ) {
        return Some(format!(
            "a Kustomization: check what it renders with `kubectl kustomize {dir} | policy-runner check … -`"
        ));
    }
    if name == "Chart.yaml" {
        return Some(format!(
            "a Helm chart: check what it renders with `helm template RELEASE {dir} | policy-runner check … -`"
        ));
    }
    None
}

/// The note on a template: an input that holds `{{` and does not parse.
const TEMPLATE: &str = "a template (it holds `{{` and does not parse as YAML): check what it \
     renders, for a Helm chart with `helm template RELEASE CHART | policy-runner check … -`";

fn read_file(path: &Path, found: &mut dyn FnMut(Input)) {
    let name = path.display().to_string();
    match std::fs::File::open(path) {
        Ok(file) => read_stream(&name, Some(path), file, found),
        Err(e) => found(Input::Unusable(whole(&name, format!("cannot read: {e}")))),
    }
}

/// The documents of a text, each with its line: YAML streams and JSON,
/// read as the check reads manifests, each document whole.
pub fn documents(text: &str) -> Vec<(usize, Result<Value, String>)> {
    documents::read(text)
}

/// Reads one input's text, document by document.
pub fn read_text(file: &str, text: &str, read: &mut Inputs) {
    read_stream(file, None, Cursor::new(text.as_bytes()), &mut |input| {
        read.take(input)
    });
}

/// Reads one input, `path` when it is a file of that name.
fn read_stream(
    file: &str,
    path: Option<&Path>,
    input: impl Read + Seek,
    found: &mut dyn FnMut(Input),
) {
    let mut input = BufReader::new(input);
    let read = stream::scan(&mut input).and_then(|scan| {
        // A file is skipped by its name (a Kustomization, a chart), or,
        // whether it is a file or standard input, as a template.
        let skipped = match path.and_then(rendered_by_a_tool) {
            Some(text) => Some(text),
            None if scan.template && !stream::parses(&mut input, &scan)? => {
                Some(TEMPLATE.to_string())
            }
            None => None,
        };
        if let Some(text) = skipped {
            found(Input::Note(Note {
                source: file_source(file, 1),
                text,
                unrendered: true,
            }));
            return Ok(());
        }
        stream::read(&mut input, &scan, &mut |document| match document {
            Found::Document(line, Ok(value)) => {
                take_document(value, file_source(file, line), found)
            }
            Found::Document(line, Err(reason)) => found(Input::Unusable(Unusable {
                source: file_source(file, line),
                reason,
            })),
            Found::Item { line, index, value } => {
                let source = Source {
                    item: Some(index),
                    ..file_source(file, line)
                };
                take_object(value, source, found)
            }
        })
    });
    if let Err(e) = read {
        found(Input::Unusable(whole(file, format!("cannot read: {e}"))));
    }
}

/// A document: an object, a list of objects (`List`, or a typed list
/// such as `ConfigMapList`, as `kubectl get -o yaml` writes them), or
/// something unusable.
fn take_document(value: Value, source: Source, found: &mut dyn FnMut(Input)) {
    if value.is_null() {
        return;
    }
    let list = value["kind"]
        .as_str()
        .is_some_and(|kind| kind.ends_with("List"));
    if list && value.get("items").is_some() {
        match value.get("items").and_then(Value::as_array) {
            Some(items) => {
                for (i, item) in items.iter().enumerate() {
                    let source = Source {
                        item: Some(i),
                        ..source.clone()
                    };
                    take_object(item.clone(), source, found);
                }
            }
            None => found(Input::Unusable(Unusable {
                source,
                reason: "a List whose `items` is not a list".to_string(),
            })),
        }
        return;
    }
    take_object(value, source, found);
}

/// A document of the input: an object to check, or no object at all (a
/// note), or an object that cannot be used.
fn take_object(value: Value, source: Source, found: &mut dyn FnMut(Input)) {
    if source.item.is_none() && !value.get("kind").is_some_and(Value::is_string) {
        found(Input::Note(Note {
            source,
            text: format!(
                "not a Kubernetes object ({}, without a `kind`): skipped",
                what(&value)
            ),
            unrendered: false,
        }));
        return;
    }
    if let Some(api_version) = served_by_no_cluster(&value) {
        found(Input::Note(Note {
            source,
            text: format!(
                "a kustomize configuration (`apiVersion: {api_version}`), which no cluster \
                 serves: skipped; what it changes shows in what `kubectl kustomize` renders"
            ),
            unrendered: false,
        }));
        return;
    }
    match object_problem(&value) {
        None => found(Input::Manifest(Manifest {
            object: value,
            source,
        })),
        Some(reason) => found(Input::Unusable(Unusable { source, reason })),
    }
}

/// The `apiVersion` of a kustomize transformer or generator configuration
/// (`builtin`, `kustomize.config.k8s.io/…`): input to kustomize, never an
/// object that a cluster stores.
fn served_by_no_cluster(value: &Value) -> Option<&str> {
    let api_version = value.get("apiVersion")?.as_str()?;
    let kustomize = matches!(
        super::objects::group_version(api_version),
        ("", "builtin") | ("kustomize.config.k8s.io", _)
    );
    kustomize.then_some(api_version)
}

/// Why `value` is not a Kubernetes object, if it is not.
fn object_problem(value: &Value) -> Option<String> {
    let Some(object) = value.as_object() else {
        return Some(format!("not a Kubernetes object: {}", what(value)));
    };
    let text = |field: &str| object.get(field).and_then(Value::as_str);
    match (text("apiVersion"), text("kind")) {
        (_, None) => Some("not a Kubernetes object: no `kind`".to_string()),
        (None, _) => Some("not a Kubernetes object: no `apiVersion`".to_string()),
        (Some(_), Some(_)) => match object.get("metadata") {
            Some(Value::Object(metadata)) => match metadata.get("name") {
                Some(Value::String(name)) if !name.is_empty() => {
                    strings_only(metadata).or_else(|| incomplete(value))
                }
                _ if metadata.get("generateName").is_some_and(Value::is_string) => {
                    strings_only(metadata).or_else(|| incomplete(value))
                }
                _ => Some("no `metadata.name`".to_string()),
            },
            _ => Some("no `metadata`".to_string()),
        },
    }
}

/// Why the API server would refuse a workload that lacks what its kind
/// requires (a kustomize patch looks so): judged, it would derive nothing
/// real.
fn incomplete(object: &Value) -> Option<String> {
    let missing = super::objects::missing_required(object);
    (!missing.is_empty()).then(|| {
        format!(
            "a {} without {}, which the API server refuses: not judged (a kustomize \
             patch? check what `kubectl kustomize` renders)",
            object["kind"].as_str().unwrap_or_default(),
            missing.join(" or ")
        )
    })
}

/// The API server takes only strings as annotation and label values
/// (`map[string]string`): it refuses an object with `owner: 1` before any
/// policy sees it, so the check does not judge one.
fn strings_only(metadata: &serde_json::Map<String, Value>) -> Option<String> {
    for field in ["annotations", "labels"] {
        match metadata.get(field) {
            None | Some(Value::Null) => {}
            Some(Value::Object(map)) => {
                if let Some((key, value)) = map.iter().find(|(_, v)| !v.is_string()) {
                    return Some(format!(
                        "`metadata.{field}` \"{key}\" is {}, and the API server takes only strings: quote it",
                        what(value)
                    ));
                }
            }
            Some(other) => {
                return Some(format!(
                    "`metadata.{field}` is {}, not a mapping",
                    what(other)
                ));
            }
        }
    }
    None
}

fn what(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Inputs {
        let mut read = Inputs::default();
        read_text("m.yaml", text, &mut read);
        read
    }

    /// What a reading found, its sources left out: the objects, the
    /// unusable documents' reasons and the notes.
    fn found(read: &Inputs) -> (Vec<Value>, Vec<String>, Vec<(String, bool)>) {
        (
            read.manifests.iter().map(|m| m.object.clone()).collect(),
            read.unusable.iter().map(|u| u.reason.clone()).collect(),
            read.notes
                .iter()
                .map(|n| (n.text.clone(), n.unrendered))
                .collect(),
        )
    }

    /// A workload without what its kind requires (a kustomize patch) is
    /// unusable, naming what it lacks; with it, an object.
    #[test]
    fn a_workload_without_its_required_fields_is_unusable() {
        let patch = read(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec: {replicas: 3}\n",
        );
        assert!(patch.manifests.is_empty());
        assert_eq!(
            patch.unusable[0].reason,
            "a Deployment without `spec.selector` or a container in \
             `spec.template.spec.containers`, which the API server refuses: not judged (a \
             kustomize patch? check what `kubectl kustomize` renders)"
        );
        let cron = read("apiVersion: batch/v1\nkind: CronJob\nmetadata: {name: c}\nspec: {}\n");
        assert!(
            cron.unusable[0]
                .reason
                .contains("`spec.jobTemplate.spec.template.spec.containers`")
        );
        let whole = read(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  selector: {matchLabels: {app: web}}\n  template: {spec: {containers: [{name: c, image: i}]}}\n",
        );
        assert_eq!((whole.manifests.len(), whole.unusable.len()), (1, 0));
        // Another API's Deployment is not Kubernetes'.
        let other = read("apiVersion: example.com/v1\nkind: Deployment\nmetadata: {name: w}\n");
        assert_eq!(other.manifests.len(), 1);
    }

    /// kustomize's own configurations are notes, not objects.
    #[test]
    fn kustomize_configurations_are_notes() {
        for api_version in ["builtin", "kustomize.config.k8s.io/v1beta1"] {
            let read = read(&format!(
                "apiVersion: {api_version}\nkind: PatchTransformer\nmetadata: {{name: p}}\n"
            ));
            assert!(read.manifests.is_empty(), "{api_version}");
            assert_eq!(read.notes.len(), 1, "{api_version}");
            assert!(read.notes[0].text.starts_with("a kustomize configuration"));
        }
        // A group that merely ends so is someone's API.
        let read = read("apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n");
        assert_eq!(read.manifests.len(), 1);
    }

    /// A `{{` is content in a file that parses (in a quoted string, a
    /// comment, a block scalar); a file holding one that does not parse is
    /// a template, skipped with a note. A file and standard input (read as
    /// `read_text` reads it) find the same in the same bytes.
    #[test]
    fn a_template_is_what_holds_braces_and_does_not_parse() {
        let parses = [
            "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: c\n    image: i\n    args: [\"--log-format\", \"{{.Time}}\"]\n",
            "# rendered from {{ .Values.image }}\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n",
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: dashboards}\ndata:\n  pods.json: |\n    {\"legendFormat\": \"{{pod}}\"}\n",
            "{\"apiVersion\": \"v1\", \"kind\": \"ConfigMap\", \"metadata\": {\"name\": \"{{x}}\"}}\n",
        ];
        let templates = [
            "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ .Release.Name }}\n",
            "{{- if .Values.enabled }}\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n{{- end }}\n",
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\nmetadata:\n  labels:\n    {{- include \"labels\" . | nindent 4 }}\n",
        ];
        let dir = std::env::temp_dir().join(format!("templates-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for (i, text) in parses.iter().chain(&templates).enumerate() {
            let path = dir.join(format!("{i}.yaml"));
            std::fs::write(&path, text).unwrap();
            let mut from_file = Inputs::default();
            read_each(&[path.display().to_string()], &mut |input| {
                from_file.take(input)
            });
            let from_stdin = read(text);
            assert_eq!(found(&from_file), found(&from_stdin), "{text}");
            let (objects, unusable, notes) = found(&from_stdin);
            match i < parses.len() {
                true => {
                    assert_eq!((objects.len(), notes.len()), (1, 0), "{text}");
                    assert!(unusable.is_empty(), "{text}: {unusable:?}");
                }
                false => {
                    assert_eq!(objects.len() + unusable.len(), 0, "{text}");
                    assert_eq!(notes, [(TEMPLATE.to_string(), true)], "{text}");
                }
            }
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn typed_lists_are_read_item_by_item() {
        let read = read(
            "apiVersion: v1\nkind: ConfigMapList\nmetadata: {resourceVersion: \"7\"}\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: a}\n",
        );
        assert_eq!(read.manifests.len(), 1, "{:?}", read.unusable);
        assert_eq!(
            read.manifests[0].source.to_string(),
            "m.yaml:1 (List item 0)"
        );
    }

    #[test]
    fn objects_lists_and_what_is_not_an_object() {
        let text = "\
apiVersion: v1
kind: ConfigMap
metadata: {name: a}
---
# only a comment
---
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Pod
  metadata: {name: b, namespace: x}
  spec: {containers: [{name: c, image: i}]}
- just a string
---
- a
- list
---
apiVersion: v1
metadata: {name: c}
---
kind: Pod
apiVersion: v1
metadata: {generateName: d-}
spec: {containers: [{name: c, image: i}]}
---
a: [unclosed
";
        let read = read(text);
        let names: Vec<&str> = read
            .manifests
            .iter()
            .map(|m| m.object["kind"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["ConfigMap", "Pod", "Pod"]);
        assert_eq!(
            read.manifests[1].source.to_string(),
            "m.yaml:7 (List item 0)"
        );
        let problems: Vec<String> = read
            .unusable
            .iter()
            .map(|u| format!("{}: {}", u.source, u.reason))
            .collect();
        assert_eq!(problems.len(), 2, "{problems:#?}");
        assert_eq!(
            problems[0],
            "m.yaml:7 (List item 1): not a Kubernetes object: a string"
        );
        assert!(
            problems[1].starts_with("m.yaml:28: not YAML")
                && problems[1].contains("flow sequence at line 27 column 4"),
            "{}",
            problems[1]
        );
        let notes: Vec<String> = read
            .notes
            .iter()
            .map(|n| format!("{}: {}", n.source, n.text))
            .collect();
        assert_eq!(
            notes,
            [
                "m.yaml:16: not a Kubernetes object (a list, without a `kind`): skipped",
                "m.yaml:19: not a Kubernetes object (a mapping, without a `kind`): skipped",
            ]
        );
    }

    #[test]
    fn what_the_api_server_refuses_is_unusable() {
        let object = |metadata: &str| {
            format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n{metadata}")
        };
        for (metadata, reason) in [
            (
                "  annotations:\n    example.com/owner: 1\n",
                "`metadata.annotations` \"example.com/owner\" is a number, and the API server takes only strings: quote it",
            ),
            (
                "  labels:\n    enabled: true\n",
                "`metadata.labels` \"enabled\" is a boolean, and the API server takes only strings: quote it",
            ),
            (
                "  annotations: [a]\n",
                "`metadata.annotations` is a list, not a mapping",
            ),
        ] {
            let read = read(&object(metadata));
            assert!(read.manifests.is_empty(), "{metadata}");
            assert_eq!(read.unusable[0].reason, reason);
        }
        let twice = read(&object("  annotations:\n    a: b\n    a: c\n"));
        assert!(twice.manifests.is_empty());
        assert!(
            twice.unusable[0]
                .reason
                .contains("duplicate entry with key \"a\""),
            "{:?}",
            twice.unusable
        );
        let fine = read(&object(
            "  annotations:\n    example.com/owner: \"1\"\n  labels: null\n",
        ));
        assert_eq!(fine.manifests.len(), 1, "{:?}", fine.unusable);
    }

    #[test]
    fn merge_keys_are_merged() {
        let read = read(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  annotations:\n    <<: {example.com/owner: me}\n    example.com/team: web\n",
        );
        assert_eq!(read.manifests.len(), 1, "{:?}", read.unusable);
        assert_eq!(
            read.manifests[0].object["metadata"]["annotations"],
            serde_json::json!({"example.com/owner": "me", "example.com/team": "web"})
        );
    }

    #[test]
    fn an_object_without_its_api_version_is_unusable() {
        let read = read("kind: Pod\nmetadata: {name: x}\n");
        assert!(read.notes.is_empty());
        assert_eq!(
            read.unusable[0].reason,
            "not a Kubernetes object: no `apiVersion`"
        );
    }

    #[test]
    fn json_is_read_whole_and_errors_say_the_line() {
        let mut read = Inputs::default();
        read_text(
            "m.json",
            r#"{"apiVersion":"v1","kind":"List","items":[{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"c"}]}}]}"#,
            &mut read,
        );
        assert_eq!(read.manifests.len(), 1);
        read_text("bad.json", "{\n\"a\": \n", &mut read);
        assert_eq!(read.unusable[0].source.to_string(), "bad.json:3");
    }
}
