//! `stepgate doctor`: a preflight of one capture before a gate reads it.

use std::path::PathBuf;

use crate::commands::document::{Document, Shown};
use crate::commands::stepflags::StepFlags;
use crate::commands::viewflags::FormatFlag;
use crate::exit::{Result, DOCTOR_FAILED, OK};
use crate::pipeline::plan::TOP_KERNELS;
use crate::report;

const EXAMPLE: &str = "Examples:
  stepgate doctor run.sqlite
  stepgate doctor run.nsys-rep --strict        # CI preflight: warnings fail too
  stepgate doctor trace.json.gz --format json

Exit codes: 0 passed, 1 a finding at the failing severity (error; warning with --strict),
2 the report cannot be read.";

#[derive(Debug, clap::Args)]
#[command(after_help = crate::commands::headings::MORE,
    after_long_help = EXAMPLE)]
pub struct Args {
    /// nsys export or report, Kineto trace (or directory of rank traces), rocpd/RPD database.
    pub report: PathBuf,
    /// Fail on warnings too (graph-mode tracing, heuristic steps, a cut window, no GPU name).
    #[arg(long)]
    pub strict: bool,
    #[command(flatten)]
    pub output: FormatFlag,
    #[command(flatten)]
    pub step: StepFlags,
}

/// The preflight's findings, rendered as `shown` asks; exit 1 on a finding at the
/// failing severity.
pub fn document(args: &Args, shown: Shown) -> Result<Document> {
    let mut inputs = vec![crate::output::Input::report(&args.report)];
    inputs.extend(args.step.inputs());
    crate::output::Plan::new().check(&inputs)?;
    let plan = args.step.plan(TOP_KERNELS)?;
    let d = crate::pipeline::doctor::run(&args.report, &plan, args.strict)?;
    let text = report::doctor::render(&d, shown.format, shown.fit);
    Ok(Document::new(
        text,
        if d.passed { OK } else { DOCTOR_FAILED },
    ))
}

pub fn run(args: &Args) -> Result<u8> {
    let doc = document(args, Shown::cli(args.output.format, false))?;
    crate::commands::stdout::print(&doc.text)?;
    Ok(doc.exit_code)
}
