//! A report's steps, complete: found, kept by kind, attributed against their floors, with
//! the launch cost, the shape counts and the floor's basis set. What `steps`, `analyze`,
//! `baseline`, `gate`, `diff` and `export` all read, so they attribute alike.

use std::path::Path;

use crate::attribution;
use crate::exit::Result;
use crate::operating_point;
use crate::operating_point::tokens::StepCounts;
use crate::pipeline::plan::StepsPlan;
use crate::pipeline::pricing::Pricing;
use crate::timing::steps::{self, Found};
use crate::trace::Trace;
use crate::wire::steps::{Step, StepKind, StepsReport};

/// The complete steps of one report and the pricing they were attributed with.
#[derive(Debug, Clone)]
pub struct StepsRun {
    pub report: StepsReport,
    /// The model and GPU the floors were priced on (the basis of the `floor:` note), or
    /// None without a model.
    pub pricing: Option<Pricing>,
}

/// Load a report with what the plan's step method needs.
pub fn load(path: &Path, plan: &StepsPlan) -> Result<Trace> {
    crate::source::load_with(path, &plan.load_options())
}

/// A second read of the report with the launch grids and input shapes (the first read
/// leaves those columns out), where the steps need it: for the batch of unnamed decodes
/// when a floor is priced without `--batch` (`operating_point::batch`), or for the token
/// and request counts (`operating_point::tokens`) when the trace names a kernel whose grid
/// counts them and a step's kind is unknown, a model is priced or `--batch` is checked. A trace that
/// did not come from a file on disk is not read again.
fn evidence(trace: &Trace, plan: &StepsPlan, steps: &[Step]) -> Result<Option<Trace>> {
    let path = Path::new(&trace.meta.path);
    let for_batch = plan.infers_batch() && steps.iter().any(operating_point::batch::wants_batch);
    let unknown = steps
        .iter()
        .any(|s| s.kind == StepKind::Unknown && s.wall_ns.is_some());
    let for_counts = (unknown || plan.floor.batch.is_some() || plan.floor.model.is_some())
        && operating_point::tokens::trace_has_counted_kernels(trace);
    if !(for_batch || for_counts) || !path.exists() {
        return Ok(None);
    }
    crate::source::load_with(path, &plan.batch_evidence_options()).map(Some)
}

/// The capture's Python frames of at least `min_ns`, for the frame a long stall sits in:
/// a second load, only where the format records frames and this capture did (it holds a
/// step function's frame, so it was recorded with stacks).
fn python_frames(trace: &Trace, min_ns: i64) -> Result<Option<Trace>> {
    let path = Path::new(&trace.meta.path);
    let recorded = trace.meta.format.capabilities().python_frames
        && crate::trace::u32s(&trace.ranges, crate::trace::col::KIND)?
            .contains(&(crate::trace::RangeKind::PythonStack as u32));
    if !recorded || !path.exists() {
        return Ok(None);
    }
    crate::source::load_with(path, &crate::source::LoadOptions::python_frames(min_ns)).map(Some)
}

/// The batch of unnamed decode steps from the capture's launch grids and input shapes,
/// else the tokens their KV-cache writes count, when a floor is priced without `--batch`.
fn infer_batches(
    evidence: Option<&Trace>,
    counts: Option<&[StepCounts]>,
    plan: &StepsPlan,
    found: &mut Found,
) -> Result<()> {
    if !plan.infers_batch() || !found.steps.iter().any(operating_point::batch::wants_batch) {
        return Ok(());
    }
    let Found { steps, meta, .. } = found;
    if let Some(ev) = evidence {
        operating_point::batch::infer(ev, steps, &mut meta.warnings)?;
    }
    if let Some(c) = counts {
        operating_point::batch_from_tokens(steps, c, &mut meta.warnings);
    }
    Ok(())
}

/// Find, keep, price and attribute the steps of a loaded trace. The operating point (TP,
/// PP, GPU, batch, context, each step's kind where no marker says it) is read from the
/// capture under the plan's flags first, so `--kind` keeps inferred kinds and the floor
/// prices what the capture ran.
pub fn run(trace: &Trace, plan: &StepsPlan) -> Result<StepsRun> {
    // The working state is the steps as found (not the wire document): filtered, given
    // their kinds, batches and operating point, then made into the report once.
    let mut found = steps::find(trace, &plan.find, &plan.categories)?;
    if let Some(d) = plan.device {
        found.keep_device(d);
    }
    let ev = evidence(trace, plan, &found.steps)?;
    crate::phases::mark("steps: evidence read");
    let counts = match &ev {
        Some(t) => Some(operating_point::tokens::read(t, &found.steps)?),
        None => None,
    };
    let point =
        operating_point::resolve(trace, &mut found, &plan.floor.given(), counts.as_deref())?;
    // Kinds are inferred now: a step that became an unnamed decode may want its batch,
    // which a first look (before the kinds) could not tell.
    let ev = match ev {
        Some(t) => Some(t),
        None if plan.infers_batch()
            && found.steps.iter().any(operating_point::batch::wants_batch) =>
        {
            evidence(trace, plan, &found.steps)?
        }
        None => None,
    };
    let counts = match (counts, &ev) {
        (None, Some(t)) => Some(operating_point::tokens::read(t, &found.steps)?),
        (c, _) => c,
    };
    infer_batches(ev.as_ref(), counts.as_deref(), plan, &mut found)?;
    crate::phases::mark("steps: operating point and batches");
    if let Some(kind) = plan.kind {
        found.steps.retain(|s| s.kind_label().kind == kind);
    }
    let cost = attribution::for_vendor(plan.launch_cost.clone(), point.vendor.as_deref());
    let profiler = attribution::kernel_profiler(point.vendor.as_deref());
    let pricing = Pricing::resolve(&plan.floor, &point)?;
    let a = match &pricing {
        Some(p) => p.with_pricer(|pr| {
            attribution::attribute_priced(&found.steps, Some(pr), &cost, profiler)
        }),
        None => attribution::attribute_priced(&found.steps, None, &cost, profiler),
    };
    // The document, built once from the final steps (its summary and median step after
    // every filter and inferred kind), joined to their attributions.
    let mut r = StepsReport {
        tool: Some(crate::wire::meta::Tool::current()),
        source: Some(crate::wire::meta::SourceInfo::from(&trace.meta)),
        operating_point: Some(point.clone()),
        ..found.into_report()
    }
    .join(a)?;
    crate::phases::mark("steps: priced and joined");
    r.class_spread = attribution::spread::by_group(&r.steps);
    let geometry = pricing.as_ref().map(|p| attribution::layers::Geometry {
        model: &p.model,
        tp: p.opts.tp,
        pp: p.opts.pp,
        roof_bytes_per_s: p.gpu.hbm_bytes_per_s,
        routing: p.opts.moe_routing,
    });
    let tokens = |s: &crate::wire::steps::Step| {
        pricing
            .as_ref()
            .and_then(|p| p.composition_of(s))
            .map(|c| c.sq as f64)
    };
    let frames = |min_ns| python_frames(trace, min_ns);
    attribution::detail::detail(
        trace,
        &mut r,
        &plan.categories,
        geometry.as_ref(),
        &tokens,
        &frames,
    )?;
    crate::phases::mark("steps: detail");
    r.medians = Some(attribution::medians::run_medians(&r.steps));
    if let Some(p) = &pricing {
        r.notes.push(format!("floor: {}", p.basis));
        let notes = attribution::missing_floor_notes(&r.steps, &point);
        r.notes.extend(notes);
    }
    Ok(StepsRun { report: r, pricing })
}
