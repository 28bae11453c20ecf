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
            crate::text::fmt_int(n as i64)
        ),
        None => String::new(),
    };
    format!(
        "cannot see a {threshold} change in {name} with {steps}: the smallest visible \
         change is {visible}{capture}"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(rel: f64, abs: f64) -> Threshold {
        Threshold {
            rel,
            abs,
            gate: true,
        }
    }

    fn iv(rel: (f64, f64), abs: (f64, f64)) -> ShiftInterval {
        ShiftInterval {
            abs,
            rel: Some(rel),
        }
    }

    #[test]
    fn the_effective_threshold_is_the_larger_of_rel_and_abs_over_the_median() {
        assert_eq!(effective_rel(t(0.03, 20_000.0), 1e6), Some(0.03));
        // A 7.6 µs wall: 20 µs is 263% of it, so that is the smallest regression.
        let e = effective_rel(t(0.03, 20_000.0), 7_600.0).unwrap();
        assert!((e - 20_000.0 / 7_600.0).abs() < 1e-12);
        assert_eq!(effective_rel(t(0.03, 1.0), 0.0), None);
    }

    #[test]
    fn steps_needed_put_the_half_width_at_half_the_threshold() {
        // ±10% from 14 steps a side against 3%: N = 14 · (0.10 / 0.015)² = 622.2 → 623.
        let p = power(&iv((-0.10, 0.10), (-1e5, 1e5)), 1e6, t(0.03, 0.0), 14, 14);
        assert!(p.underpowered);
        assert!((p.detectable_rel.unwrap() - 0.10).abs() < 1e-12);
        assert_eq!(p.steps_needed, Some(623));
        // Unequal sides: n_h = 2 / (1/10 + 1/40) = 16.
        let p = power(&iv((-0.03, 0.03), (0.0, 0.0)), 1.0, t(0.02, 0.0), 10, 40);
        assert_eq!(p.steps_needed, Some(144)); // 16 · (0.03 / 0.01)²
                                               // Within the threshold: resolved.
        let p = power(&iv((-0.01, 0.02), (0.0, 0.0)), 1.0, t(0.03, 0.0), 50, 50);
        assert!(!p.underpowered);
        // A zero threshold: no finite sample sees it, no estimate.
        let p = power(&iv((-0.01, 0.01), (0.0, 0.0)), 1.0, t(0.0, 0.0), 50, 50);
        assert!(p.underpowered && p.steps_needed.is_none());
    }
}
