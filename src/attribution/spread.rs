//! Each class's time across the like steps of a group (p10 / p50 / p90, measured), and
//! whether it varies: the class table shows one real step (the median by wall, so its
//! waterfall stays exact), and that step can be the one where a collective waited least.

use std::collections::BTreeMap;

use crate::categories::class_of;
use crate::stats::percentile;
use crate::wire::attribution::{ClassSpread, GroupSpread, KernelClass, StepTime};
use crate::wire::steps::KindLabel;
use crate::wire::steps::{Step, StepKind};

/// Fewer like steps than this have no spread worth a percentile.
pub(crate) const MIN_STEPS: usize = 5;
// What "varies" means is part of the document (the report's heading quotes it).
use crate::wire::attribution::{VARIES_OF_WALL, VARIES_RATIO};

/// Exclusive ns per class in one step (the class table's `time`, measured), and whether
/// the step runs a kernel of the class at all: one pass over its kernels.
fn class_times(step: &Step) -> ([i64; KernelClass::COUNT], [bool; KernelClass::COUNT]) {
    let mut t = [0i64; KernelClass::COUNT];
    let mut with = [false; KernelClass::COUNT];
    for k in &step.all_kernels {
        if let Some(c) = class_of(&k.category) {
            t[c as usize] += k.exclusive_ns;
            with[c as usize] = true;
        }
    }
    (t, with)
}

/// Per group of like steps with GPU work (keyed as the gate keys them), at least
/// [`MIN_STEPS`] of them: every class that runs in one of them, in class order. Steps of
/// unknown kind (found by a regex, a graph launch or an idle gap, with nothing saying what
/// they hold) are not known to be alike, so their spread would name a difference in work
/// as a cause: they get none.
pub fn by_group(steps: &[Step]) -> Vec<GroupSpread> {
    let mut by: BTreeMap<KindLabel, Vec<&Step>> = BTreeMap::new();
    let known = |s: &&Step| s.wall_ns.is_some() && s.kind_label().kind != StepKind::Unknown;
    for s in steps.iter().filter(known) {
        by.entry(s.kind_label()).or_default().push(s);
    }
    by.into_iter()
        .filter(|(_, v)| v.len() >= MIN_STEPS)
        .map(|(label, v)| group(label.to_string(), &v))
        .collect()
}

fn group(label: String, steps: &[&Step]) -> GroupSpread {
    let mut walls: Vec<f64> = steps
        .iter()
        .filter_map(|s| s.wall_ns)
        .map(|w| w as f64)
        .collect();
    walls.sort_by(f64::total_cmp);
    let median_wall_ns = percentile(&walls, 0.5);
    let times: Vec<_> = steps.iter().map(|s| class_times(s)).collect();
    let classes = KernelClass::ALL
        .into_iter()
        .filter_map(|c| {
            let per: Vec<(StepTime, bool)> = steps
                .iter()
                .zip(&times)
                .map(|(s, (t, with))| {
                    (
                        StepTime {
                            series: s.series,
                            index: s.index,
                            ns: t[c as usize],
                        },
                        with[c as usize],
                    )
                })
                .collect();
            one(c, &per, median_wall_ns)
        })
        .collect();
    GroupSpread {
        group: label,
        steps: steps.len(),
        median_wall_ns,
        classes,
    }
}

/// One class over the group's steps; None when no step runs it.
fn one(class: KernelClass, per: &[(StepTime, bool)], median_wall_ns: f64) -> Option<ClassSpread> {
    let steps_with = per.iter().filter(|x| x.1).count();
    if steps_with == 0 {
        return None;
    }
    let mut v: Vec<f64> = per.iter().map(|x| x.0.ns as f64).collect();
    v.sort_by(f64::total_cmp);
    let (p10, p90) = (percentile(&v, 0.1), percentile(&v, 0.9));
    // The first step of the least and of the most, in report order.
    let min = per.iter().map(|x| x.0).min_by_key(|t| t.ns)?;
    let max = per
        .iter()
        .map(|x| x.0)
        .reduce(|a, b| if b.ns > a.ns { b } else { a })?;
    Some(ClassSpread {
        class,
        steps_with,
        p10_ns: p10,
        p50_ns: percentile(&v, 0.5),
        p90_ns: p90,
        min,
        max,
        varies: varies(p10, p90, median_wall_ns),
    })
}

/// The rule [`ClassSpread::varies`] states.
pub fn varies(p10: f64, p90: f64, median_wall_ns: f64) -> bool {
    p90 >= VARIES_RATIO * p10 && p90 - p10 >= VARIES_OF_WALL * median_wall_ns && p90 > 0.0
}

fn ms_or_us(ns: f64) -> String {
    if ns >= 1e6 {
        format!("{:.1} ms", ns / 1e6)
    } else {
        format!("{:.1} µs", ns / 1e3)
    }
}

/// The `class-varies` rule's line: the varying class with the widest p10–p90 of the
/// group, where its least and most were, and what to compare; None when no class varies.
#[cfg(test)]
pub(crate) fn varies_line(g: &GroupSpread) -> Option<String> {
    varies_parts(g).map(|(s, a)| format!("{s} — {a}"))
}

/// The class that varies most (the widest p10–p90) among those that vary.
pub(crate) fn varying(g: &GroupSpread) -> Option<&ClassSpread> {
    g.classes
        .iter()
        .filter(|c| c.varies)
        .max_by(|a, b| (a.p90_ns - a.p10_ns).total_cmp(&(b.p90_ns - b.p10_ns)))
}

/// [`varies_line`] as its sentence (what varies, and why it may) and its action.
pub(crate) fn varies_parts(g: &GroupSpread) -> Option<(String, String)> {
    let c = varying(g)?;
    let head = format!(
        "{} takes {}–{} per step (p10–p90, measured) across {} {} steps, median {}; least {} in series {} step {}, most {} in series {} step {}",
        c.class.as_str(),
        ms_or_us(c.p10_ns),
        ms_or_us(c.p90_ns),
        g.steps,
        g.group,
        ms_or_us(c.p50_ns),
        ms_or_us(c.min.ns as f64),
        c.min.series,
        c.min.index,
        ms_or_us(c.max.ns as f64),
        c.max.series,
        c.max.index
    );
    // A collective's time is mostly waiting for the last rank to arrive; other classes
    // vary with the work the step was given.
    let (why, then) = if c.class == KernelClass::Communication {
        (
            "the collectives wait on other ranks in some steps",
            "compare the ranks' traces at the slow steps (the class table shows the median step, not them)",
        )
    } else {
        (
            "like steps do unequal work (batch or context) or wait",
            "compare the two steps (--each)",
        )
    };
    Some((format!("{head}: {why}"), then.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_class_varies_only_when_both_the_ratio_and_the_wall_share_say_so() {
        // 1.3 → 9.0 ms in a 12 ms step: 6.9× and 64% of the wall.
        assert!(varies(1.3e6, 9.0e6, 12e6));
        // 2 µs → 5 µs in a 12 ms step: 2.5×, but 0.03% of the wall.
        assert!(!varies(2e3, 5e3, 12e6));
        // 8 → 9.5 ms: 19% of the wall, but 1.2×.
        assert!(!varies(8e6, 9.5e6, 12e6));
        // Absent everywhere.
        assert!(!varies(0.0, 0.0, 12e6));
        // Absent in most steps, large where it runs: varies.
        assert!(varies(0.0, 3e6, 12e6));
    }
}
