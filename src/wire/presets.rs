//! What `presets --format json` prints: the built-in GPU and model tables.

use serde::Serialize;

use super::roofline::{GpuSpec, WeightDtype};

/// One model preset as `presets` shows it: the geometry read from its config.json excerpt
/// and the counts derived from that geometry. Units are in the field names.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct ModelPreset {
    /// The `--model` key.
    pub key: String,
    /// The published checkpoint the config excerpt comes from.
    pub origin: String,
    pub layers: u64,
    /// d_model (`hidden_size`).
    pub hidden: u64,
    pub heads: u64,
    pub kv_heads: u64,
    /// Query/key width per head (MLA: the un-absorbed nope + rope width, 192 for DeepSeek-V3).
    pub head_dim: u64,
    pub vocab: u64,
    /// `mha`, `gqa`, `mqa` or `mla` (DeepSeek latent attention).
    pub attention: &'static str,
    /// Routed experts per MoE layer (None: dense).
    pub experts: Option<u64>,
    pub experts_per_token: Option<u64>,
    pub sliding_window: Option<u64>,
    pub weight_dtype: WeightDtype,
    /// Every parameter, embedding included (derived from the geometry).
    pub params_total: u64,
    /// Parameters one token uses: the total less the routed experts it does not pick.
    pub params_active: u64,
    /// KV-cache bytes per token on one GPU at TP 1 (derived).
    pub kv_bytes_per_token: f64,
}

/// What `presets` lists: both tables, or the one asked for. The tables are built in;
/// each row names where it comes from (a GPU's `source`, a model's `origin`).
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Presets {
    pub schema_version: u32,
    pub tool: super::meta::Tool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpus: Option<Vec<GpuSpec>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub models: Option<Vec<ModelPreset>>,
}
