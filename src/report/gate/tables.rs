//! The gate/diff document's tables and lines, one builder each: step metrics, kernels,
//! one-sided kernels, categories, the waterfall, and the lines beside them (MBU, floor,
//! thresholds that disagree). Every rendering (text, markdown, HTML) takes them from here.

use crate::report::table::{Align, Table};
use crate::report::words::fmt_rel;
use crate::report::{fmt_pct, fmt_us, group_thousands, NAME_WIDTH};
use crate::wire::baseline::{metric, MetricUnit};
use crate::wire::gate::{
    Change, GroupComparison, KernelPresence, KernelRow, NameLabelMap, RowVerdict, Verdict,
    Waterfall, WaterfallFold, WaterfallRow, GAP_ROW,
};

use super::Style;

pub(crate) fn verdict_word(v: Verdict) -> (&'static str, &'static str) {
    match v {
        Verdict::Pass => ("✅", "Pass"),
        Verdict::Regression => ("❌", "Regression"),
        Verdict::Inconclusive => ("⚠️", "Inconclusive"),
        Verdict::Incomparable => ("⛔", "Incomparable"),
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
        // With an interval, the samples were too noisy to have seen the threshold.
        (RowVerdict::Inconclusive, true) if ch.detectable.is_some() => {
            "⚠️ inconclusive (too noisy)"
        }
        (RowVerdict::Inconclusive, true) => "⚠️ inconclusive",
        (RowVerdict::Inconclusive, false) if ch.detectable.is_some() => "too noisy to tell",
        (RowVerdict::Inconclusive, false) => "too few steps",
    };
    if !judge || ch.gated || ch.verdict == RowVerdict::Ok {
        w.to_owned()
    } else {
        format!("{w} (not gated)")
    }
}

/// A value of a metric in its unit.
fn fmt_value(unit: MetricUnit, v: f64) -> String {
    match unit {
        MetricUnit::Ns => format!("{} µs", fmt_us(v)),
        MetricUnit::Fraction | MetricUnit::Utilisation => fmt_pct(v),
        MetricUnit::Count => group_thousands(&format!("{v:.1}")),
    }
}

/// A change in the metric's unit, signed with + or − (U+2212, the same as percentages).
fn fmt_delta(unit: MetricUnit, d: f64) -> String {
    let sign = if d >= 0.0 { "+" } else { "−" };
    let d = d.abs();
    match unit {
        MetricUnit::Ns => format!("{sign}{} µs", fmt_us(d)),
        MetricUnit::Fraction | MetricUnit::Utilisation => format!("{sign}{:.1} pt", d * 100.0),
        MetricUnit::Count => format!("{sign}{}", group_thousands(&format!("{d:.1}"))),
    }
}

/// A signed µs change with U+2212 for minus.
pub(crate) fn fmt_signed_us(d: f64) -> String {
    fmt_delta(MetricUnit::Ns, d)
}

fn cell_opt(v: Option<f64>, f: impl Fn(f64) -> String) -> String {
    v.map(f).unwrap_or_else(|| "–".to_owned())
}

pub(super) fn fmt_change(unit: MetricUnit, ch: &Change) -> String {
    match (ch.change_rel, ch.change) {
        (Some(r), Some(d)) => format!("{} ({})", fmt_rel(Some(r)), fmt_delta(unit, d)),
        (None, Some(d)) => fmt_delta(unit, d),
        _ => "–".to_owned(),
    }
}

pub(super) fn fmt_interval(unit: MetricUnit, ch: &Change) -> String {
    match (ch.interval_rel, ch.interval) {
        (Some([a, b]), _) => format!("{} … {}", fmt_rel(Some(a)), fmt_rel(Some(b))),
        (None, Some([a, b])) => format!("{} … {}", fmt_delta(unit, a), fmt_delta(unit, b)),
        _ => "–".to_owned(),
    }
}

/// The smallest change the samples could tell from none (half the interval's width),
/// relative where there is a ratio.
fn fmt_visible(unit: MetricUnit, ch: &Change) -> String {
    match (ch.detectable_rel, ch.detectable) {
        (Some(r), _) => format!("±{}", fmt_pct(r)),
        (None, Some(d)) => format!("±{}", fmt_delta(unit, d).trim_start_matches('+')),
        _ => "–".to_owned(),
    }
}

fn fmt_threshold(unit: MetricUnit, ch: &Change) -> String {
    let t = ch.threshold;
    let abs = match unit {
        MetricUnit::Ns => format!("{} µs", fmt_us(t.abs)),
        MetricUnit::Fraction | MetricUnit::Utilisation => format!("{:.1} pt", t.abs * 100.0),
        MetricUnit::Count => group_thousands(&format!("{:.1}", t.abs)),
    };
    let s = format!("{} & {abs}", fmt_pct(t.rel).replace(".0%", "%"));
    if t.gate {
        s
    } else {
        format!("{s} (report only)")
    }
}

/// A side's value as every gate table shows it: the median the thresholds judge, then
/// the mean the waterfall adds up (docs/gate.md, "One statistic per number").
fn median_mean(median: Option<f64>, mean: Option<f64>, f: impl Fn(f64) -> String) -> String {
    match (median, mean) {
        (Some(m), Some(a)) => format!("{} · {}", f(m), f(a)),
        (m, _) => cell_opt(m, f),
    }
}

/// The column headers of the two sides: which statistic, in which order.
pub(crate) const BASELINE_STATS: &str = "baseline (median · mean)";
pub(crate) const CANDIDATE_STATS: &str = "candidate (median · mean)";
const BASELINE_US: &str = "baseline µs (median · mean)";
const CANDIDATE_US: &str = "candidate µs (median · mean)";

pub(crate) fn metrics_table(g: &GroupComparison, name: &str, judge: bool) -> Table {
    let mut t = Table::new(&[
        (name, Align::Left),
        (BASELINE_STATS, Align::Right),
        (CANDIDATE_STATS, Align::Right),
        ("change", Align::Right),
        ("95% interval", Align::Right),
        ("smallest visible", Align::Right),
        ("threshold", Align::Right),
        ("verdict", Align::Left),
    ]);
    // Each row as its metric's table row says: label and unit.
    for m in &g.metrics {
        let ch = &m.change;
        let u = m.unit;
        t.row(vec![
            m.label.clone(),
            median_mean(ch.baseline_median, ch.baseline_mean, |v| fmt_value(u, v)),
            median_mean(ch.candidate_median, ch.candidate_mean, |v| fmt_value(u, v)),
            fmt_change(u, ch),
            fmt_interval(u, ch),
            fmt_visible(u, ch),
            fmt_threshold(u, ch),
            row_verdict(ch, judge),
        ]);
    }
    t
}

/// A markdown code span that survives backticks in the text.
pub(crate) fn code(s: &str) -> String {
    crate::report::escape::md_code(s)
}

/// How kernel names read in one rendering: their labels (distinct kernels sharing a short
/// name told apart) or, `wide`, the full demangled names.
#[derive(Clone, Copy)]
pub(crate) struct Names<'a> {
    pub labels: &'a NameLabelMap,
    pub style: Style,
    pub wide: bool,
}

impl Names<'_> {
    /// The name as a table cell shows it: a code span in markdown, cut to the terminal's
    /// column in text (unless wide), whole on a page.
    pub fn cell(&self, full: &str, short: &str) -> String {
        let name = if self.wide {
            full
        } else {
            self.labels.get(full, short)
        };
        match self.style {
            Style::Markdown => code(name),
            Style::Text if !self.wide => crate::report::fit::shorten_middle(name, NAME_WIDTH),
            Style::Text | Style::Html => name.to_owned(),
        }
    }
}

pub(crate) fn kernel_table(rows: &[&KernelRow], judge: bool, names: Names<'_>) -> Table {
    let mut t = Table::new(&[
        ("kernel", Align::Wrap),
        ("category", Align::Left),
        (BASELINE_US, Align::Right),
        (CANDIDATE_US, Align::Right),
        ("change", Align::Right),
        ("95% interval", Align::Right),
        ("verdict", Align::Left),
    ]);
    let u = MetricUnit::Ns;
    for k in rows {
        let ch = &k.change;
        t.row(vec![
            names.cell(&k.name, &k.short_name),
            k.category.clone(),
            median_mean(ch.baseline_median, ch.baseline_mean, fmt_us),
            median_mean(ch.candidate_median, ch.candidate_mean, fmt_us),
            fmt_change(u, ch),
            fmt_interval(u, ch),
            row_verdict(ch, judge),
        ]);
    }
    t
}

pub(crate) fn presence_table(rows: &[KernelPresence], new: bool, names: Names<'_>) -> Table {
    let mut t = Table::new(&[
        ("kernel", Align::Wrap),
        ("category", Align::Left),
        ("mean µs per step", Align::Right),
        ("share of busy", Align::Right),
        ("gates", Align::Left),
    ]);
    for k in rows {
        t.row(vec![
            names.cell(&k.name, &k.short_name),
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
        (BASELINE_US, Align::Right),
        (CANDIDATE_US, Align::Right),
        ("change", Align::Right),
        ("95% interval", Align::Right),
        ("verdict", Align::Left),
    ]);
    for c in &g.categories {
        let ch = &c.change;
        t.row(vec![
            c.category.clone(),
            median_mean(ch.baseline_median, ch.baseline_mean, fmt_us),
            median_mean(ch.candidate_median, ch.candidate_mean, fmt_us),
            fmt_change(MetricUnit::Ns, ch),
            fmt_interval(MetricUnit::Ns, ch),
            row_verdict(ch, judge),
        ]);
    }
    t
}

/// One line per category judged ok while some of its kernels regressed: kernels and
/// categories have their own thresholds (by default 10% & 5 µs against 5% & 10 µs), so a
/// kernel 9.5 µs slower fails where its category does not; the line says which applied.
pub(crate) fn threshold_notes(g: &GroupComparison, names: Names<'_>) -> Vec<String> {
    let mut out = Vec::new();
    for c in g
        .categories
        .iter()
        .filter(|c| c.change.verdict != RowVerdict::Regression)
    {
        let kernels: Vec<&KernelRow> = g
            .kernels
            .iter()
            .filter(|k| k.category == c.category && k.change.verdict == RowVerdict::Regression)
            .collect();
        let Some(first) = kernels.first() else {
            continue;
        };
        let which = match kernels.len() {
            1 => format!("kernel {}", names.cell(&first.name, &first.short_name)),
            n => format!(
                "{n} of its kernels (the largest {})",
                names.cell(&first.name, &first.short_name)
            ),
        };
        out.push(format!(
            "category {} is {} while {which} regressed ({}): a kernel is judged against \
             the kernel threshold {}, its category against the category threshold {}",
            c.category,
            row_verdict(&c.change, true),
            fmt_change(MetricUnit::Ns, &first.change),
            fmt_threshold(MetricUnit::Ns, &first.change),
            fmt_threshold(MetricUnit::Ns, &c.change),
        ));
    }
    out
}

pub(crate) fn mbu_line(g: &GroupComparison, style: Style, judge: bool) -> String {
    let bold = |s: &str| {
        if style == Style::Markdown {
            format!("**{s}**")
        } else {
            s.to_owned()
        }
    };
    match g.metrics.iter().find(|m| m.metric == metric::MBU) {
        Some(m) => {
            let ch = &m.change;
            format!(
                "{} (derived: floor ÷ wall, median): {} → {} ({}), {}",
                bold("Floor / MBU"),
                cell_opt(ch.baseline_median, fmt_pct),
                cell_opt(ch.candidate_median, fmt_pct),
                ch.change
                    .map(|d| fmt_delta(m.unit, d))
                    .unwrap_or_default(),
                row_verdict(ch, judge)
            )
        }
        None => format!(
            "{}: not compared — no floor on every step of both sides (record both with --model; a step measured below its floor has none)",
            bold("Floor / MBU")
        ),
    }
}

/// The waterfall of one group: top kernels by |Δ mean|, "N others", the gap, and the sum
/// check in the last row.
pub(crate) fn waterfall_table(w: &Waterfall, top: usize, names: Names<'_>) -> Option<Table> {
    let check = w.waterfall_check.as_ref()?;
    let s = cut(w, top);
    let mut t = Table::new(&[
        ("contributor", Align::Wrap),
        ("category", Align::Left),
        ("baseline µs (mean)", Align::Right),
        ("candidate µs (mean)", Align::Right),
        ("Δ mean per step", Align::Right),
    ]);
    for r in &s.top {
        t.row(vec![
            names.cell(&r.name, &r.short_name),
            r.category.clone(),
            fmt_us(r.baseline_mean_ns),
            fmt_us(r.candidate_mean_ns),
            fmt_signed_us(r.delta_ns),
        ]);
    }
    if let Some(&WaterfallFold {
        rows: n,
        delta_ns: d,
        baseline_mean_ns: b,
        candidate_mean_ns: c,
    }) = s.others
    {
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
/// The top `n` rows by |Δ| (gap excluded), the rest as the comparison folded them, and the
/// gap row: selection only.
pub(crate) struct Cut<'a> {
    pub top: Vec<&'a WaterfallRow>,
    pub others: Option<&'a WaterfallFold>,
    pub gap: Option<&'a WaterfallRow>,
}

/// Cut a waterfall for a table or chart: top `n` kernels, "N others", gap.
pub(crate) fn cut(w: &Waterfall, n: usize) -> Cut<'_> {
    Cut {
        top: waterfall_table_rows(w, n).collect(),
        others: w.folds.get(n),
        gap: w.waterfall.iter().find(|r| r.name == GAP_ROW),
    }
}

pub(crate) fn waterfall_table_rows(
    w: &Waterfall,
    top: usize,
) -> impl Iterator<Item = &WaterfallRow> {
    w.waterfall.iter().filter(|r| r.name != GAP_ROW).take(top)
}

/// The floor beside the waterfall: how far each side is from it and how much the floor
/// itself moved.
pub(crate) fn waterfall_floor_line(w: &Waterfall) -> Option<String> {
    let f = w.waterfall_floor.as_ref()?;
    // As before, only beside the waterfall's own check.
    w.waterfall_check.as_ref()?;
    Some(format!(
        "Mean floor per step (derived, MBU × wall): baseline {} µs ({} µs above it), \
         candidate {} µs ({} µs above it); the floor itself moved {}.",
        fmt_us(f.baseline_mean_floor_ns),
        fmt_us(f.baseline_above_floor_ns),
        fmt_us(f.candidate_mean_floor_ns),
        fmt_us(f.candidate_above_floor_ns),
        fmt_signed_us(f.delta_floor_ns),
    ))
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

/// The change of each kernel class's excess over its floor, beside the kernel waterfall:
/// one row per class both sides priced, means per step; None without a model on both
/// sides.
pub(crate) fn class_excess_table(w: &Waterfall) -> Option<Table> {
    if w.class_excess.is_empty() {
        return None;
    }
    let mut t = Table::new(&[
        ("class", Align::Left),
        ("baseline floor µs", Align::Right),
        ("candidate floor µs", Align::Right),
        ("baseline excess µs", Align::Right),
        ("candidate excess µs", Align::Right),
        ("Δ excess per step", Align::Right),
    ]);
    for c in &w.class_excess {
        t.row(vec![
            c.class.as_str().to_owned(),
            fmt_us(c.baseline_floor_ns),
            fmt_us(c.candidate_floor_ns),
            fmt_us(c.baseline_excess_ns),
            fmt_us(c.candidate_excess_ns),
            fmt_signed_us(c.delta_excess_ns),
        ]);
    }
    Some(t)
}
