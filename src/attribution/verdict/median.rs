//! The fallback rule `median-step`: the action of the run's median step of its shape,
//! proved by the number its shape rests on (MBU, the top item's share, or the gap).

use super::{
    classes, fraction_proof, pct, time_proof, top_proof, Evidence, Fired, ProofBasis, ShareOf,
};
use crate::wire::attribution::Shape;
use crate::wire::steps::Step;

pub(crate) fn median_step(e: &Evidence<'_>) -> Option<Fired> {
    if e.shape == Some(Shape::OneKernelDominant) {
        // Each such step has its own top kernel; the run's is over every step.
        let (name, ns, _) = e.top.as_ref()?;
        return Some(
            Fired::bare(format!(
                "single kernels dominate single steps, but no kernel is more than half of the run's busy time: the run's top kernel {name} is {} of it over {} steps (measured)",
                pct(*ns as f64 / e.busy_ns.max(1) as f64),
                e.steps.len()
            ))
            .proved(top_proof(e)?),
        );
    }
    let m = e.median?;
    let a = m.attribution.as_ref()?;
    let f = Fired::whole(&a.action).proved(median_proof(m)?);
    // A step at the memory roof whose action names a class below its roof gives that
    // class's own action (`at_roof_action`): the ranked list leaves it out.
    let wall = a.waterfall.as_ref().map_or(0, |w| w.wall_ns);
    match classes::below_roof(&a.classes, wall) {
        Some(c) if a.shape == Shape::AtMemoryRoof && c.action.is_some() => {
            Some(f.owns(None, c.class))
        }
        _ => Some(f),
    }
}

/// What proves the median step's action, by its shape: its MBU (floor ÷ wall, derived)
/// where the shape is a claim about the floor, its top kernel's share of its busy time
/// where one item dominates, else its gap (wall − busy) and the gap's share of its wall
/// (measured: "back to back", "host stall", "launch-bound" are claims about the gap).
fn median_proof(m: &Step) -> Option<crate::wire::verdict::Proof> {
    let a = m.attribution.as_ref()?;
    let at = format!("the median step (step {})", m.index);
    match (a.shape, a.floor.as_ref(), m.top_kernels.first()) {
        (Shape::AtMemoryRoof | Shape::AtComputeRoof | Shape::UnderUtilized, Some(f), _) => {
            return Some(fraction_proof(f.mbu, format!("MBU (floor ÷ wall) of {at}")));
        }
        (Shape::BelowFloor, Some(f), _) => {
            return Some(fraction_proof(
                f.mbu,
                format!("floor ÷ wall of {at}: above 100%, it ran faster than its floor"),
            ));
        }
        (
            Shape::OneKernelDominant
            | Shape::OneCopyDominant
            | Shape::OneGraphDominant
            | Shape::OneCollectiveDominant,
            _,
            Some(k),
        ) => {
            return Some(time_proof(
                k.exclusive_ns as f64,
                ProofBasis::Measured,
                format!("the exclusive time of {} in {at}", k.short_name),
                (m.busy_ns > 0).then(|| (k.exclusive_ns as f64 / m.busy_ns as f64, ShareOf::Busy)),
            ));
        }
        _ => {}
    }
    let wall = m.wall_ns?;
    let gap = m.gap_ns.unwrap_or(wall - m.busy_ns);
    Some(time_proof(
        gap as f64,
        ProofBasis::Measured,
        format!("the gap (wall − busy) of {at}"),
        (wall > 0).then(|| (gap as f64 / wall as f64, ShareOf::Wall)),
    ))
}

/// "1 step", "9 steps".
pub(super) fn steps_word(n: usize) -> String {
    if n == 1 {
        "1 step".to_owned()
    } else {
        format!("{n} steps")
    }
}
