//! CUDA-graph launches grouped into steps. Back-to-back launches on one thread with no
//! host sync between them (and the eager kernels launched between them) are the pieces
//! of one step: vLLM V1's piecewise graphs replay dozens of different graphs per step.
//! A step never replays the same graph twice, so a launch of a graph already in the
//! current group starts the next step: one full graph per step (full-graph decode)
//! stays one step per launch. Where the trace does not say which graph a launch
//! replays, each launch stays its own step.

use crate::timing::stepname::StepKind;
use crate::trace::is_graph_launch_call;

use super::sync::is_sync_call;
use super::{Candidate, Found, Index};
use crate::timing::steps::FoundBy;

pub fn find(ix: &Index<'_>) -> Option<Found> {
    let c = &ix.calls;
    let mut out: Vec<Candidate> = Vec::new();
    let mut group: Vec<u32> = Vec::new();
    let mut seen: Vec<i64> = Vec::new();
    let mut synced = false;
    let mut thread = None;
    for &ci in &ix.calls_by_thread {
        let i = ci as usize;
        let here = (c.pid[i], c.tid[i]);
        if thread != Some(here) {
            flush(ix, &mut group, &mut out);
            seen.clear();
            thread = Some(here);
        }
        let name = ix.trace.name(c.name_id[i]);
        if is_graph_launch_call(name) {
            let gid = graph_of(ix, i);
            if synced || gid < 0 || seen.contains(&gid) || seen.contains(&-1) {
                flush(ix, &mut group, &mut out);
                seen.clear();
            }
            synced = false;
            group.push(ci);
            seen.push(gid);
        } else if is_sync_call(name) {
            synced = true;
        }
    }
    flush(ix, &mut group, &mut out);
    if out.is_empty() {
        return None;
    }
    let grouped = out.iter().filter(|c| c.exact_call.is_none()).count();
    let mut f = Found::spans("graphs", FoundBy::Graphs, out);
    f.notes.push(if grouped == 0 {
        "steps found from CUDA-graph launches: each replay counted as one step (one full graph per step, as in full-graph decode: kind_guess decode)".to_owned()
    } else {
        format!("steps found from CUDA-graph launches: back-to-back launches of different graphs with no host sync between them grouped into one step ({grouped} multi-launch step(s), piecewise graphs)")
    });
    Some(f)
}

/// The graph a launch replays, from its ops (-1 when the trace does not say).
fn graph_of(ix: &Index<'_>, call: usize) -> i64 {
    let corr = ix.calls.correlation_id[call];
    if corr < 0 {
        return -1;
    }
    ix.ops_of(ix.calls.pid[call], corr)
        .first()
        .map_or(-1, |&o| ix.ops.graph_id[o as usize])
}

fn flush(ix: &Index<'_>, group: &mut Vec<u32>, out: &mut Vec<Candidate>) {
    let c = &ix.calls;
    match group.as_slice() {
        [] => {}
        [one] => {
            let i = *one as usize;
            out.push(Candidate {
                pid: c.pid[i],
                tid: c.tid[i],
                start: c.start_ns[i],
                end: c.end_ns[i],
                name_id: None,
                label: Some(ix.trace.name(c.name_id[i]).to_owned()),
                parsed: None,
                exact_call: Some(*one),
                kind_guess: Some(StepKind::Decode),
                all_threads: false,
                found_by: None,
            });
        }
        [first, .., last] => {
            let (a, b) = (*first as usize, *last as usize);
            out.push(Candidate {
                pid: c.pid[a],
                tid: c.tid[a],
                start: c.start_ns[a],
                end: c.end_ns[b],
                name_id: None,
                label: Some(format!("[{} CUDA-graph launches]", group.len())),
                parsed: None,
                exact_call: None,
                kind_guess: None,
                all_threads: false,
                found_by: None,
            });
        }
    }
    group.clear();
}
