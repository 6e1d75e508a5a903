//! The third stage of reading: what a document parsed into JSON is to the
//! check. An object, with its file and line (and its place in a `List`);
//! the items of a `List`, or of a typed list such as `ConfigMapList`, as
//! `kubectl get -o yaml` writes them; no object at all (a note); a
//! template, a kustomize configuration (notes that say what to render); or
//! an object the API server would refuse (unusable, with the reason the
//! fourth stage, `refusals`, gives).

use serde_json::Value;

use super::document::Found;
use super::{Input, Learn, Manifest, Note, Source, Unusable, file_source, refusals, templates};

/// What `found` is, in order: objects, notes, what cannot be used.
pub(super) fn take<F: Learn>(found: Found, file: &str) -> Vec<Input<F>> {
    let mut out = Vec::new();
    let found_one = &mut |input| out.push(input);
    match found {
        Found::Document(line, Ok(value)) => {
            take_document(value, None, file_source(file, line), found_one)
        }
        Found::Object { line, value, json } => {
            take_document(value, Some(json), file_source(file, line), found_one)
        }
        Found::Document(line, Err(reason)) => found_one(Input::Unusable(Unusable {
            source: file_source(file, line),
            reason,
        })),
        Found::Item {
            line,
            index,
            value,
            json,
        } => {
            let source = Source {
                item: Some(index),
                ..file_source(file, line)
            };
            take_item(value, json, source, found_one)
        }
        Found::Template(line, template) => found_one(Input::Note(Note {
            source: file_source(file, line),
            text: templates::note(&template),
            unrendered: true,
        })),
    }
    out
}

/// Whether an object's `kind` names a list (`List`, `ConfigMapList`): one
/// test for every reader of Lists here. In Kubernetes' own groups, the
/// list of a kind the API server serves: kubectl finds no kind for another
/// (`kind: NotAList` in `v1`) and refuses the document whole, as `check`
/// then does, naming the kind.
pub(super) fn names_a_list(object: &serde_json::Map<String, Value>) -> bool {
    let text = |field: &str| object.get(field).and_then(Value::as_str);
    let Some(kind) = text("kind") else {
        return false;
    };
    match kind.strip_suffix("List") {
        Some("") => true,
        // Without an `apiVersion` it is refused either way, for that.
        Some(item) => {
            text("apiVersion").is_none_or(|version| crate::refusals::served(version, item))
        }
        None => false,
    }
}

/// An item of a typed list (`ConfigMapList`) that leaves out its
/// `apiVersion` and `kind` is of the list's version and kind, as kubectl
/// reads it.
pub(super) fn of_the_list(list: &serde_json::Map<String, Value>, item: &mut Value) {
    let kind = text(list, "kind");
    let (Some(kind), Some(fields)) = (
        kind.strip_suffix("List").filter(|kind| !kind.is_empty()),
        item.as_object_mut(),
    ) else {
        return;
    };
    // Only an item that names neither (`decodeToList`, apimachinery's
    // unstructured helpers): one that names either keeps what it names.
    if text(fields, "kind").is_empty() && text(fields, "apiVersion").is_empty() {
        fields.insert("kind".into(), kind.into());
        fields.insert("apiVersion".into(), text(list, "apiVersion").into());
    }
}

/// A field's text, `""` where it is missing or no string, as apimachinery's
/// `GetKind` and `GetAPIVersion` read it.
fn text<'m>(map: &'m serde_json::Map<String, Value>, field: &str) -> &'m str {
    map.get(field).and_then(Value::as_str).unwrap_or_default()
}

/// A document: an object, a list of objects (`List`, or a typed list
/// such as `ConfigMapList`, as `kubectl get -o yaml` writes them), or
/// something unusable.
/// `json`, where given, is `value`'s own JSON, as its reader wrote it.
fn take_document<F: Learn>(
    value: Value,
    json: Option<String>,
    source: Source,
    found: &mut dyn FnMut(Input<F>),
) {
    if value.is_null() {
        return;
    }
    match is_list(&value) {
        true => take_items(&value, &source, found),
        false => take_object(value, json, source, found),
    }
}

/// Whether `value` is a List: a kind that ends so, with `items`.
fn is_list(value: &Value) -> bool {
    value
        .as_object()
        .is_some_and(|object| names_a_list(object) && object.contains_key("items"))
}

/// A List's items, each at its place in it, of the list's kind where
/// they name none (`of_the_list`).
fn take_items<F: Learn>(list: &Value, source: &Source, found: &mut dyn FnMut(Input<F>)) {
    let Some(items) = list["items"].as_array() else {
        found(Input::Unusable(Unusable {
            source: source.clone(),
            reason: "a List whose `items` is not a list".to_string(),
        }));
        return;
    };
    let no_fields = serde_json::Map::new();
    let fields = list.as_object().unwrap_or(&no_fields);
    for (i, item) in items.iter().enumerate() {
        let source = Source {
            item: Some(i),
            ..source.clone()
        };
        let mut item = item.clone();
        of_the_list(fields, &mut item);
        take_item(item, None, source, found);
    }
}

/// An item of a List: kubectl reads no List inside a List (it refuses the
/// whole List that holds one: its other items are judged here, and the run
/// exits 2).
fn take_item<F: Learn>(
    value: Value,
    json: Option<String>,
    source: Source,
    found: &mut dyn FnMut(Input<F>),
) {
    match is_list(&value) {
        true => found(Input::Unusable(Unusable {
            source,
            reason: "a List inside a List, which kubectl refuses with the whole List that holds \
                     it: give its items to the outer List"
                .to_string(),
        })),
        false => take_object(value, json, source, found),
    }
}

/// A document of the input: an object to check, or no object at all (a
/// note), or an object that cannot be used.
fn take_object<F: Learn>(
    value: Value,
    json: Option<String>,
    source: Source,
    found: &mut dyn FnMut(Input<F>),
) {
    if let Some((text, unrendered)) = not_an_object(&value, source.item.is_some()) {
        found(Input::Note(Note {
            source,
            text,
            unrendered,
        }));
        return;
    }
    match refusals::object_problem(&value) {
        None => match F::learn(&value) {
            Ok(facts) => found(Input::Manifest(Manifest::read(&value, json, source, facts))),
            Err(reason) => found(Input::Unusable(Unusable { source, reason })),
        },
        Some(reason) => found(Input::Unusable(Unusable { source, reason })),
    }
}

/// What a document is when it is no object for the cluster, said in a note
/// (and whether a tool renders objects from it): a document without a
/// `kind` (not a List's item, which takes the List's), a tool's
/// configuration, a template, a kustomize configuration.
fn not_an_object(value: &Value, item: bool) -> Option<(String, bool)> {
    if !item && !value.get("kind").is_some_and(Value::is_string) {
        let what = crate::refusals::what(value);
        return Some((
            format!("not a Kubernetes object ({what}, without a `kind`): skipped"),
            false,
        ));
    }
    if let Some(config) = tool_config(value) {
        return Some((
            format!(
                "{config} without `metadata`, which every Kubernetes object has: a tool's own \
                 configuration (a kind cluster's, say), skipped; if it is meant for the cluster, \
                 give it `metadata.name`"
            ),
            false,
        ));
    }
    if let Some(template) = templates::in_metadata(value) {
        return Some((templates::note(&template), true));
    }
    served_by_no_cluster(value).map(|api_version| {
        let text = format!(
            "a kustomize configuration (`apiVersion: {api_version}`), which no cluster serves: \
             skipped; what it changes shows in what `kubectl kustomize` renders"
        );
        (text, false)
    })
}

/// `kind: Cluster` of `kind.x-k8s.io/v1alpha4`, for an object of another
/// group than Kubernetes' own that has no `metadata`: how a tool's
/// configuration file looks (kind's, k3d's), which no API server takes.
fn tool_config(value: &Value) -> Option<String> {
    let (kind, api_version) = (value["kind"].as_str()?, value["apiVersion"].as_str()?);
    let (group, _) = policy_core::kinds::group_version(api_version);
    let tool = value.get("metadata").is_none() && !policy_core::kinds::kubernetes_group(group);
    tool.then(|| format!("`kind: {kind}` of `{api_version}`"))
}

/// The `apiVersion` of a kustomize transformer or generator configuration
/// (`builtin`, `kustomize.config.k8s.io/…`): input to kustomize, never an
/// object that a cluster stores.
fn served_by_no_cluster(value: &Value) -> Option<&str> {
    let api_version = value.get("apiVersion")?.as_str()?;
    let kustomize = matches!(
        policy_core::kinds::group_version(api_version),
        ("", "builtin") | ("kustomize.config.k8s.io", _)
    );
    kustomize.then_some(api_version)
}
