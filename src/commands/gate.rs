//! `stepgate gate`: compare a report with a stored baseline and fail the build on a real
//! regression (exit 1), never on noise; inconclusive (too few steps) is exit 3.

use crate::commands::headings::{INPUT, OUTPUT, THRESHOLDS};
use crate::commands::viewflags::{ComparisonRows, FormatFlag};
use std::path::PathBuf;

use std::io::Write;

use crate::baseline::Policy;
use crate::commands::document::{Document, Shown};
use crate::commands::historyflags::{ExportFlags, HistoryFlags};
use crate::commands::stepflags::StepFlags;
use crate::exit::{Error, Result};
use crate::output;
use crate::pipeline::gate::{gate, Against, Candidate};
use crate::pipeline::plan::TOP_KERNELS;
use crate::report::gate::{markdown, render, RenderOptions};
use crate::report::to_json;

const GATE_HELP: &str = "Examples:
  stepgate gate run.sqlite --baseline baselines/h100-llama-3-8b-decode.json
  stepgate gate run.sqlite --baseline base.json --policy examples/policy.toml --markdown gate.md
  stepgate gate trace.pt.trace.json.gz --baseline base.json --format json --inconclusive-fails
  stepgate gate run.sqlite --history history/ --where label.branch=main --last 20 --export history/ --label branch=pr

Exit codes: 0 pass · 1 regression (or inconclusive with \
--inconclusive-fails) · 2 usage or input error (bad flags, unreadable/corrupt/foreign baseline) · \
3 inconclusive (fewer than 10 steps per side in a group, a metric too noisy for its \
threshold, or no group in common) · 5 an output could not be written (none was) · \
6 incomparable (GPU, model, TP or step kinds differ; --allow-incomparable compares anyway). Policy file format: docs/gate.md.";

#[derive(Debug, clap::Args)]
#[command(after_help = crate::commands::headings::MORE,
    after_long_help = GATE_HELP)]
pub struct Args {
    /// The candidate: a report or a baseline .json.
    ///
    /// A report: an nsys SQLite export, a Kineto trace, a rocpd database.
    pub report: PathBuf,
    /// The baseline to compare against (or --history).
    #[arg(long, value_name = "FILE", required_unless_present = "history", help_heading = INPUT)]
    pub baseline: Option<PathBuf>,
    /// Thresholds and overrides (TOML or JSON).
    ///
    /// Defaults when absent.
    #[arg(long, value_name = "FILE", help_heading = THRESHOLDS)]
    pub policy: Option<PathBuf>,
    /// Also write the markdown report (a PR comment).
    ///
    /// For $GITHUB_STEP_SUMMARY or a PR comment.
    #[arg(long, value_name = "OUT", help_heading = OUTPUT)]
    pub markdown: Option<PathBuf>,
    /// Also write the JSON comparison (a CI artifact).
    #[arg(long, value_name = "OUT", help_heading = OUTPUT)]
    pub json: Option<PathBuf>,
    /// Also write an HTML report with charts.
    ///
    /// Self-contained: the waterfall and the distributions.
    #[arg(long, value_name = "FILE", help_heading = OUTPUT)]
    pub html: Option<PathBuf>,
    #[command(flatten)]
    pub output: FormatFlag,
    /// Inconclusive fails (exit 1, not 3).
    #[arg(long, help_heading = THRESHOLDS)]
    pub inconclusive_fails: bool,
    /// Compare sides whose GPU, model, TP or step kinds differ instead of exiting 6
    /// (incomparable); the differences lead the report as warnings.
    #[arg(long, help_heading = THRESHOLDS, hide_short_help = true)]
    pub allow_incomparable: bool,
    #[command(flatten)]
    pub rows: ComparisonRows,
    #[command(flatten)]
    pub report_args: StepFlags,
    #[command(flatten)]
    pub history: HistoryFlags,
    #[command(flatten)]
    pub export: ExportFlags,
}

/// Refuse, before any work, an output that is an input or cannot be written.
fn plan(args: &Args) -> Result<()> {
    let mut plan = output::Plan::new();
    plan.add("--markdown", args.markdown.as_deref())
        .add("--json", args.json.as_deref())
        .add("--html", args.html.as_deref());
    use output::Input;
    let mut inputs = vec![Input::report(&args.report)];
    inputs.extend(args.baseline.as_deref().map(Input::file));
    inputs.extend(args.history.history.as_deref().map(Input::dataset));
    inputs.extend(args.export.export.as_deref().map(Input::dataset));
    inputs.extend(args.policy.as_deref().map(Input::file));
    inputs.extend(args.report_args.inputs());
    plan.check(&inputs)
}

/// The comparison with the baseline or history, its files written (`--markdown`,
/// `--json`, `--html`) all or none, rendered as `shown` asks; `--export`'s run is
/// appended by [`Document::finish`], after the result is out.
pub fn document(args: &Args, shown: Shown) -> Result<Document> {
    plan(args)?;
    let steps_plan = args.report_args.plan(TOP_KERNELS)?;
    // One storage configuration for the history, the baseline and the export.
    let store = args.export.storage.config()?;
    let export = args.export.plan()?;
    let history = args.history.plan(&store)?;
    let mut policy = Policy::load(args.policy.as_deref())?;
    policy.inconclusive_fails |= args.inconclusive_fails;
    policy.allow_incomparable |= args.allow_incomparable;
    let cand = Candidate::load(
        &args.report,
        &steps_plan,
        export.as_ref(),
        history.is_some(),
    )?;
    let (against, base_name) = match (&history, &args.baseline) {
        (Some(h), _) => (
            Against::History(h),
            crate::report::gate::input_label(&h.dataset),
        ),
        (None, Some(b)) => (
            Against::Baseline(b, &store),
            crate::report::gate::input_label(b),
        ),
        (None, None) => return Err(Error::usage("give --baseline FILE or --history DATASET")),
    };
    let run = gate(cand, against, &policy)?;
    let cmp = &run.comparison;
    let opts = RenderOptions {
        show_verdict: true,
        baseline_name: base_name,
        candidate_name: crate::report::gate::input_label(&args.report),
        top: args.rows.top,
        waterfall_top: args.rows.waterfall_top,
        command: "gate",
        wide: args.rows.names.wide,
        fit: shown.fit,
    };
    let md = markdown(cmp, &opts);
    // Every file of this run is written together or not at all.
    let mut files: Vec<(&std::path::Path, String)> = Vec::new();
    if let Some(p) = &args.markdown {
        files.push((p, md.clone()));
    }
    if let Some(p) = &args.json {
        files.push((p, to_json(cmp)));
    }
    if let Some(p) = &args.html {
        let page = crate::report::html::gate::render(cmp, &opts, run.pairs());
        files.push((p, page));
    }
    crate::commands::write_files(&files)?;
    let mut doc = Document::new(render(cmp, shown.format, &opts), cmp.exit_code);
    doc.markdown = Some(md);
    Ok(doc.then_append(run.export))
}

pub fn run(args: &Args) -> Result<u8> {
    let mut doc = document(args, Shown::cli(args.output.format, args.rows.names.wide))?;
    // A closed pipe keeps the verdict's exit code; a failed write is exit 5, never 101.
    crate::commands::stdout::print(&doc.text)?;
    doc.finish()?;
    for n in &doc.notes {
        let _ = writeln!(std::io::stderr(), "{n}");
    }
    Ok(doc.exit_code)
}
