//! The reader of a document without anchors, aliases or merge keys (most
//! manifests): libyaml's events written out as JSON as they come, no tree
//! built. Its twin, `tree.rs`, reads the rest; both refuse alike.

use std::fmt::Write as _;

use super::parser::{Event, Parser};
use super::resolve;
use super::{
    MAX_DEPTH, Refusal, Stop, at_line, collection_key, colons_back, ends_alone, given_twice,
    parse_error, question_mark, too_deep, unreadable_key, write_scalar, write_str,
};

/// Where the writer is inside a collection.
enum Frame {
    Sequence {
        items: usize,
        flow: bool,
    },
    Mapping {
        flow: bool,
        /// Its keys so far, from this index of `Keys::spans`.
        keys_from: usize,
        /// The next event is a key.
        key_next: bool,
        /// A set of its keys' hashes, once it has many.
        index: Option<std::collections::HashSet<u64>>,
    },
}

/// Events written out as JSON as they come. What the document means
/// (a key given twice, a tag its scalar does not fit) is refused once it
/// is all parsed, as go-yaml decodes a document only once it parsed it:
/// a document that is not YAML further down is refused for that.
pub(super) struct Streamed<'t> {
    text: &'t str,
    first_line: usize,
    out: String,
    stack: Vec<Frame>,
    keys: Keys,
    /// The first thing the document means that kubectl refuses.
    failed: Option<Refusal>,
    /// The text holds colons read as stand-ins.
    stand_ins: bool,
    /// The text is one node alone (`entry_to_json`).
    alone: bool,
}

impl<'t> Streamed<'t> {
    pub(super) fn new(text: &'t str, first_line: usize) -> Streamed<'t> {
        Streamed {
            text,
            first_line,
            out: String::with_capacity(text.len()),
            stack: Vec::new(),
            keys: Keys::default(),
            failed: None,
            stand_ins: false,
            alone: false,
        }
    }

    pub(super) fn alone(self, alone: bool) -> Streamed<'t> {
        Streamed { alone, ..self }
    }

    pub(super) fn stand_ins(self, stand_ins: bool) -> Streamed<'t> {
        Streamed { stand_ins, ..self }
    }

    fn refuse(&self, line: usize, reason: String) -> Stop {
        Stop::Refused(Refusal {
            line: self.first_line + line,
            reason,
        })
    }

    /// What the document means is refused: said once it is all parsed.
    fn fail(&mut self, line: usize, reason: String) {
        if self.failed.is_none() {
            self.failed = Some(Refusal {
                line: self.first_line + line,
                reason,
            });
        }
    }

    pub(super) fn run(mut self) -> Result<String, Stop> {
        let mut parser = Parser::new(self.text);
        let mut started = false;
        loop {
            let (event, mark) = match parser.next() {
                Ok(next) => next,
                Err(error) => return Err(parse_error(&error, self.text, self.first_line)),
            };
            let line = mark.line;
            match event {
                Event::StreamStart => {}
                Event::DocumentStart => started = true,
                Event::DocumentEnd | Event::StreamEnd => {
                    if let Some(refusal) = self.failed {
                        return Err(Stop::Refused(refusal));
                    }
                    if self.alone && matches!(event, Event::DocumentEnd) {
                        ends_alone(&mut parser, line, self.first_line)?;
                    }
                    if !started || self.out.is_empty() {
                        return Ok("null".to_string());
                    }
                    return Ok(self.out);
                }
                Event::Alias { .. } => return Err(Stop::NeedsTree),
                Event::Scalar {
                    anchor,
                    tag,
                    value,
                    plain,
                    implicit,
                } => {
                    if anchor.is_some() {
                        return Err(Stop::NeedsTree);
                    }
                    if let Some(reason) = question_mark(self.in_flow(), plain, value) {
                        return Err(self.refuse(line, reason));
                    }
                    let back;
                    let value = match self.stand_ins {
                        true => {
                            back = colons_back(value);
                            &*back
                        }
                        false => value,
                    };
                    if self.key_next() {
                        if resolve::is_merge(tag, value, implicit) {
                            return Err(Stop::NeedsTree);
                        }
                        let key = resolve::scalar(tag, value, implicit)
                            .map_err(|e| e.0)
                            .and_then(|scalar| {
                                resolve::key(&scalar).map_err(|e| unreadable_key(&e))
                            });
                        match key {
                            Ok(key) => self.key(key, line),
                            Err(reason) => {
                                self.fail(line, reason);
                                self.key(String::new(), line);
                            }
                        }
                    } else {
                        self.before_value();
                        let written = resolve::scalar(tag, value, implicit)
                            .map_err(|e| e.0)
                            .and_then(|scalar| write_scalar(&mut self.out, &scalar));
                        if let Err(reason) = written {
                            self.fail(line, reason);
                        }
                        self.after_value();
                    }
                }
                Event::SequenceStart { anchor, flow } | Event::MappingStart { anchor, flow } => {
                    if anchor.is_some() {
                        return Err(Stop::NeedsTree);
                    }
                    if self.key_next() {
                        self.fail(line, collection_key());
                    }
                    if self.stack.len() >= MAX_DEPTH {
                        return Err(self.refuse(line, too_deep(&at_line(self.first_line + line))));
                    }
                    self.before_value();
                    match event {
                        Event::SequenceStart { .. } => {
                            self.out.push('[');
                            self.stack.push(Frame::Sequence { items: 0, flow });
                        }
                        _ => {
                            self.out.push('{');
                            self.stack.push(Frame::Mapping {
                                flow,
                                keys_from: self.keys.spans.len(),
                                key_next: true,
                                index: None,
                            });
                        }
                    }
                }
                Event::SequenceEnd => {
                    self.stack.pop();
                    self.out.push(']');
                    self.after_value();
                }
                Event::MappingEnd => {
                    if let Some(Frame::Mapping { keys_from, .. }) = self.stack.pop() {
                        self.keys.truncate(keys_from);
                    }
                    self.out.push('}');
                    self.after_value();
                }
            }
        }
    }

    /// Inside a flow collection (all inside one are).
    fn in_flow(&self) -> bool {
        matches!(
            self.stack.last(),
            Some(Frame::Sequence { flow: true, .. } | Frame::Mapping { flow: true, .. })
        )
    }

    fn key_next(&self) -> bool {
        matches!(
            self.stack.last(),
            Some(Frame::Mapping { key_next: true, .. })
        )
    }

    /// A comma before an item of a sequence after the first.
    fn before_value(&mut self) {
        if let Some(Frame::Sequence { items, .. }) = self.stack.last_mut() {
            if *items > 0 {
                self.out.push(',');
            }
            *items += 1;
        }
    }

    /// A mapping's value done: its next event is a key.
    fn after_value(&mut self) {
        if let Some(Frame::Mapping { key_next, .. }) = self.stack.last_mut() {
            *key_next = true;
        }
    }

    /// A mapping's key; one the mapping has already is refused.
    fn key(&mut self, key: String, line: usize) {
        let Some(Frame::Mapping {
            keys_from,
            key_next,
            index,
            ..
        }) = self.stack.last_mut()
        else {
            unreachable!("a key is read in a mapping");
        };
        let from = *keys_from;
        let count = self.keys.spans.len() - from;
        let twice = match index {
            None => self.keys.position(from, &key).is_some(),
            Some(set) => !set.insert(hash(&key)) && self.keys.position(from, &key).is_some(),
        };
        if index.is_none() && count >= 32 {
            *index = Some(self.keys.hashes(from).chain([hash(&key)]).collect());
        }
        *key_next = false;
        if twice {
            let at = self.path();
            self.fail(line, given_twice(&at, &key));
        }
        if count > 0 {
            self.out.push(',');
        }
        write_str(&mut self.out, &key);
        self.out.push(':');
        self.keys.push(&key);
    }

    /// Where the mapping being read is: `metadata.annotations`,
    /// `items[0]`. A mapping's keys precede those of the mappings inside
    /// it, so its key being read is the last before theirs.
    fn path(&self) -> String {
        let mut path = String::new();
        for (depth, frame) in self.stack.iter().enumerate() {
            let inner = self.stack[depth + 1..]
                .iter()
                .find_map(|frame| match frame {
                    Frame::Mapping { keys_from, .. } => Some(*keys_from),
                    Frame::Sequence { .. } => None,
                });
            let Some(inner) = inner else { break };
            match frame {
                Frame::Sequence { items, .. } => {
                    let _ = write!(path, "[{}]", items.saturating_sub(1));
                }
                // A mapping read as a key has none of its own yet.
                Frame::Mapping { keys_from, .. } if inner > *keys_from => {
                    let (start, end) = self.keys.spans[inner - 1];
                    if !path.is_empty() {
                        path.push('.');
                    }
                    path.push_str(&self.keys.text[start as usize..end as usize]);
                }
                Frame::Mapping { .. } => path.push_str(".?"),
            }
        }
        path
    }
}

/// The keys of the open mappings, one after another.
#[derive(Default)]
struct Keys {
    text: String,
    spans: Vec<(u32, u32)>,
}

impl Keys {
    fn push(&mut self, key: &str) {
        let start = self.text.len() as u32;
        self.text.push_str(key);
        self.spans.push((start, self.text.len() as u32));
    }

    fn truncate(&mut self, from: usize) {
        if let Some(&(start, _)) = self.spans.get(from) {
            self.text.truncate(start as usize);
        }
        self.spans.truncate(from);
    }

    fn position(&self, from: usize, key: &str) -> Option<usize> {
        self.spans[from..]
            .iter()
            .position(|&(s, e)| &self.text[s as usize..e as usize] == key)
    }

    fn hashes(&self, from: usize) -> impl Iterator<Item = u64> + '_ {
        self.spans[from..]
            .iter()
            .map(|&(s, e)| hash(&self.text[s as usize..e as usize]))
    }
}

fn hash(key: &str) -> u64 {
    use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher};
    BuildHasherDefault::<DefaultHasher>::default().hash_one(key)
}
