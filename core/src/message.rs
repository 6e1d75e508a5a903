//! The words of a rejection: which rule failed, on which object, and exactly
//! which annotations to add or remove.
//!
//! kubectl prints a rejection whole, so a message stays short whatever the
//! request: a list names at most `MAX_LISTED` entries (the first ones in
//! sorted order) and then counts the rest, and a name longer than a line's
//! worth is abridged in the middle (`quoting`). A message is shorter than
//! `MAX_MESSAGE` bytes: the limits above keep a rejection so
//! (`messages_stay_short`), and `bounded`, through which `response` writes
//! every message (rejections, malformed requests, invalid settings), cuts
//! whatever gets past them.

use std::fmt::{self, Write as _};

use crate::evaluator::Violation;
use crate::quoting::{Abridged, QuotedAbridged};

/// How many entries a list names before it counts the rest.
pub const MAX_LISTED: usize = 20;
/// Every message the module answers with is shorter than this (`bounded`
/// enforces it).
pub const MAX_MESSAGE: usize = 4096;

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
            (Some(kind), _) => write!(f, "{}", Abridged(kind))?,
            (None, Some(_)) => f.write_str("object")?,
        }
        if let Some(name) = name {
            match namespace {
                Some(namespace) => write!(f, " \"{}/{}\"", Abridged(namespace), Abridged(name))?,
                None => write!(f, " {}", QuotedAbridged(name))?,
            }
        }
        Ok(())
    }
}

/// The first `MAX_LISTED` of `items`, each shown by `show`, and then how
/// many more there are.
pub struct List<'a, T, F> {
    items: &'a [T],
    separator: &'a str,
    show: F,
}

impl<'a, T, F> List<'a, T, F>
where
    F: Fn(&mut fmt::Formatter<'_>, &T) -> fmt::Result,
{
    pub fn new(items: &'a [T], separator: &'a str, show: F) -> Self {
        List {
            items,
            separator,
            show,
        }
    }
}

impl<T, F> fmt::Display for List<'_, T, F>
where
    F: Fn(&mut fmt::Formatter<'_>, &T) -> fmt::Result,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, item) in self.items.iter().take(MAX_LISTED).enumerate() {
            if i > 0 {
                f.write_str(self.separator)?;
            }
            (self.show)(f, item)?;
        }
        match self.items.len().checked_sub(MAX_LISTED) {
            None | Some(0) => Ok(()),
            Some(more) => write!(f, "{}… and {} more", self.separator, Count(more)),
        }
    }
}

/// Names, quoted and comma-separated, in the order given (callers pass
/// sorted lists).
fn names<T: AsRef<str>>(items: &[T]) -> impl fmt::Display + '_ {
    List::new(items, ", ", |f, name: &T| {
        write!(f, "{}", QuotedAbridged(name.as_ref()))
    })
}

/// A number with a comma between each group of three digits.
struct Count(usize);

impl fmt::Display for Count {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The digits from the last, a comma before every third.
        let mut text = [0u8; 32];
        let (mut n, mut at, mut digits) = (self.0, text.len(), 0usize);
        loop {
            if digits > 0 && digits.is_multiple_of(3) {
                at -= 1;
                text[at] = b',';
            }
            at -= 1;
            text[at] = b'0' + (n % 10) as u8;
            n /= 10;
            digits += 1;
            if n == 0 {
                break;
            }
        }
        // Only ASCII digits and commas were written.
        f.write_str(std::str::from_utf8(&text[at..]).unwrap_or_default())
    }
}

/// The message for a rejected object, one wording per violation (each
/// violation belongs to one criterion, named above its arm). `values` are the
/// configured values, sorted.
pub fn rejection(subject: &Subject, values: &[String], violation: &Violation) -> String {
    let mut out = String::new();
    let values = names(values);
    // Writing to a String cannot fail.
    let _ = match violation {
        // containsAnyOf
        Violation::ContainsAnyOf => write!(
            out,
            "{subject} must carry at least one of the annotations {values}, and carries none of them"
        ),
        // doesNotContainAnyOf
        Violation::DoesNotContainAnyOf { forbidden: found } => write!(
            out,
            "{subject} carries forbidden annotations; remove {}",
            names(found)
        ),
        // containsAllOf
        Violation::ContainsAllOf { missing } => write!(
            out,
            "{subject} lacks required annotations; add {}",
            List::new(missing, ", ", |f, value: &&str| match value.contains('*') {
                true => write!(f, "an annotation matching {}", QuotedAbridged(value)),
                false => write!(f, "{}", QuotedAbridged(value)),
            })
        ),
        // doesNotContainAllOf
        Violation::DoesNotContainAllOf => write!(
            out,
            "{subject} carries all of the annotations {values}, which must not appear together; \
             remove at least one of them"
        ),
        // containsOtherThan
        Violation::ContainsOtherThan { listed, kubernetes } => {
            // One sorted list of what the object carries; Kubernetes' own
            // keys are said not to count, rather than listed twice.
            let mut found: Vec<&str> = listed.iter().chain(kubernetes).copied().collect();
            found.sort_unstable();
            let own = match kubernetes.is_empty() {
                true => "",
                false => " and those Kubernetes writes itself",
            };
            match found.is_empty() {
                true => write!(
                    out,
                    "{subject} has no annotations; it needs at least one annotation other than {values}"
                ),
                false => write!(
                    out,
                    "{subject} carries only the annotations {}; it needs at least one annotation other than {values}{own}",
                    names(&found)
                ),
            }
        }
        // doesNotContainOtherThan
        Violation::DoesNotContainOtherThan { unlisted } => write!(
            out,
            "{subject} carries annotations outside the allowed list {values}; remove {}",
            names(unlisted)
        ),
    };
    capitalise(out)
}

/// `message` as it is shown, in two parts to be written one after the
/// other: the whole message and nothing when it is shorter than
/// `MAX_MESSAGE` bytes, else its start, cut at a character boundary, and
/// `…`, shorter than `MAX_MESSAGE` together. Parts rather than a new
/// string, so that `response` writes a message without copying it.
pub fn bounded(message: &str) -> (&str, &'static str) {
    const MORE: &str = "…";
    if message.len() < MAX_MESSAGE {
        return (message, "");
    }
    let mut end = MAX_MESSAGE - 1 - MORE.len();
    while !message.is_char_boundary(end) {
        end -= 1;
    }
    (&message[..end], MORE)
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
    use crate::criterion::Criterion;

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
                Violation::ContainsAnyOf,
                r#"Pod "default/web" must carry at least one of the annotations "a", "b", and carries none of them"#,
            ),
            (
                Violation::DoesNotContainAnyOf {
                    forbidden: vec!["a", "b"],
                },
                r#"Pod "default/web" carries forbidden annotations; remove "a", "b""#,
            ),
            (
                Violation::ContainsAllOf { missing: vec!["b"] },
                r#"Pod "default/web" lacks required annotations; add "b""#,
            ),
            (
                Violation::DoesNotContainAllOf,
                r#"Pod "default/web" carries all of the annotations "a", "b", which must not appear together; remove at least one of them"#,
            ),
            (
                Violation::ContainsOtherThan {
                    listed: vec![],
                    kubernetes: vec![],
                },
                r#"Pod "default/web" has no annotations; it needs at least one annotation other than "a", "b""#,
            ),
            (
                Violation::ContainsOtherThan {
                    listed: vec!["a"],
                    kubernetes: vec![],
                },
                r#"Pod "default/web" carries only the annotations "a"; it needs at least one annotation other than "a", "b""#,
            ),
            (
                Violation::ContainsOtherThan {
                    listed: vec!["b"],
                    kubernetes: vec![
                        "deprecated.daemonset.template.generation",
                        "kubernetes.io/psp",
                    ],
                },
                r#"Pod "default/web" carries only the annotations "b", "deprecated.daemonset.template.generation", "kubernetes.io/psp"; it needs at least one annotation other than "a", "b" and those Kubernetes writes itself"#,
            ),
            (
                Violation::DoesNotContainOtherThan {
                    unlisted: vec!["x", "y"],
                },
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
        let message = rejection(
            &Subject::default(),
            &values(),
            &Violation::DoesNotContainAllOf,
        );
        assert!(message.starts_with("The object carries"), "{message}");
    }

    #[test]
    fn a_value_no_key_matched_is_named_as_written() {
        let values = vec!["cost.example.org/*".to_string(), "owner".to_string()];
        let message = rejection(
            &POD,
            &values,
            &Violation::ContainsAllOf {
                missing: vec!["cost.example.org/*", "owner"],
            },
        );
        assert_eq!(
            message,
            r#"Pod "default/web" lacks required annotations; add an annotation matching "cost.example.org/*", "owner""#
        );
    }

    #[test]
    fn counts_group_their_digits_by_three() {
        for (n, text) in [
            (0, "0"),
            (7, "7"),
            (999, "999"),
            (1_000, "1,000"),
            (4_980, "4,980"),
            (123_456, "123,456"),
            (1_234_567, "1,234,567"),
        ] {
            assert_eq!(Count(n).to_string(), text);
        }
    }

    #[test]
    fn a_list_names_twenty_and_counts_the_rest() {
        let keys: Vec<String> = (0..5_000).map(|i| format!("k{i:04}")).collect();
        let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
        let message = rejection(
            &POD,
            &values(),
            &Violation::DoesNotContainOtherThan {
                unlisted: keys.clone(),
            },
        );
        let listed: Vec<String> = keys[..MAX_LISTED]
            .iter()
            .map(|k| format!("\"{k}\""))
            .collect();
        let expected = format!(
            r#"Pod "default/web" carries annotations outside the allowed list "a", "b"; remove {}, … and 4,980 more"#,
            listed.join(", ")
        );
        assert_eq!(message, expected);
        // Exactly twenty: nothing is counted.
        let message = rejection(
            &POD,
            &values(),
            &Violation::DoesNotContainAnyOf {
                forbidden: keys[..20].to_vec(),
            },
        );
        assert!(message.ends_with(r#""k0019""#), "{message}");
        let message = rejection(
            &POD,
            &values(),
            &Violation::DoesNotContainAnyOf {
                forbidden: keys[..21].to_vec(),
            },
        );
        assert!(message.ends_with(r#""k0019", … and 1 more"#), "{message}");
    }

    proptest::proptest! {
        /// Whatever the subject, the values and the keys at fault, with the
        /// longest names, the most escapes and the longest lists.
        #[test]
        fn messages_stay_short(
            criterion in proptest::sample::select(Criterion::ALL.to_vec()),
            length in proptest::sample::select(vec![1usize, 40, 78, 79, 300, 100_000]),
            piece in proptest::sample::select(vec!["x", "\u{1}", "é", "\"", "€"]),
            count in proptest::sample::select(vec![0usize, 1, 20, 21, 5_000]),
            values in proptest::sample::select(vec![1usize, 20, 1_000]),
        ) {
            // The first names listed are the longest; the rest are only counted.
            let name = |i: usize| match i < MAX_LISTED + 5 {
                true => format!("{i}{}", piece.repeat(length)),
                false => i.to_string(),
            };
            let long = name(0);
            let subject = Subject { kind: Some(&long), namespace: Some(&long), name: Some(&long) };
            let keys: Vec<String> = (0..count).map(name).collect();
            let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
            let values: Vec<String> = (0..values).map(name).collect();
            let violation = match criterion {
                Criterion::ContainsAnyOf => Violation::ContainsAnyOf,
                Criterion::DoesNotContainAnyOf => Violation::DoesNotContainAnyOf { forbidden: keys },
                Criterion::ContainsAllOf => Violation::ContainsAllOf { missing: keys },
                Criterion::DoesNotContainAllOf => Violation::DoesNotContainAllOf,
                Criterion::ContainsOtherThan => {
                    Violation::ContainsOtherThan { listed: keys.clone(), kubernetes: keys }
                }
                Criterion::DoesNotContainOtherThan => {
                    Violation::DoesNotContainOtherThan { unlisted: keys }
                }
            };
            // The wording's own limits keep it short: `bounded` never cuts
            // a message that today's wordings make.
            let message = rejection(&subject, &values, &violation);
            proptest::prop_assert!(message.len() < MAX_MESSAGE, "{} bytes", message.len());
        }
    }

    #[test]
    fn a_message_that_would_be_too_long_is_cut_at_a_character() {
        for filler in ["a", "é", "日", "🦀"] {
            for extra in 0..8 {
                let long = "x".repeat(extra) + &filler.repeat(MAX_MESSAGE);
                let cut = shown(&long);
                assert!(cut.len() < MAX_MESSAGE, "{} bytes", cut.len());
                assert!(cut.len() >= MAX_MESSAGE - 8, "{} bytes", cut.len());
                assert!(cut.ends_with('…'));
                let kept = cut.strip_suffix('…').unwrap();
                assert!(long.starts_with(kept));
            }
        }
        let short = "Pod \"a\" lacks required annotations";
        assert_eq!(bounded(short), (short, ""));
        let edge = "x".repeat(MAX_MESSAGE - 1);
        assert_eq!(
            bounded(&edge),
            (edge.as_str(), ""),
            "one byte under the limit stays whole"
        );
        assert_eq!(shown(&"x".repeat(MAX_MESSAGE)).len(), MAX_MESSAGE - 1);
    }

    /// The message `bounded` shows.
    fn shown(message: &str) -> String {
        let (kept, more) = bounded(message);
        format!("{kept}{more}")
    }

    #[test]
    fn unusual_keys_are_quoted_unambiguously() {
        let message = rejection(
            &POD,
            &values(),
            &Violation::DoesNotContainOtherThan {
                unlisted: vec!["x, y", "new\nline"],
            },
        );
        assert!(
            message.ends_with(r#"remove "x, y", "new\nline""#),
            "{message}"
        );
    }
}
