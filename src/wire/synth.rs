//! The ground truth the synthetic captures must yield (`synth`, `stepgate-synth`): per step
//! and device what the analysis must measure, and what a replicated export holds.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// What a replication produced.
#[derive(Debug, Clone, Serialize)]
pub struct Replicated {
    pub copies: u64,
    /// Time shift between consecutive copies.
    pub period_ns: i64,
    /// Correlation-id offset between consecutive copies.
    pub correlation_stride: i64,
    /// Rows per table after replication (tables that were replicated).
    pub rows: Vec<(String, i64)>,
}

/// What one step on one rank must measure.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StepExpect {
    pub step: usize,
    pub rank: u32,
    pub device: i64,
    pub pid: i64,
    pub tid: i64,
    /// Outermost range name (`None`: no NVTX range was written).
    pub name: Option<String>,
    /// Innermost range name: the name a nested step is reported under.
    pub inner_name: Option<String>,
    /// The outermost range (or, without one, the host window it would have had).
    pub cpu_start_ns: i64,
    pub cpu_end_ns: i64,
    /// First op start / last op end of the step's ops (`None` when it has none).
    pub gpu_start_ns: Option<i64>,
    pub gpu_end_ns: Option<i64>,
    /// Union of the step's ops (= their summed durations: one stream, no overlap).
    pub busy_ns: i64,
    /// Kernel rows (opaque graph replays and memcpy not included).
    pub kernels: u64,
    pub graph_replays: u64,
    pub memcpys: u64,
    /// Launch calls inside the range (kernel and graph launches, incl. ones without kernels).
    pub launches: u64,
    pub launch_host_ns: i64,
}

/// Whole-device values over everything written (steps and orphan kernels).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DeviceExpect {
    pub device: i64,
    /// Kernels + memcpy + opaque graph replays.
    pub ops: u64,
    pub kernels: u64,
    pub busy_ns: i64,
    pub kernel_sum_ns: i64,
    pub window_start_ns: i64,
    pub window_end_ns: i64,
    /// Kernels whose correlation id has no call in their process.
    pub kernels_without_launch: u64,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Expected {
    /// Per step then per rank, in step order.
    pub steps: Vec<StepExpect>,
    pub devices: Vec<DeviceExpect>,
}

/// Output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    Kineto,
    Nsys,
}

/// A parsed batch composition the marker carries.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompositionTruth {
    pub context_requests: u64,
    pub context_tokens: Option<u64>,
    pub generation_requests: u64,
}

/// What one step must measure.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepTruth {
    pub index: usize,
    /// The step span's name (`None`: no span marks it).
    pub name: Option<String>,
    /// marker, scheduler, python, sync, graphs.
    pub found_by: String,
    /// decode/prefill/mixed… only when the marker says so, else unknown.
    pub kind: String,
    pub composition: Option<CompositionTruth>,
    /// First start / last end of the ops launched inside the span (`None`: no GPU work).
    pub gpu_start_ns: Option<i64>,
    pub gpu_end_ns: Option<i64>,
    /// Ops launched inside the span (for steps without a span: the whole iteration).
    pub busy_ns: i64,
    pub kernels: u64,
    pub ops: u64,
    /// Ops launched on the step's thread after its span and before the next step.
    pub tail_busy_ns: i64,
    pub tail_kernels: u64,
    pub tail_ops: u64,
    /// Graph launches inside the span.
    pub graph_launches: u64,
}

/// One rank's steps.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeriesTruth {
    pub rank: u32,
    pub pid: i64,
    pub tid: i64,
    pub device: i64,
    pub steps: Vec<StepTruth>,
    /// Ops launched before the first or after the last step.
    pub outside_busy_ns: i64,
    /// Every op of the device (= Σ busy + Σ tail + outside).
    pub device_busy_ns: i64,
    pub device_kernels: u64,
    pub device_ops: u64,
}

/// Ground truth of one generated capture.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Truth {
    pub scenario: String,
    pub format: Format,
    /// The report-level `found_by` expected (`mixed` when steps differ).
    pub found_by: String,
    pub series: Vec<SeriesTruth>,
    /// Files written (one per rank for multi-rank Kineto, in a directory).
    pub files: Vec<PathBuf>,
}
