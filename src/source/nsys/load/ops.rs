//! The GPU op tables (kernels, memcpy, memset, CUDA graph trace) read into an
//! [`OpsBuilder`], and the `[memcpy X]` names by copy kind.

use std::path::Path;

use rusqlite::Connection;

use super::super::queries;
use super::super::schema::Schema;
use super::super::strings::{LocalNames, StringTable};
use super::cursor::Cursor;
use super::open::{sql_error, Db};
use super::{cursor, gid_pid, id_or_missing, int, prepare, times, Cells, Dropped, TICK};
use crate::exit::Result;
use crate::source::nsys::queries::Fill;
use crate::source::progress::Progress;
use crate::trace::{Launch, OpKind, OpRow, OpsBuilder};

/// Memcpy kinds of ENUM_CUDA_MEMCPY_OPER (identical in every 3.x export, docs/nsys-format.md
/// §5), used for 2.x exports that have no ENUM tables.
const MEMCPY_KINDS: [&str; 14] = [
    "Unknown", "HtoD", "DtoH", "HtoA", "AtoH", "AtoA", "AtoD", "DtoA", "DtoD", "HtoH", "PtoP",
    "UVM HtoD", "UVM DtoH", "UVM DtoD",
];

/// The six columns every op query selects first (queries/kernels.sql, memcpy.sql,
/// memset.sql, graph_trace.sql): start, end, deviceId, streamId, globalPid, correlationId.
/// The caller fills the name, kind and the columns that differ per table.
fn op_row(r: &impl Cells, (start_ns, end_ns): (i64, i64)) -> rusqlite::Result<OpRow> {
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
        graph_id: -1,
        bytes: 0,
    })
}

/// Everything one ops reader produces (its names are local to it, see [`LocalNames`]).
pub(super) struct OpsOut {
    pub(super) ops: OpsBuilder,
    pub(super) strings: Vec<String>,
    pub(super) dropped_no_timestamp: u64,
    pub(super) dropped_bad_times: Dropped,
}

/// What one ops reader reads: the kernels in a rowid slice (`None`: all of them), and on
/// the last reader also the small op tables (memcpy, memset, graph replays), so the
/// readers' rows concatenated in order are exactly one sequential read's.
#[derive(Debug, Clone, Copy)]
pub(super) struct OpsPart {
    pub(super) kernels: Option<(i64, i64)>,
    pub(super) last: bool,
    /// Read the kernels' launch geometry (columns 9-14 of queries/kernels.sql).
    pub(super) geometry: bool,
}

pub(super) fn load_ops(
    db: &Db,
    schema: &Schema,
    table: &StringTable,
    memcpy_names: &[Option<String>],
    part: OpsPart,
    progress: &Progress,
) -> Result<OpsOut> {
    let path = db.shown.as_path();
    let conn = db.open()?;
    let mut names = LocalNames::new(table);
    let mut b = if part.geometry {
        OpsBuilder::default().with_geometry()
    } else {
        OpsBuilder::default()
    };
    let mut dropped = 0u64;
    let mut bad = Dropped::default();
    let mut n = 0u64;
    let err = |q: &'static str| move |e| sql_error(path, q, e);

    let fill = Fill {
        rows: part.kernels,
        geometry: part.geometry,
        ..Fill::default()
    };
    if let Some(mut r) = cursor(&conn, schema, &queries::KERNELS, path, &fill)? {
        let mut n_bad = 0u64;
        while r.next().map_err(err("kernels"))? {
            let r = &r;
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
            let row = OpRow {
                name_id: names.id(rd(6)?.unwrap_or(-1)),
                short_id: names.id(rd(7)?.unwrap_or(-1)),
                graph_id: rd(8)?.unwrap_or(-1),
                ..op
            };
            if part.geometry {
                let dim = |i| -> Result<u32> {
                    Ok(rd(i)?.and_then(|v| u32::try_from(v).ok()).unwrap_or(0))
                };
                let launch = Launch {
                    grid: [dim(9)?, dim(10)?, dim(11)?],
                    block: [dim(12)?, dim(13)?, dim(14)?],
                };
                b.push_launch(row, launch);
            } else {
                b.push(row);
            }
            n += 1;
            if n.is_multiple_of(TICK) {
                progress.inc(TICK);
            }
        }
        bad.add("kernels", n_bad);
    }

    // The small tables, on the last reader only.
    let small = |q| -> Result<Option<Cursor<'_>>> {
        if part.last {
            cursor(&conn, schema, q, path, &Fill::default())
        } else {
            Ok(None)
        }
    };
    if let Some(mut st) = small(&queries::MEMCPY)? {
        let mut n_bad = 0u64;
        let mut kind_ids: Vec<Option<u32>> = vec![None; memcpy_names.len()];
        let mut odd_kinds: std::collections::HashMap<i64, u32> = std::collections::HashMap::new();
        while st.next().map_err(err("memcpy"))? {
            let r = &st;
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
                bytes: rd(7)?.filter(|&b| b >= 0).unwrap_or(0),
                ..op_row(r, t).map_err(err("memcpy"))?
            });
        }
        bad.add("memcpy", n_bad);
    }

    if let Some(mut st) = small(&queries::MEMSET)? {
        let name_id = names.text("[memset]");
        let mut n_bad = 0u64;
        while st.next().map_err(err("memset"))? {
            let r = &st;
            let rd = |i| int(r, i).map_err(err("memset"));
            let Some(t) = times(r).map_err(err("memset"))? else {
                n_bad += 1;
                continue;
            };
            b.push(OpRow {
                name_id,
                short_id: name_id,
                kind: OpKind::Memset,
                bytes: rd(6)?.filter(|&b| b >= 0).unwrap_or(0),
                ..op_row(r, t).map_err(err("memset"))?
            });
        }
        bad.add("memset", n_bad);
    }

    if let Some(mut st) = small(&queries::GRAPH_TRACE)? {
        let mut n_bad = 0u64;
        let mut graph_names: std::collections::HashMap<i64, u32> = std::collections::HashMap::new();
        while st.next().map_err(err("graph_trace"))? {
            let r = &st;
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

/// `[memcpy X]` names by copyKind: the export's ENUM table where present, else the fixed one.
pub(super) fn memcpy_names(
    conn: &Connection,
    schema: &Schema,
    path: &Path,
) -> Result<Vec<Option<String>>> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memcpy_symbols() {
        assert_eq!(memcpy_symbol("CUDA_MEMCPY_KIND_HTOD"), "HtoD");
        assert_eq!(memcpy_symbol("CUDA_MEMCPY_KIND_UVM_DTOH"), "UVM DtoH");
        assert_eq!(memcpy_symbol("CUDA_MEMCPY_KIND_PTOP"), "PtoP");
        assert_eq!(memcpy_symbol("CUDA_MEMCPY_KIND_UNKNOWN"), "Unknown");
    }
}
