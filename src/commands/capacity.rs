//! `stepgate capacity`: the six-step capacity plan (KV pool → B_max, step time,
//! prefill, service time, M/M/1 TTFT screen, fluid ITL closure, replicas, cost).

use crate::commands::floor::ModelGpuArgs;
use crate::commands::numbers;
use crate::exit::{Error, Result};
use crate::report::Format;
use crate::roofline::capacity::{plan, prefill_attention_coeff, CapacityInputs};
use crate::roofline::floor::FloorOptions;

const EXAMPLE: &str = "\
Example (the worked plan of docs/method.md §7: Llama-3-8B bf16 on one H100 SXM, 1800 in / 220 out):
  stepgate capacity --model llama-3-8b --gpu h100-sxm --weights-gb 15.01 --params-b 7.5 \\
      --kv-pool-tokens 428569 --input-tokens 1800 --output-tokens 220 --prefill-mfu 0.4 \\
      --ttft-ms 900 --itl-ms 60 --fleet-rps 240 --usd-per-gpu-hour 3

KV pool: --kv-pool-tokens, or --kv-pool-gib, or (default) GPU memory × --gpu-mem-util
minus the resident weights. A screening model, not a capacity guarantee; prefill MFU is
the softest input. Steps are priced with weights + KV read (no KV write), as the seed does.";

/// Capacity planning: batch, step time, queueing, replicas and cost.
#[derive(Debug, clap::Args)]
#[command(after_help = EXAMPLE)]
pub struct Args {
    #[command(flatten)]
    pub mg: ModelGpuArgs,
    /// Prompt tokens per request.
    #[arg(long, default_value_t = 1800.0, allow_negative_numbers = true)]
    pub input_tokens: f64,
    /// Output tokens per request.
    #[arg(long, default_value_t = 220.0, allow_negative_numbers = true)]
    pub output_tokens: f64,
    /// KV pool in tokens (the seed's 428,569).
    #[arg(long, conflicts_with = "kv_pool_gib", allow_negative_numbers = true)]
    pub kv_pool_tokens: Option<f64>,
    /// KV pool in GiB (2^30 B).
    #[arg(long, allow_negative_numbers = true)]
    pub kv_pool_gib: Option<f64>,
    /// Without an explicit pool: this fraction of GPU memory, minus weights, holds KV.
    #[arg(long, default_value_t = 0.9, allow_negative_numbers = true)]
    pub gpu_mem_util: f64,
    /// Price the step at this batch instead of B_max.
    #[arg(long, allow_negative_numbers = true)]
    pub batch: Option<f64>,
    /// Assumed prefill MFU (fraction of peak): the softest input.
    #[arg(long, default_value_t = 0.4, allow_negative_numbers = true)]
    pub prefill_mfu: f64,
    /// p99 TTFT target, ms.
    #[arg(long, default_value_t = 900.0, allow_negative_numbers = true)]
    pub ttft_ms: f64,
    /// Inter-token latency target for the fluid model, ms.
    #[arg(long, default_value_t = 60.0, allow_negative_numbers = true)]
    pub itl_ms: f64,
    /// Fleet request rate to size replicas for, req/s.
    #[arg(long, allow_negative_numbers = true)]
    pub fleet_rps: Option<f64>,
    /// GPU-hour price, USD (illustrative).
    #[arg(long, default_value_t = 3.0, allow_negative_numbers = true)]
    pub usd_per_gpu_hour: f64,
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
}

/// Upper bounds: far beyond any deployment, low enough that replicas and costs stay exact.
const MAX_TOKENS: f64 = 1e9;
const MAX_POOL_TOKENS: f64 = 1e12;
const MAX_POOL_GIB: f64 = 1e6;
const MAX_BATCH: f64 = 1e7;
const MAX_MS: f64 = 3.6e6;
const MAX_RPS: f64 = 1e9;
const MAX_USD_PER_GPU_HOUR: f64 = 1e6;

/// Every numeric flag, in its own unit, before anything is computed.
fn validate(args: &Args) -> Result<()> {
    numbers::real("--input-tokens", "tokens", args.input_tokens, MAX_TOKENS)?;
    numbers::real("--output-tokens", "tokens", args.output_tokens, MAX_TOKENS)?;
    numbers::real_opt(
        "--kv-pool-tokens",
        "tokens",
        args.kv_pool_tokens,
        MAX_POOL_TOKENS,
    )?;
    numbers::real_opt("--kv-pool-gib", "GiB", args.kv_pool_gib, MAX_POOL_GIB)?;
    numbers::fraction("--gpu-mem-util", args.gpu_mem_util)?;
    numbers::real_opt("--batch", "requests", args.batch, MAX_BATCH)?;
    numbers::fraction("--prefill-mfu", args.prefill_mfu)?;
    numbers::real("--ttft-ms", "ms", args.ttft_ms, MAX_MS)?;
    numbers::real("--itl-ms", "ms", args.itl_ms, MAX_MS)?;
    numbers::real_opt("--fleet-rps", "req/s", args.fleet_rps, MAX_RPS)?;
    numbers::real(
        "--usd-per-gpu-hour",
        "USD",
        args.usd_per_gpu_hour,
        MAX_USD_PER_GPU_HOUR,
    )?;
    Ok(())
}

pub fn run(args: &Args) -> Result<u8> {
    validate(args)?;
    let parts = args.mg.into_parts()?;
    let m = parts.model.resolve()?;
    let g = parts.gpu.resolve()?;
    if parts.floor.pp != 1 {
        return Err(Error::input(
            "capacity models tensor parallelism only; pass --pp 1 (use --tp for multi-GPU replicas)",
        ));
    }
    let tp = parts.floor.tp;
    let cell = m.kv_cell_bytes(tp, 1);
    let kv_pool_tokens = match (args.kv_pool_tokens, args.kv_pool_gib) {
        (Some(t), _) => t,
        (None, Some(gib)) => (gib * f64::from(1u32 << 30) / cell).floor(),
        (None, None) => {
            if !(args.gpu_mem_util > 0.0 && args.gpu_mem_util <= 1.0) {
                return Err(Error::input("--gpu-mem-util must be in (0, 1]"));
            }
            let free = g.memory_bytes * args.gpu_mem_util - m.resident_weight_bytes(tp, 1);
            if free <= 0.0 {
                return Err(Error::input(format!(
                    "the weights ({:.1} GB per GPU) do not fit in {:.0}% of {:.0} GB; raise --tp or pass --kv-pool-tokens",
                    m.resident_weight_bytes(tp, 1) / 1e9,
                    args.gpu_mem_util * 100.0,
                    g.memory_bytes / 1e9
                )));
            }
            (free / cell).floor()
        }
    };
    // MoE: the step streams the experts its batch touches; priced at B_max.
    let mean_ctx = args.input_tokens + args.output_tokens / 2.0;
    let b_guess = args
        .batch
        .unwrap_or((kv_pool_tokens / mean_ctx).floor())
        .max(1.0);
    let opts = FloorOptions {
        tp,
        pp: 1,
        moe_routing: parts.floor.moe_routing,
        include_kv_write: false,
    };
    let weights = m.streamed_weight_bytes(b_guess, opts.moe_routing, tp, 1);
    let tpf = f64::from(tp);
    let coeff = prefill_attention_coeff(&m, tp);
    let inputs = CapacityInputs {
        kv_pool_tokens,
        kv_cell_bytes: cell,
        input_tokens: args.input_tokens,
        output_tokens: args.output_tokens,
        weights_bytes: weights,
        params_streamed: m.params_streamed() / tpf,
        prefill_attention_coeff: coeff,
        hbm_bytes_per_s: g.hbm_bytes_per_s,
        peak_flops_per_s: g.peak_flops_per_s(m.weight_dtype.is_fp8()),
        prefill_mfu: args.prefill_mfu,
        ttft_p99_target_s: args.ttft_ms / 1e3,
        itl_target_s: Some(args.itl_ms / 1e3),
        fleet_rps: args.fleet_rps,
        price_usd_per_gpu_hour: args.usd_per_gpu_hour,
        gpus_per_replica: tpf,
        batch: args.batch,
    };
    let p = plan(&inputs)?;
    let ctx = crate::report::capacity::Context {
        model: m.name.clone(),
        gpu: g.key.to_owned(),
        gpu_source: g.source.to_owned(),
        hbm_basis: if parts.gpu.hbm_bytes_per_s.is_some() {
            "input"
        } else {
            "cited"
        },
        peak_basis: if parts.gpu.peak_flops_per_s.is_some() {
            "input"
        } else {
            "cited"
        },
        kv_pool_basis: if args.kv_pool_tokens.is_some() || args.kv_pool_gib.is_some() {
            "input"
        } else {
            "derived"
        },
        inputs,
    };
    crate::output::print(&crate::report::capacity::render(&ctx, &p, args.format))?;
    Ok(crate::exit::OK)
}
