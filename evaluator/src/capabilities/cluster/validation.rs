//! Label keys and values checked as `k8s.io/apimachinery`'s validation
//! checks them, and the Go wording the API server's messages share: `%q`,
//! `field.Invalid`, aggregated errors and `RegexError`'s examples. The
//! label selectors use both; RBAC's answers use the quoting and the
//! aggregate.

use std::collections::BTreeSet;
use std::fmt::Write as _;

/// A string as Go's `%q` writes it, which the API server's messages use.
pub(crate) fn quote(text: &str) -> String {
    let mut quoted = String::with_capacity(text.len() + 2);
    quoted.push('"');
    for c in text.chars() {
        match c {
            '"' => quoted.push_str("\\\""),
            '\\' => quoted.push_str("\\\\"),
            '\u{7}' => quoted.push_str("\\a"),
            '\u{8}' => quoted.push_str("\\b"),
            '\u{c}' => quoted.push_str("\\f"),
            '\n' => quoted.push_str("\\n"),
            '\r' => quoted.push_str("\\r"),
            '\t' => quoted.push_str("\\t"),
            '\u{b}' => quoted.push_str("\\v"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                let _ = write!(quoted, "\\x{:02x}", c as u32);
            }
            c if !printable(c) => {
                let _ = match c as u32 {
                    code @ 0..=0xffff => write!(quoted, "\\u{code:04x}"),
                    code => write!(quoted, "\\U{code:08x}"),
                };
            }
            c => quoted.push(c),
        }
    }
    quoted.push('"');
    quoted
}

/// Go's `unicode.IsPrint`, near enough for names: no control, no space
/// but ' ', no format character, no private use.
fn printable(c: char) -> bool {
    let code = c as u32;
    !(c.is_control()
        || (c.is_whitespace() && c != ' ')
        || matches!(
            code,
            0xad | 0x600..=0x605
                | 0x61c
                | 0x6dd
                | 0x70f
                | 0x180e
                | 0x200b..=0x200f
                | 0x202a..=0x202e
                | 0x2060..=0x206f
                | 0xe000..=0xf8ff
                | 0xfeff
                | 0xfff9..=0xfffb
                | 0xf0000..
        ))
}

/// A field error as `field.Invalid` words it for a string value.
pub(super) fn invalid(path: &str, value: &str, detail: &str) -> String {
    format!("{path}: Invalid value: {}: {detail}", quote(value))
}

/// Errors as Go's aggregate words them: one alone, several bracketed, each
/// once.
pub(crate) fn aggregate(errors: Vec<String>) -> String {
    let mut seen = BTreeSet::new();
    let unique: Vec<String> = errors
        .into_iter()
        .filter(|error| seen.insert(error.clone()))
        .collect();
    match unique.as_slice() {
        [one] => one.clone(),
        many => format!("[{}]", many.join(", ")),
    }
}

const LABEL_FORMAT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const LABEL_KEY_MESSAGE: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const LABEL_VALUE_MESSAGE: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const SUBDOMAIN_FORMAT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const SUBDOMAIN_MESSAGE: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";

/// A validation message with its examples, as Go's `RegexError` writes it.
fn regex_error(message: &str, format: &str, examples: &[&str]) -> String {
    let examples: Vec<String> = examples.iter().map(|e| format!("'{e}', ")).collect();
    format!(
        "{message} (e.g. {}regex used for validation is '{format}')",
        examples.join(" or ")
    )
}

/// `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`, whole.
fn label_shaped(text: &str) -> bool {
    let bytes = text.as_bytes();
    match (bytes.first(), bytes.last()) {
        (Some(first), Some(last)) => {
            first.is_ascii_alphanumeric()
                && last.is_ascii_alphanumeric()
                && bytes
                    .iter()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        }
        _ => false,
    }
}

/// An RFC 1123 subdomain, lowercase.
fn subdomain_shaped(text: &str) -> bool {
    text.split('.').all(|part| {
        let bytes = part.as_bytes();
        let edge = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit();
        match (bytes.first(), bytes.last()) {
            (Some(first), Some(last)) => {
                edge(first) && edge(last) && bytes.iter().all(|b| edge(b) || *b == b'-')
            }
            _ => false,
        }
    })
}

/// What is wrong with a label key (`content.IsLabelKey`).
pub(super) fn label_key_errors(key: &str) -> Vec<String> {
    let mut errors = Vec::new();
    let parts: Vec<&str> = key.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errors.push("prefix part must be non-empty".to_string());
            } else {
                if prefix.len() > 253 {
                    errors.push("prefix part must be no more than 253 bytes".to_string());
                }
                if !subdomain_shaped(prefix) {
                    errors.push(format!(
                        "prefix part {}",
                        regex_error(SUBDOMAIN_MESSAGE, SUBDOMAIN_FORMAT, &["example.com"])
                    ));
                }
            }
            *name
        }
        _ => {
            errors.push(format!(
                "a valid label key {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                regex_error(LABEL_KEY_MESSAGE, LABEL_FORMAT, &["MyName", "my.name", "123-abc"])
            ));
            return errors;
        }
    };
    if name.is_empty() {
        errors.push("name part must be non-empty".to_string());
    } else if name.len() > 63 {
        errors.push("name part must be no more than 63 bytes".to_string());
    }
    if !label_shaped(name) {
        errors.push(format!(
            "name part {}",
            regex_error(
                LABEL_KEY_MESSAGE,
                LABEL_FORMAT,
                &["MyName", "my.name", "123-abc"]
            )
        ));
    }
    errors
}

/// What is wrong with a label value (`content.IsLabelValue`).
pub(super) fn label_value_errors(value: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if value.len() > 63 {
        errors.push("must be no more than 63 bytes".to_string());
    }
    if !value.is_empty() && !label_shaped(value) {
        errors.push(regex_error(
            LABEL_VALUE_MESSAGE,
            &format!("({LABEL_FORMAT})?"),
            &["MyValue", "my_value", "12345"],
        ));
    }
    errors
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_quotes_as_go_does() {
        assert_eq!(quote("a\"b\\c"), r#""a\"b\\c""#);
        assert_eq!(quote("\n\t\u{1}\u{7f}"), r#""\n\t\x01\x7f""#);
        assert_eq!(quote("é\u{a0}\u{200b}"), "\"é\\u00a0\\u200b\"");
    }
}
