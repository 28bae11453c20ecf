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

/// Everything the chain needs, as plain numbers (SI units: bytes, seconds, FLOP).
#[derive(Debug, Clone, PartialEq)]
pub struct CapacityInputs {
    pub kv_pool_tokens: f64,
    pub kv_cell_bytes: f64,
    pub input_tokens: f64,
    pub output_tokens: f64,
    pub weights_bytes: f64,
    /// P for the 2·P·S prefill term.
    pub params_streamed: f64,
    /// c in the causal attention term c·S² (2·L·h·d_h for standard attention).
    pub prefill_attention_coeff: f64,
    pub hbm_bytes_per_s: f64,
    pub peak_flops_per_s: f64,
    /// The softest input: prefill runs at this fraction of peak.
    pub prefill_mfu: f64,
    pub ttft_p99_target_s: f64,
    /// Run the fluid ITL closure at this inter-token-latency target.
    pub itl_target_s: Option<f64>,
    /// Fleet request rate to size replicas for.
    pub fleet_rps: Option<f64>,
    pub price_usd_per_gpu_hour: f64,
    pub gpus_per_replica: f64,
    /// Price the step at this batch instead of B_max (must not exceed B_max).
    pub batch: Option<f64>,
}

/// The caveats the source attaches to this model, printed with every plan.
pub(crate) const CAVEATS: &[&str] = &[
    "A screening model, not a measured capacity or a capacity guarantee.",
    "Step time is the roofline floor (weights + KV read at B, no KV write): real steps are slower.",
    "Prefill MFU is an assumption and the softest input; measure it under a realistic workload.",
    "M/M/1 p99 TTFT is a proxy: batching changes service distributions, TTFT depends on chunking and queue discipline.",
    "The fluid ITL root is a stationary average; live occupancy is length-biased. Recheck a nearest-integer batch on the real scheduler.",
    "The price is illustrative; a real TCO adds CPU, RAM, network, idle reserve and failure capacity.",
];
