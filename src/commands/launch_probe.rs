//! `stepgate launch-probe`: measure this machine's per-launch cost with a null kernel and
//! print it (or write the JSON file `steps --launch-cost` reads).

use std::io::Write;
use std::path::PathBuf;

use crate::exit::Result;
use crate::probe::{self, ProbeParams};
use crate::report::{probe as render, Format};

#[derive(Debug, clap::Args)]
#[command(after_help = crate::commands::headings::MORE,
    after_long_help = "Examples:
  stepgate launch-probe
  stepgate launch-probe --format json -o launch.json && stepgate steps run.sqlite --launch-cost launch.json

Exit codes: 0 ok · 4 no CUDA driver or device (the cited 2.374 µs stands) · 5 the output
could not be written.")]
pub struct Args {
    /// CUDA device ordinal to measure.
    #[arg(long, default_value_t = 0)]
    pub device: usize,
    /// Null-kernel launches per burst.
    #[arg(long, default_value_t = 2000, value_parser = clap::value_parser!(u32).range(1..), hide_short_help = true)]
    pub iters: u32,
    /// Bursts (min and median are over these).
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..), hide_short_help = true)]
    pub repeats: u32,
    /// Null kernels in the CUDA graph (default: 330, the launches (docs/method.md §8.2) per TP=1 Llama-3-8B step).
    #[arg(long, default_value_t = 330, value_parser = clap::value_parser!(u32).range(1..), hide_short_help = true)]
    pub graph_nodes: u32,
    /// Graph launches per burst.
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u32).range(1..), hide_short_help = true)]
    pub graph_launches: u32,
    /// Output format; `json` is the file `steps --launch-cost` reads.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// Write the output to this file instead of stdout.
    #[arg(short = 'o', long)]
    pub output: Option<PathBuf>,
}

pub fn run(args: &Args) -> Result<u8> {
    let mut plan = crate::output::Plan::new();
    plan.add("-o", args.output.as_deref());
    plan.check(&[])?;
    let params = ProbeParams {
        device: args.device,
        iters: args.iters,
        repeats: args.repeats,
        graph_nodes: args.graph_nodes,
        graph_launches: args.graph_launches,
    };
    let report = probe::run(&params)?;
    let text = render::render(&report, args.format);
    match &args.output {
        Some(path) => {
            crate::output::write_atomic(path, text.as_bytes())?;
            let _ = writeln!(std::io::stderr(), "stepgate: wrote {}", path.display());
        }
        None => crate::commands::stdout::print(&text)?,
    }
    Ok(crate::exit::OK)
}
