//! A document's YAML as the JSON kubectl sends: read as kubectl's YAML
//! library reads it (sigs.k8s.io/yaml over go-yaml v2: libyaml's grammar,
//! YAML 1.1's scalars, `resolve`), written as JSON straight from the
//! parser's events, with no tree of values between.
//!
//! Nearly every document has no anchor, alias or merge key: its events are
//! written out as they come. A document that has one is read into a tree
//! first (`tree`), as go-yaml reads every document, since an alias repeats
//! a node read earlier and a merge key overrides keys set before it. Both
//! ways give the same bytes for a document without them (a property test
//! holds them to each other), and what both refuse is what kubectl
//! refuses.
//!
//! libyaml-rs is libyaml 0.2.5, whose plain scalars inside a flow
//! collection differ from go-yaml v2's (ported from an earlier libyaml) in
//! two ways, both undone here: go-yaml keeps a `:` followed by `,`, `[`,
//! `]`, `{` or `}` in the scalar (`[a:]` holds `a:`), where libyaml stops
//! with "found unexpected ':'": such a colon is read as a stand-in
//! character, and turned back into `:` in the scalar; and go-yaml ends the
//! scalar at a `?`, which then opens a key where none may be, so that it
//! refuses the document, where libyaml reads on: a `?` in such a scalar
//! is refused here.
//!
//! Three choices are our own: a key given twice in a mapping
//! (kubectl keeps the last without a word; which was meant is unknown),
//! nesting past 128 levels (go-yaml allows 10,000, but libyaml's time
//! grows with the depth of flow collections times their length, and no
//! manifest nests so deep), and no document past the first of a text (the
//! cut gives one a text, as kubectl's reader does).

use std::borrow::Cow;
use std::fmt::Write as _;

mod parser;
pub mod resolve;
mod streamed;
mod tree;

use parser::{Event, Parser};
use resolve::Scalar;
use streamed::Streamed;

/// The deepest nesting read.
pub const MAX_DEPTH: usize = 128;

/// Why a document is refused, at a line of the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub line: usize,
    pub reason: String,
}

/// The JSON of the first document of `text` (`null` for an empty one),
/// whose first line is line `first_line` of its file.
pub fn to_json(text: &str, first_line: usize) -> Result<String, Refusal> {
    read_json(text, first_line, false)
}

/// `to_json` of an entry of a List cut from its document: refused where
/// anything follows its node (a line indented less than the entry's own,
/// which go-yaml leaves unread in a text alone, and refuses in the List).
pub fn entry_to_json(text: &str, first_line: usize) -> Result<String, Refusal> {
    read_json(text, first_line, true)
}

/// What is said of an entry followed by more than its node.
const PAST_THE_ENTRY: &str = "not YAML: content past the List entry's node";

/// Whether the next event of `parser`, past a document's end, ends the
/// text: an entry read `alone` must.
fn ends_alone(parser: &mut Parser<'_>, line: usize, first_line: usize) -> Result<(), Stop> {
    match parser.next() {
        Ok((Event::StreamEnd, _)) => Ok(()),
        _ => Err(Stop::Refused(Refusal {
            line: first_line + line,
            reason: PAST_THE_ENTRY.to_string(),
        })),
    }
}

fn read_json(text: &str, first_line: usize, alone: bool) -> Result<String, Refusal> {
    // Only a text of more brackets than the depth allowed can be too deep.
    let brackets = text.bytes().filter(|&b| b == b'[' || b == b'{').count();
    if let Some(line) = (brackets > MAX_DEPTH)
        .then(|| flow_too_deep(text))
        .flatten()
    {
        let line = first_line + line - 1;
        return Err(Refusal {
            line,
            reason: too_deep(&at_line(line)),
        });
    }
    // Each colon go-yaml keeps in a scalar, where libyaml stops at it, is
    // read as a stand-in; a text that holds the stand-in itself keeps
    // libyaml's refusal.
    let mut text = Cow::Borrowed(text);
    let colons = !text.contains(STAND_IN);
    loop {
        // Only a text read again holds stand-ins.
        let stand_ins = matches!(text, Cow::Owned(_));
        let streamed = Streamed::new(&text, first_line).stand_ins(stand_ins);
        let read = match streamed.alone(alone).run() {
            Err(Stop::NeedsTree) => tree::to_json(&text, first_line, alone, stand_ins),
            read => read,
        };
        match read {
            Err(Stop::Colon(at)) if colons => {
                text.to_mut().replace_range(at..at + 1, STAND_IN);
            }
            Err(Stop::Colon(at)) => {
                return Err(Refusal {
                    line: first_line + text[..at].matches('\n').count(),
                    reason: "not YAML: found unexpected ':'".to_string(),
                });
            }
            Err(Stop::Refused(refusal)) => return Err(refusal),
            Err(Stop::NeedsTree) => unreachable!("the tree reads anchors"),
            Ok(json) => return Ok(json),
        }
    }
}

/// What a colon that go-yaml keeps in a plain scalar is read as: a
/// noncharacter, which YAML allows and no manifest holds.
const STAND_IN: &str = "\u{fdd0}";

/// A scalar's text, with the colons read as stand-ins back.
fn colons_back(value: &str) -> Cow<'_, str> {
    match value.contains(STAND_IN) {
        true => Cow::Owned(value.replace(STAND_IN, ":")),
        false => Cow::Borrowed(value),
    }
}

/// Why libyaml stopped: a colon go-yaml would have kept, or a refusal.
fn parse_error(error: &parser::Error, text: &str, first_line: usize) -> Stop {
    let at = error.problem_mark.index;
    if error.problem == "found unexpected ':'" && text.as_bytes().get(at) == Some(&b':') {
        return Stop::Colon(at);
    }
    let error = at_most_the_end(error, text);
    Stop::Refused(Refusal {
        line: first_line + error.problem_mark.line,
        reason: format!("not YAML: {}", error.in_file(first_line)),
    })
}

/// libyaml places what it misses at the end of a document past its last
/// line (and past a line break it adds): said at the end of the document's
/// last content instead, a line the file has.
fn at_most_the_end(error: &parser::Error, text: &str) -> parser::Error {
    let content = text.trim_end();
    let mut error = error.clone();
    if error.problem_mark.index >= content.len() {
        let last = content.rsplit('\n').next().unwrap_or_default();
        error.problem_mark = parser::Mark {
            index: content.len(),
            line: content.matches('\n').count(),
            column: last.chars().count(),
        };
    }
    error
}

/// go-yaml ends a plain scalar of a flow collection at a `?`, and then
/// refuses the key it opens where a `,` must come.
fn question_mark(flow: bool, plain: bool, value: &str) -> Option<String> {
    (flow && plain && value.contains('?')).then(|| {
        format!(
            "not YAML to kubectl: {value:?} in a flow collection (`[…]`, `{{…}}`) holds a `?`, \
             where kubectl's YAML library ends the scalar and then finds no `,`: quote it"
        )
    })
}

/// Why a document nested too deep is refused; `at` says where.
pub fn too_deep(at: &str) -> String {
    format!("nested more than {MAX_DEPTH} levels deep{at}: no object nests so deep")
}

fn at_line(line: usize) -> String {
    format!(" at line {line}")
}

/// What ends a reading early.
enum Stop {
    Refused(Refusal),
    /// An anchor, an alias or a merge key: read as a tree instead.
    NeedsTree,
    /// A colon libyaml stops at and go-yaml keeps, at this byte: read
    /// again with a stand-in for it.
    Colon(usize),
}

fn given_twice(path: &str, key: &str) -> String {
    let at = match path {
        "" => String::new(),
        path => format!("`{path}`: "),
    };
    format!(
        "{at}the key {key:?} is given twice (kubectl would keep the last, without a word): keep one"
    )
}

fn unreadable_key(what: &str) -> String {
    format!("{what}, which kubectl cannot make a JSON key of: quote it")
}

fn collection_key() -> String {
    "a key that is itself a mapping or a list, which kubectl cannot read".to_string()
}

/// A scalar's JSON; NaN and the infinities, which JSON cannot hold, are
/// refused as kubectl refuses them.
fn write_scalar(out: &mut String, scalar: &Scalar<'_>) -> Result<(), String> {
    match scalar {
        Scalar::Null => out.push_str("null"),
        Scalar::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Scalar::Int(i) => {
            let _ = write!(out, "{i}");
        }
        Scalar::Uint(u) => {
            let _ = write!(out, "{u}");
        }
        Scalar::Float(f) => match resolve::json_float(*f) {
            Some(text) => out.push_str(&text),
            None => {
                return Err(format!(
                    "a float JSON cannot hold ({}; kubectl says `json: unsupported value: {}`): \
                     quote it",
                    match f {
                        f if f.is_nan() => ".nan",
                        f if *f > 0.0 => ".inf",
                        _ => "-.inf",
                    },
                    resolve::unsupported(*f)
                ));
            }
        },
        Scalar::Str(s) => write_str(out, s),
    }
    Ok(())
}

/// A JSON string.
fn write_str(out: &mut String, s: &str) {
    out.push('"');
    let bytes = s.as_bytes();
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let escape = match b {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            b'\n' => "\\n",
            b'\r' => "\\r",
            b'\t' => "\\t",
            0..0x20 => "",
            _ => continue,
        };
        out.push_str(&s[start..i]);
        match escape {
            "" => {
                let _ = write!(out, "\\u{b:04x}");
            }
            escape => out.push_str(escape),
        }
        start = i + 1;
    }
    out.push_str(&s[start..]);
    out.push('"');
}

/// The line (from 1) where flow collections (`[`, `{`) first nest deeper
/// than `MAX_DEPTH`, outside quotes and comments. libyaml would find it
/// too, but only after scanning in time that grows with the text's length
/// times its depth; this finds it in one pass. (Brackets in a block scalar
/// count too: only a text that opens more than 128 without closing them
/// is refused for it.)
fn flow_too_deep(text: &str) -> Option<usize> {
    let (mut depth, mut line) = (0usize, 1);
    let mut bytes = text.bytes().peekable();
    let mut previous = b'\n';
    while let Some(b) = bytes.next() {
        match b {
            b'\n' => line += 1,
            b'#' if previous.is_ascii_whitespace() => {
                while bytes.next_if(|&b| b != b'\n').is_some() {}
            }
            b'"' => {
                while let Some(b) = bytes.next() {
                    match b {
                        b'\\' => {
                            bytes.next();
                        }
                        b'"' => break,
                        b'\n' => line += 1,
                        _ => {}
                    }
                }
            }
            b'\'' if depth > 0 || !previous.is_ascii_alphanumeric() => {
                for b in bytes.by_ref() {
                    match b {
                        b'\'' => break,
                        b'\n' => line += 1,
                        _ => {}
                    }
                }
            }
            b'[' | b'{' => {
                depth += 1;
                if depth > MAX_DEPTH {
                    return Some(line);
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
        previous = b;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn json(text: &str) -> String {
        to_json(text, 1).unwrap_or_else(|r| panic!("{text}: {r:?}"))
    }

    fn refused(text: &str) -> Refusal {
        to_json(text, 1).expect_err(text)
    }

    /// The scalars of YAML 1.1 where they go in an object, as kubectl
    /// sends them.
    #[test]
    fn scalars_as_kubectl_reads_them() {
        assert_eq!(
            json(
                "a: yes\nb: 'yes'\nc: 0400\nd: \"0400\"\ne: 1_0\nf: 0x1F\ng: ~\nh: on\ni: 1.0\nj: 2024-01-01\nk: |\n  text\n"
            ),
            r#"{"a":true,"b":"yes","c":256,"d":"0400","e":10,"f":31,"g":null,"h":true,"i":1,"j":"2024-01-01","k":"text\n"}"#
        );
        // Keys: `on:` is the key "true".
        assert_eq!(
            json("on: a\n1: b\n1.5: c\nn: d\n"),
            r#"{"true":"a","1":"b","1.5":"c","false":"d"}"#
        );
        assert_eq!(
            json("[1, '2', \"\\t\\u00e9\", !!str 3]"),
            "[1,\"2\",\"\\té\",\"3\"]"
        );
        assert_eq!(json("# only a comment\n"), "null");
        assert_eq!(json(""), "null");
        assert_eq!(json("---\n"), "null");
        assert_eq!(json("~\n"), "null");
    }

    #[test]
    fn what_kubectl_refuses_is_refused_at_its_line() {
        for (text, line, says) in [
            ("a: 1\nb: .nan\n", 2, "a float JSON cannot hold (.nan"),
            ("a:\n  ~: 1\n", 2, "a key that is null"),
            (
                "a:\n  [1]: 2\n",
                2,
                "a key that is itself a mapping or a list",
            ),
            ("a: !!int x\n", 1, "cannot decode !!str `x` as a !!int"),
            // At the end of the document, a line it has.
            ("a: [1\n", 1, "expected ',' or ']' at line 1 column 6"),
            ("a: 1\nb: [1", 2, "expected ',' or ']' at line 2 column 6"),
            ("a: *x\n", 1, "unknown anchor 'x'"),
            ("a: &x [*x]\n", 1, "holds an alias of itself"),
            ("a: {<<: 1}\n", 1, "merge key"),
        ] {
            let refusal = refused(text);
            assert_eq!(refusal.line, line, "{text}: {refusal:?}");
            assert!(refusal.reason.contains(says), "{text}: {refusal:?}");
        }
    }

    #[test]
    fn a_key_given_twice_is_refused_where_it_is_given_again() {
        for (text, line, says) in [
            ("a: 1\na: 2\n", 2, "the key \"a\" is given twice"),
            ("m:\n  k: 1\n  k: 2\n", 3, "`m`: the key \"k\""),
            (
                "items:\n- name: x\n  name: y\n",
                3,
                "`items[0]`: the key \"name\"",
            ),
            (
                "a: {x: 1}\nb:\n  c: [{d: 1, d: 2}]\n",
                3,
                "`b.c[0]`: the key \"d\"",
            ),
            ("on: 1\ntrue: 2\n", 2, "the key \"true\" is given twice"),
            ("x: &a 1\nm: {k: 1, k: 2}\n", 2, "`m`: the key \"k\""),
        ] {
            let refusal = refused(text);
            assert_eq!(refusal.line, line, "{text}: {refusal:?}");
            assert!(refusal.reason.contains(says), "{text}: {refusal:?}");
        }
        // A mapping of many keys finds the one given twice too.
        let mut many: String = (0..100).map(|i| format!("k{i}: {i}\n")).collect();
        many.push_str("k57: again\n");
        assert_eq!(refused(&many).line, 101);
    }

    /// Anchors, aliases and merge keys, as go-yaml v2 decodes them: a key
    /// before a merge is overridden by it, one after overrides it, and the
    /// first of a list of merged mappings wins.
    #[test]
    fn anchors_aliases_and_merge_keys() {
        assert_eq!(
            json("base: &b {x: 1, q: 2}\nm:\n  <<: *b\n  q: 3\n"),
            r#"{"base":{"x":1,"q":2},"m":{"x":1,"q":3}}"#
        );
        assert_eq!(
            json("b: &b {x: 1}\nm: {x: 0, <<: *b}\n"),
            r#"{"b":{"x":1},"m":{"x":1}}"#
        );
        assert_eq!(
            json("a: &a {x: 1}\nb: &b {x: 2, q: 2}\nm: {<<: [*a, *b]}\n"),
            r#"{"a":{"x":1},"b":{"x":2,"q":2},"m":{"x":1,"q":2}}"#
        );
        assert_eq!(
            json("a: &k on\nb: {*k : 1}\n"),
            r#"{"a":true,"b":{"true":1}}"#
        );
        // `y` is YAML 1.1's true, as a key too.
        assert_eq!(json("m: {x: 1, y: 2}\n"), r#"{"m":{"x":1,"true":2}}"#);
        assert_eq!(json("m: {\"<<\": 1}\n"), r#"{"m":{"<<":1}}"#);
        // A billion laughs is refused, quickly.
        let mut bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n".to_string();
        for (i, name) in "bcdefghij".chars().enumerate() {
            let previous = (b'a' + i as u8) as char;
            bomb.push_str(&format!(
                "{name}: &{name} [{}]\n",
                vec![format!("*{previous}"); 10].join(", ")
            ));
        }
        assert!(
            refused(&bomb).reason.contains("through aliases"),
            "{:?}",
            refused(&bomb)
        );
    }

    /// Plain scalars of flow collections as go-yaml v2 reads them, not
    /// as libyaml 0.2.5 does.
    #[test]
    fn flow_scalars_as_go_yaml_reads_them() {
        assert_eq!(json("a: [b:]\n"), r#"{"a":["b:"]}"#);
        assert_eq!(
            json("a: {b:, c: d:}\nx: [1:, {e:}]\n"),
            r#"{"a":{"b:":null,"c":"d:"},"x":["1:",{"e:":null}]}"#
        );
        assert_eq!(json("a: [b:c, \"d\":e]\n"), r#"{"a":["b:c",{"d":"e"}]}"#);
        for text in [
            "a: [b?c]\n",
            "a: {b: c?}\n",
            "a: [b\n  ?c]\n",
            "a: &x [b?c]\n",
        ] {
            let refusal = refused(text);
            assert!(
                refusal.reason.contains("holds a `?`"),
                "{text}: {refusal:?}"
            );
        }
        // In block context both read it as a scalar.
        assert_eq!(json("a: b?c\n"), r#"{"a":"b?c"}"#);
        // With an anchor, through the tree.
        assert_eq!(json("a: &x [b:]\nc: *x\n"), r#"{"a":["b:"],"c":["b:"]}"#);
        // A text that holds the stand-in keeps libyaml's refusal.
        assert!(
            refused("a: [b:]\nc: \u{fdd0}\n")
                .reason
                .contains("unexpected ':'")
        );
        // And the character itself, where the tree reads it (an anchor),
        // as kubectl keeps it: only a text read again holds stand-ins.
        assert_eq!(
            json("a: &x \u{fdd0}\nb: *x\n"),
            "{\"a\":\"\u{fdd0}\",\"b\":\"\u{fdd0}\"}"
        );
    }

    #[test]
    fn only_the_first_document_is_read() {
        assert_eq!(json("a: 1\n...\nb: [\n"), r#"{"a":1}"#);
    }

    #[test]
    fn nesting_is_bounded() {
        for depth in [200, 100_000] {
            let text = format!("a: {}{}\n", "[".repeat(depth), "]".repeat(depth));
            let refusal = refused(&text);
            assert!(
                refusal
                    .reason
                    .starts_with("nested more than 128 levels deep at line 1")
            );
        }
        let block: String = (0..130).map(|i| format!("{}k:\n", " ".repeat(i))).collect();
        assert!(refused(&block).reason.starts_with("nested more than 128"));
        let fine = format!("a: {}{}\n", "[".repeat(100), "]".repeat(100));
        assert!(to_json(&fine, 1).is_ok());
    }

    /// A generated document, written in flow style or in block style.
    #[derive(Debug, Clone)]
    enum Shape {
        Scalar(String),
        List(Vec<Shape>),
        Map(Vec<(String, Shape)>),
    }

    impl Shape {
        fn flow(&self) -> String {
            match self {
                Shape::Scalar(s) => s.clone(),
                Shape::List(items) => {
                    let items: Vec<String> = items.iter().map(Shape::flow).collect();
                    format!("[{}]", items.join(", "))
                }
                Shape::Map(pairs) => {
                    let pairs: Vec<String> = pairs
                        .iter()
                        .map(|(k, v)| format!("{k}: {}", v.flow()))
                        .collect();
                    format!("{{{}}}", pairs.join(", "))
                }
            }
        }

        /// Block style at `indent`, as a value that follows `key:` or `-`.
        fn block(&self, indent: usize) -> String {
            let pad = " ".repeat(indent);
            match self {
                Shape::List(items) if !items.is_empty() => items
                    .iter()
                    .map(|item| format!("\n{pad}- {}", item.block(indent + 2).trim_start()))
                    .collect(),
                Shape::Map(pairs) if !pairs.is_empty() => pairs
                    .iter()
                    .map(|(k, v)| {
                        format!(
                            "\n{pad}{k}: {}",
                            v.block(indent + 2).trim_start_matches(' ')
                        )
                    })
                    .collect(),
                other => format!(" {}", other.flow()),
            }
        }
    }

    /// Documents of every shape but anchors, aliases and merge keys,
    /// which the streamed reading leaves to the tree.
    fn documents() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        let scalar = prop_oneof![
            Just("yes".to_string()),
            Just("'no'".to_string()),
            Just("0400".to_string()),
            Just("1_000".to_string()),
            Just("0x1f".to_string()),
            Just("1.5".to_string()),
            Just("1e3".to_string()),
            Just("~".to_string()),
            Just(".inf".to_string()),
            Just("\"a\\tb\"".to_string()),
            Just("!!str 12".to_string()),
            Just("!!int '7'".to_string()),
            Just("plain text".to_string()),
            Just("2024-01-01".to_string()),
            Just("a:".to_string()),
            Just("a?b".to_string()),
            "[a-z]{1,6}",
        ];
        let key = prop_oneof![
            Just("on".to_string()),
            Just("n".to_string()),
            Just("1".to_string()),
            Just("1.5".to_string()),
            Just("'1'".to_string()),
            Just("~".to_string()),
            "[a-z]{1,3}",
        ];
        let shape = scalar
            .prop_map(Shape::Scalar)
            .prop_recursive(4, 32, 5, move |inner| {
                prop_oneof![
                    proptest::collection::vec(inner.clone(), 0..4).prop_map(Shape::List),
                    proptest::collection::vec((key.clone(), inner), 0..4).prop_map(Shape::Map),
                ]
            });
        (shape, any::<bool>()).prop_map(|(shape, flow)| match flow {
            true => shape.flow(),
            false => shape.block(0).trim_start().to_string() + "\n",
        })
    }

    /// Both readings of one text, as `to_json` would give them; `None`
    /// where the streamed one needs the tree.
    fn both_ways(text: &str) -> Option<(Result<String, Refusal>, Result<String, Refusal>)> {
        let read = |read: Result<String, Stop>| match read {
            Ok(json) => Some(Ok(json)),
            Err(Stop::Refused(refusal)) => Some(Err(refusal)),
            Err(Stop::Colon(at)) => Some(Err(Refusal {
                line: at,
                reason: "colon".to_string(),
            })),
            Err(Stop::NeedsTree) => None,
        };
        Some((
            read(Streamed::new(text, 1).run())?,
            read(tree::to_json(text, 1, false, false)).expect("the tree reads anything"),
        ))
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]

        /// Any text of YAML's characters: read without a panic, the same
        /// both ways where the stream reads it alone, and as JSON.
        #[test]
        fn any_text_is_read_the_same_both_ways(
            text in "[-:?,\\[\\]{}#&*!|>'\" \n\tabyno0-9.~<_%@]{0,60}"
        ) {
            let _ = to_json(&text, 1);
            if let Some((streamed, tree)) = both_ways(&text) {
                if let Ok(json) = &streamed {
                    proptest::prop_assert!(
                        serde_json::from_str::<serde_json::Value>(json).is_ok(), "{json}"
                    );
                }
                proptest::prop_assert_eq!(streamed, tree, "{:?}", text);
            }
        }

        /// The streamed reading and the tree read every document without
        /// anchors alike: the same JSON, or the same refusal.
        #[test]
        fn the_stream_reads_as_the_tree(document in documents()) {
            let (streamed, tree) = both_ways(&document).expect("no anchor here");
            proptest::prop_assert_eq!(streamed, tree, "{}", document);
        }
    }
}
