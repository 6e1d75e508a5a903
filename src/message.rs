//! The words of a rejection: which rule failed, on which object, and exactly
//! which annotations to add or remove.

use std::fmt::{self, Write as _};

use crate::evaluator::Violation;

/// The object a message speaks of, as far as the request names it.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Subject<'a> {
    pub kind: Option<&'a str>,
    pub namespace: Option<&'a str>,
    pub name: Option<&'a str>,
}

impl fmt::Display for Subject<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = self.kind.filter(|k| !k.is_empty());
        let name = self.name.filter(|n| !n.is_empty());
        let namespace = self.namespace.filter(|n| !n.is_empty());
        match (kind, name) {
            (None, None) => return f.write_str("the object"),
            (Some(kind), _) => f.write_str(kind)?,
            (None, Some(_)) => f.write_str("object")?,
        }
        if let Some(name) = name {
            match namespace {
                Some(namespace) => write!(f, " \"{}/{}\"", Escaped(namespace), Escaped(name))?,
                None => write!(f, " {}", Quoted(name))?,
            }
        }
        Ok(())
    }
}

/// Text in double quotes, escaped as in JSON so that any key reads back
/// unambiguously. (Rust's `{:?}` would do, but pulls Unicode tables into
/// the module.)
pub struct Quoted<'a>(pub &'a str);

impl fmt::Display for Quoted<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "\"{}\"", Escaped(self.0))
    }
}

struct Escaped<'a>(&'a str);

impl fmt::Display for Escaped<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut plain = 0;
        for (i, b) in self.0.bytes().enumerate() {
            let escape = match b {
                b'"' => "\\\"",
                b'\\' => "\\\\",
                b'\n' => "\\n",
                b'\r' => "\\r",
                b'\t' => "\\t",
                0..=0x1f | 0x7f => "",
                _ => continue,
            };
            f.write_str(&self.0[plain..i])?;
            if escape.is_empty() {
                write!(f, "\\u{b:04x}")?;
            } else {
                f.write_str(escape)?;
            }
            plain = i + 1;
        }
        f.write_str(&self.0[plain..])
    }
}

/// Renders `names` as a quoted, comma-separated list, in the order given
/// (callers pass sorted lists).
struct List<'a, T>(&'a [T]);

impl<T: AsRef<str>> fmt::Display for List<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, name) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{}", Quoted(name.as_ref()))?;
        }
        Ok(())
    }
}

/// The message for a rejected object. `values` are the configured names,
/// sorted.
pub fn rejection(subject: &Subject, values: &[String], violation: &Violation) -> String {
    let mut out = String::new();
    let values = List(values);
    // Writing to a String cannot fail.
    let _ = match violation {
        Violation::NoneOfValues => write!(
            out,
            "{subject} must carry at least one of the annotations {values}, and carries none of them"
        ),
        Violation::Forbidden(found) => write!(
            out,
            "{subject} carries forbidden annotations; remove {}",
            List(found)
        ),
        Violation::Missing(missing) => write!(
            out,
            "{subject} lacks required annotations; add {}",
            List(missing)
        ),
        Violation::AllValues => write!(
            out,
            "{subject} carries all of the annotations {values}, which must not appear together; \
             remove at least one of them"
        ),
        Violation::OnlyValues(found) if found.is_empty() => write!(
            out,
            "{subject} has no annotations; it needs at least one annotation other than {values}"
        ),
        Violation::OnlyValues(found) => write!(
            out,
            "{subject} carries only the annotations {}; it needs at least one annotation other than {values}",
            List(found)
        ),
        Violation::Unlisted(unlisted) => write!(
            out,
            "{subject} carries annotations outside the allowed list {values}; remove {}",
            List(unlisted)
        ),
    };
    capitalise(out)
}

fn capitalise(mut message: String) -> String {
    if let Some(first) = message.get_mut(..1) {
        first.make_ascii_uppercase();
    }
    message
}

#[cfg(test)]
mod tests {
    use super::*;

    const POD: Subject = Subject {
        kind: Some("Pod"),
        namespace: Some("default"),
        name: Some("web"),
    };

    fn values() -> Vec<String> {
        vec!["a".into(), "b".into()]
    }

    #[test]
    fn each_violation_reads_as_what_to_fix() {
        let cases = [
            (
                Violation::NoneOfValues,
                r#"Pod "default/web" must carry at least one of the annotations "a", "b", and carries none of them"#,
            ),
            (
                Violation::Forbidden(vec!["a", "b"]),
                r#"Pod "default/web" carries forbidden annotations; remove "a", "b""#,
            ),
            (
                Violation::Missing(vec!["b"]),
                r#"Pod "default/web" lacks required annotations; add "b""#,
            ),
            (
                Violation::AllValues,
                r#"Pod "default/web" carries all of the annotations "a", "b", which must not appear together; remove at least one of them"#,
            ),
            (
                Violation::OnlyValues(vec![]),
                r#"Pod "default/web" has no annotations; it needs at least one annotation other than "a", "b""#,
            ),
            (
                Violation::OnlyValues(vec!["a"]),
                r#"Pod "default/web" carries only the annotations "a"; it needs at least one annotation other than "a", "b""#,
            ),
            (
                Violation::Unlisted(vec!["x", "y"]),
                r#"Pod "default/web" carries annotations outside the allowed list "a", "b"; remove "x", "y""#,
            ),
        ];
        for (violation, expected) in cases {
            assert_eq!(rejection(&POD, &values(), &violation), expected);
        }
    }

    #[test]
    fn subjects_say_as_much_as_the_request_names() {
        let cases = [
            (Subject::default(), "the object"),
            (
                Subject {
                    kind: Some("Namespace"),
                    name: Some("team-a"),
                    ..Subject::default()
                },
                r#"Namespace "team-a""#,
            ),
            (
                Subject {
                    kind: Some("Pod"),
                    ..Subject::default()
                },
                "Pod",
            ),
            (
                Subject {
                    name: Some("x"),
                    namespace: Some(""),
                    kind: Some(""),
                },
                r#"object "x""#,
            ),
        ];
        for (subject, expected) in cases {
            assert_eq!(subject.to_string(), expected);
        }
        let message = rejection(&Subject::default(), &values(), &Violation::AllValues);
        assert!(message.starts_with("The object carries"), "{message}");
    }

    #[test]
    fn unusual_keys_are_quoted_unambiguously() {
        let message = rejection(
            &POD,
            &values(),
            &Violation::Unlisted(vec!["x, y", "new\nline"]),
        );
        assert!(
            message.ends_with(r#"remove "x, y", "new\nline""#),
            "{message}"
        );
    }
}
