//! What host calls say about step boundaries, for the `sync` and `graphs` families: which
//! calls block on the GPU, which graph a launch replays, and where a graph replayed
//! again starts a new step.

use crate::trace::is_graph_launch_call;

use super::Index;

/// A blocking wait on the GPU: CUDA runtime/driver and HIP stream, event, device and
/// context synchronisation.
pub(super) fn is_sync_call(name: &str) -> bool {
    (name.starts_with("cuda") || name.starts_with("cu") || name.starts_with("hip"))
        && name.contains("Synchronize")
}

/// Positions (in `calls`, one thread's calls in time order) of the graph launches that
/// start a new step because their graph already replayed since the last split, in
/// order. Launch calls nested in the previous launch (a driver `cuGraphLaunch` under the
/// runtime `cudaGraphLaunch`) are the same replay and never split.
pub(super) fn repeat_splits(ix: &Index<'_>, calls: &[u32]) -> Vec<usize> {
    let c = &ix.calls;
    let mut seen: Vec<i64> = Vec::new();
    let mut out = Vec::new();
    let mut last_end = i64::MIN;
    for (p, &ci) in calls.iter().enumerate() {
        let i = ci as usize;
        if !c.is_launch(i) || !is_graph_launch_call(ix.trace.name(c.name_id[i])) {
            continue;
        }
        if c.start_ns[i] < last_end {
            continue;
        }
        last_end = c.end_ns[i];
        let gid = graph_of(ix, i);
        if gid < 0 {
            continue;
        }
        if seen.contains(&gid) {
            out.push(p);
            seen.clear();
        }
        seen.push(gid);
    }
    out
}

/// The graph a launch replays, from its ops (-1 when the trace does not say).
pub(super) fn graph_of(ix: &Index<'_>, call: usize) -> i64 {
    ix.ops_of_call(call)
        .first()
        .map_or(-1, |&o| i64::from(ix.ops.graph_id[o as usize]))
}
