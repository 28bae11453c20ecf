//! The summaries of a set of steps: percentiles, the per-kind summary and the median
//! step, which the steps report carries and the pipeline takes after every filter.

use crate::wire::steps::KindLabel;
use crate::wire::steps::{KindSummary, Spread, Step, StepAt, StepKind};

pub use crate::stats::percentile;

fn spread(mut v: Vec<f64>) -> Option<Spread> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    Some(Spread {
        median: percentile(&v, 0.5),
        p10: percentile(&v, 0.1),
        p90: percentile(&v, 0.9),
    })
}

/// The median step by wall of the most common kind among the steps with GPU work (ties:
/// the lower index), or None when no step has GPU work.
pub fn median_step(steps: &[Step]) -> Option<StepAt> {
    let mut counts: Vec<(KindLabel, usize)> = Vec::new();
    for s in steps.iter().filter(|s| s.wall_ns.is_some()) {
        match counts.iter_mut().find(|c| c.0 == s.kind_label()) {
            Some(c) => c.1 += 1,
            None => counts.push((s.kind_label(), 1)),
        }
    }
    let kind = counts.iter().max_by_key(|c| c.1)?.0;
    let mut of: Vec<&Step> = steps
        .iter()
        .filter(|s| s.wall_ns.is_some() && s.kind_label() == kind)
        .collect();
    of.sort_by_key(|s| (s.wall_ns, s.index));
    of.get(of.len() / 2).map(|s| StepAt {
        series: s.series,
        index: s.index,
    })
}

/// Per-kind summaries over the steps that have GPU work, an inferred kind apart from the
/// marker kind of the same name.
pub fn summarize(steps: &[Step]) -> Vec<KindSummary> {
    let mut kinds: Vec<KindLabel> = steps
        .iter()
        .filter(|s| s.wall_ns.is_some())
        .map(Step::kind_label)
        .collect();
    kinds.sort();
    kinds.dedup();
    kinds
        .into_iter()
        .map(|k| {
            let sel: Vec<&Step> = steps
                .iter()
                .filter(|s| s.kind_label() == k && s.wall_ns.is_some())
                .collect();
            let col = |f: &dyn Fn(&Step) -> Option<f64>| {
                spread(sel.iter().filter_map(|s| f(s)).collect())
            };
            KindSummary {
                kind: if k.inferred {
                    StepKind::Unknown
                } else {
                    k.kind
                },
                kind_guess: k.inferred.then_some(k.kind),
                count: sel.len(),
                wall_ns: col(&|s| s.wall_ns.map(|v| v as f64)),
                period_ns: col(&|s| s.period_ns.map(|v| v as f64)),
                busy_ns: col(&|s| Some(s.busy_ns as f64)),
                gap_ns: col(&|s| s.gap_ns.map(|v| v as f64)),
                launches: col(&|s| Some(s.launches as f64)),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_interpolate() {
        let v = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(percentile(&v, 0.5), 2.5);
        assert!((percentile(&v, 0.1) - 1.3).abs() < 1e-12);
        assert!((percentile(&v, 0.9) - 3.7).abs() < 1e-12);
    }
}
