//! The `analyze --html` page: busy and idle time per device, and exclusive time ranked by
//! kernel category (and by kernel) per device.

use crate::report::analyze::dominated_by;
use crate::report::charts::{self, distinct, BarRow, Segment, BUSY, GAP};
use maud::{html, Markup};

use crate::report::html::{figure, full_names, page, table};
use crate::report::table::{Align, Table};
use crate::report::{fmt_int, fmt_pct, fmt_us};
use crate::wire::analysis::{Analysis, DeviceSummary};

/// The whole page; `top` kernels listed per device.
pub fn render(path: &str, a: &Analysis, top: usize) -> String {
    let body = html! {
        h1 { "stepgate analyze" } "\n"
        p.muted { code { (path) } " · " (a.devices.len()) " device(s)" } "\n"
        @for w in &a.warnings { p.note { (w) } "\n" }
        h2 { "Busy and idle time per device" } "\n"
        @for d in &a.devices {
            @if let Some(l) = dominated_by(d) { p.note { "GPU " (d.device) ": " (l) } "\n" }
        }
        (busy_chart(a))
        (table(&device_table(a), None))
        @for d in &a.devices { (device_section(d, top)) }
    };
    page(&format!("stepgate analyze — {path}"), body)
}

/// Busy and idle time per device, one bar each.
fn busy_chart(a: &Analysis) -> Markup {
    let ms = |ns: i64| ns as f64 / 1e6;
    let rows: Vec<BarRow> = a
        .devices
        .iter()
        .map(|d| {
            let window = d.window_ns;
            BarRow {
                label: format!("GPU {}", d.device),
                segments: vec![
                    Segment {
                        from: 0.0,
                        to: ms(d.busy_ns),
                        color: BUSY,
                    },
                    Segment {
                        from: ms(d.busy_ns),
                        to: ms(window),
                        color: GAP,
                    },
                ],
                note: Some(format!("{} busy", fmt_pct(d.busy_fraction))),
            }
        })
        .collect();
    figure(
        charts::hbars(
            "Busy and idle time per device",
            "time in the device's active window (ms)",
            &rows,
            &[("busy (union of GPU ops)", BUSY), ("idle", GAP)],
            None,
        ),
        "Busy: the union of the device's kernels, copies and fills; idle: the rest of the \
         window from its first op's start to its last op's end. Numbers: the table below.",
    )
}

/// The chart's numbers: each device's window, busy and idle time.
fn device_table(a: &Analysis) -> Table {
    let mut t = Table::new(&[
        ("device", Align::Left),
        ("window µs", Align::Right),
        ("busy µs", Align::Right),
        ("idle µs", Align::Right),
        ("busy share", Align::Right),
        ("kernels", Align::Right),
        ("ops", Align::Right),
    ]);
    for d in &a.devices {
        let window = d.window_ns;
        t.row(vec![
            format!(
                "GPU {}{}",
                d.device,
                d.name
                    .as_ref()
                    .map(|n| format!(" ({n})"))
                    .unwrap_or_default()
            ),
            fmt_us(window as f64),
            fmt_us(d.busy_ns as f64),
            fmt_us(d.idle_ns as f64),
            fmt_pct(d.busy_fraction),
            fmt_int(d.kernels as i64),
            fmt_int(d.ops as i64),
        ]);
    }
    t
}

/// One device: exclusive time by category (chart and table), its top kernels and their
/// full names.
fn device_section(d: &DeviceSummary, top: usize) -> Markup {
    let colors = distinct(d.categories.len(), &[]);
    let rows: Vec<BarRow> = d
        .categories
        .iter()
        .zip(colors)
        .map(|(c, color)| BarRow {
            label: c.category.clone(),
            segments: vec![Segment {
                from: 0.0,
                to: c.exclusive_ns as f64 / 1e3,
                color,
            }],
            note: Some(fmt_pct(c.share_of_busy.unwrap_or_default())),
        })
        .collect();
    let chart = figure(
        charts::hbars(
            &format!("GPU {}: exclusive time per kernel category", d.device),
            "exclusive time (µs)",
            &rows,
            &[],
            None,
        ),
        "Exclusive time: each op's share of the busy time not already covered by an op \
         that started before it; the categories add up to busy. Numbers: the table below.",
    );
    // The table names kernels by their labels; the full (template) names are listed
    // under it at the page's full width, where a 400-character name takes three lines
    // instead of a squeezed column of one character per line.
    let mut kt = Table::new(&[
        ("#", Align::Right),
        ("kernel", Align::Wrap),
        ("category", Align::Left),
        ("n", Align::Right),
        ("exclusive µs", Align::Right),
        ("% of busy", Align::Right),
    ]);
    let shown: Vec<_> = d.kernels_by_name.iter().take(top).collect();
    for (i, k) in shown.iter().enumerate() {
        kt.row(vec![
            (i + 1).to_string(),
            k.short_name.clone(),
            k.category.clone(),
            fmt_int(k.instances as i64),
            fmt_us(k.exclusive_ns as f64),
            fmt_pct(k.share_of_busy),
        ]);
    }
    let names: Vec<(&str, &str)> = shown
        .iter()
        .filter(|k| k.short_name != k.name)
        .map(|k| (k.short_name.as_str(), k.name.as_str()))
        .collect();
    html! {
        h2 { "GPU " (d.device) ": exclusive time by category" } "\n"
        (chart)
        (table(&crate::report::analyze::device_categories(d), None))
        h3 { "GPU " (d.device) ": top " (shown.len()) " kernels by exclusive time" } "\n"
        (table(&kt, None))
        (full_names(&format!("GPU {}: full kernel names", d.device), &names))
    }
}
