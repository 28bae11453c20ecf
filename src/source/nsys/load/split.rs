//! How big tables are split into rowid slices read on parallel connections (SQLite
//! readers do not block each other), concatenated in rowid order so the rows come out
//! exactly as one sequential scan reads them.

use rusqlite::Connection;

use super::super::queries::Query;
use super::super::schema::Schema;

/// How a load splits its big tables.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Split {
    /// Rows per slice below which a table is read whole: a thread and a connection cost
    /// more than they save on a small table.
    pub min_rows: i64,
    /// Most slices per table.
    pub parts: usize,
}

/// Test hook (documented in docs/hostile-inputs.md): rows per slice, replacing
/// the loader's floor of 2^19, so the tests split the small fixtures through the binary and
/// check that the output does not depend on the split. Not a user option: a slice of a
/// few rows costs a thread and a connection for nothing.
pub const MIN_ROWS_VAR: &str = "STEPGATE_TEST_MIN_SLICE_ROWS";

/// [`MIN_ROWS_VAR`]'s value when it is a positive whole number (anything else is
/// ignored: a test hook must never turn a run into an error).
pub fn test_min_slice_rows() -> Option<i64> {
    std::env::var(MIN_ROWS_VAR)
        .ok()
        .and_then(|v| v.trim().parse::<i64>().ok())
        .filter(|&n| n >= 1)
}

impl Split {
    /// Rows per slice below which a table is read whole (2^19: below that a slice's
    /// connection and merge cost about what its thread saves).
    pub(crate) const MIN_ROWS: i64 = 1 << 19;

    /// Slices of at least `min_rows` rows ([`Split::MIN_ROWS`] unless a test lowers
    /// it), up to `threads` per table.
    ///
    /// No other cap: one slice per reader thread is what the threads can read at once,
    /// and the row floor already bounds the count by the table's size (a 1M-kernel table
    /// is at most 2 slices whatever `--threads` says), so many threads never turn a
    /// small table into many tiny reads.
    pub(crate) fn for_threads(threads: usize, min_rows: Option<i64>) -> Self {
        Split {
            min_rows: min_rows.filter(|&n| n >= 1).unwrap_or(Self::MIN_ROWS),
            parts: threads.max(1),
        }
    }

    /// The rowid span of the query's table (its row count where rowids are dense, as
    /// in nsys exports), 0 when it cannot be asked for or the table is empty or missing:
    /// an estimate of how long a whole-table read takes, for ordering the reads.
    pub(crate) fn table_rows(&self, conn: &Connection, schema: &Schema, q: &Query) -> i64 {
        self.span(conn, schema, q)
            .map_or(0, |(lo, hi)| hi.saturating_sub(lo).saturating_add(1))
    }

    /// The first and last rowid of the query's table, when they can be asked for.
    fn span(&self, conn: &Connection, schema: &Schema, q: &Query) -> Option<(i64, i64)> {
        let table = q.table(schema)?;
        if ["rowid", "_rowid_", "oid"]
            .iter()
            .any(|c| schema.has_column(table, c))
        {
            return None;
        }
        // Two queries: SQLite answers a lone min() or max() of the rowid from the b-tree's
        // edge, but both in one SELECT scan the whole table.
        let edge = |f: &str| {
            conn.query_row(&format!("SELECT {f}(rowid) FROM {table}"), [], |r| {
                r.get::<_, Option<i64>>(0)
            })
        };
        match (edge("min"), edge("max")) {
            (Ok(Some(lo)), Ok(Some(hi))) => Some((lo, hi)),
            _ => None,
        }
    }

    /// Rowid ranges that split the query's table into up to `parts` slices of about equal
    /// size. `[None]` (one whole-table read) for small tables, or when the table's rowids
    /// cannot be asked for (a WITHOUT ROWID table, or a column that shadows `rowid`).
    pub fn slices(&self, conn: &Connection, schema: &Schema, q: &Query) -> Vec<Option<(i64, i64)>> {
        let whole = vec![None];
        let Some((lo, hi)) = self.span(conn, schema, q) else {
            return whole;
        };
        let span = hi as i128 - lo as i128 + 1;
        let n = (span / i128::from(self.min_rows.max(1))).clamp(1, self.parts.max(1) as i128);
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
}

#[cfg(test)]
mod tests {
    use super::super::super::queries;
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
        let split = Split {
            min_rows: 1 << 19,
            parts,
        };
        split.slices(&conn, &schema, &queries::NVTX)
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
            .contains("eventType = 75) AND 1"));
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
        let split = Split {
            min_rows: 1,
            parts: 4,
        };
        assert_eq!(split.slices(&conn, &schema, &queries::NVTX), vec![None]);
    }
}
