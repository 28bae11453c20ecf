//! Power before pass: what the interval of a step metric could have seen. Its half-width
//! is the smallest change the two samples can tell from none at the policy's confidence;
//! where that exceeds the smallest change the gate calls a regression, an "ok" is no pass
//! but inconclusive, with the steps that would resolve it (docs/gate.md).

use crate::baseline::policy::Policy;
use crate::baseline::stats::ShiftInterval;
use crate::wire::gate::{Change, Threshold};

/// What an interval could have seen (docs/gate.md, "Power before pass").
pub(super) struct Power {
    /// Half the width of the absolute interval.
    pub detectable: f64,
    /// Half the width of the relative interval, when there is one.
    pub detectable_rel: Option<f64>,
    /// The smallest visible change exceeds the smallest change the gate calls a
    /// regression.
    pub underpowered: bool,
    /// Steps per side that would bring the smallest visible change to half that.
    pub steps_needed: Option<usize>,
}

/// The smallest change the gate calls a regression, relative to the baseline median:
/// both thresholds must be crossed, so the larger of `rel` and `abs` / median. None when
/// the median is not positive (no ratio; the absolute threshold alone applies).
pub(super) fn effective_rel(threshold: Threshold, baseline_median: f64) -> Option<f64> {
    (baseline_median > 0.0).then(|| threshold.rel.max(threshold.abs / baseline_median))
}

/// Half-widths of the interval against the effective threshold. The steps needed assume
/// both sides as noisy as now and captured at the same count N: the interval's width
/// scales as √(1/n_b + 1/n_c), so N = n_h · (d / (t/2))² with n_h = 2 / (1/n_b + 1/n_c).
pub(super) fn power(
    iv: &ShiftInterval,
    baseline_median: f64,
    threshold: Threshold,
    nb: usize,
    nc: usize,
) -> Power {
    let detectable = (iv.abs.1 - iv.abs.0).abs() / 2.0;
    let detectable_rel = iv.rel.map(|(lo, hi)| (hi - lo).abs() / 2.0);
    let (d, t) = match (detectable_rel, effective_rel(threshold, baseline_median)) {
        (Some(d), Some(t)) => (d, t),
        _ => (detectable, threshold.abs),
    };
    let underpowered = d.is_nan() || d > t;
    let n_h = 2.0 / (1.0 / nb.max(1) as f64 + 1.0 / nc.max(1) as f64);
    // No estimate from an infinite width (a resample with a zero median) or a zero
    // threshold (no finite sample sees a change of nothing).
    let n = n_h * (2.0 * d / t).powi(2);
    let steps_needed =
        (t > 0.0 && n.is_finite() && n < 1e12).then(|| (n.ceil() as usize).max(nb.max(nc) + 1));
    Power {
        detectable,
        detectable_rel,
        underpowered,
        steps_needed,
    }
}

/// What each short side lacks, exactly: "capture 7 more candidate steps", "capture 1
/// more baseline and 3 more candidate steps".
pub(super) fn missing(nb: usize, nc: usize, need: usize, what: &str) -> String {
    let b = need.saturating_sub(nb);
    let c = need.saturating_sub(nc);
    match (b, c) {
        (0, c) => format!("capture {c} more candidate {what}"),
        (b, 0) => format!("capture {b} more baseline {what}"),
        (b, c) => format!("capture {b} more baseline and {c} more candidate {what}"),
    }
}

/// Why one gated step metric is inconclusive. With an interval (`detectable` set): the
/// threshold it could not see, the smallest change it could, and the steps that would
/// (docs/gate.md, "Power before pass"). Without: the samples a side lacks.
pub(super) fn inconclusive_reason(name: &str, ch: &Change, policy: &Policy) -> String {
    let (nb, nc) = (ch.baseline_samples, ch.candidate_samples);
    let Some(d) = ch.detectable else {
        return format!(
            "{name} has {nb} baseline and {nc} candidate samples, {} needed per side: {}",
            policy.min_samples,
            missing(nb, nc, policy.min_samples, "steps")
        );
    };
    let pct = |r: f64| format!("{:.1}%", r * 100.0);
    let bm = ch.baseline_median.unwrap_or(0.0);
    let (threshold, visible) = match (effective_rel(ch.threshold, bm), ch.detectable_rel) {
        (Some(t), Some(r)) => (pct(t), pct(r)),
        _ => (format!("{}", ch.threshold.abs), format!("{d}")),
    };
    let steps = if nb == nc {
        format!("{nb} noisy steps")
    } else {
        format!("{nb} baseline and {nc} candidate noisy steps")
    };
    let capture = match ch.steps_needed {
        Some(n) => format!(
            "; capture ≥ {} steps per side (derived: the interval narrows as 1/√n)",
            crate::report::fmt_int(n as i64)
        ),
        None => String::new(),
    };
    format!(
        "cannot see a {threshold} change in {name} with {steps}: the smallest visible \
         change is {visible}{capture}"
    )
}
