//! What `analyze` prints for one trace: per-device totals, op names and categories.
//!
//! This is a versioned contract (`schema_version`): later issues add fields, never remove
//! or rename them. Measured times are integer ns relative to the report's origin.

use serde::{Deserialize, Serialize};

use super::meta::SourceInfo;
use super::steps::CategoryStat;

/// Bump when a field changes meaning or disappears (adding fields does not bump it).
/// 2: `tool` became `{name, version}` (was the string `stepgate <version>`).
pub const SCHEMA_VERSION: u32 = 2;

/// Everything `analyze` reports for one trace.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Analysis {
    pub schema_version: u32,
    /// The stepgate that wrote this.
    pub tool: super::meta::Tool,
    pub source: SourceInfo,
    pub warnings: Vec<String>,
    pub devices: Vec<DeviceSummary>,
    /// Steps found in the trace (`steps` issue); absent when step finding was not asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steps: Option<super::steps::StepsReport>,
}

/// A process that ran work on a device.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ProcessRef {
    pub pid: i64,
    pub name: Option<String>,
}

/// Per-GPU totals. `busy_ns` is the length of the union of all op intervals on the
/// device across streams; `idle_ns = (window_end_ns - window_start_ns) - busy_ns`.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DeviceSummary {
    pub device: i64,
    pub name: Option<String>,
    /// As the report states it (nsys `TARGET_INFO_GPU.memoryBandwidth`), bytes/s; cited.
    pub memory_bandwidth_bytes_per_s: Option<f64>,
    pub processes: Vec<ProcessRef>,
    /// Kernels + memcpy + memset + opaque CUDA-graph replays.
    pub ops: u64,
    /// Kernel rows only.
    pub kernels: u64,
    pub busy_ns: i64,
    /// Plain sum of kernel durations (overlap counted twice).
    pub kernel_sum_ns: i64,
    pub window_start_ns: i64,
    pub window_end_ns: i64,
    /// `window_end_ns - window_start_ns`.
    #[serde(default)]
    pub window_ns: i64,
    /// `busy_ns / window_ns` (0 for an empty window).
    #[serde(default)]
    pub busy_fraction: f64,
    pub idle_ns: i64,
    /// The op name that alone keeps the device busy at least half of its busy time, when
    /// one does: a report that is 95% one host-to-device copy says so, not only "99% busy".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dominant: Option<Dominant>,
    /// Every op name on the device, ranked by exclusive (non-overlapped) time.
    pub kernels_by_name: Vec<KernelStat>,
    /// The same time grouped by kernel category, ranked by exclusive time.
    pub categories: Vec<CategoryStat>,
}

/// The op name that takes most of a device's busy time.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Dominant {
    pub short_name: String,
    /// Its exclusive time over the device's busy time.
    pub share_of_busy: f64,
    pub exclusive_ns: i64,
    pub instances: u64,
}

/// One op name's statistics on one device.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct KernelStat {
    /// Demangled name: the identity.
    pub name: String,
    /// Readable short form for display.
    pub short_name: String,
    pub category: String,
    pub instances: u64,
    pub total_ns: i64,
    pub mean_ns: f64,
    pub median_ns: f64,
    pub min_ns: i64,
    pub max_ns: i64,
    /// Time this name alone kept the device busy: Σ over its ops of the part past the
    /// running end of every op that started before it (see `timing::overlap`).
    pub exclusive_ns: i64,
    /// `exclusive_ns` over the device's `busy_ns` (0 on a device never busy).
    #[serde(default)]
    pub share_of_busy: f64,
}
