//! What `floor --format json` prints: the floor of one decode operating point, the model
//! geometry it was priced on and the basis of each row (`roofline::floor` computes it,
//! `report::floor` renders it).

use serde::Serialize;

use super::attribution::Bound;
use super::meta::{ModelSource, Tool};
use super::roofline::{MlaSpec, MoeRouting};

/// What `stepgate floor` prints for one decode operating point (all derived or cited).
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct FloorReport {
    /// The model's name; the JSON carries it inside the `model` geometry object instead.
    #[serde(skip_serializing)]
    pub model: String,
    pub gpu: String,
    pub gpu_name: String,
    pub gpu_source: String,
    /// "cited" (datasheet) or "input" (--hbm-tb-s).
    pub hbm_basis: &'static str,
    pub peak_basis: &'static str,
    pub batch: u64,
    pub context: u64,
    pub tp: u32,
    pub pp: u32,
    pub kv_cell_bytes: f64,
    pub weights_bytes: f64,
    pub kv_read_bytes: f64,
    pub kv_write_bytes: f64,
    pub total_bytes: f64,
    pub weights_share: f64,
    pub kv_read_share: f64,
    pub kv_write_share: f64,
    pub hbm_bytes_per_s: f64,
    pub peak_flops_per_s: f64,
    pub memory_floor_ns: f64,
    pub compute_floor_ns: f64,
    pub floor_ns: f64,
    /// The chapter's floor (docs/method.md §3.2): no KV write.
    pub chapter_floor_ns: f64,
    pub floor_definition: &'static str,
    pub decode_tokens_per_s: f64,
    pub flops: f64,
    pub attention_flops: f64,
    /// `attention_flops / flops`.
    pub attention_flops_share: f64,
    pub intensity_flop_per_byte: f64,
    pub ridge_flop_per_byte: f64,
    pub attainable_flops_per_s: f64,
    pub best_mfu: f64,
    pub bound: Bound,
    pub moe_routing: Option<MoeRouting>,
    pub experts_touched: Option<f64>,
    pub launches: u64,
    pub launch_cost_ns: f64,
    /// "cited" (arXiv:2504.11750) or "input" (a measured --launch-cost).
    pub launch_cost_basis: &'static str,
    pub launch_budget_ns: f64,
    pub launch_share_of_floor: f64,
    /// FlashAttention-2's decode grid on one GPU: batch × query heads per GPU blocks.
    pub decode_grid_blocks: u64,
    /// The GPU's SM count (cited) and whether the grid leaves some of them idle.
    pub sm_count: u32,
    pub grid_underfills_sms: bool,
    pub mla: Option<MlaComparison>,
}

/// The MLA decode attention core: what the absorbed kernel executes against what vLLM's
/// perf model bills (docs/method.md §6).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, schemars::JsonSchema)]
pub struct MlaComparison {
    /// 2·h·(576+512) per context token per layer vs 2·h·(192+128): 3.4 for DeepSeek-V3.
    pub attention_ratio: f64,
    pub attention_flops: f64,
    pub vllm_attention_flops: f64,
    /// The whole step through vLLM's own perf model (what it logs as TF/s).
    pub vllm_reported_flops: f64,
    /// The same formulas with the absorbed attention core.
    pub corrected_flops: f64,
    /// corrected / reported (about 2.27 at 16k for DeepSeek-V3).
    pub ratio: f64,
}

/// The geometry stepgate resolved from the preset or `config.json` (after every flag
/// override), so a user can check what was read. Counts are as read (input); the
/// parameter counts are derived from them.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct ModelGeometry {
    pub name: String,
    /// `preset`, `config.json`, or either `+ overrides` when a flag changed the geometry.
    pub source: String,
    pub layers: u64,
    pub hidden: u64,
    pub heads: u64,
    pub kv_heads: u64,
    pub head_dim: u64,
    /// Dense FFN width.
    pub intermediate: u64,
    pub vocab: u64,
    /// Routed experts (0 for a dense model).
    pub experts: u64,
    /// Experts per token (0 for a dense model).
    pub top_k: u64,
    /// Layers whose FFN is MoE.
    pub moe_layers: u64,
    pub moe_intermediate: Option<u64>,
    pub shared_expert_intermediate: Option<u64>,
    /// Sliding window in tokens (null: none, or disabled).
    pub sliding_window: Option<u64>,
    /// Layers that use the sliding window.
    pub sliding_layers: u64,
    /// Multi-head latent attention widths (DeepSeek-V2/V3, Kimi-K2).
    pub mla: Option<MlaSpec>,
    /// Every other field the byte model reads, under the name of the config.json field it
    /// came from (class defaults applied; null where the model has no such part).
    pub config: ConfigFields,
    /// Linear-layer weight storage: bf16, fp16, fp32, fp8, int8, int4-gN, mxfp4.
    pub weight_dtype: String,
    /// Bytes per linear weight as stepgate bills it, block scales included (int4-g128:
    /// 0.5 + 2/128).
    pub bytes_per_weight: f64,
    /// The same as vLLM's perf model bills it (fp8 family 1, int4/fp4 family 0.5, no
    /// scales); null when --weight-dtype replaced what the config says.
    pub vllm_bytes_per_weight: Option<f64>,
    /// Bytes per activation element: the model dtype.
    pub bytes_per_activation: f64,
    /// Bytes per KV-cache element (model dtype, or --kv-dtype).
    pub kv_bytes_per_element: f64,
    /// `quantization_config.quant_method` from the config, if any.
    pub quantization_method: Option<String>,
    /// All parameters, input embedding included (derived from the geometry).
    pub params_total: u64,
    /// Parameters a batch-1 decode step streams (derived; MoE: k experts).
    pub params_streamed: u64,
}

/// The resolved geometry under `config.json` names: what the floor multiplies, so a
/// user can compare it with the model card field by field.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct ConfigFields {
    pub hidden_size: u64,
    pub num_hidden_layers: u64,
    pub num_attention_heads: u64,
    pub num_key_value_heads: u64,
    pub head_dim: u64,
    pub intermediate_size: u64,
    pub vocab_size: u64,
    pub tie_word_embeddings: bool,
    pub attention_bias: bool,
    /// Per-head q/k RMSNorm (Qwen3, Gemma 3): not a config field, implied by model_type.
    pub qk_norm: bool,
    pub sliding_window: Option<u64>,
    /// Routed experts (`n_routed_experts`, `num_experts` or `num_local_experts`).
    pub num_experts: Option<u64>,
    pub num_experts_per_tok: Option<u64>,
    pub moe_intermediate_size: Option<u64>,
    pub n_shared_experts: Option<u64>,
    pub shared_expert_intermediate_size: Option<u64>,
    pub kv_lora_rank: Option<u64>,
    pub q_lora_rank: Option<u64>,
    pub qk_nope_head_dim: Option<u64>,
    pub qk_rope_head_dim: Option<u64>,
    pub v_head_dim: Option<u64>,
}

/// JSON wire form: the resolved model, the report's fields, and the basis of each row.
#[derive(Serialize, schemars::JsonSchema)]
pub(crate) struct FloorDocument<'a> {
    pub(crate) schema_version: u32,
    pub(crate) tool: Tool,
    pub(crate) source: &'a ModelSource,
    pub(crate) kind: &'static str,
    pub(crate) model: &'a ModelGeometry,
    #[serde(flatten)]
    pub(crate) report: &'a FloorReport,
    pub(crate) basis: Vec<(String, String)>,
}
