//! The documents of one input's text, as JSON values with the line each
//! starts on, read as the YAML spec and kubectl mean them: YAML streams
//! (a document may start on its `---` line, `--- {...}`), merge keys, a
//! byte-order mark, JSON (which is YAML), and JSON values one after another
//! (`kubectl get -o json` in a loop, NDJSON). JSON or YAML is decided by the
//! content, never by the file's name.
//!
//! kubectl's reader cuts a stream at its document markers and hands each
//! piece to its YAML library alone; so does this (`cut.rs`), and each piece
//! is read as kubectl reads it (`yaml.rs`): every document gets its line,
//! and a broken one hides none of the others.
//!
//! The second stage of reading, on the worker that parses a document (or a
//! List's entry, `entry`): its text parsed, a template noted where it does
//! not parse, a List split into its items (`list`), and each thing handed
//! straight to the next stage (`Finish`, which `object::Take` is).

use serde_json::Value;

use super::cut::{self, Span};
use super::{list, templates};

/// One document: its value, or why it cannot be read, at a line of the
/// text.
pub type Read = (usize, Result<Value, String>);

/// What the parse stage hands to the next: never a List, whose items
/// come one by one (`list`).
#[derive(Debug, PartialEq)]
pub enum Found {
    /// A document's value, at its line; its JSON where the reader wrote it
    /// and it stands as written.
    Object {
        line: usize,
        value: Value,
        json: Option<String>,
    },
    /// An item of a `List`, at the line of its content (or of its List,
    /// where the cut found no line of its own), and its place in the List.
    Item {
        line: usize,
        index: usize,
        value: Value,
        json: Option<String>,
    },
    /// What cannot be used, at its line (and its place in a List), and why.
    Unusable {
        line: usize,
        item: Option<usize>,
        reason: String,
    },
    /// A document that does not parse and holds template syntax, at its
    /// line, with the note that says how to render it.
    Template(usize, String),
    /// What a user is told of a document, at its line, besides what it
    /// holds.
    Note(usize, String),
}

/// The stage after parsing: what each thing parsed becomes, on the worker
/// that parsed it (`object::Take`, or the thing itself where the parse is
/// tested alone).
pub trait Finish<T>: Sync {
    fn finish(&self, found: Found) -> Option<T>;
}

/// A document cut whole, parsed and handed to `finish`, on the worker that
/// parses it: a List's items one by one, from `from` (those before were
/// handed out already), each at its line in `lines` (the cut's, one for
/// each entry); a document that does not parse and holds template syntax
/// as a template, noted at its first content's line.
pub(super) fn whole<T>(
    piece: Piece<'_>,
    lines: Option<&[usize]>,
    from: usize,
    finish: &dyn Finish<T>,
) -> Vec<T> {
    let (line, value) = yaml_json(piece);
    let found = match value {
        Ok((value, json)) => return list::hand_out(line, value, Some(json), lines, from, finish),
        // Noted at the document's line; the note names the syntax's.
        Err(reason) => unparsed(
            templates::in_text(piece.text, piece.first_line),
            piece.content_line,
            line,
            reason,
        ),
    };
    finish.finish(found).into_iter().collect()
}

/// A text read whole, as `read` reads it (JSON values, or JSON then
/// YAML), each document handed to `finish`.
pub(super) fn all<T>(text: &str, finish: &dyn Finish<T>) -> Vec<T> {
    let mut out = Vec::new();
    for (line, value) in read(text) {
        match value {
            Ok(value) => out.extend(list::hand_out(line, value, None, None, 0, finish)),
            // Where the document starts is not known here: the line the
            // error names is a template's when it holds the syntax
            // (`{{- if .Values.x }}` that opens a chart's template).
            Err(reason) => {
                let at = text.lines().nth(line.saturating_sub(1)).unwrap_or_default();
                let found = unparsed(templates::in_text(at, line), line, line, reason);
                out.extend(finish.finish(found));
            }
        }
    }
    out
}

/// A document that does not parse: a template, noted at `note_line`, where
/// it holds template syntax; unusable at `line` otherwise.
fn unparsed(
    template: Option<templates::Template>,
    note_line: usize,
    line: usize,
    reason: String,
) -> Found {
    match template {
        Some(template) => Found::Template(note_line, templates::note(&template)),
        None => Found::Unusable {
            line,
            item: None,
            reason,
        },
    }
}

/// The fields of a List kept as a top-level `items:` block sequence, read
/// without its entries (`piece`, cut around them), and what its user is
/// told of it (`list::note`): `None` if it is no List whose `items` holds
/// only those entries.
pub(super) fn list_head(
    piece: Piece<'_>,
) -> Option<(serde_json::Map<String, Value>, Option<Found>)> {
    match yaml_document(piece) {
        (line, Ok(Value::Object(map)))
            if map.get("items") == Some(&Value::Null) && list::names_a_list(&map) =>
        {
            let note = list::note(line, &map);
            Some((map, note))
        }
        _ => None,
    }
}

/// An entry of `list`'s `items`, cut from its document, parsed alone as
/// the document it would be on its own and handed to `finish` as the
/// List's item at `index`; `None` if it does not read alone as it reads in
/// its List (the document is then read whole), `Some` of what `finish`
/// made of it otherwise.
pub(super) fn entry<T>(
    piece: Piece<'_>,
    list: &serde_json::Map<String, Value>,
    index: usize,
    finish: &dyn Finish<T>,
) -> Option<Option<T>> {
    // A line break the cut does not see (CR alone, NEL, LS, PS: YAML
    // 1.1's) starts a line at the text's own column 0 inside the entry,
    // which reads otherwise alone than in its List (found by
    // `fuzz/manifests_cut`): read whole.
    if breaks_unseen(piece.text) {
        return None;
    }
    let (value, json) = entry_json(piece).1.ok()?;
    Some(list::item(
        list,
        value,
        Some(json),
        piece.content_line,
        index,
        finish,
    ))
}

/// Whether `text` breaks a line where the cut, which breaks at LF alone,
/// does not.
fn breaks_unseen(text: &str) -> bool {
    let cr_alone = text
        .match_indices('\r')
        .any(|(at, _)| text.as_bytes().get(at + 1) != Some(&b'\n'));
    cr_alone || text.contains(['\u{85}', '\u{2028}', '\u{2029}'])
}

/// Every document of `text`, in order; documents without content (only
/// comments, an empty `---`) are left out.
pub fn read(text: &str) -> Vec<Read> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let json_like = matches!(text.trim_start().as_bytes().first(), Some(b'{' | b'['));
    let json_error = match json_like {
        true => match json_values(text) {
            Ok(values) => return values,
            Err(error) => Some(error),
        },
        false => None,
    };
    let documents: Vec<Read> = cut::spans(text)
        .iter()
        .map(|span| yaml_document(Piece::of(text, span)))
        .collect();
    match json_error {
        // Text that starts as JSON and reads as no YAML either is broken
        // JSON: say where, as JSON.
        Some(error) if documents.iter().all(|(_, value)| value.is_err()) => vec![error],
        _ => documents,
    }
}

/// JSON values one after another, each at its line.
fn json_values(text: &str) -> Result<Vec<Read>, Read> {
    let mut values = Vec::new();
    let mut stream = serde_json::Deserializer::from_str(text).into_iter::<Value>();
    let mut end = 0;
    while let Some(next) = stream.next() {
        match next {
            Ok(value) => {
                let start = end + (text[end..].len() - text[end..].trim_start().len());
                values.push((line_at(text, start), Ok(value)));
                end = stream.byte_offset();
            }
            Err(error) => {
                let message = error.to_string();
                let reason = match message.strip_prefix("recursion limit exceeded") {
                    Some(at) => super::yaml::too_deep(at),
                    None => format!("not JSON: {message}"),
                };
                return Err((error.line().max(1), Err(reason)));
            }
        }
    }
    Ok(values)
}

fn line_at(text: &str, offset: usize) -> usize {
    1 + text.as_bytes()[..offset]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
}

/// A document's text, or an entry of a List's: what is parsed at once.
#[derive(Debug, Clone, Copy)]
pub(super) struct Piece<'t> {
    pub text: &'t str,
    /// The line of the file the piece starts on.
    pub first_line: usize,
    /// The line of its first content.
    pub content_line: usize,
}

impl<'t> Piece<'t> {
    pub fn of(text: &'t str, span: &Span) -> Piece<'t> {
        Piece {
            text: &text[span.start as usize..span.end as usize],
            first_line: span.first_line,
            content_line: span.content_line,
        }
    }
}

/// One document as the JSON the API server reads: a key given twice in a
/// mapping is refused (as kubectl refuses it), merge keys (`<<`) merged. At
/// the line of its content, or of what is wrong with it.
fn yaml_document(piece: Piece<'_>) -> Read {
    let (line, read) = yaml_json(piece);
    (line, read.map(|(value, _)| value))
}

/// `yaml_document`, with the JSON the reader wrote.
pub(super) fn yaml_json(piece: Piece<'_>) -> (usize, Result<(Value, String), String>) {
    yaml_read(piece, false)
}

/// `yaml_json` of a List's entry cut from its document: nothing may
/// follow its node (`yaml::entry_to_json`).
fn entry_json(piece: Piece<'_>) -> (usize, Result<(Value, String), String>) {
    yaml_read(piece, true)
}

fn yaml_read(piece: Piece<'_>, entry: bool) -> (usize, Result<(Value, String), String>) {
    let without_mark;
    let piece = match document_mark(piece.text, piece.first_line) {
        Some(at) => {
            without_mark = [&piece.text[..at], &piece.text[at + '\u{feff}'.len_utf8()..]].concat();
            Piece {
                text: &without_mark,
                ..piece
            }
        }
        None => piece,
    };
    let read = match entry {
        true => super::yaml::entry_to_json(piece.text, piece.first_line),
        false => super::yaml::to_json(piece.text, piece.first_line),
    };
    match read {
        Ok(json) => (
            piece.content_line,
            parse_json(&json).map(|value| (value, json)),
        ),
        Err(_) if directive_alone(piece.text) => (
            piece.content_line,
            Err(
                "a YAML directive (`%YAML`, `%TAG`) before `---`: kubectl cuts documents at \
                 `---` lines, cannot parse the directive without its document, and applies \
                 nothing of this file; remove the directive"
                    .to_string(),
            ),
        ),
        Err(refusal) => (refusal.line, Err(refusal.reason)),
    }
}

/// Whether a document's text, past comments and blank lines, is YAML
/// directives alone: what kubectl's cut leaves of a stream's directives.
fn directive_alone(text: &str) -> bool {
    let mut lines = text
        .lines()
        .filter(|line| cut::has_content(line) || cut::is_directive(line));
    lines.next().is_some_and(cut::is_directive) && lines.all(cut::is_directive)
}

/// The JSON the YAML reader wrote, as a value. Its depth is bounded by
/// the reader's.
fn parse_json(json: &str) -> Result<Value, String> {
    let mut reader = serde_json::Deserializer::from_str(json);
    reader.disable_recursion_limit();
    serde::Deserialize::deserialize(&mut reader)
        .map_err(|e| format!("the YAML reader wrote no JSON ({e}): a bug of policy-runner"))
}

/// Where a byte-order mark opens the document (first thing in it, or
/// first thing after a `---` line that ends an earlier document): kubectl's
/// reader hands its parser each document from there, and the parser drops
/// a mark that opens its input. After the stream's own first `---` line
/// the mark stays in kubectl's first document, and in the first key.
fn document_mark(text: &str, first_line: usize) -> Option<usize> {
    if text.starts_with('\u{feff}') {
        return Some(0);
    }
    if first_line == 1 {
        return None;
    }
    // A document the cut started at its `---` line (`cut::is_marker`),
    // with nothing but a comment after the marker.
    // The mark first: a document rarely holds one, and then the cut's
    // own stage is not asked.
    let (first, rest) = text.split_once('\n')?;
    if !rest.starts_with('\u{feff}') {
        return None;
    }
    let marker = cut::is_marker(first, "---") && {
        let after = first[3..].trim();
        after.is_empty() || after.starts_with('#')
    };
    marker.then_some(first.len() + 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn lines_and_values(text: &str) -> Vec<(usize, Value)> {
        read(text)
            .into_iter()
            .map(|(line, value)| (line, value.unwrap_or_else(|e| json!({ "error": e }))))
            .collect()
    }

    #[test]
    fn a_document_may_start_on_its_marker_line() {
        let text = "a: 1\n--- {b: 2}\n--- |\n  text\n---\n# nothing\n---\n\nc: 3\n";
        assert_eq!(
            lines_and_values(text),
            [
                (1, json!({"a": 1})),
                (2, json!({"b": 2})),
                (3, json!("text\n")),
                (9, json!({"c": 3})),
            ]
        );
        // A `---` inside a value, indented, is no marker; `----` is none.
        assert_eq!(lines_and_values("a: |\n  ---\n").len(), 1);
        assert_eq!(lines_and_values("a: |\n  x\n----: 1\n").len(), 1);
    }

    /// A byte-order mark may open each document of a stream.
    #[test]
    fn a_byte_order_mark_opens_any_document() {
        let text = "a: 1\n---\n\u{feff}b: 2\n--- # c\r\n\u{feff}c: 3\n";
        assert_eq!(
            lines_and_values(text),
            [
                (1, json!({"a": 1})),
                (3, json!({"b": 2})),
                (5, json!({"c": 3}))
            ]
        );
    }

    #[test]
    fn merge_keys_a_byte_order_mark_and_an_end_marker() {
        let text = "\u{feff}base: &b {x: 1}\nm:\n  <<: *b\n  q: 2\n...\n---\nz: 3\n";
        assert_eq!(
            lines_and_values(text),
            [
                (1, json!({"base": {"x": 1}, "m": {"x": 1, "q": 2}})),
                (7, json!({"z": 3})),
            ]
        );
    }

    #[test]
    fn json_one_value_after_another_and_json_before_yaml() {
        let text = "{\"a\": 1}\n{\"b\": 2}{\"c\": 3}\n\n[1]\n";
        assert_eq!(
            lines_and_values(text),
            [
                (1, json!({"a": 1})),
                (2, json!({"b": 2})),
                (2, json!({"c": 3})),
                (4, json!([1])),
            ]
        );
        let mixed = "{\"a\": 1}\n---\nb: 2\n";
        assert_eq!(
            lines_and_values(mixed),
            [(1, json!({"a": 1})), (3, json!({"b": 2}))]
        );
    }

    #[test]
    fn a_broken_document_hides_none_of_the_others() {
        let text = "a: 1\n---\nb: [unclosed\n---\nc: 3\n";
        let read = read(text);
        assert_eq!(read.len(), 3);
        assert_eq!(read[0].1, Ok(json!({"a": 1})));
        let (line, error) = (&read[1].0, read[1].1.as_ref().unwrap_err());
        // At the end of the unclosed document, not at the `---` past it.
        assert_eq!(*line, 3, "the line of the error");
        assert!(
            error.starts_with("not YAML") && error.contains("line 3 column 13"),
            "{error}"
        );
        assert_eq!(read[2].1, Ok(json!({"c": 3})));
        let twice = read_one("a: 1\na: 2\n");
        assert_eq!(
            twice.unwrap_err(),
            "the key \"a\" is given twice (kubectl would keep the last, without a word): keep one"
        );
        let nested = read_one("m:\n  k: 1\n  k: 2\n");
        assert!(
            nested
                .unwrap_err()
                .starts_with("`m`: the key \"k\" is given twice"),
            "{:?}",
            read_one("m:\n  k: 1\n  k: 2\n")
        );
        // At the key's second place, in whichever mapping.
        for (text, line) in [
            ("a: 1\nb:\n  a: 2\n  c: 3\n  a: 4\n", 5),
            ("a: 1\nb: 2\n\n# x\na: 3\n", 5),
            ("items:\n- name: x\n  name: y\n", 3),
            ("m:\n  \"k\": 1\n  k: 2\n", 3),
            ("m: {k: 1, k: 2}\n", 1),
        ] {
            assert_eq!(super::read(text)[0].0, line, "{text}");
        }
    }

    fn read_one(text: &str) -> Result<Value, String> {
        let mut read = read(text);
        assert_eq!(read.len(), 1, "{read:?}");
        read.remove(0).1
    }

    /// Refused at the parser's depth limit, at once: reading a document
    /// costs time in proportion to its length, however deep.
    #[test]
    fn a_document_nested_too_deep_is_refused_saying_so() {
        for depth in [200, 100_000] {
            let text = format!("a: {}{}\n", "[".repeat(depth), "]".repeat(depth));
            let error = read_one(&text).unwrap_err();
            assert!(
                error.starts_with("nested more than 128 levels deep at line 1"),
                "{error}"
            );
            let json = format!("{{\"a\": {}{}}}\n", "[".repeat(depth), "]".repeat(depth));
            let error = read_one(&json).unwrap_err();
            assert!(
                error.starts_with("nested more than 128 levels deep at line 1"),
                "{error}"
            );
        }
        let nested_100 = format!("a: {}{}\n", "[".repeat(100), "]".repeat(100));
        assert!(read_one(&nested_100).is_ok());
        // Brackets in quotes and comments, and a word's apostrophe, open
        // nothing.
        let quoted = format!(
            "a: \"{0}\"\nb: '{0}'\n# {0}\nc: it's [1]\nd: [\"{0}\", '{0}']\n",
            "[".repeat(200)
        );
        assert!(read_one(&quoted).is_ok(), "{:?}", read_one(&quoted));
    }

    #[test]
    fn broken_json_is_reported_as_json() {
        let error = read_one("{\n\"a\": \n").unwrap_err();
        assert!(error.starts_with("not JSON"), "{error}");
        assert_eq!(read("{\n\"a\": \n")[0].0, 3);
    }
}
