//! The parallel read of one export — GPU ops, host calls and NVTX ranges on their own
//! connections and threads, the kernel, runtime and NVTX tables in rowid slices — and the
//! merge of the readers' parts into one interner and one builder per frame, in read order.

use std::sync::atomic::{AtomicUsize, Ordering};

use rusqlite::Connection;

use super::super::queries;
use super::super::schema::Schema;
use super::super::strings::StringTable;
use super::host::{load_calls, load_ranges, RangesPart};
use super::ops::{load_ops, OpsOut, OpsPart};
use super::split::Split;
use super::{Db, Dropped};
use crate::exit::{Error, Result};
use crate::source::LoadOptions;
use crate::trace::{remap, CallsBuilder, Interner, OpsBuilder};

/// A host reader's result: its rows, its local names, rows dropped for bad times.
type HostPart<B> = Result<(B, Vec<String>, u64)>;

/// What the readers returned, one entry per reader (kernel, runtime and NVTX slices in
/// rowid order; no call slice when calls are not read).
pub(super) struct Read {
    pub(super) ops: Vec<Result<OpsOut>>,
    pub(super) calls: Vec<HostPart<CallsBuilder>>,
    pub(super) ranges: Vec<HostPart<RangesPart>>,
}

/// One read: a kernel slice (with the small op tables on the last), a runtime slice or
/// an NVTX slice, by its index in the slice lists.
#[derive(Clone, Copy)]
enum Task {
    Ops(usize),
    Calls(usize),
    Ranges(usize),
}

/// A task's result (an ops part boxed: it is the biggest by far, and there are few).
enum Done {
    Ops(usize, Box<Result<OpsOut>>),
    Calls(usize, HostPart<CallsBuilder>),
    Ranges(usize, HostPart<RangesPart>),
}

/// Run every reader `opts` asks for, each on its own connection, on at most
/// `opts.threads` threads: the calling thread alone at 1 (no thread is spawned), else a
/// pool of workers taking the reads in order. Whichever thread reads a slice, its part
/// lands at the slice's index, so the merge sees the order one sequential read gives.
pub(super) fn read(
    db: &Db,
    conn: &Connection,
    schema: &Schema,
    table: &StringTable,
    memcpy: &[Option<String>],
    opts: &LoadOptions,
    split: Split,
) -> Read {
    let progress = &opts.progress;
    progress.start("reading nsys export");
    // NVTX is the biggest table (~5 rows per kernel, 19.5M in a 4M-kernel report) and
    // the range filter keeps few of its rows, so it is read in rowid slices (their kept
    // rows are concatenated in rowid order: one scan's order, at no copy worth
    // counting). The runtime table too (1.7 calls per kernel): one reader of it was the
    // last to finish on a 2-core machine.
    let range_slices = if opts.ranges {
        split.slices(conn, schema, &queries::NVTX)
    } else {
        Vec::new()
    };
    let call_slices = if opts.calls {
        split.slices(conn, schema, &queries::RUNTIME)
    } else {
        Vec::new()
    };
    // The kernel table is read in slices too when it is big: with one reader it is the
    // critical path of a kernel-heavy report (4M kernels, few host rows). The last
    // slice's reader also reads the small op tables, so the parts concatenate in order.
    let kernel_slices = split.slices(conn, schema, &queries::KERNELS);
    let last = kernel_slices.len() - 1;
    // Longest reads first (a pool that takes a long read last ends on it alone: on a
    // 1M-kernel report at 2 threads the second NVTX slice ran 0.2 s after every other
    // read was done). A read's length is estimated from its rows: the rowid span of its
    // slice or table, a kernel row costing about twice a host row (nine columns, two of
    // them names, against a range's filtered name or a call's six integers). Equal
    // estimates keep the tables' order; where a part lands does not depend on when it
    // was read, so the order changes no result.
    let rows = |slice: &Option<(i64, i64)>, q: &queries::Query| match slice {
        Some((a, b)) => b - a + 1,
        None => split.table_rows(conn, schema, q),
    };
    let mut tasks: Vec<(i64, Task)> = Vec::new();
    for (k, s) in kernel_slices.iter().enumerate() {
        tasks.push((2 * rows(s, &queries::KERNELS), Task::Ops(k)));
    }
    for (k, s) in range_slices.iter().enumerate() {
        tasks.push((rows(s, &queries::NVTX), Task::Ranges(k)));
    }
    for (k, s) in call_slices.iter().enumerate() {
        tasks.push((rows(s, &queries::RUNTIME), Task::Calls(k)));
    }
    tasks.sort_by_key(|&(cost, _)| std::cmp::Reverse(cost));
    let tasks: Vec<Task> = tasks.into_iter().map(|(_, t)| t).collect();
    let filter = opts.range_filter.as_ref();
    let run = |t: Task| match t {
        Task::Ops(k) => {
            let part = OpsPart {
                kernels: kernel_slices[k],
                last: k == last,
                geometry: opts.geometry,
            };
            Done::Ops(
                k,
                Box::new(load_ops(db, schema, table, memcpy, part, progress)),
            )
        }
        Task::Calls(k) => Done::Calls(k, load_calls(db, schema, table, call_slices[k], progress)),
        Task::Ranges(k) => Done::Ranges(
            k,
            load_ranges(
                db,
                schema,
                table,
                filter,
                opts.range_filter_domains,
                range_slices[k],
                progress,
            ),
        ),
    };
    let workers = opts.threads.clamp(1, tasks.len());
    let done: Vec<Done> = if workers == 1 {
        tasks.iter().map(|&t| run(t)).collect()
    } else {
        let next = AtomicUsize::new(0);
        let work = || {
            let mut out = Vec::new();
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(&t) = tasks.get(i) else { break out };
                out.push(run(t));
            }
        };
        std::thread::scope(|s| {
            let handles: Vec<_> = (0..workers).map(|_| s.spawn(work)).collect();
            handles
                .into_iter()
                // A worker's panic is a bug: its reads are missing, and `place` turns
                // them into one internal error, not a crash.
                .flat_map(|h| h.join().unwrap_or_default())
                .collect()
        })
    };
    progress.finish();
    crate::phases::mark("nsys: every reader done");
    place(
        done,
        kernel_slices.len(),
        call_slices.len(),
        range_slices.len(),
    )
}

/// The readers' results at their slices' indexes. A read that a panicked worker never
/// returned is an internal error, so the merge fails on it instead of leaving rows out.
fn place(done: Vec<Done>, n_ops: usize, n_calls: usize, n_ranges: usize) -> Read {
    fn slots<T>(n: usize) -> Vec<Option<Result<T>>> {
        (0..n).map(|_| None).collect()
    }
    fn filled<T>(v: Vec<Option<Result<T>>>) -> Vec<Result<T>> {
        v.into_iter()
            .map(|o| o.unwrap_or_else(|| Err(Error::internal("an nsys loader thread panicked"))))
            .collect()
    }
    let mut ops = slots(n_ops);
    let mut calls = slots(n_calls);
    let mut ranges = slots(n_ranges);
    for d in done {
        match d {
            Done::Ops(k, r) => ops[k] = Some(*r),
            Done::Ranges(k, r) => ranges[k] = Some(r),
            Done::Calls(k, r) => calls[k] = Some(r),
        }
    }
    Read {
        ops: filled(ops),
        calls: filled(calls),
        ranges: filled(ranges),
    }
}

/// The parts merged so far. One interner for the whole trace: each reader's local ids
/// are mapped into it in read order (ops, calls, range slices), so names get the ids one
/// sequential read would give them.
pub(super) struct Merged {
    pub(super) names: Interner,
    pub(super) ops: OpsBuilder,
    pub(super) dropped_no_timestamp: u64,
    pub(super) bad: Dropped,
}

impl Merged {
    /// The ops readers' parts, concatenated (their columns copied on up to `threads`).
    pub(super) fn ops(parts: Vec<Result<OpsOut>>, threads: usize) -> Result<Merged> {
        let mut m = Merged {
            names: Interner::default(),
            ops: OpsBuilder::default(),
            dropped_no_timestamp: 0,
            bad: Dropped::default(),
        };
        for part in parts {
            let mut part = part?;
            let map = m.names.merge(&part.strings);
            remap(&mut part.ops.name_id, &map);
            remap(&mut part.ops.short_id, &map);
            m.ops.append_on(&mut part.ops, threads);
            m.dropped_no_timestamp += part.dropped_no_timestamp;
            for (table, n) in part.dropped_bad_times.0 {
                m.bad.add(table, n);
            }
        }
        Ok(m)
    }

    /// The runtime and NVTX slices, their names merged after the ops' (calls first; the
    /// calls' columns copied on up to `threads`).
    pub(super) fn host(
        &mut self,
        calls: Vec<HostPart<CallsBuilder>>,
        ranges: Vec<HostPart<RangesPart>>,
        threads: usize,
    ) -> Result<(CallsBuilder, RangesPart)> {
        let append = |a: &mut CallsBuilder, b: &mut CallsBuilder| a.append_on(b, threads);
        let calls = self.concat(calls, "runtime", |b| &mut b.name_id, append)?;
        let ranges = self.concat(ranges, "nvtx", |p| &mut p.b.name_id, RangesPart::append)?;
        Ok((calls, ranges))
    }

    /// One table's host parts concatenated in read order, each part's names mapped into
    /// the trace's interner, its rows with bad times counted under `table`.
    fn concat<B: Default>(
        &mut self,
        parts: Vec<HostPart<B>>,
        table: &'static str,
        name_id: fn(&mut B) -> &mut Vec<u32>,
        append: impl Fn(&mut B, &mut B),
    ) -> Result<B> {
        let mut out = B::default();
        let mut n_bad = 0;
        for part in parts {
            let (mut b, strings, bad_rows) = part?;
            remap(name_id(&mut b), &self.names.merge(&strings));
            n_bad += bad_rows;
            append(&mut out, &mut b);
        }
        self.bad.add(table, n_bad);
        Ok(out)
    }
}
