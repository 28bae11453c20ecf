//! Training ranks of every parallelism, as PyTorch's profiler records them: a world of
//! `world` ranks (`distributedInfo`), `ProfilerStep#N` on the main thread, forward kernels
//! launched from it and backward kernels from the autograd engine's thread
//! (`pt_autograd_0`), and the collectives each parallelism runs where it runs them (DDP:
//! a broadcast before the forward, gradient buckets during the backward; TP: an
//! all-reduce after every layer, forward and backward; FSDP: an all-gather before every
//! layer and a reduce-scatter after its backward; PP: send/recv between stages; EP: an
//! all-to-all before and after every MoE layer, inference only). The truth each case must
//! yield is returned beside it.

use std::path::Path;

use crate::exit::Result;
use crate::synth::kineto::{DeviceProps, JId, KinetoWriter};

/// The parallelism a capture's collectives show.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Parallel {
    /// DDP on RCCL: every collective is `ncclDevKernel_Generic`.
    DdpRccl,
    /// Tensor parallel training on NCCL (`ncclDevKernel_AllReduce_…`).
    TpNccl,
    /// Tensor parallel training on RCCL (`ncclDevKernel_Generic`).
    TpRccl,
    Fsdp,
    Pipeline,
    /// Expert parallel inference (no backward).
    Expert,
}

/// What the steps hold, per step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Truth {
    /// Collectives launched from the main thread before the first compute kernel.
    pub leading: usize,
    /// Collectives besides those.
    pub collectives: usize,
    /// Kernels before the first backward kernel (none for inference).
    pub forward_kernels: usize,
}

const PID: i64 = 31;
const MAIN: i64 = 31;
const AUTOGRAD: i64 = 77;
const STREAM: i64 = 7;
const GEMM: &str = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64";
const WGRAD: &str = "sm90_xmma_wgrad_gemm_bf16bf16_bf16f32_f32_nt_n_tilesize128x128x64";
const GENERIC: &str = "ncclDevKernel_Generic(ncclDevKernelArgsStorage<4096ul>)";

/// Collective kernel names: (before the layer or at the start, after it / in backward).
fn names(p: Parallel) -> (&'static str, &'static str) {
    match p {
        Parallel::DdpRccl | Parallel::TpRccl => (GENERIC, GENERIC),
        Parallel::TpNccl => (
            "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
            "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
        ),
        Parallel::Fsdp => (
            "ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
            "ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
        ),
        Parallel::Pipeline => (
            "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)",
            "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)",
        ),
        Parallel::Expert => (
            "void deep_ep::intranode::dispatch_all_to_all<8, 768>(int4*, float*)",
            "void deep_ep::intranode::combine_all_to_all<8, 768>(int4*, float*)",
        ),
    }
}

/// One launch: (thread, kernel name, kernel duration ns).
type Launch = (i64, &'static str, i64);

/// The launches of one step, in order, and its truth.
fn step(p: Parallel, layers: usize) -> (Vec<Launch>, Truth) {
    let (before, after) = names(p);
    let mut l: Vec<Launch> = Vec::new();
    let mut leading = 0;
    if p == Parallel::DdpRccl {
        // Parameter and buffer broadcast (DDP's `_sync_buffers` before the forward).
        l.push((MAIN, before, 14_000));
        l.push((MAIN, before, 6_000));
        leading = 2;
    }
    for _ in 0..layers {
        match p {
            Parallel::Fsdp => l.push((MAIN, before, 30_000)),
            Parallel::Expert => l.push((MAIN, before, 25_000)),
            _ => {}
        }
        l.push((MAIN, GEMM, 40_000));
        l.push((
            MAIN,
            "void at::native::vectorized_elementwise_kernel<4, gelu>",
            8_000,
        ));
        match p {
            Parallel::TpNccl | Parallel::TpRccl => l.push((MAIN, after, 20_000)),
            Parallel::Expert => l.push((MAIN, after, 25_000)),
            _ => {}
        }
    }
    if p == Parallel::Pipeline {
        l.push((MAIN, before, 50_000));
    }
    let forward_kernels = l.len();
    if p != Parallel::Expert {
        if p == Parallel::Pipeline {
            l.push((AUTOGRAD, after, 50_000));
        }
        for i in 0..layers {
            l.push((AUTOGRAD, WGRAD, 60_000));
            l.push((AUTOGRAD, "void at::native::gelu_backward_kernel", 9_000));
            match p {
                Parallel::TpNccl | Parallel::TpRccl | Parallel::Fsdp => {
                    l.push((AUTOGRAD, after, 20_000));
                }
                // Two gradient buckets, each filled after half the layers.
                Parallel::DdpRccl if (i + 1) % layers.div_ceil(2) == 0 || i + 1 == layers => {
                    l.push((AUTOGRAD, after, 300_000));
                }
                _ => {}
            }
        }
        l.push((
            MAIN,
            "void at::native::multi_tensor_apply_kernel<adam>",
            50_000,
        ));
    }
    let collectives = l.iter().filter(|x| x.1 == before || x.1 == after).count() - leading;
    let truth = Truth {
        leading,
        collectives,
        forward_kernels: if p == Parallel::Expert {
            0
        } else {
            forward_kernels
        },
    };
    (l, truth)
}

/// Write `steps` steps of `p` on `layers` layers, rank 0 of `world`, to `path` (Kineto
/// JSON); returns each step's truth.
pub fn write(path: &Path, p: Parallel, world: i64, steps: usize, layers: usize) -> Result<Truth> {
    let mut w = KinetoWriter::new(1_767_189_312_000_000_000);
    w.device(DeviceProps::h100(0));
    w.distributed(0, world);
    w.metadata("process_name", PID, 0, "name", "python3");
    w.metadata("thread_name", PID, MAIN, "name", "thread 31 (python3)");
    w.metadata(
        "thread_name",
        PID,
        AUTOGRAD,
        "name",
        "thread 77 (pt_autograd_0)",
    );
    let (launches, truth) = step(p, layers);
    let mut cpu = 1_000_000i64;
    let mut gpu = 0i64;
    let mut corr = 1i64;
    for s in 0..steps {
        let start = cpu;
        for &(tid, name, dur) in &launches {
            w.complete(
                "cuda_runtime",
                "cudaLaunchKernel",
                JId::Num(PID),
                JId::Num(tid),
                cpu,
                4_000,
                &format!("\"cbid\": 211, \"correlation\": {corr}"),
            );
            gpu = gpu.max(cpu + 10_000);
            w.complete(
                "kernel",
                name,
                JId::Num(0),
                JId::Num(STREAM),
                gpu,
                dur,
                &format!("\"device\": 0, \"stream\": {STREAM}, \"correlation\": {corr}"),
            );
            gpu += dur + 2_000;
            cpu += 6_000;
            corr += 1;
        }
        // The step ends once its last kernel has (the optimizer's `.item()` syncs).
        cpu = cpu.max(gpu) + 5_000;
        w.complete(
            "user_annotation",
            &format!("ProfilerStep#{s}"),
            JId::Num(PID),
            JId::Num(MAIN),
            start - 1_000,
            cpu - start,
            "",
        );
        cpu += 2_000;
    }
    w.finish(path)?;
    Ok(truth)
}
