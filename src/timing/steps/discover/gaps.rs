//! Idle gaps: each device's ops split wherever the GPU idles longer than the threshold.
//! The last resort, with no host span: steps carry no tail.

use super::{Found, GapGroup, Index, Items};
use crate::exit::Result;
use crate::timing::steps::StepOptions;
use crate::wire::steps::FoundBy;

pub(super) fn find(ix: &Index<'_>, opts: &StepOptions) -> Result<Option<Found>> {
    let threshold = opts.gap_threshold_ns;
    let o = &ix.ops;
    let mut order: Vec<u32> = (0..o.start_ns.len() as u32).collect();
    order.sort_unstable_by_key(|&i| (o.device[i as usize], o.start_ns[i as usize]));
    // Launch calls by (pid, correlation id), to count the launches behind each group.
    let c = &ix.calls;
    let mut launch_by_corr: Vec<u32> = (0..c.start_ns.len() as u32)
        .filter(|&i| c.is_launch(i as usize) && c.correlation_id[i as usize] >= 0)
        .collect();
    launch_by_corr.sort_unstable_by_key(|&i| (c.pid[i as usize], c.correlation_id[i as usize]));
    let mut out = Vec::new();
    let mut lo = 0;
    while lo < order.len() {
        let dev = o.device[order[lo] as usize];
        let mut running = o.end_ns[order[lo] as usize];
        let mut hi = lo + 1;
        while hi < order.len() {
            let i = order[hi] as usize;
            // Saturating: a hostile end time near i64::MAX must not wrap.
            if o.device[i] != dev || o.start_ns[i] > running.saturating_add(threshold) {
                break;
            }
            running = running.max(o.end_ns[i]);
            hi += 1;
        }
        let ops: Vec<u32> = order[lo..hi].to_vec();
        let mut keys: Vec<(i32, i32)> = ops
            .iter()
            .map(|&i| (o.pid[i as usize], o.correlation_id[i as usize]))
            .filter(|k| k.1 >= 0)
            .collect();
        keys.sort_unstable();
        keys.dedup();
        let (mut launches, mut host) = (0u64, 0i64);
        for k in keys {
            let p = launch_by_corr
                .partition_point(|&i| (c.pid[i as usize], c.correlation_id[i as usize]) < k);
            if let Some(&ci) = launch_by_corr.get(p) {
                let ci = ci as usize;
                if (c.pid[ci], c.correlation_id[ci]) == k {
                    launches += 1;
                    host += c.end_ns[ci] - c.start_ns[ci];
                }
            }
        }
        out.push(GapGroup {
            pid: i64::from(o.pid[ops[0] as usize]),
            device: i64::from(dev),
            ops,
            launches,
            launch_host_ns: host,
        });
        lo = hi;
    }
    Ok(Some(Found {
        found_by: FoundBy::Gaps,
        hint: None,
        detail: None,
        notes: Vec::new(),
        warnings: Vec::new(),
        items: Items::Groups(out),
    }))
}
