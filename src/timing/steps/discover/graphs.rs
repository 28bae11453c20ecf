//! CUDA-graph launches grouped into steps. Back-to-back launches on one thread with no
//! host sync between them (and the eager kernels launched between them) are the pieces
//! of one step: vLLM V1's piecewise graphs replay dozens of different graphs per step.
//! A step never replays the same graph twice, so where the trace says which graph a
//! launch replays (nsys: the kernels' `graphId`), a launch of a graph already in the
//! current group starts the next step: one full graph per step (full-graph decode) stays
//! one step per launch even without a sync between them.
//!
//! Where the trace does not say (Kineto writes no graph id), only host syncs separate
//! steps; a thread whose launches no sync ever separates would otherwise become one
//! step spanning the whole capture, so there each launch stays its own step (the
//! full-graph decode reading) and a note says so.

use crate::trace::is_graph_launch_call;
use crate::wire::steps::{FoundBy, StepKind};

use super::hostcalls::{graph_of, is_sync_call};
use super::{Candidate, Found, Index};
use crate::exit::Result;
use crate::timing::steps::StepOptions;

pub(super) fn find(ix: &Index<'_>, _: &StepOptions) -> Result<Option<Found>> {
    let c = &ix.calls;
    let mut out: Vec<Candidate> = Vec::new();
    let mut group: Vec<u32> = Vec::new();
    let mut seen: Vec<i64> = Vec::new();
    let mut synced = false;
    let mut unknown = false;
    let mut groups_here = 0usize;
    let mut last_end = i64::MIN;
    let mut thread = None;
    let mut unsplit_threads = 0usize;
    let mut end_thread =
        |group: &mut Vec<u32>, out: &mut Vec<Candidate>, unknown: bool, groups_here: usize| {
            if unknown && groups_here == 0 && group.len() > 1 {
                // No sync and no graph id ever separated this thread's launches.
                unsplit_threads += 1;
                for ci in std::mem::take(group) {
                    flush(ix, &mut vec![ci], out);
                }
            } else {
                flush(ix, group, out);
            }
        };
    for &ci in &ix.calls_by_thread {
        let i = ci as usize;
        let here = (c.pid[i], c.tid[i]);
        if thread != Some(here) {
            end_thread(&mut group, &mut out, unknown, groups_here);
            seen.clear();
            (synced, unknown, groups_here, last_end) = (false, false, 0, i64::MIN);
            thread = Some(here);
        }
        let name = ix.trace.name(c.name_id[i]);
        if is_graph_launch_call(name) {
            if c.start_ns[i] < last_end {
                continue; // the driver call nested in the same replay
            }
            last_end = c.end_ns[i];
            let gid = graph_of(ix, i);
            unknown |= gid < 0;
            if !group.is_empty() && (synced || (gid >= 0 && seen.contains(&gid))) {
                flush(ix, &mut group, &mut out);
                groups_here += 1;
                seen.clear();
            }
            synced = false;
            group.push(ci);
            seen.push(gid);
        } else if is_sync_call(name) {
            synced = true;
        }
    }
    end_thread(&mut group, &mut out, unknown, groups_here);
    if out.is_empty() {
        return Ok(None);
    }
    let grouped = out.iter().filter(|c| c.exact_call.is_none()).count();
    let mut f = Found::spans(FoundBy::Graphs, out);
    f.notes.push(if grouped == 0 {
        "steps found from CUDA-graph launches: each replay counted as one step (one full graph per step, as in full-graph decode: kind_guess decode)".to_owned()
    } else {
        format!("steps found from CUDA-graph launches: back-to-back launches with no host sync between them (and no graph replayed twice) grouped into one step ({grouped} multi-launch step(s), piecewise graphs)")
    });
    if unsplit_threads > 0 {
        f.notes.push(format!(
            "{unsplit_threads} thread(s) launch CUDA graphs with no host sync between any two launches and the trace does not say which graph each replays: each launch counted as its own step"
        ));
    }
    Ok(Some(f))
}

fn flush(ix: &Index<'_>, group: &mut Vec<u32>, out: &mut Vec<Candidate>) {
    let c = &ix.calls;
    match group.as_slice() {
        [] => {}
        [one] => {
            let i = *one as usize;
            out.push(Candidate {
                label: Some(ix.trace.name(c.name_id[i]).to_owned()),
                exact_call: Some(*one),
                kind_guess: Some(StepKind::Decode),
                ..Candidate::span(i64::from(c.pid[i]), c.tid[i], c.start_ns[i], c.end_ns[i])
            });
        }
        [first, .., last] => {
            let (a, b) = (*first as usize, *last as usize);
            out.push(Candidate {
                label: Some(format!("[{} CUDA-graph launches]", group.len())),
                ..Candidate::span(i64::from(c.pid[a]), c.tid[a], c.start_ns[a], c.end_ns[b])
            });
        }
    }
    group.clear();
}
