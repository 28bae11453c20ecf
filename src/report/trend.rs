//! Rendering `stepgate trend`: one table row per (group, run), change points marked.

use crate::report::table::{Align, Table};
use crate::report::{fmt_us, to_json, Format};
use crate::wire::trend::{Point, Trend};

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
        ("change point (heuristic)", Align::Left),
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
        crate::report::words::metric_name(&t.metric),
        t.runs_matched,
        t.change_rule
    )
}

/// The trend as a table, markdown, CSV or JSON.
pub fn render(t: &Trend, format: Format) -> String {
    if format == Format::Json {
        return to_json(t);
    }
    let table = table(t);
    let head = heading(t);
    match format {
        Format::Csv => table.to_csv(),
        Format::Markdown => format!("**{head}**\n\n{}", table.to_markdown()),
        _ => format!("{head}\n{}", table.to_text()),
    }
}
