//! `stepgate gate`: compare a report with a stored baseline and fail the build on a real
//! regression (exit 1), never on noise; inconclusive (too few steps) is exit 3.

use std::path::PathBuf;

use crate::baseline::{compare, load_side, read_baseline, Policy};
use crate::commands::baseline::baseline_from_report;
use crate::commands::steps::StepFlags;
use crate::exit::{Error, Result};
use crate::report::gate::{markdown, render, RenderOptions};
use crate::report::{to_json, Format};

const GATE_HELP: &str = "Examples:
  stepgate gate run.sqlite --baseline baselines/h100-llama-3-8b-decode.json
  stepgate gate run.sqlite --baseline base.json --policy examples/policy.toml --markdown gate.md
  stepgate gate trace.pt.trace.json.gz --baseline base.json --format json --inconclusive-fails

Exit codes: 0 pass · 1 regression (or inconclusive with \
--inconclusive-fails) · 2 usage or input error (bad flags, unreadable/corrupt/foreign baseline, \
GPU or model mismatch) · 3 inconclusive (fewer than 10 steps per side in a group, or no group \
in common). Policy file format: docs/gate.md.";

#[derive(Debug, clap::Args)]
#[command(after_help = GATE_HELP)]
pub struct Args {
    /// The candidate: a report (nsys SQLite export, Kineto trace) or a baseline .json.
    pub report: PathBuf,
    /// The stored baseline to compare against.
    #[arg(long, value_name = "FILE")]
    pub baseline: PathBuf,
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
    #[arg(long, default_value_t = 10)]
    pub top: usize,
    /// Waterfall rows (largest |Δ mean| first) before the rest fold into "N others".
    #[arg(long, default_value_t = 8, value_name = "N")]
    pub waterfall_top: usize,
    #[command(flatten)]
    pub report_args: StepFlags,
}

/// Write a rendered report next to stdout's.
pub(crate) fn write_out(path: &std::path::Path, text: &str) -> Result<()> {
    std::fs::write(path, text)
        .map_err(|e| Error::input(format!("cannot write {}: {e}", path.display())))
}

/// The policy from `--policy`, or the defaults.
pub(crate) fn load_policy(path: Option<&std::path::Path>) -> Result<Policy> {
    match path {
        Some(p) => Policy::from_file(p),
        None => Ok(Policy::default()),
    }
}

pub fn run(args: &Args) -> Result<u8> {
    crate::output::Plan::new()
        .add("--html", args.html.as_deref())
        .check(&[args.report.as_path(), args.baseline.as_path()])?;
    let mut policy = load_policy(args.policy.as_deref())?;
    policy.inconclusive_fails |= args.inconclusive_fails;
    let base = read_baseline(&args.baseline)?;
    let cand = load_side(&args.report, &|p| {
        baseline_from_report(p, &args.report_args)
    })?;
    let cmp = compare(&base, &cand, &policy)?;
    let opts = RenderOptions {
        show_verdict: true,
        baseline_name: args.baseline.display().to_string(),
        candidate_name: args.report.display().to_string(),
        top: args.top,
        waterfall_top: args.waterfall_top,
        command: "gate",
    };
    if let Some(p) = &args.markdown {
        write_out(p, &markdown(&cmp, &opts))?;
    }
    if let Some(p) = &args.json {
        write_out(p, &to_json(&cmp))?;
    }
    if let Some(p) = &args.html {
        let page = crate::report::html::gate::render(&cmp, &opts, &base, &cand);
        crate::output::write_atomic(p, page.as_bytes())?;
    }
    print!("{}", render(&cmp, args.format, &opts));
    Ok(cmp.exit_code)
}
