//! `stepgate export`: append one run (its steps, kernels and devices) to a Parquet dataset.

use crate::commands::headings::OUTPUT;
use std::path::PathBuf;

use crate::commands::document::{Document, Shown};
use crate::commands::historyflags::StorageFlags;
use crate::commands::stepflags::StepFlags;
use crate::dataset::write::parse_labels;
use crate::exit::{Result, OK};
use crate::pipeline::plan::{ExportPlan, TOP_KERNELS};
use crate::report::{fmt_int, Format};

const EXPORT_HELP: &str = "Examples:
  stepgate export run.sqlite -o history/ --label branch=main --label git_sha=$GITHUB_SHA
  stepgate export trace_dir/ -o s3://team-perf/history --model llama-3-8b --label workload=sharegpt

Layout (hive-partitioned Parquet, read by DuckDB, Spark, Trino and polars):
  DATASET/{runs,steps,step_kernels,kernels,devices}/gpu=…/model=…/run-RUNID….parquet
(table files other than runs are named run-RUNID-EXPORTID.parquet; the runs file,
run-RUNID.lDIGESTS.parquet with one digest per label, written last with a create-only
put, is the commit). The run id is a hash of the report's contents
and the labels: the same run exported twice is refused (or replaced with --replace), also
when two exports race. Object storage is configured the standard way (AWS_ENDPOINT_URL,
AWS_REGION, AWS_ACCESS_KEY_ID, …) or with --storage-option. Schema, commit protocol and
SQL examples: docs/dataset.md.";

#[derive(Debug, clap::Args)]
#[command(after_help = crate::commands::headings::MORE,
    after_long_help = EXPORT_HELP)]
pub struct Args {
    /// nsys SQLite export, .nsys-rep, Kineto .json/.json.gz, or a directory of ranks.
    pub report: PathBuf,
    /// The dataset: a directory (created if missing) or a URL (s3://bucket/prefix, gs://…,
    /// az://…, file://…).
    #[arg(short = 'o', long = "output", value_name = "DATASET", help_heading = OUTPUT)]
    pub dataset: PathBuf,
    /// A label stored with the run (git sha, branch, workload…); repeatable.
    #[arg(long = "label", value_name = "KEY=VALUE", help_heading = OUTPUT)]
    pub labels: Vec<String>,
    /// Replace the run if it is already in the dataset (default: refuse).
    #[arg(long, help_heading = OUTPUT, hide_short_help = true)]
    pub replace: bool,
    #[command(flatten)]
    pub storage: StorageFlags,
    #[command(flatten)]
    pub step: StepFlags,
}

/// The run appended; the result as a line (`shown` table) or a small JSON document of
/// the same facts (`export` prints no report), the repairs made on the way as notes.
pub fn document(args: &Args, shown: Shown) -> Result<Document> {
    let to = ExportPlan {
        dataset: args.dataset.clone(),
        labels: parse_labels(&args.labels)?,
        store: args.storage.config()?,
    };
    // Refused before the report is read: a dataset inside the report, one that cannot be
    // written (read-only directory or credentials, a file at the path).
    crate::dataset::write::check_not_in_report(&args.dataset, &args.report)?;
    crate::dataset::write::check_target(&args.dataset, &to.store)?;
    let plan = args.step.plan(TOP_KERNELS)?;
    let o = crate::pipeline::history::export(&args.report, &plan, &to, args.replace)?;
    let text = match shown.format {
        Format::Json => {
            let rows: serde_json::Map<String, serde_json::Value> = o
                .rows
                .iter()
                .map(|(t, n)| ((*t).to_string(), serde_json::Value::from(*n)))
                .collect();
            serde_json::json!({
                "run_id": o.run_id,
                "replaced": o.replaced,
                "dataset": args.dataset.display().to_string(),
                "rows": rows,
            })
            .to_string()
        }
        _ => {
            let rows: Vec<String> = o
                .rows
                .iter()
                .map(|(t, n)| format!("{t} {}", fmt_int(*n as i64)))
                .collect();
            format!(
                "{} run {} to {}: {}\n",
                if o.replaced { "replaced" } else { "exported" },
                o.run_id,
                args.dataset.display(),
                rows.join(", ")
            )
        }
    };
    let mut doc = Document::new(text, OK);
    doc.notes = o.notes.iter().map(ToString::to_string).collect();
    Ok(doc)
}

pub fn run(args: &Args) -> Result<u8> {
    let doc = document(args, Shown::cli(Format::Table, false))?;
    doc.notes.iter().for_each(|n| eprintln!("stepgate: {n}"));
    crate::commands::stdout::print(&doc.text)?;
    Ok(doc.exit_code)
}
