//! The answer a steps report opens with, in every format: the run verdict's sentence with
//! its measured numbers, its next action, where the median step's wall goes (the exact
//! waterfall, the basis of every number above), then the other actions ranked by what each
//! can win per step. Selection and order only: every figure is one the pipeline wrote.

use super::classes::waterfall_line;
use super::fmt_us;
use super::markup::Markup;
use crate::wire::attribution::{GroupAttribution, RunVerdict};
use crate::wire::steps::StepsReport;

/// The ranked actions printed without `--detail`.
pub const RANKED_SHOWN: usize = 3;

/// A class's next action and the most it can win per step: its excess over the floor.
pub struct Ranked<'a> {
    pub group: &'a str,
    pub excess_ns: i64,
    pub action: &'a str,
}

/// Every class action of every group, largest excess first; an action the verdict already
/// gives, and one without a priced excess, left out (it cannot be ranked against it).
pub(crate) fn ranked<'a>(
    groups: &'a [GroupAttribution],
    verdict: Option<&RunVerdict>,
) -> Vec<Ranked<'a>> {
    let mut v: Vec<Ranked<'a>> = groups
        .iter()
        .flat_map(|g| {
            g.classes.iter().filter_map(move |c| {
                Some(Ranked {
                    group: &g.group,
                    excess_ns: c.excess_ns?,
                    action: c.action.as_deref()?,
                })
            })
        })
        .filter(|r| verdict.is_none_or(|v| !v.line.contains(r.action)))
        .collect();
    v.sort_by_key(|r| std::cmp::Reverse(r.excess_ns));
    let mut seen: Vec<&str> = Vec::new();
    v.retain(|r| {
        let new = !seen.contains(&r.action);
        seen.push(r.action);
        new
    });
    v
}

/// The answer block: verdict, next, the waterfall per group, the ranked actions (the first
/// [`RANKED_SHOWN`], all with `all`).
pub fn walk<M: Markup>(m: &mut M, r: &StepsReport, all: bool) {
    if let Some(v) = &r.verdict {
        let sentence = v.sentence.as_str();
        match &v.label {
            Some(label) => m.answer("verdict", &format!("{label} — {sentence}")),
            None => m.answer("verdict", sentence),
        }
        if let Some(a) = &v.action {
            m.answer("next", a);
        }
    }
    let many = r.groups.len() > 1;
    for g in &r.groups {
        let label = if many {
            format!("{} median step", g.group)
        } else {
            "median step".to_owned()
        };
        m.answer(&label, &waterfall_line(&g.waterfall));
    }
    let ranked = ranked(&r.groups, r.verdict.as_ref());
    if ranked.is_empty() {
        return;
    }
    let shown = if all { ranked.len() } else { RANKED_SHOWN };
    m.line(&format!(
        "{} by what each can win per step (at most its excess over the floor, derived):",
        if r.verdict.is_some() {
            "then,"
        } else {
            "next,"
        }
    ));
    for x in ranked.iter().take(shown) {
        let what = if many {
            format!("{}: {}", x.group, x.action)
        } else {
            x.action.to_owned()
        };
        m.ranked(&format!("≤ {} µs", fmt_us(x.excess_ns as f64)), &what);
    }
    if ranked.len() > shown {
        m.hint(&format!(
            "({} more action(s) with --detail)",
            ranked.len() - shown
        ));
    }
}
