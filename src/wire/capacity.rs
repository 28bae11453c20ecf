//! What `capacity --format json` prints: the capacity plan, what it was priced on and the
//! basis of each row (`roofline::capacity` computes it, `report::capacity` renders it).

use serde::Serialize;

use super::meta::{ModelSource, Tool};

/// The fixed-batch M/M/1 screen at B (docs/method.md §7 step 5).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, schemars::JsonSchema)]
pub struct FixedBatch {
    pub rho: f64,
    pub lambda_rps: f64,
    pub replicas: Option<u64>,
    pub usd_per_million_output_tokens: f64,
}

/// The fluid ITL model's higher-load root (docs/method.md §7 step 6).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Fluid {
    pub itl_target_ns: f64,
    pub lambda_rps: f64,
    pub batch: f64,
    pub service_ns: f64,
    pub rho: f64,
    pub replicas: Option<u64>,
    pub usd_per_million_output_tokens: f64,
    /// The other root of the same equation (a low-load solution), when it exists.
    pub lower_root_lambda_rps: Option<f64>,
    pub lower_root_batch: Option<f64>,
}

/// The step of the plan that has no solution under the inputs given: which step, why in
/// the model's own terms, and what would give it one (the steps before it are priced).
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Unsolved {
    /// 5 (fixed-batch M/M/1 screen) or 6 (fluid ITL closure).
    pub step: u8,
    /// The step's name.
    pub name: String,
    /// Why no load meets the targets, with the numbers that decide it (derived).
    pub reason: String,
    /// What would give the step a solution, each checked by solving the model again.
    pub changes: Vec<String>,
    /// Step 6 without a root: the lowest p99 TTFT any load reaches at the ITL target, ns
    /// (derived), and the request rate where it does.
    pub lowest_ttft_p99_ns: Option<f64>,
    pub lowest_at_lambda_rps: Option<f64>,
    /// The longest prefill at which the step has a solution, other inputs unchanged, ns
    /// (derived).
    pub prefill_at_most_ns: Option<f64>,
}

/// The whole chain's result. Times in ns (f64, derived).
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct CapacityPlan {
    pub kv_pool_tokens: f64,
    pub mean_context: f64,
    pub b_max: u64,
    pub batch: f64,
    pub step_bytes: f64,
    pub step_ns: f64,
    pub decode_tokens_per_s: f64,
    pub prefill_flops: f64,
    pub prefill_ns: f64,
    pub decode_share_ns: f64,
    pub service_ns: f64,
    pub saturation_rps: f64,
    pub prefill_fraction: f64,
    pub decode_fraction: f64,
    /// Step 5; null when it has no solution ([`Unsolved`] says why).
    pub fixed_batch: Option<FixedBatch>,
    /// Step 6; null without an ITL target, or when step 5 or 6 has no solution.
    pub fluid: Option<Fluid>,
    /// The first step without a solution; absent when every step has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unsolved: Option<Unsolved>,
}

/// JSON wire form: the plan, what it was priced on, and the basis of each row.
#[derive(Serialize, schemars::JsonSchema)]
pub(crate) struct CapacityDocument<'a> {
    pub(crate) schema_version: u32,
    pub(crate) tool: Tool,
    pub(crate) source: &'a ModelSource,
    pub(crate) kind: &'static str,
    pub(crate) model: &'a str,
    pub(crate) gpu: &'a str,
    pub(crate) gpu_source: &'a str,
    pub(crate) step_pricing: &'static str,
    #[serde(flatten)]
    pub(crate) plan: &'a CapacityPlan,
    pub(crate) basis: Vec<(String, String)>,
    pub(crate) caveats: &'static [&'static str],
}
