//! What attribution prints for one step: its floor, its launches, its shape and the next
//! action, plus the per-launch cost it priced with.

use serde::{Deserialize, Serialize};

use super::steps::ShapeCount;

/// Which roof binds. Serialized as `memory` / `compute`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Bound {
    Memory,
    Compute,
}

/// The per-launch cost attribution prices with, and where it came from (cited, given, or a
/// [`crate::probe::MeasuredLaunchCost`] read from a probe file).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LaunchCost {
    pub per_launch_ns: f64,
    /// `cited` (arXiv:2504.11750) or `measured` (launch-probe / --launch-cost-us).
    pub source: String,
}

/// Where a step's time went relative to its floor (all derived from measured + floor).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct FloorAttribution {
    pub floor_ns: f64,
    /// Which roof binds (`memory` or `compute` in JSON).
    pub bound: Bound,
    /// wall − floor.
    pub residual_ns: f64,
    /// The part of the residual with the GPU idle inside the step.
    pub gap_ns: f64,
    /// busy − floor: time the kernels took beyond the floor.
    pub kernel_excess_ns: f64,
    /// Floor efficiency: floor / wall (MBU when memory-bound).
    pub mbu: f64,
    /// Compulsory bytes / busy time.
    pub achieved_bytes_per_s: f64,
    /// Wall below the floor: the byte model is wrong, not the machine.
    pub below_floor: bool,
}

/// Host launch time against the gap: how much of the GPU-idle time the host spent launching.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LaunchAttribution {
    pub launches: u64,
    /// Measured: summed host time inside launch calls.
    pub host_ns: i64,
    /// Derived: launches × per-launch cost.
    pub driver_floor_ns: f64,
    /// Derived: host time above the driver floor.
    pub framework_ns: f64,
    /// Host launch time / gap: > 1 the host runs ahead; < 1 look for a synchronize.
    pub host_to_gap_ratio: Option<f64>,
}

/// The shape of a step's timeline.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum Shape {
    LaunchBound,
    HostStall,
    OneKernelDominant,
    AtMemoryRoof,
    UnderUtilized,
    /// Dense GPU lane, no dominant kernel, and no floor to tell the last two apart.
    Undetermined,
    /// Dense GPU lane, no dominant kernel, and measured below the floor: the floor is wrong.
    BelowFloor,
    NoGpuWork,
}

impl Shape {
    pub fn as_str(self) -> &'static str {
        match self {
            Shape::LaunchBound => "launch-bound",
            Shape::HostStall => "host stall",
            Shape::OneKernelDominant => "one kernel dominant",
            Shape::AtMemoryRoof => "at the memory roof",
            Shape::UnderUtilized => "under-utilized",
            Shape::Undetermined => "undetermined (no floor)",
            Shape::BelowFloor => "below the floor",
            Shape::NoGpuWork => "no GPU work",
        }
    }
}

/// Everything attributed to one step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StepAttribution {
    pub floor: Option<FloorAttribution>,
    pub launch: LaunchAttribution,
    pub shape: Shape,
    /// The next action, in one line.
    pub action: String,
}

/// What attribution returns for a list of steps: one attribution per step (same order,
/// same length) and the report-level fields. Not serialized itself:
/// [`StepsReport::join`](super::steps::StepsReport::join) places it.
#[derive(Debug, Clone, PartialEq)]
pub struct Attributions {
    /// Parallel to the steps it was computed from.
    pub steps: Vec<StepAttribution>,
    /// Step count per shape over steps with GPU work, most frequent first.
    pub shapes: Vec<ShapeCount>,
    /// The per-launch cost the attribution used.
    pub launch_cost: LaunchCost,
}
