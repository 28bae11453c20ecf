//! The truth of one rank, computed from the ops its [`Host`] schedule tagged with their
//! iteration, by plain interval arithmetic (no stepgate analysis code).

use super::host::Host;
use crate::wire::synth::{SeriesTruth, StepTruth};

/// Length of the union of `[start, end)` intervals (any order).
fn union_ns(mut iv: Vec<(i64, i64)>) -> i64 {
    iv.sort_unstable();
    let (mut total, mut cur) = (0, None::<(i64, i64)>);
    for (s, e) in iv {
        cur = match cur {
            Some((a, b)) if s <= b => Some((a, b.max(e))),
            Some((a, b)) => {
                total += b - a;
                Some((s, e))
            }
            None => Some((s, e)),
        };
    }
    total + cur.map_or(0, |(a, b)| b - a)
}

/// The truth of one rank from the tagged ops, by plain interval arithmetic: a step's busy
/// time is the union of its ops' intervals (ops of two streams overlap), its tail what the
/// tail's ops add to that union, outside what the untagged ops add to all the steps'.
pub(crate) fn series_truth(h: &Host) -> SeriesTruth {
    let n = h.steps.len();
    let (mut busy, mut both) = (vec![Vec::new(); n], vec![Vec::new(); n]);
    let (mut all, mut tagged) = (Vec::new(), Vec::new());
    let mut steps: Vec<StepTruth> = h
        .steps
        .iter()
        .enumerate()
        .map(|(i, m)| StepTruth {
            index: i,
            name: m.name.clone(),
            found_by: m.found_by.to_owned(),
            kind: m.kind.to_owned(),
            composition: m.composition.clone(),
            gpu_start_ns: None,
            gpu_end_ns: None,
            busy_ns: 0,
            kernels: 0,
            ops: 0,
            tail_busy_ns: 0,
            tail_kernels: 0,
            tail_ops: 0,
            graph_launches: m.graph_launches,
        })
        .collect();
    let mut s = SeriesTruth {
        rank: h.rank,
        pid: h.pid,
        tid: h.pid,
        device: h.device,
        steps: Vec::new(),
        outside_busy_ns: 0,
        device_busy_ns: 0,
        device_kernels: 0,
        device_ops: 0,
    };
    for op in &h.ops {
        let iv = (op.start, op.end);
        let is_kernel = op.memcpy.is_none() as u64;
        all.push(iv);
        s.device_ops += 1;
        s.device_kernels += is_kernel;
        let Some((i, in_tail)) = op.tag else {
            continue;
        };
        tagged.push(iv);
        both[i].push(iv);
        let t = &mut steps[i];
        if in_tail {
            t.tail_ops += 1;
            t.tail_kernels += is_kernel;
        } else {
            busy[i].push(iv);
            t.ops += 1;
            t.kernels += is_kernel;
            t.gpu_start_ns = Some(t.gpu_start_ns.map_or(op.start, |g| g.min(op.start)));
            t.gpu_end_ns = Some(t.gpu_end_ns.map_or(op.end, |g| g.max(op.end)));
        }
    }
    for ((t, b), w) in steps.iter_mut().zip(busy).zip(both) {
        t.busy_ns = union_ns(b);
        t.tail_busy_ns = union_ns(w) - t.busy_ns;
    }
    s.device_busy_ns = union_ns(all);
    s.outside_busy_ns = s.device_busy_ns - union_ns(tagged);
    s.steps = steps;
    s
}
