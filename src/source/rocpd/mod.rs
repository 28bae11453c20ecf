//! AMD ROCm profiler databases: rocprofv3's rocpd SQLite (schema 3, rocprofiler-sdk) and the
//! older rocmProfileData RPD format (schema 2), read into the one [`Trace`] model.
//!
//! Both are SQLite files with a `rocpd_metadata` table whose `schema_version` says which
//! layout it is (docs/rocpd-format.md). Layout: `v3` reads rocpd (dispatches, copies,
//! HIP calls and ROCTx ranges from `rocpd_region`, linked by `stack_id`), `rpd` reads RPD
//! (`rocpd_op`, `rocpd_api`, linked by `rocpd_api_ops`). Times are integer nanoseconds of
//! the capture's clock (CLOCK_BOOTTIME for rocpd), made relative to the earliest event.

mod queries;
mod rpd;
mod sigbus;
mod v3;

use std::path::Path;

use rusqlite::Connection;

use crate::exit::{Error, Result};
use crate::source::nsys::load::{sql_error, Db};
use crate::source::LoadOptions;
use crate::trace::{
    remap, CallApi, CallRow, CallsBuilder, Interner, OpsBuilder, RangeKind, RangeRow,
    RangesBuilder, ShapesBuilder, Trace,
};
use crate::wire::trace::{DeviceInfo, TraceMeta};

/// Which rocpd layout a database holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// rocprofv3 / rocprofiler-sdk rocpd, `schema_version` 3 (uuid-suffixed tables behind
    /// un-suffixed views).
    Rocpd3,
    /// rocmProfileData (`rpd_tracer`), `schema_version` 2 (plain tables).
    Rpd2,
}

/// Whether an SQLite file is a rocpd or RPD database: it has `rocpd_metadata` (nsys
/// exports never do). Cheap: one query of `sqlite_master`.
pub(crate) fn looks_like_rocpd(path: &Path) -> bool {
    let mut head = [0u8; 16];
    let ok = std::fs::File::open(path)
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut head))
        .is_ok();
    if !ok || &head != b"SQLite format 3\0" {
        return false;
    }
    Db::new(path)
        .and_then(|db| db.open())
        .map(|c| has_object(&c, "rocpd_metadata"))
        .unwrap_or(false)
}

/// Load a rocpd (v3) or RPD (v2) database.
pub fn load_with(path: &Path, opts: &LoadOptions) -> Result<Trace> {
    crate::source::check_readable_kind(path)?;
    let db = Db::new(path)?;
    let conn = db.open()?;
    let layout = layout(&conn, path)?;
    let mut trace = match layout {
        Layout::Rocpd3 => v3::load(&db, &conn, path, opts),
        Layout::Rpd2 => rpd::load(&db, &conn, path, opts),
    }?;
    trace.meta.warnings.extend(db.note.clone());
    Ok(trace)
}

/// The layout from `schema_version`, or one line saying why the file is not readable.
fn layout(conn: &Connection, path: &Path) -> Result<Layout> {
    let version: Option<String> = conn
        .query_row(queries::SCHEMA_VERSION, [], |r| r.get(0))
        .ok();
    let v3 = has_object(conn, "rocpd_kernel_dispatch");
    let v2 = has_object(conn, "rocpd_op");
    match version.as_deref().map(str::trim) {
        Some("3") if v3 => Ok(Layout::Rocpd3),
        Some("2") if v2 => Ok(Layout::Rpd2),
        // Newer rocpd versions only add tables and columns (docs/rocpd-format.md).
        Some(v) if v3 && v.parse::<u32>().is_ok_and(|n| n > 3) => Ok(Layout::Rocpd3),
        v => Err(Error::input(format!(
            "{}: a rocpd/RPD database of schema_version {} without its {} table: stepgate \
             reads rocprofv3 rocpd (schema 3) and rocmProfileData RPD (schema 2); export the \
             capture again with `rocprofv3 --output-format rocpd`",
            path.display(),
            v.unwrap_or("(none)"),
            if v == Some("2") {
                "rocpd_op"
            } else {
                "rocpd_kernel_dispatch"
            }
        ))),
    }
}

/// Whether a table or view of that name exists.
fn has_object(conn: &Connection, name: &str) -> bool {
    conn.query_row(queries::TABLE_EXISTS, [name], |_| Ok(()))
        .is_ok()
}

/// The earliest timestamp of the given `(table, column)` pairs: the trace's time zero.
fn origin(conn: &Connection, path: &Path, parts: &[(&str, &str)]) -> Result<i64> {
    let mut lo = i64::MAX;
    for (table, column) in parts {
        if !has_object(conn, table) {
            continue;
        }
        let sql = format!("SELECT MIN({column}) FROM {table}");
        let v: Option<i64> = conn
            .query_row(&sql, [], |r| r.get(0))
            .map_err(|e| sql_error(path, "reading the time origin", e))?;
        if let Some(v) = v {
            lo = lo.min(v);
        }
    }
    Ok(if lo == i64::MAX { 0 } else { lo })
}

/// Devices as the ops name them, each with the name the database gives it where it has one.
/// The trace of a rocpd load from what its readers filled: the frames (ids past 32 bits
/// and per-name conflicts said in `meta`), and the devices the ops ran on beside `named`.
fn finish(
    ops: OpsBuilder,
    host: Host,
    names: Interner,
    named: Vec<DeviceInfo>,
    mut meta: TraceMeta,
) -> Result<Trace> {
    Trace::warn_out_of_range(
        &mut meta,
        ops.out_of_range() + host.calls.out_of_range() + host.ranges.out_of_range(),
    );
    let (ops, short_names) = ops.finish_ops()?;
    let (calls, call_apis) = host.calls.finish_calls()?;
    Trace::warn_name_conflicts(&mut meta, &short_names, "short name");
    let ids: Vec<i64> = crate::trace::i32s(&ops, crate::trace::col::DEVICE)?
        .iter()
        .map(|&d| i64::from(d))
        .collect();
    Ok(Trace {
        ops,
        short_names,
        calls,
        call_apis,
        ranges: host.ranges.finish()?,
        shapes: ShapesBuilder::default().finish()?,
        gpu_metrics: Vec::new(),
        devices: devices_of(&ids, named),
        strings: names.into_strings(),
        meta,
    })
}

fn devices_of(ops_devices: &[i64], named: Vec<DeviceInfo>) -> Vec<DeviceInfo> {
    let mut out: Vec<DeviceInfo> = Vec::new();
    for d in named {
        if !out.iter().any(|o| o.id == d.id) {
            out.push(d);
        }
    }
    let seen: std::collections::BTreeSet<i64> = ops_devices.iter().copied().collect();
    for id in seen {
        if !out.iter().any(|o| o.id == id) {
            out.push(DeviceInfo {
                id,
                ..DeviceInfo::default()
            });
        }
    }
    out.sort_by_key(|d| d.id);
    out
}

/// The short name of a kernel for `ops.short_id`: the base name the way the Kineto reader
/// cuts it from a demangled signature (rocpd's `display_name` and RPD names are demangled).
fn short_of(names: &mut Interner, full: &str) -> u32 {
    names.intern(crate::source::kineto::short_name(full))
}

/// A copy's name as nsys and the Kineto reader spell it (`[memcpy HtoD]`), so one op ranks
/// under one name in every format: rocpd writes `MEMORY_COPY_HOST_TO_DEVICE`, RPD
/// `CopyHostToDevice`.
fn copy_name(raw: &str) -> String {
    let s = raw
        .strip_prefix("MEMORY_COPY_")
        .or_else(|| raw.strip_prefix("Copy"))
        .unwrap_or(raw)
        .to_ascii_uppercase()
        .replace('_', "");
    let side = |t: &str| match t {
        "HOST" => Some("H"),
        "DEVICE" => Some("D"),
        "PEER" => Some("P"),
        _ => None,
    };
    match s
        .split_once("TO")
        .and_then(|(a, b)| Some((side(a)?, side(b)?)))
    {
        Some((a, b)) => format!("[memcpy {a}to{b}]"),
        None => "[memcpy]".to_owned(),
    }
}

/// Where and when a host region ran (times already relative to the trace's zero).
pub(super) struct Span {
    pub pid: i64,
    pub tid: i64,
    pub start_ns: i64,
    pub end_ns: i64,
}

impl Span {
    /// Columns 0–3 of both layouts' region queries (start, end, pid, tid), times made
    /// relative to `t0`.
    pub fn read(r: &rusqlite::Row<'_>, t0: i64) -> rusqlite::Result<Span> {
        Ok(Span {
            pid: r.get(2)?,
            tid: r.get(3)?,
            start_ns: r.get::<_, i64>(0)? - t0,
            end_ns: r.get::<_, i64>(1)? - t0,
        })
    }
}

/// What a host region is, in either layout.
pub(super) enum Region {
    /// A ROCTx range and its text.
    Marker(String),
    /// A HIP call, its name and the id its GPU ops carry.
    Call { name: String, link: i64 },
}

/// The host calls and ranges of one load, filled region by region under the load's
/// options (calls only when asked, ranges only when asked and matching the filter).
#[derive(Default)]
pub(super) struct Host {
    pub calls: CallsBuilder,
    pub ranges: RangesBuilder,
}

impl Host {
    pub fn push(&mut self, names: &mut Interner, opts: &LoadOptions, at: Span, region: Region) {
        match region {
            Region::Marker(text) => {
                let keep = opts.ranges
                    && !text.is_empty()
                    && opts
                        .range_filter
                        .as_ref()
                        .is_none_or(|re| re.is_match(&text));
                if keep {
                    self.ranges.push(RangeRow {
                        pid: at.pid,
                        tid: at.tid,
                        start_ns: at.start_ns,
                        end_ns: at.end_ns,
                        name_id: names.intern(&text),
                        domain_id: -1,
                        kind: RangeKind::HostPushPop,
                    });
                }
            }
            Region::Call { name, link } if opts.calls => self.calls.push(CallRow {
                pid: at.pid,
                tid: at.tid,
                start_ns: at.start_ns,
                end_ns: at.end_ns,
                name_id: names.intern(&name),
                correlation_id: link,
                api: CallApi::Runtime,
            }),
            Region::Call { .. } => {}
        }
    }
}

/// The GPU ops and, when the load wants host calls or ranges, the host regions, with the
/// names both interned. The two are the big tables: from 2 threads the regions are read
/// on a second connection and thread while the ops are read here. Either way the regions'
/// names are interned apart and merged after the ops' in the order they came, so every
/// id is the one a single sequential read (ops, then regions) gives; and an ops error —
/// no GPU work included — wins over a regions error, as the sequential read meets it
/// first.
fn ops_and_host<O>(
    db: &Db,
    conn: &Connection,
    opts: &LoadOptions,
    read_ops: impl FnOnce(&Connection, &mut Interner) -> Result<O>,
    read_host: impl FnOnce(&Connection, &mut Interner) -> Result<Host> + Send,
) -> Result<(O, Host, Interner)> {
    let mut names = Interner::default();
    if !(opts.calls || opts.ranges) {
        let ops = read_ops(conn, &mut names)?;
        return Ok((ops, Host::default(), names));
    }
    let apart = |conn: &Connection| {
        let mut local = Interner::default();
        read_host(conn, &mut local).map(|h| (h, local))
    };
    let (ops, host) = if opts.threads >= 2 {
        // The regions' connection is memory-mapped: a file that shrinks meanwhile is one
        // line and exit 2, not a SIGBUS ([`sigbus`]).
        let _bus = sigbus::guard(&db.shown);
        std::thread::scope(|scope| {
            let host = scope.spawn(|| {
                let mapped = db.open_mapped()?;
                truncate_hook(&mapped, &db.shown)?;
                apart(&mapped)
            });
            let ops = read_ops(conn, &mut names);
            let host = host.join().unwrap_or_else(|p| std::panic::resume_unwind(p));
            (ops, host)
        })
    } else {
        let ops = read_ops(conn, &mut names)?;
        (Ok(ops), apart(conn))
    };
    let ops = ops?;
    let (mut host, local) = host?;
    let map = names.merge(&local.into_strings());
    remap(&mut host.calls.name_id, &map);
    remap(&mut host.ranges.name_id, &map);
    Ok((ops, host, names))
}

/// Test hook (`tests/it/rocpd_truncated.rs`): with `STEPGATE_TEST_TRUNCATE_MAPPED=BYTES`
/// the database is cut to BYTES right after the mapped connection has mapped it, as
/// another process truncating the file would; nothing else reads the variable.
fn truncate_hook(conn: &Connection, path: &Path) -> Result<()> {
    let Some(to) = std::env::var("STEPGATE_TEST_TRUNCATE_MAPPED")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
    else {
        return Ok(());
    };
    // The first read maps the file at its size then, inside a read transaction left open
    // (SQLite takes the page count at a transaction's start: a truncation between two
    // statements is seen as a short file, one during a read is what the map meets).
    conn.execute_batch("BEGIN")
        .and_then(|()| {
            conn.query_row("SELECT count(*) FROM sqlite_master", [], |r| {
                r.get::<_, i64>(0)
            })
        })
        .map_err(|e| sql_error(path, "reading", e))?;
    std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .and_then(|f| f.set_len(to))
        .map_err(|e| {
            Error::internal(format!(
                "test hook: cannot truncate {}: {e}",
                path.display()
            ))
        })
}

/// The one-line error for a database that holds no GPU work.
fn no_ops(path: &Path) -> Error {
    Error::input(format!(
        "{}: no kernel dispatches or memory copies in this database: capture with \
         `rocprofv3 --kernel-trace --memory-copy-trace` (or --runtime-trace)",
        path.display()
    ))
}

#[cfg(test)]
mod tests {
    use super::copy_name;

    #[test]
    fn copies_are_named_as_nsys_names_them() {
        assert_eq!(copy_name("MEMORY_COPY_HOST_TO_DEVICE"), "[memcpy HtoD]");
        assert_eq!(copy_name("MEMORY_COPY_DEVICE_TO_HOST"), "[memcpy DtoH]");
        assert_eq!(copy_name("MEMORY_COPY_DEVICE_TO_DEVICE"), "[memcpy DtoD]");
        assert_eq!(copy_name("CopyHostToDevice"), "[memcpy HtoD]");
        assert_eq!(copy_name("CopyDeviceToHost"), "[memcpy DtoH]");
        assert_eq!(copy_name("MEMORY_COPY_NONE"), "[memcpy]");
    }
}
