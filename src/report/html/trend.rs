//! The `trend --html` page: per group, the run medians in time order with their p10–p90
//! band, the change points and the decisions on record marked, then every charted number
//! in a table.

use maud::{html, Markup};

use crate::report::charts::{
    self, Line, Marker, Panel, XAxis, BETTER, BUSY, NEUTRAL, PALETTE, WORSE,
};
use crate::report::escape_control;
use crate::report::html::{figure, page, table};
use crate::report::trend::{group_name, heading, on_one_line};
use crate::wire::decision::Outcome;
use crate::wire::trend::{Point, Trend, TrendDecision};

/// Marker colours: hues the chart's line, band and change points do not use, so a
/// decision never reads as a change point.
const ACCEPTED: plotters::style::RGBColor = PALETTE[3];
const REJECTED: plotters::style::RGBColor = PALETTE[1];

/// The whole page for `t`, read from the dataset at `dataset`.
pub fn render(dataset: &str, t: &Trend) -> String {
    let head = heading(t);
    let mut parts: Vec<Markup> = vec![html! {
        h1 { "stepgate trend" } "\n"
        p.muted { (dataset) " · " (head) } "\n"
    }];
    // Charted in µs for ns metrics, as the table prints them.
    let scale = if t.unit == "ns" { 1e-3 } else { 1.0 };
    let name = &t.label;
    let y_desc = if t.unit == "ns" {
        format!("{name} per step, run median (µs)")
    } else {
        format!("{name} per step, run median")
    };
    for s in &t.series {
        let title = format!("{name} · {}", group_name(&s.group));
        let xy = |f: &dyn Fn(&crate::wire::trend::Point) -> f64| -> Vec<(f64, f64)> {
            s.points
                .iter()
                .enumerate()
                .map(|(i, p)| ((i + 1) as f64, f(p) * scale))
                .collect()
        };
        let p = Panel {
            title: &title,
            x_desc: "run (export order; run id)",
            x_axis: XAxis::Labels(s.points.iter().map(|p| run_label(&p.run_id)).collect()),
            y_desc: &y_desc,
            lines: vec![Line {
                name: "median",
                color: BUSY,
                points: xy(&|p| p.median),
                dashed: false,
            }],
            band: s
                .points
                .iter()
                .enumerate()
                .map(|(i, p)| ((i + 1) as f64, p.p10 * scale, p.p90 * scale))
                .collect(),
            band_name: "p10–p90 of the run's steps",
            points: s
                .points
                .iter()
                .enumerate()
                .map(|(i, p)| {
                    let class = match p.change.as_ref().map(|c| c.direction) {
                        None => 0,
                        Some("up") => 1,
                        Some(_) => 2,
                    };
                    ((i + 1) as f64, p.median * scale, class)
                })
                .collect(),
            classes: vec![
                ("run", NEUTRAL),
                ("change point up (heuristic)", WORSE),
                ("change point down (heuristic)", BETTER),
            ],
            markers: markers(&s.points),
        };
        let chart = figure(
            charts::panel(&p),
            "Each point is one exported run's median over its steps; the band is its p10–p90. \
             A change point (heuristic) is a median that moved past the gate thresholds against \
             the previous runs. A dashed line marks a run a decision on record (accept or \
             reject) names; hover it for who, when and why. Numbers: the table below.",
        );
        parts.push(html! { h2 { (group_name(&s.group)) } "\n" (chart) });
    }
    // An empty column only widens the page's table (the terminal's ends at its header).
    let mut rows = crate::report::trend::table(t);
    if !t
        .series
        .iter()
        .flat_map(|s| &s.points)
        .any(|p| p.decision.is_some())
    {
        rows = rows.without(&["decision"]);
    }
    parts.push(table(&rows, None));
    page(
        &format!("stepgate trend · {name}"),
        html! { @for p in parts { (p) } },
    )
}

/// One marker per run a decision names, at the run's position.
fn markers(points: &[Point]) -> Vec<Marker<'static>> {
    points
        .iter()
        .enumerate()
        .filter_map(|(i, p)| p.decision.as_ref().map(|d| (i, d)))
        .map(|(i, d)| {
            let (legend, color) = match d.outcome {
                Outcome::Accepted => ("accepted (decision on record)", ACCEPTED),
                Outcome::Rejected => ("rejected (decision on record)", REJECTED),
            };
            Marker {
                x: (i + 1) as f64,
                label: d.outcome.word(),
                legend,
                tooltip: tooltip(d),
                color,
            }
        })
        .collect()
}

/// `accepted by alice at 2026-…Z (commit 1a2b…): the whole reason`, on one line with
/// control characters as visible escapes (the marker escapes it as HTML).
fn tooltip(d: &TrendDecision) -> String {
    let commit = d
        .commit
        .as_deref()
        .map(|c| format!(" (commit {})", on_one_line(c)))
        .unwrap_or_default();
    let s = format!(
        "{} by {} at {}{commit}: {}",
        d.outcome.word(),
        on_one_line(&d.by),
        d.at,
        on_one_line(&d.reason)
    );
    escape_control(&s).into_owned()
}

/// A run's tick label: the first characters of its id (the table has it whole).
fn run_label(id: &str) -> String {
    id.chars().take(8).collect()
}
