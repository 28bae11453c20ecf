//! `stepgate analyze`: per-GPU busy and idle time and kernels ranked by exclusive time.

use crate::commands::headings::{INPUT, OUTPUT, STEPS};
use crate::commands::viewflags::{FormatFlag, WideFlag};
use std::path::PathBuf;

use crate::commands::document::{Document, Shown};
use crate::commands::stepflags::StepFlags;
use crate::exit::{Result, OK};
use crate::pipeline::plan::TOP_KERNELS;
use crate::report;

const EXAMPLE: &str = "Examples:
  stepgate analyze report.sqlite
  stepgate analyze report.nsys-rep --device 0 --top 20 --format markdown
  stepgate analyze trace.pt.trace.json.gz --format json > analysis.json";

#[derive(Debug, clap::Args)]
#[command(after_help = crate::commands::headings::MORE,
    after_long_help = EXAMPLE)]
pub struct Args {
    /// nsys SQLite export (.sqlite), .nsys-rep/.qdrep (needs nsys on PATH), Kineto
    /// .json/.json.gz, or a directory of per-rank Kineto traces.
    pub report: PathBuf,
    /// Only this device id.
    #[arg(long, allow_negative_numbers = true, help_heading = INPUT)]
    pub device: Option<i64>,
    /// Kernel rows per device in table and markdown output (JSON and CSV have all).
    #[arg(long, default_value_t = 15, allow_negative_numbers = true, value_parser = crate::commands::numbers::rows_flag, help_heading = OUTPUT, hide_short_help = true)]
    pub top: usize,
    #[command(flatten)]
    pub output: FormatFlag,
    #[command(flatten)]
    pub names: WideFlag,
    #[command(flatten)]
    pub step: StepFlags,
    /// Also write a self-contained HTML report with charts (busy/idle, categories).
    #[arg(long, value_name = "FILE", help_heading = OUTPUT)]
    pub html: Option<PathBuf>,
    /// Leave step finding out (faster on huge reports when only kernels matter).
    #[arg(long, help_heading = STEPS, hide_short_help = true)]
    pub no_steps: bool,
}

/// Per-GPU busy and idle time and the kernels ranked, its `--html` page written,
/// rendered as `shown` asks.
pub fn document(args: &Args, shown: Shown) -> Result<Document> {
    let mut inputs = vec![crate::output::Input::report(&args.report)];
    inputs.extend(args.step.inputs());
    crate::output::Plan::new()
        .add("--html", args.html.as_deref())
        .check(&inputs)?;
    let plan = args.step.plan(TOP_KERNELS)?;
    let analysis = crate::pipeline::analyze::run(&args.report, &plan, !args.no_steps, args.device)?;
    if let Some(p) = &args.html {
        let path = args.report.display().to_string();
        let page = report::html::analyze::render(&path, &analysis, args.top);
        crate::output::write_atomic(p, page.as_bytes())?;
    }
    let view = report::analyze::Options {
        top: args.top,
        wide: args.names.wide,
        fit: shown.fit,
    };
    let text = report::analyze::render(&analysis, shown.format, &view);
    Ok(Document::new(text, OK))
}

pub fn run(args: &Args) -> Result<u8> {
    let doc = document(args, Shown::cli(args.output.format, args.names.wide))?;
    crate::commands::stdout::print(&doc.text)?;
    crate::phases::mark("output written");
    Ok(doc.exit_code)
}
