//! Reader for a Hugging Face `config.json` (`--model-config PATH`) into a [`ModelSpec`];
//! [`vllm`] reads the same fields the way vLLM's perf model does (for agreement checks).
//!
//! Missing keys take the defaults of the HF config *class* for that `model_type`, which
//! are not always what one expects (golden README, "vLLM conventions"): Qwen2/Qwen3
//! `num_key_value_heads` defaults to 32, not to the query heads; Qwen3 `head_dim` defaults
//! to 128 and Gemma 2/3 to 256 whatever hidden/heads is; other models use hidden/heads.

pub mod vllm;

use std::path::Path;

use serde_json::Value;

use crate::exit::{Error, Result};
use crate::wire::roofline::{MlaSpec, ModelSpec, MoeSpec, Overrides, WeightDtype};

/// Weight bytes per quantization method, as vLLM's perf model maps them
/// (`_QUANT_WEIGHT_BYTE_SIZE` in vllm/v1/metrics/perf.py): fp8 family 1 B, int4/fp4 0.5 B.
const QUANT_BYTES: &[(&str, f64)] = &[
    ("fp8", 1.0),
    ("fbgemm_fp8", 1.0),
    ("ptpc_fp8", 1.0),
    ("fp_quant", 1.0),
    ("modelopt", 1.0),
    ("modelopt_mxfp8", 1.0),
    ("mxfp4", 0.5),
    ("awq", 0.5),
    ("awq_marlin", 0.5),
    ("gptq", 0.5),
    ("gptq_marlin", 0.5),
    ("modelopt_fp4", 0.5),
    ("petit_nvfp4", 0.5),
    ("compressed-tensors", 0.5),
    ("torchao", 0.5),
    ("quark", 0.5),
    ("moe_wna16", 0.5),
    ("inc", 0.5),
    ("experts_int8", 1.0),
];

/// vLLM's weight byte size for a quantization method; None for a method it rejects.
pub(crate) fn quant_weight_bytes(method: &str) -> Option<f64> {
    QUANT_BYTES
        .iter()
        .find(|(m, _)| *m == method)
        .map(|(_, b)| *b)
}

/// The `quantization_config.quant_method` a config names, if any.
pub fn quant_method(v: &Value) -> Option<String> {
    text_config(v)
        .get("quantization_config")
        .and_then(|q| q.get("quant_method"))
        .and_then(Value::as_str)
        .map(str::to_owned)
}

/// Bytes per activation element: the model dtype (`torch_dtype`), 4 for float32, else 2.
/// A dtype stepgate cannot read is refused, naming the field.
pub(crate) fn activation_bytes(v: &Value) -> Result<f64> {
    Ok(match model_dtype(&text_config(v))? {
        WeightDtype::Fp32 => 4.0,
        _ => 2.0,
    })
}

/// Read and resolve a `config.json`.
pub fn load(path: &Path) -> Result<ModelSpec> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        Error::input(format!(
            "cannot read model config {}: {e}; pass the path of a Hugging Face config.json",
            path.display()
        ))
    })?;
    let v: Value = serde_json::from_str(&text).map_err(|e| {
        Error::input(format!(
            "{} is not valid JSON ({e}); pass a Hugging Face config.json",
            path.display()
        ))
    })?;
    let mut m = from_value(&v)?;
    // The config names its model (`_name_or_path`, written by transformers' save_pretrained),
    // else its `model_type` (already in the name); the directory only when it says neither.
    if let Some(n) = name_or_path(&v) {
        m.name = n;
    } else if m.name == "config" {
        if let Some(stem) = path.parent().and_then(|p| p.file_name()) {
            m.name = stem.to_string_lossy().into_owned();
        }
    }
    Ok(m)
}

/// The model a config names in `_name_or_path`: a Hub id as written (`openai/gpt-oss-20b`),
/// a local path by its last component; None when absent or empty.
fn name_or_path(v: &Value) -> Option<String> {
    let n = v.get("_name_or_path")?.as_str()?.trim();
    let n = if n.starts_with('/') || n.starts_with('.') || n.contains('\\') {
        n.trim_end_matches(['/', '\\']).rsplit(['/', '\\']).next()?
    } else {
        n
    };
    // One printable line: the name lands in reports and markdown.
    (!n.is_empty() && n.len() <= 200 && !n.chars().any(char::is_control)).then(|| n.to_owned())
}

/// The text config: `text_config` (Gemma 3, Llama 4) overlaid on the top level.
fn text_config(v: &Value) -> Value {
    let mut out = v.clone();
    if let (Some(top), Some(Value::Object(t))) = (out.as_object_mut(), v.get("text_config")) {
        for (k, val) in t {
            top.insert(k.clone(), val.clone());
        }
    }
    out
}

fn get_u64(c: &Value, key: &str) -> Option<u64> {
    c.get(key).and_then(Value::as_u64)
}

fn req_u64(c: &Value, key: &str) -> Result<u64> {
    get_u64(c, key).ok_or_else(|| {
        Error::input(format!(
            "model config has no integer `{key}`; pass a complete Hugging Face config.json"
        ))
    })
}

fn model_type(c: &Value) -> String {
    c.get("model_type")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned()
}

/// `num_key_value_heads` with the config class default when absent.
fn kv_heads(c: &Value, mt: &str, heads: u64) -> u64 {
    if let Some(k) = get_u64(c, "num_key_value_heads") {
        return k;
    }
    match mt {
        // Qwen2Config / Qwen3Config: num_key_value_heads=32 (golden README).
        "qwen2" | "qwen3" => 32,
        "qwen3_moe" => 4,
        "qwen2_moe" => 16,
        "mistral" | "mixtral" => 8,
        "gemma2" | "gemma3" | "gemma3_text" => 4,
        _ => heads,
    }
}

/// `head_dim` with the config class default when absent or null.
fn head_dim(c: &Value, mt: &str, hidden: u64, heads: u64) -> u64 {
    if let Some(d) = get_u64(c, "head_dim") {
        return d;
    }
    match mt {
        "qwen3" | "qwen3_moe" => 128,
        "gemma" | "gemma2" | "gemma3" | "gemma3_text" => 256,
        _ => hidden / heads.max(1),
    }
}

fn is_gemma(mt: &str) -> bool {
    mt.starts_with("gemma")
}

/// `tie_word_embeddings` default per config class (PretrainedConfig's default is true).
fn tied(c: &Value, mt: &str) -> bool {
    if let Some(b) = c.get("tie_word_embeddings").and_then(Value::as_bool) {
        return b;
    }
    !matches!(
        mt,
        "llama"
            | "mistral"
            | "mixtral"
            | "qwen2"
            | "qwen3"
            | "qwen3_moe"
            | "qwen2_moe"
            | "deepseek_v2"
            | "deepseek_v3"
            | "kimi_k2"
    )
}

/// The sliding window in effect (None when absent, null, disabled, or `use_sliding_window`
/// is false) and how many layers use it.
pub fn sliding_window(c: &Value, disable: bool) -> (Option<u64>, u64) {
    let layers = get_u64(c, "num_hidden_layers").unwrap_or(0);
    let mt = model_type(c);
    let window = get_u64(c, "sliding_window").filter(|w| *w > 0);
    let enabled = !disable && c.get("use_sliding_window").and_then(Value::as_bool) != Some(false);
    let Some(w) = window.filter(|_| enabled) else {
        return (None, 0);
    };
    if let Some(Value::Array(types)) = c.get("layer_types") {
        let n = types
            .iter()
            .take(layers as usize)
            .filter(|t| {
                t.as_str()
                    .is_some_and(|s| s.to_ascii_lowercase().contains("sliding"))
            })
            .count() as u64;
        return (Some(w), n);
    }
    if mt == "gemma2" {
        // Gemma 2 alternates, even layers sliding.
        return (Some(w), layers.div_ceil(2));
    }
    if let Some(p) = get_u64(c, "sliding_window_pattern").filter(|p| *p > 0) {
        // Gemma 3: every p-th layer is global, the rest slide.
        return (Some(w), layers - layers / p);
    }
    (Some(w), layers)
}

fn experts(c: &Value) -> u64 {
    ["num_local_experts", "num_experts", "n_routed_experts"]
        .iter()
        .find_map(|k| get_u64(c, k))
        .unwrap_or(0)
}

/// MoE layers in the real architecture.
fn true_moe_layers(c: &Value, layers: u64) -> u64 {
    if let Some(step) = get_u64(c, "interleave_moe_layer_step").filter(|s| *s > 0) {
        return (0..layers).filter(|l| (l + 1) % step == 0).count() as u64;
    }
    if c.get("first_k_dense_replace").is_some() || c.get("moe_layer_freq").is_some() {
        // DeepSeek: layers >= first_k_dense_replace with layer % moe_layer_freq == 0.
        let k = get_u64(c, "first_k_dense_replace").unwrap_or(0);
        let f = get_u64(c, "moe_layer_freq").unwrap_or(1).max(1);
        return (0..layers).filter(|l| *l >= k && l % f == 0).count() as u64;
    }
    if c.get("decoder_sparse_step").is_some() || c.get("mlp_only_layers").is_some() {
        // Qwen2/3-MoE: layer not in mlp_only_layers and (layer+1) % step == 0.
        let step = get_u64(c, "decoder_sparse_step").unwrap_or(1).max(1);
        let only: Vec<u64> = c
            .get("mlp_only_layers")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_u64).collect())
            .unwrap_or_default();
        return (0..layers)
            .filter(|l| !only.contains(l) && (l + 1) % step == 0)
            .count() as u64;
    }
    layers
}

/// The weight dtype from `quantization_config` (or None = the model dtype).
fn quant_dtype(c: &Value) -> Result<Option<WeightDtype>> {
    let Some(q) = c.get("quantization_config") else {
        return Ok(None);
    };
    let method = q.get("quant_method").and_then(Value::as_str).unwrap_or("");
    let bits = get_u64(q, "bits");
    // group_size -1 (per-channel) is not a u64 and keeps the 128 default.
    let group = match get_u64(q, "group_size") {
        None => 128,
        Some(g) => u32::try_from(g).unwrap_or(u32::MAX),
    };
    Ok(Some(match (method, bits) {
        ("mxfp4", _) => WeightDtype::Mxfp4,
        (_, Some(8)) => WeightDtype::Int8,
        ("experts_int8", _) => WeightDtype::Int8,
        (m, _) => match quant_weight_bytes(m) {
            Some(1.0) => WeightDtype::Fp8,
            Some(_) => WeightDtype::int4(group).map_err(|e| {
                Error::input(format!(
                    "model config `quantization_config.group_size`: {}",
                    e.message
                ))
            })?,
            None => {
                return Err(Error::input(format!(
                    "unsupported quantization method `{m}` in config.json; pass --weight-dtype explicitly"
                )))
            }
        },
    }))
}

fn model_dtype(c: &Value) -> Result<WeightDtype> {
    let (key, v) = match c.get("torch_dtype") {
        Some(v) => ("torch_dtype", Some(v)),
        None => ("dtype", c.get("dtype")),
    };
    let s = match v {
        None | Some(Value::Null) => return Ok(WeightDtype::Bf16),
        Some(Value::String(s)) => s.as_str(),
        Some(other) => {
            return Err(Error::input(format!(
                "model config `{key}` is {other}, not a dtype name; use \"bfloat16\", \"float16\" or \"float32\""
            )))
        }
    };
    // transformers writes the torch dtype name without its `torch.` prefix; "auto" means
    // "as stored", which for released checkpoints is bf16.
    match s.strip_prefix("torch.").unwrap_or(s) {
        "float16" | "half" => Ok(WeightDtype::Fp16),
        "float32" | "float" => Ok(WeightDtype::Fp32),
        "bfloat16" | "auto" => Ok(WeightDtype::Bf16),
        other => Err(Error::input(format!(
            "model config `{key}` is \"{other}\", which stepgate cannot price; use \"bfloat16\", \"float16\" or \"float32\""
        ))),
    }
}

/// A geometry field that must be a whole number in `1..=max` when present: zero layers,
/// heads or head_dim would price a model at nothing; absurd sizes would overflow the
/// exact parameter counts. The message names the field as the file spells it.
fn check_field(c: &Value, key: &str, max: u64, required: bool) -> Result<()> {
    let Some(v) = c.get(key) else {
        return Ok(());
    };
    if v.is_null() && !required {
        return Ok(());
    }
    match v.as_u64() {
        Some(0) => Err(Error::input(format!(
            "model config `{key}` is 0; it must be at least 1: fix the config.json"
        ))),
        Some(n) if n > max => Err(Error::input(format!(
            "model config `{key}` is {n}, beyond the {max} any real model has: fix the config.json"
        ))),
        Some(_) => Ok(()),
        None => Err(Error::input(format!(
            "model config `{key}` is {v}, not a positive whole number: fix the config.json"
        ))),
    }
}

/// Every geometry field the floor multiplies, checked before anything is computed.
fn validate_geometry(c: &Value) -> Result<()> {
    use super::model::{
        MAX_EXPERTS, MAX_HEADS, MAX_HEAD_DIM, MAX_HIDDEN, MAX_INTERMEDIATE, MAX_LAYERS,
        MAX_LORA_RANK, MAX_VOCAB,
    };
    for (key, max, required) in [
        ("hidden_size", MAX_HIDDEN, true),
        ("num_hidden_layers", MAX_LAYERS, true),
        ("num_attention_heads", MAX_HEADS, true),
        ("vocab_size", MAX_VOCAB, true),
        ("num_key_value_heads", MAX_HEADS, false),
        ("head_dim", MAX_HEAD_DIM, false),
        ("intermediate_size", MAX_INTERMEDIATE, false),
        ("moe_intermediate_size", MAX_INTERMEDIATE, false),
        ("shared_expert_intermediate_size", MAX_INTERMEDIATE, false),
        ("num_experts_per_tok", MAX_EXPERTS, false),
        ("n_shared_experts", MAX_EXPERTS, false),
        ("kv_lora_rank", MAX_LORA_RANK, false),
        ("q_lora_rank", MAX_LORA_RANK, false),
        ("qk_nope_head_dim", MAX_HEAD_DIM, false),
        ("v_head_dim", MAX_HEAD_DIM, false),
    ] {
        check_field(c, key, max, required)?;
    }
    // These may be 0 (no rotary part, a dense model) but not absurd.
    for (key, max) in [
        ("qk_rope_head_dim", MAX_HEAD_DIM),
        ("num_local_experts", MAX_EXPERTS),
        ("num_experts", MAX_EXPERTS),
        ("n_routed_experts", MAX_EXPERTS),
    ] {
        if let Some(n) = get_u64(c, key).filter(|n| *n > max) {
            return Err(Error::input(format!(
                "model config `{key}` is {n}, beyond the {max} any real model has: fix the config.json"
            )));
        }
    }
    Ok(())
}

/// Resolve a parsed `config.json` into a [`ModelSpec`] (KV cache at the model dtype).
pub fn from_value(v: &Value) -> Result<ModelSpec> {
    let c = text_config(v);
    let mt = model_type(&c);
    let hidden = req_u64(&c, "hidden_size")?;
    let layers = req_u64(&c, "num_hidden_layers")?;
    let heads = req_u64(&c, "num_attention_heads")?;
    let vocab = req_u64(&c, "vocab_size")?;
    validate_geometry(&c)?;
    let intermediate = get_u64(&c, "intermediate_size").unwrap_or(4 * hidden);
    let (window, swa_layers) = sliding_window(&c, false);
    let e = experts(&c);
    let moe = (e > 0).then(|| {
        let mi = get_u64(&c, "moe_intermediate_size").unwrap_or(intermediate);
        let shared = match get_u64(&c, "n_shared_experts") {
            Some(n) => n * mi,
            None => get_u64(&c, "shared_expert_intermediate_size").unwrap_or(0),
        };
        let default_k = if mt == "mixtral" { 2 } else { 8 };
        MoeSpec {
            num_experts: e,
            top_k: get_u64(&c, "num_experts_per_tok").unwrap_or(default_k),
            moe_intermediate: mi,
            shared_intermediate: shared,
            shared_experts: get_u64(&c, "n_shared_experts"),
            moe_layers: true_moe_layers(&c, layers),
        }
    });
    let mla = match get_u64(&c, "kv_lora_rank") {
        Some(r) => Some(MlaSpec {
            kv_lora_rank: r,
            q_lora_rank: get_u64(&c, "q_lora_rank"),
            qk_nope_head_dim: req_u64(&c, "qk_nope_head_dim")?,
            qk_rope_head_dim: req_u64(&c, "qk_rope_head_dim")?,
            v_head_dim: req_u64(&c, "v_head_dim")?,
        }),
        None => None,
    };
    let dtype = model_dtype(&c)?;
    let quantized = quant_dtype(&c)?;
    let weight_dtype = quantized.unwrap_or(dtype);
    // Attention left out of the quantization keeps the model dtype.
    let attention_dtype =
        (quantized.is_some() && attention_not_converted(&c) && dtype != weight_dtype)
            .then_some(dtype);
    let kv_dtype_bytes = match dtype {
        WeightDtype::Fp32 => 4.0,
        _ => 2.0,
    };
    Ok(ModelSpec {
        name: if mt.is_empty() {
            "config".into()
        } else {
            mt.clone()
        },
        vocab,
        hidden,
        layers,
        heads,
        kv_heads: kv_heads(&c, &mt, heads),
        head_dim: match head_dim(&c, &mt, hidden, heads) {
            0 => {
                return Err(Error::input(format!(
                    "model config has no `head_dim` and `hidden_size` {hidden} / `num_attention_heads` {heads} is 0: fix the config.json"
                )))
            }
            d => d,
        },
        intermediate,
        tie_word_embeddings: tied(&c, &mt),
        attention_bias: c
            .get("attention_bias")
            .and_then(Value::as_bool)
            .unwrap_or(mt == "qwen2" || mt == "qwen2_moe"),
        qk_norm: matches!(
            mt.as_str(),
            "qwen3" | "qwen3_moe" | "gemma3" | "gemma3_text"
        ),
        norms_per_layer: if is_gemma(&mt) && mt != "gemma" { 4 } else { 2 },
        sliding_window: window,
        swa_layers,
        moe,
        mla,
        weight_dtype,
        attention_dtype,
        kv_dtype_bytes,
        overrides: Overrides::default(),
    })
}

/// Whether `quantization_config.modules_to_not_convert` names the attention blocks
/// (`model.layers.*.self_attn` in gpt-oss, `self_attn` or `attn` in others): transformers
/// and vLLM keep those modules in the model dtype.
fn attention_not_converted(c: &Value) -> bool {
    c.get("quantization_config")
        .and_then(|q| q.get("modules_to_not_convert"))
        .and_then(Value::as_array)
        .is_some_and(|m| {
            m.iter().filter_map(Value::as_str).any(|x| {
                x.split('.')
                    .any(|part| part == "self_attn" || part == "attn" || part == "attention")
            })
        })
}

#[cfg(test)]
mod tests;
