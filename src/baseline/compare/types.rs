//! The comparison's output types (what `gate --format json` and `diff --format json`
//! print) and the verdict's exit code.

use serde::Serialize;

use crate::baseline::policy::Threshold;
use crate::exit;

/// The outcome of a whole comparison or of one group.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Pass,
    Regression,
    Inconclusive,
}

/// What the statistics say about one row, before asking whether it gates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RowVerdict {
    /// Whole interval beyond the threshold in the worse direction.
    Regression,
    /// Whole interval beyond the threshold in the better direction.
    Improvement,
    /// Within threshold or within noise.
    Ok,
    /// Too few samples to say.
    Inconclusive,
}

/// One judged quantity: medians (derived) of the per-step samples and their change.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Change {
    pub baseline_median: Option<f64>,
    pub candidate_median: Option<f64>,
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
    pub higher_is_worse: bool,
    pub verdict: RowVerdict,
    /// Whether this row can fail the gate (policy `gate`, and not overruled by a context
    /// shift).
    pub gated: bool,
}

/// A step metric's row.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MetricRow {
    pub metric: String,
    #[serde(flatten)]
    pub change: Change,
}

/// A kernel's exclusive ns per step.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KernelRow {
    pub name: String,
    pub short_name: String,
    pub category: String,
    #[serde(flatten)]
    pub change: Change,
}

/// A category's ns per step.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CategoryRow {
    pub category: String,
    #[serde(flatten)]
    pub change: Change,
}

/// A kernel seen on one side of a group only, above the new-kernel share.
#[derive(Debug, Clone, PartialEq, Serialize)]
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
#[derive(Debug, Clone, PartialEq, Serialize)]
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
    pub explain: crate::baseline::waterfall::Waterfall,
}

/// Which side a one-sided group is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Side {
    Baseline,
    Candidate,
}

/// A group present on one side only: reported, not compared.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OneSided {
    pub step_kind: String,
    pub batch_size: Option<u32>,
    pub label: String,
    pub side: Side,
    pub steps: usize,
}

/// What a side is.
#[derive(Debug, Clone, PartialEq, Serialize)]
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
#[derive(Debug, Clone, PartialEq, Serialize)]
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
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    pub schema_version: u32,
    pub verdict: Verdict,
    /// The process exit code this verdict maps to.
    pub exit_code: u8,
    pub inconclusive_fails: bool,
    /// What drove the verdict, one line each (empty on a clean pass).
    pub reasons: Vec<String>,
    pub warnings: Vec<String>,
    pub baseline: SideInfo,
    pub candidate: SideInfo,
    pub method: Method,
    pub groups: Vec<GroupComparison>,
    pub one_sided: Vec<OneSided>,
}

impl Verdict {
    /// The exit code of `crate::exit` for this verdict.
    pub fn exit_code(self, inconclusive_fails: bool) -> u8 {
        match self {
            Verdict::Pass => exit::OK,
            Verdict::Regression => exit::REGRESSION,
            Verdict::Inconclusive if inconclusive_fails => exit::REGRESSION,
            Verdict::Inconclusive => exit::INCONCLUSIVE,
        }
    }
}
