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
/// `check`'s table, then the summary line. A row that passed needs no
/// reason. Cells wrap at spaces only, so that a name, a key or a sender is
/// never cut: where the names leave the reason too little of the width,
/// each row's names and reason stand under each other, beside what was
/// expected and got. With no width (off a terminal, no `COLUMNS`), the
/// table is as wide as its rows. On a terminal, what was got is green
/// where it was expected and red where not.
pub fn table(outcome: &Outcome, fail_only: bool) -> String {
    let (width, colour) = crate::check::report::fitted();
    table_for(outcome, fail_only, width, colour)
}

/// The columns before the reason, and the stacked layout's last header.
const NAMES: [&str; 6] = ["TEST", "POLICY", "OBJECT", "REQUEST", "EXPECTED", "GOT"];
const STACKED: &str = "TEST / POLICY / OBJECT / REQUEST / REASON";
/// The least a reason's column is given beside the names.
const REASON_AT_LEAST: usize = 30;

/// [`table`] at a given width (`None`: as wide as the rows) and colouring.
pub fn table_for(outcome: &Outcome, fail_only: bool, width: Option<u16>, colour: bool) -> String {
    use crate::check::report::wrap;
    use comfy_table::{Cell, Color, ContentArrangement, Table, presets};
    use textwrap::core::display_width;
    let rows: Vec<(&Row, [String; 6], &str)> = shown(outcome, fail_only)
        .map(|row| {
            let got = match row.passed {
                true => got(row).to_string(),
                false => format!("{} ✗", got(row)),
            };
            let reason = match row.passed {
                true => "",
                false => row.reason.as_str(),
            };
            let names = [
                row.test.clone(),
                row.policy.clone(),
                row.object.clone(),
                row.request(),
                row.expected.as_str().to_string(),
                got,
            ];
            (row, names, reason)
        })
        .collect();
    let mut out = String::new();
    if !rows.is_empty() {
        let mut widest = NAMES.map(display_width);
        let mut reason_word = 0;
        for (_, names, reason) in &rows {
            for (widest, name) in widest.iter_mut().zip(names) {
                *widest = (*widest).max(display_width(name));
            }
            let word = reason.split_whitespace().map(display_width).max();
            reason_word = reason_word.max(word.unwrap_or(0));
        }
        // Each column is padded by a space either side.
        let names: usize = widest.iter().map(|w| w + 2).sum();
        // No reason, no column for it; one is given at least its longest
        // word, and REASON_AT_LEAST.
        let reasons = rows.iter().any(|(_, _, reason)| !reason.is_empty());
        let need = match reasons {
            true => REASON_AT_LEAST.max(reason_word),
            false => 0,
        };
        // Side by side, the reason wrapped to what the names leave it
        // (`None`: not at all), or stacked beside what was expected and got.
        enum Layout {
            Columns(Option<usize>),
            Stacked(usize),
        }
        let layout = match width.map(usize::from) {
            None => Layout::Columns(None),
            Some(width) => {
                let left = width.saturating_sub(names + 2 * usize::from(reasons));
                match left >= need {
                    true => Layout::Columns(Some(left)),
                    false => Layout::Stacked(
                        width
                            .saturating_sub(widest[4] + widest[5] + 6)
                            .max(REASON_AT_LEAST),
                    ),
                }
            }
        };
        let mut table = Table::new();
        table
            .load_style(presets::NOTHING)
            .set_content_arrangement(ContentArrangement::Disabled);
        match colour {
            true => table.enforce_styling(),
            false => table.force_no_tty(),
        };
        let colour_of = |row: &Row| match row.passed {
            true => Color::Green,
            false => Color::Red,
        };
        match layout {
            Layout::Columns(reason_width) => {
                let header = NAMES.iter().chain(reasons.then_some(&"REASON"));
                table.set_header(header);
                for (row, [test, policy, object, request, expected, got], reason) in rows {
                    let mut cells = vec![
                        Cell::new(test),
                        Cell::new(policy),
                        Cell::new(object),
                        Cell::new(request),
                        Cell::new(expected),
                        Cell::new(got).fg(colour_of(row)),
                    ];
                    if reasons {
                        cells.push(Cell::new(match reason_width {
                            None => reason.to_string(),
                            Some(at) => wrap(reason, at),
                        }));
                    }
                    table.add_row(cells);
                }
            }
            Layout::Stacked(text) => {
                // Each name on a line of its own, the reason under them.
                table.set_header(["EXPECTED", "GOT", STACKED]);
                for (row, [test, policy, object, request, expected, got], reason) in rows {
                    let mut lines = vec![test];
                    lines.extend([policy, object, request].map(|name| format!("  {name}")));
                    if !reason.is_empty() {
                        lines.push(format!("  {reason}"));
                    }
                    table.add_row([
                        Cell::new(expected),
                        Cell::new(got).fg(colour_of(row)),
                        Cell::new(wrap(&lines.join("\n"), text)),
                    ]);
                }
            }
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suite::file::Verdict;

    fn outcome() -> Outcome {
        let row = |object: &str, sender: Option<&str>, got: Verdict, reason: &str| Row {
            test: "what-the-controllers-make".to_string(),
            file: "deploy/policy-test.yaml".to_string(),
            policy: "require-team-owner".to_string(),
            object: object.to_string(),
            operation: "CREATE".to_string(),
            sender: sender.map(str::to_string),
            old_resource: None,
            expected: Verdict::Pass,
            got: Some(got),
            passed: got == Verdict::Pass,
            reason: reason.to_string(),
        };
        Outcome {
            rows: vec![
                row(
                    "Pod payments/billing-cf896f67-x7k2p",
                    Some("system:serviceaccount:kube-system:replicaset-controller"),
                    Verdict::Pass,
                    "",
                ),
                row(
                    "Deployment payments/billing",
                    None,
                    Verdict::Fail,
                    "Deployment \"payments/billing\" lacks required annotations; add \"team.example.org/owner\"",
                ),
            ],
            ..Outcome::default()
        }
    }

    /// At 60 and 100 columns and at no width at all, every object's name,
    /// sender and quoted key stands whole on one line; a row that passed
    /// shows no reason.
    #[test]
    fn names_and_keys_come_out_whole_on_a_line() {
        let outcome = outcome();
        let whole = [
            "what-the-controllers-make",
            "payments/billing-cf896f67-x7k2p",
            "system:serviceaccount:kube-system:replicaset-controller",
            "payments/billing",
            "\"payments/billing\"",
            "\"team.example.org/owner\"",
        ];
        for width in [Some(60), Some(100), None] {
            let text = table_for(&outcome, false, width, false);
            for name in whole {
                assert!(
                    text.lines().any(|line| line.contains(name)),
                    "{width:?}: {name} cut in\n{text}"
                );
            }
            assert_eq!(text.matches("lacks").count(), 1, "{width:?}\n{text}");
            if let Some(width) = width {
                let longest = whole.iter().map(|w| w.len() + 2).max().unwrap_or(0);
                for line in text.lines() {
                    let n = line.chars().count();
                    assert!(
                        n <= usize::from(width).max(longest + 20),
                        "{width}: {line:?}"
                    );
                }
            }
        }
        // No width: one line a row.
        let text = table_for(&outcome, false, None, false);
        assert_eq!(text.lines().count(), 4, "{text}");
        // Narrow: what was expected and got beside the names, stacked.
        let text = table_for(&outcome, false, Some(60), false);
        assert!(
            text.starts_with(&format!(" EXPECTED  GOT     {STACKED}\n")),
            "{text}"
        );
        // Where all passed, no reason's column.
        let mut passed = self::outcome();
        passed.rows.truncate(1);
        let text = table_for(&passed, false, Some(200), false);
        assert!(!text.contains("REASON"), "{text}");
    }
}
