//! Indexes built once per trace so each step's projection is a few binary searches: calls
//! per thread in time order, each call's ops by (process, correlation id), and the GPU
//! annotation spans of Kineto traces.

use std::collections::HashMap;

use crate::exit::Result;
use crate::timing::overlap::name_ranks;
use crate::timing::par;
use crate::trace::{OpsView, RangeKind, Trace};

/// Indexes built once per trace so each step's projection is a few binary searches.
pub(crate) struct Index<'a> {
    pub trace: &'a Trace,
    /// The threads it was built on, which the stages reading it run on too.
    pub workers: usize,
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

/// One chunk's placement: its first row, each row's group rank, its piece of each group.
type Fill<'o> = (usize, Vec<u32>, Vec<&'o mut [u32]>);

/// Fewest rows worth a thread of their own in the index's sorts.
const MIN_ROWS: usize = 1 << 16;

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
    group: impl Fn(usize) -> Option<(i32, i64)> + Sync,
    key: impl Fn(usize) -> i64 + Sync,
    threads: usize,
) -> Result<Vec<u32>> {
    let min = par::min_chunk(MIN_ROWS);
    grouped_order_in(n, group, key, threads, min)
}

/// [`grouped_order`] in chunks of at least `min` rows on up to `threads` threads.
fn grouped_order_in(
    n: usize,
    group: impl Fn(usize) -> Option<(i32, i64)> + Sync,
    key: impl Fn(usize) -> i64 + Sync,
    threads: usize,
    min: usize,
) -> Result<Vec<u32>> {
    let rs = par::ranges(n, threads, min);
    // Per chunk of rows: its groups in first-seen order and each row's ordinal among them
    // (runs of one group skip the map).
    let marked = par::map_ranges(&rs, |r| {
        let mut ordinal: HashMap<(i32, i64), u32> = HashMap::new();
        let mut groups: Vec<(i32, i64)> = Vec::new();
        let mut of_row: Vec<u32> = Vec::with_capacity(r.len());
        let mut last: Option<((i32, i64), u32)> = None;
        for i in r {
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
        (groups, of_row)
    })?;
    // Every group in order; each chunk's ordinals become ranks in it, and are counted.
    let mut all: Vec<(i32, i64)> = marked.iter().flat_map(|m| m.0.iter().copied()).collect();
    all.sort_unstable();
    all.dedup();
    let all = &all;
    let mut ranked: Vec<(Vec<u32>, Vec<usize>)> = par::map_vec(marked, threads, 1, |chunk| {
        chunk
            .into_iter()
            .map(|(groups, mut of_row)| {
                let rank: Vec<u32> = groups
                    .iter()
                    .map(|g| all.binary_search(g).unwrap_or(0) as u32)
                    .collect();
                let mut count = vec![0usize; all.len()];
                for k in of_row.iter_mut().filter(|k| **k != NONE) {
                    *k = rank[*k as usize];
                    count[*k as usize] += 1;
                }
                (of_row, count)
            })
            .collect()
    })?;
    // Group r's rows are chunk 0's, then chunk 1's, …: cut the output into those pieces
    // in that order, each chunk fills its own.
    let total: usize = ranked.iter().flat_map(|c| c.1.iter()).sum();
    let mut out = vec![0u32; total];
    let mut bounds = Vec::with_capacity(all.len() + 1);
    {
        let mut pieces: Vec<Vec<&mut [u32]>> = ranked.iter().map(|_| Vec::new()).collect();
        let mut rest: &mut [u32] = &mut out;
        let mut at = 0;
        for r in 0..all.len() {
            bounds.push(at);
            for (c, (_, count)) in ranked.iter().enumerate() {
                let (head, tail) = std::mem::take(&mut rest).split_at_mut(count[r]);
                pieces[c].push(head);
                rest = tail;
                at += count[r];
            }
        }
        bounds.push(at);
        let work: Vec<Fill<'_>> = rs
            .iter()
            .zip(ranked.iter_mut())
            .zip(pieces)
            .map(|((r, c), p)| (r.start, std::mem::take(&mut c.0), p))
            .collect();
        par::map_vec(work, threads, 1, |chunk| {
            for (first, of_row, mut pieces) in chunk {
                let mut next = vec![0usize; pieces.len()];
                for (i, &k) in of_row.iter().enumerate().filter(|(_, &k)| k != NONE) {
                    let k = k as usize;
                    pieces[k][next[k]] = (first + i) as u32;
                    next[k] += 1;
                }
            }
            Vec::<()>::new()
        })?;
    }
    drop(ranked);
    // Each group by its key: almost always in order already, so the check (in chunks on
    // the threads) is all it usually costs.
    for w in bounds.windows(2) {
        let part = &mut out[w[0]..w[1]];
        let sorted = par::map_ranges(&par::ranges(part.len(), threads, min), |r| {
            // Each chunk checks its pairs, the last one reaching into the next chunk.
            let hi = (r.end + 1).min(part.len());
            part[r.start..hi].is_sorted_by_key(|&i| key(i as usize))
        })?;
        if sorted.iter().any(|s| !s) {
            // Stable: equal keys keep index order.
            part.sort_by_key(|&i| key(i as usize));
        }
    }
    Ok(out)
}

impl<'a> Index<'a> {
    /// The lookups of `trace`, built on `workers` threads.
    pub fn new(trace: &'a Trace, workers: usize) -> Result<Self> {
        let ops = trace.ops_view()?;
        let calls = trace.calls_view()?;
        let with_corr =
            |pid: &'a [i32], corr: &'a [i32]| move |i: usize| (corr[i] >= 0).then_some((pid[i], 0));
        let ops_by_corr = grouped_order(
            ops.start_ns.len(),
            with_corr(ops.pid, ops.correlation_id),
            |i| i64::from(ops.correlation_id[i]),
            workers,
        )?;
        let calls_by_corr = grouped_order(
            calls.start_ns.len(),
            with_corr(calls.pid, calls.correlation_id),
            |i| i64::from(calls.correlation_id[i]),
            workers,
        )?;
        // Merge the two sorted lists: each call gets the start of the run of ops with
        // its (pid, correlation id). In chunks of calls, each starting where a binary
        // search puts its first call, then walking both lists as one thread would.
        let op_key = |j: usize| {
            let o = ops_by_corr[j] as usize;
            (ops.pid[o], ops.correlation_id[o])
        };
        let call_key = |ci: u32| (calls.pid[ci as usize], calls.correlation_id[ci as usize]);
        let starts = par::map_chunks(
            calls_by_corr.len(),
            workers,
            par::min_chunk(MIN_ROWS),
            |r| {
                let Some(&first) = calls_by_corr.get(r.start) else {
                    return Vec::new();
                };
                let first = call_key(first);
                let mut j = ops_by_corr.partition_point(|&o| {
                    (ops.pid[o as usize], ops.correlation_id[o as usize]) < first
                });
                let mut out = Vec::with_capacity(r.len());
                for &ci in &calls_by_corr[r] {
                    let key = call_key(ci);
                    while j < ops_by_corr.len() && op_key(j) < key {
                        j += 1;
                    }
                    let hit = j < ops_by_corr.len() && op_key(j) == key;
                    out.push(if hit { j as u32 } else { NONE });
                }
                out
            },
        )?;
        let mut call_ops = vec![NONE; calls.start_ns.len()];
        for (&ci, j) in calls_by_corr.iter().zip(starts) {
            call_ops[ci as usize] = j;
        }
        drop(calls_by_corr);
        let calls_by_thread = grouped_order(
            calls.start_ns.len(),
            |i| Some((calls.pid[i], calls.tid[i])),
            |i| calls.start_ns[i],
            workers,
        )?;
        Ok(Index {
            trace,
            workers,
            ops,
            calls,
            ops_by_corr,
            call_ops,
            calls_by_thread,
            name_rank: name_ranks(&trace.strings),
        })
    }

    /// Ops launched by this call (same pid and correlation id).
    pub(crate) fn ops_of_call(&self, call: usize) -> &[u32] {
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
    pub(crate) fn calls_in(&self, pid: i64, tid: i64, start: i64, end: i64) -> &[u32] {
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
    pub(crate) fn threads_of(&self, pid: i64) -> Vec<i64> {
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
    pub(crate) fn sort_ops(&self, ops: &mut [u32]) {
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
    pub(crate) fn into_ops(self) -> OpsView<'a> {
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
pub(crate) fn gpu_annotations(trace: &Trace) -> HashMap<(i64, u32), Vec<(i64, i64)>> {
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
            (3001, false),
        ] {
            let pid: Vec<i32> = (0..n).map(|_| 100 + rnd(3) as i32).collect();
            let tid: Vec<i64> = (0..n).map(|_| rnd(4)).collect();
            let mut key: Vec<i64> = (0..n as i64)
                .map(|i| if shuffled { rnd(50) } else { i / 3 })
                .collect();
            if n == 3001 {
                // In order but for one late pair: only the last chunk's check sees it.
                key.swap(2900, 2990);
            }
            let has: Vec<bool> = (0..n).map(|_| rnd(10) != 0).collect();
            let mut want: Vec<(i32, i64, i64, u32)> = (0..n)
                .filter(|&i| has[i])
                .map(|i| (pid[i], tid[i], key[i], i as u32))
                .collect();
            want.sort_unstable();
            let want: Vec<u32> = want.into_iter().map(|t| t.3).collect();
            // Serially, and in chunks of 1, 7 and 500 rows on 2, 3 and 8 threads (a chunk
            // edge inside a group, a group's check split where its order breaks).
            for (threads, min) in [(1, 1), (2, 1), (3, 7), (8, 500)] {
                let got = grouped_order_in(
                    n,
                    |i| has[i].then_some((pid[i], tid[i])),
                    |i| key[i],
                    threads,
                    min,
                )
                .unwrap();
                assert_eq!(
                    got, want,
                    "n = {n}, shuffled = {shuffled}, {threads} threads"
                );
            }
        }
    }
}
