//! A JSON file read as a stream: `kubectl get -o json` writes a cluster as
//! one `List` (442 MB of JSON for 138,000 objects), whose items are handed
//! out one at a time here, with serde_json's own streaming: a first pass
//! over the values, ignoring what they hold, says which are such Lists
//! (kubectl writes `kind` after `items`); a second hands out their items
//! as they are read, and every other value whole. Anything the first pass
//! does not read as JSON values one after another (JSON then YAML, broken
//! JSON) is left to `documents::read`, whole, as it always was.

use std::fmt;
use std::io::{self, BufRead, Seek, SeekFrom};

use serde::de::{
    self, Deserialize, DeserializeSeed, Deserializer as _, IgnoredAny, MapAccess, SeqAccess,
    Visitor,
};
use serde_json::Value;

use super::document::Finish;
use super::list;

/// Reads the JSON values of `input` (from its start) if some are Lists to
/// hand out item by item; `false` when none is, or the input is not JSON
/// values alone, and nothing was handed out. `input` nests no deeper
/// than `STREAMED_DEPTH` (`Depth`).
pub fn read_lists<T>(
    input: &mut (impl BufRead + Seek),
    finish: &dyn Finish<T>,
    found: &mut dyn FnMut(T),
) -> io::Result<bool> {
    input.seek(SeekFrom::Start(0))?;
    let mut ends = Vec::new();
    let mut lists = Vec::new();
    {
        let mut values = serde_json::Deserializer::from_reader(&mut *input).into_iter::<Shape>();
        while let Some(value) = values.next() {
            match value {
                Ok(shape) => {
                    ends.push(values.byte_offset() as u64);
                    lists.push(shape);
                }
                Err(_) => return Ok(false),
            }
        }
    }
    if !lists.iter().any(|shape| matches!(shape, Shape::List(_))) {
        return Ok(false);
    }
    let lines = start_lines(input, &ends)?;
    input.seek(SeekFrom::Start(0))?;
    let mut json = serde_json::Deserializer::from_reader(&mut *input);
    for (shape, &line) in lists.iter().zip(&lines) {
        let read = match shape {
            Shape::List(head) => {
                if let Some(note) = list::note(line, head).and_then(|note| finish.finish(note)) {
                    found(note);
                }
                let items = ListItems {
                    line,
                    head,
                    finish,
                    found: &mut *found,
                };
                (&mut json).deserialize_map(items)
            }
            Shape::Array | Shape::Other => Value::deserialize(&mut json).map(|value| {
                list::hand_out(line, value, None, None, 0, finish)
                    .into_iter()
                    .for_each(&mut *found)
            }),
        };
        if let Err(error) = read {
            // The first pass read it: only the disk can fail now.
            return Err(io::Error::other(error));
        }
    }
    Ok(true)
}

/// What the first pass keeps of a value: its shape.
#[derive(Debug, PartialEq)]
enum Shape {
    /// A List whose `items`, named once, are a list: its `kind` and
    /// `apiVersion`, which a typed list's items may leave to it.
    List(serde_json::Map<String, Value>),
    Array,
    Other,
}

impl<'de> de::Deserialize<'de> for Shape {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ShapeVisitor)
    }
}

struct ShapeVisitor;

impl<'de> Visitor<'de> for ShapeVisitor {
    type Value = Shape;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Shape, A::Error> {
        let (mut items, mut array) = (0, false);
        let mut head = serde_json::Map::new();
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "kind" => {
                    let kind = map.next_value::<Value>()?;
                    head.insert(key, kind);
                }
                "apiVersion" => {
                    let api_version = map.next_value::<Value>()?;
                    head.insert(key, api_version);
                }
                "items" => {
                    items += 1;
                    array = map.next_value::<Shape>()? == Shape::Array;
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(match items == 1 && array && list::names_a_list(&head) {
            true => Shape::List(head),
            false => Shape::Other,
        })
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Shape, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Shape::Array)
    }

    fn visit_bool<E>(self, _: bool) -> Result<Shape, E> {
        Ok(Shape::Other)
    }

    fn visit_i64<E>(self, _: i64) -> Result<Shape, E> {
        Ok(Shape::Other)
    }

    fn visit_u64<E>(self, _: u64) -> Result<Shape, E> {
        Ok(Shape::Other)
    }

    fn visit_f64<E>(self, _: f64) -> Result<Shape, E> {
        Ok(Shape::Other)
    }

    fn visit_str<E>(self, _: &str) -> Result<Shape, E> {
        Ok(Shape::Other)
    }

    fn visit_unit<E>(self) -> Result<Shape, E> {
        Ok(Shape::Other)
    }
}

/// How deep a JSON text nests, line by line (a JSON string holds no line
/// break): the first pass skips values without a depth limit, so a text
/// that nests deeper than any object is left to be read whole, where the
/// parser's limit refuses it and says where.
#[derive(Debug, Default)]
pub struct Depth {
    depth: usize,
    pub deepest: usize,
    in_string: bool,
    escaped: bool,
}

/// Deeper than this, a JSON text is not streamed (serde_json refuses past
/// 128 levels; no Kubernetes object comes near).
pub const STREAMED_DEPTH: usize = 100;

impl Depth {
    pub fn line(&mut self, line: &str) {
        for byte in line.bytes() {
            match (self.in_string, self.escaped, byte) {
                (true, true, _) => self.escaped = false,
                (true, false, b'\\') => self.escaped = true,
                (true, false, b'"') => self.in_string = false,
                (true, false, _) => {}
                (false, _, b'"') => self.in_string = true,
                (false, _, b'[' | b'{') => {
                    self.depth += 1;
                    self.deepest = self.deepest.max(self.depth);
                }
                (false, _, b']' | b'}') => self.depth = self.depth.saturating_sub(1),
                (false, _, _) => {}
            }
        }
    }
}

/// A List the first pass found: its items handed out as they are read,
/// the rest of it read and dropped (a List's own fields say nothing of
/// its objects).
struct ListItems<'f, T> {
    line: usize,
    head: &'f serde_json::Map<String, Value>,
    finish: &'f dyn Finish<T>,
    found: &'f mut dyn FnMut(T),
}

impl<'de, T> Visitor<'de> for ListItems<'_, T> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a List")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "items" => map.next_value_seed(Items {
                    line: self.line,
                    head: self.head,
                    finish: self.finish,
                    found: &mut *self.found,
                })?,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

struct Items<'f, T> {
    line: usize,
    head: &'f serde_json::Map<String, Value>,
    finish: &'f dyn Finish<T>,
    found: &'f mut dyn FnMut(T),
}

impl<'de, T> DeserializeSeed<'de> for Items<'_, T> {
    type Value = ();

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_seq(self)
    }
}

impl<'de, T> Visitor<'de> for Items<'_, T> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a List's items")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut index = 0;
        while let Some(value) = seq.next_element::<Value>()? {
            let item = list::item(self.head, value, None, self.line, index, self.finish);
            item.into_iter().for_each(&mut *self.found);
            index += 1;
        }
        Ok(())
    }
}

/// The line each value starts on: the first byte after the previous
/// value's end that is not white space.
fn start_lines(input: &mut (impl BufRead + Seek), ends: &[u64]) -> io::Result<Vec<usize>> {
    input.seek(SeekFrom::Start(0))?;
    let (mut offset, mut line) = (0u64, 1usize);
    let mut lines = Vec::with_capacity(ends.len());
    let mut previous_end = 0;
    for &end in ends {
        // Up to the previous value's end, then past white space.
        let mut seeking_start = false;
        loop {
            let buffer = input.fill_buf()?;
            if buffer.is_empty() {
                break;
            }
            let mut used = 0;
            let mut started = false;
            for &byte in buffer {
                if offset >= previous_end {
                    seeking_start = true;
                }
                if seeking_start && !byte.is_ascii_whitespace() {
                    started = true;
                    break;
                }
                if byte == b'\n' {
                    line += 1;
                }
                offset += 1;
                used += 1;
            }
            input.consume(used);
            if started {
                break;
            }
        }
        lines.push(line);
        previous_end = end;
    }
    Ok(lines)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::document::Found;
    use serde_json::json;

    fn lists(text: &str) -> Option<Vec<Found>> {
        let mut found = Vec::new();
        let mut input = io::Cursor::new(text.as_bytes());
        read_lists(&mut input, &crate::agree::One, &mut |f| found.push(f))
            .unwrap()
            .then_some(found)
    }

    #[test]
    fn a_list_hands_out_its_items_and_other_values_whole() {
        let text = "\n\n{\n    \"apiVersion\": \"v1\",\n    \"items\": [\n        {\"kind\": \"Pod\", \"n\": 1.5},\n        {\"kind\": \"Secret\"}\n    ],\n    \"kind\": \"List\",\n    \"metadata\": {\"resourceVersion\": \"\"}\n}\n{\"kind\": \"ConfigMap\"}{\"kind\": \"PodList\", \"items\": []}\n  [1]\n";
        let found = lists(text).unwrap();
        assert_eq!(
            found,
            [
                Found::Item {
                    line: 3,
                    index: 0,
                    value: json!({"kind": "Pod", "n": 1.5}),
                    json: None,
                },
                Found::Item {
                    line: 3,
                    index: 1,
                    value: json!({"kind": "Secret"}),
                    json: None,
                },
                Found::Object {
                    line: 12,
                    value: json!({"kind": "ConfigMap"}),
                    json: None,
                },
                Found::Object {
                    line: 13,
                    value: json!([1]),
                    json: None,
                },
            ]
        );
        // The same lines as read whole.
        let whole: Vec<usize> = crate::document::read(text)
            .iter()
            .map(|(line, _)| *line)
            .collect();
        assert_eq!(whole, [3, 12, 12, 13]);
    }

    #[test]
    fn what_is_no_list_of_json_values_is_left_to_be_read_whole() {
        for text in [
            "{\"kind\": \"Pod\"}\n[1, 2]\n",
            "{\"kind\": \"List\", \"items\": {\"a\": []}}",
            "{\"kind\": \"List\", \"items\": [], \"items\": [{\"kind\": \"Pod\"}]}",
            "{\"kind\": \"List\", \"items\": [{\"kind\": \"Pod\"}]}\n---\nkind: Pod\n",
            "{\"kind\": \"List\", \"items\": [{\"kind\": \"Pod\"}]}\n{\"a\": \n",
            "\u{feff}{\"kind\": \"List\", \"items\": [{\"kind\": \"Pod\"}]}",
        ] {
            assert_eq!(lists(text), None, "{text}");
        }
    }

    #[test]
    fn how_deep_a_text_nests() {
        let mut depth = Depth::default();
        depth.line("{\"a\": [[\"]]]\\\"[[[\", {\"b\": []}]],\n");
        depth.line("\"c\": [[[]]]}\n");
        assert_eq!(depth.deepest, 5);
    }
}
