//! What `gate --format json` and `diff --format json` print: the verdict, the judged rows
//! per group, the thresholds they were judged by, and the wall-time waterfall.

use serde::Serialize;

/// The outcome of a whole comparison or of one group.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Pass,
    Regression,
    Inconclusive,
    /// The two sides' operating points differ in a way that changes what a step means
    /// (GPU, model, TP, no step kind in common): nothing is judged (exit 6).
    Incomparable,
}

/// What the statistics say about one row, before asking whether it gates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RowVerdict {
    /// Whole interval beyond the threshold in the worse direction.
    Regression,
    /// Whole interval beyond the threshold in the better direction.
    Improvement,
    /// Within threshold or within noise.
    Ok,
    /// Too few samples to say, or (with `detectable` above the threshold) too noisy to
    /// have seen a change the size of the threshold.
    Inconclusive,
}

/// One judged quantity: medians of the per-step samples (what the thresholds judge),
/// their means (what the waterfall sums), and the change of the medians.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Change {
    pub baseline_median: Option<f64>,
    pub candidate_median: Option<f64>,
    /// Mean of the per-step samples (derived): the statistic the waterfall adds up, shown
    /// beside the medians the thresholds judge (one kernel reads the same in both).
    pub baseline_mean: Option<f64>,
    pub candidate_mean: Option<f64>,
    pub baseline_samples: usize,
    pub candidate_samples: usize,
    /// candidate − baseline median.
    pub change: Option<f64>,
    /// candidate / baseline − 1; None when the baseline median is not positive.
    pub change_rel: Option<f64>,
    /// Bootstrap interval of the absolute change; computed only where the point change
    /// crosses the thresholds (and always for step metrics).
    pub interval: Option<[f64; 2]>,
    /// Bootstrap interval of the relative change.
    pub interval_rel: Option<[f64; 2]>,
    pub threshold: Threshold,
    /// The smallest change these samples can tell from none at the policy's confidence:
    /// half the width of `interval` (derived, the metric's unit). Step metrics only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detectable: Option<f64>,
    /// Half the width of `interval_rel`: the smallest visible change relative to the
    /// baseline median (derived). Above the threshold the row is `inconclusive`, never ok.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detectable_rel: Option<f64>,
    /// Where the row is inconclusive for want of power: the steps per side estimated to
    /// bring the smallest visible change down to half the threshold (derived: the
    /// interval's width shrinks as 1/√n).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steps_needed: Option<usize>,
    pub higher_is_worse: bool,
    pub verdict: RowVerdict,
    /// Whether this row can fail the gate (policy `gate`, and not overruled by a context
    /// shift).
    pub gated: bool,
}

/// A step metric's row.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct MetricRow {
    pub metric: String,
    #[serde(flatten)]
    pub change: Change,
    /// How the gate's renderings name it (its `baseline::metrics` row); not serialized.
    #[serde(skip)]
    #[schemars(skip)]
    pub label: String,
    /// How its values are shown; not serialized.
    #[serde(skip)]
    #[schemars(skip)]
    pub unit: super::baseline::MetricUnit,
}

/// A kernel's exclusive ns per step.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct KernelRow {
    pub name: String,
    pub short_name: String,
    pub category: String,
    #[serde(flatten)]
    pub change: Change,
}

/// A category's ns per step.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct CategoryRow {
    pub category: String,
    #[serde(flatten)]
    pub change: Change,
}

/// A kernel seen on one side of a group only, above the new-kernel share.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct KernelPresence {
    pub name: String,
    pub short_name: String,
    pub category: String,
    /// Mean exclusive ns per step on the side that has it (derived).
    pub mean_ns_per_step: f64,
    /// That mean over the side's mean busy ns per step (derived).
    pub share_of_busy: f64,
    /// Whether it fails the gate (new kernels only, per policy).
    pub gated: bool,
}

/// One (step kind, batch size) group present on both sides.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct GroupComparison {
    pub step_kind: String,
    pub batch_size: Option<u32>,
    pub label: String,
    pub baseline_steps: usize,
    pub candidate_steps: usize,
    pub baseline_mean_context: Option<f64>,
    pub candidate_mean_context: Option<f64>,
    /// Relative move of the mean context, when both sides know it.
    pub context_change: Option<f64>,
    pub verdict: Verdict,
    /// Why the verdict is what it is, one line each.
    pub reasons: Vec<String>,
    pub notes: Vec<String>,
    pub metrics: Vec<MetricRow>,
    /// Kernels on both sides, the largest increase per step first.
    pub kernels: Vec<KernelRow>,
    pub categories: Vec<CategoryRow>,
    pub new_kernels: Vec<KernelPresence>,
    pub vanished_kernels: Vec<KernelPresence>,
    /// The exact decomposition of the mean wall change (`waterfall`, `waterfall_check`, …).
    #[serde(flatten)]
    pub explain: Waterfall,
}

/// Which side a one-sided group is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Side {
    Baseline,
    Candidate,
}

/// A group present on one side only: reported, not compared.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct OneSided {
    pub step_kind: String,
    pub batch_size: Option<u32>,
    pub label: String,
    pub side: Side,
    pub steps: usize,
}

/// The operating points of the two sides, compared before anything else (docs/gate.md,
/// "Comparable or not").
#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Comparability {
    /// Of the fields both sides state, the share that agree (derived); None when no field
    /// is stated by both.
    pub score: Option<f64>,
    /// The fields both sides state, in checking order.
    pub checked: Vec<String>,
    /// The fields at least one side does not state: not compared, not counted.
    pub unknown: Vec<String>,
    /// Each checked field that differs.
    pub differences: Vec<FieldDifference>,
}

/// One operating-point field that differs between the sides.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct FieldDifference {
    /// `GPU`, `model`, `TP`, `step kinds`, `engine`, `capture mode`, …
    pub field: String,
    pub baseline: String,
    pub candidate: String,
    /// A difference that changes what a step means: the verdict is `incomparable`.
    pub changes_meaning: bool,
}

/// What a side is.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct SideInfo {
    pub gpu_name: Option<String>,
    pub model: Option<String>,
    pub engine: Option<String>,
    pub nsys_version: Option<String>,
    pub source_format: String,
    pub created_by: String,
    pub groups: usize,
    pub steps: usize,
}

/// How the numbers were derived, so the report can say it.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Method {
    pub statistic: &'static str,
    pub interval: &'static str,
    pub confidence: f64,
    pub resamples: usize,
    pub seed: u64,
    pub min_samples: usize,
    pub context_shift: f64,
    pub new_kernel_share: f64,
}

/// The full comparison (the JSON `gate --format json` and `diff --format json` print).
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Comparison {
    pub schema_version: u32,
    pub tool: super::meta::Tool,
    /// What each side was read from (set by `gate` and `diff`; the library's compare
    /// leaves it unset).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<super::meta::ComparisonSource>,
    pub verdict: Verdict,
    /// The process exit code this verdict maps to.
    pub exit_code: u8,
    pub inconclusive_fails: bool,
    /// What drove the verdict, one line each (empty on a clean pass).
    pub reasons: Vec<String>,
    /// Gated step-metric rows over every compared group.
    pub gated_metrics: usize,
    /// Of those, the rows the samples resolved (not `inconclusive`): the headline's
    /// "2 of 3 gated metrics resolved".
    pub resolved_metrics: usize,
    pub warnings: Vec<String>,
    /// How alike the two sides' operating points are, field by field.
    pub comparability: Comparability,
    pub baseline: SideInfo,
    pub candidate: SideInfo,
    pub method: Method,
    pub groups: Vec<GroupComparison>,
    pub one_sided: Vec<OneSided>,
    /// Set when there was no baseline to compare with, and why (e.g. `gate --history`
    /// matched too few runs): nothing was compared, and nothing is claimed missing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub baseline_unavailable: Option<String>,
    /// How many kernels each `[[kernel]]` rule of the policy selected, in policy order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub policy_rules: Vec<RuleMatches>,
    /// Labels that tell apart distinct kernels sharing a short name (full name → label),
    /// over every name the comparison shows, so one kernel reads the same everywhere.
    #[serde(skip_serializing_if = "NameLabelMap::is_empty")]
    pub name_labels: NameLabelMap,
}

/// Full kernel name → the label reports show for it; a name not here reads as its short
/// name.
#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(transparent)]
pub struct NameLabelMap(pub std::collections::BTreeMap<String, String>);

impl NameLabelMap {
    /// The label of `full`, else `short`.
    pub fn get<'a>(&'a self, full: &str, short: &'a str) -> &'a str {
        self.0.get(full).map_or(short, String::as_str)
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// A policy `[[kernel]]` rule and the kernels it selected among both sides' kernels.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct RuleMatches {
    /// The selector as written (`act_and_mul`, `re:^nccl`).
    pub selector: String,
    /// Distinct kernel names it selected.
    pub kernels: usize,
    /// The rule may select none (`optional = true`).
    pub optional: bool,
}

/// When a change counts: the whole interval beyond `rel` and the point change beyond `abs`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Threshold {
    /// Relative change (0.03 = 3%).
    pub rel: f64,
    /// Absolute change, in the metric's unit (ns for times).
    pub abs: f64,
    /// Whether crossing it fails the gate (false: reported only).
    pub gate: bool,
}

/// Name of the row carrying the change of the mean gap (wall − busy) per step.
pub const GAP_ROW: &str = "[gap]";

/// Largest |Σ rows − Δ mean wall| (ns) still called exact: f64 rounding of the means.
pub(crate) const EXACT_TOLERANCE_NS: f64 = 1e-6;

/// One row: a kernel name (or the gap) and its mean ns per step on each side.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct WaterfallRow {
    /// Full demangled name, or [`GAP_ROW`].
    pub name: String,
    /// The short name tables show (the gap row repeats its name).
    pub short_name: String,
    /// Kernel category (`gap` for the gap row).
    pub category: String,
    /// Mean exclusive ns per step in the baseline (0 when the name is new). Derived.
    pub baseline_mean_ns: f64,
    /// Mean exclusive ns per step in the candidate (0 when the name vanished). Derived.
    pub candidate_mean_ns: f64,
    /// candidate − baseline mean ns per step. Derived.
    pub delta_ns: f64,
}

/// The sum check: the rows must add up to the change of the mean wall.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct WaterfallCheck {
    /// Mean wall ns per step of each side (derived).
    pub baseline_mean_wall_ns: f64,
    pub candidate_mean_wall_ns: f64,
    /// Mean wall ns per step, candidate minus baseline, from the wall samples.
    pub delta_mean_wall_ns: f64,
    /// Σ `delta_ns` over every row (gap included).
    pub sum_rows_ns: f64,
    /// |sum − delta| within [`EXACT_TOLERANCE_NS`].
    pub exact: bool,
}

/// Each side's mean roofline floor per step, when both sides were priced (floor = MBU ×
/// wall per step, so it is derived from the stored samples).
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct WaterfallFloor {
    pub baseline_mean_floor_ns: f64,
    pub candidate_mean_floor_ns: f64,
    /// candidate − baseline mean floor: the part of the change the workload itself (e.g. a
    /// context shift) explains.
    pub delta_floor_ns: f64,
    /// Each side's mean wall − its mean floor: how far above the floor it runs (derived).
    pub baseline_above_floor_ns: f64,
    pub candidate_above_floor_ns: f64,
}

/// Waterfall rows folded into one: how many, and the sums of their Δ and means (ns).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct WaterfallFold {
    pub rows: usize,
    pub delta_ns: f64,
    pub baseline_mean_ns: f64,
    pub candidate_mean_ns: f64,
}

/// The waterfall row that moved most.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, schemars::JsonSchema)]
pub struct LargestContributor {
    /// Its index in `waterfall`.
    pub row: usize,
    /// Its Δ mean over the Δ of the mean wall (derived): above 1 when other rows moved the
    /// other way, negative when it moved against the wall. Absent when the wall held still.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub share_of_change: Option<f64>,
}

/// The waterfall parts a group comparison carries (flattened into its JSON).
#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Waterfall {
    /// Every row, largest |Δ| first, the gap row last; empty when unavailable.
    pub waterfall: Vec<WaterfallRow>,
    pub waterfall_check: Option<WaterfallCheck>,
    pub waterfall_floor: Option<WaterfallFloor>,
    /// Why there is no waterfall, or why the sum check fails.
    pub waterfall_note: Option<String>,
    /// The row that moved most (the gap included), with its share of the change of the
    /// mean wall: what the PR comment's second line names. Absent when no row moved.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub largest_contributor: Option<LargestContributor>,
    /// For each cut `n`, the kernel rows from the `n`-th on (gap excluded) folded into one
    /// "N others" row: what a table showing the top `n` prints below them. Not in the JSON,
    /// which has every row.
    #[serde(skip)]
    pub folds: Vec<WaterfallFold>,
    /// The change of each kernel class's excess over its floor (means per step, derived),
    /// for the classes both sides priced; absent without a model on both sides.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub class_excess: Vec<super::attribution::ClassExcessChange>,
}
