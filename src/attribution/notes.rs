//! What attribution says beside the numbers: which one flag or capture setting would give
//! an unpriced step its floor, and the launch cost's caveat on another vendor's trace.

use crate::probe::CITED_LAUNCH_SOURCE;
use crate::wire::attribution::{LaunchCost, OperatingPoint};
use crate::wire::steps::{Step, StepKind};

/// Why a step with GPU work has no floor, worded as what would give it one.
fn missing(step: &Step, point: &OperatingPoint) -> Option<&'static str> {
    if step.wall_ns.is_none() || step.attribution.as_ref().is_some_and(|a| a.floor.is_some()) {
        return None;
    }
    let label = step.kind_label();
    Some(match step.composition.as_ref().filter(|c| c.counts_requests()) {
        // A prefill name without its token count has its own note from discovery.
        Some(c) if c.context.requests.is_some_and(|n| n > 0) && c.context.sq.is_none() => {
            return None
        }
        Some(_) => {
            "their names carry no ΣN_KV: pass --context (keys attended per request), or turn on the engine's detailed step annotation"
        }
        None if matches!(label.kind, StepKind::Prefill | StepKind::Mixed) => {
            "they are inferred prefills, and a prefill's floor needs its prompt tokens, which the trace does not state: capture with the engine's step annotation (vLLM ≥ 0.14, SGLang ≥ 0.5.15)"
        }
        None => match (
            point.batch.is_some() || step.batch_guess.is_some(),
            point.context.is_some(),
        ) {
            (false, false) => {
                "nothing states their batch and context: pass --batch and --context, or capture with `stepgate capture --drive` (its sidecar states them)"
            }
            (false, true) => "nothing states their batch: pass --batch (requests per step)",
            (true, _) => "nothing states their context: pass --context (keys attended per request)",
        },
    })
}

/// One note per reason some steps with GPU work have no floor.
pub fn missing_floor_notes(steps: &[Step], point: &OperatingPoint) -> Vec<String> {
    let mut by: Vec<(&'static str, usize)> = Vec::new();
    for why in steps.iter().filter_map(|s| missing(s, point)) {
        match by.iter_mut().find(|(w, _)| *w == why) {
            Some(e) => e.1 += 1,
            None => by.push((why, 1)),
        }
    }
    by.into_iter()
        .map(|(why, n)| format!("{n} step(s) have no floor: {why}"))
        .collect()
}

/// The kernel-level profiler a step's action sends one kernel to, and where it shows a
/// kernel's DRAM throughput.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KernelProfiler {
    pub name: &'static str,
    pub dram: &'static str,
    /// What the vendor's runtime calls a captured launch sequence: the advice names it
    /// (on ROCm, PyTorch's `torch.cuda.CUDAGraph` and the engines' "CUDA graph" flags
    /// record HIP graphs).
    pub graphs: &'static str,
}

/// NVIDIA's kernel profiler; its `dram__throughput` metric is achieved DRAM bandwidth.
pub const NSIGHT_COMPUTE: KernelProfiler = KernelProfiler {
    name: "Nsight Compute",
    dram: "Nsight Compute dram__throughput",
    graphs: "CUDA graphs",
};

/// AMD's kernel profiler (ROCm Compute Profiler); `rocprof-compute analyze -b 3` prints
/// its memory chart, the throughput at each level down to HBM (rocm.docs.amd.com,
/// rocprofiler-compute, "CLI analysis").
pub const ROCPROF_COMPUTE: KernelProfiler = KernelProfiler {
    name: "rocprof-compute",
    dram: "rocprof-compute's memory chart, analyze -b 3",
    graphs: "HIP graphs",
};

/// The kernel profiler for a trace of `vendor`. A trace that names no vendor gets
/// NVIDIA's, as it gets NVIDIA's cited launch cost: every capture format read but rocpd
/// comes from NVIDIA's tools or runs on CUDA more often than not, and rocpd traces name
/// their AMD devices.
pub fn kernel_profiler(vendor: Option<&str>) -> KernelProfiler {
    if vendor == Some("amd") {
        ROCPROF_COMPUTE
    } else {
        NSIGHT_COMPUTE
    }
}

/// The per-launch cost for a trace of `vendor`: the cited figure is NVIDIA's CUDA
/// driver's, so on another vendor's trace its label says so and asks for a measured one.
pub fn for_vendor(cost: LaunchCost, vendor: Option<&str>) -> LaunchCost {
    if vendor == Some("amd") && cost.source.starts_with("cited") {
        return LaunchCost {
            source: format!(
                "cited for NVIDIA's CUDA driver, {CITED_LAUNCH_SOURCE}; not this AMD HIP trace's driver, and no public HIP figure is cited here: pass --launch-cost with one measured on this machine"
            ),
            ..cost
        };
    }
    cost
}
