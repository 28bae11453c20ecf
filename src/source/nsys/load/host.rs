//! Host API calls (CUDA runtime and driver) and NVTX ranges, the NVTX table read in
//! parallel rowid slices.

use rusqlite::types::ValueRef;
use rusqlite::Connection;

use super::super::progress::Progress;
use super::super::queries::{self, Query};
use super::super::schema::Schema;
use super::super::strings::{LocalNames, StringTable};
use super::open::{sql_error, Db};
use super::{gid_pid, gid_tid, id_or_missing, int, prepare, prepare_rows, times, TICK};
use crate::exit::Result;
use crate::trace::{
    is_launch_call, CallApi, CallRow, CallsBuilder, RangeKind, RangeRow, RangesBuilder,
};

/// Rows per slice below which a table is read whole: a thread and a connection cost more
/// than they save on a small table.
const SLICE_ROWS: i128 = 1 << 19;

/// Rowid ranges that split a big table into up to `parts` slices of about equal size,
/// read on parallel connections (SQLite readers do not block each other) and
/// concatenated in rowid order, so the rows come out exactly as one scan reads them.
/// `[None]` (one whole-table read) for small tables, or when the table's rowids cannot
/// be asked for (a WITHOUT ROWID table, or a column that shadows `rowid`).
pub(super) fn slices(
    conn: &Connection,
    schema: &Schema,
    q: &Query,
    parts: usize,
) -> Vec<Option<(i64, i64)>> {
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

pub(super) fn load_calls(
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

pub(super) fn load_ranges(
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

/// Whether an NVTX text cell matches the range filter: valid UTF-8 is matched in place,
/// anything else as its lossy string (what the range is named), so both agree.
#[inline]
fn matches_text(re: &regex::Regex, t: &[u8]) -> bool {
    match std::str::from_utf8(t) {
        Ok(s) => re.is_match(s),
        Err(_) => re.is_match(&String::from_utf8_lossy(t)),
    }
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
}
