//! A step "at the memory roof" overall can still hold one class far below its own roof
//! (attention at 50% beside GEMMs at 95%): "only fewer bytes help" would be contradicted
//! by the class table of the same step, so such a class is named with its excess instead.

use crate::wire::attribution::{ClassAttribution, Shape};

use super::{pct, time_proof, us, Evidence, Fired, AT_ROOF_OF_BETA, GEMM_EXCESS_SHARE};
use crate::attribution::KernelProfiler;
use crate::wire::attribution::KernelClass;
use crate::wire::verdict::{ProofBasis, ShareOf};

/// The priced class below [`AT_ROOF_OF_BETA`] of its roof with the largest excess, when
/// that excess is at least [`GEMM_EXCESS_SHARE`] of the step's wall (derived): the
/// same share that makes GEMMs below the roof worth a line.
pub(crate) fn below_roof(classes: &[ClassAttribution], wall_ns: i64) -> Option<&ClassAttribution> {
    let c = classes
        .iter()
        .filter(|c| c.roof_fraction.is_some_and(|r| r < AT_ROOF_OF_BETA))
        .filter(|c| c.excess_ns.is_some_and(|x| x > 0))
        .max_by_key(|c| c.excess_ns)?;
    let excess = c.excess_ns? as f64;
    (wall_ns > 0 && excess >= GEMM_EXCESS_SHARE * wall_ns as f64).then_some(c)
}

/// "attention holds 641.0 µs of excess (10% of <whose> wall, derived): <its action>".
fn holds(c: &ClassAttribution, wall_ns: i64, whose: &str) -> String {
    let excess = c.excess_ns.unwrap_or(0);
    let mut s = format!(
        "{} holds {} of excess ({} of {whose} wall, derived)",
        c.class.as_str(),
        us(excess),
        pct(excess as f64 / wall_ns.max(1) as f64)
    );
    if let Some(a) = &c.action {
        s.push_str(": ");
        s.push_str(a);
    }
    s
}

/// The at-the-roof step action, checked against the step's own classes: `None` when no
/// class below its roof holds enough excess to matter.
pub fn at_roof_action(classes: &[ClassAttribution], wall_ns: i64) -> Option<String> {
    let c = below_roof(classes, wall_ns)?;
    Some(format!(
        "kernels are back to back and within 1.3x of the floor, but {}",
        holds(c, wall_ns, "the step's")
    ))
}

/// The run rule `class-below-roof`: the run is at the memory roof, but the largest
/// group's median step has a class below its roof with a material excess.
pub(super) fn class_below_roof(e: &Evidence<'_>) -> Option<Fired> {
    if e.shape != Some(Shape::AtMemoryRoof) {
        return None;
    }
    let g = e.group?;
    let wall = g.waterfall.wall_ns;
    let c = below_roof(&g.classes, wall)?;
    let excess = c.excess_ns.unwrap_or(0) as f64;
    let proof = time_proof(
        excess,
        ProofBasis::Derived,
        format!(
            "the excess (time − floor) of {} in the median {} step",
            c.class.as_str(),
            g.group
        ),
        Some((excess / wall.max(1) as f64, ShareOf::Wall)),
    );
    // The class's action is its own text (class_rules), whole: split where it is made.
    Some(
        Fired::whole(&format!(
            "within 1.3x of the floor overall, but in the median {} step {}",
            g.group,
            holds(c, wall, "its")
        ))
        .held(vec![
            "\"at the roof — only fewer bytes help\" (a class runs below its roof)".to_owned(),
        ])
        .proved(proof)
        .owns(Some(g.group.clone()), c.class),
    )
}

/// A step's one-kernel-dominant action, checked against the class it belongs to: at the
/// roof (≥ 80% of β) it says so instead of sending the kernel to `profiler`.
pub fn dominant_at_roof(
    action: &str,
    top_class: Option<KernelClass>,
    roof: Option<f64>,
    profiler: KernelProfiler,
) -> Option<String> {
    let r = roof.filter(|&r| r >= AT_ROOF_OF_BETA)?;
    let head = action.strip_suffix(&format!(": take it to {}", profiler.name))?;
    let class = top_class?;
    Some(format!(
        "{head}, and {} run at {} of their roof (derived): at the roof — only fewer bytes help",
        class.as_str(),
        pct(r)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attribution::{NSIGHT_COMPUTE, ROCPROF_COMPUTE};

    #[test]
    fn a_dominant_kernel_at_the_roof_is_not_sent_to_nsight_compute() {
        let a = "gemm_x is 90% of busy time: take it to Nsight Compute";
        let got =
            dominant_at_roof(a, Some(KernelClass::Weights), Some(0.85), NSIGHT_COMPUTE).unwrap();
        assert_eq!(
            got,
            "gemm_x is 90% of busy time, and weight GEMMs run at 85% of their roof (derived): at the roof — only fewer bytes help"
        );
        assert!(
            dominant_at_roof(a, Some(KernelClass::Weights), Some(0.6), NSIGHT_COMPUTE).is_none()
        );
        // An AMD step's action names AMD's profiler; the check reads that name.
        let amd = "gemm_x is 90% of busy time: take it to rocprof-compute";
        assert!(
            dominant_at_roof(amd, Some(KernelClass::Weights), Some(0.85), ROCPROF_COMPUTE)
                .is_some()
        );
    }
}
