//! Axis ticks: where they go and how they read. A step of 1, 2 or 5 × 10^k chosen from the
//! range, and as many decimals as that step needs, so every label on an axis is distinct
//! (plotters' own labels, formatted without knowing the step, repeated `310, 310, 311` on a
//! narrow range).

use std::ops::Range;

use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint, Ranged};
use plotters::coord::types::RangedCoordf64;

/// A linear axis over `range` whose ticks (and grid lines) are exactly `ticks`: plotters
/// draws them where [`Ticks`] put them, and the chart's label formatter writes them.
#[derive(Clone)]
pub struct TickAxis {
    range: Range<f64>,
    ticks: Vec<f64>,
}

impl TickAxis {
    pub fn new(range: Range<f64>, ticks: Vec<f64>) -> TickAxis {
        TickAxis { range, ticks }
    }
}

impl Ranged for TickAxis {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, v: &f64, limit: (i32, i32)) -> i32 {
        RangedCoordf64::from(self.range.clone()).map(v, limit)
    }

    fn key_points<H: KeyPointHint>(&self, hint: H) -> Vec<f64> {
        // Bold points only: the light grid stays off.
        if hint.weight().allow_light_points() {
            Vec::new()
        } else {
            self.ticks.clone()
        }
    }

    fn range(&self) -> Range<f64> {
        self.range.clone()
    }
}

/// The ticks of one linear axis: the values and the decimals their labels carry.
#[derive(Debug, Clone, PartialEq)]
pub struct Ticks {
    pub values: Vec<f64>,
    /// The distance between two ticks: 1, 2 or 5 × 10^k.
    pub step: f64,
    /// Decimals every label is written with (those the step needs, no more).
    pub decimals: usize,
}

impl Ticks {
    /// At most about `target` ticks inside `[lo, hi]`; `integer` keeps the step ≥ 1 (step
    /// indices, counts). A range without width is widened around its value.
    pub fn new(lo: f64, hi: f64, target: usize, integer: bool) -> Ticks {
        let (lo, hi) = if lo.is_finite() && hi.is_finite() && hi > lo {
            (lo, hi)
        } else if lo.is_finite() {
            (lo - 0.5, lo + 0.5)
        } else {
            (0.0, 1.0)
        };
        let raw = (hi - lo) / target.max(1) as f64;
        let mag = 10f64.powf(raw.log10().floor());
        let mut step = [1.0, 2.0, 5.0, 10.0]
            .iter()
            .map(|m| m * mag)
            .find(|s| *s >= raw * (1.0 - 1e-9))
            .unwrap_or(10.0 * mag);
        if integer {
            step = step.max(1.0);
        }
        // Multiples of the step, computed from integers so no error accumulates.
        let (k0, k1) = (
            (lo / step - 1e-9).ceil() as i64,
            (hi / step + 1e-9).floor() as i64,
        );
        let values = (k0..=k1).map(|k| k as f64 * step).collect();
        let decimals = (-step.log10().floor()).max(0.0) as usize;
        Ticks {
            values,
            step,
            decimals,
        }
    }

    /// A tick's label: the ticks' decimals, thousands separated, no `-0`.
    pub fn label(&self, v: f64) -> String {
        let s = format!("{v:.*}", self.decimals);
        let s = if s
            .trim_start_matches('-')
            .chars()
            .all(|c| c == '0' || c == '.')
        {
            s.trim_start_matches('-').to_owned()
        } else {
            s
        };
        crate::report::group_thousands(&s)
    }
}

/// Axis numbers where no step is known (log axes): thousands separated, no trailing zeros.
pub fn fmt_axis(v: f64) -> String {
    let s = if v.abs() >= 100.0 || v == v.round() {
        format!("{v:.0}")
    } else if v.abs() >= 1.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    };
    crate::report::group_thousands(&s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(t: &Ticks) -> Vec<String> {
        t.values.iter().map(|v| t.label(*v)).collect()
    }

    /// The mantissa of a step: 1, 2 or 5.
    fn mantissa(step: f64) -> f64 {
        let m = step / 10f64.powf(step.log10().floor());
        (m * 1e6).round() / 1e6
    }

    #[test]
    fn narrow_ranges_get_distinct_labels_on_1_2_5_steps() {
        // 310 … 312.4 µs is where the old formatter wrote 310, 310, 311, 312, 312.
        for (lo, hi) in [
            (309.6, 312.4),
            (2_584.4, 2_584.6),
            (0.001, 0.0013),
            (1e6, 1e6 + 3.0),
            (-0.7, 0.3),
            (2_550.0, 2_950.0),
            (0.0, 1_000_000.0),
            (17.0, 17.000_01),
        ] {
            let t = Ticks::new(lo, hi, 8, false);
            let l = labels(&t);
            assert!(l.len() >= 3 && l.len() <= 11, "{lo}..{hi}: {l:?}");
            let mut d = l.clone();
            d.sort();
            d.dedup();
            assert_eq!(d.len(), l.len(), "{lo}..{hi}: repeated labels {l:?}");
            assert!(
                [1.0, 2.0, 5.0].contains(&mantissa(t.step)),
                "{lo}..{hi}: step {}",
                t.step
            );
            assert!(t.values.iter().all(|v| *v >= lo - 1e-9 && *v <= hi + 1e-9));
        }
    }

    #[test]
    fn labels_by_hand() {
        let t = Ticks::new(309.6, 312.4, 8, false);
        assert_eq!(t.step, 0.5);
        assert_eq!(labels(&t), ["310.0", "310.5", "311.0", "311.5", "312.0"]);
        let t = Ticks::new(0.0, 2_600.0, 6, false);
        assert_eq!(labels(&t), ["0", "500", "1,000", "1,500", "2,000", "2,500"]);
        let t = Ticks::new(-0.25, 0.25, 4, false);
        assert_eq!(labels(&t), ["-0.2", "0.0", "0.2"]);
    }

    #[test]
    fn integer_axes_never_step_below_one() {
        let t = Ticks::new(0.0, 3.0, 8, true);
        assert_eq!(labels(&t), ["0", "1", "2", "3"]);
        let t = Ticks::new(0.0, 59.0, 8, true);
        assert_eq!(labels(&t), ["0", "10", "20", "30", "40", "50"]);
    }

    #[test]
    fn a_range_without_width_still_has_ticks() {
        let t = Ticks::new(5.0, 5.0, 8, false);
        assert!(t.values.contains(&5.0), "{:?}", t.values);
        assert!(!Ticks::new(f64::NAN, 1.0, 8, false).values.is_empty());
    }
}
