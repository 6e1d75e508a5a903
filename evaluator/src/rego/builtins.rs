//! The Rego builtins a module may call out for, computed as Kubewarden's own
//! Rego host computes them (burrego, kubewarden-controller 1.35,
//! `builtins/`): same names, same argument checks, same answers and error
//! texts, so that a policy decides here as it does in policy-server. Where
//! burrego departs from OPA, this follows burrego, and the function says so.
//! Where burrego panics (policy-server's evaluation then fails), this
//! returns an error instead.

use chrono::{DateTime, Datelike, Local, TimeDelta, TimeZone, Utc};
use regex::Regex;
use serde_json::{Map, Value, json};
use std::str::FromStr;
use url::Url;

/// A builtin: its arguments, each a JSON value as OPA dumped it; its result as JSON, or why not.
pub(crate) type Builtin = fn(&[Value]) -> Result<Value, String>;

/// The builtins Kubewarden offers, sorted by name (23), each with its function.
pub(crate) const BUILTINS: [(&str, Builtin); 23] = [
    ("base64url.encode_no_pad", base64url_encode_no_pad),
    ("date", date),
    ("glob.quote_meta", glob_quote_meta),
    ("hex.decode", hex_decode),
    ("hex.encode", hex_encode),
    ("json.is_valid", json_is_valid),
    ("json.patch", json_patch),
    ("parse_rfc3339_ns", parse_rfc3339_ns),
    ("regex.find_n", regex_find_n),
    ("regex.split", regex_split),
    ("regex.template_match", regex_template_match),
    ("semver.compare", semver_compare),
    ("semver.is_valid", semver_is_valid),
    ("sprintf", sprintf),
    ("time.now_ns", time_now_ns),
    ("trace", trace),
    ("urlquery.decode", urlquery_decode),
    ("urlquery.decode_object", urlquery_decode_object),
    ("urlquery.encode", urlquery_encode),
    ("urlquery.encode_object", urlquery_encode_object),
    ("yaml.is_valid", yaml_is_valid),
    ("yaml.marshal", yaml_marshal),
    ("yaml.unmarshal", yaml_unmarshal),
];

/// A builtin by name; `None` for one Kubewarden does not offer.
pub(crate) fn find(name: &str) -> Option<Builtin> {
    BUILTINS
        .binary_search_by(|(builtin, _)| (*builtin).cmp(name))
        .ok()
        .map(|index| BUILTINS[index].1)
}

/// `Err` naming, sorted and comma-separated, the builtins a module calls that Kubewarden does
/// not offer, in burrego's words ("Missing Rego builtins: a, b"), which policy-server answers
/// by refusing the module.
pub(crate) fn check<'a>(called: impl Iterator<Item = &'a str>) -> Result<(), String> {
    let mut missing: Vec<&str> = called.filter(|name| find(name).is_none()).collect();
    if missing.is_empty() {
        return Ok(());
    }
    // burrego collects them in a set: each once, in no set order; sorted here.
    missing.sort_unstable();
    missing.dedup();
    Err(format!("Missing Rego builtins: {}", missing.join(", ")))
}

/// burrego's `BuiltinError` as policy-server shows it: name and message Debug-quoted.
fn error(name: &str, message: impl AsRef<str>) -> String {
    format!("Builtin error [{name:?}]: {:?}", message.as_ref())
}

/// `Err` with burrego's `message` for `name` unless there are `count` arguments.
fn arity(name: &str, args: &[Value], count: usize, message: &str) -> Result<(), String> {
    if args.len() == count {
        Ok(())
    } else {
        Err(error(name, message))
    }
}

/// Argument `index` as a string, else `Err` with burrego's `message` for `name`.
fn string<'a>(
    name: &str,
    args: &'a [Value],
    index: usize,
    message: &str,
) -> Result<&'a str, String> {
    args[index].as_str().ok_or_else(|| error(name, message))
}

/// The one argument, a string, else `Err` with burrego's words.
fn only_string<'a>(name: &str, args: &'a [Value], arity_message: &str) -> Result<&'a str, String> {
    arity(name, args, 1, arity_message)?;
    string(name, args, 0, "1st parameter is not a string")
}

/// `null`: burrego only logs the note (at debug level; not shown here),
/// where OPA's `trace` returns `true`.
fn trace(args: &[Value]) -> Result<Value, String> {
    only_string("trace", args, "Wrong number of arguments")?;
    Ok(Value::Null)
}

fn base64url_encode_no_pad(args: &[Value]) -> Result<Value, String> {
    use base64::Engine as _;
    let input = only_string("base64url.encode_no_pad", args, "wrong number of arguments")?;
    Ok(Value::String(
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(input),
    ))
}

/// `https://example.com/?<query>`: burrego percent-encodes through the `url`
/// crate's query setter, not with Go's `url.QueryEscape` as OPA does.
fn url_with_query(name: &str, query: &str) -> Result<Url, String> {
    let mut url = Url::parse("https://example.com/")
        .map_err(|e| error(name, format!("internal error 1 - {e:?}")))?;
    url.set_query(Some(query));
    Ok(url)
}

/// The query-component encoding of the `url` crate (as burrego): a space is
/// `%20` and `&`, `=`, `+`, `/` stay as they are, where OPA gives `+`, `%26`,
/// `%3D`, `%2B`, `%2F`.
fn urlquery_encode(args: &[Value]) -> Result<Value, String> {
    const NAME: &str = "urlquery.encode";
    let input = only_string(NAME, args, "wrong number of arguments")?;
    let url = url_with_query(NAME, &format!("input={input}"))?;
    let query = url.query().ok_or_else(|| error(NAME, "internal error 2"))?;
    let encoded = query
        .strip_prefix("input=")
        .ok_or_else(|| error(NAME, "internal error 3"))?;
    Ok(Value::String(encoded.to_string()))
}

/// Form-decoded as burrego does it, as the value of `input=<s>`: an `&`
/// that makes a second pair fails ("internal error 2"), where OPA decodes it.
fn urlquery_decode(args: &[Value]) -> Result<Value, String> {
    const NAME: &str = "urlquery.decode";
    let input = only_string(NAME, args, "wrong number of arguments")?;
    let url = url_with_query(NAME, &format!("input={input}"))?;
    let mut pairs = url.query_pairs();
    match (pairs.next(), pairs.next()) {
        (Some((_, value)), None) => Ok(Value::String(value.into_owned())),
        _ => Err(error(NAME, "internal error 2")),
    }
}

/// Only string values (OPA also takes arrays and sets), written `k=v`
/// joined by `&` in the object's key order and then query-encoded, so an
/// `&` or `=` inside a key or value is not escaped.
fn urlquery_encode_object(args: &[Value]) -> Result<Value, String> {
    const NAME: &str = "urlquery.encode_object";
    arity(NAME, args, 1, "wrong number of arguments")?;
    let object = args[0]
        .as_object()
        .ok_or_else(|| error(NAME, "1st parameter is not an object"))?;
    let mut url = url_with_query(NAME, "")?;
    let pairs = object
        .iter()
        .map(|(key, value)| {
            value
                .as_str()
                .map(|value| format!("{key}={value}"))
                .ok_or_else(|| error(NAME, format!("the value of key {key} is not a string")))
        })
        .collect::<Result<Vec<_>, _>>()?;
    url.set_query(Some(&pairs.join("&")));
    let query = url.query().ok_or_else(|| error(NAME, "internal error 2"))?;
    Ok(Value::String(query.to_string()))
}

/// An object of strings, the last of a repeated key winning, where OPA
/// gives each key an array of all its values. burrego names its type error
/// after `urlquery.decode`; so does this.
fn urlquery_decode_object(args: &[Value]) -> Result<Value, String> {
    const NAME: &str = "urlquery.decode_object";
    arity(NAME, args, 1, "wrong number of arguments")?;
    let input = string("urlquery.decode", args, 0, "1st parameter is not a string")?;
    let url = url_with_query(NAME, input)?;
    let object: Map<String, Value> = url
        .query_pairs()
        .map(|(key, value)| (key.into_owned(), Value::String(value.into_owned())))
        .collect();
    Ok(Value::Object(object))
}

fn json_is_valid(args: &[Value]) -> Result<Value, String> {
    let input = only_string("json.is_valid", args, "wrong number of arguments")?;
    Ok(Value::Bool(serde_json::from_str::<Value>(input).is_ok()))
}

/// YAML as serde_yaml writes it (here through its maintained fork).
fn yaml_marshal(args: &[Value]) -> Result<Value, String> {
    const NAME: &str = "yaml.marshal";
    arity(NAME, args, 1, "wrong number of arguments")?;
    let value: yaml_serde::Value = serde_json::from_value(args[0].clone()).map_err(|e| {
        error(
            NAME,
            format!(" cannot convert input object to yaml - {e:?}"),
        )
    })?;
    let text =
        yaml_serde::to_string(&value).map_err(|e| error(NAME, format!("marshal error - {e:?}")))?;
    Ok(Value::String(text))
}

fn yaml_unmarshal(args: &[Value]) -> Result<Value, String> {
    const NAME: &str = "yaml.unmarshal";
    let input = only_string(NAME, args, "wrong number of arguments")?;
    yaml_serde::from_str::<Value>(input)
        .map_err(|e| error(NAME, format!("cannot convert input object to json - {e:?}")))
}

fn yaml_is_valid(args: &[Value]) -> Result<Value, String> {
    const NAME: &str = "yaml.is_valid";
    arity(NAME, args, 1, "wrong number of arguments")?;
    let input = string(NAME, args, 0, "parameter is not a string")?;
    Ok(Value::Bool(
        yaml_serde::from_str::<yaml_serde::Value>(input).is_ok(),
    ))
}

/// Each byte in lowercase hex without a leading zero, as burrego writes it:
/// "\n" is "a", where OPA gives "0a".
fn hex_encode(args: &[Value]) -> Result<Value, String> {
    use std::fmt::Write as _;
    let input = only_string("hex.encode", args, "wrong number of arguments")?;
    let mut encoded = String::with_capacity(input.len() * 2);
    for byte in input.bytes() {
        let _ = write!(encoded, "{byte:x}");
    }
    Ok(Value::String(encoded))
}

/// Two characters at a time, each pair read as Rust reads a base-16 `u8`
/// (so "+f" is 0x0f), the bytes then as UTF-8. An odd length, or a pair
/// that splits a character, panics in burrego; here it is an error.
fn hex_decode(args: &[Value]) -> Result<Value, String> {
    const NAME: &str = "hex.decode";
    let input = only_string(NAME, args, "wrong number of arguments")?;
    let mut bytes = Vec::with_capacity(input.len() / 2);
    for start in (0..input.len()).step_by(2) {
        let pair = input.get(start..start + 2).ok_or_else(|| {
            error(
                NAME,
                format!(
                    "cannot parse input - no whole pair of characters at byte {start} (burrego panics here)"
                ),
            )
        })?;
        let byte = u8::from_str_radix(pair, 16)
            .map_err(|e| error(NAME, format!("cannot parse input - {e:?}")))?;
        bytes.push(byte);
    }
    let decoded = String::from_utf8(bytes)
        .map_err(|e| error(NAME, format!("cannot parse string - {e:?}")))?;
    Ok(Value::String(decoded))
}

/// A backslash before each of `* ? \ [ ] { }`, burrego's set of glob
/// metacharacters.
fn glob_quote_meta(args: &[Value]) -> Result<Value, String> {
    let input = only_string("glob.quote_meta", args, "wrong number of arguments")?;
    let mut quoted = String::with_capacity(input.len());
    for c in input.chars() {
        if matches!(c, '*' | '?' | '\\' | '[' | ']' | '{' | '}') {
            quoted.push('\\');
        }
        quoted.push(c);
    }
    Ok(Value::String(quoted))
}

/// The patched object; burrego takes only an object to patch (OPA any
/// value). A patch whose operations do not parse panics in burrego; here it
/// is an error.
fn json_patch(args: &[Value]) -> Result<Value, String> {
    const NAME: &str = "json.patch";
    arity(NAME, args, 2, "wrong number of arguments")?;
    if !args[0].is_object() {
        return Err(error(NAME, "1st parameter is not an object"));
    }
    if !args[1].is_array() {
        return Err(error(NAME, "2nd parameter is not an array"));
    }
    let patch: json_patch::Patch = serde_json::from_value(args[1].clone()).map_err(|e| {
        error(
            NAME,
            format!("cannot read the patch operations: {e} (burrego panics here)"),
        )
    })?;
    let mut object = args[0].clone();
    json_patch::patch(&mut object, &patch)
        .map_err(|e| error(NAME, format!("cannot apply patch: {e:?}")))?;
    Ok(object)
}

fn compile(name: &str, pattern: &str) -> Result<Regex, String> {
    Regex::new(pattern).map_err(|e| {
        error(
            name,
            format!("cannot build regex from the given pattern string '{pattern}': {e:?}"),
        )
    })
}

/// burrego's departure: the pieces joined into one string, not an array of
/// them (`regex.split("/", "a/b")` is "ab"). Rust's regex syntax, not Go's.
fn regex_split(args: &[Value]) -> Result<Value, String> {
    const NAME: &str = "regex.split";
    arity(NAME, args, 2, "Wrong number of arguments given")?;
    let pattern = string(NAME, args, 0, "1st parameter is not a string")?;
    let input = string(NAME, args, 1, "2nd parameter is not a string")?;
    let joined: String = compile(NAME, pattern)?.split(input).collect();
    Ok(Value::String(joined))
}

/// Whether the template's regex matches anywhere in the string: burrego
/// does not anchor it (OPA matches the whole string). Delimiters must be
/// one byte long; a bad regex is reported under the name "regex".
fn regex_template_match(args: &[Value]) -> Result<Value, String> {
    const NAME: &str = "regex.template_match";
    arity(NAME, args, 4, "Wrong number of arguments given")?;
    let template = string(NAME, args, 0, "1st parameter is not a string")?;
    let input = string(NAME, args, 1, "2nd parameter is not a string")?;
    let start = string(NAME, args, 2, "3rd parameter is not a string")?;
    if start.len() != 1 {
        return Err(error(
            NAME,
            "3rd parameter has to be exactly one character long",
        ));
    }
    let end = string(NAME, args, 3, "4th parameter is not a string")?;
    if end.len() != 1 {
        return Err(error(
            NAME,
            "4th parameter has to be exactly one character long",
        ));
    }
    let pattern = template_pattern(
        template,
        start.as_bytes()[0] as char,
        end.as_bytes()[0] as char,
    );
    let regex = Regex::new(&pattern).map_err(|e| {
        error(
            "regex",
            format!("tried to initialize an invalid regular expression: {e:?}"),
        )
    })?;
    Ok(Value::Bool(regex.is_match(input)))
}

/// The regex a template stands for: text between the outermost delimiters
/// as it is, text outside them escaped. Nested delimiters are dropped and an
/// unclosed one runs to the end, as in burrego.
fn template_pattern(template: &str, start: char, end: char) -> String {
    let mut pattern = String::new();
    let mut piece = String::new();
    let mut depth: i32 = 0;
    let mut flush = |piece: &mut String, is_regex: bool| {
        if is_regex {
            pattern.push_str(piece);
        } else {
            pattern.push_str(&regex::escape(piece));
        }
        piece.clear();
    };
    for c in template.chars() {
        if c == start {
            depth += 1;
            if depth == 1 {
                flush(&mut piece, false);
            }
        } else if c == end {
            depth -= 1;
            if depth == 0 {
                flush(&mut piece, true);
            }
        } else {
            piece.push(c);
        }
    }
    // After the loop, the piece is a regex exactly when a delimiter is open.
    flush(&mut piece, depth >= 1);
    pattern
}

/// The first `n` matches; -1, or any negative `n`, gives all of them (burrego
/// casts it to an unsigned count). `n` must be an integer.
fn regex_find_n(args: &[Value]) -> Result<Value, String> {
    const NAME: &str = "regex.find_n";
    // burrego's message, with its trailing "to ".
    arity(NAME, args, 3, "Wrong number of arguments given to ")?;
    let pattern = string(NAME, args, 0, "1st parameter is not a string")?;
    let input = string(NAME, args, 1, "2nd parameter is not a string")?;
    let n = args[2]
        .as_i64()
        .ok_or_else(|| error(NAME, "3rd parameter is not a number"))?;
    let regex = compile(NAME, pattern)?;
    let take = usize::try_from(n).unwrap_or(usize::MAX);
    let found: Vec<Value> = regex
        .find_iter(input)
        .take(take)
        .map(|found| Value::String(found.as_str().to_string()))
        .collect();
    Ok(Value::Array(found))
}

/// Rust's `semver` crate (strict SemVer 2.0, no "v" prefix).
fn semver_is_valid(args: &[Value]) -> Result<Value, String> {
    let input = only_string("semver.is_valid", args, "wrong number of arguments")?;
    Ok(Value::Bool(semver::Version::parse(input).is_ok()))
}

fn semver_compare(args: &[Value]) -> Result<Value, String> {
    const NAME: &str = "semver.compare";
    arity(NAME, args, 2, "wrong number of arguments")?;
    let a = string(NAME, args, 0, "1st parameter is not a string")?;
    let b = string(NAME, args, 1, "2nd parameter is not a string")?;
    let a = semver::Version::parse(a).map_err(|e| {
        error(
            NAME,
            format!("first argument is not a valid semantic version: {e:?}"),
        )
    })?;
    let b = semver::Version::parse(b).map_err(|e| {
        error(
            NAME,
            format!("second argument is not a valid semantic version: {e:?}"),
        )
    })?;
    Ok(json!(a.cmp(&b) as i8))
}

/// The Go template `{{ printf "<fmt>" (index . 0) ...}}` rendered by gtmpl,
/// as burrego does: Go-like verbs with gtmpl's quirks (`%v` of a negative
/// number fails, `%q` adds no quotes, an object prints as `map[k:v ...]`,
/// here with its keys sorted). The format goes into the template unescaped,
/// as in burrego.
fn sprintf(args: &[Value]) -> Result<Value, String> {
    const NAME: &str = "sprintf";
    arity(NAME, args, 2, "Wrong number of arguments given")?;
    let format = string(NAME, args, 0, "1st parameter is not a string")?;
    let values = args[1]
        .as_array()
        .ok_or_else(|| error(NAME, "2nd parameter is not an array"))?
        .iter()
        .map(|value| match value {
            Value::Object(object) => sorted_map(object).map(gtmpl::Value::String),
            value => template_value(value),
        })
        .collect::<Result<Vec<_>, _>>()?;
    let indexes: Vec<String> = (0..values.len())
        .map(|i| format!("(index . {i})"))
        .collect();
    let template = format!("{{{{ printf \"{format}\" {}}}}}", indexes.join(" "));
    let text = gtmpl::template(&template, values.as_slice()).map_err(|e| {
        error(
            NAME,
            format!(
                "Cannot render go template '{template}' with args {values:?}: {}",
                without_backtrace(format!("{e:?}"))
            ),
        )
    })?;
    Ok(Value::String(text))
}

/// An object as gtmpl's `%v` writes it, `map[k:v ...]`, but its keys in
/// order, as Go's fmt orders them: gtmpl (and so policy-server) writes them
/// in a hash map's order, which changes from one run to the next.
fn sorted_map(object: &serde_json::Map<String, Value>) -> Result<String, String> {
    let mut entries = Vec::with_capacity(object.len());
    for (key, value) in object {
        let text = match value {
            Value::Object(inner) => sorted_map(inner)?,
            value => gtmpl::template("{{ printf \"%v\" . }}", template_value(value)?)
                .map_err(|e| error("sprintf", without_backtrace(format!("{e:?}"))))?,
        };
        entries.push(format!("{key}:{text}"));
    }
    Ok(format!("map[{}]", entries.join(" ")))
}

/// gtmpl's function errors carry an `anyhow` backtrace when `RUST_BACKTRACE`
/// is set; policy-server runs without one, so it is cut (closing what it
/// left open).
fn without_backtrace(text: String) -> String {
    let Some(at) = text.find("\n\nStack backtrace:") else {
        return text;
    };
    let head = &text[..at];
    let open = head
        .matches('(')
        .count()
        .saturating_sub(head.matches(')').count());
    format!("{head}{}", ")".repeat(open))
}

/// A JSON value as the Go template sees it. burrego takes every number as an
/// `i64` and panics on any other (a float, or beyond `i64`); here that is an
/// error.
fn template_value(value: &Value) -> Result<gtmpl::Value, String> {
    Ok(match value {
        Value::Null => gtmpl::Value::Nil,
        Value::Bool(b) => gtmpl::Value::Bool(*b),
        Value::String(s) => gtmpl::Value::String(s.clone()),
        Value::Number(n) => match n.as_i64() {
            Some(i) => gtmpl::Value::Number(i.into()),
            None => {
                return Err(error(
                    "sprintf",
                    format!(
                        "{n} is not a 64-bit integer, the only kind of number burrego formats (burrego panics here)"
                    ),
                ));
            }
        },
        Value::Array(items) => {
            gtmpl::Value::Array(items.iter().map(template_value).collect::<Result<_, _>>()?)
        }
        Value::Object(object) => gtmpl::Value::Map(
            object
                .iter()
                .map(|(key, value)| Ok((key.clone(), template_value(value)?)))
                .collect::<Result<_, String>>()?,
        ),
    })
}

/// Now, read anew at each call (OPA fixes it for one evaluation).
fn time_now_ns(args: &[Value]) -> Result<Value, String> {
    arity("time.now_ns", args, 0, "wrong number of arguments given")?;
    Ok(json!(Local::now().timestamp_nanos_opt()))
}

/// RFC 3339 as chrono reads it; `null` beyond the nanosecond range. burrego
/// reports its errors as `time.parse_rfc3339_ns`'s.
fn parse_rfc3339_ns(args: &[Value]) -> Result<Value, String> {
    const NAME: &str = "time.parse_rfc3339_ns";
    let input = only_string(NAME, args, "wrong number of arguments given")?;
    let parsed = DateTime::parse_from_rfc3339(input)
        .map_err(|e| error(NAME, format!(": cannot convert {input}: {e:?}")))?;
    Ok(json!(parsed.timestamp_nanos_opt()))
}

/// `[year, month, day]` of nanoseconds since the epoch in UTC, or of
/// `[ns, zone]` in an IANA zone or "Local" (the host's zone). burrego
/// offers it under the name "date", so a module calling OPA's `time.date`
/// is refused as calling a missing builtin; its errors say `time.date`.
fn date(args: &[Value]) -> Result<Value, String> {
    const NAME: &str = "time.date";
    arity(NAME, args, 1, "wrong number of arguments given")?;
    let (ns, zone) = match &args[0] {
        Value::Number(n) => (
            n.as_i64()
                .ok_or_else(|| error(NAME, "1st parameter is not a number"))?,
            None,
        ),
        Value::Array(items) => {
            if items.len() != 2 {
                return Err(error(NAME, "wrong number of items inside of input array"));
            }
            let ns = items[0]
                .as_i64()
                .ok_or_else(|| error(NAME, "1st array item is not a number"))?;
            let zone = items[1]
                .as_str()
                .ok_or_else(|| error(NAME, "2nd array item is not a string"))?;
            (ns, Some(zone))
        }
        _ => {
            return Err(error(
                NAME,
                "the 1st parameter is neither a number nor an array",
            ));
        }
    };
    let instant = DateTime::UNIX_EPOCH
        .checked_add_signed(TimeDelta::nanoseconds(ns))
        .ok_or_else(|| error(NAME, "overflow when building date"))?;
    match zone {
        None => Ok(ymd(&instant, &Utc)),
        Some("Local") => Ok(ymd(&instant, &Local)),
        Some(zone) => {
            let tz = chrono_tz::Tz::from_str(zone)
                .map_err(|e| error(NAME, format!("cannot handle given timezone {zone}: {e:?}")))?;
            Ok(ymd(&instant, &tz))
        }
    }
}

fn ymd<Z: TimeZone>(instant: &DateTime<Utc>, zone: &Z) -> Value {
    let local = instant.with_timezone(zone);
    json!([local.year(), local.month(), local.day()])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(name: &str, args: &[Value]) -> Result<Value, String> {
        find(name).unwrap_or_else(|| panic!("{name} is not in the table"))(args)
    }

    #[test]
    fn the_table_is_sorted_and_complete() {
        let names: Vec<&str> = BUILTINS.iter().map(|(name, _)| *name).collect();
        let mut sorted = names.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(names, sorted);
        // burrego's `get_builtins`, every one.
        let mut burrego = vec![
            "trace",
            "base64url.encode_no_pad",
            "urlquery.encode",
            "urlquery.decode",
            "urlquery.encode_object",
            "urlquery.decode_object",
            "json.is_valid",
            "yaml.marshal",
            "yaml.unmarshal",
            "yaml.is_valid",
            "hex.encode",
            "hex.decode",
            "glob.quote_meta",
            "json.patch",
            "regex.split",
            "regex.template_match",
            "regex.find_n",
            "semver.is_valid",
            "semver.compare",
            "sprintf",
            "time.now_ns",
            "parse_rfc3339_ns",
            "date",
        ];
        burrego.sort_unstable();
        assert_eq!(names, burrego);
        assert!(find("time.date").is_none());
        assert!(find("http.send").is_none());
    }

    #[test]
    fn check_names_what_kubewarden_lacks_in_burregos_words() {
        assert_eq!(
            check(["sprintf", "time.now_ns", "regex.split"].into_iter()),
            Ok(())
        );
        assert_eq!(
            check(["http.send", "sprintf", "crypto.sha256", "http.send"].into_iter()),
            Err("Missing Rego builtins: crypto.sha256, http.send".to_string())
        );
        assert_eq!(
            check(["time.date"].into_iter()),
            Err("Missing Rego builtins: time.date".to_string())
        );
    }

    #[test]
    fn errors_read_as_policy_servers() {
        assert_eq!(
            call("sprintf", &[json!("x")]),
            Err(r#"Builtin error ["sprintf"]: "Wrong number of arguments given""#.to_string())
        );
        assert_eq!(
            call("urlquery.decode_object", &[json!(1)]),
            Err(
                r#"Builtin error ["urlquery.decode"]: "1st parameter is not a string""#.to_string()
            )
        );
    }

    #[test]
    fn each_builtin_checks_its_arity() {
        let arities = [
            ("base64url.encode_no_pad", 1, "wrong number of arguments"),
            ("date", 1, "wrong number of arguments given"),
            ("glob.quote_meta", 1, "wrong number of arguments"),
            ("hex.decode", 1, "wrong number of arguments"),
            ("hex.encode", 1, "wrong number of arguments"),
            ("json.is_valid", 1, "wrong number of arguments"),
            ("json.patch", 2, "wrong number of arguments"),
            ("parse_rfc3339_ns", 1, "wrong number of arguments given"),
            ("regex.find_n", 3, "Wrong number of arguments given to "),
            ("regex.split", 2, "Wrong number of arguments given"),
            ("regex.template_match", 4, "Wrong number of arguments given"),
            ("semver.compare", 2, "wrong number of arguments"),
            ("semver.is_valid", 1, "wrong number of arguments"),
            ("sprintf", 2, "Wrong number of arguments given"),
            ("time.now_ns", 0, "wrong number of arguments given"),
            ("trace", 1, "Wrong number of arguments"),
            ("urlquery.decode", 1, "wrong number of arguments"),
            ("urlquery.decode_object", 1, "wrong number of arguments"),
            ("urlquery.encode", 1, "wrong number of arguments"),
            ("urlquery.encode_object", 1, "wrong number of arguments"),
            ("yaml.is_valid", 1, "wrong number of arguments"),
            ("yaml.marshal", 1, "wrong number of arguments"),
            ("yaml.unmarshal", 1, "wrong number of arguments"),
        ];
        assert_eq!(arities.len(), BUILTINS.len());
        for (name, count, message) in arities {
            let reported = match name {
                "date" => "time.date",
                "parse_rfc3339_ns" => "time.parse_rfc3339_ns",
                name => name,
            };
            let args = vec![json!("x"); count + 1];
            assert_eq!(
                call(name, &args),
                Err(error(reported, message)),
                "{name} with {} arguments",
                count + 1
            );
        }
    }

    #[test]
    fn string_arguments_are_checked() {
        let cases = [
            (
                "base64url.encode_no_pad",
                vec![json!(1)],
                "1st parameter is not a string",
            ),
            (
                "glob.quote_meta",
                vec![json!(1)],
                "1st parameter is not a string",
            ),
            (
                "hex.decode",
                vec![json!(1)],
                "1st parameter is not a string",
            ),
            (
                "hex.encode",
                vec![json!([])],
                "1st parameter is not a string",
            ),
            (
                "json.is_valid",
                vec![json!(1)],
                "1st parameter is not a string",
            ),
            (
                "regex.split",
                vec![json!(1), json!("a")],
                "1st parameter is not a string",
            ),
            (
                "regex.split",
                vec![json!("a"), json!(1)],
                "2nd parameter is not a string",
            ),
            (
                "regex.find_n",
                vec![json!("a"), json!(1), json!(1)],
                "2nd parameter is not a string",
            ),
            (
                "regex.find_n",
                vec![json!("a"), json!("a"), json!("1")],
                "3rd parameter is not a number",
            ),
            (
                "regex.find_n",
                vec![json!("a"), json!("a"), json!(1.5)],
                "3rd parameter is not a number",
            ),
            (
                "semver.is_valid",
                vec![json!(1)],
                "1st parameter is not a string",
            ),
            (
                "semver.compare",
                vec![json!("1.0.0"), json!(1)],
                "2nd parameter is not a string",
            ),
            (
                "sprintf",
                vec![json!(1), json!([])],
                "1st parameter is not a string",
            ),
            (
                "sprintf",
                vec![json!("%v"), json!("a")],
                "2nd parameter is not an array",
            ),
            ("trace", vec![json!(1)], "1st parameter is not a string"),
            (
                "urlquery.decode",
                vec![json!(1)],
                "1st parameter is not a string",
            ),
            (
                "urlquery.encode",
                vec![json!(1)],
                "1st parameter is not a string",
            ),
            (
                "urlquery.encode_object",
                vec![json!("a")],
                "1st parameter is not an object",
            ),
            ("yaml.is_valid", vec![json!(1)], "parameter is not a string"),
            (
                "yaml.unmarshal",
                vec![json!(1)],
                "1st parameter is not a string",
            ),
            (
                "json.patch",
                vec![json!([]), json!([])],
                "1st parameter is not an object",
            ),
            (
                "json.patch",
                vec![json!({}), json!({})],
                "2nd parameter is not an array",
            ),
        ];
        for (name, args, message) in cases {
            assert_eq!(
                call(name, &args),
                Err(error(name, message)),
                "{name} {args:?}"
            );
        }
        let template = |args: Vec<Value>| call("regex.template_match", &args);
        assert_eq!(
            template(vec![json!("a"), json!("a"), json!(1), json!("}")]),
            Err(error(
                "regex.template_match",
                "3rd parameter is not a string"
            ))
        );
        assert_eq!(
            template(vec![json!("a"), json!("a"), json!("{{"), json!("}")]),
            Err(error(
                "regex.template_match",
                "3rd parameter has to be exactly one character long"
            ))
        );
        assert_eq!(
            template(vec![json!("a"), json!("a"), json!("{"), json!("é")]),
            Err(error(
                "regex.template_match",
                "4th parameter has to be exactly one character long"
            ))
        );
    }

    #[test]
    fn trace_returns_null() {
        assert_eq!(call("trace", &[json!("a note")]), Ok(Value::Null));
    }

    #[test]
    fn base64url_encode_no_pad_drops_the_padding() {
        assert_eq!(
            call("base64url.encode_no_pad", &[json!("a")]),
            Ok(json!("YQ"))
        );
        assert_eq!(
            call("base64url.encode_no_pad", &[json!("\u{fb}\u{ff}")]),
            Ok(json!("w7vDvw"))
        );
        assert_eq!(
            call("base64url.encode_no_pad", &[json!("??>")]),
            Ok(json!("Pz8-"))
        );
    }

    #[test]
    fn urlquery_as_burrego() {
        assert_eq!(
            call("urlquery.encode", &[json!("español")]),
            Ok(json!("espa%C3%B1ol"))
        );
        assert_eq!(
            call("urlquery.decode", &[json!("espa%C3%B1ol")]),
            Ok(json!("español"))
        );
        // Unlike OPA's Go encoding: a space is %20, and & = + / stay.
        assert_eq!(
            call("urlquery.encode", &[json!("a b&c=d+e/f")]),
            Ok(json!("a%20b&c=d+e/f"))
        );
        assert_eq!(
            call("urlquery.decode", &[json!("a+b%20c")]),
            Ok(json!("a b c"))
        );
        assert_eq!(
            call("urlquery.decode", &[json!("a&b")]),
            Err(error("urlquery.decode", "internal error 2"))
        );
        assert_eq!(
            call(
                "urlquery.encode_object",
                &[json!({"language": "español", "name": "Rafael Fernández López"})]
            ),
            Ok(json!(
                "language=espa%C3%B1ol&name=Rafael%20Fern%C3%A1ndez%20L%C3%B3pez"
            ))
        );
        assert_eq!(
            call(
                "urlquery.encode_object",
                &[json!({"language": "español", "awesomeness": 100})]
            ),
            Err(error(
                "urlquery.encode_object",
                "the value of key awesomeness is not a string"
            ))
        );
        assert_eq!(
            call(
                "urlquery.decode_object",
                &[json!(
                    "language=espa%C3%B1ol&name=Rafael%20Fern%C3%A1ndez%20L%C3%B3pez"
                )]
            ),
            Ok(json!({"language": "español", "name": "Rafael Fernández López"}))
        );
        assert_eq!(
            call("urlquery.decode_object", &[json!("a=1&a=2&b")]),
            Ok(json!({"a": "2", "b": ""}))
        );
    }

    #[test]
    fn json_is_valid_parses() {
        assert_eq!(call("json.is_valid", &[json!("[1,2]")]), Ok(json!(true)));
        assert_eq!(call("json.is_valid", &[json!("[1,2")]), Ok(json!(false)));
    }

    #[test]
    fn yaml_round_trips() {
        let value = json!({"hello": "world", "number": 42, "list": [1, 2, 3]});
        let text = call("yaml.marshal", std::slice::from_ref(&value)).unwrap();
        assert_eq!(
            text,
            json!("hello: world\nlist:\n- 1\n- 2\n- 3\nnumber: 42\n")
        );
        assert_eq!(call("yaml.unmarshal", &[text]), Ok(value.clone()));
        assert_eq!(
            call(
                "yaml.unmarshal",
                &[json!(
                    "---\nhello: world\nlist:\n  - 1\n  - 2\n  - 3\nnumber: 42\n"
                )]
            ),
            Ok(value)
        );
        let error = call("yaml.unmarshal", &[json!("a: [1")]).unwrap_err();
        assert!(
            error.starts_with(
                r#"Builtin error ["yaml.unmarshal"]: "cannot convert input object to json - "#
            ),
            "{error}"
        );
        assert_eq!(
            call(
                "yaml.is_valid",
                &[json!("some_key: [1,2]\nsome_other_key: [3.0, 4.0]")]
            ),
            Ok(json!(true))
        );
        assert_eq!(
            call("yaml.is_valid", &[json!("some_key: [1,2")]),
            Ok(json!(false))
        );
    }

    #[test]
    fn hex_as_burrego() {
        assert_eq!(
            call("hex.encode", &[json!("hello")]),
            Ok(json!("68656c6c6f"))
        );
        assert_eq!(
            call("hex.decode", &[json!("68656c6c6f")]),
            Ok(json!("hello"))
        );
        // burrego's departures: no leading zero, a '+' sign read.
        assert_eq!(call("hex.encode", &[json!("\n!")]), Ok(json!("a21")));
        assert_eq!(call("hex.decode", &[json!("+a21")]), Ok(json!("\n!")));
        assert_eq!(
            call("hex.decode", &[json!("zz")]),
            Err(error(
                "hex.decode",
                "cannot parse input - ParseIntError { kind: InvalidDigit }"
            ))
        );
        let odd = call("hex.decode", &[json!("686")]).unwrap_err();
        assert!(odd.contains("burrego panics here"), "{odd}");
        let split = call("hex.decode", &[json!("aé")]).unwrap_err();
        assert!(split.contains("burrego panics here"), "{split}");
        let not_utf8 = call("hex.decode", &[json!("ff")]).unwrap_err();
        assert!(
            not_utf8.starts_with(
                r#"Builtin error ["hex.decode"]: "cannot parse string - FromUtf8Error"#
            ),
            "{not_utf8}"
        );
    }

    #[test]
    fn glob_quote_meta_escapes_burregos_set() {
        let cases = [
            ("*.domain.com", r"\*.domain.com"),
            ("*.domain-*.com", r"\*.domain-\*.com"),
            ("domain.com", "domain.com"),
            ("domain-[ab].com", r"domain-\[ab\].com"),
            ("nie?ce", r"nie\?ce"),
            ("some *?\\[]{} text", "some \\*\\?\\\\\\[\\]\\{\\} text"),
        ];
        for (input, quoted) in cases {
            assert_eq!(call("glob.quote_meta", &[json!(input)]), Ok(json!(quoted)));
        }
    }

    #[test]
    fn json_patch_applies_to_an_object() {
        assert_eq!(
            call(
                "json.patch",
                &[
                    json!({"a": {"foo": 1}}),
                    json!([{"op": "add", "path": "/a/bar", "value": 2}])
                ]
            ),
            Ok(json!({"a": {"foo": 1, "bar": 2}}))
        );
        let failed = call(
            "json.patch",
            &[json!({}), json!([{"op": "remove", "path": "/missing"}])],
        )
        .unwrap_err();
        assert!(
            failed.starts_with(r#"Builtin error ["json.patch"]: "cannot apply patch: "#),
            "{failed}"
        );
        let malformed = call("json.patch", &[json!({}), json!([{"op": "nope"}])]).unwrap_err();
        assert!(malformed.contains("burrego panics here"), "{malformed}");
    }

    #[test]
    fn regex_split_joins_the_pieces() {
        assert_eq!(
            call("regex.split", &[json!("/"), json!("a/b/c")]),
            Ok(json!("abc"))
        );
        assert_eq!(
            call("regex.split", &[json!("[0-9]+"), json!("x1y22z")]),
            Ok(json!("xyz"))
        );
        let error = call("regex.split", &[json!("("), json!("a")]).unwrap_err();
        assert!(
            error.starts_with(
                r#"Builtin error ["regex.split"]: "cannot build regex from the given pattern string '(': "#
            ),
            "{error}"
        );
    }

    #[test]
    fn regex_template_match_as_burrego() {
        let matches = |template: &str, input: &str, start: &str, end: &str| {
            call(
                "regex.template_match",
                &[json!(template), json!(input), json!(start), json!(end)],
            )
        };
        assert_eq!(
            matches("urn:foo:bar:baz", "urn:foo:bar:baz", "{", "}"),
            Ok(json!(true))
        );
        assert_eq!(
            matches("urn:foo:{.*}", "urn:foo:bar:baz", "{", "}"),
            Ok(json!(true))
        );
        assert_eq!(
            matches("urn:foo:<.*>", "urn:foo:bar:baz", "<", ">"),
            Ok(json!(true))
        );
        assert_eq!(
            matches("urn:foo:{.*}", "urn:foo:{.*}", "<", ">"),
            Ok(json!(true))
        );
        assert_eq!(
            matches(
                "urn:foo:test:section-<[0-9]{2}>:alert-<[0-9]{4}>",
                "urn:foo:test:section-42:alert-1234",
                "<",
                ">"
            ),
            Ok(json!(true))
        );
        assert_eq!(
            matches("urn:foo:{[0-9]+}", "urn:foo:bar", "{", "}"),
            Ok(json!(false))
        );
        // Unanchored, unlike OPA.
        assert_eq!(matches("foo", "xfoox", "{", "}"), Ok(json!(true)));
        // A bad regex is reported under the name "regex".
        let bad = matches("a{(}", "a", "{", "}").unwrap_err();
        assert!(
            bad.starts_with(
                r#"Builtin error ["regex"]: "tried to initialize an invalid regular expression: Syntax("#
            ) && bad.contains("unclosed group"),
            "{bad}"
        );
    }

    #[test]
    fn template_patterns() {
        assert_eq!(template_pattern("a.{b.}c", '{', '}'), r"a\.b.c");
        assert_eq!(template_pattern("{a{b}c}", '{', '}'), "abc");
        assert_eq!(template_pattern("a{.*", '{', '}'), "a.*");
        assert_eq!(template_pattern("a}.{", '{', '}'), r"a\.");
    }

    #[test]
    fn regex_find_n_as_burrego() {
        let find_n = |pattern: &str, n: i64| {
            call(
                "regex.find_n",
                &[json!(pattern), json!("paranormal"), json!(n)],
            )
        };
        assert_eq!(find_n("a.", 1), Ok(json!(["ar"])));
        assert_eq!(find_n("a.", 2), Ok(json!(["ar", "an"])));
        assert_eq!(find_n("a.", 10), Ok(json!(["ar", "an", "al"])));
        assert_eq!(find_n("a.", -1), Ok(json!(["ar", "an", "al"])));
        assert_eq!(find_n("a.", -2), Ok(json!(["ar", "an", "al"])));
        assert_eq!(find_n("a.", 0), Ok(json!([])));
        assert_eq!(find_n("nomatch", -1), Ok(json!([])));
        assert!(find_n("(", 1).is_err());
    }

    #[test]
    fn semver_as_burrego() {
        assert_eq!(call("semver.is_valid", &[json!("1.0.0")]), Ok(json!(true)));
        assert_eq!(
            call("semver.is_valid", &[json!("1.0.0-rc1")]),
            Ok(json!(true))
        );
        assert_eq!(
            call("semver.is_valid", &[json!("invalidsemver-1.0.0")]),
            Ok(json!(false))
        );
        let compare = |a: &str, b: &str| call("semver.compare", &[json!(a), json!(b)]);
        assert_eq!(compare("0.0.1", "0.1.0"), Ok(json!(-1)));
        assert_eq!(compare("1.0.0-rc1", "1.0.0-rc1"), Ok(json!(0)));
        assert_eq!(compare("0.1.0", "0.0.1"), Ok(json!(1)));
        assert_eq!(compare("1.0.0-beta1", "1.0.0-alpha3"), Ok(json!(1)));
        assert_eq!(compare("1.0.0-rc2", "1.0.0-rc1"), Ok(json!(1)));
        let first = compare("invalidsemver-1.0.0", "0.1.0").unwrap_err();
        assert!(
            first.contains("first argument is not a valid semantic version"),
            "{first}"
        );
        let second = compare("0.1.0", "invalidsemver-1.0.0").unwrap_err();
        assert!(
            second.contains("second argument is not a valid semantic version"),
            "{second}"
        );
    }

    #[test]
    fn sprintf_through_go_templates() {
        let sprintf = |format: &str, args: Value| call("sprintf", &[json!(format), args]);
        assert_eq!(
            sprintf(
                "hello %v %v %v",
                json!(["world", 42, ["this", "is", "a", "list"]])
            ),
            Ok(json!("hello world 42 [this is a list]"))
        );
        assert_eq!(sprintf("%v", json!(["a string"])), Ok(json!("a string")));
        assert_eq!(sprintf("%v|%v", json!([0, true])), Ok(json!("0|true")));
        assert_eq!(sprintf("%v", json!([[]])), Ok(json!("[]")));
        assert_eq!(sprintf("%v", json!([{"a": "b"}])), Ok(json!("map[a:b]")));
        assert_eq!(sprintf("%v", json!([{}])), Ok(json!("map[]")));
        // Keys in order, as Go writes them, where gtmpl's order changes.
        assert_eq!(
            sprintf("%v", json!([{"b": "c", "a": 1, "n": {"z": 1, "y": [2]}}])),
            Ok(json!("map[a:1 b:c n:map[y:[2] z:1]]"))
        );
        assert_eq!(sprintf("%s=%d", json!(["x", 7])), Ok(json!("x=7")));
        assert_eq!(
            sprintf("%5d|%-3s|", json!([42, "a"])),
            Ok(json!("   42|a  |"))
        );
        assert_eq!(sprintf("%x %X", json!([255, 255])), Ok(json!("ff FF")));
        assert_eq!(sprintf("%d", json!([-3])), Ok(json!("-3")));
        assert_eq!(sprintf("no verbs", json!([])), Ok(json!("no verbs")));
        // gtmpl's quirks, kept: a list or object inside a list prints as
        // Rust's Debug text, "%%" stays, a 0 flag pads with spaces.
        assert_eq!(
            sprintf("%v", json!([[1, [2]]])),
            Ok(json!("[1 [Number(Number { n: U(2) })]]"))
        );
        assert_eq!(sprintf("%%|%05d", json!([42])), Ok(json!("%%|   42")));
        // gtmpl's %q escapes but does not quote, unlike Go's.
        assert_eq!(sprintf("%q", json!(["a\"b"])), Ok(json!("a\\\"b")));
        // gtmpl has no %v for a negative number, nor %s for a number; its
        // error reads the same whether or not RUST_BACKTRACE is set.
        assert_eq!(
            sprintf("%v", json!([-1])),
            Err(error(
                "sprintf",
                "Cannot render go template '{{ printf \"%v\" (index . 0)}}' with args \
                 [Number(Number { n: I(-1) })]: ExecError(FuncError(Other(unable to format -1 as v)))"
            ))
        );
        assert_eq!(
            without_backtrace("A(B(C(oops\n\nStack backtrace:\n  0: f(x)\n)))".to_string()),
            "A(B(C(oops)))"
        );
        for (format, args) in [
            ("%s", json!([1])),
            ("%d", json!(["a"])),
            ("100%", json!([])),
        ] {
            let failed = sprintf(format, args).unwrap_err();
            assert!(
                failed.starts_with(
                    r#"Builtin error ["sprintf"]: "Cannot render go template '{{ printf \""#
                ),
                "{failed}"
            );
        }
        let quote = sprintf("a\"b %v", json!([1])).unwrap_err();
        assert!(
            quote.starts_with(
                r#"Builtin error ["sprintf"]: "Cannot render go template '{{ printf \"a\"b %v\" (index . 0)}}' with args [Number("#
            ),
            "{quote}"
        );
        for float in [json!([1.5]), json!([["x", 2.0]]), json!([u64::MAX])] {
            let failed = sprintf("%v", float).unwrap_err();
            assert!(failed.contains("burrego panics here"), "{failed}");
        }
    }

    #[test]
    fn time_now_ns_is_now() {
        let before = Utc::now().timestamp_nanos_opt().unwrap();
        let now = call("time.now_ns", &[]).unwrap().as_i64().unwrap();
        let after = Utc::now().timestamp_nanos_opt().unwrap();
        assert!(before <= now && now <= after, "{before} {now} {after}");
    }

    #[test]
    fn parse_rfc3339_ns_reads_chrono_rfc3339() {
        let now = Local::now();
        assert_eq!(
            call("parse_rfc3339_ns", &[json!(now.to_rfc3339())]),
            Ok(json!(now.timestamp_nanos_opt()))
        );
        assert_eq!(
            call("parse_rfc3339_ns", &[json!("1970-01-01T00:00:01.5+01:00")]),
            Ok(json!(-3_598_500_000_000_i64))
        );
        assert_eq!(
            call("parse_rfc3339_ns", &[json!("yesterday")]),
            Err(error(
                "time.parse_rfc3339_ns",
                ": cannot convert yesterday: ParseError(TooShort)"
            ))
        );
        assert_eq!(
            call("parse_rfc3339_ns", &[json!(1)]),
            Err(error(
                "time.parse_rfc3339_ns",
                "1st parameter is not a string"
            ))
        );
    }

    #[test]
    fn date_in_utc_a_zone_or_local() {
        let now = Utc::now();
        let ns = now.timestamp_nanos_opt().unwrap();
        assert_eq!(
            call("date", &[json!(ns)]),
            Ok(json!([now.year(), now.month(), now.day()]))
        );
        let pacific = chrono_tz::US::Pacific
            .with_ymd_and_hms(1990, 5, 6, 12, 30, 45)
            .single()
            .unwrap();
        assert_eq!(
            call(
                "date",
                &[json!([pacific.timestamp_nanos_opt(), "US/Pacific"])]
            ),
            Ok(json!([1990, 5, 6]))
        );
        // 2020-01-01T03:00:00Z is still 2019-12-31 in New York.
        let ns = Utc
            .with_ymd_and_hms(2020, 1, 1, 3, 0, 0)
            .unwrap()
            .timestamp_nanos_opt();
        assert_eq!(call("date", &[json!(ns)]), Ok(json!([2020, 1, 1])));
        assert_eq!(
            call("date", &[json!([ns, "America/New_York"])]),
            Ok(json!([2019, 12, 31]))
        );
        let local = now.with_timezone(&Local);
        assert_eq!(
            call("date", &[json!([now.timestamp_nanos_opt(), "Local"])]),
            Ok(json!([local.year(), local.month(), local.day()]))
        );
        let cases = [
            (json!(1.5), "1st parameter is not a number"),
            (
                json!("1"),
                "the 1st parameter is neither a number nor an array",
            ),
            (json!([1]), "wrong number of items inside of input array"),
            (json!(["1", "UTC"]), "1st array item is not a number"),
            (json!([1, 2]), "2nd array item is not a string"),
        ];
        for (arg, message) in cases {
            assert_eq!(call("date", &[arg]), Err(error("time.date", message)));
        }
        let zone = call("date", &[json!([1, "Mars/Olympus"])]).unwrap_err();
        assert!(
            zone.starts_with(
                r#"Builtin error ["time.date"]: "cannot handle given timezone Mars/Olympus: "#
            ),
            "{zone}"
        );
    }
}
