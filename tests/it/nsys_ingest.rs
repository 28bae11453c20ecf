//! nsys ingest: every fixture loads into the Trace with values that match independent SQL
//! run here on the same file; the 2020.5 and 2022.1 layouts come from the generator; bad
//! inputs fail with one line and exit code 2; `.nsys-rep` goes through a fake `nsys`.

mod rep_files;
mod tables;
use tables::{assert_input_error, kernels_without_launch, mixed_scenario};

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

use rand::{Rng, SeedableRng};
use rusqlite::Connection;
use stepgate::source::nsys::export::{self, ExportOptions};
use stepgate::source::nsys::schema::Schema;
use stepgate::source::nsys::{self, queries, LoadOptions};
use stepgate::synth::workload::{self, KernelSpec, LaunchMode, NvtxStyle, Scenario, StepSpec};
use stepgate::synth::writer::{CallRec, KernelRec, NvtxName, NvtxRec};
use stepgate::synth::{replicate, Layout, NsysWriter};
use stepgate::trace::{OpKind, Trace};

use crate::common::{fixture, root};

const FIXTURES: &[&str] = &[
    "nsys/fastvideo_h100_2gpu_nsys2026.2.sqlite",
    "nsys/fastvideo_train_2gpu_nsys2026.2.sqlite",
    "nsys/saxpy_mpi_a100_nsys2022.2.sqlite",
    "nsys/sglang_decode_mi300x_converted_nsys2026.2.sqlite",
];

fn ro(db: &Path) -> Connection {
    Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap()
}

fn sql_i64(db: &Path, sql: &str) -> i64 {
    ro(db)
        .query_row(sql, [], |r| r.get::<_, Option<i64>>(0))
        .unwrap()
        .unwrap_or(0)
}

fn table_exists(db: &Path, t: &str) -> bool {
    sql_i64(
        db,
        &format!("SELECT count(*) FROM sqlite_master WHERE type='table' AND name='{t}'"),
    ) > 0
}

fn tempdir() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

/// (count, Σ duration) per device of one op kind, from the loaded trace.
fn per_device(t: &Trace, kind: OpKind) -> BTreeMap<i64, (i64, i64)> {
    let v = t.ops_view().unwrap();
    let mut m = BTreeMap::new();
    for i in 0..v.start_ns.len() {
        if v.kind[i] == kind as u32 {
            let e = m.entry(i64::from(v.device[i])).or_insert((0, 0));
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
    let c = ro(db);
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

/// Loaded names of ranges with their counts.
fn range_names(t: &Trace) -> BTreeMap<String, i64> {
    let v = t.ranges_view().unwrap();
    let mut m = BTreeMap::new();
    for &n in v.name_id {
        *m.entry(t.name(n).to_owned()).or_insert(0) += 1;
    }
    m
}

fn range_names_sql(db: &Path, extra_where: &str) -> BTreeMap<String, i64> {
    let c = ro(db);
    let mut st = c
        .prepare(&format!(
            "SELECT COALESCE(text, (SELECT value FROM StringIds WHERE id = textId)) AS n, count(*) \
             FROM NVTX_EVENTS WHERE eventType IN (59, 60, 70, 71) AND end IS NOT NULL {extra_where} \
             GROUP BY n"
        ))
        .unwrap();
    st.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

#[test]
fn ops_match_sql_on_every_fixture() {
    for f in FIXTURES {
        let db = fixture(f);
        let t = nsys::load(&db).unwrap();
        for (kind, table) in [
            (OpKind::Kernel, "CUPTI_ACTIVITY_KIND_KERNEL"),
            (OpKind::Memcpy, "CUPTI_ACTIVITY_KIND_MEMCPY"),
            (OpKind::Memset, "CUPTI_ACTIVITY_KIND_MEMSET"),
        ] {
            assert_eq!(
                per_device(&t, kind),
                per_device_sql(&db, table),
                "{f} {kind:?}"
            );
        }
    }
}

/// What a query must return on `table`, computed a second way: read the table's raw rows
/// with a plain SELECT and apply the query's filter here in Rust. Returns (row count, Σ of
/// the first two columns' difference where they are start/end, else 0).
fn expected_rows(c: &Connection, query: &str, table: &str) -> (i64, i64) {
    let rows = |sql: &str| -> Vec<(i64, Option<i64>, Option<String>)> {
        let mut st = c.prepare(sql).unwrap();
        st.query_map([], |r| {
            r.get::<_, i64>(0)
                .map(|a| (a, r.get(1).ok(), r.get(2).ok()))
        })
        .unwrap()
        .map(Result::unwrap)
        .collect()
    };
    let all = |sql: &str| -> (i64, i64) {
        let v = rows(sql);
        (
            v.len() as i64,
            v.iter().map(|(s, e, _)| e.unwrap_or(0) - s).sum(),
        )
    };
    match query {
        "kernels" | "memcpy" | "memset" | "graph_trace" => {
            all(&format!("SELECT start, end, NULL FROM {table}"))
        }
        "runtime" => {
            let v = rows(&format!(
                "SELECT start, end, CAST(eventClass AS TEXT) FROM {table}"
            ));
            let keep: Vec<_> = v
                .iter()
                .filter(|(_, _, k)| matches!(k.as_deref(), Some("0" | "1")))
                .collect();
            (
                keep.len() as i64,
                keep.iter().map(|(s, e, _)| e.unwrap_or(0) - s).sum(),
            )
        }
        "nvtx" => {
            let v = rows(&format!(
                "SELECT start, end, CAST(eventType AS TEXT) FROM {table}"
            ));
            let keep: Vec<_> = v
                .iter()
                .filter(|(_, e, k)| {
                    e.is_some() && matches!(k.as_deref(), Some("59" | "60" | "70" | "71"))
                        // A named domain's create row (no end): read for the domain's name.
                        || k.as_deref() == Some("75")
                })
                .collect();
            (
                keep.len() as i64,
                keep.iter().filter_map(|(s, e, _)| e.map(|e| e - s)).sum(),
            )
        }
        "export_meta" | "capture_meta" => {
            let v = rows(&format!("SELECT 0, NULL, name FROM {table}"));
            let n = v
                .iter()
                .filter_map(|(_, _, n)| n.as_deref())
                .filter(|n| {
                    if query == "export_meta" {
                        matches!(*n, "EXPORT_PRODUCT_VERSION" | "EXPORT_SCHEMA_VERSION")
                    } else {
                        *n == "CUDA_GRAPH_TRACE_OPTIONS:MODE"
                            || (n.starts_with("PROCESS_")
                                && n.ends_with(":CUDA_GRAPH_TRACE_OPTIONS:MODE"))
                    }
                })
                .count();
            (n as i64, 0)
        }
        // One row of (count, max id): checked by value below.
        "string_ids_range" => (1, 0),
        _ => (all(&format!("SELECT 0, NULL, NULL FROM {table}")).0, 0),
    }
}

#[test]
fn every_query_returns_the_rows_an_independent_read_finds() {
    let dir = tempdir();
    let mut files: Vec<PathBuf> = FIXTURES.iter().map(|f| fixture(f)).collect();
    for (layout, name) in [
        (Layout::Nsys2020_5, "l2020.sqlite"),
        (Layout::Nsys2022_1, "l2022.sqlite"),
        (Layout::Nsys2026_2, "l2026.sqlite"),
    ] {
        let p = dir.path().join(name);
        workload::build(&mixed_scenario(layout), &p).unwrap();
        files.push(p);
    }
    files.push(crate::capture_facts::metrics_report(
        dir.path(),
        Layout::Nsys2026_2,
    ));
    let mut exercised: HashSet<&str> = HashSet::new();
    for db in &files {
        let c = ro(db);
        let schema = Schema::probe(&c).unwrap();
        let mut applied = Vec::new();
        for q in queries::ALL {
            // The metrics query reads the metric ids it is given: here, every id there is.
            let ids: Vec<i64> = match q.table(&schema) {
                Some(t) if q.name == "gpu_metrics" => c
                    .prepare(&format!("SELECT DISTINCT metricId FROM {t}"))
                    .unwrap()
                    .query_map([], |r| r.get(0))
                    .unwrap()
                    .map(Result::unwrap)
                    .collect(),
                _ => Vec::new(),
            };
            let fill = queries::Fill {
                ids: &ids,
                ..queries::Fill::default()
            };
            let Some(sql) = q.render_with(&schema, &fill) else {
                continue;
            };
            let table = q.table(&schema).unwrap();
            let mut st = c
                .prepare(&sql)
                .unwrap_or_else(|e| panic!("{} on {}: {e}", q.name, db.display()));
            let timed = matches!(
                q.name,
                "kernels" | "memcpy" | "memset" | "graph_trace" | "runtime" | "nvtx"
            );
            let (mut n, mut dur, mut first_row) = (0i64, 0i64, None);
            let mut rows = st.query([]).unwrap();
            while let Some(r) = rows.next().unwrap() {
                n += 1;
                // Only the NVTX domain-create rows have no end (they have no extent).
                if timed {
                    if let Some(end) = r.get::<_, Option<i64>>(1).unwrap() {
                        dur += end - r.get::<_, i64>(0).unwrap();
                    }
                }
                if first_row.is_none() && q.name == "string_ids_range" {
                    first_row = Some((r.get::<_, i64>(0).unwrap(), r.get::<_, i64>(1).unwrap()));
                }
            }
            let (want_n, want_dur) = expected_rows(&c, q.name, table);
            assert_eq!(n, want_n, "{}: {} rows", db.display(), q.name);
            assert_eq!(dur, want_dur, "{}: {} Σ(end − start)", db.display(), q.name);
            if let Some((count, max)) = first_row {
                let ids: Vec<i64> = c
                    .prepare(&format!("SELECT id FROM {table}"))
                    .unwrap()
                    .query_map([], |r| r.get(0))
                    .unwrap()
                    .map(Result::unwrap)
                    .collect();
                assert_eq!(count, ids.len() as i64, "{}", db.display());
                assert_eq!(
                    max,
                    ids.iter().copied().max().unwrap_or(0),
                    "{}",
                    db.display()
                );
            }
            applied.push(q.name);
            exercised.insert(q.name);
        }
        // kernels, runtime and strings exist in every one of these files, with rows.
        for must in ["kernels", "runtime", "strings"] {
            assert!(
                applied.contains(&must),
                "{}: {must} not applied",
                db.display()
            );
        }
        assert!(
            sql_i64(db, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL") > 0,
            "{}",
            db.display()
        );
    }
    // Every embedded query ran on at least one file, so none is untested.
    let missing: Vec<&str> = queries::ALL
        .iter()
        .map(|q| q.name)
        .filter(|n| !exercised.contains(n))
        .collect();
    assert!(missing.is_empty(), "never applied: {missing:?}");
}

#[test]
fn replicate_keeps_the_row_mix_and_shifts_copies() {
    let dir = tempdir();
    let src = fixture("nsys/saxpy_mpi_a100_nsys2022.2.sqlite");
    let out = dir.path().join("x3.sqlite");
    let r = replicate::replicate(&src, 3, &out).unwrap();
    for t in [
        "CUPTI_ACTIVITY_KIND_KERNEL",
        "CUPTI_ACTIVITY_KIND_RUNTIME",
        "NVTX_EVENTS",
        "CUPTI_ACTIVITY_KIND_MEMCPY",
    ] {
        let n = |db: &Path| sql_i64(db, &format!("SELECT count(*) FROM {t}"));
        assert_eq!(n(&out), 3 * n(&src), "{t}");
    }
    // Same DDL.
    let ddl = |db: &Path| {
        let c = ro(db);
        let mut st = c
            .prepare("SELECT sql FROM sqlite_master WHERE sql IS NOT NULL ORDER BY name")
            .unwrap();
        st.query_map([], |r| r.get::<_, String>(0))
            .unwrap()
            .map(Result::unwrap)
            .collect::<Vec<_>>()
    };
    assert_eq!(ddl(&out), ddl(&src));
    let t = nsys::load(&out).unwrap();
    let orig = per_device_sql(&src, "CUPTI_ACTIVITY_KIND_KERNEL");
    let got = per_device(&t, OpKind::Kernel);
    for (dev, (n, s)) in orig {
        assert_eq!(got[&dev], (3 * n, 3 * s));
    }
    // Copies do not overlap in time and every kernel still finds its launch.
    let v = t.ops_view().unwrap();
    assert!(r.period_ns > 0);
    assert_eq!(
        kernels_without_launch(&t),
        3 * sql_i64(
            &src,
            "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k WHERE NOT EXISTS (SELECT 1 FROM \
             CUPTI_ACTIVITY_KIND_RUNTIME r WHERE r.correlationId = k.correlationId AND \
             r.eventClass IN (0,1) AND (r.globalTid >> 24) = (k.globalPid >> 24))"
        ) as usize
    );
    let span = v.end_ns.iter().max().unwrap() - v.start_ns.iter().min().unwrap();
    assert!(span >= 2 * r.period_ns);
    // Correlation ids renumbered densely before the copies: n distinct ids in the source
    // (every table that has the column) become 1..=n, copy k adds k × stride (the power of
    // ten above n), so the largest id is 2 × stride + n.
    let c = ro(&src);
    let with_ids: Vec<String> = c
        .prepare(
            "SELECT m.name FROM sqlite_master m, pragma_table_info(m.name) p \
             WHERE m.type = 'table' AND p.name = 'correlationId'",
        )
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let union = with_ids
        .iter()
        .map(|t| format!("SELECT correlationId AS id FROM {t} WHERE correlationId > 0"))
        .collect::<Vec<_>>()
        .join(" UNION ");
    let n = sql_i64(&src, &format!("SELECT count(*) FROM ({union})"));
    assert!(n > 0);
    let stride = 10i64.pow(n.ilog10() + 1);
    assert_eq!(r.correlation_stride, stride);
    let max_out = with_ids
        .iter()
        .map(|t| sql_i64(&out, &format!("SELECT max(correlationId) FROM {t}")))
        .max()
        .unwrap();
    assert_eq!(max_out, 2 * stride + n);
}
