//! What a check prints: a table a person reads at a glance, then one
//! summary line, or JSON for machines; and a progress bar on a terminal.

use std::fmt::Write as _;
use std::io::IsTerminal;

use serde_json::json;

use super::manifests::Source;
use super::{Outcome, Row};

mod sarif;
pub use sarif::sarif;

/// The table, a heading and a table a manifest file: the line, the object
/// (and what it is made from, under it), the verdict, the message without
/// the object's name; then the input that could not be used, the warnings,
/// and the summary. It fits the terminal (or else `COLUMNS`, or else 120
/// columns): long cells wrap inside their column, so the verdict stays in
/// view. Coloured on a terminal, unless `NO_COLOR` is set.
pub fn table(outcome: &Outcome, mode: &str, only_rejected: bool) -> String {
    let terminal = std::io::stdout().is_terminal();
    let colour = terminal && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
    // A terminal that says no width (a pseudo-terminal nobody sized) is
    // taken as none.
    let measured = match terminal {
        true => comfy_table::Table::new().width().filter(|&w| w >= 40),
        false => None,
    };
    let width = measured.unwrap_or_else(|| {
        std::env::var("COLUMNS")
            .ok()
            .and_then(|c| c.parse::<u16>().ok())
            .filter(|&w| w >= 40)
            .unwrap_or(120)
    });
    table_for(outcome, mode, only_rejected, Some(width), colour)
}

/// [`table`] at a given width (`None`: as wide as the rows) and colouring.
pub fn table_for(
    outcome: &Outcome,
    mode: &str,
    only_rejected: bool,
    width: Option<u16>,
    colour: bool,
) -> String {
    use comfy_table::{Cell, Color, ContentArrangement, Table, presets};
    let rows: Vec<&Row> = shown(outcome, only_rejected).collect();
    let mut out = String::new();
    let mut start = 0;
    while start < rows.len() {
        let file = &rows[start].source.file;
        let end = rows[start..]
            .iter()
            .position(|row| &row.source.file != file)
            .map_or(rows.len(), |n| start + n);
        let mut table = Table::new();
        table
            .load_style(presets::NOTHING)
            .set_content_arrangement(ContentArrangement::Dynamic)
            .set_header(["LINE", "OBJECT", "VERDICT", "MESSAGE"]);
        match colour {
            true => table.enforce_styling(),
            false => table.force_no_tty(),
        };
        if let Some(width) = width {
            table.set_width(width);
        }
        for row in &rows[start..end] {
            let line = match row.source.item {
                Some(item) => format!("{} [{item}]", row.source.line),
                None => row.source.line.to_string(),
            };
            let object = match row.derived_from.is_empty() {
                true => row.object.clone(),
                false => format!("{}\n  from {}", row.object, row.derived_from.join(" → ")),
            };
            let (verdict, colour) = match row.accepted {
                true => ("accepted", Color::Green),
                false => ("rejected", Color::Red),
            };
            table.add_row([
                Cell::new(line),
                Cell::new(object),
                Cell::new(verdict).fg(colour),
                Cell::new(without_subject(row)),
            ]);
        }
        let heading = match file.as_str() {
            "-" => "standard input",
            file => file,
        };
        let _ = writeln!(out, "{heading}");
        for line in table.lines() {
            let _ = writeln!(out, "{}", line.trim_end());
        }
        out.push('\n');
        start = end;
    }
    for unusable in &outcome.unusable {
        let _ = writeln!(out, "{}: {}", unusable.source, unusable.reason);
    }
    for note in &outcome.notes {
        let _ = writeln!(out, "note: {}: {}", note.source, note.text);
    }
    for warning in &outcome.warnings {
        let _ = writeln!(out, "warning: {warning}");
    }
    if mode == "monitor" {
        let _ = writeln!(out, "note: {MONITOR}");
    }
    out.push_str(&summary(outcome));
    out.push('\n');
    out
}

/// A row's message without the object it names, which the row names
/// already: `Pod "shop/web" lacks …` reads `lacks …` in the row of
/// `Pod shop/web`. (The JSON and the other outputs keep it whole.)
fn without_subject(row: &Row) -> &str {
    let message = row.message.as_deref().unwrap_or("");
    let Some((kind, name)) = row.object.split_once(' ') else {
        return message;
    };
    let subject = format!("{kind} \"{name}\" ");
    message.strip_prefix(subject.as_str()).unwrap_or(message)
}

const MONITOR: &str =
    "the policy is in monitor mode: policy-server would log these rejections, not make them";

/// The rows to print: all, or only the rejected ones (the summary still
/// counts every row).
fn shown(outcome: &Outcome, only_rejected: bool) -> impl Iterator<Item = &Row> {
    outcome
        .rows
        .iter()
        .filter(move |row| !(only_rejected && row.accepted))
}

/// GitHub Actions' workflow commands, which GitHub shows on the lines of a
/// pull request: each rejection on its manifest's line (a warning where
/// the policy is in monitor mode, as policy-server only logs it), each
/// unusable document an error, each note and warning a notice; then the
/// summary line.
pub fn github(outcome: &Outcome, mode: &str) -> String {
    let mut out = String::new();
    let mut command = |level: &str, source: Option<&Source>, title: &str, message: &str| {
        let mut properties = Vec::new();
        if let Some(source) = source.filter(|s| s.file != "-") {
            properties.push(format!("file={}", property(&source.file)));
            properties.push(format!("line={}", source.line));
        }
        if !title.is_empty() {
            properties.push(format!("title={}", property(title)));
        }
        let properties = match properties.is_empty() {
            true => String::new(),
            false => format!(" {}", properties.join(",")),
        };
        let _ = writeln!(out, "::{level}{properties}::{}", data(message));
    };
    let rejection = if mode == "monitor" {
        "warning"
    } else {
        "error"
    };
    for row in shown(outcome, true) {
        let title = match row.derived_from.is_empty() {
            true => row.object.clone(),
            false => format!("{} (from {})", row.object, row.derived_from.join(" → ")),
        };
        command(
            rejection,
            Some(&row.source),
            &title,
            row.message.as_deref().unwrap_or("rejected"),
        );
    }
    for unusable in &outcome.unusable {
        command(
            "error",
            Some(&unusable.source),
            "unusable",
            &unusable.reason,
        );
    }
    for note in &outcome.notes {
        command("notice", Some(&note.source), "", &note.text);
    }
    for warning in &outcome.warnings {
        command("notice", None, "", warning);
    }
    if mode == "monitor" {
        command("notice", None, "", MONITOR);
    }
    out.push_str(&summary(outcome));
    out.push('\n');
    out
}

/// JUnit XML, which CI systems show as test results: one test case an
/// object (a failure for a rejection, its message and what it is made
/// from), one an unusable document (an error), in one suite named after
/// the policy.
pub fn junit(outcome: &Outcome, policy: &str) -> String {
    let mut cases = String::new();
    for row in &outcome.rows {
        let _ = write!(
            cases,
            "    <testcase name=\"{}\" classname=\"{}\" file=\"{}\" line=\"{}\"",
            xml(&row.object),
            xml(&row.source.file),
            xml(&row.source.file),
            row.source.line
        );
        match row.accepted {
            true => cases.push_str("/>\n"),
            false => {
                let _ = write!(
                    cases,
                    ">\n      <failure type=\"rejected\" message=\"{}\">{}</failure>\n    </testcase>\n",
                    xml(row.message.as_deref().unwrap_or("rejected")),
                    xml(&match row.derived_from.is_empty() {
                        true => format!("{} at {}", row.object, row.source),
                        false => format!(
                            "{} from {} at {}",
                            row.object,
                            row.derived_from.join(" → "),
                            row.source
                        ),
                    })
                );
            }
        }
    }
    for unusable in &outcome.unusable {
        let _ = write!(
            cases,
            "    <testcase name=\"{}\" classname=\"{}\" file=\"{}\" line=\"{}\">\n      <error type=\"unusable\" message=\"{}\"/>\n    </testcase>\n",
            xml(&unusable.source.to_string()),
            xml(&unusable.source.file),
            xml(&unusable.source.file),
            unusable.source.line,
            xml(&unusable.reason)
        );
    }
    let (tests, failures, errors) = (
        outcome.rows.len() + outcome.unusable.len(),
        outcome.rejected(),
        outcome.unusable.len(),
    );
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"policy-runner check\" tests=\"{tests}\" failures=\"{failures}\" errors=\"{errors}\">\n  <testsuite name=\"{}\" tests=\"{tests}\" failures=\"{failures}\" errors=\"{errors}\">\n{cases}  </testsuite>\n</testsuites>\n",
        xml(policy)
    )
}

/// Text in an XML attribute or element. (A table of five escapes: no
/// library is needed to write XML this simple; the tests read it with one.)
fn xml(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            // XML 1.0 has no control characters but these.
            c if c.is_control() && !matches!(c, '\t' | '\n' | '\r') => {
                let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out
}

/// A workflow command's message, escaped as GitHub reads it.
fn data(text: &str) -> String {
    text.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// A workflow command's property value: its separators escaped too.
fn property(text: &str) -> String {
    data(text).replace(':', "%3A").replace(',', "%2C")
}

/// `N objects checked, M rejected`, and what else happened.
pub fn summary(outcome: &Outcome) -> String {
    let plural = |n: usize, one: &str, many: &str| match n {
        1 => format!("1 {one}"),
        n => format!("{n} {many}"),
    };
    let mut line = format!(
        "{} checked, {} rejected",
        plural(outcome.rows.len(), "object", "objects"),
        outcome.rejected()
    );
    if outcome.not_covered > 0 {
        let _ = write!(
            line,
            ", {} left out by the policy's rules or selectors",
            outcome.not_covered
        );
    }
    if !outcome.notes.is_empty() {
        let _ = write!(line, ", {} skipped", outcome.notes.len());
    }
    if !outcome.unusable.is_empty() {
        let _ = write!(
            line,
            ", {}",
            plural(
                outcome.unusable.len(),
                "unusable document",
                "unusable documents"
            )
        );
    }
    line
}

/// The outcome as one JSON document.
pub fn json(outcome: &Outcome, mode: &str, only_rejected: bool) -> String {
    let rows: Vec<_> = shown(outcome, only_rejected)
        .map(|row| {
            json!({
                "object": row.object,
                "derivedFrom": row.derived_from,
                "source": row.source.to_string(),
                "allowed": row.accepted,
                "message": row.message,
                "annotations": row.annotations,
            })
        })
        .collect();
    let unusable: Vec<_> = outcome
        .unusable
        .iter()
        .map(|u| json!({"source": u.source.to_string(), "reason": u.reason}))
        .collect();
    let notes: Vec<_> = outcome
        .notes
        .iter()
        .map(|n| json!({"source": n.source.to_string(), "note": n.text}))
        .collect();
    let document = json!({
        "results": rows,
        "unusable": unusable,
        "notes": notes,
        "warnings": outcome.warnings,
        "mode": mode,
        "checked": outcome.rows.len(),
        "rejected": outcome.rejected(),
        "notCovered": outcome.not_covered,
    });
    serde_json::to_string_pretty(&document).unwrap_or_default() + "\n"
}

/// A bar on standard error, redrawn as the objects of the input are done:
/// only where standard error is a terminal, never in CI logs, and only for
/// inputs long enough to wait for.
pub struct Progress {
    bar: Option<indicatif::ProgressBar>,
}

impl Progress {
    pub fn new(total_hint: usize) -> Progress {
        let terminal = std::io::stderr().is_terminal() && std::env::var_os("CI").is_none();
        let bar = (terminal && total_hint >= 500).then(|| {
            let bar = indicatif::ProgressBar::with_draw_target(
                Some(total_hint as u64),
                indicatif::ProgressDrawTarget::stderr(),
            );
            if let Ok(style) =
                indicatif::ProgressStyle::with_template("checking [{bar:30}] {pos}/{len} objects")
            {
                bar.set_style(style.progress_chars("#> "));
            }
            bar
        });
        Progress { bar }
    }

    pub fn update(&mut self, done: usize, total: usize) {
        let Some(bar) = &self.bar else {
            return;
        };
        bar.set_length(total as u64);
        bar.set_position(done as u64);
        if done == total {
            // The bar is gone before the report is printed.
            bar.finish_and_clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_says_its_object_once() {
        let row = |object: &str, message: &str| Row {
            object: object.to_string(),
            derived_from: Vec::new(),
            source: Source {
                file: "m.yaml".to_string(),
                line: 1,
                item: None,
            },
            accepted: false,
            message: Some(message.to_string()),
            annotations: Vec::new(),
        };
        let namespaced = row(
            "Pod shop/web",
            "Pod \"shop/web\" lacks required annotations",
        );
        assert_eq!(without_subject(&namespaced), "lacks required annotations");
        let cluster = row(
            "Namespace shop",
            "Namespace \"shop\" carries forbidden annotations",
        );
        assert_eq!(without_subject(&cluster), "carries forbidden annotations");
        let group = row(
            "Pod shop/web",
            "group says no (a: Pod \"shop/web\" lacks x)",
        );
        assert_eq!(
            without_subject(&group),
            "group says no (a: Pod \"shop/web\" lacks x)"
        );
    }

    #[test]
    fn xml_text_escapes_its_five_characters_and_controls() {
        assert_eq!(xml("a&<b>\"'c"), "a&amp;&lt;b&gt;&quot;&apos;c");
        assert_eq!(xml("tab\there\u{1}"), "tab\there\\u{1}");
    }

    #[test]
    fn workflow_commands_escape_what_github_reads_as_syntax() {
        assert_eq!(data("50% of a\r\nline"), "50%25 of a%0D%0Aline");
        assert_eq!(property("a:b,c%"), "a%3Ab%2Cc%25");
    }

    fn outcome() -> Outcome {
        let row = |file: &str, object: &str, from: &[&str], accepted: bool, message: &str| Row {
            object: object.to_string(),
            derived_from: from.iter().map(|f| f.to_string()).collect(),
            source: Source {
                file: file.to_string(),
                line: 7,
                item: None,
            },
            accepted,
            message: (!accepted).then(|| message.to_string()),
            annotations: Vec::new(),
        };
        let long = "carries annotations outside the allowed list \"example.com/*\"; remove \"deployment.kubernetes.io/desired-replicas\", \"deployment.kubernetes.io/max-replicas\", \"deployment.kubernetes.io/revision\"";
        Outcome {
            rows: vec![
                row("deploy/a.yaml", "Deployment shop/web", &[], true, ""),
                row(
                    "deploy/a.yaml",
                    "ReplicaSet shop/web-796cb6795c",
                    &["Deployment shop/web"],
                    false,
                    long,
                ),
                row(
                    "deploy/b.yaml",
                    "Pod shop/db-0",
                    &["StatefulSet shop/db"],
                    true,
                    "",
                ),
            ],
            ..Outcome::default()
        }
    }

    /// At any width the lines fit and every verdict shows; each file has its
    /// heading.
    #[test]
    fn the_table_fits_its_width_and_keeps_the_verdicts() {
        for width in [60u16, 80, 100, 200] {
            let text = table_for(&outcome(), "protect", false, Some(width), false);
            let (table, _) = text.split_once("\n3 objects").unwrap_or((&text, ""));
            for line in table.lines() {
                assert!(
                    line.chars().count() <= width as usize,
                    "{width}: {line:?} is {} long",
                    line.chars().count()
                );
            }
            assert_eq!(text.matches("accepted").count(), 2, "{text}");
            assert_eq!(text.matches("rejected").count(), 2, "{text}"); // and the summary
            assert!(text.starts_with("deploy/a.yaml\n"), "{text}");
            assert!(text.contains("\n\ndeploy/b.yaml\n"), "{text}");
            // The whole message is there, wrapped or not.
            let words: String = text.split_whitespace().collect();
            assert!(
                words.contains("\"deployment.kubernetes.io/revision\""),
                "{text}"
            );
        }
    }

    /// Colour only when asked: the verdicts in green and red.
    #[test]
    fn colour_only_when_asked() {
        let plain = table_for(&outcome(), "protect", false, Some(100), false);
        assert!(!plain.contains('\u{1b}'), "{plain}");
        let coloured = table_for(&outcome(), "protect", false, Some(100), true);
        // Red and green, each reset after its cell.
        assert!(
            coloured.contains("\u{1b}[38;5;9m rejected \u{1b}[39m"),
            "{coloured:?}"
        );
        assert_eq!(
            coloured
                .matches("\u{1b}[38;5;10m accepted \u{1b}[39m")
                .count(),
            2
        );
    }
}
