//! Find the engine's steps and project each one onto the GPU.
//!
//! Three parts, one module each: `discover` picks host spans (or GPU groups) that are
//! steps, one sub-module per marker family, tried in order of how sure they are;
//! `project` turns a span into GPU work (busy, kernels, the tail launched after the
//! span); `assemble` orders steps into per-rank series and summarises them.
//!
//! nsys semantics: a step's GPU work is every op whose launching runtime/driver call
//! (joined on correlation id AND process, since ids repeat across processes) starts
//! inside the step's host range on the same thread. Under node-mode CUDA-graph tracing
//! all kernels of a replay share the `cudaGraphLaunch` correlation id, so the join keeps
//! every op per id, never one. Graph-mode replays are opaque `[cuda graph N]` ops and
//! count as busy time like any other op.

mod assemble;
mod discover;
mod project;

use regex::Regex;

use crate::categories::Categorizer;
use crate::exit::Result;
use crate::trace::Trace;

pub use crate::wire::steps::{
    AlignedStep, FoundBy, HostCall, KindSummary, OutsideSteps, Series, ShapeCount, Spread, Step,
    StepKernel, StepMethod, StepsReport,
};
pub use assemble::{percentile, summarize};

/// How steps are found (`--steps`).
#[derive(Debug, Clone)]
pub enum StepSource {
    /// Markers, else scheduler scopes, else python-stack step functions, else host sync
    /// points, else grouped CUDA-graph launches, else idle gaps: the first that yields.
    Auto,
    /// Engine step markers only (vLLM `execute_…`, SGLang `step[…]`, TensorRT-LLM
    /// `_forward_step`, `ProfilerStep#N`).
    Marker,
    /// Scheduler scopes only (SGLang `scheduler.run_batch`, vLLM custom scopes).
    Scheduler,
    /// Python-stack step functions only (vLLM `execute_model`, SGLang `run_batch` …).
    Python,
    /// Recurring host sync points on the busiest launching thread.
    Sync,
    /// Any host range whose name matches.
    Regex(Regex),
    /// CUDA-graph launches grouped: back-to-back launches with no host sync between
    /// them are one step.
    Graphs,
    /// Split each device's ops at idle gaps longer than the threshold.
    Gaps,
}

/// Step finding options.
#[derive(Debug, Clone)]
pub struct StepOptions {
    pub source: StepSource,
    /// Idle gap that separates two steps in `gaps` mode.
    pub gap_threshold_ns: i64,
    /// Kernel rows kept per step in the output (all are kept in memory for baselines).
    pub top_kernels: usize,
}

impl Default for StepOptions {
    fn default() -> Self {
        StepOptions {
            source: StepSource::Auto,
            gap_threshold_ns: 100_000,
            top_kernels: 5,
        }
    }
}

/// Find and project every step in the trace. Every step's `attribution` is empty and the
/// report's `shapes`/`launch_cost` are unset: step finding knows nothing of attribution.
/// `crate::attribution::attribute_all` prices the steps and
/// [`StepsReport::join`] puts the two together.
pub fn find_steps(trace: &Trace, opts: &StepOptions, cats: &Categorizer) -> Result<StepsReport> {
    let ix = project::Index::new(trace)?;
    crate::phases::mark("steps: index");
    let found = discover::discover(&ix, opts)?;
    crate::phases::mark("steps: discovery");
    let mut p = project::Projector::new(&ix, cats);
    let raws = p.project_all(&found);
    crate::phases::mark("steps: projection");
    let mut notes = found.notes;
    if raws.iter().any(|r| r.m.graph_replays > 0) {
        notes.push(
            "CUDA graphs were traced as opaque replays ([cuda graph N]): recapture with \
             nsys --cuda-graph-trace=node for per-kernel detail"
                .to_owned(),
        );
    }
    if p.by_window > 0 {
        notes.push(format!(
            "{} op(s) have no launching call in the trace: attributed to the step whose GPU \
             annotation (else host span) window on the same device contains their start \
             (time-window fallback)",
            p.by_window
        ));
    }
    let mut warnings = found.warnings;
    warnings.extend(trace.meta.warnings.iter().cloned());
    Ok(assemble::assemble(
        &ix,
        assemble::Meta {
            method: found.method,
            found_by: found.found_by,
            hint: found.hint,
            engine: found.detail,
            notes,
            warnings,
        },
        raws,
        &p.claimed,
        opts,
    ))
}
