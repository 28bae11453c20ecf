//! `stepgate floor`: the analytic roofline floor of one decode step (no trace needed).
//! Also holds the raw model/GPU overrides `capacity` shares ([`ModelGpuArgs`]).

use crate::commands::floorflags::{batch_flag, context_flag, pp_flag, ModelFlags};
use crate::commands::numbers;
use crate::exit::{Error, Result};
use crate::report::floor::{weight_dtype_name, ConfigFields, ModelGeometry};
use crate::report::Format;
use crate::roofline::floor::{decode_floor, DecodePoint, FloorOptions};
use crate::roofline::model::{self, ModelSpec};
use crate::roofline::options::{GpuOptions, ModelOptions};
use crate::roofline::{hfconfig, CITED_LAUNCH_NS, DEFAULT_LAUNCHES};

const EXAMPLE: &str = "\
Examples:
  stepgate floor --model llama-3-8b --gpu h100-sxm --batch 32 --context 2048
  stepgate floor --model deepseek-v3 --gpu h200 --batch 1 --context 16384 --tp 8
  stepgate floor --model-config ./config.json --gpu mi300x --kv-dtype fp8 --format json
  # the raw form (docs/method.md §3.1): weights and KV geometry given directly
  stepgate floor --weights-gb 15.01 --layers 32 --kv-heads 8 --head-dim 128 --hbm-tb-s 3.0 --launches 395

Floor = (weights + KV read k·B·s + KV write k·B) / HBM bandwidth, or FLOPs / peak when
that is larger (the reference definition, docs/method.md §3.1; the chapter's omits the KV write).
Every number is derived or cited, none measured. GPUs: h100-sxm h100-pcie h200 h20
a100-40gb a100-80gb (a100-80) a100-80gb-pcie a10g l4 l40s rtx-4090 b200 mi300x mi325x.
Models: llama-3-8b llama-3.1-8b llama-3-70b llama-2-7b mistral-7b mixtral-8x7b qwen2.5-7b
qwen3-0.6b qwen3-8b qwen3-30b-a3b gemma-2-9b gemma-3-12b deepseek-v2-lite deepseek-v3 kimi-k2.";

/// Model and GPU selection of `floor` and `capacity`: the shared model and GPU flags, and
/// raw geometry and roof overrides only these two take.
#[derive(Debug, Clone, clap::Args)]
pub struct ModelGpuArgs {
    #[command(flatten)]
    pub common: ModelFlags,
    /// Bytes per KV element (overrides --kv-dtype).
    #[arg(long, allow_negative_numbers = true)]
    pub kv_dtype_bytes: Option<f64>,
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
    /// Peak dense tensor TFLOP/s; a measured number beats the datasheet.
    #[arg(long, allow_negative_numbers = true)]
    pub peak_tflops: Option<f64>,
}

/// The GPU `floor` and `capacity` price when `--gpu` is not given.
pub const DEFAULT_GPU: &str = "h100-sxm";

/// The model/GPU flags as plain library options, checked once (inferno's `into_parts`).
#[derive(Debug, Clone)]
pub struct Parts {
    pub model: ModelOptions,
    pub gpu: GpuOptions,
    pub floor: FloorOptions,
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
    /// Check the numbers and convert the flags into plain options.
    pub fn into_parts(&self) -> Result<Parts> {
        let f = &self.common;
        let mut model = f.model_options();
        if let Some(b) = self.kv_dtype_bytes {
            model.kv_dtype_bytes = Some(numbers::real(
                "--kv-dtype-bytes",
                "bytes",
                b,
                MAX_KV_DTYPE_BYTES,
            )?);
        }
        // The value parsers refuse 0 for these; a zero would price attention at nothing.
        model.layers = self.layers;
        model.kv_heads = self.kv_heads;
        model.head_dim = self.head_dim;
        model.weights_bytes =
            numbers::real_opt("--weights-gb", "GB", self.weights_gb, MAX_WEIGHTS_GB)?
                .map(|w| w * 1e9);
        model.params_streamed = numbers::real_opt(
            "--params-b",
            "billion parameters",
            self.params_b,
            MAX_PARAMS_B,
        )?
        .map(|p| p * 1e9);
        if f.tp == Some(0) || self.pp == 0 {
            return Err(Error::input("--tp and --pp must be at least 1"));
        }
        let gpu = GpuOptions {
            key: f.gpu.clone().unwrap_or_else(|| DEFAULT_GPU.to_owned()),
            hbm_bytes_per_s: f.hbm_bytes_per_s()?,
            peak_flops_per_s: numbers::real_opt(
                "--peak-tflops",
                "TFLOP/s",
                self.peak_tflops,
                MAX_PEAK_TFLOPS,
            )?
            .map(|p| p * 1e12),
        };
        let floor = FloorOptions {
            tp: f.tp.unwrap_or(1),
            pp: self.pp,
            moe_routing: f.moe_routing,
            include_kv_write: true,
        };
        Ok(Parts { model, gpu, floor })
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
    /// Kernel launches per step (330: TP=1 Llama-3-8B, docs/method.md).
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
    let parts = args.mg.into_parts()?;
    let mut m = parts.model.resolve()?;
    if args.disable_sliding_window {
        m.sliding_window = None;
        m.swa_layers = 0;
    }
    let g = parts.gpu.resolve()?;
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
        hbm_overridden: parts.gpu.hbm_bytes_per_s.is_some(),
        peak_overridden: parts.gpu.peak_flops_per_s.is_some(),
    };
    let r = decode_floor(&m, &g, &point, &parts.floor);
    let geometry = geometry(&parts.model, &m, args.disable_sliding_window)?;
    crate::output::print(&crate::report::floor::render(&r, &geometry, args.format))?;
    Ok(crate::exit::OK)
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
    model::preset_config(key)
        .ok_or_else(|| Error::input(format!("unknown model `{key}`; see stepgate floor --help")))
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
