//! A report's steps, complete: found, kept by kind, attributed against their floors, with
//! the launch cost, the shape counts and the floor's basis set. What `steps`, `analyze`,
//! `baseline`, `gate`, `diff` and `export` all read, so they attribute alike.

use std::path::Path;

use crate::attribution::{self, FloorInput};
use crate::exit::Result;
use crate::pipeline::plan::StepsPlan;
use crate::pipeline::pricing::Pricing;
use crate::timing::steps::{self, Step, StepsReport};
use crate::trace::Trace;

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

/// Find, keep, price and attribute the steps of a loaded trace.
pub fn run(trace: &Trace, plan: &StepsPlan) -> Result<StepsRun> {
    let mut r = steps::find_steps(trace, &plan.find, &plan.categories)?;
    if let Some(kind) = plan.kind {
        r.steps.retain(|s| s.kind == kind);
        r.summary = steps::summarize(&r.steps);
        r.steps_without_gpu_work = r.steps.iter().filter(|s| s.wall_ns.is_none()).count();
    }
    let pricing = Pricing::resolve(&plan.floor, trace)?;
    let floor_of = |s: &Step| -> Option<FloorInput> { pricing.as_ref()?.floor_of(s) };
    let a = attribution::attribute_all(&r.steps, &floor_of, &plan.launch_cost);
    let mut r = r.join(a)?;
    r.tool = Some(crate::wire::meta::Tool::current());
    r.source = Some(crate::analysis::SourceInfo::from(&trace.meta));
    if let Some(p) = &pricing {
        r.notes.push(format!("floor: {}", p.basis));
        if let Some(note) = unpriced_note(&r) {
            r.notes.push(note);
        }
    }
    Ok(StepsRun { report: r, pricing })
}

/// Why steps with GPU work have no floor, when it is not already said: their names do not
/// carry ΣN_KV and no `--context` filled it.
fn unpriced_note(r: &StepsReport) -> Option<String> {
    let priced = r
        .steps
        .iter()
        .filter(|s| s.attribution.as_ref().is_some_and(|a| a.floor.is_some()))
        .count();
    let gpu_steps = r.steps.len() - r.steps_without_gpu_work;
    // Steps with context (prefill) requests but no prompt-token count cannot be priced by
    // --context (a decode KV length): asking for it would mislead. Those have their own
    // note from discovery (what the name lacks and which engine versions carry it).
    let prefill_without_tokens = r
        .steps
        .iter()
        .filter(|s| {
            s.wall_ns.is_some()
                && s.attribution.as_ref().is_none_or(|a| a.floor.is_none())
                && s.composition.as_ref().is_some_and(|c| {
                    c.context.requests.is_some_and(|n| n > 0) && c.context.sq.is_none()
                })
        })
        .count();
    let other = gpu_steps.checked_sub(priced + prefill_without_tokens)?;
    (other > 0).then(|| {
        format!(
            "{other} step(s) have no floor: their names do not carry ΣN_KV (pass --context, and --batch for unnamed steps)"
        )
    })
}
