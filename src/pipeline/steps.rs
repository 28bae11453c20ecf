//! A report's steps, complete: found, kept by kind, attributed against their floors, with
//! the launch cost, the shape counts and the floor's basis set. What `steps`, `analyze`,
//! `baseline`, `gate`, `diff` and `export` all read, so they attribute alike.

use std::path::Path;

use crate::attribution;
use crate::exit::{Error, Result};
use crate::operating_point;
use crate::operating_point::tokens::StepCounts;
use crate::pipeline::plan::StepsPlan;
use crate::pipeline::pricing::Pricing;
use crate::timing::steps::{self, Found, Stages};
use crate::trace::Trace;
use crate::wire::attribution::{Attributions, OperatingPoint, StepAttribution};
use crate::wire::meta::{SourceInfo, Tool};
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
fn python_frames(trace: &Trace, plan: &StepsPlan, min_ns: i64) -> Result<Option<Trace>> {
    let path = Path::new(&trace.meta.path);
    let recorded = trace.meta.format.capabilities().python_frames
        && crate::trace::u32s(&trace.ranges, crate::trace::col::KIND)?
            .contains(&(crate::trace::RangeKind::PythonStack as u32));
    if !recorded || !path.exists() {
        return Ok(None);
    }
    crate::source::load_with(path, &plan.python_frames_options(min_ns)).map(Some)
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
    run_as(trace, plan, Header::Own)
}

/// [`run`] for a report nested in a document that says once at its top which stepgate
/// read which report (`analyze`): the report carries no `tool` and `source` of its own.
pub(crate) fn run_nested(trace: &Trace, plan: &StepsPlan) -> Result<StepsRun> {
    run_as(trace, plan, Header::Nested)
}

/// Whether the report says which stepgate read which report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Header {
    Own,
    Nested,
}

/// The steps as step finding leaves them, kept by `--device` and `--kind`, with their
/// operating point, inferred kinds and batches: the steps every later stage reads.
fn prepared(trace: &Trace, plan: &StepsPlan) -> Result<(Found, OperatingPoint)> {
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
    let point = operating_point::resolve(
        trace,
        &mut found,
        &plan.floor.given(),
        counts.as_deref(),
        &plan.find,
    )?;
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
    Ok((found, point))
}

/// Each stage returns a value computed from the final steps; the report is built from
/// them once, at the end ([`Found::into_report`]). The verdict takes the class spread and
/// the detailed groups as arguments, so it cannot be decided before them.
fn run_as(trace: &Trace, plan: &StepsPlan, header: Header) -> Result<StepsRun> {
    let (found, point) = prepared(trace, plan)?;
    let cost = attribution::for_vendor(plan.launch_cost.clone(), point.vendor.as_deref());
    let profiler = attribution::kernel_profiler(point.vendor.as_deref());
    let pricing = Pricing::resolve(&plan.floor, &point)?;
    let Attributions {
        steps: each,
        shapes,
        launch_cost,
        groups,
    } = match &pricing {
        Some(p) => p.with_pricer(|pr| {
            attribution::attribute_priced(&found.steps, Some(pr), &cost, profiler)
        }),
        None => attribution::attribute_priced(&found.steps, None, &cost, profiler),
    };
    // What the GPU's DRAM counters measured over each step belongs to its attribution.
    let dram = attribution::detail::step_dram(trace, &found.steps);
    let each = each
        .into_iter()
        .zip(dram)
        .map(|(a, d)| StepAttribution {
            measured_dram_of_peak: d,
            ..a
        })
        .collect();
    let steps = attach(found.steps, each)?;
    crate::phases::mark("steps: priced and joined");
    let class_spread = attribution::spread::by_group(&steps);
    let geometry = pricing.as_ref().map(|p| attribution::layers::Geometry {
        model: &p.model,
        tp: p.opts.tp,
        pp: p.opts.pp,
        roof_bytes_per_s: p.gpu.hbm_bytes_per_s,
        routing: p.opts.moe_routing,
    });
    let tokens = |s: &Step| {
        pricing
            .as_ref()
            .and_then(|p| p.composition_of(s))
            .map(|c| c.sq as f64)
    };
    let groups = attribution::detail::groups(
        trace,
        &steps,
        groups,
        &plan.categories,
        geometry.as_ref(),
        &tokens,
    )?;
    let frames = |min_ns| python_frames(trace, plan, min_ns);
    let verdict = attribution::verdict::decide(
        trace,
        &attribution::verdict::Attributed {
            steps: &steps,
            shapes: &shapes,
            groups: &groups,
            spread: &class_spread,
            vendor: point.vendor.as_deref(),
        },
        &frames,
        plan.find.workers,
    )?;
    crate::phases::mark("steps: detail");
    let medians = attribution::medians::run_medians(&steps);
    let notes = match &pricing {
        Some(p) => std::iter::once(format!("floor: {}", p.basis))
            .chain(attribution::missing_floor_notes(&steps, &point))
            .collect(),
        None => Vec::new(),
    };
    let (tool, source) = match header {
        Header::Own => (Some(Tool::current()), Some(SourceInfo::from(&trace.meta))),
        Header::Nested => (None, None),
    };
    let report = Found { steps, ..found }.into_report(Stages {
        tool,
        source,
        operating_point: Some(point),
        launch_cost: Some(launch_cost),
        shapes,
        groups,
        class_spread,
        verdict,
        medians: Some(medians),
        notes,
    });
    Ok(StepsRun { report, pricing })
}

/// The one place steps and their attributions meet: step finding leaves every
/// `attribution` empty, attribution returns one per step computed from the same steps
/// (same order), and this puts each on its own step.
///
/// Attributions of other steps (a different count) are a bug in the caller, refused as an
/// internal error rather than joined to the wrong steps.
pub fn attach(steps: Vec<Step>, each: Vec<StepAttribution>) -> Result<Vec<Step>> {
    if each.len() != steps.len() {
        return Err(Error::internal(format!(
            "{} attributions for {} steps: attributions must be computed from the report's own steps",
            each.len(),
            steps.len()
        )));
    }
    Ok(steps
        .into_iter()
        .zip(each)
        .map(|(s, a)| Step {
            attribution: Some(a),
            ..s
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::attach;
    use crate::wire::attribution::Shape;
    use crate::wire::steps::tests::{attribution, step};

    #[test]
    fn attach_puts_each_attribution_on_its_own_step() {
        // Steps told apart by their launch count; each attribution carries the same count,
        // so a shifted or reversed join shows.
        let steps = attach(
            vec![step(0, 7), step(1, 3)],
            vec![
                attribution(7, Shape::LaunchBound),
                attribution(3, Shape::HostStall),
            ],
        )
        .unwrap();
        for s in &steps {
            let a = s.attribution.as_ref().unwrap();
            assert_eq!(a.launch.launches, s.launches, "step {}", s.index);
        }
        let shapes: Vec<Shape> = steps
            .iter()
            .map(|s| s.attribution.as_ref().unwrap().shape)
            .collect();
        assert_eq!(shapes, [Shape::LaunchBound, Shape::HostStall]);
    }

    #[test]
    fn attach_refuses_attributions_of_other_steps() {
        let e = attach(
            vec![step(0, 1), step(1, 1)],
            vec![attribution(1, Shape::Undetermined)],
        )
        .unwrap_err();
        assert_eq!(e.exit_code(), crate::exit::INTERNAL);
        assert!(
            e.message.starts_with("1 attributions for 2 steps"),
            "{}",
            e.message
        );
    }
}
