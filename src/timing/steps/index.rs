//! Indexes built once per trace so each step's projection is a few binary searches: calls
//! per thread in time order, each call's ops by (process, correlation id), and the GPU
//! annotation spans of Kineto traces.

use std::collections::HashMap;

use crate::exit::Result;
use crate::timing::overlap::name_ranks;
use crate::trace::{OpsView, RangeKind, Trace};

/// Indexes built once per trace so each step's projection is a few binary searches.
pub struct Index<'a> {
    pub trace: &'a Trace,
    pub ops: crate::trace::OpsView<'a>,
    pub calls: crate::trace::CallsView<'a>,
    /// Op indices sorted by (pid, correlation id, index); ops without an id are left out.
    ops_by_corr: Vec<u32>,
    /// Per call: where its ops (same pid and correlation id) start in `ops_by_corr`
    /// (`NONE` when it launched none), found once by a merge of calls and ops in the same
    /// order, so a step's projection reads each call's ops without a search.
    call_ops: Vec<u32>,
    /// Call indices sorted by (pid, tid, start, index).
    pub calls_by_thread: Vec<u32>,
    name_rank: Vec<u32>,
}

/// No index: the `Index::call_ops` of a call that launched no op, the group of a row that
/// has none.
const NONE: u32 = u32::MAX;

/// Indices of the rows that have a group, sorted by (group, order key, index): a
/// counting sort by group (a trace has few processes and threads), then each group by
/// its key, which is almost always in order already (tables are written in time order,
/// and correlation ids grow with launch time), so the check is all it usually costs.
/// It needs two `u32` per row beside the columns (sorting 24-byte keys instead took a
/// 4M-kernel `analyze` past 1 GiB).
fn grouped_order(
    n: usize,
    group: impl Fn(usize) -> Option<(i32, i64)>,
    key: impl Fn(usize) -> i64,
) -> Vec<u32> {
    // Group ordinal per row, in first-seen order; runs of one group skip the map.
    let mut ordinal: HashMap<(i32, i64), u32> = HashMap::new();
    let mut groups: Vec<(i32, i64)> = Vec::new();
    let mut of_row: Vec<u32> = Vec::with_capacity(n);
    let mut last: Option<((i32, i64), u32)> = None;
    for i in 0..n {
        let Some(g) = group(i) else {
            of_row.push(NONE);
            continue;
        };
        let k = match last {
            Some((lg, lk)) if lg == g => lk,
            _ => *ordinal.entry(g).or_insert_with(|| {
                groups.push(g);
                groups.len() as u32 - 1
            }),
        };
        last = Some((g, k));
        of_row.push(k);
    }
    // Rank of each ordinal in group order, then bucket offsets.
    let mut sorted: Vec<u32> = (0..groups.len() as u32).collect();
    sorted.sort_unstable_by_key(|&k| groups[k as usize]);
    let mut rank = vec![0u32; groups.len()];
    for (r, &k) in sorted.iter().enumerate() {
        rank[k as usize] = r as u32;
    }
    let mut offset = vec![0usize; groups.len() + 1];
    for &k in of_row.iter().filter(|&&k| k != NONE) {
        offset[rank[k as usize] as usize + 1] += 1;
    }
    for r in 0..groups.len() {
        offset[r + 1] += offset[r];
    }
    let mut out = vec![0u32; offset[groups.len()]];
    let mut next = offset.clone();
    for (i, &k) in of_row.iter().enumerate().filter(|(_, &k)| k != NONE) {
        let r = rank[k as usize] as usize;
        out[next[r]] = i as u32;
        next[r] += 1;
    }
    drop(of_row);
    for w in offset.windows(2) {
        let part = &mut out[w[0]..w[1]];
        if !part.is_sorted_by_key(|&i| key(i as usize)) {
            // Stable: equal keys keep index order.
            part.sort_by_key(|&i| key(i as usize));
        }
    }
    out
}

impl<'a> Index<'a> {
    pub fn new(trace: &'a Trace) -> Result<Self> {
        let ops = trace.ops_view()?;
        let calls = trace.calls_view()?;
        let with_corr =
            |pid: &'a [i32], corr: &'a [i32]| move |i: usize| (corr[i] >= 0).then_some((pid[i], 0));
        let ops_by_corr = grouped_order(
            ops.start_ns.len(),
            with_corr(ops.pid, ops.correlation_id),
            |i| i64::from(ops.correlation_id[i]),
        );
        let calls_by_corr = grouped_order(
            calls.start_ns.len(),
            with_corr(calls.pid, calls.correlation_id),
            |i| i64::from(calls.correlation_id[i]),
        );
        // Merge the two sorted lists: each call gets the start of the run of ops with
        // its (pid, correlation id).
        let mut call_ops = vec![NONE; calls.start_ns.len()];
        let op_key = |j: usize| {
            let o = ops_by_corr[j] as usize;
            (ops.pid[o], ops.correlation_id[o])
        };
        let mut j = 0;
        for &ci in &calls_by_corr {
            let ci = ci as usize;
            let key = (calls.pid[ci], calls.correlation_id[ci]);
            while j < ops_by_corr.len() && op_key(j) < key {
                j += 1;
            }
            if j < ops_by_corr.len() && op_key(j) == key {
                call_ops[ci] = j as u32;
            }
        }
        drop(calls_by_corr);
        let calls_by_thread = grouped_order(
            calls.start_ns.len(),
            |i| Some((calls.pid[i], calls.tid[i])),
            |i| calls.start_ns[i],
        );
        Ok(Index {
            trace,
            ops,
            calls,
            ops_by_corr,
            call_ops,
            calls_by_thread,
            name_rank: name_ranks(&trace.strings),
        })
    }

    /// Ops launched by this call (same pid and correlation id).
    pub fn ops_of_call(&self, call: usize) -> &[u32] {
        let lo = self.call_ops[call];
        if lo == NONE {
            return &[];
        }
        let lo = lo as usize;
        let key = (self.calls.pid[call], self.calls.correlation_id[call]);
        let o = &self.ops;
        let len = self.ops_by_corr[lo..]
            .iter()
            .take_while(|&&i| (o.pid[i as usize], o.correlation_id[i as usize]) == key)
            .count();
        &self.ops_by_corr[lo..lo + len]
    }

    /// Per op: whether some host call in the trace launched it.
    pub(super) fn launched(&self) -> Vec<bool> {
        let mut out = vec![false; self.ops.start_ns.len()];
        for ci in 0..self.calls.start_ns.len() {
            for &o in self.ops_of_call(ci) {
                out[o as usize] = true;
            }
        }
        out
    }

    /// Calls on one thread that start inside [start, end].
    pub fn calls_in(&self, pid: i64, tid: i64, start: i64, end: i64) -> &[u32] {
        let c = &self.calls;
        let key = |i: u32| {
            let i = i as usize;
            (i64::from(c.pid[i]), c.tid[i], c.start_ns[i])
        };
        let lo = self
            .calls_by_thread
            .partition_point(|&i| key(i) < (pid, tid, start));
        let hi = lo + self.calls_by_thread[lo..].partition_point(|&i| key(i) <= (pid, tid, end));
        &self.calls_by_thread[lo..hi]
    }

    /// The threads of a process that made calls.
    pub fn threads_of(&self, pid: i64) -> Vec<i64> {
        let c = &self.calls;
        let lo = self
            .calls_by_thread
            .partition_point(|&i| i64::from(c.pid[i as usize]) < pid);
        let hi = lo
            + self.calls_by_thread[lo..].partition_point(|&i| i64::from(c.pid[i as usize]) <= pid);
        let mut tids: Vec<i64> = self.calls_by_thread[lo..hi]
            .iter()
            .map(|&i| c.tid[i as usize])
            .collect();
        tids.dedup();
        tids
    }

    /// Sort op indices in the device sweep's order: (start, end, name).
    pub fn sort_ops(&self, ops: &mut [u32]) {
        let o = &self.ops;
        ops.sort_unstable_by_key(|&i| {
            let i = i as usize;
            (
                o.start_ns[i],
                o.end_ns[i],
                self.name_rank[o.name_id[i] as usize],
            )
        });
    }

    /// The ops view alone, the lookups freed (a u32 per op and two per call): what the
    /// per-series sums after projection read.
    pub fn into_ops(self) -> OpsView<'a> {
        self.ops
    }
}

/// Union length of the intervals of ops `ops` (any order; sorted in place).
pub fn union_ns(o: &OpsView<'_>, ops: &mut [u32]) -> i64 {
    // A few start-ordered runs (one per source table) at most: the stable sort merges
    // them in near-linear time. Ties do not change a union.
    if !ops.is_sorted_by_key(|&i| o.start_ns[i as usize]) {
        ops.sort_by_key(|&i| o.start_ns[i as usize]);
    }
    let (mut total, mut cur): (i64, Option<(i64, i64)>) = (0, None);
    for &i in ops.iter() {
        let (s, e) = (o.start_ns[i as usize], o.end_ns[i as usize]);
        cur = match cur {
            Some((a, b)) if s <= b => Some((a, b.max(e))),
            Some((a, b)) => {
                total = total.saturating_add(b.saturating_sub(a));
                Some((s, e))
            }
            None => Some((s, e)),
        };
    }
    if let Some((a, b)) = cur {
        total = total.saturating_add(b.saturating_sub(a));
    }
    total
}

/// Kineto `gpu_user_annotation` spans by (device, name id).
pub fn gpu_annotations(trace: &Trace) -> HashMap<(i64, u32), Vec<(i64, i64)>> {
    let mut m: HashMap<(i64, u32), Vec<(i64, i64)>> = HashMap::new();
    if let Ok(r) = trace.ranges_view() {
        for i in 0..r.start_ns.len() {
            if r.kind[i] == RangeKind::GpuAnnotation as u32 {
                m.entry((i64::from(r.pid[i]), r.name_id[i]))
                    .or_default()
                    .push((r.start_ns[i], r.end_ns[i]));
            }
        }
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `grouped_order` against a plain sort of (group, key, index) tuples, on rows in
    /// time order (sorted runs), shuffled rows, rows with no group and equal keys.
    #[test]
    fn grouped_order_is_a_total_sort_by_group_key_index() {
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut rnd = |m: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % m) as i64
        };
        for (n, shuffled) in [
            (0, false),
            (1, false),
            (500, false),
            (500, true),
            (3000, true),
        ] {
            let pid: Vec<i32> = (0..n).map(|_| 100 + rnd(3) as i32).collect();
            let tid: Vec<i64> = (0..n).map(|_| rnd(4)).collect();
            let key: Vec<i64> = (0..n as i64)
                .map(|i| if shuffled { rnd(50) } else { i / 3 })
                .collect();
            let has: Vec<bool> = (0..n).map(|_| rnd(10) != 0).collect();
            let got = grouped_order(n, |i| has[i].then_some((pid[i], tid[i])), |i| key[i]);
            let mut want: Vec<(i32, i64, i64, u32)> = (0..n)
                .filter(|&i| has[i])
                .map(|i| (pid[i], tid[i], key[i], i as u32))
                .collect();
            want.sort_unstable();
            let want: Vec<u32> = want.into_iter().map(|t| t.3).collect();
            assert_eq!(got, want, "n = {n}, shuffled = {shuffled}");
        }
    }
}
