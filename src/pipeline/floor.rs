//! `floor`'s run: the analytic roofline floor of one decode step (no trace), with the
//! model geometry it resolved to.

use crate::exit::{Error, Result};
use crate::pipeline::plan::ModelGpu;
use crate::report::floor::weight_dtype_name;
use crate::roofline::floor::{decode_floor, DecodePoint};
use crate::roofline::options::ModelOptions;
use crate::roofline::presets;
use crate::roofline::{hfconfig, CITED_LAUNCH_NS};
use crate::wire::floor::{ConfigFields, FloorReport, ModelGeometry};
use crate::wire::roofline::ModelSpec;

/// One decode step to price.
#[derive(Debug, Clone, Copy)]
pub struct FloorRequest {
    /// Decode requests (B).
    pub batch: u64,
    /// Keys each request attends, the new token included (s).
    pub context: u64,
    /// Kernel launches per step.
    pub launches: u64,
    /// A measured per-launch cost, ns; None: the cited figure.
    pub launch_cost_ns: Option<f64>,
    /// Price every layer as full attention (vLLM's --disable-sliding-window).
    pub disable_sliding_window: bool,
}

/// The floor of one decode step and what the model resolved to.
pub fn decode(mg: &ModelGpu, req: &FloorRequest) -> Result<(FloorReport, ModelGeometry)> {
    let mut m = mg.model.resolve()?;
    if req.disable_sliding_window {
        m.sliding_window = None;
        m.swa_layers = 0;
    }
    let g = mg.gpu.resolve()?;
    let point = DecodePoint {
        batch: req.batch,
        context: req.context,
        launches: req.launches,
        launch_cost_ns: req.launch_cost_ns.unwrap_or(CITED_LAUNCH_NS),
        launch_cost_measured: req.launch_cost_ns.is_some(),
        hbm_overridden: mg.gpu.hbm_bytes_per_s.is_some(),
        peak_overridden: mg.gpu.peak_flops_per_s.is_some(),
    };
    let r = decode_floor(&m, &g, &point, &mg.floor);
    let geometry = geometry(&mg.model, &m, req.disable_sliding_window)?;
    Ok((r, geometry))
}

/// The config the model was read from: the `--model-config` file or the preset's excerpt.
fn config_value(mo: &ModelOptions) -> Result<serde_json::Value> {
    if let Some(p) = &mo.config {
        let text = std::fs::read_to_string(p).map_err(|e| {
            Error::input(format!(
                "cannot read model config {}: {e}; pass the path of a Hugging Face config.json",
                p.display()
            ))
        })?;
        return serde_json::from_str(&text).map_err(|e| {
            Error::input(format!(
                "{} is not valid JSON ({e}); pass a Hugging Face config.json",
                p.display()
            ))
        });
    }
    let key = mo.preset_key();
    presets::preset_config(key)
        .ok_or_else(|| Error::usage(format!("unknown model `{key}`; see stepgate floor --help")))
}

/// What stepgate resolved, for the JSON `model` object.
fn geometry(mo: &ModelOptions, m: &ModelSpec, no_window: bool) -> Result<ModelGeometry> {
    let cfg = config_value(mo)?;
    let overridden = mo.overridden() || no_window;
    let source = match (&mo.config, overridden) {
        (Some(_), false) => "config.json",
        (Some(_), true) => "config.json + overrides",
        (None, false) => "preset",
        (None, true) => "preset + overrides",
    };
    let p = m.params();
    let moe = m.moe.as_ref();
    Ok(ModelGeometry {
        name: m.name.clone(),
        source: source.to_owned(),
        layers: m.layers,
        hidden: m.hidden,
        heads: m.heads,
        kv_heads: m.kv_heads,
        head_dim: m.head_dim,
        intermediate: m.intermediate,
        vocab: m.vocab,
        experts: moe.map_or(0, |e| e.num_experts),
        top_k: moe.map_or(0, |e| e.top_k),
        moe_layers: moe.map_or(0, |e| e.moe_layers),
        moe_intermediate: moe.map(|e| e.moe_intermediate),
        shared_expert_intermediate: moe.map(|e| e.shared_intermediate),
        sliding_window: m.sliding_window,
        sliding_layers: m.swa_layers,
        mla: m.mla.clone(),
        config: ConfigFields::of(m),
        weight_dtype: weight_dtype_name(m.weight_dtype),
        bytes_per_weight: m.weight_dtype.bytes_per_param(),
        vllm_bytes_per_weight: if mo.weight_dtype.is_some() {
            None
        } else {
            hfconfig::vllm::resolve(&cfg, no_window)
                .ok()
                .map(|r| r.weight_byte_size)
        },
        bytes_per_activation: hfconfig::activation_bytes(&cfg)?,
        kv_bytes_per_element: m.kv_dtype_bytes,
        quantization_method: hfconfig::quant_method(&cfg),
        params_total: p.total,
        params_streamed: p.streamed,
    })
}
