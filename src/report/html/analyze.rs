//! The `analyze --html` page: busy and idle time per device, and exclusive time ranked by
//! kernel category (and by kernel) per device.

use crate::report::analyze::dominated_by;
use crate::report::charts::{self, distinct, BarRow, Segment, BUSY, GAP};
use crate::report::html::{esc, figure, full_names, page, table};
use crate::report::table::{Align, Table};
use crate::report::{fmt_int, fmt_pct, fmt_us};
use crate::wire::analysis::Analysis;

fn share(part: i64, whole: i64) -> f64 {
    if whole > 0 {
        part as f64 / whole as f64
    } else {
        0.0
    }
}

/// The whole page; `top` kernels listed per device.
pub fn render(path: &str, a: &Analysis, top: usize) -> String {
    let mut b = String::new();
    b.push_str(&format!(
        "<h1>stepgate analyze</h1>\n<p class=\"muted\"><code>{}</code> · {} device(s)</p>\n",
        esc(path),
        a.devices.len()
    ));
    for w in &a.warnings {
        b.push_str(&format!("<p class=\"note\">{}</p>\n", esc(w)));
    }
    b.push_str("<h2>Busy and idle time per device</h2>\n");
    for d in &a.devices {
        if let Some(l) = dominated_by(d) {
            b.push_str(&format!(
                "<p class=\"note\">GPU {}: {}</p>\n",
                d.device,
                esc(&l)
            ));
        }
    }
    let ms = |ns: i64| ns as f64 / 1e6;
    let rows: Vec<BarRow> = a
        .devices
        .iter()
        .map(|d| {
            let window = d.window_end_ns - d.window_start_ns;
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
                note: Some(format!("{} busy", fmt_pct(share(d.busy_ns, window)))),
            }
        })
        .collect();
    b.push_str(&figure(
        charts::hbars(
            "Busy and idle time per device",
            "time in the device's active window (ms)",
            &rows,
            &[("busy (union of GPU ops)", BUSY), ("idle", GAP)],
            None,
        ),
        "Busy: the union of the device's kernels, copies and fills; idle: the rest of the \
         window from its first op's start to its last op's end. Numbers: the table below.",
    ));
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
        let window = d.window_end_ns - d.window_start_ns;
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
            fmt_pct(share(d.busy_ns, window)),
            fmt_int(d.kernels as i64),
            fmt_int(d.ops as i64),
        ]);
    }
    b.push_str(&table(&t, None));

    for d in &a.devices {
        b.push_str(&format!(
            "<h2>GPU {}: exclusive time by category</h2>\n",
            d.device
        ));
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
                note: Some(fmt_pct(share(c.exclusive_ns, d.busy_ns))),
            })
            .collect();
        b.push_str(&figure(
            charts::hbars(
                &format!("GPU {}: exclusive time per kernel category", d.device),
                "exclusive time (µs)",
                &rows,
                &[],
                None,
            ),
            "Exclusive time: each op's share of the busy time not already covered by an op \
             that started before it; the categories add up to busy. Numbers: the table below.",
        ));
        let ct = crate::report::analyze::device_categories(d);
        b.push_str(&table(&ct, None));
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
                fmt_pct(share(k.exclusive_ns, d.busy_ns)),
            ]);
        }
        b.push_str(&format!(
            "<h3>GPU {}: top {} kernels by exclusive time</h3>\n",
            d.device,
            shown.len()
        ));
        b.push_str(&table(&kt, None));
        let names: Vec<(&str, &str)> = shown
            .iter()
            .filter(|k| k.short_name != k.name)
            .map(|k| (k.short_name.as_str(), k.name.as_str()))
            .collect();
        b.push_str(&full_names(
            &format!("GPU {}: full kernel names", d.device),
            &names,
        ));
    }
    page(&format!("stepgate analyze — {path}"), &b)
}
