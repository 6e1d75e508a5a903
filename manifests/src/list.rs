//! A List, as kubectl's decoder reads one (apimachinery's `decodeToList`):
//! a document whose `kind` names a list (`List`, or a typed list such as
//! `ConfigMapList`, as `kubectl get -o yaml` writes them) and that has
//! `items` is its items, each at its place in it, of the list's kind where
//! it names none. The last step of parsing, on the worker that parsed the
//! document (or the entry): what leaves here is an object, an item, or a
//! document that cannot be used, never a List.

use serde_json::Value;

use super::document::{Finish, Found};

/// Whether kubectl reads an object that has `items` as a List: its
/// decoder takes any object with `items` for one, each item of the kind
/// the list's names less its `List` (`ConfigMapList`'s are ConfigMaps), and
/// kubectl then sends the items of a kind its API server maps: `List`, a
/// kind it serves (`ConfigMap`, which is then not sent itself: `note`), or
/// the list of one (`ConfigMapList`); any kind of another group, which is
/// its CRD's. For another (`kind: NotAList` in `v1`) kubectl finds no kind
/// and refuses the document whole, as `check` then does, naming the kind.
/// One test for every reader of Lists here.
pub(super) fn names_a_list(object: &serde_json::Map<String, Value>) -> bool {
    let Some(kind) = object.get("kind").and_then(Value::as_str) else {
        return false;
    };
    let item = match kind.strip_suffix("List") {
        Some("") => return true,
        Some(item) => item,
        None => kind,
    };
    match object.get("apiVersion").and_then(Value::as_str) {
        Some(version) => crate::refusals::served(version, item),
        // Refused either way, for that: as a list's, or its items'.
        None => item != kind,
    }
}

/// What a user is told of an object that kubectl reads as a List though
/// its kind names none (`kind: ConfigMap` with `items`): the object itself
/// is not sent, without a word from kubectl.
pub(super) fn note(line: usize, list: &serde_json::Map<String, Value>) -> Option<Found> {
    let kind = text(list, "kind");
    (!kind.ends_with("List")).then(|| {
        let said = format!(
            "`kind: {kind}` with `items`: kubectl reads any object that has `items` as a List, \
             and sends its items, not the {kind} itself; its items are judged as kubectl sends \
             them (remove `items` if one {kind} is meant)"
        );
        Found::Note(line, said)
    })
}

/// Whether `value` is read as a List: it has `items` (asked first: most
/// objects have none), of a kind kubectl maps (`names_a_list`).
fn is_list(value: &Value) -> bool {
    value
        .as_object()
        .is_some_and(|object| object.contains_key("items") && names_a_list(object))
}

/// A document as parsed, handed to `finish`: its items, from `from`, if it
/// is a List (each at its line in `lines` where the cut found as many
/// entries as it holds, at the document's line otherwise), or itself.
/// `json`, where given, is the document's own JSON, as its reader wrote
/// it.
pub(super) fn hand_out<T>(
    line: usize,
    value: Value,
    json: Option<String>,
    lines: Option<&[usize]>,
    from: usize,
    finish: &dyn Finish<T>,
) -> Vec<T> {
    let mut map = match value {
        Value::Object(map) if map.contains_key("items") && names_a_list(&map) => map,
        value => {
            return finish
                .finish(Found::Object { line, value, json })
                .into_iter()
                .collect();
        }
    };
    let Some(Value::Array(items)) = map.remove("items") else {
        let reason = "a List whose `items` is not a list".to_string();
        let found = Found::Unusable {
            line,
            item: None,
            reason,
        };
        return finish.finish(found).into_iter().collect();
    };
    let mut out = Vec::with_capacity(items.len() + 1);
    if let Some(note) = note(line, &map).filter(|_| from == 0) {
        out.extend(finish.finish(note));
    }
    let lines = lines.filter(|lines| lines.len() == items.len());
    for (index, value) in items.into_iter().enumerate().skip(from) {
        let line = lines.map_or(line, |lines| lines[index]);
        out.extend(item(&map, value, None, line, index, finish));
    }
    out
}

/// An item of a List, at its place in it, handed to `finish`: of the
/// list's kind where it names none (`of_the_list`). kubectl reads no List
/// inside a List (it refuses the whole List that holds one: its other
/// items are judged here, and the run exits 2). `json`, where given, is
/// the item's own, as its reader wrote it: kept where the item is as it
/// was read.
pub(super) fn item<T>(
    list: &serde_json::Map<String, Value>,
    mut value: Value,
    json: Option<String>,
    line: usize,
    index: usize,
    finish: &dyn Finish<T>,
) -> Option<T> {
    if is_list(&value) {
        return finish.finish(Found::Unusable {
            line,
            item: Some(index),
            reason: "a List inside a List, which kubectl refuses with the whole List that holds \
                     it: give its items to the outer List"
                .to_string(),
        });
    }
    let json = match of_the_list(list, &mut value) {
        true => None,
        false => json,
    };
    finish.finish(Found::Item {
        line,
        index,
        value,
        json,
    })
}

/// An item of a typed list (`ConfigMapList`, or an object kubectl reads as
/// a List) that leaves out its `apiVersion` and `kind` is of the list's
/// version and kind, as kubectl reads it; whether the item was given them.
pub(super) fn of_the_list(list: &serde_json::Map<String, Value>, item: &mut Value) -> bool {
    let kind = text(list, "kind");
    // The item's kind is the list's less its `List`: a `List`'s items
    // are given none, and are refused without one.
    let (Some(kind), Some(fields)) = (
        Some(kind.strip_suffix("List").unwrap_or(kind)).filter(|kind| !kind.is_empty()),
        item.as_object_mut(),
    ) else {
        return false;
    };
    // Only an item that names neither (`decodeToList`, apimachinery's
    // unstructured helpers): one that names either keeps what it names.
    let given = text(fields, "kind").is_empty() && text(fields, "apiVersion").is_empty();
    if given {
        fields.insert("kind".into(), kind.into());
        fields.insert("apiVersion".into(), text(list, "apiVersion").into());
    }
    given
}

/// A field's text, `""` where it is missing or no string, as apimachinery's
/// `GetKind` and `GetAPIVersion` read it.
fn text<'m>(map: &'m serde_json::Map<String, Value>, field: &str) -> &'m str {
    map.get(field).and_then(Value::as_str).unwrap_or_default()
}
