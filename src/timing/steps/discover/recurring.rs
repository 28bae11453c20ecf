//! Recurring annotations: a training loop without `ProfilerStep#N` still writes a few
//! annotations once per iteration (the DataLoader's `enumerate(DataLoader)#…__next__`,
//! `Optimizer.zero_grad#…`, `Optimizer.step#…`, a user's own `record_function`s) on its
//! main thread, while autograd launches backward from its own thread. Such names, when
//! they recur in lockstep (a stable cycle, see `cycle`), tile the iterations: a step runs
//! from one occurrence of the cycle's opener to the next, and the calls of every thread of
//! the process inside it are projected, as for `ProfilerStep#N`. A heuristic: the
//! headline says so, and the hint names the profiler schedule that makes steps exact.
//!
//! Per process one cycle is used: one with a PyTorch training name before one without,
//! then the one with the most members, the coarsest, the earliest; the first whose steps
//! launch GPU work. Names that are never steps (CUDA-graph capture, warm-up, compiled-graph
//! calls) and engine step markers (they have their own family) are not read.
//!
//! Under nsys only the PyTorch training names count (NVTX under `emit_nvtx`, where aten
//! ops and NCCL calls are NVTX ranges too, recurring in lockstep without being
//! iterations, and a read of every range would be most of the export); in a Kineto trace
//! every annotation does.

use crate::exit::Result;
use crate::timing::stepname::{is_engine_step_name, is_never_step, strip_emit_nvtx};
use crate::timing::steps::StepOptions;
use crate::wire::steps::FoundBy;

use super::cycle::{self, training_rank, Cycle, Thread};
use super::{Candidate, Found, Index};

/// The range names an nsys read keeps for this family: PyTorch's own training names.
pub(super) const RANGES: &str = r"^(enumerate\(DataLoader\)#|Optimizer\.(zero_grad|step)#)";

/// Whether a range name may be a cycle member (under nsys only PyTorch's training names).
fn eligible(raw: &str, nsys: bool) -> bool {
    let n = strip_emit_nvtx(raw);
    if nsys {
        return training_rank(n).is_some();
    }
    !is_engine_step_name(n) && !is_never_step(n) && !n.starts_with("## Call CompiledFxGraph")
}

/// The cycle a process's steps come from, and the thread it was found on.
struct Chosen<'t> {
    thread: &'t Thread,
    cycle: Cycle,
    spans: Vec<(i64, i64)>,
    cut_last: bool,
}

pub(super) fn find(ix: &Index<'_>, _: &StepOptions) -> Result<Option<Found>> {
    // Marker-API ranges are only what the program pushed: of those, only training-rank
    // names recur as steps (profiler annotations recur for every operator).
    let nsys = ix.trace.meta.format.capabilities().marker_api.is_some();
    let threads = cycle::threads(ix, |n, _| eligible(n, nsys))?;
    let mut chosen: Vec<Chosen<'_>> = Vec::new();
    let mut lo = 0;
    while lo < threads.len() {
        let pid = threads[lo].pid;
        let hi = lo + threads[lo..].partition_point(|t| t.pid == pid);
        if let Some(c) = choose(ix, &threads[lo..hi]) {
            chosen.push(c);
        }
        lo = hi;
    }
    if chosen.is_empty() {
        return Ok(None);
    }
    let mut out = Vec::new();
    for c in &chosen {
        let label = format!("[cycle from {}]", c.thread.names[c.cycle.members[0]].name);
        out.extend(c.spans.iter().map(|&(s, e)| Candidate {
            label: Some(label.clone()),
            all_threads: true,
            no_tail: true,
            ..Candidate::span(c.thread.pid, c.thread.tid, s, e)
        }));
    }
    let training = chosen.iter().any(|c| known(c.thread, &c.cycle));
    let mut f = Found::spans(FoundBy::Recurring, out);
    f.detail = training.then_some("PyTorch training loop without ProfilerStep");
    let first = &chosen[0];
    let names: Vec<&str> = first
        .cycle
        .members
        .iter()
        .map(|&m| first.thread.names[m].name.as_str())
        .collect();
    let more = match chosen.len() {
        1 => String::new(),
        n => format!(" (and {} more process(es))", n - 1),
    };
    f.notes.push(format!(
        "steps tile a recurring cycle of annotations ({}) on thread {} of process {}{more}: each runs from one `{}` to the next, with the calls of every thread of the process (autograd launches backward from its own thread); the last ends where its cycle's last annotation ends; work before the first and after the last is outside steps: a heuristic",
        names.join(" → "),
        first.thread.tid,
        first.thread.pid,
        names[0],
    ));
    let cut = chosen.iter().filter(|c| c.cut_last).count();
    if cut > 0 {
        f.notes.push(format!(
            "{cut} final cycle(s) never completed (an annotation of the cycle is missing after the last `{}`: the capture stopped inside the iteration): left outside steps",
            names[0]
        ));
    }
    Ok(Some(f))
}

/// Whether a cycle holds one of PyTorch's own training names.
fn known(t: &Thread, c: &Cycle) -> bool {
    c.members
        .iter()
        .any(|&m| training_rank(&t.names[m].name).is_some())
}

/// The best cycle among one process's threads whose steps launch GPU work.
fn choose<'t>(ix: &Index<'_>, threads: &'t [Thread]) -> Option<Chosen<'t>> {
    let mut all: Vec<(&Thread, Cycle)> = threads
        .iter()
        .flat_map(|t| cycle::cycles(t).into_iter().map(move |c| (t, c)))
        .collect();
    all.sort_by_key(|(t, c)| {
        let open = &t.names[c.members[0]];
        (
            !known(t, c),
            std::cmp::Reverse(c.members.len()),
            open.starts.len(),
            open.starts[0],
        )
    });
    let pid = threads.first()?.pid;
    let tids = ix.threads_of(pid);
    all.into_iter().find_map(|(thread, cycle)| {
        let tiles = cycle::tiles(thread, &cycle);
        let launches = tiles.spans.iter().any(|&(s, e)| {
            tids.iter().any(|&tid| {
                ix.calls_in(pid, tid, s, e)
                    .iter()
                    .any(|&ci| ix.calls.is_launch(ci as usize))
            })
        });
        launches.then_some(Chosen {
            thread,
            cycle,
            spans: tiles.spans,
            cut_last: tiles.cut_last,
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nsys_reads_exactly_the_training_names() {
        let re = regex::Regex::new(RANGES).unwrap();
        for n in [
            "Optimizer.step#AdamW.step",
            "Optimizer.zero_grad#SGD.zero_grad, op_id = 7",
            "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__",
            "ncclSend",
            "## forward ##",
            "aten::mm, seq = 1",
        ] {
            assert_eq!(re.is_match(n), eligible(n, true), "{n}");
        }
        // Kineto: any annotation but markers, never-steps and compiled-graph calls.
        assert!(eligible("## forward ##", false));
        assert!(!eligible("ProfilerStep#3", false));
        assert!(!eligible("capture_32_FULL", false));
        assert!(!eligible("## Call CompiledFxGraph abc ##", false));
    }
}
