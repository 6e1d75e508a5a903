//! A file read as a stream, the driver of the reader's line of stages: cut
//! into documents line by line first (`cut.rs`), then parsed a batch of
//! documents at a time (`document.rs`, which hands each on), and a `List`
//! kept as a top-level `items:` block sequence (a cluster dump) a batch of
//! entries at a time, each batch on rayon's workers and handed out in
//! order, so that what is held at once is a batch of objects, not the
//! file.
//!
//! An entry is read as the document it would be on its own: its `-`
//! becomes a space, which leaves every column where it was. Whatever does
//! not read alone the same way (an alias of an anchor in another entry, a
//! tag handle, a scalar the cut left open) fails to parse alone, and the
//! document is then read whole, as it always was, from the first entry
//! not yet handed out.

use std::io::{self, BufRead, Read, Seek, SeekFrom};

use super::cut::{self, Cutter, Span};
use super::document::{self, Finish, Found, Piece};
use super::json;
use rayon::prelude::*;

/// What a first pass over a stream's lines found.
#[derive(Debug)]
pub struct Scan {
    spans: Vec<Span>,
    /// Its first content is `{` or `[`: JSON, read whole.
    json_like: bool,
    /// How deep it nests, were it JSON.
    depth: json::Depth,
}

/// Reads `input` to its end, line by line, holding one line at a time.
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) fn scan(input: &mut impl BufRead) -> io::Result<Scan> {
    let mut scanner = Scanner::default();
    let spans = scanner.cut(input, usize::MAX)?;
    Ok(scanner.into_scan(spans))
}

/// Reads `input` to its end and hands out every document of it. A YAML
/// stream is cut a few hundred documents, and at most a few megabytes,
/// ahead of their reading: what is held of a stream of a million documents
/// is the places of a few hundred, not of a million, and of large ones no
/// more than fits in [`BYTES_AHEAD`]. (Where the documents of JSON end is known at its end:
/// it is scanned whole.)
pub fn read_all<T: Send>(
    input: &mut (impl BufRead + Seek + Send),
    finish: &dyn Finish<T>,
    found: &mut dyn FnMut(T),
) -> io::Result<()> {
    let mut scanner = Scanner::default();
    let mut spans = scanner.cut(input, CUT_AHEAD)?;
    if scanner.json_like {
        spans.extend(scanner.cut(input, usize::MAX)?);
        return read(input, &scanner.into_scan(spans), finish, found);
    }
    loop {
        // Reading seeks; the cut goes on from where it stopped.
        let resume = scanner.offset();
        let plain = spans
            .iter()
            .all(|span| !span.on_marker && span.items.is_none());
        if plain && !spans.is_empty() && !scanner.ended {
            // The cut is serial: it goes on beside the parsing of the
            // documents it cut before, which needs no input.
            let texts = texts_of(input, &spans)?;
            input.seek(SeekFrom::Start(resume))?;
            let (finished, next) = rayon::join(
                || parse_plain(&texts, &spans, finish),
                || scanner.cut(input, CUT_AHEAD),
            );
            finished.into_iter().flatten().for_each(&mut *found);
            spans = next?;
            continue;
        }
        let scan = Scan {
            spans,
            json_like: false,
            depth: json::Depth::default(),
        };
        read(input, &scan, finish, found)?;
        if scanner.ended {
            return Ok(());
        }
        input.seek(SeekFrom::Start(resume))?;
        spans = scanner.cut(input, CUT_AHEAD)?;
    }
}

/// How many documents of a YAML stream are cut ahead of their reading.
const CUT_AHEAD: usize = 4 * ENTRIES;

/// How many bytes of documents are cut ahead of their reading, at most (and
/// at least one document, however large): a batch's texts wait while the
/// one before is parsed, and then its values wait for the next, so that a
/// stream of large objects held twice as many of them as small ones.
const BYTES_AHEAD: u64 = 4 << 20;

/// A cut of a stream in progress.
#[derive(Default)]
struct Scanner {
    /// Made at the first line, which may hold the stream's mark.
    cutter: Option<Cutter>,
    line: String,
    content_seen: bool,
    json_like: bool,
    depth: json::Depth,
    ended: bool,
}

impl Scanner {
    /// Cuts the next `count` documents, or fewer where the stream ends or
    /// [`BYTES_AHEAD`] is reached (never none); as many more as it takes to
    /// reach the stream's first content, which says whether it is JSON.
    fn cut(&mut self, input: &mut impl BufRead, count: usize) -> io::Result<Vec<Span>> {
        let mut spans = Vec::new();
        // A cut of the whole rest (`usize::MAX`) has no byte bound.
        let from = self.offset();
        let room = |spans: &Vec<Span>, at: u64| {
            spans.len() < count
                && (count == usize::MAX || spans.is_empty() || at - from < BYTES_AHEAD)
        };
        while !self.ended && (room(&spans, self.offset()) || !self.content_seen) {
            self.line.clear();
            if input.read_line(&mut self.line)? == 0 {
                self.ended = true;
                spans.extend(self.cutter.take().and_then(Cutter::finish));
                break;
            }
            // The stream's mark is no part of its first line; a mark
            // further down is its document's (`documents::yaml_document`
            // drops it), and the cut's offsets count it.
            let first = self.cutter.is_none();
            let cutter =
                self.cutter
                    .get_or_insert_with(|| match self.line.starts_with('\u{feff}') {
                        true => Cutter::new('\u{feff}'.len_utf8() as u64),
                        false => Cutter::new(0),
                    });
            let text = match first {
                true => self.line.strip_prefix('\u{feff}').unwrap_or(&self.line),
                false => &self.line,
            };
            if !self.content_seen && !text.trim_start().is_empty() {
                self.content_seen = true;
                self.json_like = text.trim_start().starts_with(['{', '[']);
            }
            if self.json_like {
                self.depth.line(text);
            }
            spans.extend(cutter.line(text));
        }
        Ok(spans)
    }

    /// Where the next line to cut starts.
    fn offset(&self) -> u64 {
        self.cutter.as_ref().map_or(0, Cutter::offset)
    }

    fn into_scan(self, spans: Vec<Span>) -> Scan {
        Scan {
            spans,
            json_like: self.json_like,
            depth: self.depth,
        }
    }
}

/// Hands out every document of `input`, as `scan` cut it, each finished
/// by `finish`.
pub fn read<T: Send>(
    input: &mut (impl BufRead + Seek),
    scan: &Scan,
    finish: &dyn Finish<T>,
    found: &mut dyn FnMut(T),
) -> io::Result<()> {
    if scan.json_like {
        if scan.depth.deepest <= json::STREAMED_DEPTH && json::read_lists(input, finish, found)? {
            return Ok(());
        }
        // JSON without Lists, or JSON then YAML: read whole, as
        // `documents` decides.
        let text = text_at(input, 0, u64::MAX)?;
        document::all(&text, finish).into_iter().for_each(found);
        return Ok(());
    }
    let mut next = 0;
    while next < scan.spans.len() {
        // A run of documents read whole, a batch at a time on the workers.
        let plain = |span: &Span| !span.on_marker && span.items.is_none();
        let run = scan.spans[next..]
            .iter()
            .take(ENTRIES)
            .take_while(|span| plain(span))
            .count();
        if run > 0 {
            plain_documents(input, &scan.spans[next..next + run], finish, found)?;
            next += run;
            continue;
        }
        let span = &scan.spans[next];
        next += 1;
        if span.on_marker {
            // kubectl's reader takes such a line for a broken separator,
            // and refuses the document (with the one before it).
            finish
                .finish(Found::Unusable {
                    line: span.first_line,
                    item: None,
                    reason: "content on the `---` line, which kubectl refuses as an invalid \
                         document separator: start the document on the next line"
                        .to_string(),
                })
                .into_iter()
                .for_each(&mut *found);
            continue;
        }
        match entries(input, span, finish, found)? {
            Listed::All => {}
            Listed::No => whole(input, span, 0, finish, found)?,
            Listed::Until(from) => whole(input, span, from, finish, found)?,
        }
    }
    Ok(())
}

/// How far reading a document entry by entry went.
#[derive(Debug, PartialEq)]
enum Listed {
    /// Every entry read alone.
    All,
    /// Not a List kept so: none.
    No,
    /// The entries before this one.
    Until(usize),
}

/// Reads the entries of a document, if `scan` found an `items:` block
/// sequence in it and the document around them is a `List` whose `items`
/// holds nothing else.
fn entries<T: Send>(
    input: &mut (impl Read + Seek),
    span: &Span,
    finish: &dyn Finish<T>,
    found: &mut dyn FnMut(T),
) -> io::Result<Listed> {
    let Some(items) = &span.items else {
        return Ok(Listed::No);
    };
    let mut around = text_at(input, span.start, items.start())?;
    around.push_str(&text_at(input, items.end, span.end)?);
    let head = document::list_head(Piece {
        text: &around,
        first_line: span.first_line,
        content_line: span.content_line,
    });
    let Some((list, note)) = head else {
        return Ok(Listed::No);
    };
    note.and_then(|note| finish.finish(note))
        .into_iter()
        .for_each(&mut *found);
    input.seek(SeekFrom::Start(items.start()))?;
    // The entries are parsed a batch at a time on the workers (a dump is a
    // List of many thousands), and handed out in their order.
    let mut index = 0;
    while index < items.entries.len() {
        let batch: Vec<(usize, String, usize)> = (index..items.entries.len().min(index + ENTRIES))
            .map(|i| {
                let (start, end) = items.entry(i);
                let mut bytes = vec![0; (end - start) as usize];
                input.read_exact(&mut bytes)?;
                // The entry's `-` becomes a space: the document it holds,
                // at the columns it was at.
                bytes[items.indent] = b' ';
                let text = String::from_utf8(bytes).map_err(io::Error::other)?;
                let line = items.entries[i].1;
                Ok((i, text, line))
            })
            .collect::<io::Result<_>>()?;
        // Each entry read and finished on a worker; one that does not
        // read alone stops the reading entry by entry.
        let finished: Vec<(usize, Option<Option<T>>)> = batch
            .par_iter()
            .map(|(i, text, line)| {
                let piece = Piece {
                    text,
                    first_line: *line,
                    content_line: cut::content_line(text, *line),
                };
                (*i, document::entry(piece, &list, *i, finish))
            })
            .collect();
        for (i, finished) in finished {
            match finished {
                Some(item) => item.into_iter().for_each(&mut *found),
                None => return Ok(Listed::Until(i)),
            }
        }
        index += batch.len();
    }
    Ok(Listed::All)
}

/// How many entries of a List are parsed at once.
const ENTRIES: usize = 256;

/// Reads a document whole, handing out the entries of its `items` from
/// `from` when entries before it were handed out already.
fn whole<T: Send>(
    input: &mut (impl Read + Seek),
    span: &Span,
    from: usize,
    finish: &dyn Finish<T>,
    found: &mut dyn FnMut(T),
) -> io::Result<()> {
    let text = text_at(input, span.start, span.end)?;
    parse_whole(&text, span, from, finish)
        .into_iter()
        .for_each(found);
    Ok(())
}

/// Parses the document of `span`, its `text`, and finishes what it holds
/// from its List entry `from`: what the workers do, each for a document of
/// their own.
fn parse_whole<T>(text: &str, span: &Span, from: usize, finish: &dyn Finish<T>) -> Vec<T> {
    let lines = span
        .items
        .as_ref()
        .map(|items| cut::entry_lines(text, span.start, items));
    let piece = Piece {
        text,
        first_line: span.first_line,
        content_line: span.content_line,
    };
    document::whole(piece, lines.as_deref(), from, finish)
}

/// Reads the documents of `spans`, none of which needs reading entry by
/// entry, on the workers, and hands them out in their order.
fn plain_documents<T: Send>(
    input: &mut (impl Read + Seek),
    spans: &[Span],
    finish: &dyn Finish<T>,
    found: &mut dyn FnMut(T),
) -> io::Result<()> {
    let texts = texts_of(input, spans)?;
    parse_plain(&texts, spans, finish)
        .into_iter()
        .flatten()
        .for_each(found);
    Ok(())
}

/// The texts of `spans`, one after the other in the input: read at once.
fn texts_of(input: &mut (impl Read + Seek), spans: &[Span]) -> io::Result<Vec<String>> {
    let (Some(first), Some(last)) = (spans.first(), spans.last()) else {
        return Ok(Vec::new());
    };
    let text = text_at(input, first.start, last.end)?;
    if text.len() as u64 != last.end - first.start {
        return Err(io::Error::other("the input changed while it was read"));
    }
    let at = |offset: u64| (offset - first.start) as usize;
    Ok(spans
        .iter()
        .map(|span| text[at(span.start)..at(span.end)].to_string())
        .collect())
}

/// Documents read whole on the workers, each finished, in their order.
fn parse_plain<T: Send>(texts: &[String], spans: &[Span], finish: &dyn Finish<T>) -> Vec<Vec<T>> {
    texts
        .par_iter()
        .zip(spans)
        .map(|(text, span)| parse_whole(text, span, 0, finish))
        .collect()
}

/// The text from `start` to `end` (or the stream's end).
fn text_at(input: &mut (impl Read + Seek), start: u64, end: u64) -> io::Result<String> {
    input.seek(SeekFrom::Start(start))?;
    let mut text = String::new();
    input
        .take(end.saturating_sub(start))
        .read_to_string(&mut text)?;
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agree::{One, before_errors, both};
    use serde_json::json;

    /// How far the first List of `text` reads entry by entry.
    fn listed(text: &str) -> Listed {
        let mut input = io::Cursor::new(text.as_bytes());
        let scan = scan(&mut input).unwrap();
        let span = scan.spans.iter().find(|s| s.items.is_some()).unwrap();
        entries(&mut input, span, &One, &mut |_| {}).unwrap()
    }

    /// Large documents are cut a few megabytes ahead, not a few hundred
    /// documents; one larger than that alone is cut whole; and a stream of
    /// them reads as it reads cut whole.
    #[test]
    fn large_documents_are_cut_by_bytes() {
        let value = "x".repeat(1 << 20);
        let text: String = (0..12)
            .map(|i| {
                format!("kind: ConfigMap\nmetadata: {{name: c{i}}}\ndata: {{v: {value}}}\n---\n")
            })
            .collect();
        let mut scanner = Scanner::default();
        let mut input = io::Cursor::new(text.as_bytes());
        let first = scanner.cut(&mut input, CUT_AHEAD).unwrap();
        // The documents that end before the cut has read 4 MiB: three of
        // a little over 1 MiB each; the fourth is read on by the next cut.
        assert_eq!(first.len(), 3, "{}", first.len());
        let huge = format!("data: {{v: {}}}\n", "y".repeat(BYTES_AHEAD as usize * 2));
        let mut scanner = Scanner::default();
        let one = scanner
            .cut(&mut io::Cursor::new(huge.as_bytes()), CUT_AHEAD)
            .unwrap();
        assert_eq!(one.len(), 1);
        let (spans, whole, ahead) = cut_both_ways(&text);
        assert_eq!(spans, 12);
        assert_eq!(ahead, whole);
    }

    /// How many documents `text` holds, and what it reads as cut whole and
    /// as cut ahead.
    fn cut_both_ways(text: &str) -> (usize, Vec<Found>, Vec<Found>) {
        let mut input = io::Cursor::new(text.as_bytes());
        let scan = scan(&mut input).unwrap();
        let mut whole = Vec::new();
        read(&mut input, &scan, &One, &mut |f| whole.push(f)).unwrap();
        let mut ahead = Vec::new();
        read_all(&mut io::Cursor::new(text.as_bytes()), &One, &mut |f| {
            ahead.push(f)
        })
        .unwrap();
        (scan.spans.len(), whole, ahead)
    }

    /// A stream longer than what is cut ahead reads as it reads cut
    /// whole: documents, Lists read entry by entry and whole, a document
    /// the marker line holds, empty documents, across every boundary.
    #[test]
    fn a_long_stream_cut_ahead_reads_as_cut_whole() {
        let mut text = String::from("\u{feff}# a comment\n---\n---\n");
        for i in 0..3 * CUT_AHEAD + 7 {
            match i % 7 {
                0 => text.push_str(&format!(
                    "kind: List\nitems:\n- {{kind: Pod, n: {i}}}\n- kind: Pod\n  n: {i}\n"
                )),
                1 => text.push_str(&format!("kind: List\nitems:\n- &a {{n: {i}}}\n- *a\n")),
                2 => text.push_str(&format!("--- {{n: {i}}}\n")),
                3 => text.push_str("# nothing\n"),
                _ => text.push_str(&format!("kind: ConfigMap\nmetadata: {{name: c{i}}}\n")),
            }
            if i % 7 != 2 {
                text.push_str("---\n");
            }
        }
        let (spans, whole, ahead) = cut_both_ways(&text);
        assert!(spans > 2 * CUT_AHEAD, "{spans}");
        assert_eq!(ahead, whole);
        // Through a reader whose buffer is smaller than a document.
        let mut small = io::BufReader::with_capacity(7, io::Cursor::new(text.as_bytes()));
        let mut found = Vec::new();
        read_all(&mut small, &One, &mut |f| found.push(f)).unwrap();
        assert_eq!(found, whole);
    }

    /// A long stream of plain documents, whose cut goes on beside the
    /// parsing of the documents cut before it, reads as it reads cut whole,
    /// in order.
    #[test]
    fn a_plain_stream_cut_beside_its_parsing_reads_as_cut_whole() {
        let mut text = String::from("# a comment\n");
        for i in 0..3 * CUT_AHEAD + 5 {
            match i % 4 {
                0 => text.push_str(&format!("kind: ConfigMap\nmetadata: {{name: c{i}}}\n")),
                1 => text.push_str("# nothing\n"),
                2 => text.push_str(&format!("a: [{i}\n")),
                _ => text.push_str(&format!("n: {i}\n...\n")),
            }
            text.push_str("---\n");
        }
        let whole = {
            let mut input = io::Cursor::new(text.as_bytes());
            let scan = scan(&mut input).unwrap();
            let mut found = Vec::new();
            read(&mut input, &scan, &One, &mut |f| found.push(f)).unwrap();
            found
        };
        assert!(whole.len() > 2 * CUT_AHEAD, "{}", whole.len());
        for capacity in [7, 8192] {
            let mut input =
                io::BufReader::with_capacity(capacity, io::Cursor::new(text.as_bytes()));
            let mut found = Vec::new();
            read_all(&mut input, &One, &mut |f| found.push(f)).unwrap();
            assert_eq!(found, whole, "a reader of {capacity} bytes");
        }
    }

    fn same(text: &str) -> Vec<Found> {
        let (streamed, whole) = both(text);
        assert_eq!(streamed, whole, "{text}");
        streamed
    }

    #[test]
    fn a_list_is_read_entry_by_entry_as_it_reads_whole() {
        let list = "apiVersion: v1\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: a\n    annotations: {x: \"1\"}\n  data:\n    script: |\n      #!/bin/sh\n      - echo\n\n-   kind: Pod\n    metadata: {name: b}\n# between\n- - nested\n  - sequence\n-\n  kind: Secret\n- \"quoted \\\n  on two lines\"\n- plain\n  on two\nkind: List\nmetadata:\n  resourceVersion: \"\"\n";
        let found = same(list);
        assert_eq!(listed(list), Listed::All);
        assert_eq!(found.len(), 6);
        assert_eq!(
            found[0],
            Found::Item {
                line: 0,
                index: 0,
                value: json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "annotations": {"x": "1"}}, "data": {"script": "#!/bin/sh\n- echo\n"}}),
                json: None,
            }
        );
        assert_eq!(
            found[5],
            Found::Item {
                line: 0,
                index: 5,
                value: json!("plain on two"),
                json: None,
            }
        );
        // Indented entries, a typed list, and documents around it.
        let typed = "a: 1\n---\nkind: PodList\nitems:\n  - kind: Pod\n  - kind: Pod\n    x: [1,\n      2]\n---\nb: 2\n";
        assert_eq!(same(typed).len(), 4);
        assert_eq!(listed(typed), Listed::All);
    }

    /// Each item at the line of its first content, read entry by entry or
    /// whole (an alias makes the second List read whole).
    #[test]
    fn item_lines() {
        let lines = |text: &str| {
            let mut input = io::Cursor::new(text.as_bytes());
            let scan = scan(&mut input).unwrap();
            let mut lines = Vec::new();
            read(&mut input, &scan, &One, &mut |found| match found {
                Found::Item { line, .. } => lines.push(line),
                Found::Unusable { reason, .. } => panic!("{reason}"),
                Found::Object { .. } => {}
                Found::Template(..) | Found::Note(..) => panic!("no template or note here"),
            })
            .unwrap();
            lines
        };
        let text = "kind: List\nitems:\n- kind: Pod\n# a comment\n-\n  # another\n  kind: Pod\n-   {kind: Pod}\n";
        assert_eq!(lines(text), [3, 7, 8]);
        let aliased = "kind: List\nitems:\n- &a {kind: Pod}\n\n- *a\n- kind: Pod\n";
        assert_eq!(lines(aliased), [3, 5, 6]);
        assert_eq!(lines(&format!("a: 1\n---\n{aliased}")), [5, 7, 8]);
    }

    #[test]
    fn what_does_not_read_alone_is_read_whole() {
        for (text, listed_as) in [
            // An alias of an anchor in an earlier entry.
            (
                "kind: List\nitems:\n- &a {kind: Pod}\n- *a\n",
                Listed::Until(1),
            ),
            // A merge key from another entry.
            (
                "kind: List\nitems:\n- &a {x: 1}\n- <<: *a\n  y: 2\n",
                Listed::Until(1),
            ),
            // A quoted scalar running past an entry's end.
            ("kind: List\nitems:\n- a: \"x\n- y\"\n", Listed::Until(0)),
            // Not a List: an object with a field `items`.
            ("kind: Pod\nitems:\n- a\n", Listed::No),
            ("items:\n- a\n", Listed::No),
            // `items` given twice, a key given twice in an entry.
            ("kind: List\nitems:\n- a\nitems:\n- b\n", Listed::No),
            ("kind: List\nitems:\n- a: 1\n  a: 2\n", Listed::Until(0)),
            // Broken after the entries.
            ("kind: List\nitems:\n- a\nmetadata: [\n", Listed::No),
        ] {
            same(text);
            assert_eq!(listed(text), listed_as, "{text}");
        }
        let found = same("kind: List\nitems:\n- {kind: Pod}\n- &a {kind: Pod}\n- *a\n");
        assert_eq!(found.len(), 3);
        assert!(matches!(
            &same("kind: List\nitems:\n- a: 1\n  a: 2\n")[0],
            Found::Unusable { reason, .. } if reason.contains("the key \"a\" is given twice")
        ));
    }

    #[test]
    fn json_and_a_byte_order_mark() {
        same("\u{feff}apiVersion: v1\nitems:\n- kind: Pod\nkind: List\n");
        // A mark opening a later document: the cut keeps its bytes.
        let found = same("a: 1\n---\n\u{feff}b: {c: 2}\n---\nd: 3\n");
        assert_eq!(found.len(), 3, "{found:?}");
        assert!(
            matches!(&found[1], Found::Object { line: 3, value, .. } if value["b"]["c"] == 2),
            "{found:?}"
        );
        same(
            "{\"kind\": \"List\", \"items\": [{\"kind\": \"Pod\"}]}\n---\nitems:\n- a\nkind: List\n",
        );
        // JSON: a List item by item; nested too deep, read whole and
        // refused as it always was.
        let found = same("{\"kind\": \"List\", \"items\": [{\"kind\": \"Pod\"}, {}]}\n[1]");
        assert_eq!(found.len(), 3);
        for text in [
            format!(
                "{{\"kind\": \"List\", \"items\": [{}{}]}}",
                "[".repeat(200),
                "]".repeat(200)
            ),
            format!(
                "{{\"kind\": \"List\", \"items\": []}}\n{{\"a\": {}{}}}",
                "[".repeat(129),
                "]".repeat(129)
            ),
        ] {
            let found = same(&text);
            assert!(
                matches!(
                    &found[..],
                    [.., Found::Unusable { line: 1 | 2, reason, .. }]
                        if reason.starts_with("nested more than 128")
                ),
                "{found:?}"
            );
        }
    }

    /// Lines a List's entry may hold, relative to the entry's column:
    /// what is hard for a cut made by lines (block scalars holding `- `
    /// and `---`, quoted and flow scalars over several lines, comments and
    /// blank lines at any column, anchors, aliases and tags, keys named
    /// `items`), and some that do not parse at all.
    fn entry_fields(all: bool) -> impl proptest::strategy::Strategy<Value = Vec<String>> {
        use proptest::prelude::*;
        let each_alone = prop_oneof![
            Just("kind: Pod".to_string()),
            Just("metadata: {name: a, annotations: {x: \"{{ .y }}\"}}".to_string()),
            Just("script: |\n  - not an entry\n  --- not a marker\n\n  ...".to_string()),
            Just("folded: >-\n  text\n\n  - more".to_string()),
            Just("quoted: \"two\n  lines - here\"".to_string()),
            Just("single: 'two\n  lines'".to_string()),
            Just("flow: [1,\n  2, {a: b}]".to_string()),
            Just("items:\n- inner\n- list".to_string()),
            Just("# a comment\n".to_string()),
            Just("\n".to_string()),
            Just("tagged: !!str 1".to_string()),
            Just("nested:\n  - - a\n    - b".to_string()),
        ];
        // What does not read alone, or at all.
        let others = prop_oneof![
            Just("open: \"never closed".to_string()),
            Just("bad: [1, 2".to_string()),
            Just("dup: 1\ndup: 2".to_string()),
            Just("tab:\t1".to_string()),
            Just("anchored: &n {x: 1}".to_string()),
            Just("alias: *n".to_string()),
        ];
        let field = match all {
            true => prop_oneof![3 => each_alone, 1 => others].boxed(),
            false => each_alone.boxed(),
        };
        // Each field once: a key given twice is an error of its own.
        proptest::collection::vec(field, 0..5).prop_map(|mut fields| {
            let mut seen = std::collections::HashSet::new();
            fields.retain(|field| seen.insert(field.clone()));
            fields
        })
    }

    fn list_document(all: bool) -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        let between = prop_oneof![
            Just(String::new()),
            Just("# between\n".to_string()),
            Just("\n".to_string()),
        ];
        let entry = (entry_fields(all), between);
        (
            proptest::collection::vec(entry, 0..6),
            prop_oneof![Just(""), Just("  ")],
            any::<bool>(),
        )
            .prop_map(|(entries, indent, kind_first)| {
                let mut text = match kind_first {
                    true => "kind: List\nitems:\n".to_string(),
                    false => "apiVersion: v1\nitems:\n".to_string(),
                };
                for (fields, between) in entries {
                    text.push_str(indent);
                    text.push('-');
                    let lines: Vec<String> =
                        fields.join("\n").lines().map(str::to_string).collect();
                    match lines.split_first() {
                        None => text.push_str(" {}\n"),
                        Some((first, rest)) => {
                            text.push(' ');
                            text.push_str(first);
                            text.push('\n');
                            for line in rest {
                                if !line.is_empty() {
                                    text.push_str(indent);
                                    text.push_str("  ");
                                }
                                text.push_str(line);
                                text.push('\n');
                            }
                        }
                    }
                    text.push_str(&between);
                }
                if !kind_first {
                    text.push_str("kind: List\n");
                }
                text
            })
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(1000))]

        /// Generated streams of Lists and other documents, between every
        /// kind of marker: what the cut hands out, entry by entry, is what
        /// a parse of the whole stream gives.
        #[test]
        fn the_cut_reads_as_the_whole_stream(
            documents in proptest::collection::vec(
                proptest::prop_oneof![
                    list_document(true),
                    proptest::strategy::Just("a: 1\n".to_string()),
                    proptest::strategy::Just("# only a comment\n".to_string()),
                    proptest::strategy::Just("[1, 2]\n".to_string()),
                ],
                1..4,
            ),
            markers in proptest::collection::vec(
                proptest::prop_oneof![
                    proptest::strategy::Just("---\n"),
                    proptest::strategy::Just("--- # marker\n"),
                    proptest::strategy::Just("...\n---\n"),
                ],
                4,
            ),
            leading in proptest::bool::ANY,
        ) {
            let mut text = String::new();
            for (i, document) in documents.iter().enumerate() {
                if i > 0 || leading {
                    text.push_str(markers[i]);
                }
                text.push_str(document);
            }
            let (streamed, whole) = both(&text);
            proptest::prop_assert_eq!(
                before_errors(streamed), before_errors(whole), "{}", text
            );
        }

        /// A List whose every entry reads alone is read entry by entry to
        /// its end, not whole.
        #[test]
        fn a_list_of_entries_that_read_alone_streams_whole(text in list_document(false)) {
            same(&text);
            if text.contains("\n- ") || text.contains("\n  - ") {
                proptest::prop_assert_eq!(listed(&text), Listed::All, "{}", text);
            }
        }
    }

    /// Every YAML document of the repository's manifests and test data,
    /// as an entry of a List at both indentations, reads as it does
    /// whole.
    #[test]
    fn every_document_of_the_repository_reads_the_same_as_an_entry() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let mut files: Vec<_> = [
            "metadata.yml",
            "questions-ui.yml",
            "artifacthub-pkg.yml",
            "action.yml",
            ".pre-commit-hooks.yaml",
        ]
        .iter()
        .map(|file| root.join(file))
        .collect();
        for dir in [
            "examples",
            "cluster/manifests",
            "cluster/policies",
            ".github",
        ] {
            for entry in walkdir::WalkDir::new(root.join(dir)) {
                let path = entry.unwrap().into_path();
                if path.extension().is_some_and(|e| e == "yaml" || e == "yml") {
                    files.push(path);
                }
            }
        }
        assert!(files.len() > 20, "{files:?}");
        let mut entries_read = 0;
        for path in files {
            let text = std::fs::read_to_string(&path).unwrap();
            let mut documents = Vec::new();
            for span in crate::cut::spans(&text) {
                let document = &text[span.start as usize..span.end as usize];
                documents.push(match document.strip_prefix("---") {
                    Some(rest)
                        if rest
                            .trim_start_matches([' ', '\t'])
                            .starts_with(['\n', '#']) =>
                    {
                        rest.split_once('\n').map_or("", |(_, rest)| rest)
                    }
                    Some(_) => continue,
                    None => document,
                });
            }
            let all_read_alone = documents
                .iter()
                .all(|d| document::read(d).iter().all(|(_, v)| v.is_ok()));
            for indent in ["", "  "] {
                let mut list = "apiVersion: v1\nitems:\n".to_string();
                for document in &documents {
                    list.push_str(indent);
                    list.push_str("- ");
                    for (i, line) in document.split_inclusive('\n').enumerate() {
                        if i > 0 {
                            list.push_str(indent);
                            list.push_str("  ");
                        }
                        list.push_str(line);
                    }
                    if !list.ends_with('\n') {
                        list.push('\n');
                    }
                }
                list.push_str("kind: List\n");
                let found = same(&list);
                if all_read_alone && !documents.is_empty() {
                    assert_eq!(listed(&list), Listed::All, "{}:\n{list}", path.display());
                    entries_read += found.len();
                }
            }
        }
        assert!(entries_read > 50, "{entries_read}");
    }
}
