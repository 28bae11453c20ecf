//! The idle time inside the steps that the run verdict reads: every gap between a step's
//! merged GPU ops, and the CUDA-graph launches among them (measured).

use std::collections::HashMap;

use crate::exit::Result;
use crate::timing::par;
use crate::trace::Trace;
use crate::wire::steps::Step;

use super::{DISPATCH_MEDIAN_NS, GAPPY_FRACTION, STALL_SHARE};

/// One (process, device)'s ops, as row numbers of the ops frame in (start, end, graph
/// launch) order: four bytes an op instead of a copy of its times (a 24-byte row per op
/// was the peak of `steps` on a 4M-kernel report).
type Lane = Vec<u32>;

/// Fewest ops, and fewest steps, worth a thread of their own.
const MIN_ROWS: usize = 1 << 18;
const MIN_STEPS: usize = 64;

/// The idle time inside the steps, between their GPU ops (measured).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Gaps {
    /// Every gap between consecutive (merged) ops inside a step, ns.
    pub count: usize,
    pub median_ns: i64,
    pub total_ns: i64,
    /// The gaps shorter than [`DISPATCH_MEDIAN_NS`], summed: dispatch's share of the idle.
    pub short_total_ns: i64,
    /// The longest gap's GPU interval (the end of the op before it, the start of the op
    /// after it) and the index in the report of the step that holds it.
    pub longest_at: Option<(i64, i64)>,
    pub longest_step: Option<usize>,
    /// Steps whose longest gap is more than half of their idle time.
    pub steps_one_gap: usize,
    /// CUDA-graph launches whose kernels ran inside the steps (node-mode tracing: distinct
    /// launches among the ops that carry a graph id).
    pub graph_launches: u64,
}

impl Gaps {
    /// The longest gap, ns (0 without one).
    pub(crate) fn longest_ns(&self) -> i64 {
        self.longest_at.map_or(0, |(a, b)| b - a)
    }

    /// The idle time's share of `wall_ns` (0 without a wall).
    pub(crate) fn idle_share(&self, wall_ns: i64) -> f64 {
        if wall_ns > 0 {
            self.total_ns as f64 / wall_ns as f64
        } else {
            0.0
        }
    }

    /// The idle time is one long stall: it holds more than [`GAPPY_FRACTION`] of the wall
    /// and one gap holds at least [`STALL_SHARE`] of it.
    pub(crate) fn is_long_stall(&self, wall_ns: i64) -> bool {
        self.idle_share(wall_ns) > GAPPY_FRACTION
            && self.total_ns > 0
            && self.longest_ns() as f64 >= STALL_SHARE * self.total_ns as f64
    }
}

/// The gaps between each step's merged GPU ops (its process's ops on its device inside
/// its GPU span), measured: one sort of the ops per (process, device), one binary search
/// per step; in chunks of ops and of steps on the stage threads (`timing::par`).
pub fn gaps(trace: &Trace, steps: &[&Step], threads: usize) -> Result<Gaps> {
    let o = trace.ops_view()?;
    // The launch's correlation id when the op is a graph node, else -1.
    let graph = |i: usize| {
        if o.graph_id[i] >= 0 {
            o.correlation_id[i]
        } else {
            -1
        }
    };
    let key = |i: u32| {
        let i = i as usize;
        (o.start_ns[i], o.end_ns[i], graph(i))
    };
    // Row numbers as u32, as in the per-device sweep order. Ops come in long runs of one
    // (process, device): the lane is looked up only where the key changes. In chunks of
    // rows on the stage threads, each chunk's lanes appended in row order.
    let parts = par::map_chunks(o.start_ns.len(), threads, MIN_ROWS, |r| {
        let mut keys: HashMap<(i32, i32), usize> = HashMap::new();
        let mut lanes: Vec<((i32, i32), Lane)> = Vec::new();
        let mut last: Option<((i32, i32), usize)> = None;
        for i in r {
            let k = (o.pid[i], o.device[i]);
            let at = match last {
                Some((lk, at)) if lk == k => at,
                _ => *keys.entry(k).or_insert_with(|| {
                    lanes.push((k, Lane::new()));
                    lanes.len() - 1
                }),
            };
            last = Some((k, at));
            lanes[at].1.push(i as u32);
        }
        vec![lanes]
    })?;
    let mut keys: HashMap<(i32, i32), usize> = HashMap::new();
    let mut lanes: Vec<Lane> = Vec::new();
    for part in parts {
        for (k, mut v) in part {
            let at = *keys.entry(k).or_insert_with(|| {
                lanes.push(Lane::new());
                lanes.len() - 1
            });
            if lanes[at].is_empty() {
                lanes[at] = v;
            } else {
                lanes[at].append(&mut v);
            }
        }
    }
    // Exports list most ops in start order already: check before sorting. Otherwise a
    // lane is a few start-ordered runs (one per source table), which the stable sort
    // merges in near-linear time; equal keys are the same gap either way.
    let lanes = par::map_vec(lanes, threads, 1, |chunk| {
        chunk
            .into_iter()
            .map(|mut v| {
                if !v.is_sorted_by_key(|&i| key(i)) {
                    v.sort_by_key(|&i| key(i));
                }
                v
            })
            .collect()
    })?;
    // The steps in chunks, each chunk's gaps in step order; the longest is the first of
    // the longest in step order, as one pass finds it.
    let walked = par::map_chunks(steps.len(), threads, MIN_STEPS, |r| {
        let mut all = Vec::new();
        let mut g = Gaps::default();
        // A step's graph launches (their correlation ids), counted distinct by a sort: a
        // step holds hundreds of node-mode kernels and a hash set per step cost more.
        let mut launches: Vec<i32> = Vec::new();
        for s in &steps[r] {
            let (Some(d), Some(a), Some(b)) = (s.device, s.gpu_start_ns, s.gpu_end_ns) else {
                continue;
            };
            let (Ok(pid), Ok(d)) = (i32::try_from(s.pid), i32::try_from(d)) else {
                continue;
            };
            let Some(lane) = keys.get(&(pid, d)).map(|&at| &lanes[at]) else {
                continue;
            };
            let from = lane.partition_point(|&i| o.start_ns[i as usize] < a);
            let (mut end, mut step_total, mut step_max) = (None::<i64>, 0i64, 0i64);
            launches.clear();
            for (st, en, graph) in lane[from..].iter().map(|&i| key(i)).take_while(|x| x.0 < b) {
                if en > b {
                    continue;
                }
                if graph >= 0 {
                    launches.push(graph);
                }
                match end {
                    Some(e) if st > e => {
                        let gap = st - e;
                        all.push(gap);
                        step_total += gap;
                        step_max = step_max.max(gap);
                        if gap > g.longest_ns() {
                            g.longest_at = Some((e, st));
                            g.longest_step = Some(s.index);
                        }
                        end = Some(en);
                    }
                    Some(e) => end = Some(e.max(en)),
                    None => end = Some(en),
                }
            }
            if step_total > 0 && 2 * step_max > step_total {
                g.steps_one_gap += 1;
            }
            launches.sort_unstable();
            launches.dedup();
            g.graph_launches += launches.len() as u64;
        }
        vec![(all, g)]
    })?;
    // The first chunk's gaps taken as they are (one thread: no copy of millions of
    // gaps), the rest appended in order.
    let mut all: Vec<i64> = Vec::new();
    let mut g = Gaps::default();
    for (mut gaps, part) in walked {
        if all.is_empty() {
            all = gaps;
        } else {
            all.append(&mut gaps);
        }
        if part.longest_ns() > g.longest_ns() {
            g.longest_at = part.longest_at;
            g.longest_step = part.longest_step;
        }
        g.steps_one_gap += part.steps_one_gap;
        g.graph_launches += part.graph_launches;
    }
    g.short_total_ns = all.iter().filter(|&&x| x < DISPATCH_MEDIAN_NS).sum();
    g.count = all.len();
    g.total_ns = all.iter().sum();
    // The element a sort would put in the middle, without sorting millions of gaps.
    let mid = all.len() / 2;
    g.median_ns = if all.is_empty() {
        0
    } else {
        *all.select_nth_unstable(mid).1
    };
    Ok(g)
}
