//! Find the engine's steps and project each one onto the GPU.
//!
//! Three stages, one module each: `discover` picks host spans (or GPU groups) that are
//! steps, one sub-module per family of step evidence, tried in order of how sure they
//! are, and hands them over as `candidate`s; `project` turns a span into GPU work (the
//! ops launched in it and in its tail, `measure`d as busy time and kernel rows);
//! `assemble` orders steps into per-rank series and summarises them. `index` holds the
//! lookups built once per trace that the stages share; `options` the `--steps` source.
//!
//! nsys semantics: a step's GPU work is every op whose launching runtime/driver call
//! (joined on correlation id AND process, since ids repeat across processes) starts
//! inside the step's host range on the same thread. Under node-mode CUDA-graph tracing
//! all kernels of a replay share the `cudaGraphLaunch` correlation id, so the join keeps
//! every op per id, never one. Graph-mode replays are opaque `[cuda graph N]` ops and
//! count as busy time like any other op.

mod assemble;
mod candidate;
mod discover;
mod found;
mod index;
mod measure;
mod nvtxproj;
mod options;
mod project;
mod summary;

use crate::categories::Categorizer;
use crate::exit::Result;
use crate::trace::Trace;
use crate::wire::steps::StepsReport;

pub use found::{Found, Meta, Stages};
pub use nvtxproj::{project_ranges, RangeProjection};
pub use options::{Extent, StepOptions, StepSource, Threads};
pub use summary::{median_step, percentile, summarize};

/// Find and project every step in the trace: the steps as step finding leaves them
/// ([`Found`]), which the pipeline filters and gives their operating point before it
/// builds the wire document ([`Found::into_report`]). Steps carry no attribution: step
/// finding knows nothing of it; `crate::attribution::attribute_priced` prices the steps
/// and `crate::pipeline::steps::attach` puts the two together.
pub fn find(trace: &Trace, opts: &StepOptions, cats: &Categorizer) -> Result<Found> {
    let ix = index::Index::new(trace, opts.workers)?;
    crate::phases::mark("steps: index");
    let found = discover::discover(&ix, opts)?;
    crate::phases::mark("steps: discovery");
    let mut p = project::Projector::new(&ix, cats);
    let raws = p.project_all(&found)?;
    let (claimed, by_window) = (std::mem::take(&mut p.claimed), p.by_window);
    drop(p);
    // The lookups (a u32 per op and two per call) are done with: freed before the
    // per-series sums, which hold a u32 per op of their own.
    let ops = ix.into_ops();
    crate::phases::mark("steps: projection");
    let mut notes = found.notes;
    if raws.iter().any(|r| r.m.graph_replays > 0) {
        notes.push(
            "CUDA graphs were traced as opaque replays ([cuda graph N]): recapture with \
             nsys --cuda-graph-trace=node for per-kernel detail"
                .to_owned(),
        );
    }
    if by_window > 0 {
        notes.push(format!(
            "{} op(s) have no launching call in the trace: attributed to the step whose GPU \
             annotation (else host span) window on the same device contains their start \
             (time-window fallback)",
            by_window
        ));
    }
    let mut warnings = found.warnings;
    warnings.extend(trace.meta.warnings.iter().cloned());
    let found = assemble::assemble(
        trace,
        &ops,
        Meta {
            found_by: found.found_by,
            hint: found.hint,
            engine: found.detail,
            notes,
            warnings,
        },
        raws,
        &claimed,
        opts,
    )?;
    crate::phases::mark("steps: assembly");
    Ok(found)
}

/// [`find`] made into the wire document at once (no filter, no operating point): what a
/// caller that only reads the steps wants.
pub fn find_steps(trace: &Trace, opts: &StepOptions, cats: &Categorizer) -> Result<StepsReport> {
    find(trace, opts, cats).map(|f| f.into_report(Stages::default()))
}
