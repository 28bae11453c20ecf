//! Host sync points as step boundaries. Engines block once per step to read the sampled
//! tokens back (vLLM 0.8.5: a DtoH `cudaMemcpyAsync` then `cudaStreamSynchronize`;
//! async-scheduling builds: an event record then `cudaEventSynchronize`). On each
//! process's busiest launching thread, a sync that follows at least one launch closes a
//! step; a step runs from the end of one such sync to the end of the next. Used only
//! when it recurs (at least 3 boundaries) with a stable period: at least half of the
//! periods within ±50 % of the median (a prefill among decodes is an outlier, not
//! instability); else discovery falls through.
//!
//! The work before the first such sync is a step too when it holds at least half the
//! median launches of a period (else it is a step the capture cut, left outside steps);
//! the work after the last one never reached its closing sync and stays outside steps,
//! unless CUDA-graph replays split it (below). Within any segment, a CUDA graph that replays a second time
//! starts a new step (the graph grouping rule of `graphs`): SGLang under nsys blocks per
//! extend but not per full-graph decode, so its prefill steps come from the syncs
//! (`found_by sync`) and its decode steps from the graph launches (`found_by graphs`).

use super::hostcalls::{is_sync_call, repeat_splits};
use super::{Candidate, Found, Index};
use crate::exit::Result;
use crate::timing::steps::StepOptions;
use crate::trace::is_graph_launch_call;
use crate::wire::steps::{FoundBy, StepKind};

/// Minimum boundaries for a recurring sync.
const MIN_BOUNDARIES: usize = 3;

/// Whether at least half of the periods lie within ±50 % of their median.
fn stable(periods: &mut [i64]) -> bool {
    if periods.is_empty() {
        return false;
    }
    periods.sort_unstable();
    let med = periods[periods.len() / 2];
    if med <= 0 {
        return false;
    }
    let near = periods
        .iter()
        .filter(|&&p| p >= med / 2 && p <= med.saturating_add(med / 2))
        .count();
    2 * near >= periods.len()
}

pub(super) fn find(ix: &Index<'_>, _: &StepOptions) -> Result<Option<Found>> {
    let c = &ix.calls;
    let t = &ix.calls_by_thread;
    // Busiest launching thread per process: (pid, tid, range in calls_by_thread).
    let mut best: Vec<(i64, i64, usize, usize, u64)> = Vec::new();
    let mut lo = 0;
    while lo < t.len() {
        let key = (i64::from(c.pid[t[lo] as usize]), c.tid[t[lo] as usize]);
        let mut hi = lo;
        let mut launches = 0u64;
        while hi < t.len() && (i64::from(c.pid[t[hi] as usize]), c.tid[t[hi] as usize]) == key {
            launches += u64::from(c.is_launch(t[hi] as usize));
            hi += 1;
        }
        match best.last_mut() {
            Some(b) if b.0 == key.0 => {
                if launches > b.4 {
                    *b = (key.0, key.1, lo, hi, launches);
                }
            }
            _ => best.push((key.0, key.1, lo, hi, launches)),
        }
        lo = hi;
    }
    let mut out = Vec::new();
    let mut sync_name = None;
    let mut dropped_edges = 0usize;
    let mut graph_steps = 0usize;
    for &(pid, tid, lo, hi, launches) in &best {
        if launches == 0 {
            continue;
        }
        let calls = &t[lo..hi];
        // Positions (in `calls`) of the syncs that close a step.
        let mut bounds: Vec<usize> = Vec::new();
        let mut launched = false;
        for (p, &ci) in calls.iter().enumerate() {
            let i = ci as usize;
            if c.is_launch(i) {
                launched = true;
            } else if launched && is_sync_call(ix.trace.name(c.name_id[i])) {
                bounds.push(p);
                launched = false;
            }
        }
        if bounds.len() < MIN_BOUNDARIES {
            continue;
        }
        let mut periods: Vec<i64> = bounds
            .windows(2)
            .map(|w| c.end_ns[calls[w[1]] as usize].saturating_sub(c.end_ns[calls[w[0]] as usize]))
            .collect();
        if !stable(&mut periods) {
            continue;
        }
        let first = bounds[0];
        let last = bounds[bounds.len() - 1];
        sync_name.get_or_insert_with(|| ix.trace.name(c.name_id[calls[first] as usize]).to_owned());
        let launches_in = |a: usize, b: usize| {
            calls[a..b]
                .iter()
                .filter(|&&ci| c.is_launch(ci as usize))
                .count()
        };
        // A period's launches, for judging the segments before the first sync and after
        // the last one: a capture that starts or stops mid-step leaves a partial one.
        let mut per: Vec<usize> = bounds
            .windows(2)
            .map(|w| launches_in(w[0] + 1, w[1] + 1))
            .collect();
        per.sort_unstable();
        let median = per[per.len() / 2];
        // Segments as position ranges [a, b) in `calls`, with their host window.
        let end_of = |p: usize| c.end_ns[calls[p] as usize];
        let start_of = |p: usize| c.start_ns[calls[p] as usize];
        let mut segs: Vec<(usize, usize, i64, i64, bool)> = Vec::new();
        segs.push((0, first + 1, start_of(0), end_of(first), true));
        for w in bounds.windows(2) {
            segs.push((w[0] + 1, w[1] + 1, end_of(w[0]), end_of(w[1]), false));
        }
        if last + 1 < calls.len() {
            let tail_end = calls[last + 1..]
                .iter()
                .map(|&ci| c.end_ns[ci as usize])
                .max()
                .unwrap_or(end_of(last));
            segs.push((last + 1, calls.len(), end_of(last), tail_end, true));
        }
        for (a, b, start, end, edge) in segs {
            let sub = &calls[a..b];
            let splits = repeat_splits(ix, sub);
            if splits.is_empty() {
                // The segment before the first sync is a step when it holds at least
                // half a median period's launches; the one after the last sync never
                // reached its closing sync (the capture stopped inside it).
                let n = launches_in(a, b);
                let trailing = edge && a > 0;
                if edge && (n == 0 || 2 * n < median || trailing) {
                    dropped_edges += usize::from(n > 0);
                    continue;
                }
                let graphs = sub
                    .iter()
                    .filter(|&&ci| is_graph_launch_call(ix.trace.name(c.name_id[ci as usize])))
                    .count();
                out.push(segment(
                    pid,
                    tid,
                    start,
                    end,
                    format!(
                        "[between {}]",
                        ix.trace.name(c.name_id[calls[first] as usize])
                    ),
                    (graphs == 1).then_some(StepKind::Decode),
                    None,
                ));
                continue;
            }
            // A graph replayed twice with no sync between: each replay run is its own
            // step (SGLang's full-graph decodes never block on the host).
            let mut cuts: Vec<usize> = Vec::with_capacity(splits.len() + 2);
            cuts.push(0);
            cuts.extend_from_slice(&splits);
            cuts.push(sub.len());
            for (k, w) in cuts.windows(2).enumerate() {
                let s = if k == 0 {
                    start
                } else {
                    c.start_ns[sub[w[0]] as usize]
                };
                let e = if w[1] == sub.len() {
                    end
                } else {
                    c.start_ns[sub[w[1]] as usize] - 1
                };
                let graphs = sub[w[0]..w[1]]
                    .iter()
                    .filter(|&&ci| is_graph_launch_call(ix.trace.name(c.name_id[ci as usize])))
                    .count();
                graph_steps += 1;
                out.push(segment(
                    pid,
                    tid,
                    s,
                    e,
                    format!("[{graphs} CUDA-graph launch(es)]"),
                    (graphs == 1).then_some(StepKind::Decode),
                    Some(FoundBy::Graphs),
                ));
            }
        }
    }
    if out.is_empty() {
        return Ok(None);
    }
    let mut f = Found::spans(FoundBy::Sync, out);
    f.notes.push(format!(
        "steps found between recurring host syncs ({}) on each process's busiest launching thread: a heuristic",
        sync_name.unwrap_or_default()
    ));
    if graph_steps > 0 {
        f.notes.push(format!(
            "{graph_steps} step(s) between syncs split where a CUDA graph replays again (found_by graphs): a heuristic"
        ));
    }
    if dropped_edges > 0 {
        f.notes.push(format!(
            "{dropped_edges} partial step(s) left outside steps: before the first sync (under half a period's launches) or after the last one (no closing sync)"
        ));
    }
    Ok(Some(f))
}

fn segment(
    pid: i64,
    tid: i64,
    start: i64,
    end: i64,
    label: String,
    kind_guess: Option<StepKind>,
    found_by: Option<FoundBy>,
) -> Candidate {
    Candidate {
        label: Some(label),
        kind_guess,
        found_by,
        no_tail: true,
        ..Candidate::span(pid, tid, start, end)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stability_is_robust_to_outliers() {
        assert!(stable(&mut [1000, 1000, 1010, 990]));
        // One prefill among decodes.
        assert!(stable(&mut [1000, 1000, 9000, 1000, 1000]));
        assert!(!stable(&mut [1000, 20000, 100, 40000]));
        assert!(!stable(&mut []));
        assert!(!stable(&mut [0, 0, 0]));
    }
}
