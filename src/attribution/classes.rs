//! The gap attributed per kernel class (docs/method.md §4.1): each class's measured time
//! (exclusive, so the classes tile busy), its floor from the step's byte model, the excess
//! between them, its achieved bandwidth against the roof, and shape 2 (at the roof: only
//! fewer bytes help) or shape 4 (the kernels leave the machine idle) decided per class,
//! with the next action. The waterfall is exact in whole ns:
//! Σ class floor + Σ class excess + unpriced classes + kernels in no class + gap = wall.

use crate::categories::class_of;
use crate::roofline::classes::ClassFloor;
use crate::wire::attribution::{Bound, ClassAttribution, ClassShape, ClassWaterfall, KernelClass};
use crate::wire::steps::Step;

use super::class_rules::{rule, Advice, ClassContext};
use super::AT_ROOF_FACTOR;

/// Measured time and instances per class, and the time of kernels in no class.
fn class_times(step: &Step) -> ([(i64, u64); KernelClass::COUNT], i64) {
    let mut t = [(0i64, 0u64); KernelClass::COUNT];
    let mut none = 0;
    for k in &step.all_kernels {
        match class_of(&k.category) {
            Some(c) => {
                let e = &mut t[c as usize];
                e.0 += k.exclusive_ns;
                e.1 += k.instances;
            }
            None => none += k.exclusive_ns,
        }
    }
    (t, none)
}

/// The classes of one step with GPU work, priced by `floors` (in [`KernelClass::ALL`]
/// order), and the waterfall from their floors to the step's wall. None for a step
/// without GPU work.
pub fn attribute(
    step: &Step,
    floors: &[ClassFloor],
    ctx: &ClassContext,
) -> Option<(Vec<ClassAttribution>, ClassWaterfall)> {
    let (wall, gap) = (step.wall_ns?, step.gap_ns?);
    let (times, unclassified) = class_times(step);
    let mut w = ClassWaterfall {
        wall_ns: wall,
        floor_ns: 0,
        excess_ns: 0,
        unpriced_ns: 0,
        unclassified_ns: unclassified,
        gap_ns: gap,
    };
    let mut out = Vec::with_capacity(floors.len());
    for f in floors {
        let (time, kernels) = times[f.class as usize];
        let floor = f.floor_ns.map(|x| x.round() as i64);
        if time == 0 && floor.unwrap_or(0) == 0 {
            continue;
        }
        match floor {
            Some(fl) => {
                w.floor_ns += fl;
                w.excess_ns += time - fl;
            }
            None => w.unpriced_ns += time,
        }
        out.push(one(f, time, kernels, floor, ctx));
    }
    Some((out, w))
}

fn one(
    f: &ClassFloor,
    time: i64,
    kernels: u64,
    floor: Option<i64>,
    ctx: &ClassContext,
) -> ClassAttribution {
    let achieved = (time > 0 && f.bytes > 0.0).then(|| f.bytes / (time as f64 / 1e9));
    let roof_fraction = achieved.zip(f.roof_bytes_per_s).map(|(a, r)| a / r);
    let shape = match floor {
        None => ClassShape::NoFloor,
        Some(_) if time == 0 => ClassShape::Absent,
        Some(fl) if time < fl => ClassShape::BelowFloor,
        Some(fl) if time as f64 <= AT_ROOF_FACTOR * fl as f64 && fl > 0 => ClassShape::AtRoof,
        Some(_) => ClassShape::UnderUtilized,
    };
    ClassAttribution {
        class: f.class,
        kernels,
        time_ns: time,
        bytes: Some(f.bytes),
        flops: Some(f.flops),
        floor_ns: floor,
        excess_ns: floor.map(|fl| time - fl),
        achieved_bytes_per_s: achieved,
        roof_bytes_per_s: f.roof_bytes_per_s,
        roof_fraction,
        measured_dram_of_peak: None,
        measured_dram_bytes_per_s: None,
        basis: f.basis.clone(),
        shape,
        action: action(f, shape, roof_fraction, ctx),
    }
}

/// "at 31% of β", "at 12% of the link": the class's roof as its rule names it.
fn at(frac: Option<f64>, class: KernelClass) -> String {
    let roof = rule(class).roof;
    frac.map(|x| format!(" at {:.0}% of {roof}", x * 100.0))
        .unwrap_or_default()
}

/// The next action for one class, in the tool's words: the shapes every class shares
/// here, the class's own action (its rule) at or beyond its floor.
fn action(
    f: &ClassFloor,
    shape: ClassShape,
    frac: Option<f64>,
    ctx: &ClassContext,
) -> Option<String> {
    let name = f.class.as_str();
    Some(match shape {
        ClassShape::NoFloor => return None,
        ClassShape::Absent => format!(
            "no {name} kernel ran: its bytes moved inside another class's kernels (fused); its floor stands, its time is theirs"
        ),
        ClassShape::BelowFloor => format!(
            "{name} ran below its floor: the byte model is wrong for this class (a TP, KV or weight dtype not passed, cached or L2-resident bytes)"
        ),
        ClassShape::AtRoof | ClassShape::UnderUtilized => (rule(f.class).advice)(&Advice {
            at_roof: shape == ClassShape::AtRoof,
            compute_bound: f.bound == Some(Bound::Compute),
            at: &at(frac, f.class),
            ctx,
        }),
    })
}
