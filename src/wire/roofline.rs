//! The analytic model's inputs and one step's floor: GPU peaks, model geometry and dtypes,
//! parameter counts and weight bytes, the batch composition a step is priced at, and its
//! floor (`roofline` computes them; `floor`, `capacity`, `presets` and the baseline's
//! floor inputs print them).

use serde::Serialize;

use super::attribution::Bound;

/// One GPU model's cited peaks. Units in the field names; all per single GPU.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct GpuSpec {
    /// Preset key: lower case with dashes (`h100-sxm`).
    pub key: &'static str,
    /// Marketing name.
    pub name: &'static str,
    /// Peak HBM (or GDDR) bandwidth, bytes/s (TB/s = 1e12 B/s).
    pub hbm_bytes_per_s: f64,
    /// Dense bf16/fp16 tensor peak, FLOP/s.
    pub bf16_flops_per_s: f64,
    /// Dense fp8 tensor peak, FLOP/s (None where the part has no fp8 tensor path).
    pub fp8_flops_per_s: Option<f64>,
    /// Streaming multiprocessors (NVIDIA) or compute units (AMD).
    pub sm_count: u32,
    /// Device memory, bytes (GB = 1e9).
    pub memory_bytes: f64,
    /// Where the numbers come from.
    pub source: &'static str,
    /// The GPU-to-GPU interconnect of the part's multi-GPU board, where a datasheet gives
    /// it (None: PCIe cards, or no cited figure).
    pub interconnect: Option<Interconnect>,
}

/// A cited GPU-to-GPU link bandwidth, for the floor of the collectives.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Interconnect {
    /// Peak bytes/s in one direction: through the switch (every peer shares it), or of
    /// one link to one peer in a full mesh.
    pub per_direction_bytes_per_s: f64,
    /// Full mesh (one link per peer, AMD Infinity Fabric) rather than a switch (NVSwitch).
    pub mesh: bool,
    /// Where the figure comes from.
    pub source: &'static str,
}

/// Weight storage format. Linear-layer weights take this format; embeddings, lm_head and
/// norms stay at 2 bytes (bf16), as inference checkpoints ship them.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum WeightDtype {
    Bf16,
    Fp16,
    Fp32,
    Fp8,
    Int8,
    /// 4-bit integer with one fp16 scale per `group` weights (GPTQ/AWQ style).
    Int4 {
        group: u32,
    },
    /// OCP MX fp4: 4-bit elements, one 8-bit shared exponent per 32 elements.
    Mxfp4,
}

/// Mixture-of-experts geometry.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct MoeSpec {
    /// Routed experts E.
    pub num_experts: u64,
    /// Experts per token k.
    pub top_k: u64,
    /// Width of one routed expert.
    pub moe_intermediate: u64,
    /// Total width of the always-on shared expert(s) (DeepSeek: n_shared × moe_intermediate).
    pub shared_intermediate: u64,
    /// `n_shared_experts` as the config states it (DeepSeek, Kimi); None where the
    /// config gives the shared width instead (`shared_expert_intermediate_size`, Qwen).
    pub shared_experts: Option<u64>,
    /// Layers whose FFN is MoE (the rest are dense with `intermediate`).
    pub moe_layers: u64,
}

/// DeepSeek-style multi-head latent attention geometry.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct MlaSpec {
    pub kv_lora_rank: u64,
    pub q_lora_rank: Option<u64>,
    pub qk_nope_head_dim: u64,
    pub qk_rope_head_dim: u64,
    pub v_head_dim: u64,
}

/// Raw overrides from the command line (the raw form of docs/method.md §3.1: `--weights-gb` etc.).
#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Overrides {
    /// Streamed weight bytes for the whole model (replaces the count from the geometry).
    pub weights_bytes: Option<f64>,
    /// Streamed parameter count P used for FLOPs (replaces the count from the geometry).
    pub params_streamed: Option<f64>,
}

/// One model's architecture, dtypes and overrides.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct ModelSpec {
    pub name: String,
    pub vocab: u64,
    pub hidden: u64,
    pub layers: u64,
    pub heads: u64,
    pub kv_heads: u64,
    pub head_dim: u64,
    /// Dense FFN width (SwiGLU: gate, up, down).
    pub intermediate: u64,
    pub tie_word_embeddings: bool,
    /// q/k/v projections carry biases (Qwen2).
    pub attention_bias: bool,
    /// Per-head RMSNorm on q and k (Qwen3, Gemma 3).
    pub qk_norm: bool,
    /// RMSNorms per decoder layer (2; Gemma 2/3 have 4).
    pub norms_per_layer: u64,
    pub sliding_window: Option<u64>,
    /// Layers that use the sliding window (the rest attend to the full context).
    pub swa_layers: u64,
    pub moe: Option<MoeSpec>,
    pub mla: Option<MlaSpec>,
    pub weight_dtype: WeightDtype,
    /// The attention projections' dtype where it differs from `weight_dtype`: a quantized
    /// checkpoint whose `quantization_config.modules_to_not_convert` keeps `self_attn` in
    /// the model dtype (gpt-oss: MXFP4 experts, bf16 attention). None: `weight_dtype`.
    pub attention_dtype: Option<WeightDtype>,
    /// Bytes per KV-cache element (2 bf16, 1 fp8).
    pub kv_dtype_bytes: f64,
    pub overrides: Overrides,
}

/// Parameter counts by role (exact integers).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, schemars::JsonSchema)]
pub struct ParamCounts {
    pub total: u64,
    pub input_embedding: u64,
    /// Everything a decode step streams at batch 1 with k experts (dense: total − embedding).
    pub streamed: u64,
    /// Linear weights of attention and dense FFN (quantizable), all layers.
    pub linear: u64,
    /// The attention projections among `linear` (q, k, v, o; MLA's), all layers.
    pub attention_linear: u64,
    /// Routed expert weights, all experts, all MoE layers.
    pub routed_experts: u64,
    /// One routed expert in one layer.
    pub one_expert: u64,
    /// Always-on weights kept at 2 bytes: norms, routers, lm_head.
    pub unquantized: u64,
    pub lm_head: u64,
}

/// Weight bytes one GPU streams in a step, by the kernels that read them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, schemars::JsonSchema)]
pub struct WeightSplit {
    /// Attention and dense-FFN linear layers, shared experts included.
    pub linear: f64,
    /// The routed experts the step's tokens touch.
    pub experts: f64,
    /// lm_head, at 2 bytes per weight.
    pub lm_head: f64,
    /// Norms, biases and routers, at 2 bytes per weight.
    pub small: f64,
}

/// How tokens spread over routed experts when counting expert weights streamed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum MoeRouting {
    /// Expected distinct experts under uniform independent routing: E·(1−(1−k/E)^T).
    #[default]
    Uniform,
    /// min(T·k, E): vLLM's perfect-balance convention (its golden cases use it).
    Spread,
    /// k: every token picks the same experts; the true lower bound.
    Packed,
}

/// A step's batch composition in the aggregates engines annotate (vLLM's detailed trace
/// annotations: sq, sk, sqsq, sqsk, split into context and generation groups).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, schemars::JsonSchema)]
pub struct StepComposition {
    pub decode_requests: u64,
    pub prefill_requests: u64,
    /// Σ N_Q: new tokens in the step.
    pub sq: u64,
    /// Σ N_KV: keys attended per request, the new tokens included.
    pub sk: u64,
    /// Σ N_Q².
    pub sqsq: u64,
    /// Σ N_Q·N_KV (the token-context product).
    pub sqsk: u64,
    /// The same four sums over decode requests only.
    pub decode_sq: u64,
    pub decode_sk: u64,
    pub decode_sqsq: u64,
    pub decode_sqsk: u64,
    /// Σ min(N_KV, window) and Σ N_Q·min(N_KV, window) for sliding-window layers, when
    /// per-request contexts were known ([`StepComposition::from_requests`]). Otherwise the
    /// floor uses min(sk, requests·window), exact when every context exceeds the window.
    pub sk_window: Option<u64>,
    pub sqsk_window: Option<u64>,
}

/// Options of the floor arithmetic.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, schemars::JsonSchema)]
pub struct FloorOptions {
    pub tp: u32,
    pub pp: u32,
    pub moe_routing: MoeRouting,
    /// Count the KV write of the new tokens (the reference definition; default true).
    pub include_kv_write: bool,
}

/// One step's floor on one GPU. All derived, f64 (a floor of 7,046,008.6 ns stays
/// fractional).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, schemars::JsonSchema)]
pub struct StepFloor {
    pub weights_bytes: f64,
    /// `weights_bytes` by the kernels that read them.
    pub weights: WeightSplit,
    pub kv_read_bytes: f64,
    pub kv_write_bytes: f64,
    pub total_bytes: f64,
    pub flops: f64,
    /// `flops` outside the attention core: 2 per streamed parameter per token.
    pub dense_flops: f64,
    /// Attention-core FLOPs inside `flops` (absorbed widths for MLA decode).
    pub attention_flops: f64,
    /// Bytes one GPU sends in the step's tensor-parallel all-reduces (0 at TP 1): two
    /// per layer of T·d activations, 2(TP−1)/TP of each on the wire. Not part of
    /// `total_bytes` (they cross the interconnect, not HBM).
    pub allreduce_bytes: f64,
    /// The attention core as vLLM's perf model bills it (un-absorbed MLA widths, T·C
    /// pairs without causal halving).
    pub vllm_attention_flops: f64,
    pub hbm_bytes_per_s: f64,
    pub peak_flops_per_s: f64,
    pub memory_floor_ns: f64,
    pub compute_floor_ns: f64,
    /// max(memory_floor_ns, compute_floor_ns).
    pub floor_ns: f64,
    pub bound: Bound,
    /// Distinct routed experts streamed per MoE layer (None for dense models).
    pub experts_touched: Option<f64>,
}
