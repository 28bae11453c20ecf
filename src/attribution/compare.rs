//! The class attribution across two runs: the change of each kernel class's excess over
//! its floor between a baseline and a candidate group (from the per-step class samples a
//! baseline stores, `baseline::from_report`), shown beside the gate's kernel waterfall.

use std::collections::BTreeMap;

use crate::wire::attribution::{ClassExcessChange, ClassSamples, KernelClass};

use crate::stats::mean;

/// The change of each class's mean excess, for the classes both sides priced, in table
/// order. Empty when either side was recorded without a model.
pub(crate) fn excess_change(
    baseline: &BTreeMap<String, ClassSamples>,
    candidate: &BTreeMap<String, ClassSamples>,
) -> Vec<ClassExcessChange> {
    KernelClass::ALL
        .iter()
        .filter_map(|&class| {
            let (b, c) = (baseline.get(class.key())?, candidate.get(class.key())?);
            let (be, ce) = (mean(&b.excess_ns)?, mean(&c.excess_ns)?);
            Some(ClassExcessChange {
                class,
                baseline_floor_ns: mean(&b.floor_ns)?,
                candidate_floor_ns: mean(&c.floor_ns)?,
                baseline_excess_ns: be,
                candidate_excess_ns: ce,
                delta_excess_ns: ce - be,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn samples(floor: &[f64], excess: &[f64]) -> ClassSamples {
        ClassSamples {
            floor_ns: floor.to_vec(),
            excess_ns: excess.to_vec(),
        }
    }

    #[test]
    fn the_change_is_of_the_means_and_only_for_classes_both_sides_priced() {
        let b = BTreeMap::from([
            (
                "weights".to_owned(),
                samples(&[100.0, 100.0], &[10.0, 30.0]),
            ),
            ("attention".to_owned(), samples(&[50.0, 50.0], &[5.0, 5.0])),
        ]);
        let c = BTreeMap::from([
            ("weights".to_owned(), samples(&[100.0], &[50.0])),
            ("communication".to_owned(), samples(&[1.0], &[1.0])),
        ]);
        let d = excess_change(&b, &c);
        assert_eq!(d.len(), 1);
        // Baseline mean excess (10 + 30) / 2 = 20; candidate 50.
        assert_eq!(d[0].class, KernelClass::Weights);
        assert_eq!(
            (d[0].baseline_excess_ns, d[0].candidate_excess_ns),
            (20.0, 50.0)
        );
        assert_eq!(d[0].delta_excess_ns, 30.0);
        assert_eq!(d[0].baseline_floor_ns, 100.0);
        assert!(excess_change(&b, &BTreeMap::new()).is_empty());
    }
}
