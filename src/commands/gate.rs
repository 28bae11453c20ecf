//! `stepgate gate`: compare a report with a stored baseline and fail the build on a real
//! regression (exit 1), never on noise; inconclusive (too few steps) is exit 3.

use std::path::PathBuf;

use crate::baseline::{compare, load_side, read_baseline, Policy};
use crate::commands::baseline::baseline_from_report;
use crate::commands::stepflags::StepFlags;
use crate::exit::{Error, Result};
use crate::output;
use crate::report::gate::{markdown, render, RenderOptions};
use crate::report::{to_json, Format};

const GATE_HELP: &str = "Examples:
  stepgate gate run.sqlite --baseline baselines/h100-llama-3-8b-decode.json
  stepgate gate run.sqlite --baseline base.json --policy examples/policy.toml --markdown gate.md
  stepgate gate trace.pt.trace.json.gz --baseline base.json --format json --inconclusive-fails
  stepgate gate run.sqlite --history history/ --where label.branch=main --last 20 --export history/ --label branch=pr

Exit codes: 0 pass · 1 regression (or inconclusive with \
--inconclusive-fails) · 2 usage or input error (bad flags, unreadable/corrupt/foreign baseline, \
GPU or model mismatch) · 3 inconclusive (fewer than 10 steps per side in a group, or no group \
in common). Policy file format: docs/gate.md.";

#[derive(Debug, clap::Args)]
#[command(after_help = GATE_HELP)]
pub struct Args {
    /// The candidate: a report (nsys SQLite export, Kineto trace) or a baseline .json.
    pub report: PathBuf,
    /// The stored baseline to compare against (or --history DATASET).
    #[arg(long, value_name = "FILE", required_unless_present = "history")]
    pub baseline: Option<PathBuf>,
    /// Thresholds and overrides (TOML or JSON); defaults when absent.
    #[arg(long, value_name = "FILE")]
    pub policy: Option<PathBuf>,
    /// Also write the markdown report here (for $GITHUB_STEP_SUMMARY or a PR comment).
    #[arg(long, value_name = "OUT")]
    pub markdown: Option<PathBuf>,
    /// Also write the full JSON comparison here (a CI artifact).
    #[arg(long, value_name = "OUT")]
    pub json: Option<PathBuf>,
    /// Also write a self-contained HTML report with charts (waterfall, distributions).
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// What to print on stdout.
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
    /// Treat inconclusive as a failure (exit 1 instead of 3).
    #[arg(long)]
    pub inconclusive_fails: bool,
    /// Kernel rows per list in the report.
    #[arg(long, default_value_t = 10, allow_negative_numbers = true, value_parser = crate::commands::numbers::rows_flag)]
    pub top: usize,
    /// Waterfall rows (largest |Δ mean| first) before the rest fold into "N others".
    #[arg(long, default_value_t = 8, value_name = "N", allow_negative_numbers = true, value_parser = crate::commands::numbers::waterfall_rows_flag)]
    pub waterfall_top: usize,
    #[command(flatten)]
    pub report_args: StepFlags,
    #[command(flatten)]
    pub history: crate::commands::export::HistoryFlags,
    #[command(flatten)]
    pub export: crate::commands::export::ExportFlags,
}

/// Write one rendered report atomically. Prefer collecting every output of a command into
/// one [`output::write_all`] (all or nothing); this stays for single-file callers.
pub fn write_out(path: &std::path::Path, text: &str) -> Result<()> {
    output::write_atomic(path, text.as_bytes())
}

/// The outputs given (flag, path, contents), written all or nothing.
pub(crate) fn write_outputs(outs: &[(Option<&std::path::Path>, String)]) -> Result<()> {
    let files: Vec<(&std::path::Path, &[u8])> = outs
        .iter()
        .filter_map(|(p, text)| p.map(|p| (p, text.as_bytes())))
        .collect();
    if files.is_empty() {
        return Ok(());
    }
    output::write_all(&files)
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
    inputs.extend(crate::commands::step_inputs(&args.report_args));
    plan.check(&inputs)
}

/// The policy from `--policy`, or the defaults.
pub(crate) fn load_policy(path: Option<&std::path::Path>) -> Result<Policy> {
    match path {
        Some(p) => Policy::from_file(p),
        None => Ok(Policy::default()),
    }
}

pub fn run(args: &Args) -> Result<u8> {
    plan(args)?;
    let mut policy = load_policy(args.policy.as_deref())?;
    policy.inconclusive_fails |= args.inconclusive_fails;
    // --export keeps the candidate's steps from the same load.
    let found = std::cell::RefCell::new(None);
    // --history needs the report's hash too: its own earlier export is left out.
    let hashed = args.export.export.is_some() || args.history.history.is_some();
    let cand = load_side(&args.report, &|p| match hashed {
        false => baseline_from_report(p, &args.report_args),
        true => {
            let ((b, steps, src), sha) = crate::commands::export::with_report_hash(p, || {
                crate::commands::baseline::baseline_and_steps(p, &args.report_args)
            })?;
            *found.borrow_mut() = Some((steps, src, sha));
            Ok(b)
        }
    })?;
    if args.export.export.is_some() && found.borrow().is_none() {
        return Err(Error::input(
            "--export needs a report as the candidate, not a baseline file",
        ));
    }
    let (base, history, base_name) = match (&args.history.history, &args.baseline) {
        (Some(d), _) => {
            let candidate = match &*found.borrow() {
                Some((_, _, sha)) => Some(crate::dataset::Candidate {
                    run_id: crate::dataset::write::run_id(
                        sha,
                        &crate::dataset::write::parse_labels(&args.export.labels)?,
                    ),
                    report_sha256: sha.clone(),
                }),
                None => None,
            };
            let h = crate::commands::export::history_side(&args.history, d, &cand, candidate)?;
            (h.baseline.clone(), Some(h), d.display().to_string())
        }
        (None, Some(b)) => (read_baseline(b)?, None, b.display().to_string()),
        (None, None) => return Err(Error::input("give --baseline FILE or --history DATASET")),
    };
    let mut cmp = compare(&base, &cand, &policy)?;
    if let Some(h) = &history {
        crate::commands::export::note_history(&mut cmp, h);
    }
    let opts = RenderOptions {
        show_verdict: true,
        baseline_name: base_name,
        candidate_name: args.report.display().to_string(),
        top: args.top,
        waterfall_top: args.waterfall_top,
        command: "gate",
    };
    // Every file of this run is written together or not at all.
    write_outputs(&[
        (
            args.markdown.as_deref(),
            args.markdown
                .as_ref()
                .map(|_| markdown(&cmp, &opts))
                .unwrap_or_default(),
        ),
        (
            args.json.as_deref(),
            args.json
                .as_ref()
                .map(|_| to_json(&cmp))
                .unwrap_or_default(),
        ),
        (
            args.html.as_deref(),
            args.html
                .as_ref()
                .map(|_| crate::report::html::gate::render(&cmp, &opts, &base, &cand))
                .unwrap_or_default(),
        ),
    ])?;
    // A closed pipe keeps the verdict's exit code; a failed write is exit 2, never 101.
    output::print(&render(&cmp, args.format, &opts))?;
    // Appended after the comparison, so a run is never part of its own history.
    if let (Some(dataset), Some((steps, src, sha))) = (&args.export.export, &*found.borrow()) {
        crate::commands::export::append(
            dataset,
            &args.report,
            sha,
            &args.export.labels,
            src,
            steps,
            true,
        )?;
    }
    Ok(cmp.exit_code)
}
