//! Groups of like steps (the kind the gate keys them by, an inferred kind apart from a
//! marked one) and the class attribution of each group's median step: one real step,
//! so its waterfall stays exact.

use std::collections::BTreeMap;

use crate::wire::attribution::{ClassAttribution, GroupAttribution, StepAttribution};
use crate::wire::steps::KindLabel;
use crate::wire::steps::Step;

/// Per group with at least one priced step, its median step by wall (the lower median
/// for an even count) and that step's classes. `attributions` is parallel to `steps`.
pub(crate) fn median_steps(
    steps: &[Step],
    attributions: &[StepAttribution],
) -> Vec<GroupAttribution> {
    let mut by: BTreeMap<KindLabel, Vec<usize>> = BTreeMap::new();
    for (i, (s, a)) in steps.iter().zip(attributions).enumerate() {
        if a.waterfall.is_some() {
            by.entry(s.kind_label()).or_default().push(i);
        }
    }
    by.into_iter()
        .filter_map(|(label, mut idx)| {
            idx.sort_by_key(|&i| (steps[i].wall_ns, steps[i].series, steps[i].index));
            let m = idx[(idx.len() - 1) / 2];
            let a = &attributions[m];
            Some(GroupAttribution {
                group: label.to_string(),
                steps: idx.len(),
                series: steps[m].series,
                index: steps[m].index,
                classes: a.classes.clone(),
                waterfall: a.waterfall?,
                layers: None,
                actions: actions(&a.classes),
            })
        })
        .collect()
}

/// The next action of each class that has one, largest excess first; the sort is stable,
/// so equal excesses keep the class table's order.
fn actions(classes: &[ClassAttribution]) -> Vec<String> {
    let mut v: Vec<&ClassAttribution> = classes.iter().filter(|c| c.action.is_some()).collect();
    v.sort_by_key(|c| std::cmp::Reverse(c.excess_ns.unwrap_or(i64::MIN)));
    v.iter().filter_map(|c| c.action.clone()).collect()
}
