//! The reader held to a second reading of the same bytes, for the fuzz
//! targets (feature `fuzzing`) and the property tests: a stream cut ahead
//! and read entry by entry against the same text parsed whole, and a JSON
//! stream against serde_json's own reading of it.

use std::io;

use serde_json::Value;

use crate::document::{self, Finish, Found};
use crate::list;
use crate::stream::{read, scan};
use crate::{Inputs, read_bytes};

/// Whether `text`, cut and read as a stream (Lists entry by entry), gives
/// what a parse of the whole text gives: the same documents and items, in
/// order, but the entries a List hands out before an error further down.
pub fn cut_agrees(text: &str) -> Result<(), String> {
    // Content on a `---` line the stream refuses, as kubectl does; read
    // whole (`documents`, for test files and policies) it is YAML's.
    if crate::cut::spans(text).iter().any(|span| span.on_marker) {
        return Ok(());
    }
    let (streamed, whole) = both(text);
    let (streamed, whole) = (before_errors(streamed), before_errors(whole));
    match streamed == whole {
        true => Ok(()),
        false => Err(format!("streamed: {streamed:?}\nwhole:    {whole:?}")),
    }
}

/// Whether bytes that serde_json reads as a stream of JSON values are read
/// as those values: every object the reader takes is one of them (or an
/// item of a List among them), as it was written, and nothing is lost
/// without a word.
pub fn json_agrees(bytes: &[u8]) -> Result<(), String> {
    let values: Result<Vec<Value>, _> = serde_json::Deserializer::from_slice(bytes)
        .into_iter::<Value>()
        .collect();
    let Ok(values) = values else {
        return Ok(());
    };
    if values.is_empty() {
        return Ok(());
    }
    let mut pool = Vec::new();
    for value in values.iter() {
        pool.push(value);
        if let Some(Value::Array(items)) = value.get("items") {
            pool.extend(items.iter());
        }
    }
    let mut read: Inputs = Inputs::default();
    read_bytes("stream.json", bytes, &mut read);
    for manifest in &read.manifests {
        let object = manifest.object();
        if !pool.contains(&&object) {
            return Err(format!(
                "{}: the reader took {object} where serde_json read {values:?}",
                manifest.source
            ));
        }
    }
    // An empty document (`null`, `{}`) kubectl skips without a word.
    let said = read.manifests.len() + read.unusable.len() + read.notes.len();
    let meant = values
        .iter()
        .any(|value| value.as_object().is_some_and(|map| !map.is_empty()));
    match (said, meant) {
        (0, true) => Err(format!("nothing said of {values:?}")),
        _ => Ok(()),
    }
}

/// Each thing as it is parsed: the stage after is left out.
pub(crate) struct One;

impl Finish<Found> for One {
    fn finish(&self, found: Found) -> Option<Found> {
        Some(found)
    }
}

/// What the stream hands out, and the same text read whole, its Lists
/// handed out as the stream hands them out.
pub(crate) fn both(text: &str) -> (Vec<Found>, Vec<Found>) {
    let mut input = io::Cursor::new(text.as_bytes());
    let scan = scan(&mut input).unwrap();
    let mut streamed = Vec::new();
    read(&mut input, &scan, &One, &mut |f| streamed.push(f)).unwrap();
    let mut whole = Vec::new();
    for (line, value) in document::read(text) {
        match value {
            Ok(value) => whole.extend(list::hand_out(line, value, None, None, 0, &One)),
            Err(reason) => whole.push(Found::Unusable {
                line,
                item: None,
                reason,
            }),
        }
    }
    (as_read_whole(streamed), as_read_whole(whole))
}

/// Each item's line left out (a whole parse knows no line of an item:
/// `item_lines` holds them), and the JSON the reader wrote, as a document
/// read whole.
fn as_read_whole(found: Vec<Found>) -> Vec<Found> {
    found
        .into_iter()
        .map(|found| match found {
            Found::Object { line, value, .. } => Found::Object {
                line,
                value,
                json: None,
            },
            Found::Item { index, value, .. } => Found::Item {
                line: 0,
                index,
                value,
                json: None,
            },
            Found::Unusable {
                item: Some(index),
                reason,
                ..
            } => Found::Unusable {
                line: 0,
                item: Some(index),
                reason,
            },
            found => found,
        })
        .collect()
}

/// Without the entries handed out just before a document's error: a
/// List read entry by entry hands out its entries before its end is
/// read, so a List that breaks further down has had its first entries
/// judged when the error comes (the run then exits 2, its input not
/// all usable); read whole, it gives the error alone.
pub(crate) fn before_errors(found: Vec<Found>) -> Vec<Found> {
    let mut kept: Vec<Found> = Vec::new();
    for found in found {
        // A whole parse knows no templates: a document that does not
        // parse either way, at no line (a template's note is at the
        // document's line, an error at the error's).
        let found = match found {
            Found::Template(..) | Found::Unusable { item: None, .. } => Found::Unusable {
                line: 0,
                item: None,
                reason: "does not parse".to_string(),
            },
            found => found,
        };
        if let Found::Unusable { item: None, .. } = found {
            while matches!(
                kept.last(),
                Some(Found::Item { .. } | Found::Unusable { item: Some(_), .. } | Found::Note(..))
            ) {
                kept.pop();
            }
        }
        kept.push(found);
    }
    kept
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_json_stream_reads_as_serde_json_reads_it() {
        let stream = br#"{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}}
{"apiVersion": "v1", "kind": "List", "items": [{"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "b"}}]}"#;
        assert_eq!(json_agrees(stream), Ok(()));
        // What serde_json does not read is not held to it.
        assert_eq!(json_agrees(b"{\"a\": "), Ok(()));
    }

    #[test]
    fn a_stream_cut_reads_as_the_whole_text() {
        let text = "kind: List\nitems:\n- {kind: Pod}\n- kind: Pod\n---\nkind: ConfigMap\n";
        assert_eq!(cut_agrees(text), Ok(()));
        // Found by `fuzz/manifests_cut`: a line indented less than the
        // entry's node, which go-yaml leaves unread in the entry alone and
        // refuses in the List.
        for text in [
            "kind: List\nitems:\n  - a: v1\n   www\n",
            "kind: List\nitems:\n  - a: v1\n   www\n  - b: 1\n",
            "kind: List\nitems:\n  - a: &x v1\n   www\n",
            // A line break the cut does not see, then column 0.
            "kind: List\nitems:\n  - a\r%b\n",
            "kind: List\nitems:\n  - a\u{2028}b: 1\n",
            "kind: List\nitems:\n  - a\r\n  - b\n",
            // A line at the entries' column that is no entry, which ends
            // the sequence only in the cut: `items: ~` around the cut.
            "kind: List\nitems:\n  - a\n  ~\n",
            "kind: List\nitems:\n  - a\n ~\n",
        ] {
            assert_eq!(cut_agrees(text), Ok(()), "{text:?}");
        }
    }
}
