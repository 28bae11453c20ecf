//! Host sync points as step boundaries. Engines block once per step to read the sampled
//! tokens back (vLLM 0.8.5: a DtoH `cudaMemcpyAsync` then `cudaStreamSynchronize`;
//! async-scheduling builds: an event record then `cudaEventSynchronize`). On each
//! process's busiest launching thread, a sync that follows at least one launch closes a
//! step; a step runs from the end of one such sync to the end of the next. Used only
//! when it recurs (at least 3 boundaries) with a stable period: at least half of the
//! periods within ±50 % of the median (a prefill among decodes is an outlier, not
//! instability); else discovery falls through.
//!
//! A segment that replays CUDA graphs is labelled `graphs` (one graph launch: a
//! full-graph decode, kind_guess decode); an eager segment is labelled `sync` (SGLang
//! under nsys: decode from graph launches, prefill from the sync points).

use super::{Candidate, Found, Index};
use crate::timing::stepname::StepKind;
use crate::timing::steps::FoundBy;
use crate::trace::is_graph_launch_call;

/// A blocking wait on the GPU: CUDA runtime/driver and HIP stream, event, device and
/// context synchronisation.
pub fn is_sync_call(name: &str) -> bool {
    (name.starts_with("cuda") || name.starts_with("cu") || name.starts_with("hip"))
        && name.contains("Synchronize")
}

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

pub fn find(ix: &Index<'_>) -> Option<Found> {
    let c = &ix.calls;
    let t = &ix.calls_by_thread;
    // Busiest launching thread per process: (pid, tid, range in calls_by_thread).
    let mut best: Vec<(i64, i64, usize, usize, u64)> = Vec::new();
    let mut lo = 0;
    while lo < t.len() {
        let key = (c.pid[t[lo] as usize], c.tid[t[lo] as usize]);
        let mut hi = lo;
        let mut launches = 0u64;
        while hi < t.len() && (c.pid[t[hi] as usize], c.tid[t[hi] as usize]) == key {
            launches += u64::from(c.is_launch[t[hi] as usize] != 0);
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
    for &(pid, tid, lo, hi, launches) in &best {
        if launches == 0 {
            continue;
        }
        let mut bounds: Vec<usize> = Vec::new();
        let mut launched = false;
        for &ci in &t[lo..hi] {
            let i = ci as usize;
            if c.is_launch[i] != 0 {
                launched = true;
            } else if launched && is_sync_call(ix.trace.name(c.name_id[i])) {
                bounds.push(i);
                launched = false;
            }
        }
        if bounds.len() < MIN_BOUNDARIES {
            continue;
        }
        let mut periods: Vec<i64> = bounds
            .windows(2)
            .map(|w| c.end_ns[w[1]].saturating_sub(c.end_ns[w[0]]))
            .collect();
        if !stable(&mut periods) {
            continue;
        }
        sync_name.get_or_insert_with(|| ix.trace.name(c.name_id[bounds[0]]).to_owned());
        for w in bounds.windows(2) {
            let (a, b) = (c.end_ns[w[0]], c.end_ns[w[1]]);
            let graphs = ix
                .calls_in(pid, tid, a, b)
                .iter()
                .filter(|&&ci| is_graph_launch_call(ix.trace.name(c.name_id[ci as usize])))
                .count();
            out.push(Candidate {
                pid,
                tid,
                start: a,
                end: b,
                name_id: None,
                label: Some(format!("[between {}]", ix.trace.name(c.name_id[w[1]]))),
                parsed: None,
                exact_call: None,
                kind_guess: (graphs == 1).then_some(StepKind::Decode),
                all_threads: false,
                found_by: (graphs > 0).then_some(FoundBy::Graphs),
            });
        }
    }
    if out.is_empty() {
        return None;
    }
    let mut f = Found::spans("sync", FoundBy::Sync, out);
    f.notes.push(format!(
        "steps found between recurring host syncs ({}) on each process's busiest launching thread: a heuristic",
        sync_name.unwrap_or_default()
    ));
    Some(f)
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
