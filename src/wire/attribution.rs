//! What attribution prints for one step: its floor, its launches, its shape and the next
//! action, plus the per-launch cost it priced with.

use serde::{Deserialize, Serialize};

pub use super::verdict::{RunVerdict, VARIES_OF_WALL, VARIES_RATIO};

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
    /// `cited` (arXiv:2504.11750) or `measured` (launch-probe / --launch-cost).
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
    /// floor / busy (derived): how close the kernels themselves run to the floor, the
    /// GPU's idle time left out.
    #[serde(default)]
    pub floor_over_busy: f64,
    /// Compulsory bytes / busy time.
    pub achieved_bytes_per_s: f64,
    /// The compulsory bytes and FLOPs the floor was priced from (derived; 0 in older ones).
    #[serde(default)]
    pub total_bytes: f64,
    #[serde(default)]
    pub flops: f64,
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
    /// A copy or memset holds more than half of the busy time: no kernel to profile.
    OneCopyDominant,
    AtMemoryRoof,
    UnderUtilized,
    /// Dense GPU lane, no dominant kernel, and no floor to tell the last two apart.
    Undetermined,
    /// Dense GPU lane, no dominant kernel, and measured below the floor: the floor is wrong.
    BelowFloor,
    NoGpuWork,
    /// An opaque `[cuda graph N]` replay holds > 50% of busy: trace the graph's nodes.
    OneGraphDominant,
    /// A collective holds > 50% of busy: the link and the other ranks, not a kernel.
    OneCollectiveDominant,
    AtComputeRoof,
}

impl Shape {
    pub fn as_str(self) -> &'static str {
        match self {
            Shape::LaunchBound => "launch-bound",
            Shape::HostStall => "host stall",
            Shape::OneKernelDominant => "one kernel dominant",
            Shape::OneCopyDominant => "one copy dominant",
            Shape::AtMemoryRoof => "at the memory roof",
            Shape::UnderUtilized => "under-utilized",
            Shape::Undetermined => "undetermined (no floor)",
            Shape::BelowFloor => "below the floor",
            Shape::NoGpuWork => "no GPU work",
            Shape::OneGraphDominant => "one graph replay dominant",
            Shape::OneCollectiveDominant => "one collective dominant",
            Shape::AtComputeRoof => "at the compute roof",
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
    /// Per kernel class: floor, time, excess, bandwidth (empty without a floor).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub classes: Vec<ClassAttribution>,
    /// The classes' waterfall from floor to wall (null without a floor).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waterfall: Option<ClassWaterfall>,
    /// For a step measured below its floor: the inputs under which the floor would be
    /// plausible (`--tp 4`, `--kv-dtype fp8`, …), each priced again (derived).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub plausible_with: Vec<String>,
    /// DRAM read + write throughput over the step's GPU span as the GPU's counters
    /// recorded it, a fraction of peak (measured); absent without GPU metrics.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measured_dram_of_peak: Option<f64>,
}

/// What attribution returns for a list of steps: one attribution per step (same order,
/// same length) and the report-level fields. Not serialized itself:
/// `pipeline::steps::attach` puts each on its step, the report takes the rest.
#[derive(Debug, Clone, PartialEq)]
pub struct Attributions {
    /// Parallel to the steps it was computed from.
    pub steps: Vec<StepAttribution>,
    /// Step count per shape over steps with GPU work, most frequent first.
    pub shapes: Vec<ShapeCount>,
    /// The per-launch cost the attribution used.
    pub launch_cost: LaunchCost,
    /// Per group of like steps, its median step's class attribution.
    pub groups: Vec<GroupAttribution>,
}

/// How a number was obtained: the labels every printed number carries.
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
#[serde(rename_all = "lowercase")]
pub enum Basis {
    /// Timed in the trace.
    Measured,
    /// A field the report states (Kineto `distributedInfo`, nsys `TARGET_INFO_GPU`, a
    /// capture sidecar).
    Read,
    /// Guessed from the trace's content, with the evidence beside it.
    Inferred,
    /// Arithmetic on other numbers.
    Derived,
    /// A datasheet or paper.
    Cited,
    /// A flag.
    Input,
    /// Nothing said otherwise (`--tp` not given, nothing in the capture: TP 1).
    Default,
}

impl Basis {
    pub fn as_str(self) -> &'static str {
        match self {
            Basis::Measured => "measured",
            Basis::Read => "read",
            Basis::Inferred => "inferred",
            Basis::Derived => "derived",
            Basis::Cited => "cited",
            Basis::Input => "input",
            Basis::Default => "default",
        }
    }
}

/// A value of the operating point with where it came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Sourced<T> {
    pub value: T,
    pub basis: Basis,
    /// One line: the flag, the report field, or the evidence of an inference.
    pub evidence: String,
}

/// What the capture says about how the engine ran, flag by flag: each value read from the
/// report, inferred from its content, given as a flag, or defaulted (docs/method.md §3.3).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct OperatingPoint {
    /// Tensor-parallel degree the floor is priced at.
    pub tp: Sourced<u32>,
    /// Pipeline-parallel degree, where something says it.
    pub pp: Option<Sourced<u32>>,
    /// The GPU table key priced against.
    pub gpu: Option<Sourced<String>>,
    /// Requests per step for steps whose names do not say.
    pub batch: Option<Sourced<u64>>,
    /// Keys attended per request for steps whose names do not say.
    pub context: Option<Sourced<u64>>,
    /// `nvidia` or `amd`, from the device names and the launch API.
    pub vendor: Option<String>,
    /// The capture sidecar read beside the report, if any.
    pub sidecar: Option<String>,
}

/// The classes a step's kernels are attributed to (docs/method.md §4.1), from their
/// categories. Key, label, categories and order live in one table,
/// [`super::class_table::CLASSES`]; what each class does in `attribution::class_rules`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[derive(schemars::JsonSchema)]
pub enum KernelClass {
    /// Weight-streaming GEMMs: dense linear layers, routed experts, lm_head.
    Weights,
    /// Attention kernels: they read the KV cache.
    Attention,
    /// KV-cache writes of the new tokens.
    KvWrite,
    /// All-reduce and all-gather.
    Communication,
    /// Activation quantize and dequantize kernels (fp8, fp4, MX block scales).
    Quantize,
    /// Norms, rope, activations, sampling, MoE routing, copies: near-zero floor.
    Rest,
    /// Test builds only: a throwaway class (`probe`) that proves a class is one row.
    #[cfg(test)]
    Probe,
}

/// Shape 2 or shape 4 of docs/method.md §4, decided per class from its achieved bandwidth.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ClassShape {
    /// Time within 1.3× the class floor: only fewer bytes help.
    AtRoof,
    /// Time beyond 1.3× the class floor: the kernels leave the machine idle.
    UnderUtilized,
    /// Time below the class floor: the byte model is wrong for this class.
    BelowFloor,
    /// No floor: no byte model for the class here.
    NoFloor,
    /// A floor but no kernel of the class ran: its bytes moved inside another class's
    /// kernels (fused).
    Absent,
}

impl ClassShape {
    pub fn as_str(self) -> &'static str {
        match self {
            ClassShape::AtRoof => "at the roof",
            ClassShape::UnderUtilized => "under-utilized",
            ClassShape::BelowFloor => "below its floor",
            ClassShape::NoFloor => "no floor",
            ClassShape::Absent => "fused elsewhere",
        }
    }
}

/// One class of a step: its floor and its measurement, and what lies between.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ClassAttribution {
    pub class: KernelClass,
    /// Kernel (and copy) instances of the class in the step (measured).
    pub kernels: u64,
    /// Exclusive GPU time of the class in the step, ns (measured): the class's share of
    /// busy, each overlapped instant counted once.
    pub time_ns: i64,
    /// Compulsory bytes the class moves on one GPU (derived); null without a byte model.
    pub bytes: Option<f64>,
    /// FLOPs of the class on one GPU (derived).
    pub flops: Option<f64>,
    /// The class floor, max(bytes / roof, FLOPs / π), in whole ns (derived); null: no floor.
    pub floor_ns: Option<i64>,
    /// time − floor (derived); null without a floor.
    pub excess_ns: Option<i64>,
    /// bytes / time (derived).
    pub achieved_bytes_per_s: Option<f64>,
    /// The roof the bytes move over: the GPU's β, or its interconnect for communication
    /// (cited, or input with --hbm-tb-s).
    pub roof_bytes_per_s: Option<f64>,
    /// achieved / roof.
    pub roof_fraction: Option<f64>,
    /// DRAM read + write throughput the GPU's counters recorded while the class's kernels
    /// ran, as a fraction of peak (measured; occupancy-weighted over the sampling
    /// periods); absent where the report has no GPU metrics. Where present it, not the
    /// byte model, decides `shape`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measured_dram_of_peak: Option<f64>,
    /// The same in bytes/s: the measured fraction times the roof (derived).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measured_dram_bytes_per_s: Option<f64>,
    /// How the floor was obtained, or why there is none.
    pub basis: String,
    pub shape: ClassShape,
    /// The next action for this class, in the tool's words; null at no floor.
    pub action: Option<String>,
}

/// A step's wall from floor to measurement, in whole ns (derived from measured + floor):
/// `floor_ns + excess_ns + unpriced_ns + unclassified_ns + gap_ns = wall_ns`, exactly.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ClassWaterfall {
    pub wall_ns: i64,
    /// Σ class floors of the classes with a floor.
    pub floor_ns: i64,
    /// Σ (time − floor) of those classes (negative where a class ran below its floor).
    pub excess_ns: i64,
    /// Time of the classes without a floor (communication with no cited link, …).
    pub unpriced_ns: i64,
    /// Time of kernels in no class (category `other`: unrecognised names, opaque graph
    /// replays).
    pub unclassified_ns: i64,
    /// GPU idle inside the step.
    pub gap_ns: i64,
}

/// The decode layer the median step repeats, its GEMMs mapped to the model's linear
/// layers by order and byte size.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LayerMap {
    /// Kernels in one repeat of the layer sequence (measured).
    pub period_kernels: usize,
    /// Repeats found (measured) and layers the model has on one pipeline stage.
    pub repeats: u64,
    pub layers: u64,
    /// One row per GEMM position in the period.
    pub gemms: Vec<LayerGemm>,
    /// Why the GEMMs could not be mapped to the model's layers; null when they were.
    pub ambiguous: Option<String>,
}

/// One GEMM position of the decode layer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LayerGemm {
    /// `qkv`, `o`, `gate_up`, `down`, `lm_head`, MoE's and MLA's (docs/method.md §4.1); null when ambiguous.
    pub role: Option<String>,
    pub kernel: String,
    /// The split-K reduction launched after this GEMM and folded into it (its time is in
    /// `time_ns`); null for a GEMM that reduces in place.
    pub split_k_reduction: Option<String>,
    /// Per layer, the mean over the repeats (measured).
    pub time_ns: f64,
    /// Launches per step: the layers mapped (one per layer), 1 for lm_head.
    pub launches_per_step: u64,
    /// The role's weight bytes per layer on one GPU (derived).
    pub bytes: Option<f64>,
    pub achieved_bytes_per_s: Option<f64>,
    pub roof_fraction: Option<f64>,
    /// Time beyond the role's floor (`time_ns` − bytes / roof, derived) per launch: what
    /// a faster GEMM could win; the GEMMs are ranked by it times `launches_per_step`, not
    /// by time.
    pub excess_ns: Option<f64>,
    /// `excess_ns` × `launches_per_step`: the excess of all its launches in one step
    /// (derived), what the GEMMs are ranked by.
    #[serde(default)]
    pub excess_per_step_ns: Option<f64>,
}

/// Each class's measured time across the like steps of one group: the median step's class
/// table alone hides a class that is short in that step and long in others (a collective
/// waiting on slower ranks).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct GroupSpread {
    /// The group's kind as the gate keys it (`decode`, `decode (inferred)`, …).
    pub group: String,
    /// Steps of the group with GPU work (the percentiles are over all of them).
    pub steps: usize,
    /// The group's median step wall, ns (measured).
    pub median_wall_ns: f64,
    pub classes: Vec<ClassSpread>,
}

/// One class's exclusive time per step over a group's steps (measured; 0 in a step that
/// runs none of its kernels).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ClassSpread {
    pub class: KernelClass,
    /// Steps that run at least one of its kernels.
    pub steps_with: usize,
    pub p10_ns: f64,
    pub p50_ns: f64,
    pub p90_ns: f64,
    /// The step where it took least and most.
    pub min: StepTime,
    pub max: StepTime,
    /// p90 ≥ 2 × p10 and p90 − p10 ≥ 10% of the median wall: the class varies across
    /// like steps (attribution::spread).
    pub varies: bool,
}

/// A class's time in one step: the step's series and index, as the steps table shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StepTime {
    pub series: usize,
    pub index: usize,
    pub ns: i64,
}

/// The class attribution of one group of like steps: its median step, exact.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct GroupAttribution {
    /// The group's kind as the gate keys it: `decode`, `decode (inferred)`, …
    pub group: String,
    /// Steps in the group with a floor.
    pub steps: usize,
    /// The median step by wall: its series and index.
    pub series: usize,
    pub index: usize,
    pub classes: Vec<ClassAttribution>,
    pub waterfall: ClassWaterfall,
    /// The per-layer view of the median step, where the trace allows one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layers: Option<LayerMap>,
    /// The classes' next actions, largest excess first (an unpriced class's last).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub actions: Vec<String>,
}

/// One class's per-step samples inside a baseline group (one value per step of the
/// group, derived): what its floor allowed and how far its kernels went beyond it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ClassSamples {
    pub floor_ns: Vec<f64>,
    pub excess_ns: Vec<f64>,
}

/// The change of one class's excess over its floor between two groups of like steps:
/// means per step (derived), so the class rows add up as the kernel waterfall's do.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ClassExcessChange {
    pub class: KernelClass,
    pub baseline_floor_ns: f64,
    pub candidate_floor_ns: f64,
    pub baseline_excess_ns: f64,
    pub candidate_excess_ns: f64,
    /// candidate − baseline excess.
    pub delta_excess_ns: f64,
}

/// A step's own floor, derived from its batch composition.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FloorInput {
    /// max(bytes / β, FLOPs / π), derived.
    pub floor_ns: f64,
    pub total_bytes: f64,
    pub flops: f64,
    /// Which roof binds (`memory` or `compute` in JSON).
    pub bound: Bound,
}

/// How many steps had one shape.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ShapeCount {
    pub shape: Shape,
    pub steps: usize,
}
