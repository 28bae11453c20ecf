//! The next actions beside the run verdict, ranked where the verdict is decided: every
//! group's class actions by what each can win per step (its excess over the floor), one
//! per wording, without the verdict's own action (by class identity, not by its text)
//! and, under a verdict about idle time, without the kernel actions that win less per step
//! than the idle time of their group's median step (they would send the reader to the
//! smaller problem first).

use super::us;
use crate::wire::attribution::{GroupAttribution, KernelClass};
use crate::wire::verdict::RankedAction;

/// The ranked actions and, where some were left out as contradicting the verdict, one
/// line per group saying so (with the numbers that decided it).
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Ranking {
    pub ranked: Vec<RankedAction>,
    pub held_back: Vec<String>,
}

/// The class whose own action the verdict gives: in one group, or in any (`None`).
pub(crate) type Own = (Option<String>, KernelClass);

/// Rank every group's class actions that have a priced excess (an action without one
/// cannot be ranked against the others).
pub fn rank(groups: &[GroupAttribution], own: Option<&Own>, idle: bool) -> Ranking {
    let mut out = Ranking::default();
    for g in groups {
        let (mut held, mut held_ns) = (0usize, 0i64);
        for c in &g.classes {
            let (Some(win_ns), Some(action)) = (c.excess_ns, c.action.as_deref()) else {
                continue;
            };
            let is_own = own.is_some_and(|(group, class)| {
                *class == c.class && group.as_deref().is_none_or(|x| x == g.group)
            });
            if is_own {
                continue;
            }
            if idle && win_ns < g.waterfall.gap_ns {
                held += 1;
                held_ns += win_ns.max(0);
                continue;
            }
            out.ranked.push(RankedAction {
                group: g.group.clone(),
                class: c.class.key().to_owned(),
                action: action.to_owned(),
                win_ns,
            });
        }
        if held > 0 {
            out.held_back.push(format!(
                "{held} kernel-class action(s) of the {} group: at most {} per step in all (excess, derived), less than the {} gap of its median step (measured)",
                g.group,
                us(held_ns),
                us(g.waterfall.gap_ns)
            ));
        }
    }
    // Stable: equal wins keep the groups' and classes' order.
    out.ranked.sort_by_key(|r| std::cmp::Reverse(r.win_ns));
    let mut seen: Vec<String> = Vec::new();
    out.ranked.retain(|r| {
        let new = !seen.contains(&r.action);
        if new {
            seen.push(r.action.clone());
        }
        new
    });
    out
}
