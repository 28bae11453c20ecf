//! The idle time inside the steps that the run verdict reads: every gap between a step's
//! merged GPU ops, and the CUDA-graph launches among them (measured).

use std::collections::HashMap;

use crate::exit::Result;
use crate::trace::Trace;
use crate::wire::steps::Step;

use super::DISPATCH_MEDIAN_NS;

/// One (process, device)'s ops: (start, end, the graph launch's correlation id or -1).
type Lane = Vec<(i64, i64, i64)>;

/// The idle time inside the steps, between their GPU ops (measured).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Gaps {
    /// Every gap between consecutive (merged) ops inside a step, ns.
    pub count: usize,
    pub median_ns: i64,
    pub total_ns: i64,
    /// The gaps shorter than [`DISPATCH_MEDIAN_NS`], summed: dispatch's share of the idle.
    pub short_total_ns: i64,
    /// The longest gap and the index in the report of the step that holds it.
    pub longest_ns: i64,
    pub longest_step: Option<usize>,
    /// Steps whose longest gap is more than half of their idle time.
    pub steps_one_gap: usize,
    /// CUDA-graph launches whose kernels ran inside the steps (node-mode tracing: distinct
    /// launches among the ops that carry a graph id).
    pub graph_launches: u64,
}

/// The gaps between each step's merged GPU ops (its process's ops on its device inside
/// its GPU span), measured: one sort of the ops per (process, device), one binary search
/// per step.
pub fn gaps(trace: &Trace, steps: &[&Step]) -> Result<Gaps> {
    let o = trace.ops_view()?;
    // (start, end, the launch's correlation id when the op is a graph node, else -1).
    let mut lanes: HashMap<(i64, i64), Lane> = HashMap::new();
    for i in 0..o.start_ns.len() {
        let graph = if o.graph_id[i] >= 0 {
            o.correlation_id[i]
        } else {
            -1
        };
        lanes
            .entry((o.pid[i], o.device[i]))
            .or_default()
            .push((o.start_ns[i], o.end_ns[i], graph));
    }
    for v in lanes.values_mut() {
        v.sort_unstable();
    }
    let mut all = Vec::new();
    let mut g = Gaps::default();
    for s in steps {
        let (Some(d), Some(a), Some(b)) = (s.device, s.gpu_start_ns, s.gpu_end_ns) else {
            continue;
        };
        let Some(lane) = lanes.get(&(s.pid, d)) else {
            continue;
        };
        let from = lane.partition_point(|x| x.0 < a);
        let (mut end, mut step_total, mut step_max) = (None::<i64>, 0i64, 0i64);
        let mut launches = std::collections::HashSet::new();
        for &(st, en, graph) in lane[from..].iter().take_while(|x| x.0 < b) {
            if en > b {
                continue;
            }
            if graph >= 0 {
                launches.insert(graph);
            }
            match end {
                Some(e) if st > e => {
                    let gap = st - e;
                    all.push(gap);
                    step_total += gap;
                    step_max = step_max.max(gap);
                    if gap > g.longest_ns {
                        g.longest_ns = gap;
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
        g.graph_launches += launches.len() as u64;
    }
    all.sort_unstable();
    g.short_total_ns = all.iter().filter(|&&x| x < DISPATCH_MEDIAN_NS).sum();
    g.count = all.len();
    g.total_ns = all.iter().sum();
    g.median_ns = all.get(all.len() / 2).copied().unwrap_or(0);
    Ok(g)
}
