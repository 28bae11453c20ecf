//! The scenario's vocabulary: how kernels are launched, how a step's NVTX range is recorded,
//! the kernel, step and scenario specs, and the DRAM counters planted per kernel.

use crate::synth::writer::Layout;

/// How a step's kernels reach the GPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LaunchMode {
    /// One `cudaLaunchKernel` per kernel.
    Eager,
    /// One `cudaGraphLaunch`; node-mode tracing: every kernel row carries the launch's
    /// correlation id, a `graphNodeId` and the `graphId`.
    GraphNode,
    /// One `cudaGraphLaunch`; graph-mode tracing: no kernel rows, one opaque
    /// `CUPTI_ACTIVITY_KIND_GRAPH_TRACE` interval from the first kernel's start to the last's end.
    GraphOpaque,
    /// Piecewise graphs (node mode): consecutive non-eager kernels form one graph launch,
    /// kernels marked `eager` (attention) are launched one by one in between.
    Piecewise,
}

/// How the step's NVTX range is recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NvtxStyle {
    /// eventType 59 with the name in `text`.
    PushPop,
    /// eventType 60 with the name in `text`.
    StartEnd,
    /// eventType 59 with the name registered in StringIds (`textId`).
    Registered,
}

#[derive(Debug, Clone)]
pub struct KernelSpec {
    pub name: String,
    pub duration_ns: i64,
    /// Launched eagerly inside a [`LaunchMode::Piecewise`] step (ignored otherwise).
    pub eager: bool,
    /// The launch grid (x, y, z) the kernel is written with; None: one 132-block wave.
    pub grid: Option<[u32; 3]>,
}

impl KernelSpec {
    pub fn new(name: &str, duration_ns: i64) -> Self {
        KernelSpec {
            name: name.to_owned(),
            duration_ns,
            eager: false,
            grid: None,
        }
    }

    /// This kernel launched with `grid`.
    pub(crate) fn with_grid(self, grid: [u32; 3]) -> Self {
        KernelSpec {
            grid: Some(grid),
            ..self
        }
    }

    pub fn eager(name: &str, duration_ns: i64) -> Self {
        KernelSpec {
            eager: true,
            ..KernelSpec::new(name, duration_ns)
        }
    }
}

#[derive(Debug, Clone)]
pub struct StepSpec {
    /// NVTX range names, outermost first (nested ranges share the thread; each inner one
    /// opens 100 ns after and closes 100 ns before its parent). Empty: no range at all.
    pub names: Vec<String>,
    pub nvtx: NvtxStyle,
    pub mode: LaunchMode,
    pub kernels: Vec<KernelSpec>,
    /// Host idle time before the step's range opens.
    pub host_gap_before_ns: i64,
    /// A `cudaMemcpyAsync` HtoD of this many bytes first in the step (not a launch).
    pub memcpy_h2d_bytes: Option<i64>,
    /// A `cudaMemcpyAsync` DtoH of this many bytes last in the step, after its kernels
    /// (as an engine copies the sampled token ids to the host).
    pub memcpy_d2h_bytes: Option<i64>,
    /// Extra `cudaLaunchKernel` calls inside the range whose kernels never appear.
    pub launches_without_kernels: u32,
    /// Kernels with no launching call, run on the GPU right after this step's work
    /// (counted on the device, never in a step).
    pub kernels_without_launch_after: u32,
    /// A host stall after this launch group (its index: one kernel each in eager mode): a
    /// `cudaStreamSynchronize` that waits for the GPU to drain and returns `ns` later (the
    /// host's own work after the sync), so the GPU idles for `ns` plus one launch.
    pub host_stall: Option<HostStall>,
}

/// Where a step's host stalls and for how long (see [`StepSpec::host_stall`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostStall {
    pub after_group: usize,
    pub ns: i64,
}

impl StepSpec {
    pub fn new(name: Option<&str>, mode: LaunchMode, kernels: Vec<KernelSpec>) -> Self {
        StepSpec {
            names: name.map(|n| vec![n.to_owned()]).unwrap_or_default(),
            nvtx: NvtxStyle::PushPop,
            mode,
            kernels,
            host_gap_before_ns: 20_000,
            memcpy_h2d_bytes: None,
            memcpy_d2h_bytes: None,
            launches_without_kernels: 0,
            kernels_without_launch_after: 0,
            host_stall: None,
        }
    }
}

#[derive(Debug, Clone)]
pub struct Scenario {
    pub layout: Layout,
    /// Tensor-parallel ranks: rank r is pid 1000 + r, tid = pid, device r.
    pub ranks: u32,
    pub steps: Vec<StepSpec>,
    pub launch_ns: i64,
    pub launch_gap_ns: i64,
    pub launch_latency_ns: i64,
    pub kernel_gap_ns: i64,
    /// Added to every kernel's duration on rank r (a slower rank); missing ranks get 0.
    pub rank_extra_ns: Vec<i64>,
    /// Also write an eventClass-67 backtrace duplicate of every launch (2022.2 files do).
    pub backtrace_duplicates: bool,
    pub start_ns: i64,
    /// `TARGET_INFO_GPU.name` of every rank's device.
    pub gpu_name: String,
    /// GPU metrics to write for every rank's device (none: the report has no counters).
    pub counters: Option<Counters>,
}

/// DRAM counters planted per kernel: while a kernel runs, the sampled DRAM read
/// throughput is the percentage of the first rule whose text its name contains (write
/// 0%); between kernels 0%.
#[derive(Debug, Clone, PartialEq)]
pub struct Counters {
    pub interval_ns: i64,
    /// (name substring, DRAM read % of peak).
    pub dram_read_pct: Vec<(String, f64)>,
}

impl Scenario {
    pub fn new(layout: Layout, ranks: u32, steps: Vec<StepSpec>) -> Self {
        Scenario {
            layout,
            ranks,
            steps,
            launch_ns: 4_000,
            launch_gap_ns: 1_000,
            launch_latency_ns: 3_000,
            kernel_gap_ns: 500,
            rank_extra_ns: Vec::new(),
            backtrace_duplicates: false,
            start_ns: 1_000_000_000,
            gpu_name: "NVIDIA H100 80GB HBM3".to_owned(),
            counters: None,
        }
    }
}
