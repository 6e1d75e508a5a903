//! A YAML stream cut into its documents, line by line, without parsing:
//! the YAML spec makes document markers lines of their own (a line that
//! starts with `---` or `...` followed by a space or its end is a marker,
//! and no scalar may hold one). And in a document that keeps its objects
//! under a top-level `items:` as a block sequence (`kubectl get -o yaml`
//! writes a cluster's objects so, one document of hundreds of megabytes),
//! where each entry starts, so that the entries can be parsed one at a
//! time.
//!
//! No YAML library reads a document in parts: `yaml_serde` loads all of a
//! document's events before it hands out a value (2.5 GB for a 200 MB
//! dump), and a parser that hands out events would need its own way to
//! JSON, with every resolution rule `yaml_serde` has. Letting `libyaml-rs`
//! (the parser under `yaml_serde`) find the boundaries from its events'
//! marks was measured on check-bench's dump of 100,000 objects (145 MB):
//! its events alone take 3.2 s, where this cut takes 0.39 s in 3.4 MB, and
//! each entry would still be parsed again by `yaml_serde` (the whole check
//! takes 12.7 s: a quarter more); its API is raw pointers, `unsafe` at every
//! call. So the cut stays, and generated streams hold it to a parse of the
//! whole stream (`stream.rs`, `the_cut_reads_as_the_whole_stream`). The cut here only
//! says where to look; what a cut claims is checked by parsing what is
//! around the entries (it must be a `List` whose `items` is empty), and
//! anything that does not parse alone is read whole after all
//! (`stream.rs`). An entry holds every line up to the next line that
//! starts, at the sequence's indentation, with `- ` or content: a quoted
//! scalar or flow collection cut there is left open and does not parse.

/// One document: where its text is in the stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Span {
    /// From its `---` line (if it has one) to the next marker.
    pub start: u64,
    pub end: u64,
    /// The line the document starts on.
    pub first_line: usize,
    /// The line of its first content: past comments, blank lines and
    /// directives; the `---` line itself when the document starts there.
    pub content_line: usize,
    /// Its content starts on its `---` line (`--- {a: 1}`), which the YAML
    /// spec allows and kubectl does not.
    pub on_marker: bool,
    /// Its top-level `items:` block sequence, if it has one.
    pub items: Option<Items>,
}

/// The entries of a top-level `items:` block sequence.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Items {
    /// The column of the entries' `-`.
    pub indent: usize,
    /// Where each entry starts, and its line; an entry ends where the next
    /// one starts, the last at `end`.
    pub entries: Vec<(u64, usize)>,
    pub end: u64,
}

impl Items {
    pub fn start(&self) -> u64 {
        self.entries[0].0
    }

    /// The byte range of entry `index`.
    pub fn entry(&self, index: usize) -> (u64, u64) {
        let start = self.entries[index].0;
        let end = self.entries.get(index + 1).map_or(self.end, |e| e.0);
        (start, end)
    }
}

/// Where the search for a document's `items:` is.
#[derive(Debug)]
enum Search {
    /// Not seen yet at the top level.
    Looking,
    /// The `items:` line seen: its value is on the next lines.
    AfterKey,
    /// In the block sequence.
    In(Items),
    /// Over: found, or the value is no block sequence.
    Done(Option<Items>),
}

/// Feeds on lines, in order, with their ends; hands out each document
/// once the line that ends it is read.
#[derive(Debug)]
pub struct Cutter {
    offset: u64,
    number: usize,
    start: u64,
    first_line: usize,
    content_line: Option<usize>,
    on_marker: bool,
    search: Search,
}

impl Cutter {
    /// A cutter for a stream whose first line is at `offset` (past a
    /// byte-order mark).
    pub fn new(offset: u64) -> Cutter {
        Cutter {
            offset,
            number: 0,
            start: offset,
            first_line: 1,
            content_line: None,
            on_marker: false,
            search: Search::Looking,
        }
    }

    /// The next line, with its line break; the document it ends, if any.
    pub fn line(&mut self, line: &str) -> Option<Span> {
        self.number += 1;
        let offset = self.offset;
        self.offset += line.len() as u64;
        if is_marker(line, "---") {
            let closed = self.close(offset);
            self.start = offset;
            self.first_line = self.number;
            self.content_line = has_content(&line[3..]).then_some(self.number);
            self.on_marker = self.content_line.is_some();
            return closed;
        }
        if is_marker(line, "...") {
            let closed = self.close(self.offset);
            self.start = self.offset;
            self.first_line = self.number + 1;
            self.content_line = None;
            self.on_marker = false;
            return closed;
        }
        // A directive is content to kubectl, which cuts at `---` alone: the
        // directive's chunk is parsed apart from the document it precedes.
        if self.content_line.is_none() && (has_content(line) || is_directive(line)) {
            self.content_line = Some(self.number);
        }
        self.search_items(line, offset);
        None
    }

    /// Where the next line starts.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// The last document, when the stream ends.
    pub fn finish(mut self) -> Option<Span> {
        self.close(self.offset)
    }

    fn close(&mut self, end: u64) -> Option<Span> {
        let items = match std::mem::replace(&mut self.search, Search::Looking) {
            Search::In(mut items) => {
                items.end = end;
                Some(items)
            }
            Search::Done(items) => items,
            Search::Looking | Search::AfterKey => None,
        };
        let span = Span {
            start: self.start,
            end,
            first_line: self.first_line,
            content_line: self.content_line?,
            on_marker: self.on_marker,
            items,
        };
        Some(span)
    }

    fn search_items(&mut self, line: &str, offset: u64) {
        let entry_at = |indent: usize| {
            let rest = line.get(indent..)?;
            (line[..indent].bytes().all(|b| b == b' ') && rest.starts_with('-'))
                .then_some(())
                .filter(|_| rest[1..].is_empty() || rest[1..].starts_with([' ', '\r', '\n']))
        };
        match &mut self.search {
            Search::Looking => {
                if is_items_key(line) {
                    self.search = Search::AfterKey;
                }
            }
            Search::AfterKey if !has_content(line) => {}
            Search::AfterKey => {
                let indent = line.len() - line.trim_start_matches(' ').len();
                self.search = match entry_at(indent) {
                    Some(()) => Search::In(Items {
                        indent,
                        entries: vec![(offset, self.number)],
                        end: offset,
                    }),
                    None => Search::Done(None),
                };
            }
            Search::In(items) => {
                if entry_at(items.indent).is_some() {
                    items.entries.push((offset, self.number));
                    return;
                }
                let indent = line.len() - line.trim_start_matches(' ').len();
                let comment_or_blank =
                    line.trim_start().is_empty() || line.trim_start().starts_with('#');
                // The sequence ends at the next key of the top level; what
                // is no entry at its column, or between it and the key's,
                // YAML refuses, and the document is read whole to say so
                // (found by `fuzz/manifests_cut`: cut there, `  ~` would
                // read as `items: ~` around the entries).
                if !comment_or_blank && indent <= items.indent {
                    self.search = match indent {
                        0 => {
                            let mut items = std::mem::take(items);
                            items.end = offset;
                            Search::Done(Some(items))
                        }
                        _ => Search::Done(None),
                    };
                }
            }
            Search::Done(_) => {}
        }
    }
}

/// Whether `line` is `items:` at the top level, with nothing after it but
/// white space or a comment.
fn is_items_key(line: &str) -> bool {
    line.strip_prefix("items:").is_some_and(|rest| {
        let rest = rest.trim_start_matches([' ', '\t']);
        rest.is_empty() || rest.starts_with(['#', '\r', '\n'])
    })
}

/// Whether `line` is the marker `marker` (`---` or `...`), alone or
/// followed by a space, a tab or a comment.
pub(super) fn is_marker(line: &str, marker: &str) -> bool {
    line.strip_prefix(marker)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with([' ', '\t', '\r', '\n']))
}

/// Whether `line` is a YAML directive (`%YAML 1.1`, `%TAG`).
pub(super) fn is_directive(line: &str) -> bool {
    line.trim_start_matches('\u{feff}').starts_with('%')
}

/// Whether `line` holds content, not only white space, a comment or a
/// directive (`%YAML`).
pub(super) fn has_content(line: &str) -> bool {
    let line = line.trim().trim_start_matches('\u{feff}').trim_start();
    !(line.is_empty() || line.starts_with('#') || line.starts_with('%'))
}

/// The documents of a text held whole.
pub fn spans(text: &str) -> Vec<Span> {
    let mut cutter = Cutter::new(0);
    let mut spans: Vec<Span> = text
        .split_inclusive('\n')
        .filter_map(|line| cutter.line(line))
        .collect();
    spans.extend(cutter.finish());
    spans
}

/// The line of an entry's first content: on its `-` line, or below it
/// (`-` alone, then the mapping).
pub(super) fn content_line(entry: &str, line: usize) -> usize {
    entry
        .split_inclusive('\n')
        .enumerate()
        .find(|(i, text)| match i {
            // Its `-` is a space already, or not yet.
            0 => has_content(text.trim_start().strip_prefix('-').unwrap_or(text)),
            _ => has_content(text),
        })
        .map_or(line, |(i, _)| line + i)
}

/// The line of each entry's first content; `text` is the document's, from
/// `start` in the stream.
pub(super) fn entry_lines(text: &str, start: u64, items: &Items) -> Vec<usize> {
    (0..items.entries.len())
        .map(|index| {
            let (from, to) = items.entry(index);
            let entry = text
                .get((from - start) as usize..(to - start) as usize)
                .unwrap_or_default();
            content_line(entry, items.entries[index].1)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(text: &str) -> Vec<Option<Vec<&str>>> {
        spans(text)
            .into_iter()
            .map(|span| {
                let items = span.items?;
                Some(
                    (0..items.entries.len())
                        .map(|i| {
                            let (start, end) = items.entry(i);
                            &text[start as usize..end as usize]
                        })
                        .collect(),
                )
            })
            .collect()
    }

    #[test]
    fn the_entries_of_a_top_level_items_block_sequence() {
        let text = "apiVersion: v1\nitems:\n# first\n- a: 1\n  b: |\n    text\n\n-   c: 2\n# a comment\n-\n  d: 3\nkind: List\n";
        assert_eq!(
            entries(text),
            [Some(vec![
                "- a: 1\n  b: |\n    text\n\n",
                "-   c: 2\n# a comment\n",
                "-\n  d: 3\n"
            ])]
        );
        let span = &spans(text)[0];
        let items = span.items.as_ref().unwrap();
        assert_eq!(
            items.entries.iter().map(|e| e.1).collect::<Vec<_>>(),
            [4, 8, 10]
        );
        assert_eq!(&text[items.end as usize..], "kind: List\n");
        // Indented entries, and a document that ends the sequence.
        let text = "items:\n  - a: 1\n  - b: 2\n---\nitems: []\n";
        assert_eq!(
            entries(text),
            [Some(vec!["  - a: 1\n", "  - b: 2\n"]), None]
        );
    }

    #[test]
    fn what_is_no_items_block_sequence() {
        for text in [
            "items: [a]\n",
            "items:\n  a: 1\n",
            "items: &x\n- a\n",
            "a:\n  items:\n  - b\n",
            "items:\n-x\n",
            "items:\n\t- a\n",
            // Content at the entries' column, or between it and the key's,
            // that is no entry: YAML refuses it, so read whole.
            "items:\n  - a\n  ~\n",
            "items:\n  - a\n ~\n",
        ] {
            assert_eq!(entries(text), [None], "{text:?}");
        }
        // Only the first `items:` of a document: a second is a key given
        // twice, which parsing the rest refuses.
        let text = "items:\n- a\nitems:\n- b\n";
        assert_eq!(entries(text), [Some(vec!["- a\n"])]);
    }

    #[test]
    fn documents_start_on_markers_and_content() {
        let text = "# c\n\na: 1\n--- {b: 2}\n...\n---\n# nothing\n---\n%YAML 1.2\n\nc: 3";
        let lines: Vec<(usize, usize)> = spans(text)
            .iter()
            .map(|s| (s.first_line, s.content_line))
            .collect();
        // A directive is content: kubectl parses its chunk, and fails.
        assert_eq!(lines, [(1, 3), (4, 4), (8, 9)]);
    }
}
