//! Rendering a `doctor` result: one row per check, its severity and what to do.

use crate::report::table::{Align, Table};
use crate::report::{to_json, Format};
use crate::wire::doctor::{Doctor, Severity};

fn word(s: Severity) -> &'static str {
    match s {
        Severity::Ok => "ok",
        Severity::Info => "info",
        Severity::Warning => "warning",
        Severity::Error => "error",
    }
}

/// The findings as one table: severity, check, finding, and (markdown, CSV) what to do.
pub fn table(d: &Doctor, with_action: bool) -> Table {
    let mut cols = vec![
        ("severity", Align::Left),
        ("check", Align::Left),
        ("finding", Align::Left),
    ];
    if with_action {
        cols.push(("what to do", Align::Left));
    }
    let mut t = Table::new(&cols);
    for f in &d.findings {
        let mut row = vec![
            word(f.severity).to_owned(),
            f.check.clone(),
            f.message.clone(),
        ];
        if with_action {
            row.push(f.action.clone().unwrap_or_default());
        }
        t.row(row);
    }
    t
}

/// What to do, one line per finding that has an action (the terminal's table stays
/// narrow enough to read).
fn actions(d: &Doctor) -> String {
    let lines: Vec<String> = d
        .findings
        .iter()
        .filter_map(|f| f.action.as_ref().map(|a| format!("  {}: {a}", f.check)))
        .collect();
    if lines.is_empty() {
        String::new()
    } else {
        format!("\nwhat to do:\n{}\n", lines.join("\n"))
    }
}

/// The one-line verdict under the table.
fn verdict(d: &Doctor) -> String {
    let count = |s: Severity| d.findings.iter().filter(|f| f.severity == s).count();
    format!(
        "{}: {} error(s), {} warning(s){}",
        if d.passed { "passed" } else { "FAILED" },
        count(Severity::Error),
        count(Severity::Warning),
        if d.strict {
            " (--strict: warnings fail)"
        } else {
            " (errors fail; --strict fails on warnings too)"
        }
    )
}

/// Render in the requested format.
pub fn render(d: &Doctor, format: Format, fit: crate::report::fit::Fit) -> String {
    match format {
        Format::Json => to_json(d),
        Format::Table => format!(
            "stepgate doctor: {}\n\n{}{}\n{}\n",
            d.source.path,
            table(d, false).to_text_fit(fit),
            actions(d)
                .lines()
                .map(|l| format!("{}\n", fit.wrap(l, 2)))
                .collect::<String>(),
            fit.wrap(&verdict(d), 2)
        ),
        Format::Markdown => format!(
            "{}\n{}\n",
            table(d, true).to_markdown(),
            crate::report::escape::md_text(&verdict(d))
        ),
        Format::Csv => table(d, true).to_csv(),
    }
}
