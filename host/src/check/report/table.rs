//! The table a person reads: a heading and a table a manifest file, fitted
//! to the terminal, then what could not be used, the warnings and the
//! summary line.

use std::io::{self, IsTerminal, Write};

use super::super::{Outcome, Row};
use super::{MONITOR, shown, summary, without_subject};

/// The table, a heading and a table a manifest file: the line, the object
/// (and what it is made from, under it), the verdict, the message without
/// the object's name; then the input that could not be used, the warnings,
/// and the summary. It fits the width [`fitted`] gives: long cells wrap at
/// spaces inside their column, so the verdict stays in view. Coloured on a
/// terminal, unless `NO_COLOR` is set.
pub fn table(
    outcome: &Outcome,
    mode: &str,
    only_rejected: bool,
    out: &mut dyn Write,
) -> io::Result<()> {
    let (width, colour) = fitted();
    table_for(outcome, mode, only_rejected, width, colour, out)
}

/// The width a table is fitted to, and whether to colour it (on a
/// terminal, unless `NO_COLOR` is set).
pub fn fitted() -> (Option<u16>, bool) {
    let terminal = std::io::stdout().is_terminal();
    let colour = terminal && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
    let measured = match terminal {
        true => comfy_table::Table::new().width(),
        false => None,
    };
    let width = width(terminal, measured, std::env::var("COLUMNS").ok().as_deref());
    (width, colour)
}

/// The terminal's width, or else `COLUMNS`; on a terminal that says no
/// width (a pseudo-terminal nobody sized), 120 columns. Off a terminal with
/// no `COLUMNS` (a CI log, a file), none: a table is as wide as its rows,
/// so that a log that wraps lines or a reader who copies a name gets every
/// name and key whole.
fn width(terminal: bool, measured: Option<u16>, columns: Option<&str>) -> Option<u16> {
    let columns = columns.and_then(|c| c.trim().parse::<u16>().ok());
    let width = measured
        .filter(|&w| w >= 40)
        .or(columns.filter(|&w| w >= 40));
    match terminal {
        true => Some(width.unwrap_or(120)),
        false => width,
    }
}

/// [`table`] at a given width (`None`: as wide as the rows) and colouring.
pub fn table_for(
    outcome: &Outcome,
    mode: &str,
    only_rejected: bool,
    width: Option<u16>,
    colour: bool,
    out: &mut dyn Write,
) -> io::Result<()> {
    use comfy_table::{Cell, Color, ContentArrangement, Table, presets};
    // The rows are read twice: once for each file's layout, at widths
    // fixed for the whole file so that its columns line up, then to print
    // them. A file of a cluster dump has rows by the hundred thousand: its
    // table is made in parts, and only a part's rows are held.
    let mut layouts = Vec::new();
    let mut widths: Option<(String, Widths)> = None;
    for row in shown(outcome, only_rejected) {
        let row = row?;
        match &mut widths {
            Some((file, widths)) if *file == row.source.file => widths.add(&row),
            _ => {
                layouts.extend(widths.take().map(|(_, widths)| widths.layout(width)));
                let mut first = Widths::default();
                first.add(&row);
                widths = Some((row.source.file.clone(), first));
            }
        }
    }
    layouts.extend(widths.map(|(_, widths)| widths.layout(width)));
    let mut layouts = layouts.into_iter();
    let mut rows = shown(outcome, only_rejected).peekable();
    while let Some(first) = rows.next() {
        let first = first?;
        let file = first.source.file.clone();
        let layout = layouts
            .next()
            .ok_or_else(|| io::Error::other("the verdicts changed while they were read"))?;
        let heading = match file.as_str() {
            "-" => "standard input",
            file => file,
        };
        writeln!(out, "{heading}")?;
        let mut part = vec![first];
        let mut parts = 0;
        loop {
            let same_file = rows
                .peek()
                .is_some_and(|row| row.as_ref().map_or(true, |row| row.source.file == file));
            if same_file && part.len() < PART {
                part.push(rows.next().expect("peeked")?);
                continue;
            }
            let mut table = Table::new();
            table
                .load_style(presets::NOTHING)
                .set_content_arrangement(ContentArrangement::Disabled);
            if parts == 0 {
                table.set_header(layout.header());
            }
            match colour {
                true => table.enforce_styling(),
                false => table.force_no_tty(),
            };
            for row in &part {
                let colour = match (row.accepted, row.failed) {
                    (true, _) => Color::Green,
                    (false, true) => Color::Magenta,
                    (false, false) => Color::Red,
                };
                let (line, object, verdict, message) = layout.cells(row);
                let verdict = Cell::new(verdict).fg(colour);
                match object {
                    Some(object) => table.add_row([
                        Cell::new(line),
                        Cell::new(object),
                        verdict,
                        Cell::new(message),
                    ]),
                    None => table.add_row([Cell::new(line), verdict, Cell::new(message)]),
                };
            }
            // Every column but the last at its width for the whole file;
            // the last needs none, its lines ending where they end.
            use comfy_table::{ColumnConstraint::Absolute, Width::Fixed};
            let fixed = layout.fixed().into_iter().map(|w| Absolute(Fixed(w + 2)));
            table.set_constraints(fixed);
            for line in table.lines() {
                writeln!(out, "{}", line.trim_end())?;
            }
            parts += 1;
            part.clear();
            if !same_file {
                break;
            }
        }
        writeln!(out)?;
    }
    // The lines under the tables wrap to the same width, their
    // continuations indented.
    // Only at spaces: a path, a command or a name is never cut (at its
    // hyphens, say), and one longer than the line has a line of its own.
    let mut said = |text: String| -> io::Result<()> {
        match width {
            Some(width) => {
                let options = textwrap::Options::new(usize::from(width))
                    .subsequent_indent("  ")
                    .word_splitter(textwrap::WordSplitter::NoHyphenation)
                    .break_words(false);
                for line in textwrap::wrap(&text, options) {
                    writeln!(out, "{line}")?;
                }
                Ok(())
            }
            None => writeln!(out, "{text}"),
        }
    };
    for unusable in &outcome.unusable {
        said(format!("{}: {}", unusable.source, unusable.reason))?;
    }
    for note in &outcome.notes {
        said(format!("note: {}: {}", note.source, note.text))?;
    }
    for warning in &outcome.warnings {
        said(format!("warning: {warning}"))?;
    }
    if mode == "monitor" && outcome.rejected() > 0 {
        said(format!("note: {MONITOR}"))?;
    }
    said(summary(outcome))
}

/// Under an object judged as an audit.
const AUDITED: &str = "as stored: judged as an audit";

/// How many rows a table is made of at most at once.
const PART: usize = 1000;

/// A row's cells: the line (and the place in a List), the object (and
/// what it is made from, under it), the verdict, the message without the
/// object's name.
fn cells(row: &Row) -> [String; 4] {
    let line = match row.source.item {
        Some(item) => format!("{} [{item}]", row.source.line),
        None => row.source.line.to_string(),
    };
    let object = match (row.derived_from.is_empty(), row.audited) {
        (true, false) => row.object.clone(),
        (true, true) => format!("{}\n  {AUDITED}", row.object),
        (false, _) => format!("{}\n  from {}", row.object, row.derived_from.join(" → ")),
    };
    let verdict = match (row.accepted, row.failed) {
        (true, _) => "accepted",
        (false, true) => "failed",
        (false, false) => "rejected",
    };
    let mut message = vec![without_subject(row).to_string()];
    message.extend(super::monitored(row));
    message.extend(super::changes(row));
    message.retain(|line| !line.is_empty());
    [line, object, verdict.to_string(), message.join("\n")]
}

/// The widths of a file's cells so far, as its rows are read: the widest
/// line and the longest word of each column.
#[derive(Debug, Clone, Copy)]
struct Widths {
    widest: [usize; 4],
    longest_word: [usize; 4],
}

impl Default for Widths {
    fn default() -> Widths {
        Widths {
            widest: Layout::HEADER.map(textwrap::core::display_width),
            longest_word: [0; 4],
        }
    }
}

impl Widths {
    fn add(&mut self, row: &Row) {
        use textwrap::core::display_width;
        for (column, cell) in cells(row).iter().enumerate() {
            for line in cell.lines() {
                self.widest[column] = self.widest[column].max(display_width(line));
                let word = line.split_whitespace().map(display_width).max();
                // A continuation of the object's chain is indented.
                let indent = usize::from(line.starts_with(' ')) * 2;
                self.longest_word[column] =
                    self.longest_word[column].max(word.unwrap_or(0) + indent);
            }
        }
    }

    fn layout(self, width: Option<u16>) -> Layout {
        Layout::of(&self, width)
    }
}

/// How one file's table is laid out, as widths of content (padding
/// aside). Cells wrap at spaces only (textwrap): a name, a path or a
/// command is never cut. When the longest words of the object and the
/// message cannot stand side by side in the width, the message goes under
/// the object in one column, so that only a word longer than the line
/// passes it, on a line of its own.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Layout {
    Columns {
        line: usize,
        object: usize,
        verdict: usize,
        message: usize,
    },
    Stacked {
        line: usize,
        verdict: usize,
        text: usize,
    },
}

impl Layout {
    const HEADER: [&str; 4] = ["LINE", "OBJECT", "VERDICT", "MESSAGE"];

    fn of(widths: &Widths, width: Option<u16>) -> Layout {
        let Widths {
            widest,
            longest_word,
        } = *widths;
        let [line, object, verdict, message] = widest;
        let columns = |object, message| Layout::Columns {
            line,
            object,
            verdict,
            message,
        };
        let Some(width) = width else {
            return columns(object, message);
        };
        // Each column is padded by a space either side.
        let left = usize::from(width).saturating_sub(line + verdict + 8);
        if object + message <= left {
            return columns(object, message);
        }
        let [_, object_word, _, message_word] = longest_word;
        if object_word + message_word > left {
            return Layout::Stacked {
                line,
                verdict,
                text: usize::from(width)
                    .saturating_sub(line + verdict + 6)
                    .max(12),
            };
        }
        // The message gets three fifths of what is left, but neither
        // column less than its longest word.
        let object = (left * 2 / 5)
            .max(object_word)
            .min(object)
            .min(left - message_word);
        columns(object, left - object)
    }

    fn header(&self) -> Vec<&'static str> {
        match self {
            Layout::Columns { .. } => Self::HEADER.to_vec(),
            Layout::Stacked { .. } => vec!["LINE", "VERDICT", "OBJECT / MESSAGE"],
        }
    }

    /// The widths of the columns before the last.
    fn fixed(&self) -> Vec<u16> {
        let fixed = match *self {
            Layout::Columns {
                line,
                object,
                verdict,
                ..
            } => vec![line, object, verdict],
            Layout::Stacked { line, verdict, .. } => vec![line, verdict],
        };
        fixed
            .into_iter()
            .map(|w| u16::try_from(w).unwrap_or(u16::MAX))
            .collect()
    }

    /// A row's cells, wrapped: the line, the object (none when stacked),
    /// the verdict, and the message (under the object when stacked).
    fn cells(&self, row: &Row) -> (String, Option<String>, String, String) {
        let [line, object, verdict, message] = cells(row);
        match *self {
            Layout::Columns {
                object: at,
                message: message_at,
                ..
            } => (
                line,
                Some(wrap(&object, at)),
                verdict,
                wrap(&message, message_at),
            ),
            Layout::Stacked { text, .. } => {
                let both = match message.is_empty() {
                    true => object,
                    false => format!("{object}\n{message}"),
                };
                (line, None, verdict, wrap(&both, text))
            }
        }
    }
}

/// `text` wrapped at spaces to `width`, line by line, an indented line's
/// continuations as indented; a word longer than `width` stands alone.
pub(crate) fn wrap(text: &str, width: usize) -> String {
    let mut wrapped = Vec::new();
    for line in text.lines() {
        let indent = &line[..line.len() - line.trim_start().len()];
        let options = textwrap::Options::new(width)
            .initial_indent(indent)
            .subsequent_indent(indent)
            .word_splitter(textwrap::WordSplitter::NoHyphenation)
            .break_words(false);
        wrapped.extend(textwrap::wrap(line.trim_start(), options));
    }
    wrapped.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::Rows;
    use policy_manifests::Source;

    /// The table as text.
    fn table_for(
        outcome: &Outcome,
        mode: &str,
        only_rejected: bool,
        width: Option<u16>,
        colour: bool,
    ) -> String {
        let mut out = Vec::new();
        super::table_for(outcome, mode, only_rejected, width, colour, &mut out).unwrap();
        String::from_utf8(out).unwrap()
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
            failed: false,
            message: (!accepted).then(|| message.to_string()),
            annotations: Vec::new(),
            audited: false,
            verdicts: Vec::new(),
        };
        let long = "carries annotations outside the allowed list \"example.com/*\"; remove \"deployment.kubernetes.io/desired-replicas\", \"deployment.kubernetes.io/max-replicas\", \"deployment.kubernetes.io/revision\"";
        Outcome {
            rows: Rows::from(vec![
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
            ]),
            warnings: vec![
                "names ending in `x7k2p` are illustrative: the API server ends each name made from a `generateName` with five random characters of its own".to_string(),
            ],
            ..Outcome::default()
        }
    }

    /// At any width the lines fit and every verdict shows; each file has its
    /// heading. Cells wrap at spaces only: every word of every object and
    /// message comes out whole, and a line passes the width only to hold a
    /// word longer than its column, alone.
    #[test]
    fn the_table_fits_its_width_and_cuts_no_word() {
        let mut long = outcome();
        let mut rows = long.rows.to_vec();
        rows.push(Row {
            object: format!("Deployment kube-system/{}", "metrics-server-".repeat(5)),
            ..rows[0].clone()
        });
        long.rows = Rows::from(rows);
        let words_of =
            |text: &str| -> Vec<String> { text.split_whitespace().map(str::to_string).collect() };
        let expected: Vec<String> = long
            .rows
            .to_vec()
            .iter()
            .flat_map(|row| {
                let [_, object, _, message] = cells(row);
                words_of(&object).into_iter().chain(words_of(&message))
            })
            .collect();
        for width in [40u16, 50, 60, 80, 100, 200] {
            let text = table_for(&long, "monitor", false, Some(width), false);
            let table = &text[..text.find("warning:").unwrap()];
            for line in table.lines() {
                let long = line.chars().count() > usize::from(width);
                assert!(
                    !long || line.split_whitespace().count() == 1,
                    "{width}: {line:?} is {} long",
                    line.chars().count()
                );
            }
            assert_eq!(text.matches("accepted").count(), 3, "{text}");
            assert_eq!(text.matches("rejected").count(), 2, "{text}"); // and the summary
            assert!(text.starts_with("deploy/a.yaml\n"), "{text}");
            assert!(text.contains("\n\ndeploy/b.yaml\n"), "{text}");
            let shown = words_of(table);
            for word in &expected {
                assert!(shown.contains(word), "{width}: {word} cut in\n{text}");
            }
        }
        // Where they cannot stand side by side, the message goes under
        // the object.
        let narrow = table_for(&long, "monitor", false, Some(40), false);
        assert!(
            narrow.contains(" LINE  VERDICT   OBJECT / MESSAGE\n"),
            "{narrow}"
        );
        // Where the words fit, the table does.
        let text = table_for(&outcome(), "monitor", false, Some(80), false);
        assert!(
            text.lines().all(|line| line.chars().count() <= 80),
            "{text}"
        );
        assert!(text.contains("LINE  OBJECT"), "{text}");
    }

    /// The lines under the tables, the summary included, fit the width and
    /// wrap only at spaces: every word of a path or a command comes out
    /// whole, and one longer than the line stands on a line of its own.
    #[test]
    fn the_lines_under_the_tables_wrap_at_spaces_only() {
        let mut outcome = outcome();
        let path = "charts/metrics-server/templates/a-rather-long-deployment-name.yaml";
        outcome.notes.push(policy_manifests::Note {
            source: Source {
                file: path.to_string(),
                line: 1,
                item: None,
            },
            text: "a template: check what it renders, for a Helm chart with `helm template RELEASE CHART | policy-runner check … -`".to_string(),
            unrendered: true,
        });
        outcome.not_covered = 1234;
        outcome.audited = 56;
        for width in [40u16, 60, 100] {
            let text = table_for(&outcome, "protect", false, Some(width), false);
            let tail: Vec<&str> = text
                .lines()
                .skip_while(|l| !l.starts_with("note:"))
                .collect();
            assert!(!tail.is_empty(), "{text}");
            for line in &tail {
                let words = line.split_whitespace().count();
                assert!(
                    line.chars().count() <= width as usize || words == 1,
                    "{width}: {line:?}"
                );
            }
            let words: Vec<&str> = tail.iter().flat_map(|l| l.split_whitespace()).collect();
            for whole in ["policy-runner", &format!("{path}:1:"), "left", "selectors,"] {
                assert!(words.contains(&whole), "{width}: {whole} in {tail:#?}");
            }
            assert!(
                words
                    .join(" ")
                    .contains("1234 left out by the policy's rules"),
                "{tail:#?}"
            );
        }
    }

    /// Off a terminal and without `COLUMNS` (a CI log) a table takes the
    /// width of its rows; `COLUMNS` sets it; a terminal's own width comes
    /// first, and one that says none is taken as 120 columns.
    #[test]
    fn a_width_comes_from_the_terminal_or_columns_or_the_rows() {
        assert_eq!(width(false, None, None), None);
        assert_eq!(width(false, None, Some("")), None);
        assert_eq!(width(false, None, Some("wide")), None);
        assert_eq!(width(false, None, Some("100")), Some(100));
        assert_eq!(width(false, None, Some("20")), None);
        assert_eq!(width(true, Some(90), Some("100")), Some(90));
        assert_eq!(width(true, Some(0), None), Some(120));
        assert_eq!(width(true, None, Some("60")), Some(60));
    }

    /// At 60 and 100 columns and at no width at all, every object's name
    /// and every quoted key of the messages stands whole on one line, to
    /// be read and copied from a CI log.
    #[test]
    fn names_and_keys_come_out_whole_on_a_line() {
        let mut outcome = outcome();
        let mut rows = outcome.rows.to_vec();
        rows.push(Row {
            object: "Pod payments/billing-cf896f67-x7k2p".to_string(),
            derived_from: vec!["ReplicaSet payments/billing-cf896f67".to_string()],
            accepted: false,
            message: Some("carries annotations outside the allowed list \"team.example.org/owner\"; remove \"kubectl.kubernetes.io/restartedAt\"".to_string()),
            ..rows[0].clone()
        });
        outcome.rows = Rows::from(rows);
        let rows = outcome.rows.to_vec();
        let names: Vec<&str> = rows
            .iter()
            .filter_map(|row| row.object.split(' ').nth(1))
            .collect();
        let keys: Vec<&str> = rows
            .iter()
            .filter_map(|row| row.message.as_deref())
            .flat_map(|message| message.split('"').skip(1).step_by(2))
            .collect();
        assert_eq!(names.len(), 4);
        assert_eq!(keys.len(), 6);
        for width in [Some(60), Some(100), None] {
            let text = table_for(&outcome, "protect", false, width, false);
            for name in &names {
                assert!(
                    text.lines().any(|line| line.contains(name)),
                    "{width:?}: {name} cut in\n{text}"
                );
            }
            for key in &keys {
                let quoted = format!("\"{key}\"");
                assert!(
                    text.lines().any(|line| line.contains(&quoted)),
                    "{width:?}: {quoted} cut in\n{text}"
                );
            }
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

    /// A file of a dump is laid out in parts whose columns line up: one
    /// header, every verdict at the same column, every line in the width.
    #[test]
    fn a_long_table_is_made_in_parts_that_line_up() {
        let mut outcome = outcome();
        let template = outcome.rows.to_vec()[1].clone();
        let rows: Vec<Row> = (0..2 * PART + 17)
            .map(|i| {
                let mut row = template.clone();
                row.object = format!("ReplicaSet shop/web-{}", "x".repeat(i % 13));
                row.source.line = i + 1;
                row.accepted = i % 3 != 0;
                row
            })
            .collect();
        outcome.rows = Rows::from(rows);
        for width in [Some(80), Some(100), None] {
            let text = table_for(&outcome, "protect", false, width, false);
            assert_eq!(text.matches("LINE").count(), 1);
            let verdicts: Vec<usize> = text
                .lines()
                .take_while(|line| !line.is_empty())
                .filter_map(|line| {
                    let at = line.find(" accepted").or_else(|| line.find(" rejected"))?;
                    Some(line[..at].chars().count())
                })
                .collect();
            assert_eq!(verdicts.len(), outcome.rows.len(), "{width:?}");
            assert!(verdicts.iter().all(|&at| at == verdicts[0]), "{width:?}");
            if let Some(width) = width {
                assert!(
                    text.lines()
                        .all(|line| line.chars().count() <= usize::from(width)),
                    "{width}"
                );
            }
        }
    }
}
