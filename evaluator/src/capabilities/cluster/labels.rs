//! Label selectors, as `k8s.io/apimachinery/pkg/labels` parses and matches
//! them: the same tokens, grammar, validation and error texts.

use std::collections::BTreeSet;

use serde_json::Value;

use super::validation::{aggregate, invalid, label_key_errors, label_value_errors};

/// The labels of an object: only string values are labels.
fn label<'o>(object: &'o Value, key: &str) -> Option<&'o str> {
    object.get("metadata")?.get("labels")?.get(key)?.as_str()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Operator {
    In,
    NotIn,
    Equals,
    DoubleEquals,
    NotEquals,
    Exists,
    DoesNotExist,
    GreaterThan,
    LessThan,
}

#[derive(Debug)]
struct Requirement {
    key: String,
    operator: Operator,
    /// Sorted, without duplicates.
    values: Vec<String>,
}

impl Requirement {
    fn matches(&self, object: &Value) -> bool {
        let value = label(object, &self.key);
        let has = |v: &str| self.values.iter().any(|w| w == v);
        match self.operator {
            Operator::In | Operator::Equals | Operator::DoubleEquals => value.is_some_and(has),
            Operator::NotIn | Operator::NotEquals => !value.is_some_and(has),
            Operator::Exists => value.is_some(),
            Operator::DoesNotExist => value.is_none(),
            Operator::GreaterThan | Operator::LessThan => {
                let Some(Ok(have)) = value.map(str::parse::<i64>) else {
                    return false;
                };
                let [want] = self.values.as_slice() else {
                    return false;
                };
                let Ok(want) = want.parse::<i64>() else {
                    return false;
                };
                match self.operator {
                    Operator::GreaterThan => have > want,
                    _ => have < want,
                }
            }
        }
    }
}

#[derive(Debug)]
pub(super) struct LabelSelector(Vec<Requirement>);

impl LabelSelector {
    pub(super) fn parse(text: &str) -> Result<LabelSelector, String> {
        let mut lexer = Lexer {
            text: text.as_bytes(),
            at: 0,
        };
        let mut items = Vec::new();
        loop {
            let (token, literal) = lexer.lex();
            items.push((token, literal));
            if token == Token::End {
                break;
            }
        }
        Parser { items, at: 0 }.parse().map(LabelSelector)
    }

    pub(super) fn matches(&self, object: &Value) -> bool {
        self.0.iter().all(|requirement| requirement.matches(object))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Token {
    Error,
    End,
    ClosedPar,
    Comma,
    DoesNotExist,
    DoubleEquals,
    Equals,
    GreaterThan,
    Identifier,
    In,
    LessThan,
    NotEquals,
    NotIn,
    OpenPar,
}

fn keyword(text: &[u8]) -> Option<Token> {
    Some(match text {
        b")" => Token::ClosedPar,
        b"," => Token::Comma,
        b"!" => Token::DoesNotExist,
        b"==" => Token::DoubleEquals,
        b"=" => Token::Equals,
        b">" => Token::GreaterThan,
        b"in" => Token::In,
        b"<" => Token::LessThan,
        b"!=" => Token::NotEquals,
        b"notin" => Token::NotIn,
        b"(" => Token::OpenPar,
        _ => return None,
    })
}

fn whitespace(byte: u8) -> bool {
    matches!(byte, b' ' | b'\t' | b'\r' | b'\n')
}

fn special(byte: u8) -> bool {
    matches!(byte, b'=' | b'!' | b'(' | b')' | b',' | b'>' | b'<')
}

/// Bytes, as Go's lexer reads them: a NUL reads as the end.
struct Lexer<'t> {
    text: &'t [u8],
    at: usize,
}

impl Lexer<'_> {
    fn read(&mut self) -> u8 {
        match self.text.get(self.at) {
            Some(&byte) => {
                self.at += 1;
                byte
            }
            None => 0,
        }
    }

    fn unread(&mut self) {
        self.at = self.at.saturating_sub(1);
    }

    fn lex(&mut self) -> (Token, String) {
        let mut byte = self.read();
        while whitespace(byte) {
            byte = self.read();
        }
        if byte == 0 {
            return (Token::End, String::new());
        }
        self.unread();
        match special(byte) {
            true => self.special(),
            false => self.identifier(),
        }
    }

    fn identifier(&mut self) -> (Token, String) {
        let mut buffer = Vec::new();
        loop {
            let byte = self.read();
            if byte == 0 {
                break;
            }
            if special(byte) || whitespace(byte) {
                self.unread();
                break;
            }
            buffer.push(byte);
        }
        let token = keyword(&buffer).unwrap_or(Token::Identifier);
        (token, String::from_utf8_lossy(&buffer).into_owned())
    }

    fn special(&mut self) -> (Token, String) {
        let mut buffer = Vec::new();
        let mut last: Option<(Token, usize)> = None;
        loop {
            let byte = self.read();
            if byte == 0 {
                break;
            }
            if !special(byte) {
                self.unread();
                break;
            }
            buffer.push(byte);
            match keyword(&buffer) {
                Some(token) => last = Some((token, buffer.len())),
                None if last.is_some() => {
                    self.unread();
                    break;
                }
                None => {}
            }
        }
        match last {
            Some((token, len)) => (token, String::from_utf8_lossy(&buffer[..len]).into_owned()),
            None => (
                Token::Error,
                format!(
                    "error expected: keyword found '{}'",
                    String::from_utf8_lossy(&buffer)
                ),
            ),
        }
    }
}

struct Parser {
    items: Vec<(Token, String)>,
    at: usize,
}

/// Whether `in` and `notin` are values here, as in `a in (in)`.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Context {
    KeyAndOperator,
    Values,
}

impl Parser {
    fn peek(&self, context: Context) -> (Token, &str) {
        let (token, literal) = self
            .items
            .get(self.at)
            .map(|(token, literal)| (*token, literal.as_str()))
            .unwrap_or((Token::End, ""));
        match (context, token) {
            (Context::Values, Token::In | Token::NotIn) => (Token::Identifier, literal),
            _ => (token, literal),
        }
    }

    fn next(&mut self, context: Context) -> (Token, String) {
        let (token, literal) = self.peek(context);
        let literal = literal.to_string();
        self.at += 1;
        (token, literal)
    }

    fn parse(&mut self) -> Result<Vec<Requirement>, String> {
        let mut requirements = Vec::new();
        loop {
            let (token, literal) = self.peek(Context::Values);
            match token {
                Token::Identifier | Token::DoesNotExist => {
                    let requirement = self
                        .requirement()
                        .map_err(|e| format!("unable to parse requirement: {e}"))?;
                    requirements.push(requirement);
                    let (token, literal) = self.next(Context::Values);
                    match token {
                        Token::End => return Ok(requirements),
                        Token::Comma => {
                            let (token, literal) = self.peek(Context::Values);
                            if token != Token::Identifier && token != Token::DoesNotExist {
                                return Err(format!(
                                    "found '{literal}', expected: identifier after ','"
                                ));
                            }
                        }
                        _ => {
                            return Err(format!(
                                "found '{literal}', expected: ',' or 'end of string'"
                            ));
                        }
                    }
                }
                Token::End => return Ok(requirements),
                _ => {
                    return Err(format!(
                        "found '{literal}', expected: !, identifier, or 'end of string'"
                    ));
                }
            }
        }
    }

    fn requirement(&mut self) -> Result<Requirement, String> {
        let (key, operator) = self.key_and_operator()?;
        if let Some(operator @ (Operator::Exists | Operator::DoesNotExist)) = operator {
            return requirement(key, operator, Vec::new());
        }
        let operator = self.operator()?;
        let values = match operator {
            Operator::In | Operator::NotIn => self.values()?,
            _ => self.exact_value()?,
        };
        requirement(key, operator, values.into_iter().collect())
    }

    fn key_and_operator(&mut self) -> Result<(String, Option<Operator>), String> {
        let mut operator = None;
        let (mut token, mut literal) = self.next(Context::Values);
        if token == Token::DoesNotExist {
            operator = Some(Operator::DoesNotExist);
            (token, literal) = self.next(Context::Values);
        }
        if token != Token::Identifier {
            return Err(format!("found '{literal}', expected: identifier"));
        }
        let errors = label_key_errors(&literal);
        if !errors.is_empty() {
            // The parser validates with no field path, which Go prints so.
            return Err(invalid("<nil>", &literal, &errors.join("; ")));
        }
        if matches!(self.peek(Context::Values).0, Token::End | Token::Comma)
            && operator != Some(Operator::DoesNotExist)
        {
            operator = Some(Operator::Exists);
        }
        Ok((literal, operator))
    }

    fn operator(&mut self) -> Result<Operator, String> {
        let (token, literal) = self.next(Context::KeyAndOperator);
        Ok(match token {
            Token::In => Operator::In,
            Token::Equals => Operator::Equals,
            Token::DoubleEquals => Operator::DoubleEquals,
            Token::GreaterThan => Operator::GreaterThan,
            Token::LessThan => Operator::LessThan,
            Token::NotIn => Operator::NotIn,
            Token::NotEquals => Operator::NotEquals,
            _ => {
                return Err(format!(
                    "found '{literal}', expected: in, notin, =, ==, !=, gt, lt"
                ));
            }
        })
    }

    fn values(&mut self) -> Result<BTreeSet<String>, String> {
        let (token, literal) = self.next(Context::Values);
        if token != Token::OpenPar {
            return Err(format!("found '{literal}' expected: '('"));
        }
        let (token, literal) = self.peek(Context::Values);
        let literal = literal.to_string();
        match token {
            Token::Identifier | Token::Comma => {
                let values = self.identifiers()?;
                if self.next(Context::Values).0 != Token::ClosedPar {
                    // Go names the token before the list here, not the one
                    // it found.
                    return Err(format!("found '{literal}', expected: ')'"));
                }
                Ok(values)
            }
            Token::ClosedPar => {
                self.next(Context::Values);
                Ok(BTreeSet::from([String::new()]))
            }
            _ => Err(format!(
                "found '{literal}', expected: ',', ')' or identifier"
            )),
        }
    }

    fn identifiers(&mut self) -> Result<BTreeSet<String>, String> {
        let mut values = BTreeSet::new();
        loop {
            let (token, literal) = self.next(Context::Values);
            match token {
                Token::Identifier => {
                    values.insert(literal);
                    let (token, literal) = self.peek(Context::Values);
                    match token {
                        Token::Comma => continue,
                        Token::ClosedPar => return Ok(values),
                        _ => return Err(format!("found '{literal}', expected: ',' or ')'")),
                    }
                }
                Token::Comma => {
                    if values.is_empty() {
                        values.insert(String::new());
                    }
                    match self.peek(Context::Values).0 {
                        Token::ClosedPar => {
                            values.insert(String::new());
                            return Ok(values);
                        }
                        Token::Comma => {
                            values.insert(String::new());
                        }
                        _ => {}
                    }
                }
                _ => return Err(format!("found '{literal}', expected: ',', or identifier")),
            }
        }
    }

    fn exact_value(&mut self) -> Result<BTreeSet<String>, String> {
        if matches!(self.peek(Context::Values).0, Token::End | Token::Comma) {
            return Ok(BTreeSet::from([String::new()]));
        }
        let (token, literal) = self.next(Context::Values);
        match token {
            Token::Identifier => Ok(BTreeSet::from([literal])),
            _ => Err(format!("found '{literal}', expected: identifier")),
        }
    }
}

/// A requirement, checked as `labels.NewRequirement` checks it (the key
/// was checked as it was read).
fn requirement(
    key: String,
    operator: Operator,
    values: Vec<String>,
) -> Result<Requirement, String> {
    let mut errors = Vec::new();
    if matches!(operator, Operator::GreaterThan | Operator::LessThan) {
        for (i, value) in values.iter().enumerate() {
            if value.parse::<i64>().is_err() {
                errors.push(invalid(
                    &format!("values[{i}]"),
                    value,
                    "for 'Gt', 'Lt' operators, the value must be an integer",
                ));
            }
        }
    }
    for (i, value) in values.iter().enumerate() {
        let problems = label_value_errors(value);
        if !problems.is_empty() {
            errors.push(invalid(
                &format!("values[{i}][{key}]"),
                value,
                &problems.join("; "),
            ));
        }
    }
    if !errors.is_empty() {
        return Err(aggregate(errors));
    }
    Ok(Requirement {
        key,
        operator,
        values,
    })
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use crate::capabilities::cluster::Cluster;
    use crate::capabilities::cluster::quote;
    use crate::capabilities::cluster::tests::{list_all, pod};

    fn labelled(labels: &[(&str, Value)]) -> Cluster {
        Cluster::new(
            labels
                .iter()
                .map(|(name, labels)| pod("ns", name, labels.clone())),
        )
    }

    #[test]
    fn label_selectors_match_with_every_operator() {
        let cluster = labelled(&[
            ("a", json!({"app": "web", "tier": "front", "n": "5"})),
            ("b", json!({"app": "db", "n": "12"})),
            ("c", json!({"tier": "back", "n": "x"})),
            ("d", json!({"app": 1})),
        ]);
        let select = |selector: &str| list_all(&cluster, "Pod", Some(selector), None);
        let ok = |names: &[&str]| Ok(names.iter().map(|n| format!("ns/{n}")).collect::<Vec<_>>());
        assert_eq!(select("app=web"), ok(&["a"]));
        assert_eq!(select("app==web"), ok(&["a"]));
        assert_eq!(
            select("app!=web"),
            ok(&["b", "c", "d"]),
            "absent matches !="
        );
        assert_eq!(select("app in (web,db)"), ok(&["a", "b"]));
        assert_eq!(select("app notin (web)"), ok(&["b", "c", "d"]));
        assert_eq!(
            select("app"),
            ok(&["a", "b"]),
            "a non-string label is no label"
        );
        assert_eq!(select("!app"), ok(&["c", "d"]));
        assert_eq!(select("app,tier"), ok(&["a"]));
        assert_eq!(select(" app = web , tier in ( front ) "), ok(&["a"]));
        assert_eq!(select("n>6"), ok(&["b"]));
        assert_eq!(select("n<6"), ok(&["a"]));
        assert_eq!(
            select("tier in (in, front)"),
            ok(&["a"]),
            "in is a value there"
        );
        assert_eq!(select("app="), ok(&[]), "an empty value");
        assert_eq!(select("tier notin ()"), ok(&["a", "b", "c", "d"]));
        assert_eq!(select(""), ok(&["a", "b", "c", "d"]));
    }

    #[test]
    fn malformed_label_selectors_say_what_is_wrong() {
        let cluster = labelled(&[("a", json!({}))]);
        let error = |selector: &str| list_all(&cluster, "Pod", Some(selector), None).unwrap_err();
        // The API server's texts (apimachinery v0.36 `labels.Parse`).
        let name_part = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
        let value_part = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";
        for (selector, message) in [
            ("app in", "unable to parse requirement: found '' expected: '('".to_string()),
            ("app in (a", "unable to parse requirement: found '', expected: ',' or ')'".to_string()),
            ("app (a)", "unable to parse requirement: found '(', expected: in, notin, =, ==, !=, gt, lt".to_string()),
            ("app=web\0garbage", "found 'garbage', expected: ',' or 'end of string'".to_string()),
            ("app in a", "unable to parse requirement: found 'a' expected: '('".to_string()),
            ("app in (a b)", "unable to parse requirement: found 'b', expected: ',' or ')'".to_string()),
            ("app in (=)", "unable to parse requirement: found '=', expected: ',', ')' or identifier".to_string()),
            ("app in (a,=)", "unable to parse requirement: found '=', expected: ',', or identifier".to_string()),
            ("app==(", "unable to parse requirement: found '(', expected: identifier".to_string()),
            ("app=a b", "found 'b', expected: ',' or 'end of string'".to_string()),
            ("app,", "found '', expected: identifier after ','".to_string()),
            ("=a", "found '=', expected: !, identifier, or 'end of string'".to_string()),
            ("!", "unable to parse requirement: found '', expected: identifier".to_string()),
            ("!app=a", "found '=', expected: ',' or 'end of string'".to_string()),
            ("-app", format!("unable to parse requirement: <nil>: Invalid value: \"-app\": {name_part}")),
            ("a/b/c", "unable to parse requirement: <nil>: Invalid value: \"a/b/c\": a valid label key must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')".to_string()),
            ("/a", "unable to parse requirement: <nil>: Invalid value: \"/a\": prefix part must be non-empty".to_string()),
            ("Ex.com/", format!("unable to parse requirement: <nil>: Invalid value: \"Ex.com/\": prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*'); name part must be non-empty; {name_part}")),
            ("app=-x", format!("unable to parse requirement: values[0][app]: Invalid value: \"-x\": {value_part}")),
            ("n>x", "unable to parse requirement: values[0]: Invalid value: \"x\": for 'Gt', 'Lt' operators, the value must be an integer".to_string()),
            ("n<-x", format!("unable to parse requirement: [values[0]: Invalid value: \"-x\": for 'Gt', 'Lt' operators, the value must be an integer, values[0][n]: Invalid value: \"-x\": {value_part}]")),
        ] {
            assert_eq!(error(selector), format!("label selector {}: {message}", quote(selector)), "{selector}");
        }
        let long = "a".repeat(64);
        assert!(error(&long).contains("name part must be no more than 63 bytes"));
        assert!(error(&format!("a={long}")).ends_with(": must be no more than 63 bytes"));
    }
}
