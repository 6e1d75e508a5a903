//! Reading manifests as people keep them: files and directories (searched
//! recursively for `*.yaml`, `*.yml` and `*.json`, as `kubectl apply -R`
//! searches them, `walk`; hidden directories left out, and said to be,
//! unless asked for), standard input (`-`), multi-document YAML, and
//! `kind: List` (what
//! `kubectl get -o yaml` writes). A repository holds more than manifests: a
//! document without a `kind` (`package.json`) is named in a note and
//! skipped; a Helm chart, a Kustomization with the patches it names, and a
//! document holding template syntax get a note saying how to render them
//! (`claims`, `templates`); a document that is meant as an object but
//! cannot be used is reported with its file and line, and the rest is read
//! on. The document is the unit: nothing in one hides another.

use std::collections::HashSet;
use std::fmt;
use std::io::{BufRead, BufReader, Cursor, Read, Seek};
use std::path::{Path, PathBuf};

pub use policy_core::kinds::ApiVersion;
use serde_json::Value;

#[cfg(any(test, feature = "fuzzing"))]
pub mod agree;
mod claims;
mod cut;
mod document;
mod json;
mod list;
mod object;
mod refusals;
mod stream;
mod templates;
mod walk;
mod yaml;

use claims::Claims;

/// Where a document or object came from: a file (or `-`) and the line its
/// document starts on, and its place in a `List`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
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

/// What a user of the reader learns of each object on the worker that
/// parsed it, while its tree of values is in hand (so that no tree is kept,
/// or parsed again, to learn it later), and the refusals of its own it
/// adds to the reader's: `check` learns an object's owner and identity, and
/// refuses a workload that lacks what its controller needs.
pub trait Learn: Sized + Send {
    /// What is learnt of `object`, whose `apiVersion` names `api` (found
    /// once, by the reader), or why it cannot be used.
    fn learn(object: &Value, api: &ApiVersion<'_>) -> Result<Self, String>;
}

/// Nothing learnt, nothing refused.
impl Learn for () {
    fn learn(_: &Value, _: &ApiVersion<'_>) -> Result<(), String> {
        Ok(())
    }
}

/// A Kubernetes object read from the input, as the worker that read it
/// leaves it: its JSON, and what its user learnt of it (`Learn`). No tree
/// of values is kept: `object` makes one.
#[derive(Debug, Clone)]
pub struct Manifest<F = ()> {
    pub source: Source,
    /// The object as compact JSON.
    pub json: String,
    pub facts: F,
}

impl<F: Learn> Manifest<F> {
    /// `object` as read from `source`, or why its user refuses it.
    pub fn new(object: &Value, source: Source) -> Result<Manifest<F>, String> {
        Ok(Manifest {
            facts: F::learn(object, &object::api_version(object))?,
            source,
            json: object.to_string(),
        })
    }
}

impl<F> Manifest<F> {
    /// The object, as a tree of values.
    pub fn object(&self) -> Value {
        let mut reader = serde_json::Deserializer::from_str(&self.json);
        // As deep as it was read: the readers' own limits held it.
        reader.disable_recursion_limit();
        serde::Deserialize::deserialize(&mut reader).unwrap_or_default()
    }
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
#[derive(Debug)]
pub struct Inputs<F = ()> {
    pub manifests: Vec<Manifest<F>>,
    pub unusable: Vec<Unusable>,
    pub notes: Vec<Note>,
}

/// One thing the inputs hold.
#[derive(Debug)]
pub enum Input<F = ()> {
    Manifest(Manifest<F>),
    Unusable(Unusable),
    Note(Note),
}

impl<F> Default for Inputs<F> {
    fn default() -> Inputs<F> {
        Inputs {
            manifests: Vec::new(),
            unusable: Vec::new(),
            notes: Vec::new(),
        }
    }
}

impl<F> Inputs<F> {
    fn take(&mut self, input: Input<F>) {
        match input {
            Input::Manifest(manifest) => self.manifests.push(manifest),
            Input::Unusable(unusable) => self.unusable.push(unusable),
            Input::Note(note) => self.notes.push(note),
        }
    }
}

/// How directories are searched.
#[derive(Debug, Clone, Copy, Default)]
pub struct Search {
    /// Read hidden directories too (`.config/`), as `kubectl apply -R`
    /// does; left out otherwise, with a note that names them.
    pub hidden: bool,
}

/// Reads every input (paths to files or directories, or `-` for stdin),
/// all of it held at once.
pub fn read_inputs<F: Learn>(inputs: &[String]) -> Inputs<F> {
    let mut read = Inputs::default();
    read_each(inputs, Search::default(), &mut |input| read.take(input));
    read
}

/// Reads every input, handing out what it holds as it is read, in order:
/// no more than a batch of a file's objects is held at once (`stream`).
pub fn read_each<F: Learn>(inputs: &[String], search: Search, found: &mut dyn FnMut(Input<F>)) {
    // Each file once, however many inputs lead to it.
    let mut seen = HashSet::new();
    let mut claims = Claims::default();
    for input in inputs {
        if input == "-" {
            // Spooled to a file: the stream is read twice, and never held.
            let spooled = tempfile::tempfile().and_then(|mut file| {
                std::io::copy(&mut std::io::stdin().lock(), &mut file)?;
                file.rewind()?;
                Ok(file)
            });
            match spooled {
                Ok(file) => read_stream("-", file, found),
                Err(e) => found(Input::Unusable(whole("-", format!("cannot read: {e}")))),
            }
            continue;
        }
        let path = Path::new(input);
        if path.is_dir() {
            let files = walk::walk(path, search, found);
            // A kustomization may name files beside or below another
            // directory of the walk, read before it.
            let mut kustomized = claims::Kustomized::default();
            for file in &files {
                if claims::is_kustomization(file) {
                    kustomized.insert(file);
                    claims.learn(file);
                }
            }
            for file in files {
                if first_time(&file, &mut seen)
                    && !claims::claimed(&file, &mut claims, &kustomized, found)
                {
                    read_file(&file, found);
                }
            }
        } else if first_time(path, &mut seen) {
            let alone = claims::Kustomized::default();
            if !claims::claimed(path, &mut claims, &alone, found) {
                read_file(path, found);
            }
        }
    }
}

/// Whether `path` is read for the first time, however its directory is
/// named; a link to a file is a file of its own, as `kubectl apply -R`
/// reads both. A path that cannot be resolved is read, to report why.
fn first_time(path: &Path, seen: &mut HashSet<PathBuf>) -> bool {
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    match (std::fs::canonicalize(dir), path.file_name()) {
        (Ok(dir), Some(name)) => seen.insert(dir.join(name)),
        _ => true,
    }
}

/// A whole file that could not be used.
fn whole(file: &str, reason: String) -> Unusable {
    Unusable {
        source: file_source(file, 1),
        reason,
    }
}

fn file_source(file: &str, line: usize) -> Source {
    Source {
        file: file.to_string(),
        line,
        item: None,
    }
}

fn read_file<F: Learn>(path: &Path, found: &mut dyn FnMut(Input<F>)) {
    let name = path.display().to_string();
    match std::fs::File::open(path) {
        Ok(file) => read_stream(&name, file, found),
        Err(e) => found(Input::Unusable(whole(&name, format!("cannot read: {e}")))),
    }
}

/// The documents of a text, each with its line: YAML streams and JSON,
/// read as the check reads manifests, each document whole.
pub fn documents(text: &str) -> Vec<(usize, Result<Value, String>)> {
    document::read(text)
}

/// The JSON kubectl sends for one document's text (`null` for an empty
/// one), or why it is refused: what the differential test holds to
/// kubectl's own YAML library.
pub fn document_json(text: &str) -> Result<String, String> {
    yaml::to_json(text, 1).map_err(|refusal| refusal.reason)
}

/// Reads one input's text, document by document.
pub fn read_text<F: Learn>(file: &str, text: &str, read: &mut Inputs<F>) {
    read_bytes(file, text.as_bytes(), read);
}

/// Reads one input's bytes as a file holding them is read.
pub fn read_bytes<F: Learn>(file: &str, bytes: &[u8], read: &mut Inputs<F>) {
    read_stream(file, Cursor::new(bytes), &mut |input| read.take(input));
}

/// Reads one input, document by document.
fn read_stream<F: Learn>(
    file: &str,
    input: impl Read + Seek + Send,
    found: &mut dyn FnMut(Input<F>),
) {
    let mut input = BufReader::new(input);
    if let Some(text) = utf16(&mut input) {
        return match text {
            Ok(text) => read_stream(file, Cursor::new(text.into_bytes()), found),
            Err(e) => found(Input::Unusable(whole(file, format!("cannot read: {e}")))),
        };
    }
    if cr_only(&mut input) {
        return read_cr_only(file, input, found);
    }
    let take = object::Take {
        file,
        learn: std::marker::PhantomData,
    };
    let read = stream::read_all(&mut input, &take, found);
    if let Err(e) = read {
        found(Input::Unusable(whole(file, format!("cannot read: {e}"))));
    }
}

/// The text of an input that starts with a UTF-16 byte-order mark, as
/// kubectl reads it (cli-runtime's file visitor decodes through
/// `unicode.BOMOverride`): the mark dropped, the rest decoded as UTF-16 of
/// its order, what is no UTF-16 (an odd byte, a lone surrogate) read as
/// U+FFFD. Held whole: such files are written by editors, not dumps.
/// `None` for any other input.
fn utf16(input: &mut BufReader<impl Read>) -> Option<std::io::Result<String>> {
    let big_endian = match input.fill_buf() {
        Ok([0xFF, 0xFE, ..]) => false,
        Ok([0xFE, 0xFF, ..]) => true,
        _ => return None,
    };
    let mut bytes = Vec::new();
    if let Err(e) = input.read_to_end(&mut bytes) {
        return Some(Err(e));
    }
    let units = bytes[2..].chunks(2).map(|pair| match (pair, big_endian) {
        ([high, low], true) => u16::from_be_bytes([*high, *low]),
        ([low, high], false) => u16::from_le_bytes([*low, *high]),
        // An odd byte at the end.
        _ => 0xFFFD,
    });
    Some(Ok(char::decode_utf16(units)
        .map(|c| c.unwrap_or(char::REPLACEMENT_CHARACTER))
        .collect()))
}

/// Whether the input is YAML whose lines end with CR alone (old Mac
/// editors): its first 8 KiB hold a CR and no LF. (JSON needs no line
/// ends: kubectl reads it whole either way.)
fn cr_only(input: &mut BufReader<impl Read>) -> bool {
    input.fill_buf().is_ok_and(|start| {
        let text = String::from_utf8_lossy(start);
        let json = text
            .trim_start_matches('\u{feff}')
            .trim_start()
            .starts_with(['{', '[']);
        !json && start.contains(&b'\r') && !start.contains(&b'\n')
    })
}

/// A file whose lines end with CR alone, read as kubectl reads it: its
/// reader cuts documents at LF only, so it parses the whole file as one
/// document and keeps the first of the stream; the others are dropped
/// without a word. Here they are unusable, at the line of the second
/// (lines counted as YAML counts them, CR ending each).
fn read_cr_only<F: Learn>(file: &str, mut input: impl Read, found: &mut dyn FnMut(Input<F>)) {
    let mut text = String::new();
    if let Err(e) = input.read_to_string(&mut text) {
        found(Input::Unusable(whole(file, format!("cannot read: {e}"))));
        return;
    }
    let text = text.replace('\r', "\n");
    // The first line past the first document, and the first content from
    // there on.
    let dropped = first_document_end(&text).and_then(|end| {
        let rest = text.lines().skip(end - 1);
        let mut content = rest
            .enumerate()
            .filter(|(_, line)| cut::has_content(line.strip_prefix("---").unwrap_or(line)));
        content.next().map(|(i, _)| (end, end + i))
    });
    read_stream(file, Cursor::new(text.as_bytes()), &mut |input| {
        let line = match &input {
            Input::Manifest(m) => m.source.line,
            Input::Unusable(u) => u.source.line,
            Input::Note(n) => n.source.line,
        };
        if dropped.is_none_or(|(first, _)| line < first) {
            found(input);
        }
    });
    if let Some((_, line)) = dropped {
        found(Input::Unusable(Unusable {
            source: file_source(file, line),
            reason: "the lines of this file end with CR alone: kubectl reads its first document \
                     and drops the others without a word; end its lines with LF"
                .to_string(),
        }));
    }
}

/// The line that ends the first document of a YAML stream, as a parser
/// that reads one document sees it: a `---` before any content opens it,
/// the next `---` (or a `...`) ends it, empty or not.
fn first_document_end(text: &str) -> Option<usize> {
    let (mut opened, mut content) = (false, false);
    for (i, line) in text.lines().enumerate() {
        if cut::is_marker(line, "---") {
            if opened || content {
                return Some(i + 1);
            }
            opened = true;
            content = cut::has_content(&line[3..]);
        } else if cut::is_marker(line, "...") {
            return Some(i + 2);
        } else {
            content |= cut::has_content(line.trim_start_matches('\u{feff}'));
        }
    }
    None
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
            read.manifests.iter().map(Manifest::object).collect(),
            read.unusable.iter().map(|u| u.reason.clone()).collect(),
            read.notes
                .iter()
                .map(|n| (n.text.clone(), n.unrendered))
                .collect(),
        )
    }

    /// A directive before `---` is a document of its own to kubectl, which
    /// fails to parse it and applies nothing of the file: unusable, at its
    /// line; the document after it is read.
    #[test]
    fn a_directive_before_a_marker_is_unusable() {
        for directive in ["%YAML 1.1", "%YAML 1.2", "%TAG !e! tag:example.com,2000:"] {
            let read = read(&format!(
                "# made by a tool\n{directive}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {{name: a}}\n"
            ));
            assert_eq!(read.unusable.len(), 1, "{directive}");
            assert_eq!(read.unusable[0].source.line, 2);
            assert!(
                read.unusable[0]
                    .reason
                    .contains("applies nothing of this file")
            );
            assert_eq!(read.manifests.len(), 1);
        }
    }

    /// A file with a UTF-16 byte-order mark is read as kubectl reads it,
    /// decoded; lines as in the text.
    #[test]
    fn utf16_files_are_decoded() {
        let text = "\u{feff}apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\n";
        let units: Vec<u16> = text.encode_utf16().collect();
        let little: Vec<u8> = units.iter().flat_map(|u| u.to_le_bytes()).collect();
        let big: Vec<u8> = units.iter().flat_map(|u| u.to_be_bytes()).collect();
        for bytes in [little, big] {
            let mut read: Inputs = Inputs::default();
            read_bytes("u.yaml", &bytes, &mut read);
            assert!(read.unusable.is_empty(), "{:?}", read.unusable);
            let lines: Vec<usize> = read.manifests.iter().map(|m| m.source.line).collect();
            assert_eq!(lines, [1, 6]);
            assert_eq!(read.manifests[1].object()["metadata"]["name"], "b");
        }
        // An odd byte at the end is no UTF-16: U+FFFD, in a comment here.
        let mut odd: Vec<u8> = "\u{feff}kind: ConfigMap\n#"
            .encode_utf16()
            .flat_map(|u| u.to_le_bytes())
            .collect();
        odd.push(b'x');
        let mut read: Inputs = Inputs::default();
        read_bytes("u.yaml", &odd, &mut read);
        assert_eq!(read.unusable.len(), 1, "{:?}", read.unusable);
    }

    /// Any object that has `items` is a List to kubectl's decoder: of a
    /// kind its API server maps, its items are sent (of its kind where
    /// they name none) and the object itself is not, which a note says;
    /// read entry by entry, whole, or as JSON.
    #[test]
    fn an_object_with_items_is_read_as_a_list() {
        let block = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\nitems:\n- apiVersion: v1\n  kind: Secret\n  metadata: {name: s}\n- metadata: {name: t}\n";
        let flow = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\nitems: [{apiVersion: v1, kind: Secret, metadata: {name: s}}, {metadata: {name: t}}]\n";
        let json = r#"{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "items": [{"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}}, {"metadata": {"name": "t"}}]}"#;
        for text in [block, flow, json] {
            let read = read(text);
            assert!(read.unusable.is_empty(), "{:?}", read.unusable);
            let kinds: Vec<(Value, Value)> = read
                .manifests
                .iter()
                .map(|m| {
                    (
                        m.object()["kind"].clone(),
                        m.object()["metadata"]["name"].clone(),
                    )
                })
                .collect();
            assert_eq!(
                kinds,
                [
                    ("Secret".into(), "s".into()),
                    ("ConfigMap".into(), "t".into())
                ],
                "{text}"
            );
            assert_eq!(read.notes.len(), 1, "{text}");
            assert!(
                read.notes[0]
                    .text
                    .starts_with("`kind: ConfigMap` with `items`: kubectl reads any object"),
                "{}",
                read.notes[0].text
            );
            assert_eq!(read.notes[0].source.line, 1);
        }
        let custom = read(
            "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\nitems:\n- metadata: {name: t}\n",
        );
        assert_eq!(custom.manifests.len(), 1);
        assert_eq!(custom.manifests[0].object()["kind"], "Widget");
        assert_eq!(custom.manifests[0].object()["apiVersion"], "example.com/v1");
        assert_eq!(custom.manifests[0].source.item, Some(0));
    }

    /// A list of a kind Kubernetes does not serve is no List to kubectl,
    /// which refuses the document whole; a typed list of a served kind, or
    /// of another group's kind, is.
    #[test]
    fn a_list_is_of_a_kind_that_is_served() {
        let item = "items:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: e}\n";
        let not = read(&format!(
            "apiVersion: v1\nkind: NotAList\nmetadata: {{name: l}}\n{item}"
        ));
        assert!(not.manifests.is_empty());
        assert_eq!(
            not.unusable[0].reason,
            "no kind `NotAList` in `v1`, which Kubernetes 1.37 serves"
        );
        for kind in ["List", "ConfigMapList"] {
            let list = read(&format!("apiVersion: v1\nkind: {kind}\n{item}"));
            assert_eq!(list.manifests.len(), 1, "{kind}");
        }
        let custom = read(&format!(
            "apiVersion: example.com/v1\nkind: WidgetList\n{item}"
        ));
        assert_eq!(custom.manifests.len(), 1);
    }

    /// A tool's configuration (kind's cluster config) is a note; an object
    /// of Kubernetes' own without `metadata` is unusable, saying what to add.
    #[test]
    fn a_tools_configuration_is_a_note() {
        let kind = read(
            "kind: Cluster\napiVersion: kind.x-k8s.io/v1alpha4\nnodes:\n- role: control-plane\n",
        );
        assert!(kind.unusable.is_empty() && kind.manifests.is_empty());
        assert!(
            kind.notes[0].text.starts_with(
                "`kind: Cluster` of `kind.x-k8s.io/v1alpha4` without `metadata`, which every \
                 Kubernetes object has: a tool's own configuration"
            ),
            "{}",
            kind.notes[0].text
        );
        let own = read("apiVersion: v1\nkind: ConfigMap\ndata: {a: b}\n");
        assert_eq!(
            own.unusable[0].reason,
            "no `metadata`: an object needs one, with its `metadata.name`"
        );
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

    /// A `{{` is content where it parses (in a quoted string, a comment, a
    /// block scalar); a document holding one that does not parse, or one
    /// in a name or a key, is a template, noted at its own line. A file and
    /// standard input (read as `read_text` reads it) find the same in the
    /// same bytes.
    #[test]
    fn a_template_is_a_document_not_a_file() {
        let parses = [
            "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: c\n    image: i\n    args: [\"--log-format\", \"{{.Time}}\"]\n",
            "# rendered from {{ .Values.image }}\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n",
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: dashboards}\ndata:\n  pods.json: |\n    {\"legendFormat\": \"{{pod}}\"}\n",
            "{\"apiVersion\": \"v1\", \"kind\": \"ConfigMap\", \"metadata\": {\"name\": \"c\", \"annotations\": {\"a\": \"{{x}}\"}}}\n",
        ];
        // Each with the notes' lines and what they say, and how many
        // objects stand around them.
        type Expected<'a> = (&'a str, &'a [(usize, &'a str)], usize);
        let templates: [Expected; 5] = [
            (
                "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ .Release.Name }}\n",
                &[(1, "`{{` ")],
                0,
            ),
            (
                "{{- if .Values.enabled }}\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n{{- end }}\n",
                &[(1, "`{{` at line 1, Helm's syntax")],
                0,
            ),
            (
                "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\nmetadata:\n  labels:\n    {{- include \"labels\" . | nindent 4 }}\n",
                &[(5, "`{{` at line 7, Helm's syntax")],
                1,
            ),
            (
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: \"{{ .Release.Name }}-web\"\n",
                &[(1, "`{{` in `metadata.name`, Helm's syntax")],
                0,
            ),
            (
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\n  namespace: ${NAMESPACE:-default}\n",
                &[(1, "`${` in `metadata.namespace`, envsubst's syntax")],
                0,
            ),
        ];
        let dir = std::env::temp_dir().join(format!("templates-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let texts = parses.iter().chain(templates.iter().map(|t| &t.0));
        for (i, text) in texts.enumerate() {
            let path = dir.join(format!("{i}.yaml"));
            std::fs::write(&path, text).unwrap();
            let mut from_file = Inputs::default();
            read_each(
                &[path.display().to_string()],
                Search::default(),
                &mut |input| from_file.take(input),
            );
            let from_stdin = read(text);
            assert_eq!(found(&from_file), found(&from_stdin), "{text}");
            let (objects, unusable, _) = found(&from_stdin);
            assert!(unusable.is_empty(), "{text}: {unusable:?}");
            match templates.iter().find(|t| t.0 == *text) {
                None => {
                    assert_eq!((objects.len(), from_stdin.notes.len()), (1, 0), "{text}")
                }
                Some((_, notes, objects_around)) => {
                    assert_eq!(objects.len(), *objects_around, "{text}");
                    assert_eq!(from_stdin.notes.len(), notes.len(), "{text}");
                    for (note, (line, says)) in from_stdin.notes.iter().zip(notes.iter()) {
                        assert_eq!(note.source.line, *line, "{text}");
                        assert!(note.unrendered);
                        assert!(note.text.contains(says), "{text}: {}", note.text);
                    }
                }
            }
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A rendered file whose one document is broken hides none of the
    /// others, whatever `{{` the others hold in their values.
    #[test]
    fn one_broken_document_hides_no_other() {
        let text = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: rules}\ndata:\n  alert: \"{{ $labels.instance }} is down\"\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n\tname: broken\n---\napiVersion: v1\nkind: Service\nmetadata: {name: web}\n";
        let read = read(text);
        assert_eq!(read.manifests.len(), 2, "{:?}", read.unusable);
        assert_eq!(read.unusable.len(), 1);
        assert_eq!(read.unusable[0].source.line, 10, "{:?}", read.unusable);
        assert!(read.notes.is_empty(), "{:?}", read.notes);
    }

    /// A chart's files are noted once and judged never; a kustomization
    /// notes the patches it names, which are not judged alone; a hidden
    /// directory is named, and read when asked for.
    #[test]
    fn what_a_tool_owns_and_hidden_directories() {
        let root = std::env::temp_dir().join(format!("owned-{}", std::process::id()));
        let pod = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, image: i}]}\n";
        for (path, text) in [
            ("chart/Chart.yaml", "apiVersion: v2\nname: web\n"),
            ("chart/values.yaml", "replicas: 1\n"),
            ("chart/templates/pod.yaml", pod),
            (
                "overlay/kustomization.yaml",
                "resources: [pod.yaml]\npatches:\n- path: patch.yaml\n",
            ),
            ("overlay/pod.yaml", pod),
            (
                "overlay/patch.yaml",
                "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec: {replicas: 3}\n",
            ),
            (".config/pod.yaml", pod),
            (".git/config.yaml", pod),
        ] {
            let path = root.join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        let at = |path: &str| root.join(path).display().to_string();
        let run = |inputs: &[String], hidden: bool| {
            let mut read: Inputs = Inputs::default();
            read_each(inputs, Search { hidden }, &mut |input| read.take(input));
            read
        };
        let read = run(&[at("")], false);
        let files: Vec<&str> = read
            .manifests
            .iter()
            .map(|m| m.source.file.as_str())
            .collect();
        assert_eq!(files, [at("overlay/pod.yaml")], "{:?}", read.unusable);
        assert!(read.unusable.is_empty(), "{:?}", read.unusable);
        let notes: Vec<(String, &str)> = read
            .notes
            .iter()
            .map(|n| (n.source.file.clone(), n.text.as_str()))
            .collect();
        assert_eq!(notes.len(), 3, "{notes:#?}");
        assert!(
            notes[0].1.starts_with("hidden directories left out: ")
                && notes[0].1.contains(".config (1 file)")
                && !notes[0].1.contains(".git"),
            "{notes:?}"
        );
        let chart = std::fs::canonicalize(root.join("chart")).unwrap();
        assert_eq!(notes[1].0, chart.join("Chart.yaml").display().to_string());
        assert!(notes[1].1.starts_with("a Helm chart"), "{notes:?}");
        assert_eq!(notes[2].0, at("overlay/kustomization.yaml"));
        assert!(
            notes[2]
                .1
                .starts_with("a Kustomization (with the 1 file it names as its input)"),
            "{notes:?}"
        );
        // Hidden directories read when asked; `.git` never.
        let read = run(&[at("")], true);
        assert_eq!(read.manifests.len(), 2);
        assert_eq!(read.notes.len(), 2);
        // A patch given alone is noted as the kustomization's.
        let read = run(&[at("overlay/patch.yaml")], false);
        assert!(read.manifests.is_empty() && read.unusable.is_empty());
        assert!(
            read.notes[0].text.starts_with("named under `patches` by "),
            "{:?}",
            read.notes
        );
        assert!(read.notes[0].unrendered);
        // A chart's template given alone is the chart's.
        let read = run(&[at("chart/templates/pod.yaml")], false);
        assert!(read.manifests.is_empty());
        assert!(read.notes[0].text.starts_with("a Helm chart"));
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn typed_lists_are_read_item_by_item() {
        let read = read(
            "apiVersion: v1\nkind: ConfigMapList\nmetadata: {resourceVersion: \"7\"}\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: a}\n",
        );
        assert_eq!(read.manifests.len(), 1, "{:?}", read.unusable);
        assert_eq!(
            read.manifests[0].source.to_string(),
            "m.yaml:5 (List item 0)"
        );
        // An item that leaves both out is of the list's kind and version;
        // one that names either keeps what it names, and lacks the other,
        // as kubectl reads it (found by `fuzz/manifests_cut`).
        let defaulted = super::tests::read(
            "apiVersion: v1\nkind: ConfigMapList\nitems:\n- metadata: {name: a}\n- kind: Secret\n  metadata: {name: b}\n- apiVersion: v1\n  metadata: {name: c}\n",
        );
        let kinds: Vec<String> = defaulted
            .manifests
            .iter()
            .map(|m| format!("{} {}", m.object()["apiVersion"], m.object()["kind"]))
            .collect();
        assert_eq!(kinds, ["\"v1\" \"ConfigMap\""]);
        let refused: Vec<&str> = defaulted
            .unusable
            .iter()
            .map(|u| u.reason.as_str())
            .collect();
        assert_eq!(
            refused,
            [
                "not a Kubernetes object: no `apiVersion`",
                "not a Kubernetes object: no `kind`"
            ]
        );
        // The same in JSON, where kubectl writes `kind` after `items`.
        let mut json: Inputs = Inputs::default();
        read_text(
            "m.json",
            r#"{"apiVersion": "v1", "items": [{"metadata": {"name": "a"}}], "kind": "ConfigMapList"}"#,
            &mut json,
        );
        assert_eq!(json.manifests.len(), 1, "{:?}", json.unusable);
        assert_eq!(json.manifests[0].object()["kind"], "ConfigMap");
    }

    /// Lines ended by CR alone: the first document read, as kubectl reads
    /// it, the rest unusable where kubectl drops it without a word; lines
    /// counted as YAML counts them.
    #[test]
    fn cr_only_line_ends() {
        let text = "# c\rapiVersion: v1\rkind: ConfigMap\rmetadata: {name: a}\r---\r\rapiVersion: v1\rkind: ConfigMap\rmetadata: {name: b}\r";
        let first = read(text);
        assert_eq!(first.manifests.len(), 1);
        assert_eq!(first.manifests[0].source.line, 2);
        assert_eq!(first.unusable.len(), 1);
        assert_eq!(first.unusable[0].source.line, 7);
        assert!(first.unusable[0].reason.contains("end with CR alone"));
        // An empty first document is kubectl's first: nothing read.
        let empty_first =
            read("---\r# nothing\r---\rapiVersion: v1\rkind: ConfigMap\rmetadata: {name: a}\r");
        assert!(empty_first.manifests.is_empty());
        assert_eq!(empty_first.unusable[0].source.line, 4);
        // One document alone is read whole.
        let one = read("apiVersion: v1\rkind: ConfigMap\rmetadata: {name: a}\r");
        assert_eq!((one.manifests.len(), one.unusable.len()), (1, 0));
    }

    /// kubectl reads no List inside a List.
    #[test]
    fn a_list_inside_a_list_is_unusable() {
        let read = read(
            "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: List\n  items: []\n- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: a}\n",
        );
        assert_eq!(read.manifests.len(), 1);
        assert_eq!(
            read.unusable[0].source.to_string(),
            "m.yaml:4 (List item 0)"
        );
        assert!(read.unusable[0].reason.starts_with("a List inside a List"));
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
        let names: Vec<String> = read
            .manifests
            .iter()
            .map(|m| m.object()["kind"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(names, ["ConfigMap", "Pod", "Pod"]);
        assert_eq!(
            read.manifests[1].source.to_string(),
            "m.yaml:10 (List item 0)"
        );
        let problems: Vec<String> = read
            .unusable
            .iter()
            .map(|u| format!("{}: {}", u.source, u.reason))
            .collect();
        assert_eq!(problems.len(), 2, "{problems:#?}");
        assert_eq!(
            problems[0],
            "m.yaml:14 (List item 1): not a Kubernetes object: a string"
        );
        assert!(
            problems[1].starts_with("m.yaml:27: not YAML")
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
        let numbered = read("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: 2024}\n");
        assert_eq!(
            numbered.unusable[0].reason,
            "`metadata.name` is a number, and a name is a string: quote it"
        );
        let twice = read(&object("  annotations:\n    a: b\n    a: c\n"));
        assert!(twice.manifests.is_empty());
        assert!(
            twice.unusable[0]
                .reason
                .contains("the key \"a\" is given twice"),
            "{:?}",
            twice.unusable
        );
        let fine = read(&object(
            "  annotations:\n    example.com/owner: \"1\"\n  labels: null\n",
        ));
        assert_eq!(fine.manifests.len(), 1, "{:?}", fine.unusable);
        // Nested: a pod template's, a claim template's; a custom
        // resource's nested metadata is its CRD's business.
        let deployment = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec:\n  selector: {matchLabels: {a: b}}\n  template:\n    metadata:\n      annotations:\n        sidecar.istio.io/inject: false\n    spec: {containers: [{name: c, image: i}]}\n";
        assert_eq!(
            read(deployment).unusable[0].reason,
            "`spec.template.metadata.annotations` \"sidecar.istio.io/inject\" is a boolean, and the API server takes only strings: quote it"
        );
        let claims = "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: s}\nspec:\n  selector: {matchLabels: {a: b}}\n  template: {spec: {containers: [{name: c, image: i}]}}\n  volumeClaimTemplates:\n  - metadata: {name: ok}\n  - metadata: {name: data, labels: {size: 1}}\n";
        assert_eq!(
            read(claims).unusable[0].reason,
            "`spec.volumeClaimTemplates[1].metadata.labels` \"size\" is a number, and the API server takes only strings: quote it"
        );
        let custom = "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\nspec:\n  metadata: {annotations: {on: true}}\n";
        assert_eq!(read(custom).manifests.len(), 1);
    }

    #[test]
    fn merge_keys_are_merged() {
        let read = read(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  annotations:\n    <<: {example.com/owner: me}\n    example.com/team: web\n",
        );
        assert_eq!(read.manifests.len(), 1, "{:?}", read.unusable);
        assert_eq!(
            read.manifests[0].object()["metadata"]["annotations"],
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
        let mut read: Inputs = Inputs::default();
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
