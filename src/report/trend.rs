//! Rendering `stepgate trend`: one table row per (group, run), change points marked.

use crate::dataset::trend::{Point, Trend};
use crate::report::table::{Align, Table};
use crate::report::{fmt_us, to_json, Format};

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

/// The trend as a table, markdown, CSV or JSON.
pub fn render(t: &Trend, format: Format) -> String {
    if format == Format::Json {
        return to_json(t);
    }
    let unit = if t.unit == "ns" { " µs" } else { "" };
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
        let group = if s.group.is_empty() {
            "all".to_owned()
        } else {
            s.group
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(" ")
        };
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
    let head = format!(
        "{} per step{unit} over {} run(s); change points: {}",
        t.metric, t.runs_matched, t.change_rule
    );
    match format {
        Format::Csv => table.to_csv(),
        Format::Markdown => format!("**{head}**\n\n{}", table.to_markdown()),
        _ => format!("{head}\n{}", table.to_text()),
    }
}
