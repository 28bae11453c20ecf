//! What each kernel class does, as one table: per class (in [`KernelClass::ALL`] order),
//! how its floor is priced (a `roofline::classes` function), what its roof is called and
//! its next action at or beyond that floor. Its key, label and categories are the wire
//! table's row (`wire::class_table`), which holds data only; behaviour lives here because
//! `wire` is a leaf. A new class is one row there and one row here, and every array,
//! report column, chart colour, baseline metric and action reads the two tables: the unit
//! test at the end adds a throwaway class in test builds and follows it through them all.

use crate::roofline::classes::{self as floors, ClassFloor, FloorFn, Priced};
use crate::wire::attribution::KernelClass;
use crate::wire::roofline::{GpuSpec, StepFloor};

use super::attention::{self, Family, Grid};
use super::notes::KernelProfiler;

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
    pub profiler: KernelProfiler,
    /// The step is priced as decodes only (one token per request): the causes that only a
    /// decode has (small-M GEMMs, latency-bound all-reduces of a few tokens) may be named.
    /// A prefill or mixed step runs M = its tokens and all-reduces T·hidden per layer.
    pub decode: bool,
}

/// What a class's action reads: the shapes every class shares (no floor, fused
/// elsewhere, below its floor) are worded once, in `attribution::classes`; a class's own
/// action is for the two that remain.
#[derive(Debug, Clone, Copy)]
pub struct Advice<'a> {
    /// Within 1.3× of its floor (shape 2, at the roof); else under-utilized (shape 4).
    pub at_roof: bool,
    /// FLOPs over π bind its floor, not bytes over the roof.
    pub compute_bound: bool,
    /// " at 31% of β": the achieved share of its roof, empty without one.
    pub at: &'a str,
    pub ctx: &'a ClassContext,
}

/// One class's next action, in the tool's words.
pub(crate) type AdviceFn = fn(&Advice<'_>) -> String;

/// One kernel class's behaviour.
#[derive(Debug, Clone, Copy)]
pub struct ClassRule {
    pub class: KernelClass,
    /// How its floor is priced (docs/method.md §4.1; the wire row's `priced_as` says it).
    pub floor: FloorFn,
    /// What its achieved share is a share of in its action (`β`, `the link`).
    pub roof: &'static str,
    /// Its next action at or beyond its floor.
    pub advice: AdviceFn,
}

/// Every class's rule, in [`KernelClass::ALL`] order.
pub(crate) const RULES: &[ClassRule] = &[
    ClassRule {
        class: KernelClass::Weights,
        floor: floors::weights,
        roof: "β",
        advice: weights,
    },
    ClassRule {
        class: KernelClass::Attention,
        floor: floors::kv_read,
        roof: "β",
        advice: attention,
    },
    ClassRule {
        class: KernelClass::KvWrite,
        floor: floors::kv_write,
        roof: "β",
        advice: kv_write,
    },
    ClassRule {
        class: KernelClass::Communication,
        floor: floors::all_reduce,
        roof: "the link",
        advice: communication,
    },
    ClassRule {
        class: KernelClass::Quantize,
        floor: floors::activations,
        roof: "β",
        advice: quantize,
    },
    ClassRule {
        class: KernelClass::Rest,
        floor: floors::small_weights,
        roof: "β",
        advice: rest,
    },
    #[cfg(test)]
    ClassRule {
        class: KernelClass::Probe,
        floor: tests::probe_floor,
        roof: "β",
        advice: tests::probe_advice,
    },
];

// One rule per class, in the wire table's order: row i is the class whose discriminant is i.
const _: () = {
    assert!(RULES.len() == KernelClass::COUNT);
    let mut i = 0;
    while i < RULES.len() {
        assert!(RULES[i].class as usize == i);
        i += 1;
    }
};

/// A class's rule.
pub fn rule(class: KernelClass) -> &'static ClassRule {
    &RULES[class as usize]
}

/// The per-class floors of one step on one GPU at tensor-parallel degree `tp`, in
/// [`KernelClass::ALL`] order (derived).
pub(crate) fn class_floors(f: &StepFloor, gpu: &GpuSpec, tp: u32) -> Vec<ClassFloor> {
    let p = Priced { step: f, gpu, tp };
    RULES.iter().map(|r| (r.floor)(r.class, &p)).collect()
}

fn weights(a: &Advice<'_>) -> String {
    let at = a.at;
    if a.at_roof && a.compute_bound {
        "weight GEMMs within 1.3× of the tensor peak: compute-bound, at the roof — only fewer FLOPs (a smaller model) help".to_owned()
    } else if a.at_roof {
        format!(
            "weight GEMMs{at}: at the roof — only fewer bytes help: quantize the weights (price it with --weight-dtype fp8) or batch more requests per step"
        )
    } else if a.compute_bound {
        format!(
            "weight GEMMs{at}: FLOPs bind their floor, and they run below the tensor peak — check the GEMMs' tensor-core utilization and tiles in {}",
            a.ctx.profiler.name
        )
    } else if a.ctx.decode {
        format!(
            "weight GEMMs{at}: they leave bandwidth unused — small-M GEMMs on too few tiles; check the GEMM tiles and split-K ({})",
            a.ctx.profiler.dram
        )
    } else {
        format!(
            "weight GEMMs{at}: they leave bandwidth unused — check the GEMMs' achieved DRAM throughput and tiles ({})",
            a.ctx.profiler.dram
        )
    }
}

fn attention(a: &Advice<'_>) -> String {
    let at = a.at;
    if a.at_roof {
        format!(
            "attention{at}: at the roof — only fewer KV bytes help: quantize the KV cache (--kv-dtype fp8) or shorten the context"
        )
    } else {
        attention::below_roof(a.ctx.attention, at, &a.ctx.grid, a.ctx.profiler.name)
    }
}

fn kv_write(a: &Advice<'_>) -> String {
    let at = a.at;
    if a.at_roof {
        format!("KV-cache writes{at}: at the roof")
    } else {
        format!(
            "KV-cache writes{at}: small scattered stores — fuse the write into rope or attention"
        )
    }
}

fn communication(a: &Advice<'_>) -> String {
    let at = a.at;
    if a.at_roof {
        format!(
            "communication{at}: at the link's roof — only fewer bytes help (a smaller TP, or quantized all-reduce)"
        )
    } else if !a.ctx.decode {
        // A prefill's all-reduces carry T·hidden per layer: large messages, bandwidth's
        // business, not latency's.
        format!(
            "communication{at}: the all-reduces of T·hidden per layer run below the link's roof — check that they overlap compute and that no rank waits on another (a straggler), or a smaller TP"
        )
    } else if a.ctx.custom_allreduce {
        format!(
            "communication{at}: latency-bound at this message size, with the custom all-reduce already running — all-reduce fused with the norm, or a smaller TP"
        )
    } else {
        format!(
            "communication{at}: latency-bound at this message size — a one-shot custom all-reduce, all-reduce fused with the norm, or a smaller TP"
        )
    }
}

fn quantize(_: &Advice<'_>) -> String {
    "quantize kernels move activations, which the byte model does not price (floor 0): their time is overhead — fuse the quantization into the norm or the GEMM before it".to_owned()
}

fn rest(a: &Advice<'_>) -> String {
    let at = a.at;
    if a.at_roof {
        format!("rest{at}: at the roof")
    } else {
        format!(
            "norms, rope, activations and copies move almost no compulsory bytes: their time is overhead — fuse them (fused add-norm, torch.compile) or keep them inside {}",
            a.ctx.profiler.graphs
        )
    }
}

#[cfg(test)]
mod tests;
