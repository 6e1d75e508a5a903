//! Text that a tool renders before it is a manifest: Helm's Go templates
//! (`{{ … }}`), envsubst's variables (`${NAME}`), or another tool's
//! (`{% … %}`). kubectl never sends such text, so the document that holds
//! it is noted with the tool to run, and never judged as it stands:
//!
//! - a document that does not parse and holds template syntax is a
//!   template, not a broken manifest;
//! - a document that parses but holds template syntax where the API server
//!   takes none (a name, a namespace, the key of an annotation or label, a
//!   label's value: DNS names, qualified names and label values never hold
//!   `{` or `$`) is a template
//!   that happens to parse (`name: {{ .Release.Name }}-web` reads as a
//!   mapping).
//!
//! The document is the unit: one template in a rendered file hides none of
//! the documents around it.

use serde_json::Value;

/// The tool whose syntax a template holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Renderer {
    /// Go templates, as Helm (and others built on Go) render them.
    Helm,
    /// `${NAME}`, as envsubst replaces it.
    Envsubst,
    /// Template syntax of a tool the check cannot name (`{% … %}`).
    Unknown,
}

impl Renderer {
    /// What opens the syntax.
    fn opening(self) -> &'static str {
        match self {
            Renderer::Helm => "{{",
            Renderer::Envsubst => "${",
            Renderer::Unknown => "{%",
        }
    }

    /// Every renderer, the likeliest first: a Helm template often holds
    /// `${` in a script, never the other way round.
    const ALL: [Renderer; 3] = [Renderer::Helm, Renderer::Envsubst, Renderer::Unknown];
}

/// Template syntax found in a document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    pub renderer: Renderer,
    /// Where: `at line 12`, or `in` the field that holds it.
    pub at: String,
}

/// The renderer whose syntax `text` holds, if any, and the byte offset of
/// its first opening.
fn syntax(text: &str) -> Option<(Renderer, usize)> {
    Renderer::ALL.into_iter().find_map(|renderer| {
        let opening = renderer.opening();
        text.match_indices(opening)
            .find(|(at, _)| match renderer {
                // `${` opens a variable only before a name, and not after
                // another `$`: `${1}` and `$${HOME}` are shell, not envsubst.
                Renderer::Envsubst => {
                    !text[..*at].ends_with('$')
                        && text[at + 2..]
                            .bytes()
                            .next()
                            .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
                }
                Renderer::Helm | Renderer::Unknown => true,
            })
            .map(|(at, _)| (renderer, at))
    })
}

/// The template syntax of a document's text that does not parse, at the
/// line of the file it is on (`first_line`: where the text starts). Only
/// syntax that stands as YAML's structure counts: in a quoted scalar, a
/// comment or a block scalar it is content (a Prometheus rule's
/// `"{{ $labels.instance }}"`, a script's `${HOME}`), and a document that
/// breaks elsewhere is broken, not a template.
pub fn in_text(text: &str, first_line: usize) -> Option<Template> {
    // The structure of each line, past block scalars (the lines more
    // indented than the key that opened one).
    let mut lines = Vec::new();
    let mut block: Option<usize> = None;
    for (number, line) in text.lines().enumerate() {
        let indent = line.len() - line.trim_start_matches(' ').len();
        if let Some(key) = block {
            if line.trim().is_empty() || indent > key {
                continue;
            }
            block = None;
        }
        let structure = structure(line);
        let opener = structure.trim_end();
        if opener.ends_with(['|', '>'])
            || opener.ends_with("|-")
            || opener.ends_with(">-")
            || opener.ends_with("|+")
            || opener.ends_with(">+")
        {
            block = Some(indent);
        }
        lines.push((number, structure));
    }
    // The likeliest renderer first, wherever its syntax is.
    Renderer::ALL.into_iter().find_map(|renderer| {
        let (number, _) = lines
            .iter()
            .find(|(_, line)| syntax(line).is_some_and(|(found, _)| found == renderer))?;
        Some(Template {
            renderer,
            at: format!("at line {}", first_line + number),
        })
    })
}

/// A line without its quoted scalars and its comment: what YAML reads as
/// structure and plain scalars. (A quoted scalar that runs on to the next
/// line is closed at the line's end: its rest reads as structure, which
/// errs towards calling a broken document a template only where it holds
/// template syntax on that line.)
fn structure(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars().peekable();
    let mut previous = ' ';
    while let Some(c) = chars.next() {
        match c {
            '#' if previous == ' ' || previous == '\t' => break,
            '"' | '\'' if matches!(previous, ' ' | '\t' | ':' | '[' | '{' | ',' | '-') => {
                let quote = c;
                while let Some(inner) = chars.next() {
                    match inner {
                        '\\' if quote == '"' => {
                            chars.next();
                        }
                        _ if inner == quote => break,
                        _ => {}
                    }
                }
                out.push(' ');
                previous = quote;
                continue;
            }
            _ => out.push(c),
        }
        previous = c;
    }
    out
}

/// The template syntax of an object that parsed, where the API server
/// takes none: its name, namespace or generateName, or the key of one of
/// its annotations or labels.
pub fn in_metadata(object: &Value) -> Option<Template> {
    let metadata = object.get("metadata")?.as_object()?;
    let names = [
        ("name", "metadata.name"),
        ("generateName", "metadata.generateName"),
        ("namespace", "metadata.namespace"),
    ]
    .into_iter()
    .filter_map(|(field, at)| Some((at, metadata.get(field)?.as_str()?)));
    let map = |field: &str| metadata.get(field).and_then(Value::as_object).into_iter();
    let keys = [
        ("annotations", "metadata.annotations"),
        ("labels", "metadata.labels"),
    ]
    .into_iter()
    .flat_map(move |(field, at)| {
        map(field).flat_map(move |m| m.keys().map(move |k| (at, k.as_str())))
    });
    // A label's value takes no braces either (an annotation's may hold
    // anything).
    let label_values = map("labels").flat_map(|labels| {
        labels
            .values()
            .filter_map(|v| Some(("metadata.labels", v.as_str()?)))
    });
    names
        .chain(keys)
        .chain(label_values)
        .find_map(|(at, text)| {
            let (renderer, _) = syntax(text)?;
            Some(Template {
                renderer,
                at: format!("in `{at}`"),
            })
        })
}

/// The note on a template: what it is, and what to run to check what it
/// renders.
pub fn note(template: &Template) -> String {
    let Template { renderer, at } = template;
    let opening = renderer.opening();
    match renderer {
        Renderer::Helm => format!(
            "a template (`{opening}` {at}, Helm's syntax): check what it renders, for a Helm \
             chart with `helm template RELEASE CHART | policy-runner check … -`"
        ),
        Renderer::Envsubst => format!(
            "a template (`{opening}` {at}, envsubst's syntax): check what it renders, with \
             `envsubst < FILE | policy-runner check … -`"
        ),
        Renderer::Unknown => format!(
            "a template (`{opening}` {at}): check what its tool renders, piped to \
             `policy-runner check … -`"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_renderer_by_its_syntax_at_its_line() {
        let found = |text: &str| in_text(text, 10).map(|t| (t.renderer, t.at));
        assert_eq!(
            found("a: 1\nname: {{ .Release.Name }}\n"),
            Some((Renderer::Helm, "at line 11".to_string()))
        );
        assert_eq!(
            found("a: ${NAMESPACE:-default}\n"),
            Some((Renderer::Envsubst, "at line 10".to_string()))
        );
        // Helm's before envsubst's, wherever each is.
        assert_eq!(
            found("x: ${A}\ny: {{ b }}\n").map(|f| f.0),
            Some(Renderer::Helm)
        );
        assert_eq!(
            found("{% if x %}\na: [\n").map(|f| f.0),
            Some(Renderer::Unknown)
        );
        // Shell's `${1}`, `$${HOME}` and `$HOME` and a lone brace are no
        // template; nor is syntax in a quoted scalar, a comment or a block
        // scalar of a document broken elsewhere.
        for text in [
            "a: ${1}\n",
            "a: $HOME\n",
            "a: $${HOME}\n",
            "a: {b: [\n",
            "a: \"${\"\n",
            "alert: \"{{ $labels.instance }} is down\"\nbroken:\n\tx: 1\n",
            "a: 'x {{ y }}'\n\tb: 1\n",
            "a: 1 # {{ not here }}\n\tb: 1\n",
            "script: |\n  echo ${HOME} {{x}}\n  done\n\tb: 1\n",
        ] {
            assert_eq!(found(text), None, "{text}");
        }
        // After a block scalar ends, structure again.
        assert_eq!(
            found("script: |\n  echo ${HOME}\nname: {{ .Release.Name }}\n").map(|f| f.1),
            Some("at line 12".to_string())
        );
    }

    #[test]
    fn a_parsed_object_is_a_template_where_the_api_server_takes_no_braces() {
        let object =
            |metadata: Value| json!({"apiVersion": "v1", "kind": "Pod", "metadata": metadata});
        for (metadata, at) in [
            (
                json!({"name": "{{ .Release.Name }}-web"}),
                "in `metadata.name`",
            ),
            (
                json!({"name": "a", "namespace": "${NS}"}),
                "in `metadata.namespace`",
            ),
            (
                json!({"name": "a", "annotations": {"{{ .Values.key }}": "v"}}),
                "in `metadata.annotations`",
            ),
            (
                json!({"generateName": "{{ x }}-"}),
                "in `metadata.generateName`",
            ),
            (
                json!({"name": "a", "labels": {"${L}": "v"}}),
                "in `metadata.labels`",
            ),
            // strimzi's Helm metadata: a label's value takes no braces.
            (
                json!({"name": "a", "labels": {"app": "{{ template \"app.name\" . }}"}}),
                "in `metadata.labels`",
            ),
        ] {
            assert_eq!(
                in_metadata(&object(metadata.clone())).map(|t| t.at),
                Some(at.to_string()),
                "{metadata}"
            );
        }
        // An annotation's value may hold anything: a Grafana legend, a
        // script.
        let values = object(json!({
            "name": "dashboards",
            "annotations": {"example.com/legend": "{{pod}}", "example.com/run": "${HOME}"}
        }));
        assert_eq!(in_metadata(&values), None);
        assert_eq!(in_metadata(&json!({"kind": "Pod"})), None);
    }

    #[test]
    fn the_note_names_the_tool_to_run() {
        let note = |renderer| {
            note(&Template {
                renderer,
                at: "at line 3".into(),
            })
        };
        assert!(note(Renderer::Helm).contains("`{{` at line 3, Helm's syntax"));
        assert!(note(Renderer::Helm).contains("helm template"));
        assert!(note(Renderer::Envsubst).contains("envsubst < FILE"));
        let unknown = note(Renderer::Unknown);
        assert!(!unknown.contains("helm") && !unknown.contains("envsubst"));
    }
}
