//! Rendering `stepgate trend`: one table row per (group, run), change points and the
//! decisions on record marked.

use crate::report::table::{Align, Table};
use crate::report::{fmt_us, to_json, truncate, Format};
use crate::wire::trend::{Point, Trend};

/// The most characters of a decision's reason a table cell shows: the table is for finding
/// the run a decision names, and a reason can be a paragraph; the JSON has it whole.
pub(crate) const REASON_WIDTH: usize = 40;

fn value(t: &Trend, v: f64) -> String {
    if t.unit == "ns" {
        fmt_us(v)
    } else {
        format!("{v:.3}")
    }
}

fn change(t: &Trend, p: &Point) -> String {
    match &p.change {
        None => String::new(),
        Some(c) => {
            let arrow = if c.direction == "up" { "▲" } else { "▼" };
            let rel = c
                .relative
                .map(|r| format!("{:+.1}%", r * 100.0))
                .unwrap_or_else(|| "from 0".into());
            format!(
                "{arrow} {rel} vs {} (median of {} previous)",
                value(t, c.reference),
                c.previous_runs
            )
        }
    }
}

/// `accepted by alice: fp8 KV cache costs 25% step time, t…` for a run a decision names,
/// empty otherwise. The reason is written on one line (a reason given over several lines
/// reads the same with spaces, and a line break would end a table row) and shortened to
/// [`REASON_WIDTH`]. Who and why are the PR author's text: each format's escaping is the
/// table's (markdown text, control characters as visible escapes, HTML text).
pub fn decision(p: &Point) -> String {
    match &p.decision {
        None => String::new(),
        Some(d) => format!(
            "{} by {}: {}",
            d.outcome.word(),
            on_one_line(&d.by),
            truncate(&on_one_line(&d.reason), REASON_WIDTH)
        ),
    }
}

/// Whitespace runs (line breaks among them) as one space, none at the ends.
pub(crate) fn on_one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `key=value` words of a group; `all` for the one ungrouped series.
pub(crate) fn group_name(g: &std::collections::BTreeMap<String, String>) -> String {
    if g.is_empty() {
        "all".to_owned()
    } else {
        g.iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// One row per (group, run): the table every rendering shares.
pub(crate) fn table(t: &Trend) -> Table {
    let cols = [
        ("group", Align::Left),
        ("run", Align::Right),
        ("run_id", Align::Left),
        ("exported (UTC)", Align::Left),
        ("labels", Align::Left),
        ("steps", Align::Right),
        ("median", Align::Right),
        ("p10", Align::Right),
        ("p90", Align::Right),
        // Both may wrap on an HTML page: with both filled, the table would otherwise run
        // past the page's width.
        ("change point (heuristic)", Align::Wrap),
        // Always there, empty without decisions, like the change point column: a CSV
        // keeps its columns whatever the dataset holds.
        ("decision", Align::Wrap),
    ];
    let mut table = Table::new(&cols);
    for s in &t.series {
        let group = group_name(&s.group);
        for (i, p) in s.points.iter().enumerate() {
            let labels = p
                .labels
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(" ");
            table.row(vec![
                group.clone(),
                (i + 1).to_string(),
                p.run_id.clone(),
                p.exported_at.clone(),
                labels,
                p.steps.to_string(),
                value(t, p.median),
                value(t, p.p10),
                value(t, p.p90),
                change(t, p),
                decision(p),
            ]);
        }
    }
    table
}

/// The line above the table: metric, unit, runs and the change-point rule.
pub(crate) fn heading(t: &Trend) -> String {
    let unit = if t.unit == "ns" { " µs" } else { "" };
    format!(
        "{} per step{unit} over {} run(s); change points: {}",
        &t.label, t.runs_matched, t.change_rule
    )
}

/// The trend as a table, markdown, CSV or JSON.
pub fn render(t: &Trend, format: Format, fit: crate::report::fit::Fit) -> String {
    if format == Format::Json {
        return to_json(t);
    }
    let table = table(t);
    let head = heading(t);
    match format {
        Format::Csv => table.to_csv(),
        Format::Markdown => format!("**{head}**\n\n{}", table.to_markdown()),
        _ => format!("{}\n{}", fit.wrap(&head, 2), table.to_text_fit(fit)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::decision::Outcome;
    use crate::wire::trend::TrendDecision;

    fn point(decision: Option<TrendDecision>) -> Point {
        Point {
            run_id: "r".into(),
            exported_at_ns: 0,
            exported_at: String::new(),
            labels: std::collections::BTreeMap::new(),
            steps: 1,
            median: 1.0,
            p10: 1.0,
            p90: 1.0,
            change: None,
            decision,
        }
    }

    #[test]
    fn a_decision_cell_is_one_line_and_its_reason_shortened() {
        assert_eq!(decision(&point(None)), "");
        let d = TrendDecision {
            outcome: Outcome::Rejected,
            by: "bob\n".into(),
            at: "2026-01-02T03:04:05Z".into(),
            reason: "scheduler\r\nregression,   reverted in the next PR because it doubles TTFT"
                .into(),
            commit: None,
        };
        let cell = decision(&point(Some(d)));
        assert_eq!(
            cell,
            "rejected by bob: scheduler regression, reverted in the n…"
        );
        assert_eq!(
            cell.chars().count() - "rejected by bob: ".len(),
            REASON_WIDTH
        );
    }
}
