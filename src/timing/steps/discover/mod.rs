//! Step discovery: one sub-module per marker family, each a function from the trace
//! index to candidate steps, tried in order of certainty (markers, scheduler scopes,
//! python-stack step functions, host sync points, grouped CUDA-graph launches, idle
//! gaps); the first that yields steps wins unless `--steps` names one.

mod gaps;
mod graphs;
mod marker;
mod python;
mod scheduler;
mod sync;

use crate::exit::{Error, Result};
use crate::timing::stepname::{self, StepKind};
use crate::trace::{RangeKind, SourceFormat};

use super::project::Index;
use super::{FoundBy, StepMethod, StepOptions, StepSource};

/// A host span chosen as a step, before projection.
#[derive(Debug, Clone)]
pub struct Candidate {
    pub pid: i64,
    pub tid: i64,
    pub start: i64,
    pub end: i64,
    /// The range's interned name (for the GPU-annotation lookup), when it is a range.
    pub name_id: Option<u32>,
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
            label: None,
            parsed: None,
            exact_call: None,
            kind_guess: None,
            all_threads: false,
            found_by: None,
            no_tail: false,
        }
    }

    fn range(pid: i64, tid: i64, start: i64, end: i64, name_id: u32) -> Self {
        Candidate {
            name_id: Some(name_id),
            ..Candidate::span(pid, tid, start, end)
        }
    }
}

/// Groups of ops that are steps without a host span (idle-gap splits).
#[derive(Debug, Clone)]
pub struct GapGroup {
    pub pid: i64,
    pub device: i64,
    pub ops: Vec<u32>,
    pub launches: u64,
    pub launch_host_ns: i64,
}

pub enum Items {
    Spans(Vec<Candidate>),
    Groups(Vec<GapGroup>),
}

/// What discovery found and how sure it is.
pub struct Found {
    pub method: StepMethod,
    pub found_by: FoundBy,
    pub hint: Option<String>,
    /// The engine (and version range) the winning family identifies, for the headline.
    pub detail: Option<&'static str>,
    pub notes: Vec<String>,
    pub warnings: Vec<String>,
    pub items: Items,
}

impl Found {
    fn spans(method: StepMethod, found_by: FoundBy, c: Vec<Candidate>) -> Self {
        Found {
            method,
            found_by,
            hint: None,
            detail: None,
            notes: Vec::new(),
            warnings: Vec::new(),
            items: Items::Spans(c),
        }
    }
}

/// What makes steps exact, for captures where stepgate had to guess.
fn exact_hint(ix: &Index<'_>, by: FoundBy, engine: Option<&str>) -> Option<String> {
    let nsys = ix.trace.meta.format == SourceFormat::Nsys;
    let vllm = if nsys {
        "vLLM ≥ 0.13 with --profiler-config.profiler=cuda (0.12: VLLM_TORCH_CUDA_PROFILE=1) writes execute_… NVTX step ranges"
    } else {
        "vLLM ≥ 0.14 with the torch profiler writes execute_… step annotations (0.11.1–0.13: execute_new_N_cached_M)"
    };
    let sglang = if nsys {
        "SGLang: SGLANG_ENABLE_NVTX_SCHEDULER=1 writes scheduler.run_batch NVTX ranges (its step[…] span is never NVTX)"
    } else {
        "SGLang ≥ 0.5.15 with the torch profiler writes step[…] annotations"
    };
    match (by, engine) {
        (FoundBy::Marker | FoundBy::Regex, _) => None,
        (FoundBy::Scheduler, Some("sglang")) => Some(if nsys {
            "SGLang's step[…] span (batch composition) exists only in torch-profiler captures (SGLang ≥ 0.5.15)".to_owned()
        } else {
            "SGLang ≥ 0.5.15 writes step[…] annotations with the batch composition".to_owned()
        }),
        (_, Some("vllm")) => Some(vllm.to_owned()),
        (_, Some("sglang")) => Some(sglang.to_owned()),
        _ => Some(format!(
            "{vllm}; {sglang}; TensorRT-LLM writes _forward_step NVTX ranges under nsys; plain PyTorch: a profiler schedule gives ProfilerStep#N"
        )),
    }
}

/// Host ranges (no GPU annotations, no python-stack spans) whose name passes `keep`.
fn host_ranges(ix: &Index<'_>, mut keep: impl FnMut(&str) -> bool) -> Result<Vec<Candidate>> {
    let trace = ix.trace;
    let r = trace.ranges_view()?;
    let mut out = Vec::new();
    for i in 0..r.start_ns.len() {
        if r.kind[i] == RangeKind::GpuAnnotation as u32
            || r.kind[i] == RangeKind::PythonStack as u32
        {
            continue;
        }
        if keep(trace.name(r.name_id[i])) {
            out.push(Candidate::range(
                r.pid[i],
                r.tid[i],
                r.start_ns[i],
                r.end_ns[i],
                r.name_id[i],
            ));
        }
    }
    Ok(out)
}

/// Host ranges that are steps: the outermost match per thread; an enclosed parsable
/// span lends its name and composition to the outer one.
pub fn outermost(mut cands: Vec<Candidate>) -> Vec<Candidate> {
    cands.sort_by_key(|c| (c.pid, c.tid, c.start, std::cmp::Reverse(c.end)));
    let mut kept: Vec<Candidate> = Vec::new();
    let mut inner_named: Vec<bool> = Vec::new();
    for c in cands {
        let idx = kept.len().wrapping_sub(1);
        if let Some(last) = kept.last_mut() {
            if last.pid == c.pid && last.tid == c.tid && c.start >= last.start && c.end <= last.end
            {
                if !inner_named[idx] {
                    if let Some(inner) = c.parsed {
                        let merged = match &last.parsed {
                            Some(outer) => stepname::ParsedStep {
                                kind: inner.kind,
                                composition: stepname::merge_inner(
                                    &outer.composition,
                                    &inner.composition,
                                ),
                            },
                            None => inner,
                        };
                        last.parsed = Some(merged);
                        last.name_id = c.name_id;
                        last.label = c.label;
                        inner_named[idx] = true;
                    }
                }
                continue;
            }
        }
        kept.push(c);
        inner_named.push(false);
    }
    kept
}

/// Run discovery as the options say.
pub fn discover(ix: &Index<'_>, opts: &StepOptions) -> Result<Found> {
    let nsys = ix.trace.meta.format == SourceFormat::Nsys;
    match &opts.source {
        StepSource::Regex(re) => {
            let c = outermost(host_ranges(ix, |n| re.is_match(n))?);
            if c.is_empty() {
                return Err(Error::input(format!(
                    "no host range matches --steps {:?}; list range names with `stepgate analyze --format json` or try --steps auto",
                    re.as_str()
                )));
            }
            Ok(Found::spans(StepMethod::Regex, FoundBy::Regex, c))
        }
        StepSource::Marker => marker::find(ix)?.ok_or_else(|| {
            Error::input("--steps marker: no engine step markers (vLLM execute_…, SGLang step[…], TensorRT-LLM _forward_step, ProfilerStep#N) in this report; try --steps auto")
        }),
        StepSource::Scheduler => scheduler::find(ix)?.map(|f| hinted(ix, f)).ok_or_else(|| {
            Error::input("--steps scheduler: no scheduler.run_batch or gpu_model_runner: forward ranges in this report; try --steps auto")
        }),
        StepSource::Python => python::find(ix)?.map(|f| hinted(ix, f)).ok_or_else(|| {
            Error::input("--steps python: no vLLM execute_model or SGLang run_batch python-stack spans in this trace (they need a torch-profiler capture with with_stack=True); try --steps auto")
        }),
        StepSource::Sync => sync::find(ix).map(|f| hinted(ix, f)).ok_or_else(|| {
            Error::input("--steps sync: no host synchronisation recurs with a stable period on the busiest launching thread; try --steps auto")
        }),
        StepSource::Graphs => {
            let f = graphs::find(ix).ok_or_else(|| {
                Error::input("no CUDA-graph launches in this report: use --steps auto, a regex, or gaps")
            })?;
            Ok(hinted(ix, f))
        }
        StepSource::Gaps => Ok(hinted(ix, gaps::find(ix, opts.gap_threshold_ns))),
        StepSource::Auto => {
            if let Some(f) = marker::find(ix)? {
                return Ok(f);
            }
            let mut notes = vec![if nsys {
                "no engine step markers (vLLM execute_…, SGLang step[…], TensorRT-LLM _forward_step) in this report".to_owned()
            } else {
                "no vLLM `execute_…`, SGLang `step[…]` or ProfilerStep#N annotations in this trace".to_owned()
            }];
            let mut f = if let Some(f) = scheduler::find(ix)? {
                f
            } else if let Some(f) = python::find(ix)? {
                f
            } else if let Some(f) = sync::find(ix) {
                f
            } else if let Some(f) = graphs::find(ix) {
                f
            } else {
                gaps::find(ix, opts.gap_threshold_ns)
            };
            if f.found_by == FoundBy::Gaps {
                notes.push(format!(
                    "steps found by splitting GPU activity at idle gaps over {} µs",
                    opts.gap_threshold_ns as f64 / 1e3
                ));
            }
            notes.append(&mut f.notes);
            f.notes = notes;
            Ok(hinted(ix, f))
        }
    }
}

/// Add the exact-steps hint for the engine the names suggest.
fn hinted(ix: &Index<'_>, mut f: Found) -> Found {
    let engine = engine_of(ix);
    f.hint = exact_hint(ix, f.found_by, engine);
    f
}

/// Which engine the trace's names suggest (process names and range names).
fn engine_of(ix: &Index<'_>) -> Option<&'static str> {
    let t = ix.trace;
    let mut sglang = false;
    let mut vllm = false;
    for (_, n) in &t.meta.process_names {
        sglang |= n.contains("sglang");
        vllm |= n.contains("vllm") || n.contains("VLLM");
    }
    if let Ok(r) = t.ranges_view() {
        for &id in r.name_id {
            let n = t.name(id);
            sglang |= n.starts_with("scheduler.") || n.contains("sglang/");
            vllm |= n.starts_with("gpu_model_runner") || n.contains("vllm/");
        }
    }
    match (vllm, sglang) {
        (true, false) => Some("vllm"),
        (false, true) => Some("sglang"),
        _ => None,
    }
}
