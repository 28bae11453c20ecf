//! `stepgate export`: append one run (its steps, kernels and devices) to a Parquet dataset.

use crate::commands::headings::OUTPUT;
use std::path::PathBuf;

use crate::commands::stepflags::StepFlags;
use crate::dataset::write::parse_labels;
use crate::exit::{Result, OK};
use crate::pipeline::plan::{ExportPlan, TOP_KERNELS};
use crate::report::fmt_int;

const EXPORT_HELP: &str = "Examples:
  stepgate export run.sqlite -o history/ --label branch=main --label git_sha=$GITHUB_SHA
  stepgate export trace_dir/ -o s3-synced/history --model llama-3-8b --label workload=sharegpt

Layout (hive-partitioned Parquet, read by DuckDB, Spark, Trino and polars):
  DATASET/{runs,steps,step_kernels,kernels,devices}/gpu=…/model=…/run-RUNID.parquet
The run id is a hash of the report's contents and the labels: the same run exported twice is
refused (or replaced with --replace). Schema and SQL examples: docs/dataset.md.";

#[derive(Debug, clap::Args)]
#[command(after_help = EXPORT_HELP)]
pub struct Args {
    /// nsys SQLite export, .nsys-rep, Kineto .json/.json.gz, or a directory of ranks.
    pub report: PathBuf,
    /// The dataset directory (created if missing).
    #[arg(short = 'o', long = "output", value_name = "DATASET", help_heading = OUTPUT)]
    pub dataset: PathBuf,
    /// A label stored with the run (git sha, branch, workload…); repeatable.
    #[arg(long = "label", value_name = "KEY=VALUE", help_heading = OUTPUT)]
    pub labels: Vec<String>,
    /// Replace the run if it is already in the dataset (default: refuse).
    #[arg(long, help_heading = OUTPUT)]
    pub replace: bool,
    /// Seconds to wait for another export holding the dataset's lock, then exit 4 naming
    /// the holder (0: do not wait).
    #[arg(long, value_name = "SECONDS", default_value = "60",
          value_parser = crate::commands::numbers::lock_timeout_flag, help_heading = OUTPUT)]
    pub lock_timeout: std::time::Duration,
    #[command(flatten)]
    pub step: StepFlags,
}

pub fn run(args: &Args) -> Result<u8> {
    let to = ExportPlan {
        dataset: args.dataset.clone(),
        labels: parse_labels(&args.labels)?,
        lock_timeout: args.lock_timeout,
    };
    crate::dataset::write::check_target(&args.dataset)?;
    let plan = args.step.plan(TOP_KERNELS)?;
    let options = crate::dataset::write::ExportOptions {
        replace: args.replace,
        lock_timeout: args.lock_timeout,
    };
    let o = crate::pipeline::history::export(&args.report, &plan, &to, &options)?;
    o.notes.iter().for_each(|n| eprintln!("stepgate: {n}"));
    let rows: Vec<String> = o
        .rows
        .iter()
        .map(|(t, n)| format!("{t} {}", fmt_int(*n as i64)))
        .collect();
    crate::output::print(&format!(
        "{} run {} to {}: {}\n",
        if o.replaced { "replaced" } else { "exported" },
        o.run_id,
        args.dataset.display(),
        rows.join(", ")
    ))?;
    Ok(OK)
}
