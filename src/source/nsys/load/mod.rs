//! Reads one nsys SQLite export into the [`Trace`] model: GPU ops, host API calls and NVTX
//! ranges, each on its own read-only connection and thread, the big kernel and NVTX tables
//! in rowid slices on several (the three tables dominate load time and SQLite readers do
//! not block each other), plus devices and metadata. Here the cell readers and the one
//! load that puts the pieces together; `parts` runs the readers and merges their parts.

mod cursor;
mod host;
mod meta;
mod metrics;
mod open;
mod ops;
mod parts;
mod split;

use std::path::Path;

use rusqlite::types::ValueRef;
use rusqlite::{Connection, Row};

use super::queries::{self, Fill, Query};
use super::schema::Schema;
use super::strings::StringTable;
use super::LoadOptions;
use crate::exit::{Error, Result};
use crate::trace::{ShapesBuilder, Trace};
use crate::wire::trace::{DeviceInfo, SourceFormat, TraceMeta};

use cursor::Cursor;
use meta::{load_devices, load_meta};
pub use open::{open, sql_error, Db};
use ops::memcpy_names;
pub use ops::memcpy_symbol;
use split::Split;
pub use split::{test_min_slice_rows, MIN_ROWS_VAR};

/// Rows between progress updates.
const TICK: u64 = 1 << 16;

/// `pid` of a serialized GlobalId (docs/nsys-format.md §8: bits 24..47).
pub fn gid_pid(g: i64) -> i64 {
    (g >> 24) & 0xFF_FFFF
}

/// `tid` of a serialized GlobalId (bits 0..23).
pub fn gid_tid(g: i64) -> i64 {
    g & 0xFF_FFFF
}

/// A row's cells by index: rusqlite's [`Row`], or a [`Cursor`]'s current row.
trait Cells {
    fn cell(&self, i: usize) -> rusqlite::Result<ValueRef<'_>>;
}

impl Cells for Row<'_> {
    #[inline]
    fn cell(&self, i: usize) -> rusqlite::Result<ValueRef<'_>> {
        self.get_ref(i)
    }
}

impl Cells for Cursor<'_> {
    #[inline]
    fn cell(&self, i: usize) -> rusqlite::Result<ValueRef<'_>> {
        Cursor::cell(self, i)
    }
}

/// An integer cell; NULL (and a stray text/blob) reads as `None`.
#[inline]
fn int(r: &impl Cells, i: usize) -> rusqlite::Result<Option<i64>> {
    Ok(match r.cell(i)? {
        ValueRef::Integer(v) => Some(v),
        ValueRef::Real(v) => Some(v as i64),
        _ => None,
    })
}

/// Largest |timestamp| accepted, ns (2^55 ns ≈ 417 days). nsys times count from the
/// session start, so anything beyond this is a damaged or crafted row; accepting it would
/// turn one row into a wall time of centuries and a gate change of 1e16 %.
pub(crate) const MAX_ABS_NS: i64 = 1 << 55;

/// A timestamp cell: an integer (or an integral real) within ±[`MAX_ABS_NS`]; NULL,
/// text, blobs, fractions, NaN and out-of-range values are `None` (the row is dropped,
/// never read as 0).
#[inline]
fn time(r: &impl Cells, i: usize) -> rusqlite::Result<Option<i64>> {
    Ok(match r.cell(i)? {
        ValueRef::Integer(v) if (-MAX_ABS_NS..=MAX_ABS_NS).contains(&v) => Some(v),
        ValueRef::Real(v) if v.fract() == 0.0 && v.abs() <= MAX_ABS_NS as f64 => Some(v as i64),
        _ => None,
    })
}

/// `(start, end)` of a row whose first two columns are start and end, when both are
/// readable timestamps and end ≥ start; `None` marks a row that cannot be right.
#[inline]
fn times(r: &impl Cells) -> rusqlite::Result<Option<(i64, i64)>> {
    Ok(match (time(r, 0)?, time(r, 1)?) {
        (Some(s), Some(e)) if e >= s => Some((s, e)),
        _ => None,
    })
}

/// Rows dropped per table because their start/end cannot be right.
#[derive(Debug, Default)]
struct Dropped(Vec<(&'static str, u64)>);

impl Dropped {
    fn add(&mut self, table: &'static str, n: u64) {
        if n == 0 {
            return;
        }
        // Slices of one table add up to one count (and one warning).
        match self.0.iter_mut().find(|(t, _)| *t == table) {
            Some((_, m)) => *m += n,
            None => self.0.push((table, n)),
        }
    }

    /// One warning per table: how many rows, which table, what was done.
    fn warnings(&self, schema: &Schema) -> Vec<String> {
        self.0
            .iter()
            .map(|(q, n)| {
                let table = queries::ALL
                    .iter()
                    .find(|x| x.name == *q)
                    .and_then(|x| x.table(schema))
                    .unwrap_or(q);
                format!(
                    "{n} row(s) of {table} had a NULL, non-integer or out-of-range start/end, \
                     or end before start, and were left out (never read as 0)"
                )
            })
            .collect()
    }
}

/// A missing id (NULL, or 0 which CUPTI never assigns to a correlation or graph node) → -1.
#[inline]
fn id_or_missing(v: Option<i64>) -> i64 {
    match v {
        Some(x) if x != 0 => x,
        _ => -1,
    }
}

/// Prepared-and-rendered query, or `None` when the export lacks its table.
fn prepare<'c>(
    conn: &'c Connection,
    schema: &Schema,
    q: &Query,
    path: &Path,
) -> Result<Option<rusqlite::Statement<'c>>> {
    match q.render_with(schema, &Fill::default()) {
        None => Ok(None),
        Some(sql) => conn
            .prepare(&sql)
            .map(Some)
            .map_err(|e| sql_error(path, q.name, e)),
    }
}

/// A [`Cursor`] over one rowid slice of a table (`None`: all of it); see [`cursor`].
fn cursor_rows<'c>(
    conn: &'c Connection,
    schema: &Schema,
    q: &Query,
    path: &Path,
    rows: Option<(i64, i64)>,
) -> Result<Option<Cursor<'c>>> {
    let fill = Fill {
        rows,
        ..Fill::default()
    };
    cursor(conn, schema, q, path, &fill)
}

/// A [`Cursor`] over a rendered query with the placeholders `fill` decides (its rowid
/// slice, optional columns), or `None` when the export lacks its table: the big loaders'
/// row loops.
fn cursor<'c>(
    conn: &'c Connection,
    schema: &Schema,
    q: &Query,
    path: &Path,
    fill: &Fill<'_>,
) -> Result<Option<Cursor<'c>>> {
    match q.render_with(schema, fill) {
        None => Ok(None),
        Some(sql) => Cursor::prepare(conn, &sql)
            .map(Some)
            .map_err(|e| sql_error(path, q.name, e)),
    }
}

/// Read StringIds once (shared by every loader thread).
fn load_strings(conn: &Connection, schema: &Schema, path: &Path) -> Result<StringTable> {
    let err = |e| sql_error(path, "strings", e);
    let (count, max_id) = match prepare(conn, schema, &queries::STRING_IDS_RANGE, path)? {
        Some(mut st) => st
            .query_row([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?)))
            .map_err(err)?,
        None => (0, 0),
    };
    let mut t = StringTable::new(count.max(0) as usize, max_id);
    if let Some(mut st) = prepare(conn, schema, &queries::STRINGS, path)? {
        let mut rows = st.query([]).map_err(err)?;
        while let Some(r) = rows.next().map_err(err)? {
            let id = int(r, 0).map_err(err)?.unwrap_or(-1);
            if let ValueRef::Text(v) = r.get_ref(1).map_err(err)? {
                t.insert(id, &String::from_utf8_lossy(v));
            }
        }
    }
    Ok(t)
}

/// Load an export that is known to be an SQLite file (checked by the caller).
pub(crate) fn load_sqlite(path: &Path, opts: &LoadOptions) -> Result<Trace> {
    load_split(
        path,
        opts,
        Split::for_threads(opts.threads, opts.min_slice_rows),
    )
}

/// [`load_sqlite`] with the big tables split as `split` says (tests force slices on
/// small exports with it: the result must not depend on the split).
fn load_split(path: &Path, opts: &LoadOptions, split: Split) -> Result<Trace> {
    let db = Db::new(path)?;
    let conn = db.open()?;
    let schema = Schema::probe(&conn).map_err(|e| sql_error(path, "reading the schema", e))?;
    if !schema.is_nsys_export() {
        return Err(Error::input(format!(
            "{}: SQLite file is not an Nsight Systems export (no StringIds or nsys event \
             tables); pass the .sqlite written by `nsys export --type sqlite`",
            path.display()
        )));
    }
    let table = load_strings(&conn, &schema, path)?;
    let memcpy = memcpy_names(&conn, &schema, path)?;
    crate::phases::mark("nsys: names read");
    let read = parts::read(&db, &conn, &schema, &table, &memcpy, opts, split);

    // Ops first: an export without usable ones is refused before its host tables count.
    let mut merged = parts::Merged::ops(read.ops, opts.threads)?;
    let mut meta = TraceMeta::new(SourceFormat::Nsys, path.display().to_string());
    load_meta(&conn, &schema, path, &mut meta)?;
    meta.warnings.extend(db.note.clone());
    if merged.ops.is_empty() {
        let bad = merged.bad.warnings(&schema);
        if !bad.is_empty() {
            return Err(Error::input(format!(
                "{}: no usable GPU ops: {}; export the report again",
                path.display(),
                bad.join("; ")
            )));
        }
        return Err(Error::input(format!(
            "{}: no GPU kernels, memcpy or memset in this export: was it captured with -t cuda?",
            path.display()
        )));
    }
    if merged.dropped_no_timestamp > 0 {
        meta.warnings.push(format!(
            "{} kernel rows had no timestamps (start = end = 0: CUPTI could not collect \
             them) and were left out",
            merged.dropped_no_timestamp
        ));
    }
    let (calls, ranges) = merged.host(read.calls, read.ranges, opts.threads)?;
    meta.warnings.extend(merged.bad.warnings(&schema));
    let ranges = host::domains_into(ranges, &mut meta);

    let (mut devices, pw_ids) = load_devices(&conn, &schema, path)?;
    for id in distinct_devices(&merged.ops.device) {
        if !devices.iter().any(|d| d.id == id) {
            devices.push(DeviceInfo {
                id,
                ..DeviceInfo::default()
            });
        }
    }
    devices.sort_by_key(|d| d.id);
    let gpu_metrics = if opts.gpu_metrics {
        metrics::load_gpu_metrics(&conn, &schema, path, &pw_ids, &mut meta.warnings)?
    } else {
        Vec::new()
    };
    crate::phases::mark("nsys: parts merged");
    Trace::warn_out_of_range(
        &mut meta,
        merged.ops.out_of_range() + calls.out_of_range() + ranges.out_of_range(),
    );

    let (ops, short_names) = merged.ops.finish_ops()?;
    let (calls, call_apis) = calls.finish_calls()?;
    Trace::warn_name_conflicts(&mut meta, &short_names, "short name");
    Trace::warn_name_conflicts(&mut meta, &call_apis, "API family");
    Ok(Trace {
        ops,
        short_names,
        calls,
        call_apis,
        ranges: ranges.finish()?,
        shapes: ShapesBuilder::default().finish()?,
        gpu_metrics,
        devices,
        strings: merged.names.into_strings(),
        meta,
    })
}

/// Distinct devices, looked up only where the device changes (ops come in runs of one
/// device): a set insert per op took 0.6 s of a 20M-op load.
fn distinct_devices(device: &[i32]) -> std::collections::BTreeSet<i64> {
    let mut out = std::collections::BTreeSet::new();
    let mut last = None;
    for &d in device {
        if last != Some(d) {
            last = Some(d);
            out.insert(i64::from(d));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Load `path` whole and in 2, 3 and 7 forced slices: the same rows in the same
    /// order, the same name ids and the same warnings (returned for further checks).
    fn same_in_every_split(path: &Path) -> Vec<String> {
        let name = path.display();
        let whole = Split {
            min_rows: i64::MAX,
            parts: 1,
        };
        let one = load_split(path, &LoadOptions::all(), whole).unwrap();
        assert!(one.ops.height() > 0 && one.calls.height() > 0, "{name}");
        for parts in [2, 3, 7] {
            let split = Split { min_rows: 1, parts };
            // The kernel table really is read in several slices (at most one per row:
            // saxpy has 5 kernels).
            let conn = Db::new(path).unwrap().open().unwrap();
            let schema = Schema::probe(&conn).unwrap();
            let n = split.slices(&conn, &schema, &queries::KERNELS).len();
            assert!(n > 1 && n <= parts, "{name}: {n} slices");
            let many = load_split(path, &LoadOptions::all(), split).unwrap();
            assert!(
                one.ops.equals_missing(&many.ops),
                "{name}: ops, {parts} parts"
            );
            assert!(one.calls.equals_missing(&many.calls), "{name}: calls");
            assert!(one.ranges.equals_missing(&many.ranges), "{name}: ranges");
            assert_eq!(one.strings, many.strings, "{name}: names");
            assert_eq!(one.meta.warnings, many.meta.warnings, "{name}: warnings");
        }
        one.meta.warnings
    }

    fn fixture(name: &str) -> std::path::PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/nsys")
            .join(name)
    }

    /// Every slice layout reads the same trace as one sequential read.
    #[test]
    fn sliced_reads_equal_one_sequential_read() {
        for name in [
            "fastvideo_h100_2gpu_nsys2026.2.sqlite",
            "fastvideo_train_2gpu_nsys2026.2.sqlite",
            "saxpy_mpi_a100_nsys2022.2.sqlite",
            "sglang_decode_mi300x_converted_nsys2026.2.sqlite",
        ] {
            same_in_every_split(&fixture(name));
        }
    }

    /// Rows dropped in different slices add up to one warning per table with the count
    /// SQL gives for the damage done.
    #[test]
    fn dropped_rows_counted_once_across_slices() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("damaged.sqlite");
        std::fs::copy(fixture("fastvideo_h100_2gpu_nsys2026.2.sqlite"), &path).unwrap();
        let conn = Connection::open(&path).unwrap();
        // Spread over the whole table, so every slice holds some: text starts, end before
        // start, and (kernels) uncollected timestamps (start = end = 0).
        conn.execute_batch(
            "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = 'x' WHERE rowid % 7 = 0;
             UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET end = start - 1 WHERE rowid % 11 = 0
               AND rowid % 7 != 0;
             UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = 0, end = 0 WHERE rowid % 13 = 0
               AND rowid % 7 != 0 AND rowid % 11 != 0;
             UPDATE CUPTI_ACTIVITY_KIND_MEMCPY SET end = start - 5 WHERE rowid % 5 = 0;
             UPDATE NVTX_EVENTS SET start = 'x' WHERE rowid % 3 = 0 AND end IS NOT NULL
               AND eventType IN (59, 60, 70, 71);",
        )
        .unwrap();
        let count = |sql: &str| -> i64 { conn.query_row(sql, [], |r| r.get(0)).unwrap() };
        let k_bad = count(
            "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE rowid % 7 = 0 \
             OR rowid % 11 = 0",
        );
        let k_zero = count(
            "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE rowid % 13 = 0 \
             AND rowid % 7 != 0 AND rowid % 11 != 0",
        );
        let m_bad = count("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE rowid % 5 = 0");
        let n_bad = count("SELECT count(*) FROM NVTX_EVENTS WHERE start = 'x'");
        drop(conn);
        assert!(k_bad > 0 && k_zero > 0 && m_bad > 0 && n_bad > 0);
        let warnings = same_in_every_split(&path);
        let has = |prefix: String| {
            assert_eq!(
                warnings.iter().filter(|w| w.starts_with(&prefix)).count(),
                1,
                "{prefix} in {warnings:?}"
            );
        };
        has(format!("{k_bad} row(s) of CUPTI_ACTIVITY_KIND_KERNEL had"));
        has(format!("{k_zero} kernel rows had no timestamps"));
        has(format!("{m_bad} row(s) of CUPTI_ACTIVITY_KIND_MEMCPY had"));
        has(format!("{n_bad} row(s) of NVTX_EVENTS had"));
        // With a range filter, only the damaged rows it keeps are counted: a row the
        // filter drops is never read further. `^FSDP::` keeps a few of the damaged rows,
        // `^aten::` most (the pre-test path), `^zz` none.
        for (re, glob) in [
            ("^FSDP::", "FSDP::*"),
            ("^aten::", "aten::*"),
            ("^zz", "zz*"),
        ] {
            let conn = Connection::open(&path).unwrap();
            let kept: i64 = conn
                .query_row(
                    &format!(
                        "SELECT count(*) FROM NVTX_EVENTS WHERE start = 'x' \
                         AND text GLOB '{glob}'"
                    ),
                    [],
                    |r| r.get(0),
                )
                .unwrap();
            drop(conn);
            let opts = LoadOptions {
                range_filter: Some(regex::Regex::new(re).unwrap()),
                ..LoadOptions::all()
            };
            let t = load_split(&path, &opts, Split::for_threads(2, Some(1000))).unwrap();
            let nvtx: Vec<_> = t
                .meta
                .warnings
                .iter()
                .filter(|w| w.contains("of NVTX_EVENTS had"))
                .collect();
            if kept == 0 {
                assert!(nvtx.is_empty(), "{re}: {nvtx:?}");
            } else {
                assert_eq!(nvtx.len(), 1, "{re}");
                assert!(
                    nvtx[0].starts_with(&format!("{kept} row(s)")),
                    "{re}: {nvtx:?}"
                );
            }
        }
    }

    #[test]
    fn global_ids() {
        // PROCESSES row of the fastvideo_h100 fixture: globalPid 281482794893312 = pid 466.
        assert_eq!(gid_pid(281482794893312), 466);
        assert_eq!(gid_tid(281482794893312 + 470), 470);
    }
}
