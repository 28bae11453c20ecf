//! Reads one nsys SQLite export into the [`Trace`] model: GPU ops, host API calls and NVTX
//! ranges, each on its own read-only connection and thread (the three tables dominate load
//! time and SQLite readers do not block each other), plus devices and metadata.

use std::path::Path;

use rusqlite::types::ValueRef;
use rusqlite::{Connection, OpenFlags, Row};

use super::progress::Progress;
use super::queries::{self, Query};
use super::schema::{newer_schema_warning, Schema};
use super::strings::{merge, remap, LocalNames, StringTable};
use super::LoadOptions;
use crate::exit::{Error, Result};
use crate::trace::{
    is_launch_call, CallApi, CallRow, CallsBuilder, DeviceInfo, Interner, OpKind, OpRow,
    OpsBuilder, RangeKind, RangeRow, RangesBuilder, SourceFormat, Trace, TraceMeta,
};

/// Memcpy kinds of ENUM_CUDA_MEMCPY_OPER (identical in every 3.x export, docs/nsys-format.md
/// §5), used for 2.x exports that have no ENUM tables.
const MEMCPY_KINDS: [&str; 14] = [
    "Unknown", "HtoD", "DtoH", "HtoA", "AtoH", "AtoA", "AtoD", "DtoA", "DtoD", "HtoH", "PtoP",
    "UVM HtoD", "UVM DtoH", "UVM DtoD",
];

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

/// Open an export read-only: never write into a user's report (issue #2).
pub fn open(path: &Path) -> Result<Connection> {
    Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| sql_error(path, "opening", e))
}

/// How one export is opened so that nothing is ever written beside it.
///
/// A WAL-mode database (header bytes 18 and 19 = 2, sqlite.org/fileformat2.html §1.3)
/// makes even a read-only connection create `-wal` and `-shm` files next to it, and fails
/// on a read-only mount. Without a `-wal` file the database file holds every committed
/// page, so it is opened `immutable=1` (sqlite.org/uri.html: no locks, no side files).
/// With a `-wal` file its pages belong to the database too: the database and its `-wal`
/// are copied to a private temporary directory and read there (SQLite rebuilds the
/// `-shm` index from the `-wal` on first open). A rollback-journal database is opened
/// plainly read-only, which writes nothing and respects another writer's lock.
pub struct Db {
    /// What the user passed (for messages).
    pub shown: std::path::PathBuf,
    /// The file SQLite opens.
    file: std::path::PathBuf,
    immutable: bool,
    _tmp: Option<tempfile::TempDir>,
    /// Said to the user when the database was read from a copy.
    pub note: Option<String>,
}

impl Db {
    /// Decide how to open `path` (an SQLite file, checked by the caller).
    pub fn new(path: &Path) -> Result<Db> {
        let plain = |file: &Path| Db {
            shown: path.to_path_buf(),
            file: file.to_path_buf(),
            immutable: false,
            _tmp: None,
            note: None,
        };
        if !is_wal(path) {
            return Ok(plain(path));
        }
        let wal = side_file(path, "-wal");
        if !wal.metadata().map(|m| m.len() > 0).unwrap_or(false) {
            return Ok(Db {
                immutable: true,
                ..plain(path)
            });
        }
        let env = |what: &str, e: std::io::Error| {
            Error::environment(format!(
                "{}: the export is in WAL mode with a pending -wal file and could not be \
                 copied to a temporary directory to read it untouched ({what}: {e}); free \
                 space in $TMPDIR or run `sqlite3 {} 'PRAGMA wal_checkpoint'` on a copy",
                path.display(),
                path.display()
            ))
        };
        let tmp = tempfile::Builder::new()
            .prefix(".stepgate-")
            .tempdir()
            .map_err(|e| env("creating the directory", e))?;
        let copy = tmp.path().join("export.sqlite");
        std::fs::copy(path, &copy).map_err(|e| env("copying the database", e))?;
        std::fs::copy(&wal, side_file(&copy, "-wal")).map_err(|e| env("copying the -wal", e))?;
        Ok(Db {
            note: Some(format!(
                "the export is an SQLite database in WAL mode with a pending {} file: read \
                 from a private copy of both in a temporary directory, so nothing was \
                 written beside the report",
                wal.file_name().unwrap_or_default().to_string_lossy()
            )),
            _tmp: Some(tmp),
            ..plain(&copy)
        })
    }

    /// A read-only connection (immutable where that is safe, see [`Db`]).
    pub fn open(&self) -> Result<Connection> {
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = if self.immutable {
            Connection::open_with_flags(
                format!("file:{}?immutable=1", uri_path(&self.file)),
                flags | OpenFlags::SQLITE_OPEN_URI,
            )
        } else if self._tmp.is_some() {
            // The private copy may need its -shm built: it is ours to write.
            Connection::open_with_flags(
                &self.file,
                OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
            )
        } else {
            Connection::open_with_flags(&self.file, flags)
        };
        conn.map_err(|e| sql_error(&self.shown, "opening", e))
    }
}

/// `path` + suffix (`x.sqlite` → `x.sqlite-wal`), as SQLite names its side files.
fn side_file(path: &Path, suffix: &str) -> std::path::PathBuf {
    let mut s = path.as_os_str().to_os_string();
    s.push(suffix);
    s.into()
}

/// Whether the database header says WAL mode (write and read versions both 2).
fn is_wal(path: &Path) -> bool {
    use std::io::Read;
    let mut head = [0u8; 20];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut head))
        .is_ok()
        && head[18] == 2
        && head[19] == 2
}

/// A path for an SQLite `file:` URI: absolute, with every byte that is not unreserved or
/// `/` percent-encoded (`?`, `#` and `%` in a file name would otherwise end the path).
fn uri_path(path: &Path) -> String {
    let abs = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut out = String::new();
    for &b in abs.as_os_str().as_encoded_bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'/' | b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// One line for a SQLite failure, saying what to do about it.
pub fn sql_error(path: &Path, what: &str, e: rusqlite::Error) -> Error {
    let p = path.display();
    let corrupt = matches!(
        e.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DatabaseCorrupt | rusqlite::ErrorCode::NotADatabase)
    );
    let locked = matches!(
        e.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
    );
    let msg = e.to_string();
    if locked {
        Error::environment(format!(
            "{p}: the database is locked by another process ({what}: {msg}): wait until \
             that process (an nsys export still writing it?) finishes, or copy the file and \
             pass the copy"
        ))
    } else if corrupt {
        Error::input(format!(
            "{p}: the SQLite file is corrupt or truncated ({what}: {msg}); export the report \
             again with `nsys export --type sqlite`"
        ))
    } else if msg.contains("no such column") || msg.contains("no such table") {
        Error::input(format!(
            "{p}: this nsys export lacks what stepgate reads ({what}: {msg}); export it with \
             nsys 2020.5 to 2026.2 or report the nsys version"
        ))
    } else {
        Error::input(format!("{p}: reading the export failed ({what}: {msg})"))
    }
}

/// An integer cell; NULL (and a stray text/blob) reads as `None`.
#[inline]
fn int(r: &Row<'_>, i: usize) -> rusqlite::Result<Option<i64>> {
    Ok(match r.get_ref(i)? {
        ValueRef::Integer(v) => Some(v),
        ValueRef::Real(v) => Some(v as i64),
        _ => None,
    })
}

/// Largest |timestamp| accepted, ns (2^55 ns ≈ 417 days). nsys times count from the
/// session start, so anything beyond this is a damaged or crafted row; accepting it would
/// turn one row into a wall time of centuries and a gate change of 1e16 %.
pub const MAX_ABS_NS: i64 = 1 << 55;

/// A timestamp cell: an integer (or an integral real) within ±[`MAX_ABS_NS`]; NULL,
/// text, blobs, fractions, NaN and out-of-range values are `None` (the row is dropped,
/// never read as 0).
#[inline]
fn time(r: &Row<'_>, i: usize) -> rusqlite::Result<Option<i64>> {
    Ok(match r.get_ref(i)? {
        ValueRef::Integer(v) if (-MAX_ABS_NS..=MAX_ABS_NS).contains(&v) => Some(v),
        ValueRef::Real(v) if v.fract() == 0.0 && v.abs() <= MAX_ABS_NS as f64 => Some(v as i64),
        _ => None,
    })
}

/// `(start, end)` of a row whose first two columns are start and end, when both are
/// readable timestamps and end ≥ start; `None` marks a row that cannot be right.
#[inline]
fn times(r: &Row<'_>) -> rusqlite::Result<Option<(i64, i64)>> {
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

/// The six columns every op query selects first (queries/kernels.sql, memcpy.sql,
/// memset.sql, graph_trace.sql): start, end, deviceId, streamId, globalPid, correlationId.
/// The caller fills the name, kind and the columns that differ per table.
fn op_row(r: &Row<'_>, (start_ns, end_ns): (i64, i64)) -> rusqlite::Result<OpRow> {
    Ok(OpRow {
        device: int(r, 2)?.unwrap_or(-1),
        stream: int(r, 3)?.unwrap_or(-1),
        pid: int(r, 4)?.map(gid_pid).unwrap_or(-1),
        start_ns,
        end_ns,
        name_id: 0,
        short_id: 0,
        kind: OpKind::Kernel,
        correlation_id: id_or_missing(int(r, 5)?),
        graph_node_id: -1,
        graph_id: -1,
        bytes: 0,
    })
}

/// Prepared-and-rendered query, or `None` when the export lacks its table.
fn prepare<'c>(
    conn: &'c Connection,
    schema: &Schema,
    q: &Query,
    path: &Path,
) -> Result<Option<rusqlite::Statement<'c>>> {
    prepare_rows(conn, schema, q, path, None)
}

/// As [`prepare`], for one rowid slice of the table (`None`: all of it).
fn prepare_rows<'c>(
    conn: &'c Connection,
    schema: &Schema,
    q: &Query,
    path: &Path,
    rows: Option<(i64, i64)>,
) -> Result<Option<rusqlite::Statement<'c>>> {
    match q.render_rows(schema, rows) {
        None => Ok(None),
        Some(sql) => conn
            .prepare(&sql)
            .map(Some)
            .map_err(|e| sql_error(path, q.name, e)),
    }
}

/// Rows per slice below which a table is read whole: a thread and a connection cost more
/// than they save on a small table.
const SLICE_ROWS: i128 = 1 << 19;

/// Rowid ranges that split a big table into up to `parts` slices of about equal size,
/// read on parallel connections (SQLite readers do not block each other) and
/// concatenated in rowid order, so the rows come out exactly as one scan reads them.
/// `[None]` (one whole-table read) for small tables, or when the table's rowids cannot
/// be asked for (a WITHOUT ROWID table, or a column that shadows `rowid`).
fn slices(conn: &Connection, schema: &Schema, q: &Query, parts: usize) -> Vec<Option<(i64, i64)>> {
    let whole = vec![None];
    let Some(table) = q.table(schema) else {
        return whole;
    };
    if ["rowid", "_rowid_", "oid"]
        .iter()
        .any(|c| schema.has_column(table, c))
    {
        return whole;
    }
    let sql = format!("SELECT min(rowid), max(rowid) FROM {table}");
    let Ok((Some(lo), Some(hi))) = conn.query_row(&sql, [], |r| {
        Ok((r.get::<_, Option<i64>>(0)?, r.get::<_, Option<i64>>(1)?))
    }) else {
        return whole;
    };
    let span = hi as i128 - lo as i128 + 1;
    let n = (span / SLICE_ROWS).clamp(1, parts.max(1) as i128);
    if n <= 1 {
        return whole;
    }
    let step = span / n;
    (0..n)
        .map(|k| {
            let a = lo as i128 + k * step;
            let b = if k == n - 1 { hi as i128 } else { a + step - 1 };
            Some((a as i64, b as i64))
        })
        .collect()
}

/// Everything the ops thread produces.
struct OpsOut {
    ops: OpsBuilder,
    strings: Vec<String>,
    dropped_no_timestamp: u64,
    dropped_bad_times: Dropped,
}

fn load_ops(
    db: &Db,
    schema: &Schema,
    table: &StringTable,
    memcpy_names: &[Option<String>],
    progress: &Progress,
) -> Result<OpsOut> {
    let path = db.shown.as_path();
    let conn = db.open()?;
    let mut names = LocalNames::new(table);
    let mut b = OpsBuilder::default();
    let mut dropped = 0u64;
    let mut bad = Dropped::default();
    let mut n = 0u64;
    let err = |q: &'static str| move |e| sql_error(path, q, e);

    if let Some(mut st) = prepare(&conn, schema, &queries::KERNELS, path)? {
        let mut n_bad = 0u64;
        let mut rows = st.query([]).map_err(err("kernels"))?;
        while let Some(r) = rows.next().map_err(err("kernels"))? {
            let rd = |i| int(r, i).map_err(err("kernels"));
            let Some(t) = times(r).map_err(err("kernels"))? else {
                n_bad += 1;
                continue;
            };
            // CUPTI: start = end = 0 means the timestamp could not be collected.
            if t == (0, 0) {
                dropped += 1;
                continue;
            }
            let op = op_row(r, t).map_err(err("kernels"))?;
            b.push(OpRow {
                name_id: names.id(rd(6)?.unwrap_or(-1)),
                short_id: names.id(rd(7)?.unwrap_or(-1)),
                graph_node_id: id_or_missing(rd(8)?),
                graph_id: rd(9)?.unwrap_or(-1),
                ..op
            });
            n += 1;
            if n.is_multiple_of(TICK) {
                progress.inc(TICK);
            }
        }
        bad.add("kernels", n_bad);
    }

    if let Some(mut st) = prepare(&conn, schema, &queries::MEMCPY, path)? {
        let mut n_bad = 0u64;
        let mut kind_ids: Vec<Option<u32>> = vec![None; memcpy_names.len()];
        let mut odd_kinds: std::collections::HashMap<i64, u32> = Default::default();
        let mut rows = st.query([]).map_err(err("memcpy"))?;
        while let Some(r) = rows.next().map_err(err("memcpy"))? {
            let rd = |i| int(r, i).map_err(err("memcpy"));
            let Some(t) = times(r).map_err(err("memcpy"))? else {
                n_bad += 1;
                continue;
            };
            let kind = rd(6)?.unwrap_or(0);
            let name_id = match usize::try_from(kind).ok().filter(|&k| k < kind_ids.len()) {
                Some(k) => *kind_ids[k].get_or_insert_with(|| {
                    names.text(memcpy_names[k].as_deref().unwrap_or("[memcpy]"))
                }),
                // Kinds beyond the table: one name per distinct kind, formatted once.
                None => *odd_kinds
                    .entry(kind)
                    .or_insert_with(|| names.text(&format!("[memcpy kind {kind}]"))),
            };
            b.push(OpRow {
                name_id,
                short_id: name_id,
                kind: OpKind::Memcpy,
                graph_node_id: id_or_missing(rd(8)?),
                bytes: rd(7)?.filter(|&b| b >= 0).unwrap_or(0),
                ..op_row(r, t).map_err(err("memcpy"))?
            });
        }
        bad.add("memcpy", n_bad);
    }

    if let Some(mut st) = prepare(&conn, schema, &queries::MEMSET, path)? {
        let name_id = names.text("[memset]");
        let mut n_bad = 0u64;
        let mut rows = st.query([]).map_err(err("memset"))?;
        while let Some(r) = rows.next().map_err(err("memset"))? {
            let rd = |i| int(r, i).map_err(err("memset"));
            let Some(t) = times(r).map_err(err("memset"))? else {
                n_bad += 1;
                continue;
            };
            b.push(OpRow {
                name_id,
                short_id: name_id,
                kind: OpKind::Memset,
                graph_node_id: id_or_missing(rd(7)?),
                bytes: rd(6)?.filter(|&b| b >= 0).unwrap_or(0),
                ..op_row(r, t).map_err(err("memset"))?
            });
        }
        bad.add("memset", n_bad);
    }

    if let Some(mut st) = prepare(&conn, schema, &queries::GRAPH_TRACE, path)? {
        let mut n_bad = 0u64;
        let mut graph_names: std::collections::HashMap<i64, u32> = Default::default();
        let mut rows = st.query([]).map_err(err("graph_trace"))?;
        while let Some(r) = rows.next().map_err(err("graph_trace"))? {
            let rd = |i| int(r, i).map_err(err("graph_trace"));
            let Some(t) = times(r).map_err(err("graph_trace"))? else {
                n_bad += 1;
                continue;
            };
            let graph_id = rd(6)?.unwrap_or(-1);
            // One name per graph, formatted once (a replay per row is the hot case).
            let name_id = *graph_names.entry(graph_id.max(-1)).or_insert_with(|| {
                if graph_id >= 0 {
                    names.text(&format!("[cuda graph {graph_id}]"))
                } else {
                    names.text("[cuda graph]")
                }
            });
            b.push(OpRow {
                name_id,
                short_id: name_id,
                kind: OpKind::Graph,
                graph_id,
                ..op_row(r, t).map_err(err("graph_trace"))?
            });
        }
        bad.add("graph_trace", n_bad);
    }
    progress.inc(n % TICK);
    Ok(OpsOut {
        ops: b,
        strings: names.finish(),
        dropped_no_timestamp: dropped,
        dropped_bad_times: bad,
    })
}

fn load_calls(
    db: &Db,
    schema: &Schema,
    table: &StringTable,
    progress: &Progress,
) -> Result<(CallsBuilder, Vec<String>, u64)> {
    let path = db.shown.as_path();
    let conn = db.open()?;
    let mut names = LocalNames::new(table);
    let mut b = CallsBuilder::default();
    // Launch classification once per distinct name (0 unknown, 1 launch, 2 not).
    let mut launch: Vec<u8> = Vec::new();
    let mut n = 0u64;
    let mut n_bad = 0u64;
    let err = |e| sql_error(path, "runtime", e);
    if let Some(mut st) = prepare(&conn, schema, &queries::RUNTIME, path)? {
        let mut rows = st.query([]).map_err(err)?;
        while let Some(r) = rows.next().map_err(err)? {
            let rd = |i| int(r, i).map_err(err);
            let Some((start_ns, end_ns)) = times(r).map_err(err)? else {
                n_bad += 1;
                continue;
            };
            let (name_id, s) = names.lookup(rd(5)?.unwrap_or(-1));
            let i = name_id as usize;
            if i >= launch.len() {
                launch.resize(i + 1, 0);
            }
            if launch[i] == 0 {
                launch[i] = if s.is_some_and(is_launch_call) { 1 } else { 2 };
            }
            let gtid = rd(3)?;
            b.push(CallRow {
                pid: gtid.map(gid_pid).unwrap_or(-1),
                tid: gtid.map(gid_tid).unwrap_or(-1),
                start_ns,
                end_ns,
                name_id,
                correlation_id: id_or_missing(rd(4)?),
                api: if rd(2)? == Some(1) {
                    CallApi::Driver
                } else {
                    CallApi::Runtime
                },
                is_launch: launch[i] == 1,
            });
            n += 1;
            if n.is_multiple_of(TICK) {
                progress.inc(TICK);
            }
        }
    }
    progress.inc(n % TICK);
    Ok((b, names.finish(), n_bad))
}

fn load_ranges(
    db: &Db,
    schema: &Schema,
    table: &StringTable,
    filter: Option<&regex::Regex>,
    rows: Option<(i64, i64)>,
    progress: &Progress,
) -> Result<(RangesBuilder, Vec<String>, u64)> {
    let path = db.shown.as_path();
    let conn = db.open()?;
    let mut names = LocalNames::new(table);
    let mut b = RangesBuilder::default();
    // Filter verdict once per distinct StringIds name (0 unknown, 1 keep, 2 drop).
    let mut keep: Vec<u8> = Vec::new();
    let mut n = 0u64;
    let mut n_bad = 0u64;
    let err = |e| sql_error(path, "nvtx", e);
    if let Some(mut st) = prepare_rows(&conn, schema, &queries::NVTX, path, rows)? {
        let mut rows = st.query([]).map_err(err)?;
        while let Some(r) = rows.next().map_err(err)? {
            n += 1;
            if n.is_multiple_of(TICK) {
                progress.inc(TICK);
            }
            let rd = |i| int(r, i).map_err(err);
            let Some((start_ns, end_ns)) = times(r).map_err(err)? else {
                n_bad += 1;
                continue;
            };
            // Name = COALESCE(text, StringIds[textId]) (docs/nsys-format.md §4).
            let name_id = match r.get_ref(4).map_err(err)? {
                // Inline texts are mostly distinct (`aten::mul, op_id = 321664`): test
                // the filter on the cell itself and intern only what is kept, so dropped
                // rows cost one match and never grow a name table.
                ValueRef::Text(t) => {
                    if filter.is_some_and(|re| !matches_text(re, t)) {
                        continue;
                    }
                    names.text_bytes(t)
                }
                // StringIds names repeat: one verdict per distinct id. A textId missing
                // from StringIds is filtered as "" (its name is a placeholder).
                _ => {
                    let (id, s) = names.lookup(rd(5)?.unwrap_or(-1));
                    let i = id as usize;
                    if i >= keep.len() {
                        keep.resize(i + 1, 0);
                    }
                    if keep[i] == 0 {
                        keep[i] = if filter.is_none_or(|re| re.is_match(s.unwrap_or(""))) {
                            1
                        } else {
                            2
                        };
                    }
                    if keep[i] != 1 {
                        continue;
                    }
                    id
                }
            };
            let gtid = rd(3)?;
            let kind = match rd(2)? {
                Some(60) | Some(71) => RangeKind::HostStartEnd,
                _ => RangeKind::HostPushPop,
            };
            b.push(RangeRow {
                pid: gtid.map(gid_pid).unwrap_or(-1),
                tid: gtid.map(gid_tid).unwrap_or(-1),
                start_ns,
                end_ns,
                name_id,
                domain_id: rd(6)?.unwrap_or(-1),
                kind,
            });
        }
    }
    progress.inc(n % TICK);
    Ok((b, names.finish(), n_bad))
}

/// A loader thread's result (a panic there is a bug, reported as one line, not a crash).
fn join<T>(h: std::thread::ScopedJoinHandle<'_, Result<T>>) -> Result<T> {
    h.join().unwrap_or_else(|_| {
        Err(Error::input(
            "internal error: an nsys loader thread panicked",
        ))
    })
}

/// Whether an NVTX text cell matches the range filter: valid UTF-8 is matched in place,
/// anything else as its lossy string (what the range is named), so both agree.
#[inline]
fn matches_text(re: &regex::Regex, t: &[u8]) -> bool {
    match std::str::from_utf8(t) {
        Ok(s) => re.is_match(s),
        Err(_) => re.is_match(&String::from_utf8_lossy(t)),
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

/// `[memcpy X]` names by copyKind: the export's ENUM table where present, else the fixed one.
fn memcpy_names(conn: &Connection, schema: &Schema, path: &Path) -> Result<Vec<Option<String>>> {
    let mut names: Vec<Option<String>> = MEMCPY_KINDS
        .iter()
        .map(|k| Some(format!("[memcpy {k}]")))
        .collect();
    if let Some(mut st) = prepare(conn, schema, &queries::MEMCPY_KINDS, path)? {
        let err = |e| sql_error(path, "memcpy_kinds", e);
        let mut rows = st.query([]).map_err(err)?;
        while let Some(r) = rows.next().map_err(err)? {
            let Some(id) = int(r, 0).map_err(err)? else {
                continue;
            };
            let Ok(i) = usize::try_from(id) else { continue };
            if i < MEMCPY_KINDS.len() || i > 1024 {
                continue; // the fixed names agree with every known ENUM table
            }
            let sym: Option<String> = r.get(1).ok();
            if names.len() <= i {
                names.resize(i + 1, None);
            }
            names[i] = sym.map(|s| format!("[memcpy {}]", memcpy_symbol(&s)));
        }
    }
    Ok(names)
}

/// `CUDA_MEMCPY_KIND_UVM_HTOD` → `UVM HtoD` (the style of the fixed names).
pub fn memcpy_symbol(sym: &str) -> String {
    let s = sym.strip_prefix("CUDA_MEMCPY_KIND_").unwrap_or(sym);
    s.split('_')
        .map(|t| {
            let b = t.as_bytes();
            // Bytes, not a str slice: a crafted symbol may hold multi-byte characters.
            if b.len() == 4 && &b[1..3] == b"TO" {
                format!("{}to{}", &t[..1], &t[3..])
            } else if t == "UVM" {
                t.to_owned()
            } else {
                let mut c = t.chars();
                match c.next() {
                    Some(f) => f.to_string() + &c.as_str().to_ascii_lowercase(),
                    None => String::new(),
                }
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn load_devices(conn: &Connection, schema: &Schema, path: &Path) -> Result<Vec<DeviceInfo>> {
    let mut out: Vec<DeviceInfo> = Vec::new();
    if let Some(mut st) = prepare(conn, schema, &queries::GPUS, path)? {
        let err = |e| sql_error(path, "gpus", e);
        let mut rows = st.query([]).map_err(err)?;
        while let Some(r) = rows.next().map_err(err)? {
            let Some(id) = int(r, 0).map_err(err)? else {
                continue;
            };
            if out.iter().any(|d| d.id == id) {
                continue; // several vmIds may list one device id
            }
            out.push(DeviceInfo {
                id,
                name: r.get::<_, Option<String>>(1).ok().flatten(),
                memory_bandwidth_bytes_per_s: int(r, 2)
                    .map_err(err)?
                    .filter(|&v| v > 0)
                    .map(|v| v as f64),
                sm_count: int(r, 3).map_err(err)?.filter(|&v| v > 0),
                total_memory_bytes: int(r, 4).map_err(err)?.filter(|&v| v > 0),
            });
        }
    }
    Ok(out)
}

fn load_meta(conn: &Connection, schema: &Schema, path: &Path, meta: &mut TraceMeta) -> Result<()> {
    if let Some(mut st) = prepare(conn, schema, &queries::EXPORT_META, path)? {
        let err = |e| sql_error(path, "export_meta", e);
        let mut rows = st.query([]).map_err(err)?;
        while let Some(r) = rows.next().map_err(err)? {
            let name: String = r.get(0).map_err(err)?;
            let value: Option<String> = r.get(1).ok().flatten();
            match name.as_str() {
                "EXPORT_PRODUCT_VERSION" => meta.tool_version = value,
                "EXPORT_SCHEMA_VERSION" => meta.schema_version = value,
                _ => {}
            }
        }
    }
    if let Some(mut st) = prepare(conn, schema, &queries::CAPTURE_META, path)? {
        let err = |e| sql_error(path, "capture_meta", e);
        let mut rows = st.query([]).map_err(err)?;
        while let Some(r) = rows.next().map_err(err)? {
            let name: String = r.get(0).map_err(err)?;
            let value: Option<String> = r.get(1).ok().flatten();
            // The 2026.1+ unprefixed key wins over a per-process one.
            if meta.cuda_graph_trace_mode.is_none() || !name.starts_with("PROCESS_") {
                if let Some(v) = value.filter(|v| !v.is_empty()) {
                    meta.cuda_graph_trace_mode = Some(v);
                }
            }
        }
    }
    if let Some(mut st) = prepare(conn, schema, &queries::PROCESSES, path)? {
        let err = |e| sql_error(path, "processes", e);
        let mut rows = st.query([]).map_err(err)?;
        while let Some(r) = rows.next().map_err(err)? {
            let pid = match int(r, 1).map_err(err)? {
                Some(p) => p,
                None => match int(r, 0).map_err(err)? {
                    Some(g) => gid_pid(g),
                    None => continue,
                },
            };
            if let Some(name) = r.get::<_, Option<String>>(2).ok().flatten() {
                meta.process_names.push((pid, name));
            }
        }
        meta.process_names.sort();
        meta.process_names.dedup();
    }
    if let Some(w) = meta
        .schema_version
        .as_deref()
        .and_then(newer_schema_warning)
    {
        meta.warnings.push(w);
    }
    Ok(())
}

/// Load an export that is known to be an SQLite file (checked by the caller).
pub fn load_sqlite(path: &Path, opts: &LoadOptions) -> Result<Trace> {
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
    let progress = Progress::new("reading nsys export");

    // GPU ops, host calls and NVTX ranges are read on their own connections and threads.
    // NVTX is the biggest table (~5 rows per kernel, 19.5M in a 4M-kernel report) and
    // the range filter keeps few of its rows, so it is also read in rowid slices (their
    // kept rows are concatenated in rowid order: one scan's order, at no copy worth
    // counting). The op and call tables keep one reader each: their slices would each
    // hold a full share of rows and the concatenation would copy half of them.
    let parts = std::thread::available_parallelism().map_or(1, |n| n.get().min(4));
    let range_slices = if opts.ranges {
        slices(&conn, &schema, &queries::NVTX, parts)
    } else {
        Vec::new()
    };
    let (ops, calls, ranges) = std::thread::scope(|s| {
        let (db, schema, table, progress) = (&db, &schema, &table, &progress);
        let filter = opts.range_filter.as_ref();
        let calls = opts
            .calls
            .then(|| s.spawn(move || load_calls(db, schema, table, progress)));
        let ranges: Vec<_> = range_slices
            .iter()
            .map(|&rows| s.spawn(move || load_ranges(db, schema, table, filter, rows, progress)))
            .collect();
        let ops = load_ops(db, schema, table, &memcpy, progress);
        (
            ops,
            calls.map(join),
            ranges.into_iter().map(join).collect::<Vec<_>>(),
        )
    });
    progress.finish();

    // One interner for the whole trace; each reader's local ids are mapped into it, in
    // read order (ops, calls, range slices), so names get one sequential read's ids.
    let mut global = Interner::default();
    let OpsOut {
        ops: mut ob,
        strings,
        dropped_no_timestamp,
        dropped_bad_times: mut bad,
    } = ops?;
    let map = merge(&mut global, &strings);
    remap(&mut ob.name_id, &map);
    remap(&mut ob.short_id, &map);

    let mut meta = TraceMeta::new(SourceFormat::Nsys, path.display().to_string());
    load_meta(&conn, &schema, path, &mut meta)?;
    meta.warnings.extend(db.note.clone());
    if ob.is_empty() {
        let bad = bad.warnings(&schema);
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
    if dropped_no_timestamp > 0 {
        meta.warnings.push(format!(
            "{dropped_no_timestamp} kernel rows had no timestamps (start = end = 0: CUPTI \
             could not collect them) and were left out"
        ));
    }
    let trace_devices: std::collections::BTreeSet<i64> = ob.device.iter().copied().collect();

    let calls_b = match calls.transpose()? {
        Some((mut cb, strings, n_bad)) => {
            remap(&mut cb.name_id, &merge(&mut global, &strings));
            bad.add("runtime", n_bad);
            cb
        }
        None => CallsBuilder::default(),
    };
    let mut ranges_b = RangesBuilder::default();
    let mut n_bad = 0;
    for part in ranges {
        let (mut rb, strings, bad_rows) = part?;
        remap(&mut rb.name_id, &merge(&mut global, &strings));
        n_bad += bad_rows;
        ranges_b.append(&mut rb);
    }
    bad.add("nvtx", n_bad);
    meta.warnings.extend(bad.warnings(&schema));

    let mut devices = load_devices(&conn, &schema, path)?;
    for id in trace_devices {
        if !devices.iter().any(|d| d.id == id) {
            devices.push(DeviceInfo {
                id,
                ..DeviceInfo::default()
            });
        }
    }
    devices.sort_by_key(|d| d.id);

    Ok(Trace {
        ops: ob.finish()?,
        calls: calls_b.finish()?,
        ranges: ranges_b.finish()?,
        devices,
        strings: global.into_strings(),
        meta,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An in-memory database with one NVTX_EVENTS table created by `ddl`, holding rows at
    /// the given rowids, and the NVTX slices `parts` readers would get.
    fn nvtx_slices(ddl: &str, rowids: &[i64], parts: usize) -> Vec<Option<(i64, i64)>> {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(ddl).unwrap();
        for &id in rowids {
            conn.execute(
                "INSERT INTO NVTX_EVENTS (rowid, start, end, eventType, text) \
                 VALUES (?1, 0, 1, 59, 'x')",
                [id],
            )
            .unwrap();
        }
        let schema = Schema::probe(&conn).unwrap();
        slices(&conn, &schema, &queries::NVTX, parts)
    }

    #[test]
    fn big_tables_split_into_contiguous_rowid_ranges() {
        let ddl = "CREATE TABLE NVTX_EVENTS (start INTEGER, end INTEGER, eventType INTEGER, \
                   globalTid INTEGER, text TEXT, textId INTEGER, domainId INTEGER);";
        // 1,100,000 rowids = 2 slices of at least 2^19: [1, 550000] and [550001, 1100000],
        // whatever the number of readers beyond 2.
        let two = vec![Some((1, 550_000)), Some((550_001, 1_100_000))];
        assert_eq!(nvtx_slices(ddl, &[1, 600_000, 1_100_000], 4), two);
        assert_eq!(nvtx_slices(ddl, &[1, 600_000, 1_100_000], 2), two);
        // One reader, or a small table: one whole-table read.
        assert_eq!(nvtx_slices(ddl, &[1, 1_100_000], 1), vec![None]);
        assert_eq!(nvtx_slices(ddl, &[1, 1_000], 4), vec![None]);
        assert_eq!(nvtx_slices(ddl, &[], 4), vec![None]);
        // Four readers over 4 * 2^19 rowids: four equal ranges covering every rowid.
        let s = nvtx_slices(ddl, &[10, 10 + 4 * (1 << 19) - 1], 4);
        assert_eq!(s.len(), 4);
        assert_eq!(s[0], Some((10, 10 + (1 << 19) - 1)));
        assert_eq!(s[3], Some((10 + 3 * (1 << 19), 10 + 4 * (1 << 19) - 1)));
        // The slice is a rowid range in the rendered query.
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(ddl).unwrap();
        let schema = Schema::probe(&conn).unwrap();
        let sql = queries::NVTX.render_rows(&schema, Some((5, 9))).unwrap();
        assert!(sql.contains("AND rowid BETWEEN 5 AND 9"), "{sql}");
        assert!(queries::NVTX
            .render(&schema)
            .unwrap()
            .contains("NOT NULL AND 1"));
    }

    #[test]
    fn tables_without_a_usable_rowid_are_read_whole() {
        // A column named rowid shadows the real one: a range on it could drop rows.
        let shadow = "CREATE TABLE NVTX_EVENTS (rowid INTEGER, start INTEGER, end INTEGER, \
                      eventType INTEGER, globalTid INTEGER, text TEXT);";
        assert_eq!(nvtx_slices(shadow, &[1, 1_100_000], 4), vec![None]);
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(
            "CREATE TABLE NVTX_EVENTS (start INTEGER PRIMARY KEY, end INTEGER, \
             eventType INTEGER, globalTid INTEGER, text TEXT) WITHOUT ROWID;",
        )
        .unwrap();
        let schema = Schema::probe(&conn).unwrap();
        assert_eq!(slices(&conn, &schema, &queries::NVTX, 4), vec![None]);
    }

    #[test]
    fn memcpy_symbols() {
        assert_eq!(memcpy_symbol("CUDA_MEMCPY_KIND_HTOD"), "HtoD");
        assert_eq!(memcpy_symbol("CUDA_MEMCPY_KIND_UVM_DTOH"), "UVM DtoH");
        assert_eq!(memcpy_symbol("CUDA_MEMCPY_KIND_PTOP"), "PtoP");
        assert_eq!(memcpy_symbol("CUDA_MEMCPY_KIND_UNKNOWN"), "Unknown");
    }

    #[test]
    fn global_ids() {
        // PROCESSES row of the fastvideo_h100 fixture: globalPid 281482794893312 = pid 466.
        assert_eq!(gid_pid(281482794893312), 466);
        assert_eq!(gid_tid(281482794893312 + 470), 470);
    }
}
