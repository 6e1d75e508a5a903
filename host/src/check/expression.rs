//! A policy group's `expression`, as policy-server evaluates it: a Rhai
//! expression over its members, each called as a function that says
//! whether the member accepts (`required() && !denied()`). The boolean part
//! of Rhai that such expressions use is read here: member calls, `true`,
//! `false`, `!`, `&&`, `||` and parentheses, with `&&` and `||` evaluated
//! left to right and stopping as soon as the answer is known, so that a
//! member is called, and can reject, only where Rhai would call it.

/// A parsed expression.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expression {
    Literal(bool),
    Member(String),
    Not(Box<Expression>),
    And(Box<Expression>, Box<Expression>),
    Or(Box<Expression>, Box<Expression>),
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Name(String),
    Open,
    Close,
    Not,
    And,
    Or,
}

impl Expression {
    /// Parses `text`, whose calls must name `members`.
    pub fn parse(text: &str, members: &[&str]) -> Result<Expression, String> {
        let tokens = tokens(text)?;
        let mut parser = Parser {
            tokens: &tokens,
            at: 0,
            members,
        };
        let expression = parser.or()?;
        match parser.tokens.get(parser.at) {
            None => Ok(expression),
            Some(token) => Err(format!("unexpected {} after the expression", show(token))),
        }
    }

    /// Evaluates the expression, calling `member` for each member call that
    /// is reached.
    pub fn evaluate<E>(&self, member: &mut impl FnMut(&str) -> Result<bool, E>) -> Result<bool, E> {
        Ok(match self {
            Expression::Literal(value) => *value,
            Expression::Member(name) => member(name)?,
            Expression::Not(inner) => !inner.evaluate(member)?,
            Expression::And(a, b) => a.evaluate(member)? && b.evaluate(member)?,
            Expression::Or(a, b) => a.evaluate(member)? || b.evaluate(member)?,
        })
    }
}

fn show(token: &Token) -> String {
    match token {
        Token::Name(name) => format!("`{name}`"),
        Token::Open => "`(`".to_string(),
        Token::Close => "`)`".to_string(),
        Token::Not => "`!`".to_string(),
        Token::And => "`&&`".to_string(),
        Token::Or => "`||`".to_string(),
    }
}

fn tokens(text: &str) -> Result<Vec<Token>, String> {
    let mut tokens = Vec::new();
    let mut chars = text.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        let token = match c {
            c if c.is_whitespace() => continue,
            '(' => Token::Open,
            ')' => Token::Close,
            '!' => Token::Not,
            '&' | '|' => {
                if chars.next_if(|&(_, next)| next == c).is_none() {
                    return Err(format!("`{c}` at {at}: only `{c}{c}` combines members"));
                }
                if c == '&' { Token::And } else { Token::Or }
            }
            c if c.is_ascii_alphabetic() || c == '_' => {
                let mut name = c.to_string();
                while let Some((_, next)) =
                    chars.next_if(|&(_, next)| next.is_ascii_alphanumeric() || next == '_')
                {
                    name.push(next);
                }
                Token::Name(name)
            }
            other => {
                return Err(format!(
                    "`{other}` at {at}: the check reads member calls, true, false, !, &&, || and parentheses"
                ));
            }
        };
        tokens.push(token);
    }
    Ok(tokens)
}

struct Parser<'a> {
    tokens: &'a [Token],
    at: usize,
    members: &'a [&'a str],
}

impl Parser<'_> {
    fn next(&mut self) -> Option<&Token> {
        let token = self.tokens.get(self.at);
        self.at += 1;
        token
    }

    fn eat(&mut self, token: &Token) -> bool {
        let found = self.tokens.get(self.at) == Some(token);
        if found {
            self.at += 1;
        }
        found
    }

    fn or(&mut self) -> Result<Expression, String> {
        let mut left = self.and()?;
        while self.eat(&Token::Or) {
            left = Expression::Or(Box::new(left), Box::new(self.and()?));
        }
        Ok(left)
    }

    fn and(&mut self) -> Result<Expression, String> {
        let mut left = self.unary()?;
        while self.eat(&Token::And) {
            left = Expression::And(Box::new(left), Box::new(self.unary()?));
        }
        Ok(left)
    }

    fn unary(&mut self) -> Result<Expression, String> {
        if self.eat(&Token::Not) {
            return Ok(Expression::Not(Box::new(self.unary()?)));
        }
        match self.next().cloned() {
            Some(Token::Open) => {
                let inner = self.or()?;
                match self.eat(&Token::Close) {
                    true => Ok(inner),
                    false => Err("a `(` is not closed".to_string()),
                }
            }
            Some(Token::Name(name)) if name == "true" || name == "false" => {
                Ok(Expression::Literal(name == "true"))
            }
            Some(Token::Name(name)) => {
                if !(self.eat(&Token::Open) && self.eat(&Token::Close)) {
                    return Err(format!("`{name}` must be called: `{name}()`"));
                }
                if !self.members.contains(&name.as_str()) {
                    return Err(format!(
                        "`{name}()` names no member of the group (its members: {})",
                        self.members.join(", ")
                    ));
                }
                Ok(Expression::Member(name))
            }
            Some(token) => Err(format!("unexpected {}", show(&token))),
            None => Err("the expression ends too soon".to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(text: &str, accepts: &[(&str, bool)]) -> (bool, Vec<String>) {
        let names: Vec<&str> = accepts.iter().map(|(n, _)| *n).collect();
        let expression = Expression::parse(text, &names).unwrap();
        let mut called = Vec::new();
        let verdict = expression
            .evaluate(&mut |name: &str| -> Result<bool, ()> {
                called.push(name.to_string());
                Ok(accepts.iter().find(|(n, _)| *n == name).unwrap().1)
            })
            .unwrap();
        (verdict, called)
    }

    #[test]
    fn members_combine_and_stop_as_rhai_does() {
        let members = [("required", false), ("not_denied", true)];
        assert_eq!(
            run("required() && not_denied()", &members),
            (false, vec!["required".into()])
        );
        assert_eq!(
            run("required() || not_denied()", &members),
            (true, vec!["required".into(), "not_denied".into()])
        );
        assert_eq!(
            run("!required()", &members),
            (true, vec!["required".into()])
        );
        assert_eq!(
            run("(required() || true) && !(not_denied() && false)", &members),
            (true, vec!["required".into(), "not_denied".into()])
        );
        // && binds tighter than ||.
        assert!(run("true || required() && false", &members).0);
    }

    #[test]
    fn what_cannot_be_read_is_said() {
        let members = ["a", "b"];
        for (text, fragment) in [
            ("a() & b()", "only `&&`"),
            ("a && b()", "`a` must be called"),
            ("a() && c()", "names no member"),
            ("(a()", "not closed"),
            ("a() b()", "after the expression"),
            ("a() == true", "`=`"),
            ("", "ends too soon"),
        ] {
            let error = Expression::parse(text, &members).unwrap_err();
            assert!(error.contains(fragment), "{text}: {error}");
        }
    }
}
