//! Judging one row: the medians of two sample sets, their change, the bootstrap interval
//! where it matters, and whether the whole interval lies beyond the threshold.

use crate::baseline::policy::Policy;
use crate::baseline::stats::{median_in_place, median_shift_interval, seed_for};
use crate::wire::gate::{Change, RowVerdict, Threshold};

use super::power::power;

/// Reused buffers: judging 400 kernels must not allocate per kernel.
#[derive(Default)]
pub(super) struct Scratch {
    b: Vec<f64>,
    c: Vec<f64>,
}

/// Judge one pair of samples. `want_interval`: compute the interval even when the point
/// change stays inside the thresholds (for the few step metrics; kernels skip it, since an
/// interval cannot lie beyond a threshold its own point estimate does not cross, up to
/// bootstrap discreteness).
#[allow(clippy::too_many_arguments)]
pub(super) fn judge(
    base: &[f64],
    cand: &[f64],
    threshold: Threshold,
    higher_worse: bool,
    policy: &Policy,
    seed_key: &dyn Fn() -> String,
    want_interval: bool,
    scratch: &mut Scratch,
) -> Change {
    scratch.b.clear();
    scratch.b.extend_from_slice(base);
    scratch.c.clear();
    scratch.c.extend_from_slice(cand);
    let bm = median_in_place(&mut scratch.b);
    let cm = median_in_place(&mut scratch.c);
    let mut out = Change {
        baseline_median: bm,
        candidate_median: cm,
        baseline_mean: (!base.is_empty()).then(|| mean(base)),
        candidate_mean: (!cand.is_empty()).then(|| mean(cand)),
        baseline_samples: base.len(),
        candidate_samples: cand.len(),
        change: None,
        change_rel: None,
        interval: None,
        interval_rel: None,
        threshold,
        detectable: None,
        detectable_rel: None,
        steps_needed: None,
        higher_is_worse: higher_worse,
        verdict: RowVerdict::Inconclusive,
        gated: threshold.gate,
    };
    let (Some(bm), Some(cm)) = (bm, cm) else {
        return out;
    };
    let change = cm - bm;
    let rel = (bm > 0.0).then(|| cm / bm - 1.0);
    out.change = Some(change);
    out.change_rel = rel;
    if base.len() < policy.min_samples || cand.len() < policy.min_samples {
        return out;
    }
    out.verdict = RowVerdict::Ok;
    let crosses = change.abs() > threshold.abs && rel.is_none_or(|r| r.abs() > threshold.rel);
    if !(crosses || want_interval) {
        return out;
    }
    scratch.b.sort_unstable_by(f64::total_cmp);
    scratch.c.sort_unstable_by(f64::total_cmp);
    let iv = median_shift_interval(
        &scratch.b,
        &scratch.c,
        policy.resamples,
        policy.confidence,
        seed_for(policy.seed, &seed_key()),
    );
    out.interval = Some([iv.abs.0, iv.abs.1]);
    out.interval_rel = iv.rel.map(|(a, b)| [a, b]);
    // Orient so that "worse" is positive.
    let s = if higher_worse { 1.0 } else { -1.0 };
    let abs_beyond = |sign: f64| sign * s * change > threshold.abs;
    let whole_beyond = |sign: f64| {
        // sign = +1: worse side; −1: better side.
        let (lo, hi, t) = match iv.rel {
            Some((lo, hi)) => (lo, hi, threshold.rel),
            // No ratio (baseline median 0): the absolute interval must clear `abs`.
            None => (iv.abs.0, iv.abs.1, threshold.abs),
        };
        let (lo, hi) = if sign * s > 0.0 { (lo, hi) } else { (-hi, -lo) };
        lo > t && hi >= lo
    };
    out.verdict = if abs_beyond(1.0) && whole_beyond(1.0) {
        RowVerdict::Regression
    } else if abs_beyond(-1.0) && whole_beyond(-1.0) {
        RowVerdict::Improvement
    } else {
        RowVerdict::Ok
    };
    if want_interval {
        let p = power(&iv, bm, threshold, base.len(), cand.len());
        out.detectable = Some(p.detectable);
        out.detectable_rel = p.detectable_rel;
        // A regression or improvement the interval resolved stands however wide it is;
        // "ok" from samples that could not have seen the threshold is no pass.
        if p.underpowered && out.verdict == RowVerdict::Ok {
            out.verdict = RowVerdict::Inconclusive;
            out.steps_needed = p.steps_needed;
        }
    }
    out
}

pub(super) use crate::stats::mean_or_zero as mean;
