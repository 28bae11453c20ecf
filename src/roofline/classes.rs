//! The step floor split by kernel class (docs/method.md §4.1): which of the step's
//! compulsory bytes and FLOPs each class of kernels moves, and the floor of each class on
//! its own roof. Pure arithmetic on a [`StepFloor`], no trace: one function per way of
//! pricing a class, which the class rules (`attribution::class_rules`) name per class.
//!
//! Weight GEMMs stream the linear layers, the routed experts the step touches and lm_head;
//! attention reads the KV cache; the KV-cache writes store the new tokens; the rest (norms,
//! rope, activations, sampling, copies) reads the 2-byte norms, biases and routers;
//! activation quantize kernels move no compulsory bytes (floor 0).
//! Summed, these are the step's bytes Q. Communication moves the tensor-parallel
//! all-reduces over the interconnect, not HBM: its floor is those bytes over the GPU's
//! cited link bandwidth, or none where the GPU table has no figure.

use crate::wire::attribution::{Bound, KernelClass};
use crate::wire::roofline::{GpuSpec, StepFloor};

/// One class's share of a step floor (derived).
#[derive(Debug, Clone, PartialEq)]
pub struct ClassFloor {
    pub class: KernelClass,
    /// Compulsory bytes on one GPU.
    pub bytes: f64,
    pub flops: f64,
    /// The bandwidth the bytes move at: β, or the interconnect for communication.
    pub roof_bytes_per_s: Option<f64>,
    /// max(bytes / roof, FLOPs / π), ns; None without a roof.
    pub floor_ns: Option<f64>,
    pub bound: Option<Bound>,
    /// How the floor was obtained, or why there is none.
    pub basis: String,
}

/// What a class floor is priced from: the step's floor on one GPU, that GPU, and the
/// tensor-parallel degree.
#[derive(Debug, Clone, Copy)]
pub struct Priced<'a> {
    pub step: &'a StepFloor,
    pub gpu: &'a GpuSpec,
    pub tp: u32,
}

/// How one class is priced: its floor on this step, for the class it is given.
pub(crate) type FloorFn = fn(KernelClass, &Priced<'_>) -> ClassFloor;

/// `bytes` over β, or `flops` over π where that binds; `what` names the bytes in the basis.
pub(crate) fn on_hbm(
    class: KernelClass,
    p: &Priced<'_>,
    bytes: f64,
    flops: f64,
    what: &str,
) -> ClassFloor {
    let (beta, pi) = (p.step.hbm_bytes_per_s, p.step.peak_flops_per_s);
    let (floor, bound) = roof(bytes / beta, flops / pi);
    ClassFloor {
        class,
        bytes,
        flops,
        roof_bytes_per_s: Some(beta),
        floor_ns: Some(floor * 1e9),
        bound: Some(bound),
        basis: format!(
            "derived: {what} / β{}",
            if bound == Bound::Compute {
                ", FLOPs / π binds"
            } else {
                ""
            }
        ),
    }
}

/// The linear, expert and lm_head weights (the dense FLOPs where π binds).
pub fn weights(class: KernelClass, p: &Priced<'_>) -> ClassFloor {
    let f = p.step;
    on_hbm(
        class,
        p,
        f.weights.gemm(),
        f.dense_flops,
        "linear, expert and lm_head weights",
    )
}

/// The KV cache read (the attention FLOPs where π binds).
pub fn kv_read(class: KernelClass, p: &Priced<'_>) -> ClassFloor {
    on_hbm(
        class,
        p,
        p.step.kv_read_bytes,
        p.step.attention_flops,
        "KV read",
    )
}

/// The new tokens' K and V.
pub fn kv_write(class: KernelClass, p: &Priced<'_>) -> ClassFloor {
    on_hbm(class, p, p.step.kv_write_bytes, 0.0, "KV write")
}

/// The 2-byte norm, bias and router weights.
pub(crate) fn small_weights(class: KernelClass, p: &Priced<'_>) -> ClassFloor {
    on_hbm(
        class,
        p,
        p.step.weights.small,
        0.0,
        "norm, bias and router weights",
    )
}

/// Activation quantization moves activations, which the byte model does not count
/// (weights and KV are priced in their stored dtype): no compulsory bytes, like the
/// elementwise kernels of the rest, so all its time is excess.
pub fn activations(class: KernelClass, p: &Priced<'_>) -> ClassFloor {
    ClassFloor {
        class,
        bytes: 0.0,
        flops: 0.0,
        roof_bytes_per_s: Some(p.step.hbm_bytes_per_s),
        floor_ns: Some(0.0),
        bound: Some(Bound::Memory),
        basis: "derived: activation (de)quantization moves no compulsory bytes (weights and KV are priced in their stored dtype)".to_owned(),
    }
}

/// The tensor-parallel all-reduces over the GPU's cited link: none at TP 1, no floor
/// where the GPU table cites no link.
pub fn all_reduce(class: KernelClass, p: &Priced<'_>) -> ClassFloor {
    let f = p.step;
    match (p.tp, p.gpu.interconnect) {
        (0 | 1, _) => ClassFloor {
            class,
            bytes: 0.0,
            flops: 0.0,
            roof_bytes_per_s: None,
            floor_ns: Some(0.0),
            bound: None,
            basis: "derived: TP 1 needs no collective".to_owned(),
        },
        (tp, Some(link)) => {
            let bw = link.group_bytes_per_s(tp);
            ClassFloor {
                class,
                bytes: f.allreduce_bytes,
                flops: 0.0,
                roof_bytes_per_s: Some(bw),
                floor_ns: Some(f.allreduce_bytes / bw * 1e9),
                bound: Some(Bound::Memory),
                basis: format!(
                    "derived: 2 all-reduces per layer, 2(TP−1)/TP of T·d each, over the link (cited: {})",
                    link.source
                ),
            }
        }
        (_, None) => ClassFloor {
            class,
            bytes: f.allreduce_bytes,
            flops: 0.0,
            roof_bytes_per_s: None,
            floor_ns: None,
            bound: None,
            basis: format!(
                "no floor: the GPU table cites no interconnect bandwidth for {}",
                p.gpu.name
            ),
        },
    }
}

/// (max(memory, compute) in seconds, which binds).
fn roof(memory_s: f64, compute_s: f64) -> (f64, Bound) {
    if compute_s > memory_s {
        (compute_s, Bound::Compute)
    } else {
        (memory_s, Bound::Memory)
    }
}
