//! What `test` prints: a table, JSON or JUnit XML, and the summary line.

use std::fmt::Write as _;

use serde_json::json;

use super::Outcome;
use super::cases::Row;
use crate::check::report::xml;

fn shown(outcome: &Outcome, fail_only: bool) -> impl Iterator<Item = &Row> {
    outcome
        .rows
        .iter()
        .filter(move |row| !fail_only || !row.passed)
}

fn got(row: &Row) -> &'static str {
    row.got.map_or("-", |got| got.as_str())
}

/// `N passed, M failed`, and the rows `--run` left out.
pub fn summary(outcome: &Outcome) -> String {
    let mut line = format!("{} passed, {} failed", outcome.passed(), outcome.failed());
    if outcome.left_out > 0 {
        let _ = write!(line, ", {} left out by --run", outcome.left_out);
    }
    match outcome.errors.len() {
        0 => {}
        1 => line.push_str(", 1 error"),
        n => {
            let _ = write!(line, ", {n} errors");
        }
    }
    line
}

/// TEST | POLICY | OBJECT | REQUEST | EXPECTED | GOT | REASON, plain as
/// `check`'s table, fitted to the terminal by wrapping the reason alone,
/// then the summary line. On a terminal, what was got is green where it
/// was expected and red where not.
pub fn table(outcome: &Outcome, fail_only: bool) -> String {
    let (width, colour) = crate::check::report::fitted();
    table_for(outcome, fail_only, width, colour)
}

/// [`table`] at a given width and colouring.
pub fn table_for(outcome: &Outcome, fail_only: bool, width: u16, colour: bool) -> String {
    use comfy_table::{Cell, Color, ColumnConstraint, ContentArrangement, Table, presets};
    let mut table = Table::new();
    table
        .load_style(presets::NOTHING)
        .set_content_arrangement(ContentArrangement::Dynamic)
        .set_width(width)
        .set_header([
            "TEST", "POLICY", "OBJECT", "REQUEST", "EXPECTED", "GOT", "REASON",
        ]);
    match colour {
        true => table.enforce_styling(),
        false => table.force_no_tty(),
    };
    let mut any = false;
    // The widest cell of each column but the reason.
    let mut widths = [4, 6, 6, 7, 8, 3];
    for row in shown(outcome, fail_only) {
        any = true;
        let cells = [
            &row.test,
            &row.policy,
            &row.object,
            &row.request(),
            row.expected.as_str(),
            got(row),
        ];
        for (width, cell) in widths.iter_mut().zip(cells) {
            *width = (*width).max(cell.chars().count() + 2);
        }
        let (got, colour) = match row.passed {
            true => (got(row).to_string(), Color::Green),
            false => (format!("{} ✗", got(row)), Color::Red),
        };
        table.add_row([
            Cell::new(&row.test),
            Cell::new(&row.policy),
            Cell::new(&row.object),
            Cell::new(row.request()),
            Cell::new(row.expected.as_str()),
            Cell::new(got).fg(colour),
            Cell::new(&row.reason),
        ]);
    }
    // Names are never broken, only the reason wraps, where the terminal
    // leaves the reason 30 columns; else every column wraps.
    if widths.iter().sum::<usize>() + 32 <= usize::from(width) {
        table.set_constraints(std::iter::repeat_n(ColumnConstraint::ContentWidth, 6));
    }
    let mut out = String::new();
    if any {
        for line in table.lines() {
            let _ = writeln!(out, "{}", line.trim_end());
        }
    }
    let _ = writeln!(out, "{}", summary(outcome));
    out
}

/// One JSON document: each row, the errors, the notes and the counts.
pub fn json(outcome: &Outcome, fail_only: bool) -> String {
    let rows: Vec<_> = shown(outcome, fail_only)
        .map(|row| {
            json!({
                "test": row.test,
                "file": row.file,
                "policy": row.policy,
                "object": row.object,
                "operation": row.operation,
                "sender": row.sender,
                "oldResource": row.old_resource,
                "expected": row.expected.as_str(),
                "got": row.got.map(|g| g.as_str()),
                "passed": row.passed,
                "reason": row.reason,
            })
        })
        .collect();
    let document = json!({
        "results": rows,
        "errors": outcome.errors,
        "notes": outcome.notes,
        "summary": {
            "passed": outcome.passed(),
            "failed": outcome.failed(),
            "leftOut": outcome.left_out,
            "errors": outcome.errors.len(),
        },
    });
    serde_json::to_string_pretty(&document).unwrap_or_default() + "\n"
}

/// JUnit XML as CI systems read it (the Ant/Surefire form: `testsuites`,
/// a `testsuite` a test file with its counts, a `testcase` a row, a
/// `failure` for each row that failed), and a suite for the errors, an
/// `error` each.
pub fn junit(outcome: &Outcome, fail_only: bool) -> String {
    let mut suites = String::new();
    let rows: Vec<&Row> = shown(outcome, fail_only).collect();
    let mut start = 0;
    while start < rows.len() {
        let file = &rows[start].file;
        let end = rows[start..]
            .iter()
            .position(|row| &row.file != file)
            .map_or(rows.len(), |n| start + n);
        let group = &rows[start..end];
        let failures = group.iter().filter(|r| !r.passed).count();
        let _ = writeln!(
            suites,
            "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{failures}\" errors=\"0\" skipped=\"0\" file=\"{}\">",
            xml(&group[0].test),
            group.len(),
            xml(file)
        );
        for row in group {
            let _ = write!(
                suites,
                "    <testcase name=\"{}\" classname=\"{}\" file=\"{}\"",
                xml(&format!("{} {} {}", row.policy, row.object, row.request())),
                xml(&row.test),
                xml(&row.file)
            );
            match row.passed {
                true => suites.push_str("/>\n"),
                false => {
                    let _ = write!(
                        suites,
                        ">\n      <failure type=\"expected {}\" message=\"expected {}, got {}\">{}</failure>\n    </testcase>\n",
                        row.expected.as_str(),
                        row.expected.as_str(),
                        got(row),
                        xml(&row.reason)
                    );
                }
            }
        }
        suites.push_str("  </testsuite>\n");
        start = end;
    }
    if !outcome.errors.is_empty() {
        let _ = writeln!(
            suites,
            "  <testsuite name=\"errors\" tests=\"{0}\" failures=\"0\" errors=\"{0}\" skipped=\"0\">",
            outcome.errors.len()
        );
        for error in &outcome.errors {
            let _ = writeln!(
                suites,
                "    <testcase name=\"{}\" classname=\"errors\">\n      <error type=\"unusable\" message=\"{}\"/>\n    </testcase>",
                xml(error.split(": ").next().unwrap_or(error)),
                xml(error)
            );
        }
        suites.push_str("  </testsuite>\n");
    }
    let shown = rows.len();
    let failures = rows.iter().filter(|r| !r.passed).count();
    let errors = outcome.errors.len();
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"policy-runner test\" tests=\"{}\" failures=\"{failures}\" errors=\"{errors}\">\n{suites}</testsuites>\n",
        shown + errors
    )
}
