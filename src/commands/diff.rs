//! `stepgate diff A B`: the gate's comparison between two reports or baselines, as a
//! report without a verdict unless `--verdict` asks for one.

use crate::commands::headings::{OUTPUT, THRESHOLDS};
use crate::commands::viewflags::{ComparisonRows, FormatFlag};
use std::path::PathBuf;

use crate::baseline::Policy;
use crate::commands::document::{Document, Shown};
use crate::commands::stepflags::StepFlags;
use crate::exit::Result;
use crate::pipeline::plan::TOP_KERNELS;
use crate::report::gate::{markdown, render, RenderOptions};

#[derive(Debug, clap::Args)]
#[command(after_help = crate::commands::headings::MORE,
    after_long_help = "Examples:
  stepgate diff before.sqlite after.sqlite --format markdown
  stepgate diff baselines/old.json baselines/new.json --verdict

Exit codes: 0 ok · 2 usage or input error · 5 an output could not be written; with \
--verdict as `gate`: 1 regression · 3 inconclusive · 6 incomparable.")]
pub struct Args {
    /// The reference side: a report or a baseline .json.
    pub a: PathBuf,
    /// The side compared with it: a report or a baseline .json.
    pub b: PathBuf,
    /// Judge like `gate` (exit 1 on a regression, 3 inconclusive, 6 incomparable: GPU,
    /// model, TP or step kinds differ).
    #[arg(long, help_heading = THRESHOLDS)]
    pub verdict: bool,
    /// Thresholds and overrides (TOML or JSON).
    #[arg(long, value_name = "FILE", help_heading = THRESHOLDS)]
    pub policy: Option<PathBuf>,
    /// Also write the markdown report here.
    #[arg(long, value_name = "OUT", help_heading = OUTPUT)]
    pub markdown: Option<PathBuf>,
    /// Also write a self-contained HTML report with charts (waterfall, distributions).
    #[arg(long, value_name = "FILE", help_heading = OUTPUT)]
    pub html: Option<PathBuf>,
    #[command(flatten)]
    pub output: FormatFlag,
    #[command(flatten)]
    pub rows: ComparisonRows,
    #[command(flatten)]
    pub report_args: StepFlags,
}

/// The comparison of the two sides, its files written (`--markdown`, `--html`) all or
/// none, rendered as `shown` asks; exit 0 unless `--verdict` judges.
pub fn document(args: &Args, shown: Shown) -> Result<Document> {
    let mut plan = crate::output::Plan::new();
    plan.add("--markdown", args.markdown.as_deref())
        .add("--html", args.html.as_deref());
    use crate::output::Input;
    let mut inputs = vec![Input::report(&args.a), Input::report(&args.b)];
    inputs.extend(args.policy.as_deref().map(Input::file));
    inputs.extend(args.report_args.inputs());
    plan.check(&inputs)?;
    let steps_plan = args.report_args.plan(TOP_KERNELS)?;
    let policy = Policy::load(args.policy.as_deref())?;
    let run = crate::pipeline::gate::diff(&args.a, &args.b, &steps_plan, &policy, args.verdict)?;
    let cmp = &run.comparison;
    let ro = RenderOptions {
        show_verdict: args.verdict,
        baseline_name: crate::report::gate::input_label(&args.a),
        candidate_name: crate::report::gate::input_label(&args.b),
        top: args.rows.top,
        waterfall_top: args.rows.waterfall_top,
        command: "diff",
        wide: args.rows.names.wide,
        fit: shown.fit,
    };
    let md = markdown(cmp, &ro);
    // Every file of this run is written together or not at all.
    let mut files: Vec<(&std::path::Path, String)> = Vec::new();
    if let Some(p) = &args.markdown {
        files.push((p, md.clone()));
    }
    if let Some(p) = &args.html {
        let page = crate::report::html::gate::render(cmp, &ro, run.pairs());
        files.push((p, page));
    }
    crate::commands::write_files(&files)?;
    let code = if args.verdict {
        cmp.exit_code
    } else {
        crate::exit::OK
    };
    let mut doc = Document::new(render(cmp, shown.format, &ro), code);
    doc.markdown = Some(md);
    Ok(doc)
}

pub fn run(args: &Args) -> Result<u8> {
    let doc = document(args, Shown::cli(args.output.format, args.rows.names.wide))?;
    crate::commands::stdout::print(&doc.text)?;
    Ok(doc.exit_code)
}
