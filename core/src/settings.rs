//! The policy's settings: the wire format of Kubewarden's annotations policy
//! (`criteria` and `values`), plus the optional `allowExistingViolations`
//! and `allowKubernetesBookkeeping`, parsed strictly so that a typo never
//! turns into a silently misconfigured cluster.

use std::cell::RefCell;
use std::collections::BTreeSet;

use crate::bytes;
use crate::criterion::Criterion;
use crate::evaluator::{self, Verdict};
use crate::json::{self, Reader};
use crate::kubernetes_keys::{Bookkeeping, Provenance};
use crate::message::List;
use crate::pattern;
use crate::quoting::{Abridged, QuotedAbridged};
use crate::values::Values;

/// Settings that passed validation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    pub criterion: Criterion,
    pub values: Values,
    /// Whether an update may keep the faults its old object already had
    /// (see `existing_violations`); `true` unless the settings say otherwise.
    pub allow_existing_violations: bool,
    /// Whether the keys Kubernetes writes itself count as listed
    /// (`allowKubernetesBookkeeping`, see `kubernetes_keys`); listed unless the
    /// settings say otherwise.
    pub bookkeeping: Bookkeeping,
}

/// The settings as they arrive, before any rule is checked. The required
/// fields are optional here so that a missing one is reported by name,
/// alongside the other.
#[derive(Default)]
struct RawSettings {
    criteria: Option<String>,
    values: Option<Vec<String>>,
    allow_existing_violations: Option<bool>,
    allow_kubernetes_bookkeeping: Option<bool>,
}

/// The fields the settings may hold, in the order the README's settings
/// table and `questions-ui.yml` list them. `read_raw` decides by this enum,
/// so a field added here and not read there does not compile.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    Criteria,
    Values,
    AllowExistingViolations,
    AllowKubernetesBookkeeping,
}

impl Field {
    pub const ALL: [Field; 4] = [
        Field::Criteria,
        Field::Values,
        Field::AllowExistingViolations,
        Field::AllowKubernetesBookkeeping,
    ];

    /// The field's name in the settings' JSON.
    pub const fn name(self) -> &'static str {
        match self {
            Field::Criteria => "criteria",
            Field::Values => "values",
            Field::AllowExistingViolations => "allowExistingViolations",
            Field::AllowKubernetesBookkeeping => "allowKubernetesBookkeeping",
        }
    }

    fn from_name(name: &str) -> Option<Field> {
        Field::ALL.into_iter().find(|field| field.name() == name)
    }
}

/// `Field::ALL` as an error message lists them: "`a`, `b` or `c`". Built
/// by the compiler from the enum, so there is one list to change; a string
/// made at run time cost the module 2 KiB of formatting code.
const FIELDS: &str = match std::str::from_utf8(&FIELDS_TEXT) {
    Ok(text) => text,
    Err(_) => panic!("field names are UTF-8"),
};

/// What stands after the field `i` of `Field::ALL` in `FIELDS`.
const fn separator(i: usize) -> &'static [u8] {
    if i + 1 == Field::ALL.len() {
        b""
    } else if i + 2 == Field::ALL.len() {
        b" or "
    } else {
        b", "
    }
}

const FIELDS_TEXT: [u8; fields_len()] = {
    let mut text = [0; fields_len()];
    let (mut at, mut i) = (0, 0);
    while i < Field::ALL.len() {
        let parts: [&[u8]; 4] = [b"`", Field::ALL[i].name().as_bytes(), b"`", separator(i)];
        let mut p = 0;
        while p < parts.len() {
            let mut b = 0;
            while b < parts[p].len() {
                text[at] = parts[p][b];
                at += 1;
                b += 1;
            }
            p += 1;
        }
        i += 1;
    }
    text
};

const fn fields_len() -> usize {
    let (mut len, mut i) = (0, 0);
    while i < Field::ALL.len() {
        len += Field::ALL[i].name().len() + 2 + separator(i).len();
        i += 1;
    }
    len
}

/// Only an object is taken, and an unknown field is an error: a typo such as
/// `valuess` must not leave the policy silently misconfigured.
fn read_raw(r: &mut Reader) -> json::Result<RawSettings> {
    if r.peek() != Some(b'{') {
        return r.unexpected("an object with `criteria` and `values`");
    }
    let mut raw = RawSettings::default();
    // A field given as `null` reads as absent: whether it was given is
    // kept apart, so that it is given once.
    let mut seen = [false; Field::ALL.len()];
    let mut members = r.members();
    while let Some(key) = members.next(r)? {
        let name = key.text();
        let Some(field) = Field::from_name(&name) else {
            return r.fail(format!(
                "unknown field `{}`, expected {FIELDS}",
                Abridged(&name)
            ));
        };
        if std::mem::replace(&mut seen[field as usize], true) {
            return r.fail(format!("duplicate field `{}`", field.name()));
        }
        match field {
            Field::Criteria => {
                raw.criteria = match r.peek() {
                    Some(b'"') => Some(r.string()?.into_owned()),
                    Some(b'n') if r.null()? => None,
                    _ => return r.unexpected("`criteria` to be a string"),
                };
            }
            Field::Values => {
                raw.values = match r.peek() {
                    Some(b'[') => {
                        let mut values = Vec::new();
                        r.array(|r| {
                            if r.peek() != Some(b'"') {
                                return r.unexpected(
                                    "each of `values` to be an annotation name (a string)",
                                );
                            }
                            values.push(r.string()?.into_owned());
                            Ok(())
                        })?;
                        Some(values)
                    }
                    Some(b'n') if r.null()? => None,
                    _ => return r.unexpected("`values` to be a list of annotation names"),
                };
            }
            Field::AllowExistingViolations => {
                raw.allow_existing_violations = Some(read_flag(r, field)?);
            }
            Field::AllowKubernetesBookkeeping => {
                raw.allow_kubernetes_bookkeeping = Some(read_flag(r, field)?);
            }
        }
    }
    r.end()?;
    Ok(raw)
}

/// An optional boolean field: `true` or `false`, never `null`.
fn read_flag(r: &mut Reader, field: Field) -> json::Result<bool> {
    match r.boolean()? {
        Some(flag) => Ok(flag),
        None => r.unexpected(&format!("`{}` to be true or false", field.name())),
    }
}

impl Settings {
    /// Judges an object's annotation keys under these settings, in the
    /// request that `provenance` speaks of.
    pub fn judge<'k, P: Provenance + ?Sized>(
        &'k self,
        keys: impl IntoIterator<Item = &'k str>,
        provenance: &P,
    ) -> Verdict<'k> {
        evaluator::evaluate(
            self.criterion,
            &self.values,
            self.bookkeeping,
            provenance,
            keys,
        )
    }

    /// Parses and validates the JSON settings; the error is the message shown
    /// to the user.
    pub fn from_json(json: &[u8]) -> Result<Settings, String> {
        let raw = read_raw(&mut Reader::new(json)).map_err(|e| format!("invalid settings: {e}"))?;
        Settings::validate(raw)
    }

    fn validate(raw: RawSettings) -> Result<Settings, String> {
        let (criteria, values) = match (raw.criteria, raw.values) {
            (Some(criteria), Some(values)) => (criteria, values),
            (criteria, values) => {
                let missing: Vec<&str> = [
                    criteria.is_none().then_some("`criteria`"),
                    values.is_none().then_some("`values`"),
                ]
                .into_iter()
                .flatten()
                .collect();
                return Err(format!(
                    "invalid settings: missing {}",
                    missing.join(" and ")
                ));
            }
        };
        let criterion = Criterion::from_name(&criteria).ok_or_else(|| {
            let accepted: Vec<&str> = Criterion::ALL.iter().map(|c| c.name()).collect();
            format!(
                "invalid settings: unknown criteria {}; use one of: {}",
                QuotedAbridged(&criteria),
                accepted.join(", ")
            )
        })?;
        if values.is_empty() {
            return Err(format!(
                "invalid settings: `values` is empty; {criterion} needs at least one annotation name"
            ));
        }
        let values: BTreeSet<String> = values.into_iter().collect();
        let invalid: Vec<String> = values
            .iter()
            .filter_map(|value| {
                let reason = pattern::check(value).err()?;
                Some(format!("{}: {reason}", QuotedAbridged(value)))
            })
            .collect();
        if !invalid.is_empty() {
            return Err(format!(
                "invalid settings: `values` holds invalid annotation names: {}",
                List::new(&invalid, "; ", |f, reason| f.write_str(reason))
            ));
        }
        Ok(Settings {
            criterion,
            values: Values::new(values),
            allow_existing_violations: raw.allow_existing_violations.unwrap_or(true),
            bookkeeping: match raw.allow_kubernetes_bookkeeping {
                Some(false) => Bookkeeping::Judged,
                Some(true) | None => Bookkeeping::Listed,
            },
        })
    }
}

/// policy-server sends the same settings with every `validate` call: they
/// are parsed and validated once, and again only when their bytes change.
pub fn with_cached<R>(json: &[u8], f: impl FnOnce(Result<&Settings, &str>) -> R) -> R {
    type Cached = Option<(Vec<u8>, Result<Settings, String>)>;
    thread_local! {
        static LAST: RefCell<Cached> = const { RefCell::new(None) };
    }
    LAST.with_borrow_mut(|last| {
        let parsed = match last {
            Some((raw, parsed)) if bytes::equal(raw, json) => parsed,
            _ => &mut last.insert((json.to_vec(), Settings::from_json(json))).1,
        };
        f(parsed.as_ref().map_err(String::as_str))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cache_follows_the_bytes() {
        let a = br#"{"criteria":"containsAnyOf","values":["a"]}"#;
        let b = br#"{"criteria":"containsAnyOf","values":[]}"#;
        let c = br#"{"criteria":"containsAllOf","values":["c", "a"]}"#;
        let values = |json: &[u8]| {
            with_cached(json, |s| {
                s.map(|s| (s.criterion, s.values.all().to_vec()))
                    .map_err(str::to_owned)
            })
        };
        for _ in 0..2 {
            assert_eq!(
                values(a),
                Ok((Criterion::ContainsAnyOf, vec!["a".to_string()]))
            );
            assert!(values(b).unwrap_err().contains("`values` is empty"));
            assert_eq!(
                values(c),
                Ok((
                    Criterion::ContainsAllOf,
                    vec!["a".to_string(), "c".to_string()]
                ))
            );
        }
    }

    fn parse(json: &str) -> Result<Settings, String> {
        Settings::from_json(json.as_bytes())
    }

    #[test]
    fn valid_settings_are_normalised() {
        let settings = parse(r#"{"criteria":"containsAllOf","values":["b","a","b"]}"#).unwrap();
        assert_eq!(settings.criterion, Criterion::ContainsAllOf);
        assert_eq!(settings.values.all(), ["a", "b"]);
        assert!(settings.allow_existing_violations, "on unless turned off");
    }

    #[test]
    fn existing_violations_can_be_held_against_updates() {
        for (json, allow) in [
            (
                r#"{"criteria":"containsAllOf","values":["a"],"allowExistingViolations":false}"#,
                false,
            ),
            (
                r#"{"allowExistingViolations":true,"criteria":"containsAllOf","values":["a"]}"#,
                true,
            ),
        ] {
            assert_eq!(
                parse(json).unwrap().allow_existing_violations,
                allow,
                "{json}"
            );
        }
    }

    /// `read_raw` reads every field of `Field::ALL`, and no other.
    #[test]
    fn every_named_field_is_read() {
        for field in Field::ALL {
            let name = field.name();
            let error = parse(&format!(r#"{{"{name}":null}}"#)).unwrap_err();
            assert!(!error.contains("unknown field"), "{name}: {error}");
            assert_eq!(Field::from_name(name), Some(field));
        }
        let error = parse(r#"{"allowEverything":null}"#).unwrap_err();
        assert!(error.contains("unknown field"), "{error}");
    }

    /// The README, the settings form and the unknown-field message list
    /// `ALL`: a variant left out of it would be read and never documented.
    #[test]
    fn all_holds_every_field_in_order() {
        let variants = crate::test_support::declared_variants(include_str!("settings.rs"), "Field");
        let all: Vec<String> = Field::ALL.iter().map(|f| format!("{f:?}")).collect();
        assert_eq!(variants, all);
    }

    #[test]
    fn the_unknown_field_message_names_every_field() {
        assert_eq!(
            FIELDS,
            "`criteria`, `values`, `allowExistingViolations` or `allowKubernetesBookkeeping`"
        );
        let named: Vec<&str> = FIELDS.split('`').skip(1).step_by(2).collect();
        assert_eq!(named, Field::ALL.map(Field::name));
    }

    #[test]
    fn kubernetes_keys_count_as_listed_unless_turned_off() {
        let listed = parse(r#"{"criteria":"doesNotContainOtherThan","values":["a"]}"#).unwrap();
        assert_eq!(listed.bookkeeping, Bookkeeping::Listed);
        for (flag, bookkeeping) in [
            ("true", Bookkeeping::Listed),
            ("false", Bookkeeping::Judged),
        ] {
            let json = format!(
                r#"{{"criteria":"doesNotContainOtherThan","values":["a"],"allowKubernetesBookkeeping":{flag}}}"#
            );
            assert_eq!(parse(&json).unwrap().bookkeeping, bookkeeping, "{json}");
        }
    }

    #[test]
    fn values_may_be_patterns() {
        let settings = parse(r#"{"criteria":"doesNotContainOtherThan","values":["example.com/*","*.kubernetes.io/*","owner","*"]}"#).unwrap();
        assert_eq!(
            settings.values.all(),
            ["*", "*.kubernetes.io/*", "example.com/*", "owner"]
        );
        assert_eq!(settings.values.exact(), ["owner"]);
        assert_eq!(settings.values.patterns().len(), 3);
    }

    #[test]
    fn pascal_case_criteria_are_accepted() {
        let settings = parse(r#"{"criteria":"DoesNotContainOtherThan","values":["a"]}"#).unwrap();
        assert_eq!(settings.criterion, Criterion::DoesNotContainOtherThan);
    }

    #[test]
    fn upper_case_prefixes_are_valid_names() {
        let settings = parse(r#"{"criteria":"containsAnyOf","values":["Example.com/Owner"]}"#);
        assert_eq!(settings.unwrap().values.all(), ["Example.com/Owner"]);
    }

    #[test]
    fn every_error_names_what_to_fix() {
        let cases: &[(&str, &[&str])] = &[
            ("", &["invalid settings", "found the end of the input"]),
            ("{", &["invalid settings", "end of input"]),
            ("\"x\"", &["invalid settings", "found a string"]),
            ("not json", &["invalid settings", "expected"]),
            (
                r#"{"criteria":"containsAnyOf","values":["a"]} x"#,
                &["trailing"],
            ),
            (
                "null",
                &["expected an object with `criteria` and `values`, found null"],
            ),
            (
                "[]",
                &["expected an object with `criteria` and `values`, found an array"],
            ),
            (
                r#"{"criteria":"containsAnyOf","values":["a"],"criteria":"containsAllOf"}"#,
                &["duplicate field `criteria`"],
            ),
            ("{}", &["missing `criteria` and `values`"]),
            (r#"{"values":["a"]}"#, &["missing `criteria`"]),
            (r#"{"criteria":"containsAnyOf"}"#, &["missing `values`"]),
            (
                r#"{"criteria":null,"values":["a"]}"#,
                &["missing `criteria`"],
            ),
            (
                r#"{"criteria":"bogus","values":["a"]}"#,
                &[
                    "unknown criteria \"bogus\"",
                    "containsAnyOf, doesNotContainAnyOf, containsAllOf, doesNotContainAllOf, containsOtherThan, doesNotContainOtherThan",
                ],
            ),
            (
                r#"{"criteria":1,"values":["a"]}"#,
                &["`criteria` to be a string, found a number"],
            ),
            (
                r#"{"criteria":"containsAnyOf","values":"a"}"#,
                &["`values` to be a list of annotation names, found a string"],
            ),
            (
                r#"{"criteria":"containsAnyOf","values":["a",1]}"#,
                &["each of `values` to be an annotation name (a string), found a number"],
            ),
            (
                r#"{"criteria":"containsAnyOf","values":["a",]}"#,
                &["each of `values` to be an annotation name", "found `]`"],
            ),
            (
                r#"{"criteria":"containsAnyOf","values":["a" "b"]}"#,
                &["expected `,` or `]`"],
            ),
            (
                r#"{"criteria":"containsAnyOf","values":[]}"#,
                &["`values` is empty", "containsAnyOf"],
            ),
            (
                r#"{"criteria":"containsAnyOf","values":["a"],"valuess":["b"]}"#,
                &[
                    "unknown field `valuess`, expected `criteria`, `values`, `allowExistingViolations` or `allowKubernetesBookkeeping`",
                ],
            ),
            (
                r#"{"criteria":"containsAnyOf","values":["a"],"allowExistingViolations":"no"}"#,
                &["expected `allowExistingViolations` to be true or false, found a string"],
            ),
            (
                r#"{"criteria":"containsAnyOf","values":["a"],"allowExistingViolations":null}"#,
                &["expected `allowExistingViolations` to be true or false, found null"],
            ),
            (
                r#"{"criteria":"containsAnyOf","values":["a"],"allowExistingViolations":1}"#,
                &["expected `allowExistingViolations` to be true or false, found a number"],
            ),
            (
                r#"{"criteria":"containsAnyOf","values":["a"],"allowExistingViolations":tru}"#,
                &["invalid settings", "at byte"],
            ),
            (
                r#"{"allowExistingViolations":true,"allowExistingViolations":false,"criteria":"containsAnyOf","values":["a"]}"#,
                &["duplicate field `allowExistingViolations`"],
            ),
            (
                r#"{"criteria":"containsAnyOf","values":["a"],"allowKubernetesBookkeeping":"false"}"#,
                &[
                    "expected `allowKubernetesBookkeeping` to be true or false, found a string at byte 72",
                ],
            ),
            (
                r#"{"criteria":"containsAnyOf","values":["a"],"allowKubernetesBookkeeping":[]}"#,
                &["expected `allowKubernetesBookkeeping` to be true or false, found an array"],
            ),
            (
                r#"{"allowKubernetesBookkeeping":false,"criteria":"containsAnyOf","values":["a"],"allowKubernetesBookkeeping":false}"#,
                &["duplicate field `allowKubernetesBookkeeping`"],
            ),
            (
                r#"{"criteria":"containsAnyOf","values":["a"],"allowKubernetesBookKeeping":false}"#,
                &["unknown field `allowKubernetesBookKeeping`"],
            ),
            (
                r#"{"criteria":"containsAnyOf","values":["example.com/*-","exa mple.com/*","ok/*"]}"#,
                &[
                    r#""exa mple.com/*": the prefix must be a DNS subdomain"#,
                    r#"; "example.com/*-": the name part must start and end with a letter or a digit"#,
                ],
            ),
            (
                r#"{"criteria":"containsAnyOf","values":["ok","-x","a/b/c"]}"#,
                &[
                    r#""-x": the name part must start and end"#,
                    r#"; "a/b/c": a key holds at most one '/'"#,
                ],
            ),
        ];
        for (json, fragments) in cases {
            let message = parse(json).expect_err(json);
            for fragment in *fragments {
                assert!(
                    message.contains(fragment),
                    "{json}: {message:?} lacks {fragment:?}"
                );
            }
        }
    }

    #[test]
    fn invalid_names_are_listed_sorted_and_all_of_them() {
        let message = parse(r#"{"criteria":"containsAnyOf","values":["z-","/x","ok","a b","-x"]}"#)
            .unwrap_err();
        let positions: Vec<usize> = ["\"-x\": ", "\"/x\": ", "\"a b\": ", "\"z-\": "]
            .iter()
            .map(|quoted| message.find(quoted).expect(quoted))
            .collect();
        assert!(positions.is_sorted(), "{message}");
        assert!(!message.contains("\"ok\""), "{message}");
    }

    #[test]
    fn many_invalid_names_are_counted_past_twenty() {
        let values: Vec<String> = (0..25).map(|i| format!("-x{i:02}")).collect();
        let json = serde_json::json!({"criteria": "containsAnyOf", "values": values});
        let message = parse(&json.to_string()).unwrap_err();
        assert!(message.contains(r#""-x19": "#), "{message}");
        assert!(!message.contains(r#""-x20": "#), "{message}");
        assert!(message.ends_with("; … and 5 more"), "{message}");
    }
}
