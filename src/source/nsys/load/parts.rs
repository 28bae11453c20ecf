//! The parallel read of one export — GPU ops, host calls and NVTX ranges on their own
//! connections and threads, the kernel and NVTX tables in rowid slices — and the merge of
//! the readers' parts into one interner and one builder per frame, in read order.

use rusqlite::Connection;

use super::super::progress::Progress;
use super::super::queries;
use super::super::schema::Schema;
use super::super::strings::{merge, remap, StringTable};
use super::host::{load_calls, load_ranges};
use super::ops::{load_ops, OpsOut, OpsPart};
use super::split::Split;
use super::{Db, Dropped};
use crate::exit::{Error, Result};
use crate::source::LoadOptions;
use crate::trace::{CallsBuilder, Interner, OpsBuilder, RangesBuilder};

/// A host reader's result: its rows, its local names, rows dropped for bad times.
type HostPart<B> = Result<(B, Vec<String>, u64)>;

/// What the readers returned, one entry per reader (kernel slices and NVTX slices in
/// rowid order).
pub(super) struct Read {
    pub(super) ops: Vec<Result<OpsOut>>,
    pub(super) calls: Option<HostPart<CallsBuilder>>,
    pub(super) ranges: Vec<HostPart<RangesBuilder>>,
}

/// A loader thread's result (a panic there is a bug, reported as one line, not a crash).
fn join<T>(h: std::thread::ScopedJoinHandle<'_, Result<T>>) -> Result<T> {
    h.join()
        .unwrap_or_else(|_| Err(Error::internal("an nsys loader thread panicked")))
}

/// Run every reader `opts` asks for, each on its own connection.
pub(super) fn read(
    db: &Db,
    conn: &Connection,
    schema: &Schema,
    table: &StringTable,
    memcpy: &[Option<String>],
    opts: &LoadOptions,
    split: Split,
) -> Read {
    let progress = Progress::new("reading nsys export");
    // NVTX is the biggest table (~5 rows per kernel, 19.5M in a 4M-kernel report) and
    // the range filter keeps few of its rows, so it is read in rowid slices (their kept
    // rows are concatenated in rowid order: one scan's order, at no copy worth
    // counting). The call table keeps one reader: it is never the longest read.
    let range_slices = if opts.ranges {
        split.slices(conn, schema, &queries::NVTX)
    } else {
        Vec::new()
    };
    // The kernel table is read in slices too when it is big: with one reader it is the
    // critical path of a kernel-heavy report (4M kernels, few host rows). The last
    // slice's reader also reads the small op tables, so the parts concatenate in order.
    let kernel_slices = split.slices(conn, schema, &queries::KERNELS);
    let last = kernel_slices.len() - 1;
    let read = std::thread::scope(|s| {
        let progress = &progress;
        let filter = opts.range_filter.as_ref();
        let calls = opts
            .calls
            .then(|| s.spawn(move || load_calls(db, schema, table, progress)));
        let ranges: Vec<_> = range_slices
            .iter()
            .map(|&rows| s.spawn(move || load_ranges(db, schema, table, filter, rows, progress)))
            .collect();
        let part = |k: usize| OpsPart {
            kernels: kernel_slices[k],
            last: k == last,
            geometry: opts.geometry,
        };
        let ops: Vec<_> = (1..kernel_slices.len())
            .map(|k| s.spawn(move || load_ops(db, schema, table, memcpy, part(k), progress)))
            .collect();
        let first = load_ops(db, schema, table, memcpy, part(0), progress);
        crate::phases::mark("nsys: first kernel slice read");
        let mut all = vec![first];
        all.extend(ops.into_iter().map(join));
        Read {
            ops: all,
            calls: calls.map(join),
            ranges: ranges.into_iter().map(join).collect(),
        }
    });
    progress.finish();
    crate::phases::mark("nsys: every reader done");
    read
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
    /// The ops readers' parts, concatenated.
    pub(super) fn ops(parts: Vec<Result<OpsOut>>) -> Result<Merged> {
        let mut m = Merged {
            names: Interner::default(),
            ops: OpsBuilder::default(),
            dropped_no_timestamp: 0,
            bad: Dropped::default(),
        };
        for part in parts {
            let mut part = part?;
            let map = merge(&mut m.names, &part.strings);
            remap(&mut part.ops.name_id, &map);
            remap(&mut part.ops.short_id, &map);
            m.ops.append(&mut part.ops);
            m.dropped_no_timestamp += part.dropped_no_timestamp;
            for (table, n) in part.dropped_bad_times.0 {
                m.bad.add(table, n);
            }
        }
        Ok(m)
    }

    /// The calls and the NVTX slices, their names merged after the ops'.
    pub(super) fn host(
        &mut self,
        calls: Option<HostPart<CallsBuilder>>,
        ranges: Vec<HostPart<RangesBuilder>>,
    ) -> Result<(CallsBuilder, RangesBuilder)> {
        let calls = match calls.transpose()? {
            Some((mut cb, strings, n_bad)) => {
                remap(&mut cb.name_id, &merge(&mut self.names, &strings));
                self.bad.add("runtime", n_bad);
                cb
            }
            None => CallsBuilder::default(),
        };
        let mut out = RangesBuilder::default();
        let mut n_bad = 0;
        for part in ranges {
            let (mut rb, strings, bad_rows) = part?;
            remap(&mut rb.name_id, &merge(&mut self.names, &strings));
            n_bad += bad_rows;
            out.append(&mut rb);
        }
        self.bad.add("nvtx", n_bad);
        Ok((calls, out))
    }
}
