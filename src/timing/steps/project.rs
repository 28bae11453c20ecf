//! Projection: a step's host span → the GPU ops its thread launched (span and tail),
//! measured as busy time, kernel rows and per-name totals.
//!
//! The tail of a step is what its thread launched after the span ended and before the
//! next step's span started on that thread: vLLM samples after `execute_model` returns,
//! SGLang after `step[…]` closes, so that work belongs to the earlier step.

use std::collections::HashMap;
use std::sync::Arc;

use crate::categories::Categorizer;
use crate::exit::Result;
use crate::timing::overlap::{display_name, exclusive_in_order, name_ranks};
use crate::timing::stepname::{BatchComposition, StepKind};
use crate::trace::{OpKind, RangeKind, SourceFormat, Trace};

use super::discover::{Candidate, Found, GapGroup, Items};
use super::{FoundBy, HostCall, StepKernel};

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
    group: impl Fn(usize) -> Option<(i64, i64)>,
    key: impl Fn(usize) -> i64,
) -> Vec<u32> {
    // Group ordinal per row, in first-seen order; runs of one group skip the map.
    let mut ordinal: HashMap<(i64, i64), u32> = HashMap::new();
    let mut groups: Vec<(i64, i64)> = Vec::new();
    let mut of_row: Vec<u32> = Vec::with_capacity(n);
    let mut last: Option<((i64, i64), u32)> = None;
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
            |pid: &'a [i64], corr: &'a [i64]| move |i: usize| (corr[i] >= 0).then_some((pid[i], 0));
        let ops_by_corr = grouped_order(
            ops.start_ns.len(),
            with_corr(ops.pid, ops.correlation_id),
            |i| ops.correlation_id[i],
        );
        let calls_by_corr = grouped_order(
            calls.start_ns.len(),
            with_corr(calls.pid, calls.correlation_id),
            |i| calls.correlation_id[i],
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
    fn launched(&self) -> Vec<bool> {
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
            (c.pid[i], c.tid[i], c.start_ns[i])
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
            .partition_point(|&i| c.pid[i as usize] < pid);
        let hi = lo + self.calls_by_thread[lo..].partition_point(|&i| c.pid[i as usize] <= pid);
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

    /// Union length of the ops' intervals (any order).
    pub fn union_ns(&self, ops: &mut [u32]) -> i64 {
        let o = &self.ops;
        ops.sort_unstable_by_key(|&i| o.start_ns[i as usize]);
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
}

/// GPU-side measurements of one set of ops.
pub struct Measured {
    pub device: Option<i64>,
    pub gpu_start: Option<i64>,
    pub gpu_end: Option<i64>,
    pub busy: i64,
    pub kernels: u64,
    pub graph_replays: u64,
    pub all_kernels: Vec<StepKernel>,
}

/// What the tail adds to a step.
#[derive(Default)]
pub struct Tail {
    pub busy: i64,
    pub kernels: u64,
    pub ops: u64,
}

/// Raw per-step record before series bookkeeping.
pub struct Raw {
    pub pid: i64,
    pub tid: Option<i64>,
    pub name: String,
    pub name_id: Option<u32>,
    pub found_by: FoundBy,
    pub kind: StepKind,
    pub kind_guess: Option<StepKind>,
    pub composition: Option<BatchComposition>,
    pub cpu: Option<(i64, i64)>,
    pub launches: u64,
    pub launch_host_ns: i64,
    pub longest: Option<HostCall>,
    pub m: Measured,
    pub tail: Tail,
}

/// A step's ops before measuring.
struct Collected {
    raw: Raw,
    span: Vec<u32>,
    tail: Vec<u32>,
}

/// Projects every found step, marking which ops some step accounted for.
pub struct Projector<'i, 'a> {
    ix: &'i Index<'a>,
    cats: &'i Categorizer,
    categories: HashMap<u32, Arc<str>>,
    names: HashMap<u32, (Arc<str>, Arc<str>)>,
    /// Per op: accounted to some step (span or tail).
    pub claimed: Vec<bool>,
    /// Ops attributed by the time-window fallback.
    pub by_window: usize,
}

impl<'i, 'a> Projector<'i, 'a> {
    pub fn new(ix: &'i Index<'a>, cats: &'i Categorizer) -> Self {
        Projector {
            ix,
            cats,
            categories: HashMap::new(),
            names: HashMap::new(),
            claimed: vec![false; ix.ops.start_ns.len()],
            by_window: 0,
        }
    }

    pub fn project_all(&mut self, found: &Found) -> Vec<Raw> {
        let mut collected = match &found.items {
            Items::Spans(c) => self.spans(c, found.found_by),
            Items::Groups(g) => self.groups(g),
        };
        if self.ix.trace.meta.format == SourceFormat::Kineto {
            self.window_fallback(&mut collected);
        }
        collected
            .into_iter()
            .map(|mut c| {
                c.raw.m = self.measure(&mut c.span);
                if !c.tail.is_empty() {
                    let mut both = c.span.clone();
                    both.extend_from_slice(&c.tail);
                    let o = &self.ix.ops;
                    c.raw.tail = Tail {
                        busy: self.ix.union_ns(&mut both) - c.raw.m.busy,
                        kernels: c
                            .tail
                            .iter()
                            .filter(|&&i| o.kind[i as usize] == OpKind::Kernel as u32)
                            .count() as u64,
                        ops: c.tail.len() as u64,
                    };
                }
                c.raw
            })
            .collect()
    }

    fn claim(&mut self, ops: &mut Vec<u32>) {
        ops.retain(|&i| !std::mem::replace(&mut self.claimed[i as usize], true));
    }

    fn spans(&mut self, cands: &[Candidate], found_by: FoundBy) -> Vec<Collected> {
        // Each span's tail ends where the next span on its thread starts.
        let mut order: Vec<usize> = (0..cands.len()).collect();
        order.sort_by_key(|&i| (cands[i].pid, cands[i].tid, cands[i].start));
        let mut tail_end = vec![i64::MAX; cands.len()];
        for w in order.windows(2) {
            let (a, b) = (&cands[w[0]], &cands[w[1]]);
            if (a.pid, a.tid) == (b.pid, b.tid) {
                tail_end[w[0]] = b.start;
            }
        }
        let mut out = Vec::with_capacity(cands.len());
        for (c, &te) in cands.iter().zip(&tail_end) {
            let mut col = self.span(c, found_by);
            let after = col.raw.cpu.map_or(c.end, |x| x.1).saturating_add(1);
            let te = if c.no_tail { after } else { te };
            let mut tail = Vec::new();
            for &ci in self.ix.calls_in(c.pid, c.tid, after, te.saturating_sub(1)) {
                tail.extend_from_slice(self.ix.ops_of_call(ci as usize));
            }
            self.claim(&mut col.span);
            self.claim(&mut tail);
            col.tail = tail;
            out.push(col);
        }
        out
    }

    fn span(&self, c: &Candidate, found_by: FoundBy) -> Collected {
        let ix = self.ix;
        let calls = &ix.calls;
        let mut ops: Vec<u32> = Vec::new();
        let (mut launches, mut launch_host_ns) = (0u64, 0i64);
        let mut longest: Option<(usize, i64)> = None;
        // A single-launch graph step is that launch alone (not the driver calls nested
        // in it), as it always was.
        let in_span: Vec<u32> = match c.exact_call {
            Some(ci) => vec![ci],
            None if c.all_threads => ix
                .threads_of(c.pid)
                .into_iter()
                .flat_map(|tid| ix.calls_in(c.pid, tid, c.start, c.end).iter().copied())
                .collect(),
            None => ix.calls_in(c.pid, c.tid, c.start, c.end).to_vec(),
        };
        for ci in in_span {
            let ci = ci as usize;
            let dur = calls.end_ns[ci] - calls.start_ns[ci];
            if calls.is_launch[ci] != 0 {
                launches += 1;
                launch_host_ns += dur;
            } else if longest.is_none_or(|(_, d)| dur > d) {
                longest = Some((ci, dur));
            }
            ops.extend_from_slice(ix.ops_of_call(ci));
        }
        let (kind, composition) = match &c.parsed {
            Some(p) => (p.kind, Some(p.composition.clone())),
            None => (StepKind::Unknown, None),
        };
        let name = match (&c.label, c.name_id) {
            (Some(l), _) => l.clone(),
            (None, Some(id)) => ix.trace.name(id).to_owned(),
            (None, None) => String::new(),
        };
        Collected {
            raw: Raw {
                pid: c.pid,
                tid: Some(c.tid),
                name,
                name_id: c.name_id,
                found_by: c.found_by.unwrap_or(found_by),
                kind,
                kind_guess: c.kind_guess,
                composition,
                cpu: Some((c.start, c.end)),
                launches,
                launch_host_ns,
                longest: longest.map(|(ci, d)| HostCall {
                    name: ix.trace.name(calls.name_id[ci]).to_owned(),
                    start_ns: calls.start_ns[ci],
                    dur_ns: d,
                }),
                m: empty_measured(),
                tail: Tail::default(),
            },
            span: ops,
            tail: Vec::new(),
        }
    }

    fn groups(&mut self, groups: &[GapGroup]) -> Vec<Collected> {
        groups
            .iter()
            .map(|g| {
                let mut span = g.ops.clone();
                self.claim(&mut span);
                Collected {
                    raw: Raw {
                        pid: g.pid,
                        tid: None,
                        name: format!("[gap-split device {}]", g.device),
                        name_id: None,
                        found_by: FoundBy::Gaps,
                        kind: StepKind::Unknown,
                        kind_guess: None,
                        composition: None,
                        cpu: None,
                        launches: g.launches,
                        launch_host_ns: g.launch_host_ns,
                        longest: None,
                        m: empty_measured(),
                        tail: Tail::default(),
                    },
                    span,
                    tail: Vec::new(),
                }
            })
            .collect()
    }

    /// Kineto drops the launching call of ops it saw only on the GPU side (launched
    /// before the window, or lost): such an op joins the step whose GPU annotation span
    /// (else host span) on the same device contains its start. Labelled in the notes.
    fn window_fallback(&mut self, steps: &mut [Collected]) {
        let ix = self.ix;
        let o = &ix.ops;
        let launched = ix.launched();
        let orphans: Vec<u32> = (0..o.start_ns.len() as u32)
            .filter(|&i| !self.claimed[i as usize] && !launched[i as usize])
            .collect();
        if orphans.is_empty() {
            return;
        }
        let ann = gpu_annotations(ix.trace);
        for c in steps.iter_mut() {
            let Some(&first) = c.span.first() else {
                continue;
            };
            let dev = o.device[first as usize];
            let (lo, hi) = c.span.iter().fold((i64::MAX, i64::MIN), |(a, b), &i| {
                (a.min(o.start_ns[i as usize]), b.max(o.end_ns[i as usize]))
            });
            let window = c
                .raw
                .name_id
                .and_then(|id| ann.get(&(dev, id)))
                .and_then(|v| v.iter().find(|(a, b)| *a < hi && *b > lo).copied())
                .or(c.raw.cpu);
            let Some((ws, we)) = window else { continue };
            let before = c.span.len();
            for &i in &orphans {
                let i = i as usize;
                if !self.claimed[i]
                    && o.device[i] == dev
                    && o.start_ns[i] >= ws
                    && o.start_ns[i] < we
                {
                    self.claimed[i] = true;
                    c.span.push(i as u32);
                }
            }
            self.by_window += c.span.len() - before;
        }
    }

    fn measure(&mut self, ops: &mut [u32]) -> Measured {
        let ix = self.ix;
        let o = &ix.ops;
        if ops.is_empty() {
            return empty_measured();
        }
        ix.sort_ops(ops);
        let starts: Vec<i64> = ops.iter().map(|&i| o.start_ns[i as usize]).collect();
        let ends: Vec<i64> = ops.iter().map(|&i| o.end_ns[i as usize]).collect();
        let excl = exclusive_in_order(&starts, &ends);
        let busy = excl.iter().sum();
        let mut per_name: Vec<(u32, u32, i64, i64)> = ops
            .iter()
            .zip(&excl)
            .map(|(&i, &x)| {
                let i = i as usize;
                (o.name_id[i], o.short_id[i], o.end_ns[i] - o.start_ns[i], x)
            })
            .collect();
        per_name.sort_unstable_by_key(|r| r.0);
        let mut all_kernels: Vec<StepKernel> = Vec::new();
        let mut k = 0;
        while k < per_name.len() {
            let id = per_name[k].0;
            let (mut n, mut total, mut ex) = (0u64, 0i64, 0i64);
            let short = per_name[k].1;
            while k < per_name.len() && per_name[k].0 == id {
                n += 1;
                total += per_name[k].2;
                ex += per_name[k].3;
                k += 1;
            }
            let (name, short_name) = self
                .names
                .entry(id)
                .or_insert_with(|| {
                    let name = ix.trace.name(id);
                    (
                        Arc::from(name),
                        Arc::from(display_name(ix.trace.name(short), name)),
                    )
                })
                .clone();
            let category = self
                .categories
                .entry(id)
                .or_insert_with(|| Arc::from(self.cats.categorize(&name)))
                .clone();
            all_kernels.push(StepKernel {
                name,
                short_name,
                category,
                instances: n,
                total_ns: total,
                exclusive_ns: ex,
            });
        }
        all_kernels.sort_by(|a, b| {
            b.exclusive_ns
                .cmp(&a.exclusive_ns)
                .then_with(|| a.name.cmp(&b.name))
        });
        let count = |k: OpKind| {
            ops.iter()
                .filter(|&&i| o.kind[i as usize] == k as u32)
                .count() as u64
        };
        Measured {
            device: Some(o.device[ops[0] as usize]),
            gpu_start: starts.iter().min().copied(),
            gpu_end: ends.iter().max().copied(),
            busy,
            kernels: count(OpKind::Kernel),
            graph_replays: count(OpKind::Graph),
            all_kernels,
        }
    }
}

fn empty_measured() -> Measured {
    Measured {
        device: None,
        gpu_start: None,
        gpu_end: None,
        busy: 0,
        kernels: 0,
        graph_replays: 0,
        all_kernels: Vec::new(),
    }
}

/// Kineto `gpu_user_annotation` spans by (device, name id).
pub fn gpu_annotations(trace: &Trace) -> HashMap<(i64, u32), Vec<(i64, i64)>> {
    let mut m: HashMap<(i64, u32), Vec<(i64, i64)>> = HashMap::new();
    if let Ok(r) = trace.ranges_view() {
        for i in 0..r.start_ns.len() {
            if r.kind[i] == RangeKind::GpuAnnotation as u32 {
                m.entry((r.pid[i], r.name_id[i]))
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
            let pid: Vec<i64> = (0..n).map(|_| 100 + rnd(3)).collect();
            let tid: Vec<i64> = (0..n).map(|_| rnd(4)).collect();
            let key: Vec<i64> = (0..n as i64)
                .map(|i| if shuffled { rnd(50) } else { i / 3 })
                .collect();
            let has: Vec<bool> = (0..n).map(|_| rnd(10) != 0).collect();
            let got = grouped_order(n, |i| has[i].then_some((pid[i], tid[i])), |i| key[i]);
            let mut want: Vec<(i64, i64, i64, u32)> = (0..n)
                .filter(|&i| has[i])
                .map(|i| (pid[i], tid[i], key[i], i as u32))
                .collect();
            want.sort_unstable();
            let want: Vec<u32> = want.into_iter().map(|t| t.3).collect();
            assert_eq!(got, want, "n = {n}, shuffled = {shuffled}");
        }
    }
}
