//! The serde-based model of the request decoder: serde_json with
//! `IgnoredAny` for everything skipped. It is the specification the hand
//! written decoder is tested against, on every input (property tests here,
//! the differential fuzz target in `fuzz/`); the policy itself does not use it.
//!
//! serde_json gives no offsets, so the model does not capture the text of
//! `oldObject`: its `Payload::old_object` is `Some(b"")` when an old object
//! is there (`agree` compares only that), and a test in `request` checks
//! that the decoder's text is exactly the value serde_json finds.

use std::borrow::Cow;
use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::value::RawValue;

use super::{Object, Payload};

/// Decodes `payload` the serde way; the error is serde_json's.
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
    Ok(Payload {
        operation: request.operation.map(|t| t.0),
        object: request.object.map(WireObject::into_object),
        old_object: request.old_object.map(|IgnoredObject| &b""[..]),
        settings: settings.map(|raw| raw.get().as_bytes()),
    })
}

/// Reads an object on its own, the serde way (the model of
/// `request::decode_object`).
pub fn decode_object(text: &[u8]) -> Result<Object<'_>, String> {
    let mut de = serde_json::Deserializer::from_slice(text);
    de.disable_recursion_limit();
    WireObject::deserialize(&mut de)
        .and_then(|object| de.end().map(|()| object.into_object()))
        .map_err(|e| format!("malformed object: {e}"))
}

/// Whether the decoder and the model agree on `input`: both reject it, or
/// both accept it and find the same parts (of the old object, only whether
/// it is there).
pub fn agree(input: &[u8]) -> Result<(), String> {
    let ours = super::decode(input).map(|mut payload| {
        payload.old_object = payload.old_object.map(|_| &b""[..]);
        payload
    });
    let model = decode(input);
    match (&ours, &model) {
        (Ok(a), Ok(b)) if a == b => Ok(()),
        (Err(_), Err(_)) => Ok(()),
        _ => Err(format!(
            "{:?}\nours:  {ours:?}\nserde: {model:?}",
            String::from_utf8_lossy(input)
        )),
    }
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
    old_object: Option<IgnoredObject>,
}

impl<'a> Fields<'a> for WireRequest<'a> {
    const EXPECTING: &'static str = "`request` to be an AdmissionRequest object";
    const NAMES: &'static [&'static str] = &["operation", "object", "oldObject"];
    fn read<'de: 'a, M: MapAccess<'de>>(
        &mut self,
        field: usize,
        map: &mut M,
    ) -> Result<(), M::Error> {
        match field {
            0 => self.operation = map.next_value()?,
            1 => self.object = map.next_value()?,
            _ => self.old_object = map.next_value()?,
        }
        Ok(())
    }
}

/// Any JSON object, skipped.
struct IgnoredObject;

impl<'de> Deserialize<'de> for IgnoredObject {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct ObjectVisitor;
        impl<'de> Visitor<'de> for ObjectVisitor {
            type Value = IgnoredObject;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("`request.oldObject` to be a JSON object or null")
            }
            fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<IgnoredObject, M::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(IgnoredObject)
            }
        }
        d.deserialize_map(ObjectVisitor)
    }
}

#[derive(Default)]
struct WireObject<'a> {
    kind: Option<Text<'a>>,
    metadata: Option<WireMetadata<'a>>,
}

impl<'a> WireObject<'a> {
    fn into_object(self) -> Object<'a> {
        let metadata = self.metadata.unwrap_or_default();
        Object {
            kind: self.kind.map(|t| t.0),
            namespace: metadata.namespace.map(|t| t.0),
            name: metadata.name.map(|t| t.0),
            annotation_keys: metadata.annotations.map(|a| a.0).unwrap_or_default(),
        }
    }
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
    use proptest::prelude::*;

    use crate::test_support::damaged;

    /// Both decoders accept the same inputs and extract the same parts.
    fn agree(input: &[u8]) -> Result<(), TestCaseError> {
        super::agree(input).map_err(TestCaseError::fail)
    }

    /// An old object is read on its own exactly as the model reads it.
    fn agree_on_the_object(input: &[u8]) -> Result<(), TestCaseError> {
        let ours = super::super::decode_object(input);
        let model = super::decode_object(input);
        match (&ours, &model) {
            (Ok(a), Ok(b)) => prop_assert_eq!(a, b),
            (Err(_), Err(_)) => {}
            _ => prop_assert!(
                false,
                "{:?}\nours:  {ours:?}\nserde: {model:?}",
                String::from_utf8_lossy(input)
            ),
        }
        Ok(())
    }

    /// String contents, raw: plain text, every escape form, surrogates
    /// paired and not, control characters, invalid UTF-8.
    fn string_body() -> impl Strategy<Value = Vec<u8>> {
        let piece = prop_oneof![
            "[a-z./-]{0,4}".prop_map(String::into_bytes),
            Just(b"owner".to_vec()),
            prop::sample::select(vec![
                &b"\\n"[..],
                b"\\\"",
                b"\\\\",
                b"\\/",
                b"\\b",
                b"\\f",
                b"\\r",
                b"\\t",
                b"\\u006f",
                b"\\u00e9",
                b"\\uD83D\\uDE00",
                b"\\ud800",
                b"\\udc00",
                b"\\ud800\\u0041",
                b"\\ud800x",
                b"\\u12",
                b"\\uZZZZ",
                b"\\x",
                b"\\",
                b"\xc3\xa9",
                b"\xe2\x98\x83",
                b"\xff",
                b"\xc3",
                b"\x7f",
                b"\x01",
                b"\t",
                b"\"",
            ])
            .prop_map(<[u8]>::to_vec),
        ];
        prop::collection::vec(piece, 0..4).prop_map(|pieces| pieces.concat())
    }

    fn string() -> impl Strategy<Value = Vec<u8>> {
        string_body().prop_map(|body| [&b"\""[..], &body, b"\""].concat())
    }

    fn key(names: &'static [&'static str]) -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            3 => prop::sample::select(names).prop_map(|n| format!("\"{n}\"").into_bytes()),
            1 => string(),
            1 => prop::sample::select(names).prop_map(|n| {
                // The same name with its first letter escaped.
                format!("\"\\u{:04x}{}\"", n.as_bytes()[0], &n[1..]).into_bytes()
            }),
        ]
    }

    fn scalar() -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            prop::sample::select(vec![
                &b"null"[..],
                b"true",
                b"false",
                b"0",
                b"-0",
                b"12",
                b"-1.5e+3",
                b"1E9",
                b"01",
                b"1.",
                b"-",
                b".5",
                b"1e",
                b"nul",
                b"tru",
                b"+1",
            ])
            .prop_map(<[u8]>::to_vec),
            string(),
        ]
    }

    fn value() -> impl Strategy<Value = Vec<u8>> {
        scalar().prop_recursive(5, 32, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4)
                    .prop_map(|items| join(b"[", items, b"]")),
                prop::collection::vec((key(&["a", "request", "metadata"]), inner), 0..4)
                    .prop_map(object),
            ]
        })
    }

    fn join(open: &[u8], items: Vec<Vec<u8>>, close: &[u8]) -> Vec<u8> {
        [open.to_vec(), items.join(&b","[..]), close.to_vec()].concat()
    }

    type Members = Vec<(Vec<u8>, Vec<u8>)>;

    fn object(members: Members) -> Vec<u8> {
        let members = members
            .into_iter()
            .map(|(k, v)| [k, b":".to_vec(), v].concat())
            .collect();
        join(b"{", members, b"}")
    }

    /// An object with the given fields (each present or not, sometimes
    /// twice), extra fields, in any order; or, at times, any other value.
    fn shaped(
        fields: Vec<(&'static str, BoxedStrategy<Vec<u8>>)>,
        names: &'static [&'static str],
    ) -> BoxedStrategy<Vec<u8>> {
        let members: Vec<BoxedStrategy<Members>> = fields
            .into_iter()
            .map(|(name, field)| {
                prop::collection::vec(field, 0..=2)
                    .prop_map(move |values| {
                        let key = format!("\"{name}\"").into_bytes();
                        values.into_iter().map(|v| (key.clone(), v)).collect()
                    })
                    .boxed()
            })
            .collect();
        let extras = prop::collection::vec((key(names), value()), 0..3);
        prop_oneof![
            6 => (members, extras)
                .prop_flat_map(|(groups, extras)| {
                    let mut all: Vec<_> = groups.into_iter().flatten().collect();
                    all.extend(extras);
                    Just(all).prop_shuffle()
                })
                .prop_map(object),
            1 => value(),
        ]
        .boxed()
    }

    fn annotations() -> BoxedStrategy<Vec<u8>> {
        prop_oneof![
            4 => prop::collection::vec((key(&["owner", "a"]), value()), 0..5).prop_map(object),
            1 => value(),
        ]
        .boxed()
    }

    /// An object as `request.object` and `request.oldObject` carry one.
    fn kube_object() -> BoxedStrategy<Vec<u8>> {
        let text = || prop_oneof![3 => string(), 1 => value()].boxed();
        let metadata = shaped(
            vec![
                ("name", text()),
                ("namespace", text()),
                ("annotations", annotations()),
            ],
            &["name", "labels", "annotations"],
        );
        shaped(
            vec![("kind", text()), ("metadata", metadata)],
            &["kind", "spec"],
        )
    }

    fn payload() -> impl Strategy<Value = Vec<u8>> {
        let text = || prop_oneof![3 => string(), 1 => value()].boxed();
        let request = shaped(
            vec![
                ("operation", text()),
                ("object", kube_object()),
                ("oldObject", kube_object()),
            ],
            &["uid", "object", "oldObject"],
        );
        let settings = prop_oneof![value(), Just(br#"{"criteria":"containsAnyOf"}"#.to_vec())];
        shaped(
            vec![("request", request), ("settings", settings.boxed())],
            &["request"],
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4000))]

        #[test]
        fn the_decoder_agrees_with_serde_on_generated_payloads(input in payload()) {
            agree(&input)?;
        }

        #[test]
        fn the_decoder_agrees_with_serde_on_damaged_payloads(
            input in payload().prop_flat_map(|p| damaged(p, b"{}[]\",:\\ nu0-e.\xff"))
        ) {
            agree(&input)?;
        }

        #[test]
        fn an_object_alone_is_read_as_serde_reads_it(
            input in kube_object().prop_flat_map(|o| damaged(o, b"{}[]\",:\\ nu0-e.\xff"))
        ) {
            agree_on_the_object(&input)?;
        }

        #[test]
        fn the_decoder_agrees_with_serde_on_arbitrary_bytes(
            input in prop::collection::vec(any::<u8>(), 0..64)
        ) {
            agree(&input)?;
        }
    }
}
