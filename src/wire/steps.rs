//! What step finding and attribution print: the steps, their series and summaries, and
//! the plain enums they carry (step kind, batch composition, how a step was found).

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::attribution::{
    Attributions, GroupAttribution, LaunchCost, OperatingPoint, ShapeCount, StepAttribution,
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

impl BatchComposition {
    /// Whether the name counted any requests (a `ProfilerStep#N` composition counts none).
    pub fn counts_requests(&self) -> bool {
        self.requests.is_some()
            || self.context.requests.is_some()
            || self.generation.requests.is_some()
    }
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
    pub fn as_str(self) -> &'static str {
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

    /// Words for the first output line, naming the engine the family identifies:
    /// "python-stack spans (heuristic: vLLM V1 without step annotation)".
    pub fn describe_for(self, engine: Option<&str>) -> String {
        match (self, engine) {
            (FoundBy::Python, Some(e)) => format!("python-stack spans (heuristic: {e})"),
            (FoundBy::Recurring, Some(e)) => format!("recurring annotations (heuristic: {e})"),
            (FoundBy::Scheduler, Some(e)) => format!("scheduler scopes ({e})"),
            _ => self.describe().to_owned(),
        }
    }

    /// Words for the first output line.
    pub fn describe(self) -> &'static str {
        match self {
            FoundBy::Marker => "engine step markers",
            FoundBy::Scheduler => "scheduler scopes",
            FoundBy::Python => "python-stack spans (heuristic)",
            FoundBy::Recurring => "recurring annotations (heuristic)",
            FoundBy::Sync => "host sync points (heuristic)",
            FoundBy::Graphs => "CUDA-graph launch groups (heuristic)",
            FoundBy::Gaps => "idle-gap splits (heuristic)",
            FoundBy::Regex => "--steps regex",
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

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Arc<str>, D::Error> {
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

/// A step's kind as groups key it: the marker's kind, else the inferred one, marked so
/// that an inferred decode never matches an exact one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct KindLabel {
    pub kind: StepKind,
    pub inferred: bool,
}

impl KindLabel {
    /// `decode`, or `decode (inferred)` for a guess: the group key a baseline stores.
    pub fn as_str(self) -> &'static str {
        if !self.inferred {
            return self.kind.as_str();
        }
        match self.kind {
            StepKind::Decode => "decode (inferred)",
            StepKind::Prefill => "prefill (inferred)",
            StepKind::Mixed => "mixed (inferred)",
            StepKind::Verify => "verify (inferred)",
            StepKind::Draft => "draft (inferred)",
            StepKind::Idle => "idle (inferred)",
            StepKind::Unknown => "unknown",
        }
    }
}

impl std::fmt::Display for KindLabel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Step {
    /// The kind groups and `--kind` use: the marker's, else the inferred guess.
    pub fn kind_label(&self) -> KindLabel {
        match (self.kind, self.kind_guess) {
            (StepKind::Unknown, Some(g)) => KindLabel {
                kind: g,
                inferred: true,
            },
            (k, _) => KindLabel {
                kind: k,
                inferred: false,
            },
        }
    }
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

/// Which step finder produced a report (`method` in JSON, the word in "steps (…)").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum StepMethod {
    /// Engine step markers.
    Engine,
    /// Scheduler scopes.
    Scheduler,
    /// Python-stack step functions (heuristic).
    Python,
    /// Recurring annotation cycles (heuristic).
    Recurring,
    /// Host sync points (heuristic).
    Sync,
    /// A user-given regex over range names.
    Regex,
    /// CUDA-graph launch groups (heuristic).
    Graphs,
    /// Idle-gap splits (heuristic).
    Gaps,
}

impl StepMethod {
    /// The wire string (the same as the JSON value).
    pub fn as_str(self) -> &'static str {
        match self {
            StepMethod::Engine => "engine",
            StepMethod::Scheduler => "scheduler",
            StepMethod::Python => "python",
            StepMethod::Recurring => "recurring",
            StepMethod::Sync => "sync",
            StepMethod::Regex => "regex",
            StepMethod::Graphs => "graphs",
            StepMethod::Gaps => "gaps",
        }
    }
}

impl std::fmt::Display for StepMethod {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

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
    pub method: StepMethod,
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
    pub steps: Vec<Step>,
}

/// One step named by its series and index, as the steps table shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StepAt {
    pub series: usize,
    pub index: usize,
}

impl StepsReport {
    /// The one place steps and their attributions meet: step finding returns the report
    /// with every `attribution` empty, attribution returns [`Attributions`] computed from
    /// `self.steps` (same order), and this puts them together.
    ///
    /// Attributions of other steps (a different count) are a bug in the caller, refused as
    /// an internal error rather than joined to the wrong steps.
    pub fn join(mut self, a: Attributions) -> crate::exit::Result<StepsReport> {
        if a.steps.len() != self.steps.len() {
            return Err(crate::exit::Error::internal(format!(
                "{} attributions for {} steps: attributions must be computed from the report's own steps",
                a.steps.len(),
                self.steps.len()
            )));
        }
        for (s, at) in self.steps.iter_mut().zip(a.steps) {
            s.attribution = Some(at);
        }
        self.shapes = a.shapes;
        self.launch_cost = Some(a.launch_cost);
        self.groups = a.groups;
        Ok(self)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::{ShapeCount, Step, StepKind, StepMethod, StepsReport};
    use crate::wire::attribution::{
        Attributions, LaunchAttribution, LaunchCost, Shape, StepAttribution,
    };

    #[test]
    fn step_method_serializes_to_the_strings_reports_always_carried() {
        // The strings `method` had while it was a String: the JSON must not change.
        let cases = [
            (StepMethod::Engine, "engine"),
            (StepMethod::Scheduler, "scheduler"),
            (StepMethod::Python, "python"),
            (StepMethod::Sync, "sync"),
            (StepMethod::Regex, "regex"),
            (StepMethod::Graphs, "graphs"),
            (StepMethod::Gaps, "gaps"),
        ];
        for (m, s) in cases {
            assert_eq!(serde_json::to_string(&m).unwrap(), format!("\"{s}\""));
            assert_eq!(m.to_string(), s);
            assert_eq!(
                serde_json::from_str::<StepMethod>(&format!("\"{s}\"")).unwrap(),
                m
            );
        }
        assert!(serde_json::from_str::<StepMethod>("\"marker\"").is_err());
    }

    /// A decode step of wall 10 ns, busy 10, no gap (for tests elsewhere in the crate).
    pub(crate) fn step(index: usize, launches: u64) -> Step {
        Step {
            index,
            series: 0,
            pid: 1,
            tid: Some(1),
            device: Some(0),
            name: format!("s{index}"),
            domain: None,
            found_by: super::FoundBy::Marker,
            kind: StepKind::Decode,
            kind_guess: None,
            kind_evidence: None,
            batch_guess: None,
            batch_evidence: None,
            tokens_guess: None,
            tokens_evidence: None,
            composition: None,
            cpu_start_ns: None,
            cpu_end_ns: None,
            cpu_ns: None,
            gpu_start_ns: Some(0),
            gpu_end_ns: Some(10),
            wall_ns: Some(10),
            period_ns: None,
            idle_before_ns: None,
            busy_ns: 10,
            gap_ns: Some(0),
            kernels: 1,
            ops: 1,
            tail_busy_ns: 0,
            tail_kernels: 0,
            tail_ops: 0,
            graph_replays: 0,
            launches,
            launch_host_ns: 0,
            exposed_comm_ns: None,
            longest_host_call: None,
            annotation_gpu_start_ns: None,
            annotation_gpu_end_ns: None,
            top_kernels: Vec::new(),
            categories: Vec::new(),
            attribution: None,
            all_kernels: Vec::new(),
        }
    }

    /// An attribution without a floor (for tests elsewhere in the crate).
    pub(crate) fn attribution(launches: u64, shape: Shape) -> StepAttribution {
        StepAttribution {
            floor: None,
            launch: LaunchAttribution {
                launches,
                host_ns: 0,
                driver_floor_ns: 0.0,
                framework_ns: 0.0,
                host_to_gap_ratio: None,
            },
            shape,
            action: String::new(),
            classes: Vec::new(),
            waterfall: None,
            plausible_with: Vec::new(),
            measured_dram_of_peak: None,
        }
    }

    /// A report of `steps` with every other field empty (for tests elsewhere in the crate).
    pub(crate) fn report(steps: Vec<Step>) -> StepsReport {
        StepsReport {
            schema_version: super::SCHEMA_VERSION,
            tool: None,
            source: None,
            method: StepMethod::Engine,
            found_by: super::FoundBy::Marker,
            exact_steps_hint: None,
            found_by_engine: None,
            launch_cost: None,
            shapes: Vec::new(),
            notes: Vec::new(),
            warnings: Vec::new(),
            series: Vec::new(),
            outside_steps: Vec::new(),
            steps_without_gpu_work: 0,
            summary: Vec::new(),
            ranks: Vec::new(),
            operating_point: None,
            groups: Vec::new(),
            class_spread: Vec::new(),
            median_step: None,
            medians: None,
            verdict: None,
            steps,
        }
    }

    #[test]
    fn join_puts_each_attribution_on_its_own_step_and_sets_the_report_fields() {
        // Steps told apart by their launch count; each attribution carries the same count,
        // so a shifted or reversed join shows.
        let r = report(vec![step(0, 7), step(1, 3)]);
        let cost = LaunchCost {
            per_launch_ns: 2500.0,
            source: "measured".to_owned(),
        };
        let shapes = vec![
            ShapeCount {
                shape: Shape::LaunchBound,
                steps: 1,
            },
            ShapeCount {
                shape: Shape::HostStall,
                steps: 1,
            },
        ];
        let j = r
            .join(Attributions {
                steps: vec![
                    attribution(7, Shape::LaunchBound),
                    attribution(3, Shape::HostStall),
                ],
                shapes: shapes.clone(),
                launch_cost: cost.clone(),
                groups: Vec::new(),
            })
            .unwrap();
        for s in &j.steps {
            let a = s.attribution.as_ref().unwrap();
            assert_eq!(a.launch.launches, s.launches, "step {}", s.index);
        }
        assert_eq!(
            j.steps[0].attribution.as_ref().unwrap().shape,
            Shape::LaunchBound
        );
        assert_eq!(
            j.steps[1].attribution.as_ref().unwrap().shape,
            Shape::HostStall
        );
        assert_eq!(j.shapes, shapes);
        assert_eq!(j.launch_cost, Some(cost));
    }

    #[test]
    fn join_refuses_attributions_of_other_steps() {
        let e = report(vec![step(0, 1), step(1, 1)])
            .join(Attributions {
                steps: vec![attribution(1, Shape::Undetermined)],
                shapes: Vec::new(),
                launch_cost: LaunchCost {
                    per_launch_ns: 1.0,
                    source: "cited".to_owned(),
                },
                groups: Vec::new(),
            })
            .unwrap_err();
        assert_eq!(e.exit_code(), crate::exit::INTERNAL);
        assert!(
            e.message.starts_with("1 attributions for 2 steps"),
            "{}",
            e.message
        );
    }
}
