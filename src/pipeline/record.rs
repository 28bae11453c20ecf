//! A baseline from a report (`baseline record`, and each report side of `gate` and
//! `diff`): its steps found and priced once, turned into per-group samples, with what the
//! floor was derived from recorded beside them.

use std::path::Path;

use crate::baseline::{load_side, samples_from_steps};
use crate::dataset::RunSource;
use crate::exit::{Error, Result};
use crate::pipeline::history::{run_source, with_report_hash, PendingExport};
use crate::pipeline::plan::{ExportPlan, StepsPlan};
use crate::pipeline::steps::StepsRun;
use crate::wire::baseline::{Baseline, BaselineMeta};
use crate::wire::steps::StepsReport;
use crate::wire::trace::SourceFormat;

/// A recorded report: the baseline, and the steps and source facts an export of the same
/// run writes (one load for both).
#[derive(Debug, Clone)]
pub struct Recorded {
    pub baseline: Baseline,
    pub steps: StepsReport,
    pub source: RunSource,
    /// Samples left out (a baseline file would refuse them), one line each, for the
    /// command to print.
    pub warnings: Vec<String>,
}

/// Load a report, find and price its steps, and turn them into a baseline. The loader's
/// warnings come first in `warnings` (a baseline has no place for them: the command
/// prints them, or the comparison carries them).
pub fn record(path: &Path, plan: &StepsPlan) -> Result<Recorded> {
    let trace = crate::pipeline::steps::load(path, plan)?;
    let StepsRun { report, pricing } = crate::pipeline::steps::run(&trace, plan)?;
    let source = run_source(&trace, &plan.floor);
    if report.steps.len() == report.steps_without_gpu_work {
        return Err(Error::input(format!(
            "{}: no steps with GPU work were found (method {}): check --steps and --kind",
            path.display(),
            report.method.method_str()
        )));
    }
    let meta = BaselineMeta {
        gpu_name: source.gpu_name.clone(),
        nsys_version: match trace.meta.format {
            SourceFormat::Nsys => trace.meta.tool_version.clone(),
            SourceFormat::Kineto | SourceFormat::Rocpd => None,
        },
        source_format: source.source_format.clone(),
        engine: None,
        step_kinds: Vec::new(),
        batch_compositions: Vec::new(),
        model: source.model.clone(),
        floor_inputs: pricing
            .map(|p| serde_json::json!({ "basis": p.basis.to_string(), "tp": p.basis.tp })),
        created_by: format!("stepgate {}", env!("CARGO_PKG_VERSION")),
        engine_version: match trace.meta.format {
            SourceFormat::Kineto => trace
                .meta
                .tool_version
                .as_deref()
                .and_then(crate::source::kineto::engine_version_in),
            SourceFormat::Nsys | SourceFormat::Rocpd => None,
        },
        ..BaselineMeta::default()
    };
    // Samples a baseline file would refuse are left out here too, each said once.
    let (baseline, left_out) = samples_from_steps(&report, meta);
    let mut warnings = trace.meta.warnings.clone();
    warnings.extend(left_out);
    Ok(Recorded {
        baseline,
        steps: report,
        source,
        warnings,
    })
}

/// [`record`], keeping the run to append to `to` (the report hashed meanwhile); with the
/// recording's warnings.
pub(crate) fn record_for_export(
    path: &Path,
    plan: &StepsPlan,
    to: &ExportPlan,
) -> Result<(Baseline, PendingExport, Vec<String>)> {
    let (r, sha256) = with_report_hash(path, plan.find.workers, || record(path, plan))?;
    let pending = PendingExport {
        dataset: to.dataset.clone(),
        report: path.to_path_buf(),
        sha256,
        labels: to.labels.clone(),
        options: crate::dataset::write::ExportOptions {
            replace: false,
            store: to.store.clone(),
        },
        source: r.source,
        steps: r.steps,
    };
    Ok((r.baseline, pending, r.warnings))
}

/// One side of a comparison: a baseline file as it is, a report recorded with the plan;
/// with the recording's warnings (none for a baseline file).
pub fn side(path: &Path, plan: &StepsPlan) -> Result<(Baseline, Vec<String>)> {
    let warnings = std::cell::RefCell::new(Vec::new());
    // `diff` takes no storage flags: a baseline URL is reached with the environment's
    // configuration.
    let b = load_side(path, &crate::store::StoreConfig::default(), &|p| {
        let r = record(p, plan)?;
        warnings.borrow_mut().extend(r.warnings);
        Ok(r.baseline)
    })?;
    Ok((b, warnings.into_inner()))
}
