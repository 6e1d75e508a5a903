//! Decodes a `validate` payload down to what the decision needs: the
//! operation, the object's kind and name, its annotation keys, and the raw
//! settings. Everything else is skipped without being built.

use std::borrow::Cow;
use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::value::RawValue;

use crate::message::Subject;

/// The parts of `{"request": <AdmissionRequest>, "settings": <settings>}`
/// that the policy reads.
#[derive(Debug)]
pub struct Payload<'a> {
    pub operation: Option<Cow<'a, str>>,
    /// `None` when the request carries no object (`null` or absent).
    pub object: Option<Object<'a>>,
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
    pub fn subject(&self) -> Subject<'_> {
        Subject {
            kind: self.kind.as_deref(),
            namespace: self.namespace.as_deref(),
            name: self.name.as_deref(),
        }
    }
}

/// Decodes `payload`; the error says what is malformed.
pub fn decode(payload: &[u8]) -> Result<Payload<'_>, String> {
    let mut de = serde_json::Deserializer::from_slice(payload);
    // Custom resources nest far deeper than serde_json's default limit of
    // 128; skipping them is iterative, so no depth can exhaust the stack.
    de.disable_recursion_limit();
    let wire = WirePayload::deserialize(&mut de)
        .and_then(|wire| de.end().map(|()| wire))
        .and_then(|wire| match wire.request {
            Some(request) => Ok((request, wire.settings)),
            None => Err(de::Error::missing_field("request")),
        })
        .map_err(|e| format!("malformed request: {e}"))?;
    let (request, settings) = wire;
    let object = request.object.map(|o| {
        let metadata = o.metadata.unwrap_or_default();
        Object {
            kind: o.kind.map(|t| t.0),
            namespace: metadata.namespace.map(|t| t.0),
            name: metadata.name.map(|t| t.0),
            annotation_keys: metadata.annotations.map(|a| a.0).unwrap_or_default(),
        }
    });
    Ok(Payload {
        operation: request.operation.map(|t| t.0),
        object,
        settings: settings.map(|raw| raw.get().as_bytes()),
    })
}

/// An object read field by field. Only objects are accepted (serde's derive
/// would also take an array of the fields in order), unknown fields are
/// skipped, and a repeated known field is an error, as with derive.
trait Fields<'a>: Default {
    const EXPECTING: &'static str;
    const NAMES: &'static [&'static str];
    fn read<'de: 'a, M: MapAccess<'de>>(
        &mut self,
        field: usize,
        map: &mut M,
    ) -> Result<(), M::Error>;
}

struct FieldsVisitor<T>(std::marker::PhantomData<T>);

impl<'de: 'a, 'a, T: Fields<'a>> Visitor<'de> for FieldsVisitor<T> {
    type Value = T;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(T::EXPECTING)
    }
    fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<T, M::Error> {
        let mut value = T::default();
        let mut seen = 0u32;
        while let Some(Text(key)) = map.next_key()? {
            match T::NAMES.iter().position(|name| *name == key) {
                Some(i) if seen & (1 << i) != 0 => {
                    return Err(de::Error::duplicate_field(T::NAMES[i]));
                }
                Some(i) => {
                    seen |= 1 << i;
                    value.read(i, &mut map)?;
                }
                None => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(value)
    }
}

macro_rules! deserialize_fields {
    ($($name:ident),*) => {$(
        impl<'de: 'a, 'a> Deserialize<'de> for $name<'a> {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                d.deserialize_map(FieldsVisitor(std::marker::PhantomData))
            }
        }
    )*};
}

deserialize_fields!(WirePayload, WireRequest, WireObject, WireMetadata);

#[derive(Default)]
struct WirePayload<'a> {
    request: Option<WireRequest<'a>>,
    settings: Option<&'a RawValue>,
}

impl<'a> Fields<'a> for WirePayload<'a> {
    const EXPECTING: &'static str = "a JSON object with `request` and `settings`";
    const NAMES: &'static [&'static str] = &["request", "settings"];
    fn read<'de: 'a, M: MapAccess<'de>>(
        &mut self,
        field: usize,
        map: &mut M,
    ) -> Result<(), M::Error> {
        match field {
            0 => self.request = Some(map.next_value()?),
            _ => self.settings = map.next_value()?,
        }
        Ok(())
    }
}

#[derive(Default)]
struct WireRequest<'a> {
    operation: Option<Text<'a>>,
    object: Option<WireObject<'a>>,
}

impl<'a> Fields<'a> for WireRequest<'a> {
    const EXPECTING: &'static str = "`request` to be an AdmissionRequest object";
    const NAMES: &'static [&'static str] = &["operation", "object"];
    fn read<'de: 'a, M: MapAccess<'de>>(
        &mut self,
        field: usize,
        map: &mut M,
    ) -> Result<(), M::Error> {
        match field {
            0 => self.operation = map.next_value()?,
            _ => self.object = map.next_value()?,
        }
        Ok(())
    }
}

#[derive(Default)]
struct WireObject<'a> {
    kind: Option<Text<'a>>,
    metadata: Option<WireMetadata<'a>>,
}

impl<'a> Fields<'a> for WireObject<'a> {
    const EXPECTING: &'static str = "`request.object` to be a JSON object or null";
    const NAMES: &'static [&'static str] = &["kind", "metadata"];
    fn read<'de: 'a, M: MapAccess<'de>>(
        &mut self,
        field: usize,
        map: &mut M,
    ) -> Result<(), M::Error> {
        match field {
            0 => self.kind = map.next_value()?,
            _ => self.metadata = map.next_value()?,
        }
        Ok(())
    }
}

#[derive(Default)]
struct WireMetadata<'a> {
    name: Option<Text<'a>>,
    namespace: Option<Text<'a>>,
    annotations: Option<AnnotationKeys<'a>>,
}

impl<'a> Fields<'a> for WireMetadata<'a> {
    const EXPECTING: &'static str = "`request.object.metadata` to be a JSON object or null";
    const NAMES: &'static [&'static str] = &["name", "namespace", "annotations"];
    fn read<'de: 'a, M: MapAccess<'de>>(
        &mut self,
        field: usize,
        map: &mut M,
    ) -> Result<(), M::Error> {
        match field {
            0 => self.name = map.next_value()?,
            1 => self.namespace = map.next_value()?,
            _ => self.annotations = map.next_value()?,
        }
        Ok(())
    }
}

/// A string that borrows from the payload when it holds no escape.
struct Text<'a>(Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for Text<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct TextVisitor<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for TextVisitor<'a> {
            type Value = Text<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<Text<'a>, E> {
                Ok(Text(Cow::Borrowed(s)))
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Text<'a>, E> {
                Ok(Text(Cow::Owned(s.to_owned())))
            }
        }
        d.deserialize_str(TextVisitor(std::marker::PhantomData))
    }
}

/// The keys of the annotations map; the values are never inspected.
struct AnnotationKeys<'a>(Vec<Cow<'a, str>>);

impl<'de: 'a, 'a> Deserialize<'de> for AnnotationKeys<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct KeysVisitor<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for KeysVisitor<'a> {
            type Value = AnnotationKeys<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("`metadata.annotations` to be a JSON object or null")
            }
            fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<Self::Value, M::Error> {
                let mut keys = Vec::with_capacity(map.size_hint().unwrap_or(0));
                while let Some(Text(key)) = map.next_key()? {
                    map.next_value::<IgnoredAny>()?;
                    keys.push(key);
                }
                Ok(AnnotationKeys(keys))
            }
        }
        d.deserialize_map(KeysVisitor(std::marker::PhantomData))
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
            ("", "EOF"),
            ("not json", "expected"),
            ("[]", "a JSON object with `request` and `settings`"),
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
                r#"{"request":{"object":{"metadata":7}}}"#,
                "`request.object.metadata` to be a JSON object or null",
            ),
            (
                r#"{"request":{"object":{"metadata":{"annotations":["a"]}}}}"#,
                "`metadata.annotations` to be a JSON object or null",
            ),
            (
                r#"{"request":{"object":{"metadata":{"annotations":{"a":}}}}}"#,
                "expected value",
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
            (r#"{"request":{"object":{"spec":[1,]}}}"#, "expected value"),
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

    #[test]
    fn invalid_utf8_in_a_key_is_malformed() {
        let mut payload = br#"{"request":{"object":{"metadata":{"annotations":{"#.to_vec();
        payload.extend_from_slice(b"\"\xff\":\"x\"}}}}}");
        assert!(decode(&payload).unwrap_err().contains("malformed request"));
    }
}
