//! Group matching: pair the (step kind, batch size) groups present on both sides, and list
//! the ones present on one side only.

use std::collections::BTreeMap;

use crate::wire::baseline::{Baseline, Group};
use crate::wire::gate::{OneSided, Side};

/// Groups on both sides, in (step kind, batch size) order, and the one-sided groups
/// (baseline's first, then candidate's, each in that order).
pub(super) struct Matched<'a> {
    pub pairs: Vec<(&'a Group, &'a Group)>,
    pub one_sided: Vec<OneSided>,
}

/// Match groups like for like by (step kind, batch size).
pub(super) fn match_groups<'a>(baseline: &'a Baseline, candidate: &'a Baseline) -> Matched<'a> {
    let base = by_key(baseline);
    let cand = by_key(candidate);
    let mut pairs = Vec::new();
    let mut one_sided = Vec::new();
    for (key, b) in &base {
        match cand.get(key) {
            Some(c) => pairs.push((*b, *c)),
            None => one_sided.push(one_side(b, Side::Baseline)),
        }
    }
    for (key, c) in &cand {
        if !base.contains_key(key) {
            one_sided.push(one_side(c, Side::Candidate));
        }
    }
    Matched { pairs, one_sided }
}

type Key<'a> = (&'a str, Option<u32>);

fn by_key(side: &Baseline) -> BTreeMap<Key<'_>, &Group> {
    side.samples
        .groups
        .iter()
        .map(|g| ((g.step_kind.as_str(), g.batch_size), g))
        .collect()
}

fn one_side(g: &Group, side: Side) -> OneSided {
    OneSided {
        step_kind: g.step_kind.clone(),
        batch_size: g.batch_size,
        label: g.label(),
        side,
        steps: g.steps(),
    }
}
