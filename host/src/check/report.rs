//! What a check prints: a table a person reads at a glance, then one
//! summary line, or JSON for machines; and a progress bar on a terminal.

use std::fmt::Write as _;
use std::io::{self, IsTerminal, Write};

use super::{Outcome, Row};
use policy_manifests::Source;

mod sarif;
mod table;
pub use sarif::sarif;
pub(crate) use table::wrap;
pub use table::{fitted, table, table_for};

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

/// What the policies of a set changed of a row's object, a line a change
/// under the policy that made it; nothing for one policy's row.
fn changes(row: &Row) -> Vec<String> {
    let mut lines = Vec::new();
    for verdict in &row.verdicts {
        let changes = verdict.changes();
        if !changes.is_empty() {
            lines.push(format!("changed by {}:", verdict.policy));
            lines.extend(changes.into_iter().map(|change| format!("  {change}")));
        }
    }
    lines
}

/// A set's rejections that only monitor-mode policies make: logged by
/// policy-server, not made.
fn monitored(row: &Row) -> Vec<String> {
    row.verdicts
        .iter()
        .filter(|v| v.monitor && !v.accepted)
        .map(|v| {
            format!(
                "{} (monitor mode, logged only): {}",
                v.policy,
                v.message.as_deref().unwrap_or("")
            )
        })
        .collect()
}

const MONITOR: &str =
    "the policy is in monitor mode: policy-server would log these rejections, not make them";

/// The rows to print, read back in order: all, or only the rejected ones
/// (the summary still counts every row).
fn shown(outcome: &Outcome, only_rejected: bool) -> impl Iterator<Item = io::Result<Row>> + '_ {
    outcome
        .rows
        .iter()
        .filter(move |row| !(only_rejected && row.as_ref().is_ok_and(|row| row.accepted)))
}

/// GitHub Actions' workflow commands, which GitHub shows on the lines of a
/// pull request: each rejection on its manifest's line (a warning where
/// the policy is in monitor mode, as policy-server only logs it), each
/// unusable document an error, each note and warning a notice; then the
/// summary line.
pub fn github(outcome: &Outcome, mode: &str, out: &mut dyn Write) -> io::Result<()> {
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
        writeln!(out, "::{level}{properties}::{}", data(message))
    };
    let rejection = if mode == "monitor" {
        "warning"
    } else {
        "error"
    };
    for row in shown(outcome, true) {
        let row = row?;
        let mut title = match (row.derived_from.is_empty(), row.audited) {
            (true, false) => row.object.clone(),
            (true, true) => format!("{} (judged as an audit)", row.object),
            (false, _) => format!("{} (from {})", row.object, row.derived_from.join(" → ")),
        };
        if row.failed {
            title.push_str(" (not judged: a policy failed)");
        }
        command(
            if row.failed { "error" } else { rejection },
            Some(&row.source),
            &title,
            row.message.as_deref().unwrap_or("rejected"),
        )?;
    }
    for row in shown(outcome, false) {
        let row = row?;
        let changed = changes(&row);
        if !changed.is_empty() {
            command(
                "notice",
                Some(&row.source),
                &row.object,
                &changed.join("\n"),
            )?;
        }
        for monitored in monitored(&row) {
            command("warning", Some(&row.source), &row.object, &monitored)?;
        }
    }
    for unusable in &outcome.unusable {
        command(
            "error",
            Some(&unusable.source),
            "unusable",
            &unusable.reason,
        )?;
    }
    for note in &outcome.notes {
        command("notice", Some(&note.source), "", &note.text)?;
    }
    for warning in &outcome.warnings {
        command("notice", None, "", warning)?;
    }
    if mode == "monitor" && outcome.rejected() > 0 {
        command("notice", None, "", MONITOR)?;
    }
    writeln!(out, "{}", summary(outcome))
}

/// JUnit XML, which CI systems show as test results: one test case an
/// object (a failure for a rejection, its message and what it is made
/// from), one an unusable document (an error), in one suite named after
/// the policy.
pub fn junit(outcome: &Outcome, policy: &str, out: &mut dyn Write) -> io::Result<()> {
    let (tests, failures, errors) = (
        outcome.rows.len() + outcome.unusable.len(),
        outcome.rejected(),
        outcome.unusable.len() + outcome.failed(),
    );
    write!(
        out,
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"policy-runner check\" tests=\"{tests}\" failures=\"{failures}\" errors=\"{errors}\">\n  <testsuite name=\"{}\" tests=\"{tests}\" failures=\"{failures}\" errors=\"{errors}\">\n",
        xml(policy)
    )?;
    for row in outcome.rows.iter() {
        let row = row?;
        let name = match row.audited {
            true => format!("{} (judged as an audit)", row.object),
            false => row.object.clone(),
        };
        write!(
            out,
            "    <testcase name=\"{}\" classname=\"{}\" file=\"{}\" line=\"{}\"",
            xml(&name),
            xml(&row.source.file),
            xml(&row.source.file),
            row.source.line
        )?;
        let mut said = changes(&row);
        said.extend(monitored(&row));
        let said = match said.is_empty() {
            true => String::new(),
            false => format!("\n      <system-out>{}</system-out>", xml(&said.join("\n"))),
        };
        match row.accepted {
            true if said.is_empty() => out.write_all(b"/>\n")?,
            true => write!(out, ">{said}\n    </testcase>\n")?,
            false if row.failed => write!(
                out,
                ">\n      <error type=\"failed\" message=\"{}\"/>{said}\n    </testcase>\n",
                xml(row.message.as_deref().unwrap_or("a policy failed"))
            )?,
            false => {
                write!(
                    out,
                    ">\n      <failure type=\"rejected\" message=\"{}\">{}</failure>{said}\n    </testcase>\n",
                    xml(row.message.as_deref().unwrap_or("rejected")),
                    xml(&match row.derived_from.is_empty() {
                        true => format!("{name} at {}", row.source),
                        false => format!(
                            "{} from {} at {}",
                            row.object,
                            row.derived_from.join(" → "),
                            row.source
                        ),
                    })
                )?;
            }
        }
    }
    for unusable in &outcome.unusable {
        write!(
            out,
            "    <testcase name=\"{}\" classname=\"{}\" file=\"{}\" line=\"{}\">\n      <error type=\"unusable\" message=\"{}\"/>\n    </testcase>\n",
            xml(&unusable.source.to_string()),
            xml(&unusable.source.file),
            xml(&unusable.source.file),
            unusable.source.line,
            xml(&unusable.reason)
        )?;
    }
    out.write_all(b"  </testsuite>\n</testsuites>\n")
}

/// Text in an XML attribute or element. (A table of five escapes: no
/// library is needed to write XML this simple; the tests read it with one.)
pub(crate) fn xml(text: &str) -> String {
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
    if outcome.policies > 1 {
        line = format!(
            "{} checked by {} policies, {} rejected",
            plural(outcome.rows.len(), "object", "objects"),
            outcome.policies,
            outcome.rejected()
        );
    }
    if outcome.failed() > 0 {
        let _ = write!(line, ", {} not judged (a policy failed)", outcome.failed());
    }
    if outcome.changed > 0 {
        let _ = write!(line, ", {} changed by a mutating policy", outcome.changed);
    }
    if outcome.audited > 0 {
        let _ = write!(line, ", {} judged as an audit", outcome.audited);
    }
    if outcome.not_covered > 0 {
        let _ = write!(
            line,
            ", {} left out by {} rules or selectors",
            outcome.not_covered,
            match outcome.policies > 1 {
                true => "every policy's",
                false => "the policy's",
            }
        );
    }
    if !outcome.notes.is_empty() {
        let _ = write!(line, ", {} skipped", outcome.notes.len());
        match outcome.unrendered() {
            0 => {}
            n => {
                let _ = write!(line, " ({n} to render first)");
            }
        }
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
pub fn json(
    outcome: &Outcome,
    mode: &str,
    only_rejected: bool,
    out: &mut dyn Write,
) -> io::Result<()> {
    // Written from the rows as they are read back, keys in the order a
    // JSON value would sort them: a dump's report is hundreds of
    // megabytes, and neither it nor a value tree of it is ever held.
    #[derive(serde::Serialize)]
    #[serde(rename_all = "camelCase", bound = "Streamed<R>: serde::Serialize")]
    struct Report<'o, R> {
        audited: usize,
        /// Objects a mutating policy changed.
        changed: usize,
        checked: usize,
        /// Objects some policy could not judge.
        failed: usize,
        mode: &'o str,
        not_covered: usize,
        notes: Vec<JsonNote<'o>>,
        rejected: usize,
        results: Streamed<R>,
        unusable: Vec<JsonUnusable<'o>>,
        warnings: &'o [String],
    }
    #[derive(serde::Serialize)]
    #[serde(rename_all = "camelCase")]
    struct JsonRow {
        allowed: bool,
        annotations: Vec<String>,
        /// Judged as an audit: a stored object, sent with no sender.
        audit: bool,
        derived_from: Vec<String>,
        /// A policy could not judge it: `message` says which and why.
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        failed: bool,
        message: Option<String>,
        object: String,
        /// A policy set's: each policy's verdict and patch.
        #[serde(skip_serializing_if = "Vec::is_empty")]
        policies: Vec<super::Verdict>,
        source: String,
    }
    #[derive(serde::Serialize)]
    struct JsonNote<'o> {
        note: &'o str,
        source: String,
        /// What a tool renders, not judged.
        unrendered: bool,
    }
    #[derive(serde::Serialize)]
    struct JsonUnusable<'o> {
        reason: &'o str,
        source: String,
    }
    let report = Report {
        audited: outcome.audited,
        changed: outcome.changed,
        checked: outcome.rows.len(),
        failed: outcome.failed(),
        mode,
        not_covered: outcome.not_covered,
        notes: outcome
            .notes
            .iter()
            .map(|n| JsonNote {
                note: &n.text,
                source: n.source.to_string(),
                unrendered: n.unrendered,
            })
            .collect(),
        rejected: outcome.rejected(),
        results: Streamed::new(shown(outcome, only_rejected).map(|row| {
            row.map(|row| JsonRow {
                allowed: row.accepted,
                failed: row.failed,
                source: row.source.to_string(),
                annotations: row.annotations,
                audit: row.audited,
                derived_from: row.derived_from,
                message: row.message,
                object: row.object,
                policies: row.verdicts,
            })
        })),
        unusable: outcome
            .unusable
            .iter()
            .map(|u| JsonUnusable {
                reason: &u.reason,
                source: u.source.to_string(),
            })
            .collect(),
        warnings: &outcome.warnings,
    };
    serde_json::to_writer_pretty(&mut *out, &report)?;
    out.write_all(b"\n")
}

/// A JSON array written as its items are read, from rows kept on disk;
/// written once.
struct Streamed<I>(std::cell::RefCell<Option<I>>);

impl<I> Streamed<I> {
    fn new(items: I) -> Streamed<I> {
        Streamed(std::cell::RefCell::new(Some(items)))
    }
}

impl<I, T> serde::Serialize for Streamed<I>
where
    I: Iterator<Item = io::Result<T>>,
    T: serde::Serialize,
{
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{Error, SerializeSeq};
        let items = self.0.borrow_mut().take();
        let items = items.ok_or_else(|| S::Error::custom("a stream written twice"))?;
        let mut seq = serializer.serialize_seq(None)?;
        for item in items {
            seq.serialize_element(&item.map_err(S::Error::custom)?)?;
        }
        seq.end()
    }
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
    use crate::check::Rows;

    /// What a report writes, as text.
    fn text(write: impl FnOnce(&mut Vec<u8>) -> io::Result<()>) -> String {
        let mut out = Vec::new();
        write(&mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    /// A row judged as an audit says so in every output, and a row that
    /// is not says nothing of it.
    #[test]
    fn an_audited_row_says_so_everywhere() {
        let row = |audited: bool, accepted: bool| Row {
            object: "Pod shop/stored".to_string(),
            derived_from: Vec::new(),
            source: Source {
                file: "dump.yaml".to_string(),
                line: 9,
                item: Some(0),
            },
            accepted,
            failed: false,
            message: (!accepted).then(|| "lacks required annotations".to_string()),
            annotations: Vec::new(),
            audited,
            verdicts: Vec::new(),
        };
        let make = |audited: bool, accepted: bool| Outcome {
            rows: Rows::from(vec![row(audited, accepted)]),
            audited: usize::from(audited),
            ..Outcome::default()
        };
        for audited in [true, false] {
            let outcome = make(audited, false);
            let outputs = [
                text(|out| table::table_for(&outcome, "protect", false, Some(100), false, out)),
                text(|out| github(&outcome, "protect", out)),
                text(|out| junit(&outcome, "p", out)),
                text(|out| sarif(&outcome, "protect", "p", out)),
            ];
            for output in outputs {
                assert_eq!(output.contains("as an audit"), audited, "{output}");
            }
            let report: serde_json::Value =
                serde_json::from_str(&text(|out| json(&outcome, "protect", false, out))).unwrap();
            assert_eq!(report["results"][0]["audit"], audited);
            // An accepted row, in the outputs that show accepted rows.
            let accepted = make(audited, true);
            for output in [
                text(|out| table::table_for(&accepted, "protect", false, Some(100), false, out)),
                text(|out| junit(&accepted, "p", out)),
            ] {
                assert_eq!(output.contains("as an audit"), audited, "{output}");
            }
        }
    }

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
            failed: false,
            message: Some(message.to_string()),
            annotations: Vec::new(),
            audited: false,
            verdicts: Vec::new(),
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
}
