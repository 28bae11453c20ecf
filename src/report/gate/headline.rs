//! The PR comment's first two lines: the verdict's proving change with its interval (line
//! 1, beside the verdict) and the largest contributor to the change of the mean wall
//! (line 2). Selection only: every figure is one the comparison holds.

use super::tables::{fmt_change, fmt_interval, fmt_signed_us, Names};
use crate::wire::baseline::metric;
use crate::wire::gate::{Comparison, GroupComparison, RowVerdict, GAP_ROW};

/// The group line 1 and line 2 speak of: the first whose verdict is the run's (the group
/// that decided it), else the first.
fn deciding_group(c: &Comparison) -> Option<&GroupComparison> {
    c.groups
        .iter()
        .find(|g| g.verdict == c.verdict)
        .or(c.groups.first())
}

/// The change that line 1 shows beside the verdict, with its interval: the deciding
/// group's first step metric that is not ok, else its wall. `None` without a group or a
/// change.
pub(crate) fn headline_change(c: &Comparison) -> Option<String> {
    let g = deciding_group(c)?;
    let m = g
        .metrics
        .iter()
        .find(|m| m.change.verdict != RowVerdict::Ok)
        .or_else(|| g.metrics.iter().find(|m| m.metric == metric::WALL_NS))?;
    let u = m.unit;
    m.change.change?;
    let interval = match fmt_interval(u, &m.change) {
        i if i == "–" => String::new(),
        i => format!(", 95% interval {i}"),
    };
    let group = if c.groups.len() > 1 {
        format!("{} ", g.label)
    } else {
        String::new()
    };
    Some(format!(
        "{group}{} {}{interval}",
        m.label,
        fmt_change(u, &m.change)
    ))
}

/// Line 2: the waterfall row that moved most in the deciding group (the gap included),
/// with its share of the change of the mean wall (both from the comparison).
pub(crate) fn largest_contributor(c: &Comparison, names: Names<'_>) -> Option<String> {
    let g = deciding_group(c)?;
    let w = &g.explain;
    w.waterfall_check.as_ref()?;
    let Some(largest) = w.largest_contributor.as_ref() else {
        return Some("Largest contributor: none (no row of the waterfall moved).".to_owned());
    };
    let row = w.waterfall.get(largest.row)?;
    let name = if row.name == GAP_ROW {
        "the gap (wall − busy)".to_owned()
    } else {
        names.cell(&row.name, &row.short_name)
    };
    let of = match (largest.share_of_change, &w.waterfall_check) {
        (Some(share), Some(k)) => format!(
            ": {} of the {} change in the mean wall",
            fmt_share(share),
            fmt_signed_us(k.delta_mean_wall_ns)
        ),
        (None, Some(_)) => ", with the mean wall unchanged".to_owned(),
        _ => String::new(),
    };
    Some(format!(
        "Largest contributor: {name} {} per step (mean){of}.",
        fmt_signed_us(row.delta_ns)
    ))
}

/// A share as a whole percent; "−20%" where the row moved against the wall.
fn fmt_share(share: f64) -> String {
    let pct = (share * 100.0).round();
    if pct < 0.0 {
        format!("−{}%", -pct)
    } else {
        format!("{}%", pct.abs())
    }
}
