//! The statistics of the gate: medians, and a seeded percentile-bootstrap interval for the
//! change in the median between two samples, drawn exactly and in O(1) per resample.
//!
//! Why not resample the data: a bootstrap resample of n values from the sorted sample
//! x₍₁₎ ≤ … ≤ x₍ₙ₎ is n indices I = ⌈n·U⌉ with U ~ Uniform(0,1); the k-th smallest index is
//! ⌈n·U₍ₖ₎⌉ (⌈·⌉ is monotone), and the k-th order statistic of n uniforms is
//! Beta(k, n−k+1). So the resample median of odd n is x at ⌈n·B⌉ with B ~ Beta(m, n−m+1),
//! m = (n+1)/2; for even n (m = n/2) the (m+1)-th is U₍ₘ₎ + (1−U₍ₘ₎)·Beta(1, n−m) (the
//! minimum of the n−m uniforms left above U₍ₘ₎). This is the same distribution as sorting
//! 10,000 resamples of 10,000 steps, at the cost of one sort. `tests` check it against full
//! enumeration of every resample.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

pub use crate::stats::{median_in_place, median_sorted, sorted};

/// A standard normal variate (Box–Muller; one of the pair is dropped for simplicity).
fn normal(rng: &mut SmallRng) -> f64 {
    let u1: f64 = 1.0 - rng.random::<f64>(); // (0, 1]: ln is finite
    let u2: f64 = rng.random::<f64>();
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

/// Gamma(shape, 1) for shape ≥ 1 (Marsaglia & Tsang 2000, "A simple method for generating
/// gamma variables", ACM TOMS 26(3)).
fn gamma(shape: f64, rng: &mut SmallRng) -> f64 {
    debug_assert!(shape >= 1.0);
    let d = shape - 1.0 / 3.0;
    let c = 1.0 / (9.0 * d).sqrt();
    loop {
        let x = normal(rng);
        let v = 1.0 + c * x;
        if v <= 0.0 {
            continue;
        }
        let v = v * v * v;
        let u: f64 = rng.random::<f64>();
        if u < 1.0 - 0.0331 * x * x * x * x || u.ln() < 0.5 * x * x + d * (1.0 - v + v.ln()) {
            return d * v;
        }
    }
}

/// Beta(a, b) for a, b ≥ 1 as Ga/(Ga+Gb).
fn beta(a: f64, b: f64, rng: &mut SmallRng) -> f64 {
    if a == 1.0 {
        // Beta(1, b) = 1 − U^(1/b): exact and cheap (the min of b uniforms for integer b).
        let u: f64 = rng.random::<f64>();
        return 1.0 - u.powf(1.0 / b);
    }
    let x = gamma(a, rng);
    let y = gamma(b, rng);
    x / (x + y)
}

/// The 1-based index ⌈n·u⌉ clamped into 1..=n, as a 0-based index.
fn order_index(n: usize, u: f64) -> usize {
    let i = (n as f64 * u).ceil() as usize;
    i.clamp(1, n) - 1
}

/// One draw of the median of a bootstrap resample of `sorted` (non-empty, sorted).
pub(crate) fn resampled_median(sorted: &[f64], rng: &mut SmallRng) -> f64 {
    let n = sorted.len();
    if n == 1 {
        return sorted[0];
    }
    if n % 2 == 1 {
        let m = n.div_ceil(2); // (n + 1) / 2
        let b = beta(m as f64, (n - m + 1) as f64, rng);
        sorted[order_index(n, b)]
    } else {
        let m = n / 2;
        let um = beta(m as f64, (n - m + 1) as f64, rng);
        let next = um + (1.0 - um) * beta(1.0, (n - m) as f64, rng);
        (sorted[order_index(n, um)] + sorted[order_index(n, next)]) / 2.0
    }
}

/// A percentile-bootstrap interval for the change of the median, candidate − baseline.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct ShiftInterval {
    /// Interval of the absolute change (same unit as the samples).
    pub abs: (f64, f64),
    /// Interval of the relative change (candidate/baseline − 1); None when the baseline
    /// median is not positive, where a ratio means nothing.
    pub rel: Option<(f64, f64)>,
}

/// Bootstrap the change in the median between two sorted, non-empty samples: each
/// resample draws both sides independently; the interval is the central `confidence` of
/// the `resamples` replicate changes. Deterministic for a given `seed`.
pub(crate) fn median_shift_interval(
    base_sorted: &[f64],
    cand_sorted: &[f64],
    resamples: usize,
    confidence: f64,
    seed: u64,
) -> ShiftInterval {
    let resamples = resamples.max(1);
    let mut rng = SmallRng::seed_from_u64(seed);
    let ratio_ok = median_sorted(base_sorted).is_some_and(|m| m > 0.0);
    let mut abs = Vec::with_capacity(resamples);
    let mut rel = Vec::with_capacity(if ratio_ok { resamples } else { 0 });
    for _ in 0..resamples {
        let b = resampled_median(base_sorted, &mut rng);
        let c = resampled_median(cand_sorted, &mut rng);
        abs.push(c - b);
        if ratio_ok {
            // A replicate whose baseline median is 0 gives ±inf: it sorts to an end,
            // which is what such a replicate means for the interval.
            rel.push(if b == 0.0 && c == 0.0 {
                0.0
            } else {
                c / b - 1.0
            });
        }
    }
    ShiftInterval {
        abs: percentile_interval(&mut abs, confidence),
        rel: ratio_ok.then(|| percentile_interval(&mut rel, confidence)),
    }
}

/// The central `confidence` interval of `reps` (reordered): the (α/2) and (1−α/2)
/// quantiles at the nearest rank of (R−1)·q.
pub(crate) fn percentile_interval(reps: &mut [f64], confidence: f64) -> (f64, f64) {
    let r = reps.len();
    let alpha = (1.0 - confidence).clamp(0.0, 1.0);
    let lo_i = ((r - 1) as f64 * alpha / 2.0).round() as usize;
    let hi_i = ((r - 1) as f64 * (1.0 - alpha / 2.0)).round() as usize;
    let (_, lo, rest) = reps.select_nth_unstable_by(lo_i, f64::total_cmp);
    let lo = *lo;
    let hi = if hi_i == lo_i {
        lo
    } else {
        // rest holds indices lo_i+1.. ; select within it.
        let k = hi_i - lo_i - 1;
        *rest.select_nth_unstable_by(k, f64::total_cmp).1
    };
    (lo, hi)
}

/// A seed for one (group, metric) pair: FNV-1a of the key mixed into the policy seed, so a
/// metric's interval does not depend on which other metrics were computed or in what order.
pub(crate) fn seed_for(base_seed: u64, key: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in key.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h ^ base_seed.rotate_left(17)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// The exact bootstrap distribution of the median, by enumerating all n^n resamples.
    fn enumerate(x: &[f64]) -> BTreeMap<u64, f64> {
        let n = x.len();
        let total = n.pow(n as u32);
        let mut out = BTreeMap::new();
        let mut idx = vec![0usize; n];
        let mut buf = vec![0.0; n];
        for mut t in 0..total {
            for slot in &mut idx {
                *slot = t % n;
                t /= n;
            }
            for (b, &i) in buf.iter_mut().zip(&idx) {
                *b = x[i];
            }
            let m = median_in_place(&mut buf).unwrap();
            *out.entry(m.to_bits()).or_insert(0.0) += 1.0 / total as f64;
        }
        out
    }

    fn check_sampler(x: &[f64]) {
        let exact = enumerate(x);
        let sorted = sorted(x);
        let mut rng = SmallRng::seed_from_u64(7);
        let draws = 200_000;
        let mut got: BTreeMap<u64, f64> = BTreeMap::new();
        for _ in 0..draws {
            let m = resampled_median(&sorted, &mut rng);
            *got.entry(m.to_bits()).or_insert(0.0) += 1.0 / draws as f64;
        }
        for (k, p) in &exact {
            let q = got.get(k).copied().unwrap_or(0.0);
            // 200k draws: the standard error of a frequency is ≤ 0.0012.
            assert!(
                (p - q).abs() < 0.005,
                "value {} exact {p} sampled {q}",
                f64::from_bits(*k)
            );
        }
        for k in got.keys() {
            assert!(exact.contains_key(k), "sampled an impossible median");
        }
    }

    #[test]
    fn sampler_matches_full_enumeration_odd_n() {
        check_sampler(&[5.0, 1.0, 16.0, 2.0, 4.0]);
    }

    #[test]
    fn sampler_matches_full_enumeration_even_n() {
        check_sampler(&[32.0, 1.0, 2.0, 4.0, 8.0, 16.0]);
    }

    #[test]
    fn medians() {
        assert_eq!(median_in_place(&mut [3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median_in_place(&mut [4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(median_in_place(&mut []), None);
        assert_eq!(median_sorted(&[1.0, 2.0, 3.0, 10.0]), Some(2.5));
    }

    #[test]
    fn percentile_interval_by_rank() {
        let mut v: Vec<f64> = (0..101).rev().map(f64::from).collect();
        // α = 0.1 → ranks round(100·0.05) = 5 and round(100·0.95) = 95.
        assert_eq!(percentile_interval(&mut v, 0.90), (5.0, 95.0));
    }

    #[test]
    fn interval_is_seeded_and_brackets_a_known_shift() {
        let base: Vec<f64> = (0..200).map(|i| 1000.0 + f64::from(i % 50)).collect();
        let cand: Vec<f64> = base.iter().map(|v| v + 100.0).collect();
        let (b, c) = (sorted(&base), sorted(&cand));
        let a = median_shift_interval(&b, &c, 2000, 0.95, 1);
        assert_eq!(a, median_shift_interval(&b, &c, 2000, 0.95, 1));
        assert!(a.abs.0 <= 100.0 && 100.0 <= a.abs.1, "{a:?}");
        // Medians 1024.5 → 1124.5.
        let (lo, hi) = a.rel.unwrap();
        let true_rel = 1124.5 / 1024.5 - 1.0;
        assert!(lo <= true_rel && true_rel <= hi, "{a:?}");
    }
}
