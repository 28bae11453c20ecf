//! Rendering a baseline comparison: markdown for a PR comment or `$GITHUB_STEP_SUMMARY`
//! (verdict line first), aligned text for the terminal, CSV rows and the full JSON.

use crate::baseline::compare::{
    Change, Comparison, GroupComparison, KernelPresence, KernelRow, RowVerdict, SideInfo, Verdict,
};
use crate::baseline::model::metric;
use crate::baseline::waterfall::{summarize, Waterfall};
use crate::report::table::{Align, Table};
use crate::report::{
    fmt_int, fmt_pct, fmt_us, group_thousands, to_json, truncate, Format, NAME_WIDTH,
};
use crate::timing::labels::NameLabels;

mod document;

pub use document::{markdown, text};

/// What the renderer needs besides the comparison.
#[derive(Debug, Clone)]
pub struct RenderOptions {
    /// `gate` shows a verdict; a plain `diff` does not.
    pub show_verdict: bool,
    /// How to name the sides (file names).
    pub baseline_name: String,
    pub candidate_name: String,
    /// Kernel rows per list (regressions, improvements).
    pub top: usize,
    /// The command name for the title (`gate`, `diff`).
    pub command: &'static str,
    /// Waterfall rows shown before the rest fold into "N others".
    pub waterfall_top: usize,
}

impl Default for RenderOptions {
    fn default() -> Self {
        RenderOptions {
            show_verdict: true,
            baseline_name: "baseline".to_owned(),
            candidate_name: "candidate".to_owned(),
            top: 10,
            command: "gate",
            waterfall_top: 8,
        }
    }
}

/// Render in one of the shared formats.
pub fn render(c: &Comparison, format: Format, o: &RenderOptions) -> String {
    match format {
        Format::Markdown => markdown(c, o),
        Format::Json => to_json(c),
        Format::Csv => csv(c),
        Format::Table => text(c, o),
    }
}

fn verdict_word(v: Verdict) -> (&'static str, &'static str) {
    match v {
        Verdict::Pass => ("✅", "Pass"),
        Verdict::Regression => ("❌", "Regression"),
        Verdict::Inconclusive => ("⚠️", "Inconclusive"),
    }
}

/// A row's finding. Without a verdict (plain `diff`) it reads worse/better: a diff states
/// what changed and leaves judging to `gate`.
fn row_verdict(ch: &Change, judge: bool) -> String {
    let w = match (ch.verdict, judge) {
        (RowVerdict::Regression, true) => "❌ regression",
        (RowVerdict::Improvement, true) => "✅ improvement",
        (RowVerdict::Regression, false) => "worse",
        (RowVerdict::Improvement, false) => "better",
        (RowVerdict::Ok, _) => "ok",
        (RowVerdict::Inconclusive, true) => "⚠️ inconclusive",
        (RowVerdict::Inconclusive, false) => "too few steps",
    };
    if !judge || ch.gated || ch.verdict == RowVerdict::Ok {
        w.to_owned()
    } else {
        format!("{w} (not gated)")
    }
}

/// The one line that opens every rendering.
pub fn verdict_line(c: &Comparison, o: &RenderOptions) -> String {
    let compared = c.groups.len();
    let steps: (usize, usize) = c.groups.iter().fold((0, 0), |acc, g| {
        (acc.0 + g.baseline_steps, acc.1 + g.candidate_steps)
    });
    let scope = format!(
        "{compared} step group{} compared ({} vs {} steps)",
        if compared == 1 { "" } else { "s" },
        fmt_int(steps.0 as i64),
        fmt_int(steps.1 as i64)
    );
    if !o.show_verdict {
        return format!("stepgate {}: {scope}", o.command);
    }
    let (icon, word) = verdict_word(c.verdict);
    let why = match c.reasons.as_slice() {
        [] => format!("no regression beyond thresholds; {scope}"),
        [one] => one.clone(),
        [first, rest @ ..] => format!("{first} (and {} more)", rest.len()),
    };
    let fails = if c.verdict == Verdict::Inconclusive && c.inconclusive_fails {
        " (counts as a failure)"
    } else {
        ""
    };
    // Reasons quote kernel names from the reports: one line, whatever the names hold.
    format!(
        "{icon} {word}{fails} — {}",
        crate::report::escape_control(&why)
    )
}

/// A value of a metric in its unit.
fn fmt_value(metric_name: &str, v: f64) -> String {
    if metric_name.ends_with("_ns") {
        format!("{} µs", fmt_us(v))
    } else if metric_name == metric::GAP_FRACTION || metric_name == metric::MBU {
        fmt_pct(v)
    } else {
        group_thousands(&format!("{v:.1}"))
    }
}

/// A change in the metric's unit, signed with + or − (U+2212, the same as percentages).
fn fmt_delta(metric_name: &str, d: f64) -> String {
    let sign = if d >= 0.0 { "+" } else { "−" };
    let d = d.abs();
    if metric_name.ends_with("_ns") {
        format!("{sign}{} µs", fmt_us(d))
    } else if metric_name == metric::GAP_FRACTION || metric_name == metric::MBU {
        format!("{sign}{:.1} pt", d * 100.0)
    } else {
        format!("{sign}{}", group_thousands(&format!("{d:.1}")))
    }
}

fn fmt_rel(r: f64) -> String {
    if r.is_infinite() {
        return if r > 0.0 { "+∞" } else { "−∞" }.to_owned();
    }
    let s = format!("{:+.1}%", r * 100.0);
    s.replace('-', "−")
}

fn cell_opt(v: Option<f64>, f: impl Fn(f64) -> String) -> String {
    v.map(f).unwrap_or_else(|| "–".to_owned())
}

fn fmt_change(unit: &str, ch: &Change) -> String {
    match (ch.change_rel, ch.change) {
        (Some(r), Some(d)) => format!("{} ({})", fmt_rel(r), fmt_delta(unit, d)),
        (None, Some(d)) => fmt_delta(unit, d),
        _ => "–".to_owned(),
    }
}

fn fmt_interval(unit: &str, ch: &Change) -> String {
    match (ch.interval_rel, ch.interval) {
        (Some([a, b]), _) => format!("{} … {}", fmt_rel(a), fmt_rel(b)),
        (None, Some([a, b])) => format!("{} … {}", fmt_delta(unit, a), fmt_delta(unit, b)),
        _ => "–".to_owned(),
    }
}

fn fmt_threshold(unit: &str, ch: &Change) -> String {
    let t = ch.threshold;
    let abs = if unit.ends_with("_ns") {
        format!("{} µs", fmt_us(t.abs))
    } else if unit == metric::GAP_FRACTION || unit == metric::MBU {
        format!("{:.1} pt", t.abs * 100.0)
    } else {
        group_thousands(&format!("{:.1}", t.abs))
    };
    let s = format!("{} & {abs}", fmt_pct(t.rel).replace(".0%", "%"));
    if t.gate {
        s
    } else {
        format!("{s} (report only)")
    }
}

/// Human names for the step metrics.
fn metric_title(name: &str) -> &str {
    match name {
        metric::WALL_NS => "wall",
        metric::PERIOD_NS => "period",
        metric::BUSY_NS => "busy",
        metric::GAP_NS => "gap",
        metric::GAP_FRACTION => "gap fraction",
        metric::LAUNCHES => "launches",
        metric::MBU => "MBU (derived)",
        other => other,
    }
}

pub(crate) fn metrics_table(g: &GroupComparison, name: &str, judge: bool) -> Table {
    let mut t = Table::new(&[
        (name, Align::Left),
        ("baseline", Align::Right),
        ("candidate", Align::Right),
        ("change", Align::Right),
        ("95% interval", Align::Right),
        ("threshold", Align::Right),
        ("verdict", Align::Left),
    ]);
    for m in &g.metrics {
        let ch = &m.change;
        let u = m.metric.as_str();
        t.row(vec![
            metric_title(u).to_owned(),
            cell_opt(ch.baseline_median, |v| fmt_value(u, v)),
            cell_opt(ch.candidate_median, |v| fmt_value(u, v)),
            fmt_change(u, ch),
            fmt_interval(u, ch),
            fmt_threshold(u, ch),
            row_verdict(ch, judge),
        ]);
    }
    t
}

/// A markdown code span that survives backticks in the text.
fn code(s: &str) -> String {
    // A CR/LF in a kernel name would end the list item or table row it sits in.
    let s = crate::report::escape_control(s);
    if s.contains('`') {
        format!("`` {s} ``")
    } else {
        format!("`{s}`")
    }
}

/// A kernel's label in a table cell: a code span in markdown, cut to the column in text.
fn name_cell(label: &str, md: bool) -> String {
    if md {
        code(label)
    } else {
        truncate(label, NAME_WIDTH)
    }
}

pub(crate) fn kernel_table(
    rows: &[&KernelRow],
    md: bool,
    judge: bool,
    labels: &NameLabels,
) -> Table {
    let mut t = Table::new(&[
        ("kernel", Align::Left),
        ("category", Align::Left),
        ("baseline µs", Align::Right),
        ("candidate µs", Align::Right),
        ("change", Align::Right),
        ("95% interval", Align::Right),
        ("verdict", Align::Left),
    ]);
    let u = "exclusive_ns";
    for k in rows {
        let ch = &k.change;
        let label = labels.get(&k.name, &k.short_name);
        t.row(vec![
            name_cell(label, md),
            k.category.clone(),
            cell_opt(ch.baseline_median, fmt_us),
            cell_opt(ch.candidate_median, fmt_us),
            fmt_change(u, ch),
            fmt_interval(u, ch),
            row_verdict(ch, judge),
        ]);
    }
    t
}

pub(crate) fn presence_table(
    rows: &[KernelPresence],
    md: bool,
    new: bool,
    labels: &NameLabels,
) -> Table {
    let mut t = Table::new(&[
        ("kernel", Align::Left),
        ("category", Align::Left),
        ("mean µs per step", Align::Right),
        ("share of busy", Align::Right),
        ("gates", Align::Left),
    ]);
    for k in rows {
        let label = labels.get(&k.name, &k.short_name);
        t.row(vec![
            name_cell(label, md),
            k.category.clone(),
            fmt_us(k.mean_ns_per_step),
            fmt_pct(k.share_of_busy),
            match (new, k.gated) {
                (true, true) => "❌ fails".to_owned(),
                (true, false) => "report only".to_owned(),
                (false, _) => "–".to_owned(),
            },
        ]);
    }
    t
}

pub(crate) fn categories_table(g: &GroupComparison, judge: bool) -> Table {
    let mut t = Table::new(&[
        ("category", Align::Left),
        ("baseline µs", Align::Right),
        ("candidate µs", Align::Right),
        ("change", Align::Right),
        ("95% interval", Align::Right),
        ("verdict", Align::Left),
    ]);
    for c in &g.categories {
        let ch = &c.change;
        t.row(vec![
            c.category.clone(),
            cell_opt(ch.baseline_median, fmt_us),
            cell_opt(ch.candidate_median, fmt_us),
            fmt_change("exclusive_ns", ch),
            fmt_interval("exclusive_ns", ch),
            row_verdict(ch, judge),
        ]);
    }
    t
}

fn side_desc(s: &SideInfo) -> String {
    let mut parts = vec![s
        .gpu_name
        .clone()
        .unwrap_or_else(|| "GPU not named".to_owned())];
    if let Some(m) = &s.model {
        parts.push(format!("model {m}"));
    }
    if let Some(e) = &s.engine {
        parts.push(e.clone());
    }
    if let Some(v) = &s.nsys_version {
        parts.push(format!("nsys {v}"));
    }
    parts.push(s.source_format.clone());
    parts.join(" · ")
}

/// Who was compared with whom; the description once when both sides agree.
pub(crate) fn sides_line(c: &Comparison, o: &RenderOptions, md: bool) -> String {
    let name = |n: &str| if md { code(n) } else { n.to_owned() };
    let (b, k) = (side_desc(&c.baseline), side_desc(&c.candidate));
    if b == k {
        format!(
            "Baseline {} → candidate {}, both {b}.",
            name(&o.baseline_name),
            name(&o.candidate_name)
        )
    } else {
        format!(
            "Baseline {} ({b}) → candidate {} ({k}).",
            name(&o.baseline_name),
            name(&o.candidate_name)
        )
    }
}

pub(crate) fn regressions(g: &GroupComparison, top: usize) -> Vec<&KernelRow> {
    g.kernels
        .iter()
        .filter(|k| k.change.verdict == RowVerdict::Regression)
        .take(top)
        .collect()
}

pub(crate) fn improvements(g: &GroupComparison, top: usize) -> Vec<&KernelRow> {
    // Kernels are sorted by increase; the largest decreases are at the end.
    g.kernels
        .iter()
        .rev()
        .filter(|k| k.change.verdict == RowVerdict::Improvement)
        .take(top)
        .collect()
}

fn mbu_line(g: &GroupComparison, md: bool, judge: bool) -> String {
    let bold = |s: &str| if md { format!("**{s}**") } else { s.to_owned() };
    match g.metrics.iter().find(|m| m.metric == metric::MBU) {
        Some(m) => {
            let ch = &m.change;
            format!(
                "{} (derived: floor ÷ wall, median): {} → {} ({}), {}",
                bold("Floor / MBU"),
                cell_opt(ch.baseline_median, fmt_pct),
                cell_opt(ch.candidate_median, fmt_pct),
                ch.change
                    .map(|d| fmt_delta(metric::MBU, d))
                    .unwrap_or_default(),
                row_verdict(ch, judge)
            )
        }
        None => format!(
            "{}: not compared — no model on both sides (record both with --model)",
            bold("Floor / MBU")
        ),
    }
}

/// A signed µs change with U+2212 for minus.
fn fmt_signed_us(d: f64) -> String {
    fmt_delta("_ns", d)
}

/// The waterfall of one group: top kernels by |Δ mean|, "N others", the gap, and the sum
/// check in the last row.
pub fn waterfall_table(w: &Waterfall, top: usize, md: bool, labels: &NameLabels) -> Option<Table> {
    let check = w.waterfall_check.as_ref()?;
    let s = summarize(w, top);
    let mut t = Table::new(&[
        ("contributor", Align::Left),
        ("category", Align::Left),
        ("baseline µs", Align::Right),
        ("candidate µs", Align::Right),
        ("Δ mean per step", Align::Right),
    ]);
    for r in &s.top {
        t.row(vec![
            name_cell(labels.get(&r.name, &r.short_name), md),
            r.category.clone(),
            fmt_us(r.baseline_mean_ns),
            fmt_us(r.candidate_mean_ns),
            fmt_signed_us(r.delta_ns),
        ]);
    }
    if let Some((n, d, b, c)) = s.others {
        t.row(vec![
            format!("{n} other{}", if n == 1 { "" } else { "s" }),
            "–".to_owned(),
            fmt_us(b),
            fmt_us(c),
            fmt_signed_us(d),
        ]);
    }
    if let Some(g) = s.gap {
        t.row(vec![
            "gap (wall − busy)".to_owned(),
            "gap".to_owned(),
            fmt_us(g.baseline_mean_ns),
            fmt_us(g.candidate_mean_ns),
            fmt_signed_us(g.delta_ns),
        ]);
    }
    let (b, c) = (
        fmt_us(check.baseline_mean_wall_ns),
        fmt_us(check.candidate_mean_wall_ns),
    );
    t.row(vec![
        format!(
            "= Δ mean wall (rows sum to {}{})",
            fmt_signed_us(check.sum_rows_ns),
            if check.exact { ", exact" } else { ", MISMATCH" }
        ),
        String::new(),
        b,
        c,
        fmt_signed_us(check.delta_mean_wall_ns),
    ]);
    Some(t)
}

/// The kernel rows a waterfall table shows (for the full-names details).
fn waterfall_table_rows(
    w: &Waterfall,
    top: usize,
) -> impl Iterator<Item = &crate::baseline::waterfall::WaterfallRow> {
    w.waterfall
        .iter()
        .filter(|r| r.name != crate::baseline::waterfall::GAP_ROW)
        .take(top)
}

/// Labels that tell apart distinct kernels sharing a short name, over every name the
/// comparison can show (both sides, every group), so one kernel reads the same everywhere.
pub fn name_labels(c: &Comparison) -> NameLabels {
    NameLabels::new(c.groups.iter().flat_map(|g| {
        g.kernels
            .iter()
            .map(|k| (k.name.as_str(), k.short_name.as_str()))
            .chain(
                g.new_kernels
                    .iter()
                    .chain(&g.vanished_kernels)
                    .map(|k| (k.name.as_str(), k.short_name.as_str())),
            )
            .chain(
                g.explain
                    .waterfall
                    .iter()
                    .map(|r| (r.name.as_str(), r.short_name.as_str())),
            )
    }))
}

/// The floor beside the waterfall: how far each side is from it and how much the floor
/// itself moved.
pub(crate) fn waterfall_floor_line(w: &Waterfall) -> Option<String> {
    let f = w.waterfall_floor.as_ref()?;
    let c = w.waterfall_check.as_ref()?;
    Some(format!(
        "Mean floor per step (derived, MBU × wall): baseline {} µs ({} µs above it), \
         candidate {} µs ({} µs above it); the floor itself moved {}.",
        fmt_us(f.baseline_mean_floor_ns),
        fmt_us(c.baseline_mean_wall_ns - f.baseline_mean_floor_ns),
        fmt_us(f.candidate_mean_floor_ns),
        fmt_us(c.candidate_mean_wall_ns - f.candidate_mean_floor_ns),
        fmt_signed_us(f.delta_floor_ns),
    ))
}

pub(crate) fn group_heading(g: &GroupComparison, show_verdict: bool) -> String {
    let mut s = g.label.clone();
    if show_verdict {
        let (icon, word) = verdict_word(g.verdict);
        s.push_str(&format!(" — {icon} {}", word.to_lowercase()));
    }
    s.push_str(&format!(
        " · {} vs {} steps",
        fmt_int(g.baseline_steps as i64),
        fmt_int(g.candidate_steps as i64)
    ));
    if let (Some(a), Some(b)) = (g.baseline_mean_context, g.candidate_mean_context) {
        s.push_str(&format!(
            " · mean context {} → {} tokens",
            fmt_int(a.round() as i64),
            fmt_int(b.round() as i64)
        ));
    }
    s
}

/// Headings of the two kernel lists: a plain diff says slower/faster, not regression.
pub(crate) fn titles(o: &RenderOptions) -> (&'static str, &'static str) {
    if o.show_verdict {
        ("Kernel regressions", "Kernel improvements")
    } else {
        ("Slower kernels", "Faster kernels")
    }
}

/// One CSV table: every judged row of every group.
pub fn csv(c: &Comparison) -> String {
    let mut t = Table::new(&[
        ("group", Align::Left),
        ("kind", Align::Left),
        ("name", Align::Left),
        ("baseline_median", Align::Right),
        ("candidate_median", Align::Right),
        ("change", Align::Right),
        ("change_rel", Align::Right),
        ("interval_rel_lo", Align::Right),
        ("interval_rel_hi", Align::Right),
        ("verdict", Align::Left),
        ("gated", Align::Left),
    ]);
    let num = |v: Option<f64>| v.map(|x| x.to_string()).unwrap_or_default();
    for g in &c.groups {
        let rows = g
            .metrics
            .iter()
            .map(|m| ("metric", m.metric.as_str(), &m.change))
            .chain(
                g.kernels
                    .iter()
                    .map(|k| ("kernel", k.name.as_str(), &k.change)),
            )
            .chain(
                g.categories
                    .iter()
                    .map(|k| ("category", k.category.as_str(), &k.change)),
            );
        for (kind, name, ch) in rows {
            t.row(vec![
                g.label.clone(),
                kind.to_owned(),
                name.to_owned(),
                num(ch.baseline_median),
                num(ch.candidate_median),
                num(ch.change),
                num(ch.change_rel),
                num(ch.interval_rel.map(|i| i[0])),
                num(ch.interval_rel.map(|i| i[1])),
                format!("{:?}", ch.verdict).to_lowercase(),
                ch.gated.to_string(),
            ]);
        }
    }
    t.to_csv()
}
