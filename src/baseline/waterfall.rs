//! The exact step-time waterfall of one compared group: the change of the mean step wall
//! time split into one row per kernel name (mean exclusive ns per step, candidate minus
//! baseline; new and vanished names included) plus one `[gap]` row.
//!
//! Why means: per step, wall = busy + gap and busy = Σ exclusive over names (exclusive
//! times partition the busy union), and means are linear, so
//! Δ mean wall = Σ_names Δ mean exclusive + Δ mean gap holds exactly. Medians do not add
//! up, which is why the gate's verdict (medians) and this decomposition (means) differ in
//! what they show.

use std::collections::BTreeSet;

use crate::wire::baseline::{metric, Group};
use crate::wire::gate::{
    LargestContributor, Waterfall, WaterfallCheck, WaterfallFloor, WaterfallFold, WaterfallRow,
    EXACT_TOLERANCE_NS, GAP_ROW,
};

use crate::stats::mean_or_zero as mean;

/// Mean floor per step: floor_i = MBU_i × wall_i (MBU = floor / wall).
fn mean_floor(g: &Group) -> Option<f64> {
    let mbu = g.metrics.get(metric::MBU)?;
    let wall = g.metrics.get(metric::WALL_NS)?;
    if mbu.len() != wall.len() || wall.is_empty() {
        return None;
    }
    Some(mbu.iter().zip(wall).map(|(m, w)| m * w).sum::<f64>() / wall.len() as f64)
}

/// Decompose the change of the mean step wall time between two groups of like steps.
pub fn waterfall(b: &Group, c: &Group) -> Waterfall {
    let (Some(wb), Some(wc)) = (
        b.metrics.get(metric::WALL_NS),
        c.metrics.get(metric::WALL_NS),
    ) else {
        return unavailable("no wall samples on one side");
    };
    let (Some(gb), Some(gc)) = (b.metrics.get(metric::GAP_NS), c.metrics.get(metric::GAP_NS))
    else {
        return unavailable("no gap samples on one side");
    };
    if wb.is_empty() || wc.is_empty() {
        return unavailable("no steps on one side");
    }
    let names: BTreeSet<&String> = b.kernels.keys().chain(c.kernels.keys()).collect();
    let mut rows = Vec::with_capacity(names.len() + 1);
    for name in names {
        let (kb, kc) = (b.kernels.get(name), c.kernels.get(name));
        let Some(k) = kb.or(kc) else { continue };
        let mb = kb.map_or(0.0, |k| mean(&k.exclusive_ns));
        let mc = kc.map_or(0.0, |k| mean(&k.exclusive_ns));
        rows.push(WaterfallRow {
            name: name.clone(),
            short_name: k.short_name.clone(),
            category: k.category.clone(),
            baseline_mean_ns: mb,
            candidate_mean_ns: mc,
            delta_ns: mc - mb,
        });
    }
    rows.sort_by(|x, y| {
        y.delta_ns
            .abs()
            .total_cmp(&x.delta_ns.abs())
            .then_with(|| x.name.cmp(&y.name))
    });
    let (mgb, mgc) = (mean(gb), mean(gc));
    rows.push(WaterfallRow {
        name: GAP_ROW.to_owned(),
        short_name: GAP_ROW.to_owned(),
        category: "gap".to_owned(),
        baseline_mean_ns: mgb,
        candidate_mean_ns: mgc,
        delta_ns: mgc - mgb,
    });
    let delta = mean(wc) - mean(wb);
    let sum: f64 = rows.iter().map(|r| r.delta_ns).sum();
    let exact = (sum - delta).abs() < EXACT_TOLERANCE_NS;
    let note = (!exact).then(|| {
        format!(
            "rows sum to {sum:.1} ns but the mean wall changed {delta:.1} ns: the stored \
             kernel samples do not cover every step's busy time (a baseline written by \
             another tool or version?)"
        )
    });
    let floor = match (mean_floor(b), mean_floor(c)) {
        (Some(fb), Some(fc)) => Some(WaterfallFloor {
            baseline_mean_floor_ns: fb,
            candidate_mean_floor_ns: fc,
            delta_floor_ns: fc - fb,
            baseline_above_floor_ns: mean(wb) - fb,
            candidate_above_floor_ns: mean(wc) - fc,
        }),
        _ => None,
    };
    let largest_contributor = largest(&rows, delta);
    Waterfall {
        largest_contributor,
        folds: folds(&rows),
        waterfall: rows,
        waterfall_check: Some(WaterfallCheck {
            baseline_mean_wall_ns: mean(wb),
            candidate_mean_wall_ns: mean(wc),
            delta_mean_wall_ns: delta,
            sum_rows_ns: sum,
            exact,
        }),
        waterfall_floor: floor,
        waterfall_note: note,
        class_excess: crate::attribution::compare::excess_change(&b.classes, &c.classes),
    }
}

/// The row with the largest |Δ| (the last of equal ones) and its Δ over the wall's; none
/// when no row moved (a run compared with itself).
fn largest(rows: &[WaterfallRow], delta_wall_ns: f64) -> Option<LargestContributor> {
    let (row, r) = rows
        .iter()
        .enumerate()
        .filter(|(_, r)| r.delta_ns != 0.0)
        .max_by(|a, b| a.1.delta_ns.abs().total_cmp(&b.1.delta_ns.abs()))?;
    Some(LargestContributor {
        row,
        share_of_change: (delta_wall_ns != 0.0).then(|| r.delta_ns / delta_wall_ns),
    })
}

fn unavailable(why: &str) -> Waterfall {
    Waterfall {
        waterfall_note: Some(format!("waterfall unavailable: {why}")),
        ..Waterfall::default()
    }
}

/// For every cut `n`, the kernel rows from the `n`-th on folded into one (the gap row
/// left out): suffix sums, so any `--waterfall-top` reads its "N others" row.
fn folds(rows: &[WaterfallRow]) -> Vec<WaterfallFold> {
    let kernels: Vec<&WaterfallRow> = rows.iter().filter(|r| r.name != GAP_ROW).collect();
    let mut out = vec![WaterfallFold::default(); kernels.len()];
    let mut acc = WaterfallFold::default();
    for (i, r) in kernels.iter().enumerate().rev() {
        acc.rows += 1;
        acc.delta_ns += r.delta_ns;
        acc.baseline_mean_ns += r.baseline_mean_ns;
        acc.candidate_mean_ns += r.candidate_mean_ns;
        out[i] = acc;
    }
    out
}
