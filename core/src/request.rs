//! Decodes a `validate` payload down to what the decision needs: the
//! operation, the object's kind and name, its annotation keys, the old
//! object's text, and the raw settings; and, read again only when a key that
//! names its writer needs them (`provenance`), the texts of the sender and
//! of the object (`Parts`). Everything else is skipped by
//! `json::Reader` without being built; `reference` is the serde model it
//! must agree with.

use std::borrow::Cow;

use crate::json::{self, Reader};
use crate::message::Subject;

#[cfg(any(test, feature = "reference"))]
pub mod reference;

/// The parts of `{"request": <AdmissionRequest>, "settings": <settings>}`
/// that the policy reads.
#[derive(Debug, PartialEq, Eq)]
pub struct Payload<'a> {
    pub operation: Option<Cow<'a, str>>,
    /// `None` when the request carries no object (`null` or absent).
    pub object: Option<Object<'a>>,
    /// The text of `oldObject` when it is an object, checked as JSON but
    /// not read: only an update that the new object fails needs it
    /// (`decode_object` reads it then).
    pub old_object: Option<&'a [u8]>,
    /// The settings exactly as sent, `None` when absent.
    pub settings: Option<&'a [u8]>,
}

#[derive(Debug, Default, PartialEq, Eq)]
pub struct Object<'a> {
    pub kind: Option<Cow<'a, str>>,
    pub namespace: Option<Cow<'a, str>>,
    pub name: Option<Cow<'a, str>>,
    /// In document order, duplicates kept; borrowed unless an escape had to
    /// be decoded.
    pub annotation_keys: Vec<Cow<'a, str>>,
}

impl Object<'_> {
    /// The annotation keys as text. The match is written out: `Cow::as_ref`
    /// stays a call per key in the size-optimised module.
    pub fn keys(&self) -> impl Iterator<Item = &str> + Clone {
        self.annotation_keys.iter().map(|key| match key {
            Cow::Borrowed(key) => *key,
            Cow::Owned(key) => key.as_str(),
        })
    }

    pub fn subject(&self) -> Subject<'_> {
        Subject {
            kind: self.kind.as_deref(),
            namespace: self.namespace.as_deref(),
            name: self.name.as_deref(),
        }
    }
}

/// Decodes `payload`; the error says what is malformed, and where.
pub fn decode(payload: &[u8]) -> Result<Payload<'_>, String> {
    read_payload(&mut Reader::new(payload)).map_err(|e| format!("malformed request: {e}"))
}

/// Reads an object on its own, as `decode` reads `request.object`: for the
/// text of `Payload::old_object`.
pub fn decode_object(text: &[u8]) -> Result<Object<'_>, String> {
    let r = &mut Reader::new(text);
    let object = expect_object(r, "a JSON object")
        .and_then(|()| read_object(r))
        .and_then(|object| r.end().map(|()| object));
    object.map_err(|e| format!("malformed object: {e}"))
}

/// The texts of `request.userInfo` and `request.object` in a payload that
/// `decode` has read.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Parts<'a> {
    pub user_info: Option<&'a [u8]>,
    pub object: Option<&'a [u8]>,
}

/// Finds `Parts` in a payload that `decode` accepted; `None` for one it
/// would not have.
pub fn parts(payload: &[u8]) -> Option<Parts<'_>> {
    let r = &mut Reader::new(payload);
    let mut parts = Parts::default();
    if r.peek() != Some(b'{') {
        return None;
    }
    let mut members = r.members();
    while let Some(key) = members.next(r).ok()? {
        if !key.is("request") || r.peek() != Some(b'{') {
            r.skip_value().ok()?;
            continue;
        }
        let mut fields = r.members();
        while let Some(field) = fields.next(r).ok()? {
            let part = if field.is("userInfo") {
                &mut parts.user_info
            } else if field.is("object") {
                &mut parts.object
            } else {
                r.skip_value().ok()?;
                continue;
            };
            *part = Some(r.value_text().ok()?);
        }
    }
    Some(parts)
}

fn read_payload<'a>(r: &mut Reader<'a>) -> json::Result<Payload<'a>> {
    expect_object(
        r,
        "the payload to be a JSON object with `request` and `settings`",
    )?;
    let (mut request, mut settings) = (None, None);
    let mut seen = [false; 2];
    let mut members = r.members();
    while let Some(key) = members.next(r)? {
        if key.is("request") {
            first_time(r, &mut seen[0], "request")?;
            expect_object(r, "`request` to be an AdmissionRequest object")?;
            request = Some(read_request(r)?);
        } else if key.is("settings") {
            first_time(r, &mut seen[1], "settings")?;
            settings = if r.null()? {
                None
            } else {
                Some(r.raw_value()?)
            };
        } else {
            r.skip_value()?;
        }
    }
    r.end()?;
    let Some(request) = request else {
        return r.fail("missing field `request`");
    };
    Ok(Payload {
        operation: request.operation,
        object: request.object,
        old_object: request.old_object,
        settings,
    })
}

#[derive(Default)]
struct Request<'a> {
    operation: Option<Cow<'a, str>>,
    object: Option<Object<'a>>,
    old_object: Option<&'a [u8]>,
}

fn read_request<'a>(r: &mut Reader<'a>) -> json::Result<Request<'a>> {
    let mut request = Request::default();
    let mut seen = [false; 3];
    let mut members = r.members();
    while let Some(key) = members.next(r)? {
        if key.is("operation") {
            first_time(r, &mut seen[0], "operation")?;
            request.operation = optional_string(r, "`request.operation` to be a string")?;
        } else if key.is("object") {
            first_time(r, &mut seen[1], "object")?;
            if optional_object(r, "`request.object` to be a JSON object or null")? {
                request.object = Some(read_object(r)?);
            }
        } else if key.is("oldObject") {
            first_time(r, &mut seen[2], "oldObject")?;
            if optional_object(r, "`request.oldObject` to be a JSON object or null")? {
                request.old_object = Some(r.object_text()?);
            }
        } else {
            r.skip_value()?;
        }
    }
    Ok(request)
}

fn read_object<'a>(r: &mut Reader<'a>) -> json::Result<Object<'a>> {
    let mut object = Object::default();
    let mut seen = [false; 2];
    let mut members = r.members();
    while let Some(key) = members.next(r)? {
        if key.is("kind") {
            first_time(r, &mut seen[0], "kind")?;
            object.kind = optional_string(r, "`request.object.kind` to be a string")?;
        } else if key.is("metadata") {
            first_time(r, &mut seen[1], "metadata")?;
            let what = "`request.object.metadata` to be a JSON object or null";
            if optional_object(r, what)? {
                read_metadata(r, &mut object)?;
            }
        } else {
            r.skip_value()?;
        }
    }
    Ok(object)
}

fn read_metadata<'a>(r: &mut Reader<'a>, object: &mut Object<'a>) -> json::Result<()> {
    let mut seen = [false; 3];
    let mut members = r.members();
    while let Some(key) = members.next(r)? {
        if key.is("name") {
            first_time(r, &mut seen[0], "name")?;
            object.name = optional_string(r, "`metadata.name` to be a string")?;
        } else if key.is("namespace") {
            first_time(r, &mut seen[1], "namespace")?;
            object.namespace = optional_string(r, "`metadata.namespace` to be a string")?;
        } else if key.is("annotations") {
            first_time(r, &mut seen[2], "annotations")?;
            // A repeated field is an error, so only one map is ever read.
            let what = "`metadata.annotations` to be a JSON object or null";
            if optional_object(r, what)? {
                let mut annotations = r.members();
                while let Some(key) = annotations.next(r)? {
                    object.annotation_keys.push(key.text());
                    r.skip_value()?;
                }
            }
        } else {
            r.skip_value()?;
        }
    }
    Ok(())
}

fn first_time(r: &mut Reader, seen: &mut bool, field: &'static str) -> json::Result<()> {
    if std::mem::replace(seen, true) {
        return r.fail(format!("duplicate field `{field}`"));
    }
    Ok(())
}

fn expect_object(r: &mut Reader, what: &str) -> json::Result<()> {
    match r.peek() {
        Some(b'{') => Ok(()),
        _ => r.unexpected(what),
    }
}

/// `true` when an object starts here, `false` after consuming `null`.
fn optional_object(r: &mut Reader, what: &str) -> json::Result<bool> {
    match r.peek() {
        Some(b'{') => Ok(true),
        Some(b'n') => r.null().map(|_| false),
        _ => r.unexpected(what),
    }
}

fn optional_string<'a>(r: &mut Reader<'a>, what: &str) -> json::Result<Option<Cow<'a, str>>> {
    match r.peek() {
        Some(b'"') => r.string().map(Some),
        Some(b'n') => r.null().map(|_| None),
        _ => r.unexpected(what),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(payload: &str) -> Option<Object<'_>> {
        decode(payload.as_bytes()).unwrap().object
    }

    fn keys(payload: &str) -> Vec<String> {
        object(payload)
            .unwrap()
            .annotation_keys
            .into_iter()
            .map(Cow::into_owned)
            .collect()
    }

    #[test]
    fn reads_kind_name_namespace_and_keys() {
        let payload = r#"{"settings":{"criteria":"containsAnyOf","values":["a"]},
            "request":{"uid":"1","operation":"CREATE","kind":{"kind":"Pod"},
            "object":{"apiVersion":"v1","kind":"Pod","spec":{"containers":[{"name":"c"}]},
            "metadata":{"name":"web","namespace":"default","labels":{"x":"y"},
            "annotations":{"b":"1","a":"{\"json\":true}"}}}}}"#;
        let decoded = decode(payload.as_bytes()).unwrap();
        assert_eq!(decoded.operation.as_deref(), Some("CREATE"));
        assert_eq!(
            decoded.settings,
            Some(br#"{"criteria":"containsAnyOf","values":["a"]}"#.as_slice())
        );
        let object = decoded.object.unwrap();
        assert_eq!(
            object.subject(),
            Subject {
                kind: Some("Pod"),
                namespace: Some("default"),
                name: Some("web")
            }
        );
        assert_eq!(object.annotation_keys, ["b", "a"]);
    }

    #[test]
    fn absent_metadata_or_annotations_give_no_keys() {
        for payload in [
            r#"{"request":{"object":{}}}"#,
            r#"{"request":{"object":{"metadata":null}}}"#,
            r#"{"request":{"object":{"metadata":{}}}}"#,
            r#"{"request":{"object":{"metadata":{"annotations":null}}}}"#,
            r#"{"request":{"object":{"metadata":{"annotations":{}}}}}"#,
        ] {
            assert_eq!(keys(payload), Vec::<String>::new(), "{payload}");
        }
    }

    #[test]
    fn a_request_without_object_has_none() {
        for payload in [
            r#"{"request":{"operation":"DELETE","object":null,"oldObject":{"kind":"Pod"}}}"#,
            r#"{"request":{"operation":"DELETE"}}"#,
        ] {
            let decoded = decode(payload.as_bytes()).unwrap();
            assert_eq!(decoded.operation.as_deref(), Some("DELETE"));
            assert!(decoded.object.is_none(), "{payload}");
            assert_eq!(decoded.settings, None);
        }
    }

    #[test]
    fn the_old_object_is_kept_as_text_and_read_when_asked() {
        let old =
            r#"{"kind":"Pod","metadata":{"name":"web","annotations":{"a":"1","\u0062":"2"}}}"#;
        let payload = format!(
            r#"{{"request":{{"operation":"UPDATE","oldObject": {old} ,"object":{{"kind":"Pod"}}}}}}"#
        );
        let decoded = decode(payload.as_bytes()).unwrap();
        assert_eq!(decoded.old_object, Some(old.as_bytes()));
        let old = decode_object(decoded.old_object.unwrap()).unwrap();
        assert_eq!(old.name.as_deref(), Some("web"));
        assert_eq!(old.annotation_keys, ["a", "b"]);
        for absent in [
            r#"{"request":{"operation":"CREATE","object":{}}}"#,
            r#"{"request":{"operation":"CREATE","object":{},"oldObject":null}}"#,
        ] {
            assert_eq!(decode(absent.as_bytes()).unwrap().old_object, None);
        }
    }

    #[test]
    fn an_object_read_alone_must_be_one_object() {
        for (text, fragment) in [
            ("[]", "expected a JSON object, found an array"),
            ("{} {}", "trailing characters"),
            (
                r#"{"metadata":{"annotations":{"\ud800":"x"}}}"#,
                "unpaired surrogate",
            ),
        ] {
            let error = decode_object(text.as_bytes()).unwrap_err();
            assert!(error.starts_with("malformed object: "), "{error}");
            assert!(error.contains(fragment), "{text}: {error}");
        }
    }

    proptest::proptest! {
        /// The old object's text is exactly the value serde_json finds there,
        /// wherever it stands and whatever white space surrounds it.
        #[test]
        fn the_old_object_text_is_the_value_serde_finds(
            keys in proptest::collection::btree_set("[a-c/.]{0,6}", 0..6),
            spec_depth in 0usize..100,
            white in "[ \t\n]{0,3}",
            old_first in proptest::bool::ANY,
        ) {
            let annotations: serde_json::Map<String, serde_json::Value> =
                keys.iter().map(|k| (k.clone(), "v".into())).collect();
            let spec = format!("{}1{}", "[".repeat(spec_depth), "]".repeat(spec_depth));
            let old = format!(
                r#"{{"spec":{spec},{white}"metadata":{}}}"#,
                serde_json::json!({"annotations": annotations})
            );
            let (first, second) = match old_first {
                true => (format!(r#""oldObject":{white}{old}{white}"#), r#""object":{}"#.to_string()),
                false => (r#""object":{}"#.to_string(), format!(r#""oldObject":{white}{old}{white}"#)),
            };
            let payload = format!(r#"{{"request":{{{first},{second}}}}}"#);
            let ours = decode(payload.as_bytes()).unwrap().old_object.unwrap();
            #[derive(serde::Deserialize)]
            struct Request<'a> {
                #[serde(borrow, rename = "oldObject")]
                old_object: &'a serde_json::value::RawValue,
            }
            #[derive(serde::Deserialize)]
            struct Wire<'a> {
                #[serde(borrow)]
                request: Request<'a>,
            }
            let mut de = serde_json::Deserializer::from_str(&payload);
            de.disable_recursion_limit();
            let wire: Wire = serde::Deserialize::deserialize(&mut de).unwrap();
            proptest::prop_assert_eq!(ours, wire.request.old_object.get().as_bytes());
            let read: std::collections::BTreeSet<String> = decode_object(ours)
                .unwrap()
                .annotation_keys
                .into_iter()
                .map(Cow::into_owned)
                .collect();
            proptest::prop_assert_eq!(read, keys);
        }

        /// The texts of `object` and `userInfo` are exactly the values
        /// serde_json finds, whatever they hold and whatever white space
        /// surrounds them.
        #[test]
        fn the_object_and_sender_texts_are_the_values_serde_finds(
            keys in proptest::collection::btree_set("[a-c/.]{0,6}", 0..6),
            spec_depth in 0usize..40,
            white in "[ \t\n]{0,3}",
            user in proptest::prop_oneof![
                proptest::strategy::Just(r#"{"username":"system:node:n1","groups":["system:nodes"]}"#.to_string()),
                proptest::strategy::Just("null".to_string()),
                "\"[a-z:]{0,8}\"",
                proptest::strategy::Just("[1, {}]".to_string()),
                proptest::strategy::Just("12.5e3".to_string()),
            ],
            user_first in proptest::bool::ANY,
        ) {
            let annotations: serde_json::Map<String, serde_json::Value> =
                keys.iter().map(|k| (k.clone(), "v".into())).collect();
            let spec = format!("{}1{}", "[".repeat(spec_depth), "]".repeat(spec_depth));
            let object = format!(
                r#"{{"spec":{spec},{white}"metadata":{}}}"#,
                serde_json::json!({"annotations": annotations})
            );
            let (object_member, user_member) = (
                format!(r#""object":{white}{object}{white}"#),
                format!(r#""userInfo":{white}{user}{white}"#),
            );
            let payload = match user_first {
                true => format!(r#"{{"request":{{{user_member},{object_member}}}}}"#),
                false => format!(r#"{{"request":{{{object_member},{user_member}}}}}"#),
            };
            decode(payload.as_bytes()).unwrap();
            let parts = parts(payload.as_bytes()).unwrap();
            #[derive(serde::Deserialize)]
            struct Request<'a> {
                #[serde(borrow)]
                object: &'a serde_json::value::RawValue,
                #[serde(borrow, rename = "userInfo")]
                user_info: &'a serde_json::value::RawValue,
            }
            #[derive(serde::Deserialize)]
            struct Wire<'a> {
                #[serde(borrow)]
                request: Request<'a>,
            }
            let wire: Wire = serde_json::from_str(&payload).unwrap();
            proptest::prop_assert_eq!(parts.object, Some(wire.request.object.get().as_bytes()));
            proptest::prop_assert_eq!(parts.user_info, Some(wire.request.user_info.get().as_bytes()));
        }
    }

    #[test]
    fn escaped_keys_are_decoded_and_plain_keys_borrowed() {
        let payload = r#"{"request":{"object":{"metadata":{"annotations":
            {"\u006fwner":"x","plain":"y","tab\tinside":"z","caf\u00e9":"w","\ud83d\ude00":"v"}}}}}"#;
        let object = object(payload).unwrap();
        assert_eq!(
            object.annotation_keys,
            ["owner", "plain", "tab\tinside", "café", "\u{1F600}"]
        );
        assert!(matches!(object.annotation_keys[1], Cow::Borrowed(_)));
        assert!(matches!(object.annotation_keys[0], Cow::Owned(_)));
        let keys: Vec<&str> = object.keys().collect();
        assert_eq!(keys, object.annotation_keys);
    }

    #[test]
    fn duplicate_annotation_keys_are_kept_for_the_evaluator_to_merge() {
        assert_eq!(
            keys(r#"{"request":{"object":{"metadata":{"annotations":{"a":"1","a":"2"}}}}}"#),
            ["a", "a"]
        );
    }

    #[test]
    fn deep_nesting_outside_metadata_is_skipped() {
        for depth in [129, 500, 10_000] {
            let spec = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
            let payload = format!(
                r#"{{"request":{{"object":{{"spec":{spec},"metadata":{{"annotations":{{"a":{spec}}}}}}}}}}}"#
            );
            assert_eq!(keys(&payload), ["a"], "depth {depth}");
        }
    }

    #[test]
    fn malformed_requests_say_what_is_wrong() {
        let cases = [
            ("", "found the end of the input"),
            ("not json", "found an invalid character"),
            ("null", "found null"),
            (
                "[]",
                "a JSON object with `request` and `settings`, found an array",
            ),
            (
                r#"{"request":{"operation":5}}"#,
                "`request.operation` to be a string, found a number",
            ),
            (
                r#"{"request":{"object":{"kind":[]}}}"#,
                "`request.object.kind` to be a string",
            ),
            (
                r#"{"request":{"object":{"metadata":{"name":{}}}}}"#,
                "`metadata.name` to be a string",
            ),
            (
                r#"{"request":{},"settings":1,"settings":2}"#,
                "duplicate field `settings`",
            ),
            (r#"{"request":{},"settings":"\xff"}"#, "invalid escape"),
            (r#"{"settings":{}}"#, "missing field `request`"),
            (
                r#"{"request":null}"#,
                "`request` to be an AdmissionRequest object",
            ),
            (
                r#"{"request":{"object":"pod"}}"#,
                "`request.object` to be a JSON object or null",
            ),
            (
                r#"{"request":{"object":[]}}"#,
                "`request.object` to be a JSON object or null",
            ),
            (
                r#"{"request":{"oldObject":"pod"}}"#,
                "`request.oldObject` to be a JSON object or null",
            ),
            (
                r#"{"request":{"oldObject":{},"oldObject":null}}"#,
                "duplicate field `oldObject`",
            ),
            (r#"{"request":{"oldObject":{"a":[}}}"#, "expected a value"),
            (
                r#"{"request":{"object":{"metadata":7}}}"#,
                "`request.object.metadata` to be a JSON object or null",
            ),
            (
                r#"{"request":{"object":{"metadata":{"annotations":["a"]}}}}"#,
                "`metadata.annotations` to be a JSON object or null",
            ),
            (
                r#"{"request":{"object":{"metadata":{"annotations":{"a":}}}}}"#,
                "expected a value",
            ),
            (
                r#"{"request":{"object":{"metadata":{},"metadata":{}}}}"#,
                "duplicate field `metadata`",
            ),
            (r#"{"request":{}} {}"#, "trailing characters"),
            (
                r#"{"request":["CREATE",{}]}"#,
                "`request` to be an AdmissionRequest object",
            ),
            (
                r#"{"request":{},"request":{}}"#,
                "duplicate field `request`",
            ),
            (
                r#"{"request":{"object":{"spec":[1,]}}}"#,
                "expected a value",
            ),
        ];
        for (payload, fragment) in cases {
            let error = decode(payload.as_bytes()).unwrap_err();
            assert!(error.starts_with("malformed request: "), "{error}");
            assert!(
                error.contains(fragment),
                "{payload}: {error:?} lacks {fragment:?}"
            );
        }
    }

    /// A key as JSON text, with the characters picked by `escape` written as
    /// `\uXXXX` (surrogate pairs beyond the BMP).
    fn key_json(key: &str, escape: &[bool]) -> String {
        let mut out = String::from("\"");
        for (i, c) in key.chars().enumerate() {
            if escape
                .get(i % escape.len().max(1))
                .copied()
                .unwrap_or(false)
            {
                for unit in c.encode_utf16(&mut [0; 2]) {
                    out.push_str(&format!("\\u{unit:04x}"));
                }
            } else {
                let quoted = serde_json::to_string(&c.to_string()).unwrap();
                out.push_str(&quoted[1..quoted.len() - 1]);
            }
        }
        out.push('"');
        out
    }

    proptest::proptest! {
        #[test]
        fn decoded_keys_are_the_maps_keys(
            keys in proptest::collection::btree_set(".{0,12}", 0..12),
            escape in proptest::collection::vec(proptest::bool::ANY, 0..5),
            spec_depth in 0usize..200,
        ) {
            let members: Vec<String> = keys
                .iter()
                .map(|k| format!("{}:{}", key_json(k, &escape), serde_json::to_string(k).unwrap()))
                .collect();
            let spec = format!("{}1{}", "[".repeat(spec_depth), "]".repeat(spec_depth));
            let payload = format!(
                r#"{{"request":{{"object":{{"spec":{spec},"metadata":{{"annotations":{{{}}}}}}}}}}}"#,
                members.join(",")
            );
            let decoded = decode(payload.as_bytes()).unwrap().object.unwrap();
            let decoded: std::collections::BTreeSet<String> =
                decoded.annotation_keys.into_iter().map(Cow::into_owned).collect();
            proptest::prop_assert_eq!(decoded, keys);
        }
    }

    #[test]
    fn invalid_utf8_in_a_key_is_malformed() {
        let mut payload = br#"{"request":{"object":{"metadata":{"annotations":{"#.to_vec();
        payload.extend_from_slice(b"\"\xff\":\"x\"}}}}}");
        assert!(decode(&payload).unwrap_err().contains("malformed request"));
    }
}
