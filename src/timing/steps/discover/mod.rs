//! Step discovery: one sub-module per family of step evidence, each a [`Family`] (one fn
//! type from the trace index to candidate steps), tried in the one declared order of
//! [`FAMILIES`] (markers, scheduler scopes, python-stack step functions, recurring
//! annotation cycles, host sync points, grouped CUDA-graph launches, idle gaps); the first that yields steps wins unless
//! `--steps` names one. The `--steps` method names and the auto order both come from
//! that slice.

mod cycle;
mod describe;
mod gaps;
mod graphs;
mod hint;
mod hostcalls;
mod marker;
mod python;
mod ranges;
mod recurring;
mod scheduler;
mod sync;
mod user;

use crate::exit::{Error, Result};

use super::candidate::{Candidate, Found, GapGroup, Items};
use super::index::Index;
use super::{StepOptions, StepSource};
use crate::wire::steps::FoundBy;

use hint::hinted;
use ranges::{host_ranges, outermost};

/// One family of step evidence.
pub struct Family {
    /// Its `--steps` method name.
    pub name: &'static str,
    /// The source `--steps NAME` parses to.
    pub source: StepSource,
    /// A regex over range names: the NVTX ranges an nsys read must keep for this family
    /// (`None`: it reads no range).
    pub ranges: Option<&'static str>,
    /// The search: `None` when the trace holds no such evidence.
    pub find: fn(&Index<'_>, &StepOptions) -> Result<Option<Found>>,
    /// What `--steps NAME` says when the search finds nothing.
    pub none: &'static str,
}

/// Every family, most certain first: the auto order, and the `--steps` method names.
pub(crate) static FAMILIES: [Family; 7] = [
    Family {
        name: "marker",
        source: StepSource::Marker,
        ranges: Some(marker::RANGES),
        find: marker::find,
        none: "--steps marker: no engine step markers (vLLM execute_…, SGLang step[…], TensorRT-LLM _forward_step, ProfilerStep#N) in this report; try --steps auto",
    },
    Family {
        name: "scheduler",
        source: StepSource::Scheduler,
        ranges: Some(scheduler::RANGES),
        find: scheduler::find,
        none: "--steps scheduler: no scheduler.run_batch or gpu_model_runner: forward ranges in this report; try --steps auto",
    },
    Family {
        name: "python",
        source: StepSource::Python,
        ranges: None,
        find: python::find,
        none: "--steps python: no vLLM execute_model or SGLang run_batch python-stack spans in this trace (they need a torch-profiler capture with with_stack=True); try --steps auto",
    },
    Family {
        name: "recurring",
        source: StepSource::Recurring,
        ranges: Some(recurring::RANGES),
        find: recurring::find,
        none: "--steps recurring: no annotations recur in a stable cycle that launches GPU work (nsys: only PyTorch's Optimizer.zero_grad#, Optimizer.step# and enumerate(DataLoader)# ranges are read); try --steps auto, or --steps REGEX --steps-extent cycle",
    },
    Family {
        name: "sync",
        source: StepSource::Sync,
        ranges: None,
        find: sync::find,
        none: "--steps sync: no host synchronisation recurs with a stable period on the busiest launching thread; try --steps auto",
    },
    Family {
        name: "graphs",
        source: StepSource::Graphs,
        ranges: None,
        find: graphs::find,
        none: "no CUDA-graph launches in this report: use --steps auto, a regex, or gaps",
    },
    Family {
        name: "gaps",
        source: StepSource::Gaps,
        ranges: None,
        find: gaps::find,
        none: "no GPU activity to split at idle gaps",
    },
];

/// Run discovery as the options say.
pub(crate) fn discover(ix: &Index<'_>, opts: &StepOptions) -> Result<Found> {
    let forced = match &opts.source {
        StepSource::Regex(re) => return user::find(ix, re, opts),
        _ if opts.extent.is_some() || opts.threads.is_some() => {
            return Err(Error::input(
                "--steps-extent and --steps-threads apply to --steps REGEX only (the other methods choose their own extent and threads)",
            ));
        }
        StepSource::Auto => None,
        source => source.family(),
    };
    if let Some(fam) = forced {
        let f = (fam.find)(ix, opts)?.ok_or_else(|| Error::input(fam.none))?;
        return Ok(hinted(ix, f));
    }
    for (i, fam) in FAMILIES.iter().enumerate() {
        let Some(mut f) = (fam.find)(ix, opts)? else {
            continue;
        };
        if i == 0 {
            return Ok(f);
        }
        let mut notes = vec![no_marker_note(ix)];
        if f.found_by == FoundBy::Gaps {
            notes.push(format!(
                "steps found by splitting GPU activity at idle gaps over {} µs",
                opts.gap_threshold_ns as f64 / 1e3
            ));
        }
        notes.append(&mut f.notes);
        f.notes = notes;
        return Ok(hinted(ix, f));
    }
    Err(Error::input(
        "no steps found: the report holds no GPU activity to split into steps",
    ))
}

/// What auto says when the first family, the engine markers, found none.
fn no_marker_note(ix: &Index<'_>) -> String {
    if let Some(api) = ix.trace.meta.format.capabilities().marker_api {
        format!("no engine step markers (vLLM execute_…, SGLang step[…], TensorRT-LLM _forward_step) in this report's {api} ranges")
    } else {
        "no vLLM `execute_…`, SGLang `step[…]` or ProfilerStep#N annotations in this trace"
            .to_owned()
    }
}
