//! A document with anchors, aliases or merge keys, read as go-yaml v2
//! reads every document: into a tree of nodes first (an anchor names its
//! node from where it opens, so an alias may name a node it is inside),
//! then decoded (`decode.go`):
//!
//! - an alias is its node decoded again; one inside the node it names is
//!   refused ("anchor 'x' value contains itself"), and so is a document
//!   that decodes far more through aliases than it holds (go-yaml's ratio,
//!   which stops a billion laughs);
//! - a merge key (`<<`) takes the keys of a mapping, of an alias of one,
//!   or of each in a list of them (the first of the list winning), at its
//!   place among the mapping's keys: a key set before it is overridden by
//!   the merged one, a key after it overrides;
//! - a key given twice among a mapping's own keys is refused (`yaml.rs`).

use std::collections::{HashMap, HashSet};

use super::parser::{Event, Parser};
use super::resolve;
use super::{
    MAX_DEPTH, Refusal, Stop, at_line, collection_key, colons_back, given_twice, parse_error,
    question_mark, too_deep, unreadable_key,
};

enum Node {
    Scalar {
        tag: Option<Box<str>>,
        value: Box<str>,
        implicit: bool,
    },
    Sequence(Vec<usize>),
    Mapping(Vec<(usize, usize)>),
    Alias {
        name: Box<str>,
        to: usize,
    },
}

/// The nodes of one document, each with the line (in the text) it starts
/// on.
struct Tree {
    nodes: Vec<(Node, usize)>,
}

/// A value decoded, before it is written: a mapping keeps its keys in the
/// order they were first set.
enum Json {
    Scalar(String),
    Array(Vec<Json>),
    Object(Vec<(String, Json)>),
}

/// `alone`: nothing may follow the document's node (`entry_to_json`);
/// `stand_ins`: the text holds colons read as stand-ins, which go back
/// (a text that holds the stand-in itself is read as it is).
pub(super) fn to_json(
    text: &str,
    first_line: usize,
    alone: bool,
    stand_ins: bool,
) -> Result<String, Stop> {
    let refuse = |line: usize, reason: String| {
        Stop::Refused(Refusal {
            line: first_line + line,
            reason,
        })
    };
    let (tree, root) = read(text, first_line, alone, stand_ins)?;
    let Some(root) = root else {
        return Ok("null".to_string());
    };
    let mut decoder = Decoder {
        tree: &tree,
        decoded: 0,
        aliased: 0,
        alias_depth: 0,
        expanding: HashSet::new(),
        depth: 0,
        path: String::new(),
        first_line,
    };
    let json = decoder
        .decode(root)
        .map_err(|(line, reason)| refuse(line, reason))?;
    let mut out = String::new();
    write(&json, &mut out);
    Ok(out)
}

/// The tree of the first document of `text`, and its root.
fn read(
    text: &str,
    first_line: usize,
    alone: bool,
    stand_ins: bool,
) -> Result<(Tree, Option<usize>), Stop> {
    let mut parser = Parser::new(text);
    let mut tree = Tree { nodes: Vec::new() };
    let mut anchors: HashMap<String, usize> = HashMap::new();
    // The collections open, innermost last, and whether each is in flow
    // style.
    let mut open: Vec<(usize, bool)> = Vec::new();
    let mut root = None;
    let refuse = |line: usize, reason: String| {
        Stop::Refused(Refusal {
            line: first_line + line,
            reason,
        })
    };
    loop {
        let (event, mark) = parser
            .next()
            .map_err(|error| parse_error(&error, text, first_line))?;
        let line = mark.line;
        let in_flow = open.last().is_some_and(|&(_, flow)| flow);
        let mut flow = false;
        let (node, anchor) = match event {
            Event::StreamStart | Event::DocumentStart => continue,
            Event::DocumentEnd if alone => {
                super::ends_alone(&mut parser, line, first_line)?;
                return Ok((tree, root));
            }
            Event::DocumentEnd | Event::StreamEnd => return Ok((tree, root)),
            Event::SequenceEnd | Event::MappingEnd => {
                open.pop();
                continue;
            }
            Event::Alias { anchor } => match anchors.get(anchor) {
                Some(&to) => (
                    Node::Alias {
                        name: anchor.into(),
                        to,
                    },
                    None,
                ),
                None => {
                    return Err(refuse(
                        line,
                        format!("not YAML: unknown anchor '{anchor}' referenced"),
                    ));
                }
            },
            Event::Scalar {
                anchor,
                tag,
                value,
                plain,
                implicit,
            } => {
                if let Some(reason) = question_mark(in_flow, plain, value) {
                    return Err(refuse(line, reason));
                }
                (
                    Node::Scalar {
                        tag: tag.map(Into::into),
                        value: match stand_ins {
                            true => colons_back(value).into(),
                            false => value.into(),
                        },
                        implicit,
                    },
                    anchor,
                )
            }
            Event::SequenceStart { anchor, flow: f } => {
                flow = f;
                (Node::Sequence(Vec::new()), anchor)
            }
            Event::MappingStart { anchor, flow: f } => {
                flow = f;
                (Node::Mapping(Vec::new()), anchor)
            }
        };
        let collection = matches!(node, Node::Sequence(_) | Node::Mapping(_));
        if collection && open.len() >= MAX_DEPTH {
            return Err(refuse(line, too_deep(&at_line(first_line + line))));
        }
        let id = tree.nodes.len();
        tree.nodes.push((node, line));
        if let Some(anchor) = anchor {
            anchors.insert(anchor.to_string(), id);
        }
        match open.last() {
            None => root = Some(id),
            Some(&(parent, _)) => match &mut tree.nodes[parent].0 {
                Node::Sequence(items) => items.push(id),
                Node::Mapping(pairs) => match pairs.last_mut() {
                    Some((_, value)) if *value == usize::MAX => *value = id,
                    _ => pairs.push((id, usize::MAX)),
                },
                _ => unreachable!("only collections are open"),
            },
        }
        if collection {
            open.push((id, flow));
        }
    }
}

struct Decoder<'t> {
    tree: &'t Tree,
    /// go-yaml's counts: the nodes decoded, and those decoded through an
    /// alias.
    decoded: usize,
    aliased: usize,
    alias_depth: usize,
    /// The aliases being decoded, inside one another.
    expanding: HashSet<usize>,
    /// How deep the decoding is: 128 levels of nodes at most, more
    /// through aliases.
    depth: usize,
    /// Where the node being decoded is (`spec.template`), for a key given
    /// twice.
    path: String,
    first_line: usize,
}

/// How deep decoding may go through aliases of nodes inside aliases.
const MAX_DECODING_DEPTH: usize = 8 * MAX_DEPTH;

/// Why a node is refused: its line in the text, and the reason.
type Failed = (usize, String);

impl Decoder<'_> {
    /// One more node decoded; go-yaml refuses a document that decodes
    /// far more through aliases than it holds.
    fn count(&mut self, line: usize) -> Result<(), Failed> {
        self.decoded += 1;
        if self.alias_depth > 0 {
            self.aliased += 1;
        }
        let allowed = match self.decoded {
            n if n <= 400_000 => 0.99,
            n if n >= 4_000_000 => 0.10,
            n => 0.99 - 0.89 * ((n - 400_000) as f64 / 3_600_000.0),
        };
        if self.aliased > 100
            && self.decoded > 1000
            && self.aliased as f64 / self.decoded as f64 > allowed
        {
            return Err((
                line,
                "the document expands far more through aliases than it holds, which kubectl \
                 refuses (`document contains excessive aliasing`)"
                    .to_string(),
            ));
        }
        Ok(())
    }

    fn decode(&mut self, id: usize) -> Result<Json, Failed> {
        let line = self.tree.nodes[id].1;
        self.count(line)?;
        if self.depth >= MAX_DECODING_DEPTH {
            return Err((line, too_deep(&at_line(self.first_line + line))));
        }
        self.depth += 1;
        let decoded = self.decode_node(id, line);
        self.depth -= 1;
        decoded
    }

    fn decode_node(&mut self, id: usize, line: usize) -> Result<Json, Failed> {
        match &self.tree.nodes[id].0 {
            Node::Scalar {
                tag,
                value,
                implicit,
                ..
            } => {
                let scalar =
                    resolve::scalar(tag.as_deref(), value, *implicit).map_err(|e| (line, e.0))?;
                let mut out = String::new();
                super::write_scalar(&mut out, &scalar).map_err(|e| (line, e))?;
                Ok(Json::Scalar(out))
            }
            Node::Sequence(items) => {
                let mut decoded = Vec::with_capacity(items.len());
                for (i, &item) in items.iter().enumerate() {
                    let len = self.path.len();
                    self.path.push_str(&format!("[{i}]"));
                    decoded.push(self.decode(item));
                    self.path.truncate(len);
                }
                decoded
                    .into_iter()
                    .collect::<Result<_, _>>()
                    .map(Json::Array)
            }
            Node::Mapping(_) => {
                let (mut pairs, mut index) = (Vec::new(), HashMap::new());
                self.fill(id, &mut pairs, &mut index)?;
                Ok(Json::Object(pairs))
            }
            Node::Alias { .. } => self.through_alias(id, line, |decoder, to| decoder.decode(to)),
        }
    }

    /// Decodes the node alias `id` names, once it is known not to be
    /// inside it.
    fn through_alias<T>(
        &mut self,
        id: usize,
        line: usize,
        then: impl FnOnce(&mut Self, usize) -> Result<T, Failed>,
    ) -> Result<T, Failed> {
        let Node::Alias { name, to } = &self.tree.nodes[id].0 else {
            return then(self, id);
        };
        if !self.expanding.insert(id) {
            return Err((
                line,
                format!("the anchor '{name}' holds an alias of itself, which kubectl refuses"),
            ));
        }
        self.alias_depth += 1;
        let decoded = then(self, *to);
        self.alias_depth -= 1;
        self.expanding.remove(&id);
        decoded
    }

    /// The keys of mapping `id` set into `pairs`, merges at their place.
    fn fill(
        &mut self,
        id: usize,
        pairs: &mut Vec<(String, Json)>,
        index: &mut HashMap<String, usize>,
    ) -> Result<(), Failed> {
        let Node::Mapping(members) = &self.tree.nodes[id].0 else {
            unreachable!("only a mapping is filled");
        };
        let mut own: HashSet<String> = HashSet::new();
        for &(key, value) in members {
            let line = self.tree.nodes[key].1;
            if let Node::Scalar {
                tag,
                value: text,
                implicit,
            } = &self.tree.nodes[key].0
                && resolve::is_merge(tag.as_deref(), text, *implicit)
            {
                self.merge(value, pairs, index)?;
                continue;
            }
            let key = self.key(key)?;
            if !own.insert(key.clone()) {
                return Err((line, given_twice(&self.path, &key)));
            }
            let len = self.path.len();
            if len > 0 {
                self.path.push('.');
            }
            self.path.push_str(&key);
            let decoded = self.decode(value);
            self.path.truncate(len);
            let decoded = decoded?;
            match index.get(&key) {
                Some(&at) => pairs[at].1 = decoded,
                None => {
                    index.insert(key.clone(), pairs.len());
                    pairs.push((key, decoded));
                }
            }
        }
        Ok(())
    }

    /// A key, as a string: a scalar, or an alias of one.
    fn key(&mut self, id: usize) -> Result<String, Failed> {
        let line = self.tree.nodes[id].1;
        self.count(line)?;
        self.through_alias(id, line, |decoder, to| {
            if to != id {
                decoder.count(line)?;
            }
            let (node, line) = &decoder.tree.nodes[to];
            match node {
                Node::Scalar {
                    tag,
                    value,
                    implicit,
                    ..
                } => {
                    let scalar = resolve::scalar(tag.as_deref(), value, *implicit)
                        .map_err(|e| (*line, e.0))?;
                    resolve::key(&scalar).map_err(|e| (*line, unreadable_key(&e)))
                }
                _ => Err((*line, collection_key())),
            }
        })
    }

    /// The keys a merge key's value brings: a mapping, an alias of one, or
    /// a list of them, the first winning.
    fn merge(
        &mut self,
        id: usize,
        pairs: &mut Vec<(String, Json)>,
        index: &mut HashMap<String, usize>,
    ) -> Result<(), Failed> {
        let line = self.tree.nodes[id].1;
        let mappings: Vec<usize> = match &self.tree.nodes[id].0 {
            Node::Sequence(items) => items.iter().rev().copied().collect(),
            _ => vec![id],
        };
        for mapping in mappings {
            let target = match &self.tree.nodes[mapping].0 {
                Node::Alias { to, .. } => *to,
                _ => mapping,
            };
            if !matches!(self.tree.nodes[target].0, Node::Mapping(_)) {
                return Err((
                    line,
                    "a merge key (`<<`) whose value is not a mapping or a list of mappings, \
                     which kubectl refuses"
                        .to_string(),
                ));
            }
            let mapping_line = self.tree.nodes[mapping].1;
            self.count(mapping_line)?;
            self.through_alias(mapping, mapping_line, |decoder, to| {
                if to != mapping {
                    decoder.count(mapping_line)?;
                }
                decoder.fill(to, pairs, index)
            })?;
        }
        Ok(())
    }
}

fn write(json: &Json, out: &mut String) {
    match json {
        Json::Scalar(text) => out.push_str(text),
        Json::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write(item, out);
            }
            out.push(']');
        }
        Json::Object(pairs) => {
            out.push('{');
            for (i, (key, value)) in pairs.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                super::write_str(out, key);
                out.push(':');
                write(value, out);
            }
            out.push('}');
        }
    }
}
