//! Rendering of `analyze`: per-GPU totals, top kernels by exclusive time, categories.

use crate::report::fit::Fit;
use crate::report::markup::{Markdown, Markup, Text};
use crate::report::table::{Align, Table};
use crate::report::{fmt_int, fmt_pct, fmt_us, to_json, Format};
use crate::wire::analysis::{Analysis, DeviceSummary};

/// What an analyze rendering shows.
#[derive(Debug, Clone, Copy)]
pub struct Options {
    /// Kernel rows per device in table and markdown.
    pub top: usize,
    /// Kernel names in full instead of their labels cut to the terminal's column.
    pub wide: bool,
    /// The terminal's width (text only).
    pub fit: Fit,
}

/// Render an analysis.
pub fn render(a: &Analysis, format: Format, o: &Options) -> String {
    match format {
        Format::Json => to_json(a),
        Format::Csv => kernels_table(a, usize::MAX).to_csv(),
        Format::Table => text(a, o),
        Format::Markdown => markdown(a, o),
    }
}

fn header_line(a: &Analysis) -> String {
    let s = &a.source;
    let mut v = Vec::new();
    if let Some(t) = &s.tool_version {
        v.push(format!("{:?} {t}", s.format).to_lowercase());
    } else {
        v.push(format!("{:?}", s.format).to_lowercase());
    }
    if let Some(sv) = &s.schema_version {
        v.push(format!("schema {sv}"));
    }
    if let Some(m) = &s.cuda_graph_trace_mode {
        v.push(format!("cuda-graph-trace {m}"));
    }
    format!("{} ({})", s.path, v.join(", "))
}

fn device_title(d: &DeviceSummary) -> String {
    let mut t = format!("GPU {}", d.device);
    if let Some(n) = &d.name {
        t.push_str(&format!(" · {n}"));
    }
    if let Some(bw) = d.memory_bandwidth_bytes_per_s {
        t.push_str(&format!(
            " · {:.2} TB/s memory bandwidth (as the report states it)",
            bw / 1e12
        ));
    }
    if !d.processes.is_empty() {
        let ps: Vec<String> = d
            .processes
            .iter()
            .map(|p| match &p.name {
                Some(n) => format!("{} ({n})", p.pid),
                None => p.pid.to_string(),
            })
            .collect();
        t.push_str(&format!(" · pid {}", ps.join(", ")));
    }
    // Device and process names come from the report: never let one end the line.
    crate::report::escape_control(&t).into_owned()
}

fn totals_line(d: &DeviceSummary) -> String {
    format!(
        "window {} µs · busy {} µs ({}) · idle {} µs · {} kernels, {} ops · kernel sum {} µs",
        fmt_us(d.window_ns as f64),
        fmt_us(d.busy_ns as f64),
        fmt_pct(d.busy_fraction),
        fmt_us(d.idle_ns as f64),
        fmt_int(d.kernels as i64),
        fmt_int(d.ops as i64),
        fmt_us(d.kernel_sum_ns as f64),
    )
}

/// What takes most of a device's busy time, when the analysis found one name that does.
pub(crate) fn dominated_by(d: &DeviceSummary) -> Option<String> {
    let k = d.dominant.as_ref()?;
    Some(format!(
        "dominated by {}: {} of busy time ({} µs exclusive over {} instance{})",
        crate::report::escape_control(&k.short_name),
        fmt_pct(k.share_of_busy),
        fmt_us(k.exclusive_ns as f64),
        fmt_int(k.instances as i64),
        if k.instances == 1 { "" } else { "s" }
    ))
}

fn device_kernels(d: &DeviceSummary, o: &Options) -> Table {
    let mut t = Table::new(&[
        ("#", Align::Right),
        ("kernel", Align::Wrap),
        ("category", Align::Left),
        ("n", Align::Right),
        ("total µs", Align::Right),
        ("mean µs", Align::Right),
        ("exclusive µs", Align::Right),
        ("% of busy", Align::Right),
    ]);
    for (i, k) in d.kernels_by_name.iter().take(o.top).enumerate() {
        t.row(vec![
            (i + 1).to_string(),
            // Whole: the terminal's table shortens it in the middle to fit.
            if o.wide {
                k.name.clone()
            } else {
                k.short_name.clone()
            },
            k.category.clone(),
            fmt_int(k.instances as i64),
            fmt_us(k.total_ns as f64),
            fmt_us(k.mean_ns),
            fmt_us(k.exclusive_ns as f64),
            fmt_pct(k.share_of_busy),
        ]);
    }
    t
}

/// The per-category table of one device (the terminal, markdown and HTML reports share it).
pub(crate) fn device_categories(d: &DeviceSummary) -> Table {
    let mut t = Table::new(&[
        ("category", Align::Left),
        ("n", Align::Right),
        ("total µs", Align::Right),
        ("exclusive µs", Align::Right),
        ("% of busy", Align::Right),
    ]);
    for c in &d.categories {
        t.row(vec![
            c.category.clone(),
            fmt_int(c.instances as i64),
            fmt_us(c.total_ns as f64),
            fmt_us(c.exclusive_ns as f64),
            fmt_pct(c.share_of_busy.unwrap_or_default()),
        ]);
    }
    t
}

/// The analysis, walked once: per device its title, totals and what dominates it (the
/// answer), the top kernels, then the categories; the steps found, last.
fn walk<M: Markup>(m: &mut M, a: &Analysis, o: &Options) {
    for w in &a.warnings {
        m.warning(w);
    }
    for d in &a.devices {
        m.heading(&device_title(d));
        m.line(&totals_line(d));
        if let Some(l) = dominated_by(d) {
            m.answer("verdict", &l);
        }
        m.blank();
        m.table(&device_kernels(d, o));
        if d.kernels_by_name.len() > o.top {
            m.hint(&format!(
                "… {} more names (--top N to show more)",
                d.kernels_by_name.len() - o.top
            ));
        }
        m.blank();
        m.table(&device_categories(d));
    }
    if let Some(s) = &a.steps {
        m.blank();
        let parts: Vec<String> = s
            .summary
            .iter()
            .map(|k| format!("{} {}", k.count, k.kind.as_str()))
            .collect();
        m.line(&format!(
            "steps ({}): {} — `stepgate steps` for the per-step breakdown",
            s.method.method_str(),
            parts.join(", ")
        ));
    }
}

fn text(a: &Analysis, o: &Options) -> String {
    let mut m = Text::new(o.fit);
    m.title(&format!("stepgate analyze: {}", header_line(a)));
    walk(&mut m, a, o);
    m.finish()
}

fn markdown(a: &Analysis, o: &Options) -> String {
    let mut m = Markdown::with_heading("stepgate analyze");
    m.title(&header_line(a));
    walk(&mut m, a, o);
    m.finish()
}

/// Every (device, name) row for CSV: raw integer ns, no formatting.
fn kernels_table(a: &Analysis, top: usize) -> Table {
    let mut t = Table::new(&[
        ("device", Align::Right),
        ("name", Align::Left),
        ("short_name", Align::Left),
        ("category", Align::Left),
        ("instances", Align::Right),
        ("total_ns", Align::Right),
        ("mean_ns", Align::Right),
        ("median_ns", Align::Right),
        ("min_ns", Align::Right),
        ("max_ns", Align::Right),
        ("exclusive_ns", Align::Right),
    ]);
    for d in &a.devices {
        for k in d.kernels_by_name.iter().take(top) {
            t.row(vec![
                d.device.to_string(),
                k.name.clone(),
                k.short_name.clone(),
                k.category.clone(),
                k.instances.to_string(),
                k.total_ns.to_string(),
                format!("{:.1}", k.mean_ns),
                format!("{:.1}", k.median_ns),
                k.min_ns.to_string(),
                k.max_ns.to_string(),
                k.exclusive_ns.to_string(),
            ]);
        }
    }
    t
}
