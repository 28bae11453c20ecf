//! The `launch-probe` file: this machine's measured kernel-launch cost, which
//! `steps --launch-cost FILE` reads back (`probe` measures and reads it).

use serde::{Deserialize, Serialize};

/// End-to-end cost of one launch in synchronized bursts (derived: burst wall time / launches).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct EndToEnd {
    pub min: f64,
    pub median: f64,
    /// Measured wall time of each burst, integer ns.
    pub bursts_ns: Vec<i64>,
}

/// Launch cost of one CUDA graph of `nodes` null kernels.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct GraphCost {
    pub nodes: u32,
    pub launches_per_burst: u32,
    /// Fastest burst's wall time / graph launches (derived).
    pub per_graph_launch_ns: f64,
    /// `per_graph_launch_ns / nodes` (derived).
    pub per_node_ns: f64,
    /// Measured wall time of each burst, integer ns.
    pub bursts_ns: Vec<i64>,
}

/// What `launch-probe --format json` writes (schema_version 1).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ProbeReport {
    pub schema_version: u32,
    /// The stepgate that measured; absent in files written before it was recorded. The
    /// source of the numbers is the device named below.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<super::meta::Tool>,
    /// Always true in a file the probe wrote; a reader refuses anything else.
    pub measured: bool,
    pub device_ordinal: usize,
    pub device_name: String,
    /// e.g. "9.0" for an H100/H200.
    pub compute_capability: String,
    /// The kernel-module version from /proc/driver/nvidia/version, when readable.
    pub driver_version: Option<String>,
    /// The CUDA version the driver supports (`cuDriverGetVersion`), e.g. "12.8".
    pub cuda_version: String,
    pub iters_per_burst: u32,
    pub repeats: u32,
    pub end_to_end_per_launch_ns: EndToEnd,
    /// Fastest host time to issue `iters_per_burst` launches without waiting / launches.
    pub submit_only_per_launch_ns: f64,
    pub graph: GraphCost,
    pub cited_driver_only_ns: f64,
    pub cited_source: String,
}
