//! `stepgate trend`: one metric per run over time from a dataset written by `export`, with
//! change points and the decisions on record marked.

use crate::commands::headings::{INPUT, OUTPUT, THRESHOLDS};
use crate::commands::viewflags::FormatFlag;
use std::path::PathBuf;

use crate::baseline::Policy;
use crate::commands::historyflags::where_clauses;
use crate::dataset::trend::{trend, Metric, TrendQuery};
use crate::dataset::{dates::parse_date, Filter};
use crate::exit::{Result, OK};

const TREND_HELP: &str = "Examples:
  stepgate trend history/ --metric kernel:fused_moe_kernel --by gpu,model --since 2026-01-01
  stepgate trend history/ --metric wall_ns --where gpu=h100,label.branch=main,kind=decode --last 90
  stepgate trend history/ --metric category:attention --by kind --format csv
  stepgate trend history/ --metric wall_ns --by gpu --html trend.html

Per group, one row per run in export order: median, p10 and p90 over the run's steps with GPU
work (kernel and category metrics: exclusive ns per step, 0 where absent). A change point
(heuristic) is a run whose median moved beyond the gate thresholds (--policy, defaults as
in `gate`) relative to the median of the previous --window runs. A run that a decision on record
(`stepgate accept`/`reject`) names carries it: outcome, who and the reason (shortened in
the table, whole in JSON), and a marker on the --html chart.";

#[derive(Debug, clap::Args)]
#[command(after_help = crate::commands::headings::MORE,
    after_long_help = TREND_HELP)]
pub struct Args {
    /// The dataset written by `stepgate export`: a directory or a URL (s3://bucket/prefix,
    /// gs://…, az://…, file://…).
    pub dataset: PathBuf,
    /// A step metric the gate compares (wall_ns, busy_ns, gap_ns, mbu, exposed_comm_ns, …;
    /// a wrong name lists them all), kernel:SELECTOR (part of one kernel's full or short
    /// name, or re:REGEX on the full name; exactly one kernel must match) or category:NAME.
    #[arg(long, default_value = "wall_ns", help_heading = INPUT)]
    pub metric: String,
    /// Which runs: gpu=…, model=… (substring), engine=…, run_id=…, label.NAME=… (exact),
    /// kind=… (steps); comma-separated or repeated. A comma inside a value stays in it
    /// (label.k=a,b) unless what follows holds `=`: write that comma as \, (label.k=a\,b=c).
    #[arg(long = "where", value_name = "KEY=VALUE,…", value_parser = where_clauses, help_heading = INPUT)]
    pub where_: Vec<String>,
    /// One series per value of these keys (gpu, model, engine, kind, label.NAME, …).
    #[arg(long, value_delimiter = ',', help_heading = INPUT)]
    pub by: Vec<String>,
    /// Only runs exported on or after this UTC date (YYYY-MM-DD).
    #[arg(long, value_name = "DATE", help_heading = INPUT)]
    pub since: Option<String>,
    /// Only the last N runs of each group.
    #[arg(long, value_name = "N", value_parser = crate::commands::numbers::last_runs_flag, help_heading = INPUT)]
    pub last: Option<usize>,
    /// Previous runs a change point is measured against.
    #[arg(long, default_value = "5", value_parser = crate::commands::numbers::window_flag, help_heading = THRESHOLDS, hide_short_help = true)]
    pub window: usize,
    /// Thresholds (TOML or JSON, as for `gate`); defaults when absent.
    #[arg(long, value_name = "FILE", help_heading = THRESHOLDS)]
    pub policy: Option<PathBuf>,
    #[command(flatten)]
    pub output: FormatFlag,
    /// Also write a self-contained HTML page with one chart per group.
    #[arg(long, value_name = "FILE", help_heading = OUTPUT)]
    pub html: Option<PathBuf>,
    #[command(flatten)]
    pub storage: crate::commands::historyflags::StorageFlags,
}

pub fn run(args: &Args) -> Result<u8> {
    use crate::output::Input;
    let mut inputs = vec![Input::dataset(&args.dataset)];
    inputs.extend(args.policy.as_deref().map(Input::file));
    crate::output::Plan::new()
        .add("--html", args.html.as_deref())
        .check(&inputs)?;
    let metric = Metric::parse(&args.metric)?;
    let filter = Filter::parse(&args.where_)?;
    let since_ns = args.since.as_deref().map(parse_date).transpose()?;
    let policy = Policy::load(args.policy.as_deref())?;
    let q = TrendQuery {
        metric,
        filter,
        by: args.by.iter().map(|s| s.trim().to_owned()).collect(),
        since_ns,
        last: args.last,
        window: args.window,
        store: args.storage.config()?,
    };
    let t = trend(&args.dataset, &q, &policy)?;
    t.warnings.iter().for_each(|w| eprintln!("warning: {w}"));
    if let Some(p) = &args.html {
        let page = crate::report::html::trend::render(&args.dataset.display().to_string(), &t);
        crate::output::write_atomic(p, page.as_bytes())?;
    }
    crate::commands::stdout::print(&crate::report::trend::render(
        &t,
        args.output.format,
        crate::report::fit::Fit::terminal(false, crate::commands::stdout_columns),
    ))?;
    Ok(OK)
}
