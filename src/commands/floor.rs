//! `stepgate floor`: the analytic roofline floor of one decode step (no trace needed).
//! Also holds the model/GPU flags `capacity` shares.

use std::path::PathBuf;

use crate::commands::floorflags::{batch_flag, context_flag, pp_flag, tp_flag};
use crate::commands::numbers;
use crate::exit::{Error, Result};
use crate::report::floor::{weight_dtype_name, ModelGeometry};
use crate::report::Format;
use crate::roofline::floor::{decode_floor, DecodePoint, FloorOptions};
use crate::roofline::gpu::{self, GpuSpec};
use crate::roofline::model::{self, ModelSpec, MoeRouting, WeightDtype};
use crate::roofline::{hfconfig, CITED_LAUNCH_NS, DEFAULT_LAUNCHES};

const EXAMPLE: &str = "\
Examples:
  stepgate floor --model llama-3-8b --gpu h100-sxm --batch 32 --context 2048
  stepgate floor --model deepseek-v3 --gpu h200 --batch 1 --context 16384 --tp 8
  stepgate floor --model-config ./config.json --gpu mi300x --kv-dtype fp8 --format json
  # seed 001's raw form: weights and KV geometry given directly
  stepgate floor --weights-gb 15.01 --layers 32 --kv-heads 8 --head-dim 128 --hbm-tb-s 3.0 --launches 395

Floor = (weights + KV read k·B·s + KV write k·B) / HBM bandwidth, or FLOPs / peak when
that is larger (the reference definition of seed 001; the chapter's omits the KV write).
Every number is derived or cited, none measured. GPUs: h100-sxm h100-pcie h200 h20
a100-40gb a100-80gb (a100-80) a100-80gb-pcie a10g l4 l40s rtx-4090 b200 mi300x mi325x.
Models: llama-3-8b llama-3.1-8b llama-3-70b llama-2-7b mistral-7b mixtral-8x7b qwen2.5-7b
qwen3-0.6b qwen3-8b qwen3-30b-a3b gemma-2-9b gemma-3-12b deepseek-v2-lite deepseek-v3 kimi-k2.";

/// Model and GPU selection shared by `floor` and `capacity`.
#[derive(Debug, Clone, clap::Args)]
pub struct ModelGpuArgs {
    /// Model preset (default llama-3-8b, the seeds' operating point).
    #[arg(long, conflicts_with = "model_config")]
    pub model: Option<String>,
    /// A Hugging Face config.json to read the geometry from.
    #[arg(long, value_name = "PATH")]
    pub model_config: Option<PathBuf>,
    /// GPU preset, e.g. h100-sxm, a100-80gb, l40s, mi300x.
    #[arg(long, alias = "card", default_value = "h100-sxm")]
    pub gpu: String,
    /// Weight storage: bf16, fp16, fp8, int8, int4 (group 128 scales), int4-gN, mxfp4.
    #[arg(long)]
    pub weight_dtype: Option<String>,
    /// KV-cache dtype: bf16 or fp8.
    #[arg(long, value_parser = ["bf16", "fp16", "fp8"])]
    pub kv_dtype: Option<String>,
    /// Bytes per KV element (overrides --kv-dtype).
    #[arg(long, allow_negative_numbers = true)]
    pub kv_dtype_bytes: Option<f64>,
    /// Tensor-parallel degree: per-GPU bytes and FLOPs.
    #[arg(long, default_value_t = 1, allow_negative_numbers = true, value_parser = tp_flag)]
    pub tp: u32,
    /// Pipeline-parallel degree (the last stage: layers/pp plus lm_head).
    #[arg(long, default_value_t = 1, allow_negative_numbers = true, value_parser = pp_flag)]
    pub pp: u32,
    /// Streamed weight bytes per step in GB (1e9), replacing the count from the geometry.
    #[arg(long, allow_negative_numbers = true)]
    pub weights_gb: Option<f64>,
    /// Streamed parameter count in billions for FLOPs (2·P per token).
    #[arg(long, allow_negative_numbers = true)]
    pub params_b: Option<f64>,
    /// Override the layer count L.
    #[arg(long, allow_negative_numbers = true, value_parser = layers_flag)]
    pub layers: Option<u64>,
    /// Override the KV heads h_kv.
    #[arg(long, allow_negative_numbers = true, value_parser = kv_heads_flag)]
    pub kv_heads: Option<u64>,
    /// Override the head dimension d_h.
    #[arg(long, allow_negative_numbers = true, value_parser = head_dim_flag)]
    pub head_dim: Option<u64>,
    /// HBM bandwidth in TB/s; a measured number beats the datasheet.
    #[arg(long, allow_negative_numbers = true)]
    pub hbm_tb_s: Option<f64>,
    /// Peak dense tensor TFLOP/s; a measured number beats the datasheet.
    #[arg(long, allow_negative_numbers = true)]
    pub peak_tflops: Option<f64>,
    /// How a step's tokens spread over MoE experts: uniform (expected count), spread
    /// (min(B·k, E), vLLM's convention) or packed (k, the lower bound).
    #[arg(long, value_enum, default_value_t = MoeRouting::Uniform)]
    pub moe_routing: MoeRouting,
}

/// Upper bounds for the real-valued model and GPU flags: ten times beyond any part or
/// model that exists, so a typo (or `1e300`) is refused instead of priced.
pub const MAX_HBM_TB_S: f64 = 1e3;
const MAX_PEAK_TFLOPS: f64 = 1e6;
const MAX_WEIGHTS_GB: f64 = 1e6;
const MAX_PARAMS_B: f64 = 1e6;
const MAX_KV_DTYPE_BYTES: f64 = 16.0;
const MAX_LAUNCH_COST_US: f64 = numbers::MAX_LAUNCH_COST_US;

/// `--layers`: 1 ..= 2^12 (the largest models have ~128).
fn layers_flag(s: &str) -> std::result::Result<u64, String> {
    numbers::count(
        "--layers",
        "layers",
        s,
        1,
        crate::roofline::model::MAX_LAYERS,
    )
}

/// `--kv-heads`: 1 ..= 2^12; zero KV heads would price attention at nothing.
fn kv_heads_flag(s: &str) -> std::result::Result<u64, String> {
    numbers::count(
        "--kv-heads",
        "heads",
        s,
        1,
        crate::roofline::model::MAX_HEADS,
    )
}

/// `--head-dim`: 1 ..= 2^12.
fn head_dim_flag(s: &str) -> std::result::Result<u64, String> {
    numbers::count(
        "--head-dim",
        "dimensions",
        s,
        1,
        crate::roofline::model::MAX_HEAD_DIM,
    )
}

/// `--launches`: 0 ..= 2^32 per step.
fn launches_flag(s: &str) -> std::result::Result<u64, String> {
    numbers::count("--launches", "launches", s, 0, numbers::MAX_LAUNCHES)
}

impl ModelGpuArgs {
    /// The model with every override applied.
    pub fn model(&self) -> Result<ModelSpec> {
        let mut m = match (&self.model, &self.model_config) {
            (_, Some(p)) => hfconfig::load(p)?,
            (Some(n), None) => model::preset(n).ok_or_else(|| {
                let keys: Vec<_> = model::preset_keys().iter().map(|(k, _)| *k).collect();
                Error::input(format!(
                    "unknown model `{n}`; use one of {} or --model-config PATH",
                    keys.join(", ")
                ))
            })?,
            (None, None) => model::preset("llama-3-8b").expect("built-in preset"),
        };
        if let Some(w) = &self.weight_dtype {
            m.weight_dtype = WeightDtype::parse(w)?;
        }
        if let Some(k) = &self.kv_dtype {
            m.kv_dtype_bytes = if k == "fp8" { 1.0 } else { 2.0 };
        }
        if let Some(b) = self.kv_dtype_bytes {
            m.kv_dtype_bytes = numbers::real("--kv-dtype-bytes", "bytes", b, MAX_KV_DTYPE_BYTES)?;
        }
        if let Some(l) = self.layers {
            m.layers = l;
            m.swa_layers = m.swa_layers.min(l);
            if let Some(moe) = &mut m.moe {
                moe.moe_layers = moe.moe_layers.min(l);
            }
        }
        // The value parsers refuse 0 for both; a zero here would price attention at nothing.
        if let Some(h) = self.kv_heads {
            m.kv_heads = h;
        }
        if let Some(d) = self.head_dim {
            m.head_dim = d;
        }

        if let Some(w) = self.weights_gb {
            m.overrides.weights_bytes =
                Some(numbers::real("--weights-gb", "GB", w, MAX_WEIGHTS_GB)? * 1e9);
        }
        if let Some(p) = self.params_b {
            m.overrides.params_streamed =
                Some(numbers::real("--params-b", "billion parameters", p, MAX_PARAMS_B)? * 1e9);
        }
        let raw = [self.weights_gb, self.params_b].iter().any(Option::is_some)
            || [self.layers, self.kv_heads, self.head_dim]
                .iter()
                .any(Option::is_some);
        if raw {
            m.name.push_str(" (raw overrides)");
        }
        if self.tp == 0 || self.pp == 0 {
            return Err(Error::input("--tp and --pp must be at least 1"));
        }
        Ok(m)
    }

    /// The GPU with --hbm-tb-s / --peak-tflops applied.
    pub fn gpu(&self) -> Result<GpuSpec> {
        let mut g = gpu::lookup(&self.gpu).ok_or_else(|| {
            Error::input(format!(
                "unknown GPU `{}`; use one of {} (or pass --hbm-tb-s and --peak-tflops)",
                self.gpu,
                GpuSpec::keys().join(", ")
            ))
        })?;
        if let Some(b) = self.hbm_tb_s {
            g.hbm_bytes_per_s = numbers::real("--hbm-tb-s", "TB/s", b, MAX_HBM_TB_S)? * 1e12;
        }
        if let Some(p) = self.peak_tflops {
            let p = numbers::real("--peak-tflops", "TFLOP/s", p, MAX_PEAK_TFLOPS)? * 1e12;
            g.bf16_flops_per_s = p;
            g.fp8_flops_per_s = Some(p);
        }
        Ok(g)
    }
}

/// The analytic roofline floor of one decode step at batch B and context s.
#[derive(Debug, clap::Args)]
#[command(after_help = EXAMPLE)]
pub struct Args {
    #[command(flatten)]
    pub mg: ModelGpuArgs,
    /// Decode requests in the step (B).
    #[arg(long, default_value_t = 32, allow_negative_numbers = true, value_parser = batch_flag)]
    pub batch: u64,
    /// Keys each request attends, the new token included (s).
    #[arg(long, alias = "seq", default_value_t = 2048, allow_negative_numbers = true, value_parser = context_flag)]
    pub context: u64,
    /// Kernel launches per step (330: TP=1 Llama-3-8B, seed 000).
    #[arg(long, default_value_t = DEFAULT_LAUNCHES, allow_negative_numbers = true, value_parser = launches_flag)]
    pub launches: u64,
    /// Per-launch cost in µs (default the cited 2.374; use `stepgate launch-probe`).
    #[arg(long, alias = "launchcost", allow_negative_numbers = true)]
    pub launch_cost_us: Option<f64>,
    /// Price every layer as full attention, as vLLM serves the model with its
    /// --disable-sliding-window.
    #[arg(long)]
    pub disable_sliding_window: bool,
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
}

pub fn run(args: &Args) -> Result<u8> {
    let mut m = args.mg.model()?;
    if args.disable_sliding_window {
        m.sliding_window = None;
        m.swa_layers = 0;
    }
    let g = args.mg.gpu()?;
    let cost_ns = match args.launch_cost_us {
        Some(us) => numbers::real("--launch-cost-us", "µs", us, MAX_LAUNCH_COST_US)? * 1e3,
        None => CITED_LAUNCH_NS,
    };
    let point = DecodePoint {
        batch: args.batch,
        context: args.context,
        launches: args.launches,
        launch_cost_ns: cost_ns,
        launch_cost_measured: args.launch_cost_us.is_some(),
        hbm_overridden: args.mg.hbm_tb_s.is_some(),
        peak_overridden: args.mg.peak_tflops.is_some(),
    };
    let opts = FloorOptions {
        tp: args.mg.tp,
        pp: args.mg.pp,
        moe_routing: args.mg.moe_routing,
        include_kv_write: true,
    };
    let r = decode_floor(&m, &g, &point, &opts);
    let geometry = geometry(&args.mg, &m, args.disable_sliding_window)?;
    crate::output::print(&crate::report::floor::render(&r, &geometry, args.format))?;
    Ok(crate::exit::OK)
}

/// The config the model was read from: the `--model-config` file or the preset's excerpt.
fn config_value(mg: &ModelGpuArgs) -> Result<serde_json::Value> {
    if let Some(p) = &mg.model_config {
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
    let key = mg.model.as_deref().unwrap_or("llama-3-8b");
    model::preset_config(key)
        .ok_or_else(|| Error::input(format!("unknown model `{key}`; see stepgate floor --help")))
}

/// What stepgate resolved, for the JSON `model` object.
fn geometry(mg: &ModelGpuArgs, m: &ModelSpec, no_window: bool) -> Result<ModelGeometry> {
    let cfg = config_value(mg)?;
    let overridden = [mg.layers, mg.kv_heads, mg.head_dim]
        .iter()
        .any(Option::is_some)
        || mg.weights_gb.is_some()
        || mg.params_b.is_some()
        || mg.weight_dtype.is_some()
        || mg.kv_dtype.is_some()
        || mg.kv_dtype_bytes.is_some()
        || no_window;
    let source = match (&mg.model_config, overridden) {
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
        weight_dtype: weight_dtype_name(m.weight_dtype),
        bytes_per_weight: m.weight_dtype.bytes_per_param(),
        vllm_bytes_per_weight: if mg.weight_dtype.is_some() {
            None
        } else {
            hfconfig::vllm_resolve(&cfg, no_window)
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
