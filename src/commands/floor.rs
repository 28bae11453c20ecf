//! `stepgate floor`: the analytic roofline floor of one decode step (no trace needed).

use crate::commands::document::{Document, Shown};
use crate::commands::floorflags::{batch_flag, context_flag, launches_flag, ModelGpuArgs};
use crate::commands::stepflags::LaunchCostFlags;
use crate::commands::viewflags::FormatFlag;
use crate::exit::Result;
use crate::pipeline::floor::{decode, FloorRequest};
use crate::roofline::DEFAULT_LAUNCHES;

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
qwen3-0.6b qwen3-8b qwen3-30b-a3b gemma-2-9b gemma-3-12b gpt-oss-20b gpt-oss-120b deepseek-v2-lite
deepseek-v3 kimi-k2.";

/// The analytic roofline floor of one decode step at batch B and context s.
#[derive(Debug, clap::Args)]
#[command(after_help = crate::commands::headings::MORE,
    after_long_help = EXAMPLE)]
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
    #[arg(long, default_value_t = DEFAULT_LAUNCHES, allow_negative_numbers = true, value_parser = launches_flag, hide_short_help = true)]
    pub launches: u64,
    #[command(flatten)]
    pub launch: LaunchCostFlags,
    /// Price every layer as full attention, as vLLM serves the model with its
    /// --disable-sliding-window.
    #[arg(long, hide_short_help = true)]
    pub disable_sliding_window: bool,
    #[command(flatten)]
    pub output: FormatFlag,
}

/// The floor of one decode step, rendered as `shown` asks.
pub fn document(args: &Args, shown: Shown) -> Result<Document> {
    let mg = args.mg.to_parts()?;
    let launch_cost_ns = args.launch.cost()?.map(|c| c.per_launch_ns);
    let req = FloorRequest {
        batch: args.batch,
        context: args.context,
        launches: args.launches,
        launch_cost_ns,
        disable_sliding_window: args.disable_sliding_window,
    };
    let (r, geometry) = decode(&mg, &req)?;
    let text = crate::report::floor::render(&r, &geometry, &mg.source(), shown.format, shown.fit);
    Ok(Document::new(text, crate::exit::OK))
}

pub fn run(args: &Args) -> Result<u8> {
    let doc = document(args, Shown::cli(args.output.format, false))?;
    crate::commands::stdout::print(&doc.text)?;
    Ok(doc.exit_code)
}
