//! The fields of each kind Kubernetes serves, and their types, as the API
//! server decodes an object under kubectl's default `--validate=strict`
//! (server-side field validation): a field its Go type does not have is
//! refused, and so is a value of another type (`replicas: "3"`, a boolean
//! where a string goes). Such an object never reaches a policy, so the
//! check does not judge it.
//!
//! The table is generated, never written by hand: `cluster/decoder
//! -schema` reads the Go types of the pinned release (k8s.io/api) by
//! reflection, as encoding/json reads them, and `tests/decoder.rs` holds
//! `kubernetes-fields.json` to what it prints and `check`'s reading to the
//! API server's decoding. (k8s-openapi's types would refuse wrong types,
//! but read past unknown fields, and compile into the runner's binary
//! thousands of types for a walk over names.)

use std::collections::HashMap;
use std::sync::LazyLock;

use serde::Deserialize;
use serde_json::Value;

const TABLE: &str = include_str!("kubernetes-fields.json");

/// The table as the decoder prints it.
#[derive(Deserialize)]
struct Table {
    /// `apps/v1/Deployment` → the struct it decodes into.
    kinds: HashMap<String, String>,
    /// A struct → its JSON fields → their types (`fields` in
    /// `cluster/decoder/schema.go` says the expressions).
    types: HashMap<String, HashMap<String, String>>,
}

/// The table resolved once: each type an `Expr`, each struct by its index,
/// its fields sorted by name, so that a walk compares no type's name.
struct Fields {
    kinds: HashMap<String, usize>,
    structs: Vec<Vec<(Box<str>, Expr)>>,
}

/// A type, as the decoder's expressions write it.
#[derive(Debug, Clone)]
enum Expr {
    /// `string`, `time`: a string; `bytes`: a string of base64.
    String,
    Bytes,
    Boolean,
    Int32,
    Int64,
    Uint64,
    Number,
    Quantity,
    IntOrString,
    Any,
    /// `[]T`
    List(Box<Expr>),
    /// `{}T`: a map of string keys.
    Map(Box<Expr>),
    /// A struct, by its index in `Fields::structs`.
    Struct(usize),
    /// A struct the table does not list: not checked.
    Unknown,
}

impl Expr {
    fn parse(text: &str, index: &HashMap<&str, usize>) -> Expr {
        if let Some(item) = text.strip_prefix("[]") {
            return Expr::List(Box::new(Expr::parse(item, index)));
        }
        if let Some(entry) = text.strip_prefix("{}") {
            return Expr::Map(Box::new(Expr::parse(entry, index)));
        }
        match text {
            "string" | "time" => Expr::String,
            "bytes" => Expr::Bytes,
            "boolean" => Expr::Boolean,
            "int32" => Expr::Int32,
            "int64" => Expr::Int64,
            "uint64" => Expr::Uint64,
            "number" => Expr::Number,
            "quantity" => Expr::Quantity,
            "int-or-string" => Expr::IntOrString,
            "any" => Expr::Any,
            name => index.get(name).map_or(Expr::Unknown, |&i| Expr::Struct(i)),
        }
    }
}

static FIELDS: LazyLock<Fields> = LazyLock::new(|| {
    let table: Table =
        serde_json::from_str(TABLE).expect("kubernetes-fields.json is the decoder's JSON");
    let mut names: Vec<&str> = table.types.keys().map(String::as_str).collect();
    names.sort_unstable();
    let index: HashMap<&str, usize> = names.iter().enumerate().map(|(i, n)| (*n, i)).collect();
    let structs = names
        .iter()
        .map(|name| {
            let mut fields: Vec<(Box<str>, Expr)> = table.types[*name]
                .iter()
                .map(|(field, expr)| (field.as_str().into(), Expr::parse(expr, &index)))
                .collect();
            fields.sort_unstable_by(|a, b| a.0.cmp(&b.0));
            fields
        })
        .collect();
    let kinds = table
        .kinds
        .iter()
        .filter_map(|(kind, name)| Some((kind.clone(), *index.get(name.as_str())?)))
        .collect();
    Fields { kinds, structs }
});

/// Why the API server refuses to decode `object`, if it does: the first
/// field it does not know, or the first value of another type, in the
/// order the object holds them. `None` for a kind it does not serve (a
/// custom resource's fields are its CRD's).
pub fn refusal(object: &Value) -> Option<String> {
    let api_version = object.get("apiVersion")?.as_str()?;
    let kind = object.get("kind")?.as_str()?;
    let root = *FIELDS.kinds.get(&format!("{api_version}/{kind}"))?;
    let (problem, mut path) = check(object, &Expr::Struct(root))?;
    path.reverse();
    let mut at = String::new();
    for step in path {
        match step {
            Step::Field(name) if at.is_empty() => at.push_str(name),
            Step::Field(name) => {
                at.push('.');
                at.push_str(name);
            }
            Step::Index(i) => at.push_str(&format!("[{i}]")),
            Step::Key(key) => at.push_str(&format!("[{key:?}]")),
        }
    }
    Some(match problem {
        Problem::Unknown => format!(
            "`{at}` is no field of {kind} (`{api_version}`), and the API server refuses a field \
             it does not know: a misspelling, or a field of another kind or version?"
        ),
        Problem::Type { found, expected } => format!(
            "`{at}` is {found}, where the API server takes {expected}{}",
            advice(found, expected)
        ),
        Problem::NotBase64 => format!(
            "`{at}` is not base64, and the API server takes bytes only as base64 (it refuses \
             the object: `illegal base64 data`): encode the value{}",
            match kind {
                "Secret" => ", or give it in `stringData`, which takes plain text",
                _ => "",
            }
        ),
    })
}

/// Bytes written in base64, as Go's standard decoder (`encoding/json`'s
/// for `[]byte`) reads them: padded, line breaks ignored, bits left over
/// before the padding dropped.
pub fn base64(text: &str) -> Option<Vec<u8>> {
    let bytes: Vec<u8> = text
        .bytes()
        .filter(|b| !matches!(b, b'\r' | b'\n'))
        .collect();
    if !bytes.len().is_multiple_of(4) {
        return None;
    }
    let value = |b: u8| -> Option<u32> {
        Some(match b {
            b'A'..=b'Z' => b - b'A',
            b'a'..=b'z' => b - b'a' + 26,
            b'0'..=b'9' => b - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32)
    };
    let quads = bytes.len() / 4;
    let mut out = Vec::with_capacity(quads * 3);
    for (i, quad) in bytes.chunks(4).enumerate() {
        let pad = quad.iter().rev().take_while(|&&b| b == b'=').count();
        if pad > 2 || (pad > 0 && i + 1 < quads) {
            return None;
        }
        let mut n = 0u32;
        for &b in &quad[..4 - pad] {
            n = n << 6 | value(b)?;
        }
        n <<= 6 * pad as u32;
        out.extend_from_slice(&[(n >> 16) as u8, (n >> 8) as u8, n as u8][..3 - pad]);
    }
    Some(out)
}

#[derive(Debug, PartialEq)]
enum Problem {
    Unknown,
    Type {
        found: &'static str,
        expected: &'static str,
    },
    /// Bytes (`[]byte`), which JSON carries as base64, that are not.
    NotBase64,
}

/// A step of the path to a problem, from where it is outwards.
enum Step<'v> {
    Field(&'v str),
    Index(usize),
    Key(&'v str),
}

/// The first problem of `value` as the type `expr`, and the path to it,
/// innermost first: built only where there is a problem.
fn check<'v>(value: &'v Value, expr: &Expr) -> Option<(Problem, Vec<Step<'v>>)> {
    // null is taken wherever a value goes: encoding/json leaves the zero.
    if value.is_null() {
        return None;
    }
    let wrong = |expected| {
        Some((
            Problem::Type {
                found: what(value),
                expected,
            },
            Vec::new(),
        ))
    };
    let integer = |low: f64, high: f64| match value {
        // YAML's `1.0` reaches the API server as `1`, as kubectl writes it.
        Value::Number(n) => n
            .as_f64()
            .is_some_and(|f| f.fract() == 0.0 && (low..=high).contains(&f)),
        _ => false,
    };
    let within = |step: Step<'v>, found: Option<(Problem, Vec<Step<'v>>)>| {
        found.map(|(problem, mut path)| {
            path.push(step);
            (problem, path)
        })
    };
    match expr {
        Expr::String => (!value.is_string()).then(|| wrong("a string")).flatten(),
        Expr::Bytes => match value {
            Value::String(text) => base64(text)
                .is_none()
                .then(|| (Problem::NotBase64, Vec::new())),
            _ => wrong("a string of base64"),
        },
        Expr::Boolean => (!value.is_boolean()).then(|| wrong("a boolean")).flatten(),
        Expr::Int32 => (!integer(i32::MIN as f64, i32::MAX as f64))
            .then(|| wrong("a whole number (int32)"))
            .flatten(),
        Expr::Int64 => (!integer(i64::MIN as f64, i64::MAX as f64))
            .then(|| wrong("a whole number"))
            .flatten(),
        Expr::Uint64 => (!integer(0.0, u64::MAX as f64))
            .then(|| wrong("a whole number, not below 0"))
            .flatten(),
        Expr::Number => (!value.is_number()).then(|| wrong("a number")).flatten(),
        Expr::Quantity => (!(value.is_string() || value.is_number()))
            .then(|| wrong("a quantity (`500m`, `1Gi`, a number)"))
            .flatten(),
        Expr::IntOrString => (!(value.is_string() || integer(i32::MIN as f64, i32::MAX as f64)))
            .then(|| wrong("a whole number or a string"))
            .flatten(),
        Expr::Any | Expr::Unknown => None,
        Expr::List(item) => {
            let Value::Array(items) = value else {
                return wrong("a list");
            };
            items
                .iter()
                .enumerate()
                .find_map(|(i, element)| within(Step::Index(i), check(element, item)))
        }
        Expr::Map(entry) => {
            let Value::Object(map) = value else {
                return wrong("a mapping");
            };
            map.iter()
                .find_map(|(key, element)| within(Step::Key(key), check(element, entry)))
        }
        Expr::Struct(index) => {
            let Value::Object(map) = value else {
                return wrong("a mapping");
            };
            let fields = &FIELDS.structs[*index];
            map.iter().find_map(|(key, element)| {
                match fields.binary_search_by(|(name, _)| (**name).cmp(key.as_str())) {
                    Ok(at) => within(Step::Field(key), check(element, &fields[at].1)),
                    Err(_) => Some((Problem::Unknown, vec![Step::Field(key)])),
                }
            })
        }
    }
}

/// What to do, where it is plain.
fn advice(found: &str, expected: &str) -> &'static str {
    match (found, expected) {
        ("a string", e) if e.starts_with("a whole number") || e == "a boolean" => ": unquote it",
        ("a number" | "a boolean", "a string") => ": quote it",
        _ => "",
    }
}

/// What a JSON value is, as a message names it.
pub fn what(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(n) if n.as_f64().is_some_and(|f| f.fract() != 0.0) => {
            "a number with a fraction"
        }
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn deployment(spec: Value) -> Value {
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": spec})
    }

    #[test]
    fn what_the_api_server_decodes_passes() {
        let spec = json!({
            "replicas": 3.0,
            "selector": {"matchLabels": {"app": "d"}},
            "strategy": {"rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 1}},
            "template": {
                "metadata": {"labels": {"app": "d"}, "creationTimestamp": null},
                "spec": {"containers": [{
                    "name": "c", "image": "i",
                    "resources": {"limits": {"cpu": "500m", "memory": 1024}},
                    "ports": [{"containerPort": 80}]
                }]}
            }
        });
        assert_eq!(refusal(&deployment(spec)), None);
        // A custom resource, and a kind no release serves, are not known.
        assert_eq!(
            refusal(&json!({"apiVersion": "example.com/v1", "kind": "Widget", "spec": {"x": 1}})),
            None
        );
    }

    #[test]
    fn unknown_fields_and_wrong_types_are_refused_where_they_are() {
        for (spec, refusal_text) in [
            (
                json!({"bogus": 1}),
                "`spec.bogus` is no field of Deployment (`apps/v1`), and the API server refuses a field it does not know: a misspelling, or a field of another kind or version?",
            ),
            (
                json!({"replicas": "3"}),
                "`spec.replicas` is a string, where the API server takes a whole number (int32): unquote it",
            ),
            (
                json!({"replicas": 1.5}),
                "`spec.replicas` is a number with a fraction, where the API server takes a whole number (int32)",
            ),
            (
                json!({"replicas": 3_000_000_000u64}),
                "`spec.replicas` is a number, where the API server takes a whole number (int32)",
            ),
            (
                json!({"template": {"spec": {"containers": [{"name": "c"}, {"name": 7}]}}}),
                "`spec.template.spec.containers[1].name` is a number, where the API server takes a string: quote it",
            ),
            (
                json!({"template": {"metadata": {"annotations": {"a": "b", "inject": false}}}}),
                "`spec.template.metadata.annotations[\"inject\"]` is a boolean, where the API server takes a string: quote it",
            ),
            (
                json!({"paused": "yes"}),
                "`spec.paused` is a string, where the API server takes a boolean: unquote it",
            ),
            (
                json!({"template": {"spec": {"containers": {"name": "c"}}}}),
                "`spec.template.spec.containers` is a mapping, where the API server takes a list",
            ),
        ] {
            assert_eq!(
                refusal(&deployment(spec.clone())).as_deref(),
                Some(refusal_text),
                "{spec}"
            );
        }
        // Bytes: base64 only.
        let secret = |data: Value| json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "data": data});
        assert_eq!(
            refusal(&secret(json!({"a": "aGk=", "b": "aGk\n=", "c": null}))),
            None
        );
        assert_eq!(
            refusal(&secret(json!({"a": "aGk=", "token": "not base64!"}))).as_deref(),
            Some(
                "`data[\"token\"]` is not base64, and the API server takes bytes only as base64 \
                 (it refuses the object: `illegal base64 data`): encode the value, or give it in \
                 `stringData`, which takes plain text"
            )
        );
        let binary = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "binaryData": {"b": "abc"}});
        assert!(refusal(&binary).unwrap().ends_with("encode the value"));
        assert_eq!(base64("aGVsbG8="), Some(b"hello".to_vec()));
        assert_eq!(base64("aGVsbG9="), Some(b"hello".to_vec()));
        for bad in ["aGVsbG8", "aGV=bG8=", "a===", "####"] {
            assert_eq!(base64(bad), None, "{bad}");
        }
        let top =
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "date": {}});
        assert!(
            refusal(&top)
                .unwrap()
                .starts_with("`date` is no field of ConfigMap (`v1`)")
        );
    }
}
