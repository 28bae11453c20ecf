//! What discovery hands projection: host spans chosen as steps (with what else is known
//! about each: its marker's composition, a made-up label, a guessed kind, the threads to
//! project), or groups of ops for the idle-gap fallback, and how sure the method is.

use crate::timing::stepname;
use crate::wire::steps::{FoundBy, StepKind};

/// A host span chosen as a step, before projection.
#[derive(Debug, Clone)]
pub struct Candidate {
    pub pid: i64,
    pub tid: i64,
    pub start: i64,
    pub end: i64,
    /// The range's interned name (for the GPU-annotation lookup), when it is a range.
    pub name_id: Option<u32>,
    /// The named NVTX domain the range is in (None: the default domain, or no range).
    pub domain: Option<String>,
    /// A made-up name (graph groups, sync segments); else the range name is used.
    pub label: Option<String>,
    pub parsed: Option<stepname::ParsedStep>,
    /// Project this one call only (a single CUDA-graph launch step).
    pub exact_call: Option<u32>,
    pub kind_guess: Option<StepKind>,
    /// Project the calls of every thread of the process inside the span, not only the
    /// span's own thread: `ProfilerStep#N` spans a whole process's iteration (autograd
    /// runs backward on its own thread).
    pub all_threads: bool,
    /// How this one step was found, where it differs from the report's method (a sync
    /// segment that replays CUDA graphs).
    pub found_by: Option<FoundBy>,
    /// No tail: the spans tile the thread's time (sync segments), so work launched after
    /// the last one belongs to a step the capture cut, outside steps.
    pub no_tail: bool,
}

impl Candidate {
    /// A host span with nothing else known about it yet (the fields below default off).
    pub(super) fn span(pid: i64, tid: i64, start: i64, end: i64) -> Self {
        Candidate {
            pid,
            tid,
            start,
            end,
            name_id: None,
            domain: None,
            label: None,
            parsed: None,
            exact_call: None,
            kind_guess: None,
            all_threads: false,
            found_by: None,
            no_tail: false,
        }
    }

    pub(super) fn range(pid: i64, tid: i64, start: i64, end: i64, name_id: u32) -> Self {
        Candidate {
            name_id: Some(name_id),
            ..Candidate::span(pid, tid, start, end)
        }
    }
}

/// Groups of ops that are steps without a host span (idle-gap splits).
#[derive(Debug, Clone)]
pub(crate) struct GapGroup {
    pub pid: i64,
    pub device: i64,
    pub ops: Vec<u32>,
    pub launches: u64,
    pub launch_host_ns: i64,
}

pub(crate) enum Items {
    Spans(Vec<Candidate>),
    Groups(Vec<GapGroup>),
}

/// What discovery found and how sure it is.
pub struct Found {
    pub found_by: FoundBy,
    pub hint: Option<String>,
    /// The engine (and version range) the winning family identifies, for the headline.
    pub detail: Option<&'static str>,
    pub notes: Vec<String>,
    pub warnings: Vec<String>,
    pub items: Items,
}

impl Found {
    pub(super) fn spans(found_by: FoundBy, c: Vec<Candidate>) -> Self {
        Found {
            found_by,
            hint: None,
            detail: None,
            notes: Vec::new(),
            warnings: Vec::new(),
            items: Items::Spans(c),
        }
    }
}
