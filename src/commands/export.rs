//! `stepgate export`: append one run (its steps, kernels and devices) to a Parquet dataset,
//! and the `--export`/`--history` flags that `baseline record` and `gate` share.

use std::path::{Path, PathBuf};

use crate::baseline::{Baseline, Comparison};
use crate::commands::stepflags::{load_for_steps, steps_of, StepFlags};
use crate::dataset::schema::DeviceRow;
use crate::dataset::write::{self, parse_labels};
use crate::dataset::{self, Filter, HistoryMode, HistoryQuery, RunSource};
use crate::exit::{Error, Result, OK};
use crate::report::fmt_int;
use crate::timing::steps::StepsReport;
use crate::trace::{SourceFormat, Trace};

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
    #[arg(short = 'o', long = "output", value_name = "DATASET")]
    pub dataset: PathBuf,
    /// A label stored with the run (git sha, branch, workload…); repeatable.
    #[arg(long = "label", value_name = "KEY=VALUE")]
    pub labels: Vec<String>,
    /// Replace the run if it is already in the dataset (default: refuse).
    #[arg(long)]
    pub replace: bool,
    #[command(flatten)]
    pub step: StepFlags,
}

/// `--export DATASET` and `--label` for `baseline record` and `gate`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ExportFlags {
    /// Also append this run to a Parquet dataset (see `stepgate export`); a run already
    /// there is not added again.
    #[arg(long, value_name = "DATASET")]
    pub export: Option<PathBuf>,
    /// A label stored with the exported run; repeatable (needs --export).
    #[arg(long = "label", value_name = "KEY=VALUE", requires = "export")]
    pub labels: Vec<String>,
}

/// `gate --history DATASET …`: the baseline is the last runs of a dataset.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct HistoryFlags {
    /// Gate against the last runs of this dataset instead of a baseline file (only runs on
    /// the candidate's GPU, and for its model when --model is given).
    #[arg(long, value_name = "DATASET", conflicts_with = "baseline")]
    pub history: Option<PathBuf>,
    /// Which runs: gpu=…, model=… (substring), engine=…, label.NAME=… (exact), kind=…;
    /// comma-separated or repeated.
    #[arg(long = "where", value_name = "KEY=VALUE,…", requires = "history", value_parser = where_clauses)]
    pub where_: Vec<String>,
    /// How many of the newest matching runs.
    #[arg(long, default_value_t = 20, requires = "history")]
    pub last: usize,
    /// steps: pool every step of those runs; runs: one median per run.
    #[arg(long, value_enum, default_value_t, requires = "history")]
    pub history_mode: HistoryMode,
    /// Fewer matching runs than this: inconclusive.
    #[arg(long, default_value_t = 3, requires = "history")]
    pub min_runs: usize,
}

/// Check `--where` while parsing flags, before a long report load.
pub fn where_clauses(s: &str) -> std::result::Result<String, String> {
    Filter::parse(&[s.to_owned()])
        .map(|_| s.to_owned())
        .map_err(|e| e.message)
}

/// What `export` needs from a loaded trace besides its steps.
pub fn run_source(trace: &Trace, flags: &StepFlags) -> RunSource {
    RunSource {
        source_format: match trace.meta.format {
            SourceFormat::Nsys => "nsys-sqlite".to_owned(),
            SourceFormat::Kineto => "kineto".to_owned(),
        },
        tool_version: trace.meta.tool_version.clone(),
        source_schema_version: trace.meta.schema_version.clone(),
        // The same GPU and model a baseline records, so gate --history can match them.
        gpu_name: flags
            .floor
            .gpu
            .clone()
            .or_else(|| trace.devices.iter().find_map(|d| d.name.clone())),
        model: flags.floor.model.clone().or_else(|| {
            flags
                .floor
                .model_config
                .as_ref()
                .map(|p| p.display().to_string())
        }),
        devices: trace
            .devices
            .iter()
            .map(|d| DeviceRow {
                id: d.id,
                name: d.name.clone(),
                memory_bandwidth_bytes_per_s: d.memory_bandwidth_bytes_per_s,
                sm_count: d.sm_count,
                total_memory_bytes: d.total_memory_bytes,
            })
            .collect(),
    }
}

/// Hash the report on a second thread while `work` loads it (hashing a multi-GB export
/// costs as much as a fair part of reading it).
pub fn with_report_hash<T>(path: &Path, work: impl FnOnce() -> Result<T>) -> Result<(T, String)> {
    std::thread::scope(|s| {
        let h = s.spawn(|| write::report_sha256(path));
        let out = work();
        let sha = h
            .join()
            .map_err(|_| Error::input("internal: the report hashing thread panicked"))?;
        Ok((out?, sha?))
    })
}

/// Append a found run; `quiet_duplicate` (for `gate`/`baseline --export`) turns "already
/// there" into a note instead of an error.
pub fn append(
    dataset: &Path,
    report: &Path,
    sha: &str,
    labels: &[String],
    src: &RunSource,
    steps: &StepsReport,
    quiet_duplicate: bool,
) -> Result<()> {
    let labels = parse_labels(labels)?;
    let id = write::run_id(sha, &labels);
    match write::export_run(
        dataset,
        report,
        sha,
        &labels,
        src,
        steps,
        &dataset::ExportOptions::default(),
    ) {
        Ok(o) => {
            o.notes.iter().for_each(|n| eprintln!("stepgate: {n}"));
            eprintln!(
                "exported run {} to {} ({} steps, {} step-kernel rows)",
                o.run_id,
                dataset.display(),
                fmt_int(o.rows[0].1 as i64),
                fmt_int(o.rows[1].1 as i64)
            );
            Ok(())
        }
        Err(_) if quiet_duplicate && already_there(dataset, &id) => {
            eprintln!(
                "run {id} is already in {}: not added again",
                dataset.display()
            );
            Ok(())
        }
        Err(e) => Err(e),
    }
}

fn already_there(dataset: &Path, id: &str) -> bool {
    write::run_exists(dataset, id)
}

/// `gate --history`: the baseline from the dataset for this candidate.
pub fn history_side(
    h: &HistoryFlags,
    dataset: &Path,
    cand: &Baseline,
    candidate: Option<dataset::Candidate>,
) -> Result<dataset::history::History> {
    let q = HistoryQuery {
        filter: Filter::parse(&h.where_)?,
        last: h.last.max(1),
        mode: h.history_mode,
        min_runs: h.min_runs,
        gpu: cand.meta.gpu_name.clone(),
        model: cand.meta.model.clone(),
        candidate,
    };
    dataset::history_baseline(dataset, &q)
}

/// Put the history note first among the reasons (too few runs) or the warnings.
pub fn note_history(cmp: &mut Comparison, h: &dataset::history::History) {
    if h.too_few {
        cmp.reasons.insert(0, h.note.clone());
    } else {
        cmp.warnings.insert(0, h.note.clone());
    }
    cmp.warnings.extend(h.warnings.iter().cloned());
}

pub fn run(args: &Args) -> Result<u8> {
    let labels = parse_labels(&args.labels)?;
    if args.dataset.exists() && !args.dataset.is_dir() {
        return Err(Error::input(format!(
            "-o {}: exists and is not a directory: give a dataset directory",
            args.dataset.display()
        )));
    }
    let ((steps, src), sha) = with_report_hash(&args.report, || {
        let trace = load_for_steps(&args.report, &args.step)?;
        let cats = crate::commands::stepflags::categorizer(args.step.categories.as_ref())?;
        let steps = steps_of(&trace, &args.step, &cats, 5)?;
        Ok((steps, run_source(&trace, &args.step)))
    })?;
    if steps.steps.is_empty() {
        return Err(Error::input(format!(
            "{}: no steps were found (method {}): check --steps and --kind",
            args.report.display(),
            steps.method
        )));
    }
    let o = write::export_run(
        &args.dataset,
        &args.report,
        &sha,
        &labels,
        &src,
        &steps,
        &dataset::ExportOptions {
            replace: args.replace,
            ..Default::default()
        },
    )?;
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
