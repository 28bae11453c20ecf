//! What step finding and attribution print: the steps, their series and summaries, and
//! the plain enums they carry (step kind, batch composition, how a step was found).

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::attribution::{
    GroupAttribution, LaunchCost, OperatingPoint, ShapeCount, StepAttribution,
};

/// What kind of engine step a span is.
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
pub enum StepKind {
    Decode,
    Prefill,
    Mixed,
    Verify,
    Draft,
    Idle,
    /// Found by regex, graph launch or idle gap, with no parsable composition.
    Unknown,
}

impl StepKind {
    pub fn as_str(self) -> &'static str {
        match self {
            StepKind::Decode => "decode",
            StepKind::Prefill => "prefill",
            StepKind::Mixed => "mixed",
            StepKind::Verify => "verify",
            StepKind::Draft => "draft",
            StepKind::Idle => "idle",
            StepKind::Unknown => "unknown",
        }
    }
}

/// Aggregates of one request group: Σ query tokens, Σ KV length (including the new
/// tokens), Σ query², Σ query·KV.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
pub struct GroupAggregates {
    pub requests: Option<u64>,
    /// ΣN_Q: tokens scheduled for this group.
    pub sq: Option<u64>,
    /// ΣN_KV: context length including this step's tokens.
    pub sk: Option<u64>,
    /// ΣN_Q².
    pub sqsq: Option<u64>,
    /// ΣN_Q·N_KV.
    pub sqsk: Option<u64>,
}

/// The batch a step ran, as its span name states it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct BatchComposition {
    /// `vllm`, `sglang` or `trtllm`.
    pub engine: String,
    /// SGLang stage label (DECODE, EXTEND, …) or vLLM's `execute`.
    pub stage: String,
    /// Number of requests in the batch (SGLang `bs`, vLLM context + generation).
    pub requests: Option<u64>,
    /// Total scheduled tokens (vLLM `execute_{T}`, SGLang `toks=`).
    pub tokens: Option<u64>,
    /// Context (prefill) requests.
    pub context: GroupAggregates,
    /// Generation (decode) requests.
    pub generation: GroupAggregates,
    /// SGLang `forward_id`.
    pub forward_id: Option<u64>,
    /// TensorRT-LLM executor iteration (`_forward_step {iter}`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iteration: Option<u64>,
}

/// How a step was found, most certain first.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum FoundBy {
    /// An engine step marker (annotation or NVTX range) named the step.
    #[default]
    Marker,
    /// A scheduler scope (SGLang `scheduler.run_batch`, vLLM `gpu_model_runner: forward`).
    Scheduler,
    /// A python-stack span of the engine's step function (heuristic).
    Python,
    /// A cycle of recurring annotations, tiled from one opener to the next (heuristic: a
    /// training loop without ProfilerStep#N).
    Recurring,
    /// Recurring host synchronisation on the launching thread (heuristic).
    Sync,
    /// CUDA-graph launches grouped between host syncs (heuristic).
    Graphs,
    /// GPU activity split at idle gaps (heuristic).
    Gaps,
    /// A user-given regex over range names.
    Regex,
}

impl FoundBy {
    /// The JSON word of `found_by` (its serde value).
    pub const fn as_str(self) -> &'static str {
        match self {
            FoundBy::Marker => "marker",
            FoundBy::Scheduler => "scheduler",
            FoundBy::Python => "python",
            FoundBy::Recurring => "recurring",
            FoundBy::Sync => "sync",
            FoundBy::Graphs => "graphs",
            FoundBy::Gaps => "gaps",
            FoundBy::Regex => "regex",
        }
    }

    /// The JSON word of a report's `method`: `found_by`'s, but `engine` for markers (the
    /// word `method` carried before `found_by` existed).
    pub const fn method_str(self) -> &'static str {
        match self {
            FoundBy::Marker => "engine",
            other => other.as_str(),
        }
    }
}

/// One op name inside one step. Names are shared (`Arc<str>`), not copied per step:
/// 20,000 steps of 2 KB template names would otherwise cost a gigabyte.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StepKernel {
    #[serde(with = "arc_str")]
    #[schemars(with = "String")]
    pub name: Arc<str>,
    #[serde(with = "arc_str")]
    #[schemars(with = "String")]
    pub short_name: Arc<str>,
    #[serde(with = "arc_str")]
    #[schemars(with = "String")]
    pub category: Arc<str>,
    pub instances: u64,
    pub total_ns: i64,
    pub exclusive_ns: i64,
}

/// `Arc<str>` as a plain JSON string (serde's `rc` feature is not enabled).
mod arc_str {
    use std::sync::Arc;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &Arc<str>, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(v)
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Arc<str>, D::Error> {
        String::deserialize(d).map(Arc::from)
    }
}

/// One category's totals on one device.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CategoryStat {
    pub category: String,
    pub instances: u64,
    pub total_ns: i64,
    pub exclusive_ns: i64,
    /// `exclusive_ns` over the device's busy time, in a device summary (absent per step).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub share_of_busy: Option<f64>,
}

/// A host call, for naming what the host did during a gap.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct HostCall {
    pub name: String,
    pub start_ns: i64,
    pub dur_ns: i64,
}

/// One engine step on one rank, with every time in integer ns.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Step {
    /// Position in its series (rank), in GPU-start order.
    pub index: usize,
    /// Index into [`StepsReport::series`].
    pub series: usize,
    pub pid: i64,
    pub tid: Option<i64>,
    pub device: Option<i64>,
    pub name: String,
    /// The named NVTX domain of the step's range (nsys shows the range as `Domain:Name`;
    /// `--steps REGEX` matches either); absent in the default domain.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub domain: Option<String>,
    /// How this step was found.
    #[serde(default)]
    pub found_by: FoundBy,
    /// decode/prefill/… only when a marker name or its composition says so.
    pub kind: StepKind,
    /// A heuristic's guess at the kind (never the gate's grouping key); null when the
    /// kind is known or nothing suggests one.
    #[serde(default)]
    pub kind_guess: Option<StepKind>,
    /// What `kind_guess` rests on, in one line (attention kernel family, duration
    /// cluster, …); absent when nothing was inferred.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind_evidence: Option<String>,
    pub composition: Option<BatchComposition>,
    /// Requests in a decode step whose name does not count them, inferred from the
    /// capture (the token count of its input shapes, the sequence count of its
    /// decode-attention launch grid), or the prompts of an inferred prefill (the sequences
    /// its grids or sampler count); never part of `composition` or the group key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch_guess: Option<u64>,
    /// What `batch_guess` rests on, in one line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch_evidence: Option<String>,
    /// Tokens the step wrote to the KV cache, inferred from the launch grid of its
    /// KV-cache write kernels (one per request in a decode, the prompt's tokens in a
    /// prefill); absent where the trace has no such grid or it was not read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens_guess: Option<u64>,
    /// What `tokens_guess` rests on, in one line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens_evidence: Option<String>,
    pub cpu_start_ns: Option<i64>,
    pub cpu_end_ns: Option<i64>,
    /// Host range length.
    pub cpu_ns: Option<i64>,
    pub gpu_start_ns: Option<i64>,
    pub gpu_end_ns: Option<i64>,
    /// GPU-projected span: last op end − first op start.
    pub wall_ns: Option<i64>,
    /// To the next step's GPU start on this series; null for the last.
    pub period_ns: Option<i64>,
    /// From the previous step's GPU end on this series; null for the first.
    pub idle_before_ns: Option<i64>,
    /// Union of the step's op intervals (the span's own projection).
    pub busy_ns: i64,
    /// wall − busy.
    pub gap_ns: Option<i64>,
    /// Kernel rows (memcpy/memset/opaque graph replays not included).
    pub kernels: u64,
    /// All ops: kernels, memcpy, memset, opaque graph replays.
    pub ops: u64,
    /// Busy time the tail adds: union(span ops ∪ tail ops) − busy. The tail is the GPU
    /// work launched on the step's thread after its span ends and before the next step's
    /// span starts (vLLM sampling after `execute_model`, SGLang's after `step[…]`).
    #[serde(default)]
    pub tail_busy_ns: i64,
    /// Kernel rows in the tail.
    #[serde(default)]
    pub tail_kernels: u64,
    /// All ops in the tail.
    #[serde(default)]
    pub tail_ops: u64,
    /// Opaque graph replays (graph-mode tracing) among the ops.
    pub graph_replays: u64,
    /// Kernel and graph launch calls inside the host range.
    pub launches: u64,
    /// Summed host time of those launch calls.
    pub launch_host_ns: i64,
    /// Communication time no other op of the step hides (busy minus the union of the
    /// non-communication ops), measured; absent when the step runs no communication.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exposed_comm_ns: Option<i64>,
    /// The longest non-launch host call inside the host range (a sync, a blocking copy).
    pub longest_host_call: Option<HostCall>,
    /// Kineto `gpu_user_annotation` span of the same name, where the trace has one.
    pub annotation_gpu_start_ns: Option<i64>,
    pub annotation_gpu_end_ns: Option<i64>,
    pub top_kernels: Vec<StepKernel>,
    pub categories: Vec<CategoryStat>,
    /// Floor, launch attribution and shape (filled by `attribution`).
    pub attribution: Option<StepAttribution>,
    /// Every op name in the step (for baselines); not serialized.
    #[serde(skip)]
    pub all_kernels: Vec<StepKernel>,
}

/// The steps of one rank: one process on one device.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Series {
    pub pid: i64,
    pub device: Option<i64>,
    pub steps: usize,
}

/// GPU time of one series that no step accounts for (neither a span nor a tail).
/// Identity, per series: Σ over its steps of (busy_ns + tail_busy_ns) + before_ns +
/// between_ns + after_ns = busy_ns here, exactly when the steps' GPU work does not
/// overlap in time (each term is a union of intervals over disjoint op sets).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct OutsideSteps {
    /// Index into [`StepsReport::series`].
    pub series: usize,
    /// Union of the unaccounted ops that start before the first step's GPU start.
    pub before_ns: i64,
    /// Union of the unaccounted ops that start at or after the last step's GPU end.
    pub after_ns: i64,
    /// Union of the unaccounted ops in between (launched from another thread, or with
    /// no launching call in the trace).
    pub between_ns: i64,
    /// Union of every op of the series (its process on its device).
    pub busy_ns: i64,
}

/// Median and spread of one metric over a step kind.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Spread {
    pub median: f64,
    pub p10: f64,
    pub p90: f64,
}

/// Per-kind summary of the steps with GPU work.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct KindSummary {
    pub kind: StepKind,
    /// The inferred kind of these `unknown` steps (their [`Step::kind_guess`]); absent
    /// for marker kinds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind_guess: Option<StepKind>,
    pub count: usize,
    pub wall_ns: Option<Spread>,
    pub period_ns: Option<Spread>,
    pub busy_ns: Option<Spread>,
    pub gap_ns: Option<Spread>,
    pub launches: Option<Spread>,
}

/// Tensor-parallel ranks aligned by step order: which rank was slowest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct AlignedStep {
    pub index: usize,
    pub slowest_series: usize,
    pub slowest_pid: i64,
    pub slowest_device: Option<i64>,
    pub max_wall_ns: i64,
    pub min_wall_ns: i64,
}

mod kind;
pub mod method;

pub use kind::KindLabel;

/// Version of the `steps` JSON document: additive fields keep it, a removed or renamed
/// field or a changed meaning bumps it (docs/reports.md).
pub const SCHEMA_VERSION: u32 = 1;

/// Everything step finding produced.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StepsReport {
    /// [`SCHEMA_VERSION`]; first in the document, as in `analyze`'s.
    pub schema_version: u32,
    /// The stepgate that wrote it and the report it read; absent where the report is
    /// nested in a document that carries its own (`analyze`'s `steps`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<super::meta::Tool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<super::meta::SourceInfo>,
    /// `engine`, `scheduler`, `python`, `recurring`, `sync`, `regex`, `graphs` or `gaps`.
    #[serde(with = "method")]
    #[schemars(with = "method::Schema")]
    pub method: FoundBy,
    /// How the steps were found (the same for every step).
    #[serde(default)]
    pub found_by: FoundBy,
    /// Which engine flag or version would make the steps exact; null when they are.
    #[serde(default)]
    pub exact_steps_hint: Option<String>,
    /// The engine (and version range) the found_by family identifies, e.g. "vLLM V1
    /// without step annotation" for python-stack `execute_model` spans; none when the
    /// family names no engine. Absent then (not null), so reports of the other methods
    /// keep their shape.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub found_by_engine: Option<String>,
    /// The per-launch cost the attribution used.
    pub launch_cost: Option<LaunchCost>,
    /// Step count per shape over steps with GPU work, most frequent first.
    pub shapes: Vec<ShapeCount>,
    pub notes: Vec<String>,
    /// Things the user must know: refused step names, the loader's warnings.
    #[serde(default)]
    pub warnings: Vec<String>,
    pub series: Vec<Series>,
    /// Per series, GPU time outside every step.
    #[serde(default)]
    pub outside_steps: Vec<OutsideSteps>,
    pub steps_without_gpu_work: usize,
    pub summary: Vec<KindSummary>,
    pub ranks: Vec<AlignedStep>,
    /// TP, GPU, batch and context as read, inferred or given (set by attribution).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operating_point: Option<OperatingPoint>,
    /// Per group of like steps, the class attribution of its median step.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<GroupAttribution>,
    /// Per group of like steps (≥ 5 of them), each class's time across its steps.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub class_spread: Vec<super::attribution::GroupSpread>,
    /// The run's verdict over every step (set by attribution).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<super::attribution::RunVerdict>,
    /// The median step by wall among the steps of the most common kind (ties: the lower
    /// index), the one the steps page draws; absent with no step with GPU work.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub median_step: Option<StepAt>,
    /// Launch, exposed-communication and floor medians over the steps with GPU work (set
    /// by the pipeline after attribution); absent before it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub medians: Option<super::run_medians::RunMedians>,
    /// Counts and sums over the steps that the report prints beside its tables.
    #[serde(default)]
    pub tally: StepTally,
    pub steps: Vec<Step>,
}

/// Counts and sums over the steps, taken once where the report is built (measured), so
/// no renderer adds them up.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StepTally {
    /// Steps per method that found them, the report's own method first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub found_by: Vec<MethodCount>,
    /// The steps that launched ops after their span, where any did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tail: Option<TailTally>,
    /// GPU busy time outside every step, summed over the series (ns).
    pub outside_before_ns: i64,
    pub outside_between_ns: i64,
    pub outside_after_ns: i64,
    /// How many aligned steps each process was the slowest rank of, most first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub slowest_rank: Vec<RankCount>,
}

/// Steps found by one method.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct MethodCount {
    pub found_by: FoundBy,
    pub steps: usize,
}

/// The steps that launched ops after their span: how many, the ops, their busy ns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TailTally {
    pub steps: usize,
    pub ops: u64,
    pub busy_ns: i64,
}

/// One process and the number of aligned steps it was the slowest rank of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RankCount {
    pub pid: i64,
    pub steps: usize,
}

/// One step named by its series and index, as the steps table shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StepAt {
    pub series: usize,
    pub index: usize,
}

#[cfg(test)]
pub(crate) mod tests;
