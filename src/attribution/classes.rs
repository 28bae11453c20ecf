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

use super::attention::{self, Family, Grid};
use super::AT_ROOF_FACTOR;

/// What the per-class actions need to know about the step besides its kernels.
#[derive(Debug, Clone, Copy)]
pub struct ClassContext {
    /// The decode grid's inputs: batch, heads, mean context, the GPU's SMs or CUs.
    pub grid: Grid,
    /// The attention family the step runs (its longest attention kernel's).
    pub attention: Option<Family>,
    /// The step already runs a custom all-reduce (vLLM/SGLang `cross_device_reduce_*`).
    pub custom_allreduce: bool,
    /// Where a kernel's achieved DRAM throughput is read (the trace's vendor's profiler).
    pub profiler: super::notes::KernelProfiler,
}

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

/// "at 31% of β", "at 12% of the link".
fn at(frac: Option<f64>, class: KernelClass) -> String {
    let roof = if class == KernelClass::Communication {
        "the link"
    } else {
        "β"
    };
    frac.map(|x| format!(" at {:.0}% of {roof}", x * 100.0))
        .unwrap_or_default()
}

/// The next action for one class, in the tool's words.
fn action(
    f: &ClassFloor,
    shape: ClassShape,
    frac: Option<f64>,
    ctx: &ClassContext,
) -> Option<String> {
    let name = f.class.as_str();
    let at = at(frac, f.class);
    let compute = f.bound == Some(Bound::Compute);
    Some(match (f.class, shape) {
        (_, ClassShape::NoFloor) => return None,
        (_, ClassShape::Absent) => format!(
            "no {name} kernel ran: its bytes moved inside another class's kernels (fused); its floor stands, its time is theirs"
        ),
        (_, ClassShape::BelowFloor) => format!(
            "{name} ran below its floor: the byte model is wrong for this class (a TP, KV or weight dtype not passed, cached or L2-resident bytes)"
        ),
        (KernelClass::Weights, ClassShape::AtRoof) if compute => {
            "weight GEMMs within 1.3× of the tensor peak: compute-bound, at the roof — only fewer FLOPs (a smaller model) help".to_owned()
        }
        (KernelClass::Weights, ClassShape::AtRoof) => format!(
            "weight GEMMs{at}: at the roof — only fewer bytes help: quantize the weights (price it with --weight-dtype fp8) or batch more requests per step"
        ),
        (KernelClass::Weights, _) => format!(
            "weight GEMMs{at}: they leave bandwidth unused — small-M GEMMs on too few tiles; check the GEMM tiles and split-K ({})",
            ctx.profiler.dram
        ),
        (KernelClass::Attention, ClassShape::AtRoof) => format!(
            "attention{at}: at the roof — only fewer KV bytes help: quantize the KV cache (--kv-dtype fp8) or shorten the context"
        ),
        (KernelClass::Attention, _) => {
            attention::below_roof(ctx.attention, &at, &ctx.grid, ctx.profiler.name)
        }
        (KernelClass::KvWrite, ClassShape::AtRoof) => format!("KV-cache writes{at}: at the roof"),
        (KernelClass::KvWrite, _) => format!(
            "KV-cache writes{at}: small scattered stores — fuse the write into rope or attention"
        ),
        (KernelClass::Communication, ClassShape::AtRoof) => format!(
            "communication{at}: at the link's roof — only fewer bytes help (a smaller TP, or quantized all-reduce)"
        ),
        (KernelClass::Communication, _) if ctx.custom_allreduce => format!(
            "communication{at}: latency-bound at this message size, with the custom all-reduce already running — all-reduce fused with the norm, or a smaller TP"
        ),
        (KernelClass::Communication, _) => format!(
            "communication{at}: latency-bound at this message size — a one-shot custom all-reduce, all-reduce fused with the norm, or a smaller TP"
        ),
        (KernelClass::Quantize, _) => {
            "quantize kernels move activations, which the byte model does not price (floor 0): their time is overhead — fuse the quantization into the norm or the GEMM before it".to_owned()
        }
        (KernelClass::Rest, ClassShape::AtRoof) => format!("rest{at}: at the roof"),
        (KernelClass::Rest, _) => format!(
            "norms, rope, activations and copies move almost no compulsory bytes: their time is overhead — fuse them (fused add-norm, torch.compile) or keep them inside {}",
            ctx.profiler.graphs
        ),
    })
}
