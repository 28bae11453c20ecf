//! The stored baseline file (`baseline record -o FILE`): per step kind and batch size, the
//! per-step samples of every step metric, every kernel and every category, enough to redo
//! the statistics. What the samples mean and how they are thinned is `baseline::model`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The version of the baseline file layout this build writes and reads. Bump it when a
/// field changes meaning; readers refuse newer files instead of guessing.
pub const SCHEMA_VERSION: u32 = 1;

/// The `format` tag every baseline file starts with, so a foreign JSON file (a Kineto trace,
/// another tool's output) is told apart from a damaged baseline.
pub(crate) const FORMAT: &str = "stepgate-baseline";

/// How a step metric's values are shown and what range they fall in (a row of
/// `baseline::metrics` says which).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum MetricUnit {
    /// ns per step, shown in µs.
    #[default]
    Ns,
    /// A count per step, shown with one decimal.
    Count,
    /// A share from 0 to 1, shown in percent (changes in points).
    Fraction,
    /// A utilisation (above 1 possible), shown in percent (changes in points).
    Utilisation,
}

/// Names of the built-in step metrics (keys of [`Group::metrics`]); each is declared once,
/// as a row of `baseline::metrics` (unit, direction, how read, gated and shown), and named
/// here for the code that means that metric (the waterfall, the launch-mode note). Times
/// are ns per step.
pub mod metric {
    /// GPU-projected span of the step.
    pub const WALL_NS: &str = "wall_ns";
    /// From this step's GPU start to the next one's on the same device.
    pub const PERIOD_NS: &str = "period_ns";
    /// Union of the step's GPU ops.
    pub const BUSY_NS: &str = "busy_ns";
    /// wall − busy.
    pub const GAP_NS: &str = "gap_ns";
    /// gap / wall.
    pub const GAP_FRACTION: &str = "gap_fraction";
    /// Kernel and graph launch calls inside the step's host range.
    pub const LAUNCHES: &str = "launches";
    /// floor / wall (only when a model is given).
    pub const MBU: &str = "mbu";
    /// Communication time no other op hides (only for steps that communicate).
    pub(crate) const EXPOSED_COMM_NS: &str = "exposed_comm_ns";
    /// Prefix of a kernel class's excess over its floor per step (`excess_ns.weights`),
    /// derived; judged only when the policy names it.
    pub(crate) const CLASS_EXCESS_PREFIX: &str = "excess_ns.";

    /// Whether a metric is a time in ns (shown in µs): `…_ns`, and every class excess.
    pub(crate) fn in_ns(name: &str) -> bool {
        name.ends_with("_ns") || name.starts_with(CLASS_EXCESS_PREFIX)
    }
}

/// One stored baseline (or one side of a comparison built straight from a report).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Baseline {
    /// Always [`FORMAT`]; first in the file so a reader can sniff it.
    pub format: String,
    pub schema_version: u32,
    /// The stepgate that wrote the file; absent in files written before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<super::meta::Tool>,
    /// The report the samples were recorded from; absent in older files and in a side
    /// built from run history.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<super::meta::SourceInfo>,
    pub meta: BaselineMeta,
    pub samples: SampleSet,
}

/// What was measured, so a comparison can refuse apples against oranges.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct BaselineMeta {
    /// The GPU as the report names it (`NVIDIA H100 80GB HBM3`), or `--gpu`.
    pub gpu_name: Option<String>,
    /// The nsys version that wrote the report, when it is an nsys export.
    pub nsys_version: Option<String>,
    /// `nsys-sqlite`, `kineto` or `synthetic`.
    pub source_format: String,
    /// `vllm`, `sglang`, … when the step names tell.
    pub engine: Option<String>,
    /// The step kinds present (`decode`, `prefill`, `mixed`, …).
    pub step_kinds: Vec<String>,
    /// Distinct batch compositions seen, as the step finder labels them
    /// (e.g. `decode bs=32 ctx=4096`).
    pub batch_compositions: Vec<String>,
    /// The model the floor was priced for (`--model`), if any.
    pub model: Option<String>,
    /// The inputs of the floor (model config, GPU figures), if a model was given.
    pub floor_inputs: Option<serde_json::Value>,
    /// `stepgate <version>` that recorded it.
    pub created_by: String,
    /// How the steps were found (`marker`, `scheduler`, `gaps`, …; the steps report's
    /// `found_by`); absent in files written before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub found_by: Option<String>,
    /// Tensor-parallel size, where the report states or shows it (not a default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tp: Option<u32>,
    /// The serving engine's version where the trace records it (`vllm 0.6.3`, from a
    /// Kineto trace's `vllm_version`); a gate lists a difference as lowering the
    /// comparability score. Absent in files written before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine_version: Option<String>,
}

/// Per-step samples, grouped so that only like steps are compared.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SampleSet {
    pub groups: Vec<Group>,
}

/// The steps of one kind and one batch size.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Group {
    /// `decode`, `prefill`, `mixed`, `verify`, `draft`, `idle`, or `step` when unknown.
    pub step_kind: String,
    /// Requests per step, when the step names tell.
    pub batch_size: Option<u32>,
    /// Mean over steps of the context (ΣN_KV) per request, when known.
    pub mean_context: Option<f64>,
    /// Per-step samples by metric name (see [`metric`]); a metric may have fewer samples
    /// than the group has steps (`period_ns` has none for the last step).
    pub metrics: BTreeMap<String, Vec<f64>>,
    /// Per kernel (full name): one sample per step of the group, 0 where it did not run.
    pub kernels: BTreeMap<String, KernelSamples>,
    /// Per category: exclusive ns per step.
    pub categories: BTreeMap<String, Vec<f64>>,
    /// Per kernel class priced on every step (`weights`, `attention`, …): its floor and
    /// excess per step, derived; empty without a model.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub classes: BTreeMap<String, super::attribution::ClassSamples>,
}

/// One kernel's per-step samples inside a group.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct KernelSamples {
    /// The demangled name cut to something a table can show.
    pub short_name: String,
    /// Category from `categories` (gemm, attention, communication, …).
    pub category: String,
    /// Exclusive (non-overlapped) ns per step.
    pub exclusive_ns: Vec<f64>,
    /// Instances per step.
    pub instances: Vec<f64>,
}
