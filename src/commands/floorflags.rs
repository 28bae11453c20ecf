//! The model and GPU flags every pricing command shares, defined once and converted into
//! plain plans: [`ModelFlags`] (beside `--batch`/`--context` in the step commands, and
//! inside [`ModelGpuArgs`]) and the raw geometry and roof overrides only `floor` and
//! `capacity` take.

use std::path::PathBuf;

use crate::commands::numbers;
use crate::exit::{Error, Result};
use crate::pipeline::plan::{FloorPlan, ModelGpu};
use crate::roofline::options::{GpuOptions, ModelOptions};
use crate::wire::roofline::{FloorOptions, MoeRouting};

/// The model and GPU flags, defined once: `floor` and `capacity` flatten them beside their
/// raw geometry overrides ([`ModelGpuArgs`]), the step commands beside `--batch`/`--context`
/// ([`crate::commands::stepflags::StepFlags`]).
#[derive(Debug, Clone, clap::Args)]
#[command(next_help_heading = crate::commands::headings::FLOOR)]
pub struct ModelFlags {
    /// Model preset (`stepgate presets` lists them).
    ///
    /// For example llama-3-8b, qwen3-8b, deepseek-v3.
    /// `floor` and `capacity` default to llama-3-8b; the step commands price floors only
    /// when a model is given.
    #[arg(long, conflicts_with = "model_config")]
    pub model: Option<String>,
    /// A Hugging Face config.json to read the geometry from, instead of a preset.
    #[arg(long, value_name = "PATH", hide_short_help = true)]
    pub model_config: Option<PathBuf>,
    /// GPU preset (`stepgate presets` lists them).
    ///
    /// For example h100-sxm, a100-80gb, l40s, mi300x.
    /// Default: h100-sxm for `floor` and `capacity`, the GPU the report names for the step
    /// commands.
    #[arg(long, alias = "card")]
    pub gpu: Option<String>,
    /// Weight storage: bf16, fp16, fp8, int8, int4 (group 128 scales), int4-gN, mxfp4.
    #[arg(long, hide_short_help = true)]
    pub weight_dtype: Option<String>,
    /// KV-cache element: bf16, fp16, fp8, or its size in bytes (a number, at most 16).
    #[arg(long, value_name = "bf16|fp16|fp8|BYTES", value_parser = kv_dtype_flag,
          allow_negative_numbers = true, hide_short_help = true)]
    pub kv_dtype: Option<f64>,
    /// Tensor-parallel degree.
    ///
    /// Default: what the capture says, else 1. Bytes and FLOPs are priced per GPU.
    #[arg(long, allow_negative_numbers = true, value_parser = tp_flag)]
    pub tp: Option<u32>,
    /// HBM bandwidth in TB/s; a measured number beats the datasheet.
    #[arg(long, allow_negative_numbers = true, hide_short_help = true)]
    pub hbm_tb_s: Option<f64>,
    /// How a step's tokens spread over MoE experts: uniform (expected count), spread
    /// (min(B·k, E), vLLM's convention) or packed (k, the lower bound).
    #[arg(long, value_enum, default_value_t = MoeRouting::Uniform, hide_short_help = true)]
    pub moe_routing: MoeRouting,
}

impl ModelFlags {
    /// The model these flags name, as plain options (no raw geometry overrides).
    pub(crate) fn model_options(&self) -> ModelOptions {
        ModelOptions {
            preset: self.model.clone(),
            config: self.model_config.clone(),
            weight_dtype: self.weight_dtype.clone(),
            kv_dtype_bytes: self.kv_dtype,
            ..ModelOptions::default()
        }
    }

    /// `--hbm-tb-s`, checked, in bytes/s.
    fn hbm_bytes_per_s(&self) -> Result<Option<f64>> {
        Ok(
            numbers::real_opt("--hbm-tb-s", "TB/s", self.hbm_tb_s, numbers::MAX_HBM_TB_S)?
                .map(|b| b * 1e12),
        )
    }

    /// The step commands' floor inputs: priced only when a model is given.
    pub(crate) fn floor_plan(&self, batch: Option<u64>, context: Option<u64>) -> Result<FloorPlan> {
        let given = self.model.is_some() || self.model_config.is_some();
        if let Some(key) = &self.gpu {
            // An unknown GPU is refused wherever it is given, also where no floor is
            // priced (no --model): a typo must not pass silently.
            crate::roofline::options::GpuOptions {
                key: key.clone(),
                hbm_bytes_per_s: None,
                peak_flops_per_s: None,
            }
            .resolve()?;
        }
        Ok(FloorPlan {
            model: given.then(|| self.model_options()),
            gpu: self.gpu.clone(),
            hbm_bytes_per_s: self.hbm_bytes_per_s()?,
            tp: self.tp,
            moe_routing: self.moe_routing,
            batch,
            context,
        })
    }
}

/// `--kv-dtype`: a dtype's name, or bytes per element (0 < n ≤ 16).
fn kv_dtype_flag(s: &str) -> std::result::Result<f64, String> {
    match s.trim() {
        "bf16" | "fp16" => Ok(2.0),
        "fp8" => Ok(1.0),
        t => match t.parse::<f64>() {
            Ok(b) => {
                numbers::real("--kv-dtype", "bytes", b, MAX_KV_DTYPE_BYTES).map_err(|e| e.message)
            }
            Err(_) => Err(
                "give 'bf16', 'fp16', 'fp8' or the bytes per element (a number, at most 16)"
                    .to_owned(),
            ),
        },
    }
}

/// `--batch`: requests per step, 1 ..= [`numbers::MAX_BATCH`].
pub(crate) fn batch_flag(s: &str) -> std::result::Result<u64, String> {
    numbers::count("--batch", "requests", s, 1, numbers::MAX_BATCH)
}

/// `--context`: keys per request, 0 ..= [`numbers::MAX_CONTEXT`] (0: weights only).
pub(crate) fn context_flag(s: &str) -> std::result::Result<u64, String> {
    numbers::count("--context", "tokens", s, 0, numbers::MAX_CONTEXT)
}

/// `--tp` / `--pp`: GPUs in the group, 1 ..= [`numbers::MAX_PARALLEL`].
pub(crate) fn tp_flag(s: &str) -> std::result::Result<u32, String> {
    numbers::count("--tp", "GPUs", s, 1, numbers::MAX_PARALLEL).map(|v| v as u32)
}

/// `--pp`, as [`tp_flag`].
pub(crate) fn pp_flag(s: &str) -> std::result::Result<u32, String> {
    numbers::count("--pp", "GPUs", s, 1, numbers::MAX_PARALLEL).map(|v| v as u32)
}

/// Model and GPU selection of `floor` and `capacity`: the shared model and GPU flags, and
/// raw geometry and roof overrides only these two take.
#[derive(Debug, Clone, clap::Args)]
#[command(next_help_heading = crate::commands::headings::FLOOR)]
pub struct ModelGpuArgs {
    #[command(flatten)]
    pub common: ModelFlags,
    /// The old spelling of `--kv-dtype BYTES` (warns).
    #[arg(
        long,
        hide = true,
        conflicts_with = "kv_dtype",
        allow_negative_numbers = true
    )]
    pub kv_dtype_bytes: Option<f64>,
    /// Pipeline-parallel degree (the last stage: layers/pp plus lm_head).
    #[arg(long, default_value_t = 1, allow_negative_numbers = true, value_parser = pp_flag, hide_short_help = true)]
    pub pp: u32,
    /// Streamed weight bytes per step in GB (1e9), replacing the count from the geometry.
    #[arg(long, allow_negative_numbers = true, hide_short_help = true)]
    pub weights_gb: Option<f64>,
    /// Streamed parameter count in billions for FLOPs (2·P per token).
    #[arg(long, allow_negative_numbers = true, hide_short_help = true)]
    pub params_b: Option<f64>,
    /// Override the layer count L.
    #[arg(long, allow_negative_numbers = true, value_parser = layers_flag, hide_short_help = true)]
    pub layers: Option<u64>,
    /// Override the KV heads h_kv.
    #[arg(long, allow_negative_numbers = true, value_parser = kv_heads_flag, hide_short_help = true)]
    pub kv_heads: Option<u64>,
    /// Override the head dimension d_h.
    #[arg(long, allow_negative_numbers = true, value_parser = head_dim_flag, hide_short_help = true)]
    pub head_dim: Option<u64>,
    /// Peak dense tensor TFLOP/s; a measured number beats the datasheet.
    #[arg(long, allow_negative_numbers = true, hide_short_help = true)]
    pub peak_tflops: Option<f64>,
}

/// The GPU `floor` and `capacity` price when `--gpu` is not given.
pub(crate) const DEFAULT_GPU: &str = "h100-sxm";

/// Upper bounds for the real-valued model and GPU flags: ten times beyond any part or
/// model that exists, so a typo (or `1e300`) is refused instead of priced (the bandwidth's
/// is [`numbers::MAX_HBM_TB_S`]).
const MAX_PEAK_TFLOPS: f64 = 1e6;
const MAX_WEIGHTS_GB: f64 = 1e6;
const MAX_PARAMS_B: f64 = 1e6;
const MAX_KV_DTYPE_BYTES: f64 = 16.0;

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
pub(crate) fn launches_flag(s: &str) -> std::result::Result<u64, String> {
    numbers::count("--launches", "launches", s, 0, numbers::MAX_LAUNCHES)
}

impl ModelGpuArgs {
    /// Check the numbers and convert the flags into plain options.
    pub(crate) fn to_parts(&self) -> Result<ModelGpu> {
        let f = &self.common;
        let mut model = f.model_options();
        if let Some(b) = self.kv_dtype_bytes {
            numbers::deprecated("--kv-dtype-bytes", &format!("--kv-dtype {b}"));
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
            return Err(Error::usage("--tp and --pp must be at least 1"));
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
        Ok(ModelGpu { model, gpu, floor })
    }
}
