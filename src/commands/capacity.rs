//! `stepgate capacity`: the six-step capacity plan (KV pool → B_max, step time,
//! prefill, service time, M/M/1 TTFT screen, fluid ITL closure, replicas, cost).

use crate::commands::document::{Document, Shown};
use crate::commands::floorflags::ModelGpuArgs;
use crate::commands::numbers;
use crate::commands::viewflags::FormatFlag;
use crate::exit::Result;
use crate::pipeline::capacity::CapacityRequest;

const EXAMPLE: &str = "\
Example (the worked plan of docs/method.md §7: Llama-3-8B bf16 on one H100 SXM, 1800 in / 220 out):
  stepgate capacity --model llama-3-8b --gpu h100-sxm --weights-gb 15.01 --params-b 7.5 \\
      --kv-pool-tokens 428569 --input-tokens 1800 --output-tokens 220 --prefill-mfu 0.4 \\
      --ttft-ms 900 --itl-ms 60 --fleet-rps 240 --usd-per-gpu-hour 3

KV pool: --kv-pool-tokens, or --kv-pool-gib, or (default) GPU memory × --gpu-mem-util
minus the resident weights. A screening model, not a capacity guarantee; prefill MFU is
the softest input. Steps are priced with weights + KV read (no KV write), as the seed does.

Exit codes: 0 every step has a solution · 2 bad input, or a target no load meets: the plan
is printed with the step that has no solution marked, why, and what would give it one.
Words: stepgate explain (B_max, service time, ρ, λ, M/M/1 screen, fluid root, …).";

/// Capacity planning: batch, step time, queueing, replicas and cost.
#[derive(Debug, clap::Args)]
#[command(after_help = crate::commands::headings::MORE,
    after_long_help = EXAMPLE)]
pub struct Args {
    #[command(flatten)]
    pub mg: ModelGpuArgs,
    /// Prompt tokens per request.
    #[arg(long, value_name = "TOKENS", default_value_t = 1800.0, allow_negative_numbers = true, help_heading = crate::commands::headings::WORKLOAD)]
    pub input_tokens: f64,
    /// Output tokens per request.
    #[arg(long, value_name = "TOKENS", default_value_t = 220.0, allow_negative_numbers = true, help_heading = crate::commands::headings::WORKLOAD)]
    pub output_tokens: f64,
    /// KV pool in tokens (the seed's 428,569).
    #[arg(long, value_name = "TOKENS", conflicts_with = "kv_pool_gib", allow_negative_numbers = true, hide_short_help = true, help_heading = crate::commands::headings::WORKLOAD)]
    pub kv_pool_tokens: Option<f64>,
    /// KV pool in GiB (2^30 B).
    #[arg(long, value_name = "GIB", allow_negative_numbers = true, hide_short_help = true, help_heading = crate::commands::headings::WORKLOAD)]
    pub kv_pool_gib: Option<f64>,
    /// Without an explicit pool: this fraction of GPU memory, minus weights, holds KV.
    #[arg(long, value_name = "FRACTION", default_value_t = 0.9, allow_negative_numbers = true, hide_short_help = true, help_heading = crate::commands::headings::WORKLOAD)]
    pub gpu_mem_util: f64,
    /// Price the step at this batch instead of B_max.
    #[arg(long, value_name = "N", allow_negative_numbers = true, hide_short_help = true, help_heading = crate::commands::headings::WORKLOAD)]
    pub batch: Option<f64>,
    /// Assumed prefill MFU (fraction of peak): the softest input.
    #[arg(long, value_name = "FRACTION", default_value_t = 0.4, allow_negative_numbers = true, help_heading = crate::commands::headings::WORKLOAD)]
    pub prefill_mfu: f64,
    /// p99 TTFT target, ms.
    #[arg(long, value_name = "MS", default_value_t = 900.0, allow_negative_numbers = true, help_heading = crate::commands::headings::WORKLOAD)]
    pub ttft_ms: f64,
    /// Inter-token latency target for the fluid model, ms.
    #[arg(long, value_name = "MS", default_value_t = 60.0, allow_negative_numbers = true, help_heading = crate::commands::headings::WORKLOAD)]
    pub itl_ms: f64,
    /// Fleet request rate to size replicas for, req/s.
    #[arg(long, value_name = "REQ_PER_S", allow_negative_numbers = true, help_heading = crate::commands::headings::WORKLOAD)]
    pub fleet_rps: Option<f64>,
    /// GPU-hour price, USD (illustrative).
    #[arg(long, value_name = "USD", default_value_t = 3.0, allow_negative_numbers = true, hide_short_help = true, help_heading = crate::commands::headings::WORKLOAD)]
    pub usd_per_gpu_hour: f64,
    #[command(flatten)]
    pub output: FormatFlag,
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

/// The capacity plan, rendered as `shown` asks; a step no load solves is the
/// document's refusal (exit 2), raised once the plan that marks it is out.
pub fn document(args: &Args, shown: Shown) -> Result<Document> {
    validate(args)?;
    let mg = args.mg.to_parts()?;
    let req = CapacityRequest {
        input_tokens: args.input_tokens,
        output_tokens: args.output_tokens,
        kv_pool_tokens: args.kv_pool_tokens,
        kv_pool_gib: args.kv_pool_gib,
        gpu_mem_util: args.gpu_mem_util,
        batch: args.batch,
        prefill_mfu: args.prefill_mfu,
        ttft_ms: args.ttft_ms,
        itl_ms: args.itl_ms,
        fleet_rps: args.fleet_rps,
        usd_per_gpu_hour: args.usd_per_gpu_hour,
    };
    let (ctx, p) = crate::pipeline::capacity::run(&mg, &req)?;
    let text = crate::report::capacity::render(&ctx, &p, &mg.source(), shown.format);
    // The targets given cannot be met: the reason goes on stderr as every refusal does.
    let refusal = p.unsolved.as_ref().map(|u| {
        crate::exit::Error::input(format!(
            "capacity step {} ({}) has no solution: {}; the plan above marks it",
            u.step, u.name, u.reason
        ))
    });
    Ok(Document::new(text, crate::exit::OK).then_refuse(refusal))
}

pub fn run(args: &Args) -> Result<u8> {
    let mut doc = document(args, Shown::cli(args.output.format, false))?;
    // The plan is printed either way, the step that has no solution marked.
    crate::commands::stdout::print(&doc.text)?;
    doc.finish()?;
    Ok(doc.exit_code)
}
