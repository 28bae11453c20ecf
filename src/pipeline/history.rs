//! Run history: what a run appends to a dataset (its steps and source facts, the report's
//! hash computed on a second thread while it loads), `export` itself, and the history
//! side of `gate --history` with the note the report carries about it.

use std::fmt;
use std::path::{Path, PathBuf};

use crate::dataset::history::History;
use crate::dataset::schema::DeviceRow;
use crate::dataset::write::{self, ExportOptions, ExportOutcome};
use crate::dataset::{self, Filter, HistoryMode, HistoryQuery, Labels, RunSource};
use crate::exit::{Error, Result};
use crate::pipeline::plan::{ExportPlan, FloorPlan, StepsPlan};
use crate::report::fmt_int;
use crate::trace::Trace;
use crate::wire::baseline::Baseline;
use crate::wire::gate::Comparison;
use crate::wire::steps::StepsReport;
use crate::wire::trace::SourceFormat;

/// `source_format` as baselines and runs record it.
pub(crate) fn source_format_name(f: SourceFormat) -> &'static str {
    match f {
        SourceFormat::Nsys => "nsys-sqlite",
        SourceFormat::Kineto => "kineto",
        SourceFormat::Rocpd => "rocpd",
    }
}

/// What `export` needs from a loaded trace besides its steps.
pub(crate) fn run_source(trace: &Trace, floor: &FloorPlan) -> RunSource {
    let report_gpu = trace.devices.iter().find_map(|d| d.name.as_deref());
    RunSource {
        source_format: source_format_name(trace.meta.format).to_owned(),
        tool_version: trace.meta.tool_version.clone(),
        source_schema_version: trace.meta.schema_version.clone(),
        // The same GPU and model a baseline records, so gate --history can match them.
        gpu_name: floor.gpu_label(report_gpu),
        model: floor.model_label(),
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
/// costs as much as a fair part of reading it); after it at one thread (`--threads 1`
/// promises no thread beyond the command's own).
pub(crate) fn with_report_hash<T>(
    path: &Path,
    threads: usize,
    work: impl FnOnce() -> Result<T>,
) -> Result<(T, String)> {
    if threads == 1 {
        let out = work()?;
        return Ok((out, write::report_sha256(path)?));
    }
    std::thread::scope(|s| {
        let h = s.spawn(|| write::report_sha256(path));
        let out = work();
        let sha = h
            .join()
            .map_err(|_| Error::internal("the report hashing thread panicked"))?;
        Ok((out?, sha?))
    })
}

/// A run found by `baseline record --export` or `gate --export`, to append once the
/// command's own work is done (a gated run is never part of its own history).
#[derive(Debug, Clone)]
pub struct PendingExport {
    pub dataset: PathBuf,
    pub report: PathBuf,
    pub sha256: String,
    pub labels: Labels,
    pub source: RunSource,
    pub steps: StepsReport,
    pub options: ExportOptions,
}

/// What appending a pending run did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Appended {
    Exported {
        run_id: String,
        dataset: PathBuf,
        steps: usize,
        step_kernels: usize,
        /// What the export repaired on the way (leftovers of an interrupted export).
        notes: Vec<String>,
    },
    /// The run was there already: not added again (not an error for these commands).
    AlreadyThere { run_id: String, dataset: PathBuf },
}

impl fmt::Display for Appended {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Appended::Exported {
                run_id,
                dataset,
                steps,
                step_kernels,
                notes,
            } => write!(
                f,
                "{}exported run {run_id} to {} ({} steps, {} step-kernel rows)",
                notes
                    .iter()
                    .map(|n| format!("stepgate: {n}\n"))
                    .collect::<String>(),
                dataset.display(),
                fmt_int(*steps as i64),
                fmt_int(*step_kernels as i64)
            ),
            Appended::AlreadyThere { run_id, dataset } => write!(
                f,
                "run {run_id} is already in {}: not added again",
                dataset.display()
            ),
        }
    }
}

impl PendingExport {
    /// Append the run; one already in the dataset is a note, not an error.
    pub fn append(&self) -> Result<Appended> {
        let id = write::run_id(&self.sha256, &self.labels);
        match write::export_run(
            &self.dataset,
            &self.report,
            &self.sha256,
            &self.labels,
            &self.source,
            &self.steps,
            &self.options,
        ) {
            Ok(o) => Ok(Appended::Exported {
                notes: o.notes.clone(),
                steps: rows(&o, "steps"),
                step_kernels: rows(&o, "step_kernels"),
                run_id: o.run_id,
                dataset: self.dataset.clone(),
            }),
            Err(_) if write::run_exists(&self.dataset, &self.options.store, &id) => {
                Ok(Appended::AlreadyThere {
                    run_id: id,
                    dataset: self.dataset.clone(),
                })
            }
            Err(e) => Err(e),
        }
    }
}

/// Rows one export wrote to `table`.
fn rows(o: &ExportOutcome, table: &str) -> usize {
    o.rows
        .iter()
        .find(|(t, _)| *t == table)
        .map_or(0, |(_, n)| *n)
}

/// `export`: load a report, find its steps and append them as one run; `replace` replaces
/// a run already there instead of refusing it.
pub fn export(
    report: &Path,
    plan: &StepsPlan,
    to: &ExportPlan,
    replace: bool,
) -> Result<ExportOutcome> {
    let ((steps, src), sha) = with_report_hash(report, plan.find.workers, || {
        let trace = crate::pipeline::steps::load(report, plan)?;
        let steps = crate::pipeline::steps::run(&trace, plan)?.report;
        Ok((steps, run_source(&trace, &plan.floor)))
    })?;
    if steps.steps.is_empty() {
        return Err(Error::input(format!(
            "{}: no steps were found (method {}): check --steps and --kind",
            report.display(),
            steps.method.method_str()
        )));
    }
    let options = ExportOptions {
        replace,
        store: to.store.clone(),
    };
    write::export_run(
        &to.dataset,
        report,
        &sha,
        &to.labels,
        &src,
        &steps,
        &options,
    )
}

/// `gate --history`: which runs of the dataset make the baseline.
#[derive(Debug, Clone)]
pub struct HistoryPlan {
    pub dataset: PathBuf,
    pub filter: Filter,
    /// The newest this many matching runs (at least 1).
    pub last: usize,
    pub mode: HistoryMode,
    /// Fewer matching runs than this: inconclusive.
    pub min_runs: usize,
    /// How a remote dataset is reached.
    pub store: crate::store::StoreConfig,
}

/// The baseline from the dataset for this candidate: runs on its GPU, priced for its model,
/// never the candidate's own earlier export (`candidate`: its run id and report hash).
/// The runs' steps are read through the policy's metric table, and their class floors and
/// excess only where the policy gates a class excess.
pub(crate) fn history_side(
    plan: &HistoryPlan,
    cand: &Baseline,
    candidate: Option<dataset::Candidate>,
    policy: &crate::baseline::Policy,
) -> Result<History> {
    let q = HistoryQuery {
        filter: plan.filter.clone(),
        last: plan.last.max(1),
        mode: plan.mode,
        min_runs: plan.min_runs,
        gpu: cand.meta.gpu_name.clone(),
        model: cand.meta.model.clone(),
        candidate,
        classes: policy.gates_class_excess(),
        metrics: policy.table.clone(),
        store: plan.store.clone(),
    };
    let mut h = dataset::history_baseline(&plan.dataset, &q)?;
    // The candidate's own run was accepted: the reviewer made it the reference of its
    // metrics, so those are measured against the candidate itself (a re-run of the
    // accepted pull request passes them) and the others against the history.
    if let Some(own) = &h.accepts_candidate {
        if !h.too_few {
            dataset::reference::merge_reference(
                &mut h.baseline.samples.groups,
                &cand.samples.groups,
                own.metrics.as_deref(),
            );
        }
    }
    Ok(h)
}

/// Put the note of the runs the history side was built from first among the warnings, and
/// the runs it left out (damaged rows, the candidate's own export) after them.
pub(crate) fn note_history(cmp: &mut Comparison, h: &History) {
    cmp.warnings.insert(0, h.note.clone());
    cmp.warnings.extend(h.warnings.iter().cloned());
}
