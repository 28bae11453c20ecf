//! The statistics every layer shares, one definition each (a leaf module): the mean, the
//! median (of an unsorted slice by selection, of a sorted one), numpy's linear-interpolated
//! percentile, and the upper median the launch probe reports.

/// The arithmetic mean, None when empty.
pub fn mean(xs: &[f64]) -> Option<f64> {
    (!xs.is_empty()).then(|| xs.iter().sum::<f64>() / xs.len() as f64)
}

/// The arithmetic mean, 0 when empty (a sum of means over groups where an empty side adds
/// nothing).
pub(crate) fn mean_or_zero(xs: &[f64]) -> f64 {
    mean(xs).unwrap_or(0.0)
}

/// Median of an unsorted slice (reorders it; selection, not a full sort). NaN-free input.
pub fn median_in_place(xs: &mut [f64]) -> Option<f64> {
    let n = xs.len();
    if n == 0 {
        return None;
    }
    let m = n / 2;
    let (lo, mid, _) = xs.select_nth_unstable_by(m, f64::total_cmp);
    let upper = *mid;
    if n % 2 == 1 {
        return Some(upper);
    }
    let lower = lo.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    Some((lower + upper) / 2.0)
}

/// Median of a sorted slice.
pub fn median_sorted(sorted: &[f64]) -> Option<f64> {
    let n = sorted.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(sorted[n / 2]),
        _ => Some((sorted[n / 2 - 1] + sorted[n / 2]) / 2.0),
    }
}

/// A sorted copy (NaNs, which JSON cannot carry anyway, sort last).
pub fn sorted(xs: &[f64]) -> Vec<f64> {
    let mut v = xs.to_vec();
    v.sort_unstable_by(f64::total_cmp);
    v
}

/// Linear-interpolated percentile (numpy's default) of sorted values; NaN when empty.
pub fn percentile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let pos = q * (sorted.len() - 1) as f64;
    let lo = pos.floor() as usize;
    let hi = pos.ceil() as usize;
    sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo as f64)
}

/// The upper median (`sorted(x)[len(x)//2]`, the launch probe's definition, kept so its
/// figures compare with the method's), None when empty.
pub(crate) fn upper_median(values: &[f64]) -> Option<f64> {
    let v = sorted(values);
    v.get(v.len() / 2).copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_medians_agree_where_they_should_and_differ_where_defined_to() {
        // By hand: {1, 2, 3, 10} → median (2 + 3) / 2 = 2.5, upper median 3, mean 4.
        let xs = [10.0, 2.0, 1.0, 3.0];
        assert_eq!(median_in_place(&mut xs.clone()), Some(2.5));
        assert_eq!(median_sorted(&sorted(&xs)), Some(2.5));
        assert_eq!(percentile(&sorted(&xs), 0.5), 2.5);
        assert_eq!(upper_median(&xs), Some(3.0));
        assert_eq!(mean(&xs), Some(4.0));
        // p90 of 1..=11 (numpy): position 9 → 10.
        let r: Vec<f64> = (1..=11).map(f64::from).collect();
        assert_eq!(percentile(&r, 0.9), 10.0);
        assert_eq!(mean(&[]), None);
        assert_eq!(mean_or_zero(&[]), 0.0);
        assert_eq!(median_in_place(&mut []), None);
        assert!(percentile(&[], 0.5).is_nan());
    }
}
