//! A `config.json` resolved the way vLLM's perf model resolves it (its parsers in
//! vllm/v1/metrics/perf.py), with the class defaults and helpers of [`super`], so
//! stepgate's config reading can be checked against vLLM's test suite field by field.

use serde_json::Value;

use super::{
    experts, get_u64, head_dim, kv_heads, model_dtype, model_type, quant_weight_bytes, req_u64,
    sliding_window, text_config,
};
use crate::exit::{Error, Result};
use crate::wire::roofline::WeightDtype;

/// The config fields vLLM's perf model resolves (its parsers in vllm/v1/metrics/perf.py),
/// so config-resolution behaviour can be checked against its test suite.
#[derive(Debug, Clone, PartialEq)]
pub struct VllmResolved {
    pub vocab_size: u64,
    pub hidden_size: u64,
    pub num_attention_heads: u64,
    pub num_hidden_layers: u64,
    pub num_key_value_heads: u64,
    pub head_dim: u64,
    pub intermediate_size: u64,
    pub num_experts: u64,
    pub num_experts_per_tok: u64,
    pub num_moe_layers: u64,
    pub weight_byte_size: f64,
    pub activation_byte_size: f64,
    pub sliding_window: Option<u64>,
    pub num_swa_layers: u64,
}

/// Resolve a config the way vLLM's perf model does. Differences from [`super::from_value`]:
/// without `moe_layer_freq` *and* `first_k_dense_replace` every layer is billed as MoE
/// (HF DeepseekV3Config has no `moe_layer_freq`), and unknown quantization methods are an
/// error (vLLM raises InvalidComponent).
pub fn resolve(v: &Value, disable_sliding_window: bool) -> Result<VllmResolved> {
    let c = text_config(v);
    let mt = model_type(&c);
    let hidden = req_u64(&c, "hidden_size")?;
    let layers = req_u64(&c, "num_hidden_layers")?;
    let heads = req_u64(&c, "num_attention_heads")?;
    let e = experts(&c);
    let mut moe_layers = if e > 0 { layers } else { 0 };
    if let Some(step) = get_u64(&c, "interleave_moe_layer_step").filter(|s| *s > 0) {
        moe_layers = (0..layers).filter(|l| (l + 1) % step == 0).count() as u64;
    }
    if let (Some(f), Some(k)) = (
        get_u64(&c, "moe_layer_freq"),
        get_u64(&c, "first_k_dense_replace"),
    ) {
        moe_layers = (0..layers).filter(|l| *l >= k && l % f.max(1) == 0).count() as u64;
    }
    let act = match model_dtype(&c)? {
        WeightDtype::Fp32 => 4.0,
        _ => 2.0,
    };
    let weight = match c
        .get("quantization_config")
        .and_then(|q| q.get("quant_method"))
        .and_then(Value::as_str)
    {
        Some(m) => quant_weight_bytes(m).ok_or_else(|| {
            Error::input(format!(
                "unsupported quantization method `{m}` (vLLM raises InvalidComponent)"
            ))
        })?,
        None => act,
    };
    let (sliding_window, num_swa_layers) = sliding_window(&c, disable_sliding_window);
    Ok(VllmResolved {
        vocab_size: req_u64(&c, "vocab_size")?,
        hidden_size: hidden,
        num_attention_heads: heads,
        num_hidden_layers: layers,
        num_key_value_heads: kv_heads(&c, &mt, heads),
        head_dim: head_dim(&c, &mt, hidden, heads),
        intermediate_size: get_u64(&c, "intermediate_size").unwrap_or(4 * hidden),
        num_experts: e,
        num_experts_per_tok: if e > 0 {
            get_u64(&c, "num_experts_per_tok").unwrap_or(0)
        } else {
            0
        },
        num_moe_layers: moe_layers,
        weight_byte_size: weight,
        activation_byte_size: act,
        sliding_window,
        num_swa_layers,
    })
}
