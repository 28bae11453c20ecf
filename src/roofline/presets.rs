//! The built-in model presets: each an excerpt of a published checkpoint's Hugging Face
//! `config.json`, resolved by [`super::hfconfig`] exactly as a `--model-config` file is, so
//! presets and user configs go through one reader.

use super::hfconfig;
use crate::wire::roofline::ModelSpec;

/// Built-in presets: (key, what, config.json excerpt). Values from each model's published
/// Hugging Face `config.json`.
const PRESETS: &[(&str, &str, &str)] = &[
    (
        "llama-3-8b",
        "meta-llama/Meta-Llama-3-8B",
        r#"{"model_type":"llama","vocab_size":128256,"hidden_size":4096,"num_hidden_layers":32,"num_attention_heads":32,"num_key_value_heads":8,"intermediate_size":14336,"tie_word_embeddings":false,"torch_dtype":"bfloat16"}"#,
    ),
    (
        "llama-3.1-8b",
        "meta-llama/Llama-3.1-8B",
        r#"{"model_type":"llama","vocab_size":128256,"hidden_size":4096,"num_hidden_layers":32,"num_attention_heads":32,"num_key_value_heads":8,"intermediate_size":14336,"tie_word_embeddings":false,"torch_dtype":"bfloat16"}"#,
    ),
    (
        "llama-3-70b",
        "meta-llama/Meta-Llama-3-70B",
        r#"{"model_type":"llama","vocab_size":128256,"hidden_size":8192,"num_hidden_layers":80,"num_attention_heads":64,"num_key_value_heads":8,"intermediate_size":28672,"tie_word_embeddings":false,"torch_dtype":"bfloat16"}"#,
    ),
    (
        "llama-2-7b",
        "meta-llama/Llama-2-7b-hf",
        r#"{"model_type":"llama","vocab_size":32000,"hidden_size":4096,"num_hidden_layers":32,"num_attention_heads":32,"num_key_value_heads":32,"intermediate_size":11008,"tie_word_embeddings":false,"torch_dtype":"float16"}"#,
    ),
    (
        "mistral-7b",
        "mistralai/Mistral-7B-v0.3",
        r#"{"model_type":"mistral","vocab_size":32768,"hidden_size":4096,"num_hidden_layers":32,"num_attention_heads":32,"num_key_value_heads":8,"intermediate_size":14336,"sliding_window":null,"tie_word_embeddings":false,"torch_dtype":"bfloat16"}"#,
    ),
    (
        "mixtral-8x7b",
        "mistralai/Mixtral-8x7B-v0.1",
        r#"{"model_type":"mixtral","vocab_size":32000,"hidden_size":4096,"num_hidden_layers":32,"num_attention_heads":32,"num_key_value_heads":8,"intermediate_size":14336,"num_local_experts":8,"num_experts_per_tok":2,"sliding_window":null,"tie_word_embeddings":false,"torch_dtype":"bfloat16"}"#,
    ),
    (
        "qwen2.5-7b",
        "Qwen/Qwen2.5-7B-Instruct",
        r#"{"model_type":"qwen2","vocab_size":152064,"hidden_size":3584,"num_hidden_layers":28,"num_attention_heads":28,"num_key_value_heads":4,"intermediate_size":18944,"sliding_window":131072,"use_sliding_window":false,"tie_word_embeddings":false,"torch_dtype":"bfloat16"}"#,
    ),
    (
        "qwen3-0.6b",
        "Qwen/Qwen3-0.6B",
        r#"{"model_type":"qwen3","vocab_size":151936,"hidden_size":1024,"num_hidden_layers":28,"num_attention_heads":16,"num_key_value_heads":8,"head_dim":128,"intermediate_size":3072,"tie_word_embeddings":true,"torch_dtype":"bfloat16"}"#,
    ),
    (
        "qwen3-8b",
        "Qwen/Qwen3-8B",
        r#"{"model_type":"qwen3","vocab_size":151936,"hidden_size":4096,"num_hidden_layers":36,"num_attention_heads":32,"num_key_value_heads":8,"head_dim":128,"intermediate_size":12288,"tie_word_embeddings":false,"torch_dtype":"bfloat16"}"#,
    ),
    (
        "qwen3-30b-a3b",
        "Qwen/Qwen3-30B-A3B",
        r#"{"model_type":"qwen3_moe","vocab_size":151936,"hidden_size":2048,"num_hidden_layers":48,"num_attention_heads":32,"num_key_value_heads":4,"head_dim":128,"intermediate_size":6144,"moe_intermediate_size":768,"num_experts":128,"num_experts_per_tok":8,"decoder_sparse_step":1,"mlp_only_layers":[],"tie_word_embeddings":false,"torch_dtype":"bfloat16"}"#,
    ),
    (
        "gemma-2-9b",
        "google/gemma-2-9b",
        r#"{"model_type":"gemma2","vocab_size":256000,"hidden_size":3584,"num_hidden_layers":42,"num_attention_heads":16,"num_key_value_heads":8,"head_dim":256,"intermediate_size":14336,"sliding_window":4096,"tie_word_embeddings":true,"torch_dtype":"bfloat16"}"#,
    ),
    (
        "gemma-3-12b",
        "google/gemma-3-12b-it (text_config)",
        r#"{"model_type":"gemma3","text_config":{"model_type":"gemma3_text","vocab_size":262208,"hidden_size":3840,"num_hidden_layers":48,"num_attention_heads":16,"num_key_value_heads":8,"head_dim":256,"intermediate_size":15360,"sliding_window":1024,"sliding_window_pattern":6},"tie_word_embeddings":true,"torch_dtype":"bfloat16"}"#,
    ),
    (
        "gpt-oss-20b",
        "openai/gpt-oss-20b config.json (MXFP4 experts; attention, router, embeddings and lm_head bf16 per quantization_config.modules_to_not_convert; even layers slide over 128 keys)",
        r#"{"model_type":"gpt_oss","vocab_size":201088,"hidden_size":2880,"num_hidden_layers":24,"num_attention_heads":64,"num_key_value_heads":8,"head_dim":64,"intermediate_size":2880,"num_local_experts":32,"num_experts_per_tok":4,"sliding_window":128,"layer_types":["sliding_attention","full_attention","sliding_attention","full_attention","sliding_attention","full_attention","sliding_attention","full_attention","sliding_attention","full_attention","sliding_attention","full_attention","sliding_attention","full_attention","sliding_attention","full_attention","sliding_attention","full_attention","sliding_attention","full_attention","sliding_attention","full_attention","sliding_attention","full_attention"],"attention_bias":true,"tie_word_embeddings":false,"torch_dtype":"bfloat16","quantization_config":{"quant_method":"mxfp4","modules_to_not_convert":["model.layers.*.self_attn","model.layers.*.mlp.router","model.embed_tokens","lm_head"]}}"#,
    ),
    (
        "gpt-oss-120b",
        "openai/gpt-oss-120b config.json (as gpt-oss-20b: MXFP4 experts, bf16 attention; 36 layers, 128 experts)",
        r#"{"model_type":"gpt_oss","vocab_size":201088,"hidden_size":2880,"num_hidden_layers":36,"num_attention_heads":64,"num_key_value_heads":8,"head_dim":64,"intermediate_size":2880,"num_local_experts":128,"num_experts_per_tok":4,"sliding_window":128,"layer_types":["sliding_attention","full_attention","sliding_attention","full_attention","sliding_attention","full_attention","sliding_attention","full_attention","sliding_attention","full_attention","sliding_attention","full_attention","sliding_attention","full_attention","sliding_attention","full_attention","sliding_attention","full_attention","sliding_attention","full_attention","sliding_attention","full_attention","sliding_attention","full_attention","sliding_attention","full_attention","sliding_attention","full_attention","sliding_attention","full_attention","sliding_attention","full_attention","sliding_attention","full_attention","sliding_attention","full_attention"],"attention_bias":true,"tie_word_embeddings":false,"torch_dtype":"bfloat16","quantization_config":{"quant_method":"mxfp4","modules_to_not_convert":["model.layers.*.self_attn","model.layers.*.mlp.router","model.embed_tokens","lm_head"]}}"#,
    ),
    (
        "deepseek-v2-lite",
        "deepseek-ai/DeepSeek-V2-Lite",
        r#"{"model_type":"deepseek_v2","vocab_size":102400,"hidden_size":2048,"num_hidden_layers":27,"num_attention_heads":16,"num_key_value_heads":16,"intermediate_size":10944,"moe_intermediate_size":1408,"n_routed_experts":64,"num_experts_per_tok":6,"n_shared_experts":2,"first_k_dense_replace":1,"moe_layer_freq":1,"q_lora_rank":null,"kv_lora_rank":512,"qk_nope_head_dim":128,"qk_rope_head_dim":64,"v_head_dim":128,"tie_word_embeddings":false,"torch_dtype":"bfloat16"}"#,
    ),
    (
        "deepseek-v3",
        "deepseek-ai/DeepSeek-V3 (bf16 geometry; the checkpoint ships fp8, use --weight-dtype fp8)",
        r#"{"model_type":"deepseek_v3","vocab_size":129280,"hidden_size":7168,"num_hidden_layers":61,"num_attention_heads":128,"num_key_value_heads":128,"intermediate_size":18432,"moe_intermediate_size":2048,"n_routed_experts":256,"num_experts_per_tok":8,"n_shared_experts":1,"first_k_dense_replace":3,"moe_layer_freq":1,"q_lora_rank":1536,"kv_lora_rank":512,"qk_nope_head_dim":128,"qk_rope_head_dim":64,"v_head_dim":128,"tie_word_embeddings":false,"torch_dtype":"bfloat16"}"#,
    ),
    (
        "kimi-k2",
        "moonshotai/Kimi-K2-Instruct (bf16 geometry)",
        r#"{"model_type":"kimi_k2","vocab_size":163840,"hidden_size":7168,"num_hidden_layers":61,"num_attention_heads":64,"num_key_value_heads":64,"intermediate_size":18432,"moe_intermediate_size":2048,"n_routed_experts":384,"num_experts_per_tok":8,"n_shared_experts":1,"first_k_dense_replace":1,"moe_layer_freq":1,"q_lora_rank":1536,"kv_lora_rank":512,"qk_nope_head_dim":128,"qk_rope_head_dim":64,"v_head_dim":128,"tie_word_embeddings":false,"torch_dtype":"bfloat16"}"#,
    ),
];

/// A preset by key (`llama-3-8b`, `deepseek-v3`, …; case-insensitive).
pub fn preset(name: &str) -> Option<ModelSpec> {
    let n = name.trim().to_ascii_lowercase();
    let (key, _, json) = PRESETS.iter().find(|(k, _, _)| *k == n)?;
    let v: serde_json::Value = serde_json::from_str(json).expect("preset JSON is valid");
    let mut m = hfconfig::from_value(&v).expect("preset config resolves");
    m.name = (*key).to_owned();
    Some(m)
}

/// A preset's `config.json` excerpt, as the reader sees it (for what it records beyond
/// the geometry: quantization method, activation dtype).
pub(crate) fn preset_config(name: &str) -> Option<serde_json::Value> {
    let n = name.trim().to_ascii_lowercase();
    let (_, _, json) = PRESETS.iter().find(|(k, _, _)| *k == n)?;
    serde_json::from_str(json).ok()
}

/// Preset keys with what each is.
pub fn preset_keys() -> Vec<(&'static str, &'static str)> {
    PRESETS.iter().map(|(k, w, _)| (*k, *w)).collect()
}
