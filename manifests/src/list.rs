//! A List, as kubectl's decoder reads one (apimachinery's `decodeToList`):
//! a document whose `kind` names a list (`List`, or a typed list such as
//! `ConfigMapList`, as `kubectl get -o yaml` writes them) and that has
//! `items` is its items, each at its place in it, of the list's kind where
//! it names none. The last step of parsing, on the worker that parsed the
//! document (or the entry): what leaves here is an object, an item, or a
//! document that cannot be used, never a List.

use serde_json::Value;

use super::document::Found;

/// Whether an object's `kind` names a list (`List`, `ConfigMapList`): one
/// test for every reader of Lists here. In Kubernetes' own groups, the
/// list of a kind the API server serves: kubectl finds no kind for another
/// (`kind: NotAList` in `v1`) and refuses the document whole, as `check`
/// then does, naming the kind.
pub(super) fn names_a_list(object: &serde_json::Map<String, Value>) -> bool {
    let Some(kind) = object.get("kind").and_then(Value::as_str) else {
        return false;
    };
    match kind.strip_suffix("List") {
        Some("") => true,
        // Without an `apiVersion` it is refused either way, for that.
        Some(item) => object
            .get("apiVersion")
            .and_then(Value::as_str)
            .is_none_or(|version| crate::refusals::served(version, item)),
        None => false,
    }
}

/// Whether `value` is a List: a kind that ends so, with `items`.
fn is_list(value: &Value) -> bool {
    value
        .as_object()
        .is_some_and(|object| names_a_list(object) && object.contains_key("items"))
}

/// A document as parsed, handed out: its items, from `from`, if it is a
/// List (each at its line in `lines` where the cut found as many entries
/// as it holds, at the document's line otherwise), or itself. `json`,
/// where given, is the document's own JSON, as its reader wrote it.
pub(super) fn hand_out(
    line: usize,
    value: Value,
    json: Option<String>,
    lines: Option<&[usize]>,
    from: usize,
    found: &mut dyn FnMut(Found),
) {
    let Value::Object(mut map) = value else {
        return found(Found::Object { line, value, json });
    };
    if !(names_a_list(&map) && map.contains_key("items")) {
        let value = Value::Object(map);
        return found(Found::Object { line, value, json });
    }
    let Some(Value::Array(items)) = map.remove("items") else {
        return found(Found::Unusable {
            line,
            item: None,
            reason: "a List whose `items` is not a list".to_string(),
        });
    };
    let lines = lines.filter(|lines| lines.len() == items.len());
    for (index, value) in items.into_iter().enumerate().skip(from) {
        let line = lines.map_or(line, |lines| lines[index]);
        found(item(&map, value, None, line, index));
    }
}

/// An item of a List, at its place in it: of the list's kind where it
/// names none (`of_the_list`). kubectl reads no List inside a List (it
/// refuses the whole List that holds one: its other items are judged
/// here, and the run exits 2). `json`, where given, is the item's own, as
/// its reader wrote it: kept where the item is as it was read.
pub(super) fn item(
    list: &serde_json::Map<String, Value>,
    mut value: Value,
    json: Option<String>,
    line: usize,
    index: usize,
) -> Found {
    if is_list(&value) {
        return Found::Unusable {
            line,
            item: Some(index),
            reason: "a List inside a List, which kubectl refuses with the whole List that holds \
                     it: give its items to the outer List"
                .to_string(),
        };
    }
    let json = match of_the_list(list, &mut value) {
        true => None,
        false => json,
    };
    Found::Item {
        line,
        index,
        value,
        json,
    }
}

/// An item of a typed list (`ConfigMapList`) that leaves out its
/// `apiVersion` and `kind` is of the list's version and kind, as kubectl
/// reads it; whether the item was given them.
pub(super) fn of_the_list(list: &serde_json::Map<String, Value>, item: &mut Value) -> bool {
    let kind = text(list, "kind");
    let (Some(kind), Some(fields)) = (
        kind.strip_suffix("List").filter(|kind| !kind.is_empty()),
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
