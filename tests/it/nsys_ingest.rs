//! nsys ingest: every fixture loads into the Trace with values that match independent SQL
//! run here on the same file; the 2020.5 and 2022.1 layouts come from the generator; bad
//! inputs fail with one line and exit code 2; `.nsys-rep` goes through a fake `nsys`.

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
fn fixture_counts_and_names() {
    let db = fixture("nsys/fastvideo_h100_2gpu_nsys2026.2.sqlite");
    let t = nsys::load(&db).unwrap();
    // tests/fixtures/README.md: 3442 kernels / 5796 runtime / 904 memcpy / 22 memset.
    assert_eq!(t.ops.height(), 3442 + 904 + 22);
    assert_eq!(t.calls.height(), 5796);
    assert_eq!(range_names(&t), range_names_sql(&db, ""));
    // No TARGET_INFO_GPU: devices are the ids the ops carry.
    let ids: Vec<i64> = t.devices.iter().map(|d| d.id).collect();
    assert_eq!(
        ids.len() as i64,
        sql_i64(
            &db,
            "SELECT count(DISTINCT deviceId) FROM CUPTI_ACTIVITY_KIND_KERNEL"
        )
    );
    assert!(t.devices.iter().all(|d| d.name.is_none()));
    assert_eq!(t.meta.tool_version.as_deref(), Some("2026.2.1.210"));
    assert_eq!(t.meta.schema_version.as_deref(), Some("3.25.0"));
    assert_eq!(t.meta.cuda_graph_trace_mode.as_deref(), Some("Graph"));
    assert!(t.meta.warnings.is_empty(), "{:?}", t.meta.warnings);
    assert!(t.meta.process_names.contains(&(466, "python3".to_owned())));

    // Memcpy names by copyKind, counted by SQL.
    let v = t.ops_view().unwrap();
    for (kind, label) in [
        (1, "[memcpy HtoD]"),
        (2, "[memcpy DtoH]"),
        (8, "[memcpy DtoD]"),
    ] {
        let n = v.name_id.iter().filter(|&&n| t.name(n) == label).count() as i64;
        let want = sql_i64(
            &db,
            &format!("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE copyKind = {kind}"),
        );
        assert_eq!(n, want, "{label}");
    }
    let memsets = v
        .name_id
        .iter()
        .filter(|&&n| t.name(n) == "[memset]")
        .count();
    assert_eq!(memsets, 22);

    // Kernel identity = demangled name, short form = shortName: check one row by SQL.
    let (dm, sn): (String, String) = ro(&db)
        .query_row(
            "SELECT d.value, s.value FROM CUPTI_ACTIVITY_KIND_KERNEL k \
             JOIN StringIds d ON d.id = k.demangledName JOIN StringIds s ON s.id = k.shortName \
             ORDER BY k.start, k.end LIMIT 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    let first_kernel = (0..v.kind.len())
        .find(|&i| v.kind[i] == OpKind::Kernel as u32)
        .unwrap();
    assert_eq!(t.name(v.name_id[first_kernel]), dm);
    assert_eq!(t.name(v.short_id(first_kernel)), sn);
}

/// Kernels whose (pid, correlationId) has no loaded call.
fn kernels_without_launch(t: &Trace) -> usize {
    let c = t.calls_view().unwrap();
    let calls: HashSet<(i64, i64)> = c
        .pid
        .iter()
        .zip(c.correlation_id)
        .map(|(&p, &k)| (i64::from(p), i64::from(k)))
        .collect();
    let v = t.ops_view().unwrap();
    (0..v.kind.len())
        .filter(|&i| v.kind[i] == OpKind::Kernel as u32)
        .filter(|&i| !calls.contains(&(i64::from(v.pid[i]), i64::from(v.correlation_id[i]))))
        .count()
}

#[test]
fn correlation_joins_on_pid_too() {
    let by_pid = "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k WHERE NOT EXISTS (\
        SELECT 1 FROM CUPTI_ACTIVITY_KIND_RUNTIME r WHERE r.correlationId = k.correlationId \
        AND r.eventClass IN (0, 1) AND (r.globalTid >> 24) = (k.globalPid >> 24))";
    let by_corr = "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k WHERE NOT EXISTS (\
        SELECT 1 FROM CUPTI_ACTIVITY_KIND_RUNTIME r WHERE r.correlationId = k.correlationId)";
    // fixtures/README.md: 1810 (1799 with the wrong join) and 24 (23).
    for (f, right, wrong) in [
        ("nsys/fastvideo_h100_2gpu_nsys2026.2.sqlite", 1810, 1799),
        ("nsys/fastvideo_train_2gpu_nsys2026.2.sqlite", 24, 23),
    ] {
        let db = fixture(f);
        assert_eq!(sql_i64(&db, by_pid), right);
        assert_eq!(sql_i64(&db, by_corr), wrong);
        let t = nsys::load(&db).unwrap();
        assert_eq!(kernels_without_launch(&t), right as usize, "{f}");
    }
}

#[test]
fn saxpy_2022_drops_backtrace_duplicates_and_reads_old_tables() {
    let db = fixture("nsys/saxpy_mpi_a100_nsys2022.2.sqlite");
    let t = nsys::load(&db).unwrap();
    // 95 runtime rows = 56 runtime + 1 driver + 38 backtrace (eventClass 67) duplicates.
    assert_eq!(
        sql_i64(&db, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME"),
        95
    );
    let real = sql_i64(
        &db,
        "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE eventClass IN (0, 1)",
    );
    assert_eq!(real, 57);
    assert_eq!(t.calls.height() as i64, real);
    // Every launch call once: launches by SQL name match on the class 0/1 rows.
    let launches = sql_i64(
        &db,
        "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s ON s.id = r.nameId \
         WHERE r.eventClass IN (0, 1) AND (s.value LIKE 'cudaLaunchKernel%' OR \
         s.value LIKE 'cuLaunchKernel%' OR s.value LIKE 'cudaGraphLaunch%')",
    );
    let c = t.calls_view().unwrap();
    assert_eq!(
        (0..c.name_id.len()).filter(|&i| c.is_launch(i)).count() as i64,
        launches
    );
    assert!(launches >= 5);
    // NVTX: 22 push/pop ranges, 5 named by text and 17 by textId (MPI domain).
    assert_eq!(t.ranges.height(), 22);
    assert_eq!(range_names(&t), range_names_sql(&db, ""));
    // TARGET_INFO_GPU with `id`, and the old export-metadata table.
    assert_eq!(t.devices.len(), 1);
    let d = &t.devices[0];
    assert_eq!(d.name.as_deref(), Some("NVIDIA A100-SXM4-40GB"));
    assert_eq!(d.memory_bandwidth_bytes_per_s, Some(1_555_200_000_000.0));
    assert_eq!(d.sm_count, Some(108));
    assert_eq!(d.total_memory_bytes, Some(42_297_524_224));
    assert_eq!(t.meta.tool_version.as_deref(), Some("2022.2.1.31"));
    assert_eq!(t.meta.schema_version.as_deref(), Some("2.9.1"));
    assert_eq!(t.meta.cuda_graph_trace_mode, None);
}

#[test]
fn train_nvtx_mixes_text_and_text_id() {
    let db = fixture("nsys/fastvideo_train_2gpu_nsys2026.2.sqlite");
    let t = nsys::load(&db).unwrap();
    assert_eq!(range_names(&t), range_names_sql(&db, ""));
    let v = t.ranges_view().unwrap();
    // docs/nsys-format.md §4: 18656 text ranges in domain 0, 462 textId (NCCL) ranges in domain 1.
    let dom1 = v.domain_id.iter().filter(|&&d| d == 1).count();
    assert_eq!(dom1, 462);
    assert_eq!(v.domain_id.len(), 18656 + 462);
    let nccl = (0..v.name_id.len())
        .filter(|&i| v.domain_id[i] == 1 && t.name(v.name_id[i]).starts_with("nccl"))
        .count();
    assert_eq!(nccl, 462);
}

#[test]
fn load_options_limit_what_is_read() {
    let db = fixture("nsys/fastvideo_train_2gpu_nsys2026.2.sqlite");
    let t = nsys::load_with(&db, &LoadOptions::ops_only()).unwrap();
    assert_eq!(t.calls.height(), 0);
    assert_eq!(t.ranges.height(), 0);
    assert_eq!(
        per_device(&t, OpKind::Kernel),
        per_device_sql(&db, "CUPTI_ACTIVITY_KIND_KERNEL")
    );
    let opts = LoadOptions {
        range_filter: Some(regex::Regex::new(r"^FSDP::").unwrap()),
        ..LoadOptions::all()
    };
    let t = nsys::load_with(&db, &opts).unwrap();
    assert_eq!(
        range_names(&t),
        range_names_sql(
            &db,
            "AND COALESCE(text, (SELECT value FROM StringIds WHERE id = textId)) GLOB 'FSDP::*'"
        )
    );
    assert_eq!(t.ranges.height(), 68);
    assert_eq!(
        t.calls.height() as i64,
        sql_i64(
            &db,
            "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE eventClass IN (0,1)"
        )
    );
}

#[test]
fn converted_sglang_file_is_node_mode() {
    let db = fixture("nsys/sglang_decode_mi300x_converted_nsys2026.2.sqlite");
    let t = nsys::load(&db).unwrap();
    assert_eq!(t.meta.cuda_graph_trace_mode.as_deref(), Some("Node"));
    let v = t.ops_view().unwrap();
    let in_graph = v.graph_id.iter().filter(|&&g| g >= 0).count() as i64;
    assert_eq!(
        in_graph,
        sql_i64(
            &db,
            "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE graphId IS NOT NULL"
        )
    );
    assert_eq!(in_graph, 544);
}

/// Eager, node-graph, opaque-graph and piecewise steps on two ranks, with a memcpy,
/// launches without kernels and kernels without launches.
fn mixed_scenario(layout: Layout) -> Scenario {
    let ks = |n: usize| workload::decode_kernels(n);
    let mut steps = vec![
        StepSpec::new(
            Some(&workload::vllm_execute(1, 512, 0, 0)),
            LaunchMode::Eager,
            ks(6),
        ),
        StepSpec::new(
            Some(&workload::vllm_execute(0, 0, 8, 8)),
            LaunchMode::GraphNode,
            ks(10),
        ),
        StepSpec::new(
            Some(&workload::sglang_step("DECODE", 8, None)),
            LaunchMode::Piecewise,
            vec![
                KernelSpec::new("gemm_a", 5_000),
                KernelSpec::new("gemm_b", 6_000),
                KernelSpec::eager("flash_attn_decode", 9_000),
                KernelSpec::new("gemm_c", 4_000),
            ],
        ),
        StepSpec::new(None, LaunchMode::Eager, ks(3)),
    ];
    steps[0].memcpy_h2d_bytes = Some(1 << 20);
    steps[1].launches_without_kernels = 2;
    steps[1].kernels_without_launch_after = 3;
    steps[2].nvtx = NvtxStyle::Registered;
    steps[3].nvtx = NvtxStyle::StartEnd;
    if layout == Layout::Nsys2026_2 {
        steps.push(StepSpec::new(
            Some(&workload::sglang_step("DECODE", 8, None)),
            LaunchMode::GraphOpaque,
            ks(12),
        ));
    }
    let mut s = Scenario::new(layout, 2, steps);
    s.rank_extra_ns = vec![0, 700];
    s.backtrace_duplicates = layout != Layout::Nsys2026_2;
    s
}

#[test]
fn generated_layouts_load_with_expected_values() {
    let dir = tempdir();
    for layout in [Layout::Nsys2020_5, Layout::Nsys2022_1, Layout::Nsys2026_2] {
        let p = dir.path().join(format!("{layout:?}.sqlite"));
        let exp = workload::build(&mixed_scenario(layout), &p).unwrap();
        // The generator's own arithmetic, checked by SQL on what it wrote.
        for d in &exp.devices {
            let (n, sum) = per_device_sql(&p, "CUPTI_ACTIVITY_KIND_KERNEL")[&d.device];
            assert_eq!((n as u64, sum), (d.kernels, d.kernel_sum_ns), "{layout:?}");
        }
        let t = nsys::load(&p).unwrap();
        let kernels = per_device(&t, OpKind::Kernel);
        for d in &exp.devices {
            assert_eq!(kernels[&d.device], (d.kernels as i64, d.kernel_sum_ns));
            // Sequential ops on one stream: busy = Σ op durations, window = first..last.
            let v = t.ops_view().unwrap();
            let idx: Vec<usize> = (0..v.device.len())
                .filter(|&i| i64::from(v.device[i]) == d.device)
                .collect();
            assert_eq!(idx.len() as u64, d.ops);
            let busy: i64 = idx.iter().map(|&i| v.end_ns[i] - v.start_ns[i]).sum();
            assert_eq!(busy, d.busy_ns);
            let first = idx.iter().map(|&i| v.start_ns[i]).min();
            let last = idx.iter().map(|&i| v.end_ns[i]).max();
            assert_eq!(
                (first, last),
                (Some(d.window_start_ns), Some(d.window_end_ns))
            );
        }
        assert_eq!(
            kernels_without_launch(&t),
            6,
            "{layout:?}: 3 orphans per rank"
        );
        // Backtrace duplicates (2022/2020 layouts) never reach the calls frame.
        let launches: u64 = exp.steps.iter().map(|s| s.launches).sum::<u64>()
            + exp.steps.iter().map(|s| s.memcpys).sum::<u64>();
        assert_eq!(t.calls.height() as u64, launches, "{layout:?}");
        // Devices: named from TARGET_INFO_GPU (deviceId column in 2020.5).
        assert_eq!(t.devices.len(), 2);
        assert_eq!(t.devices[1].name.as_deref(), Some("NVIDIA H100 80GB HBM3"));
        // Ranges: named steps (nested none here), registered and start/end forms.
        let named = exp.steps.iter().filter(|s| s.name.is_some()).count();
        assert_eq!(t.ranges.height(), named, "{layout:?}");
        let (tool, schema) = (t.meta.tool_version.clone(), t.meta.schema_version.clone());
        match layout {
            Layout::Nsys2020_5 => assert_eq!((tool, schema), (None, None)),
            Layout::Nsys2022_1 => assert_eq!(
                (tool.as_deref(), schema.as_deref()),
                (Some("2022.1.3.3"), Some("2.9.1"))
            ),
            _ => {
                assert_eq!(schema.as_deref(), Some("3.25.0"));
                assert_eq!(t.meta.cuda_graph_trace_mode.as_deref(), Some("Graph"));
                let v = t.ops_view().unwrap();
                let graphs: Vec<usize> = (0..v.kind.len())
                    .filter(|&i| v.kind[i] == OpKind::Graph as u32)
                    .collect();
                assert_eq!(graphs.len(), 2, "one opaque replay per rank");
                assert!(graphs
                    .iter()
                    .all(|&i| t.name(v.name_id[i]) == "[cuda graph 1]"));
                assert!(graphs.iter().all(|&i| v.graph_id[i] == 1));
            }
        }
        // Node-mode replays (kernels with a graph node id in the export; the trace does not
        // keep node ids) share their launch's correlation id.
        let node_corrs: HashSet<i64> = ro(&p)
            .prepare(
                "SELECT correlationId FROM CUPTI_ACTIVITY_KIND_KERNEL \
                 WHERE graphNodeId IS NOT NULL AND deviceId = 0",
            )
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        let v = t.ops_view().unwrap();
        let node: Vec<usize> = (0..v.kind.len())
            .filter(|&i| v.device[i] == 0 && node_corrs.contains(&i64::from(v.correlation_id[i])))
            .collect();
        assert_eq!(
            node.len(),
            10 + 3,
            "{layout:?}: node-mode + piecewise graph kernels"
        );
        let corrs: HashSet<i64> = node
            .iter()
            .map(|&i| i64::from(v.correlation_id[i]))
            .collect();
        // Step 1 is one graph launch; step 2's piecewise graphs are two (gemm_a+gemm_b, then
        // gemm_c after the eager attention kernel).
        assert_eq!(corrs.len(), 3);
    }
}

#[test]
fn timestamps_not_collected_and_newer_schema_warn() {
    let dir = tempdir();
    let p = dir.path().join("w.sqlite");
    let mut w = NsysWriter::create(&p, Layout::Nsys2026_2).unwrap();
    w.set_export_meta("EXPORT_SCHEMA_VERSION", "3.27.1")
        .unwrap();
    let name = w.string("k").unwrap();
    for (s, e) in [(100, 200), (0, 0), (300, 450), (0, 0)] {
        w.kernel(&KernelRec {
            start_ns: s,
            end_ns: e,
            device: 0,
            stream: 7,
            pid: 5,
            correlation_id: None,
            demangled_name: name,
            short_name: name,
            graph_node_id: None,
            graph_id: None,
            grid: None,
        })
        .unwrap();
    }
    w.finish().unwrap();
    let t = nsys::load(&p).unwrap();
    assert_eq!(t.ops.height(), 2);
    let v = t.ops_view().unwrap();
    assert_eq!(v.correlation_id, &[-1, -1]);
    assert_eq!(v.graph_id, &[-1, -1]);
    assert_eq!(v.pid, &[5, 5]);
    assert_eq!(t.meta.warnings.len(), 2, "{:?}", t.meta.warnings);
    assert!(t.meta.warnings.iter().any(|w| w.contains("3.27.1")));
    assert!(t
        .meta
        .warnings
        .iter()
        .any(|w| w.starts_with("2 kernel rows")));
}

fn assert_input_error(p: &Path, what: &str) -> String {
    match nsys::load(p) {
        Ok(_) => panic!("{what}: loaded"),
        Err(e) => {
            assert_eq!(e.exit_code(), 2, "{what}: {e}");
            let m = e.to_string();
            assert!(!m.contains('\n'), "{what}: one line: {m}");
            m
        }
    }
}

#[test]
fn bad_inputs_get_one_line_and_exit_2() {
    let dir = tempdir();
    let d = dir.path();
    assert!(assert_input_error(&d.join("missing.sqlite"), "missing").contains("cannot read"));
    assert!(assert_input_error(d, "dir").contains("directory"));
    std::fs::write(d.join("empty.sqlite"), b"").unwrap();
    assert!(assert_input_error(&d.join("empty.sqlite"), "empty").contains("not an SQLite"));
    std::fs::write(d.join("json.sqlite"), b"{\"traceEvents\": []}").unwrap();
    assert!(assert_input_error(&d.join("json.sqlite"), "json").contains("not an SQLite"));
    let other = d.join("other.sqlite");
    Connection::open(&other)
        .unwrap()
        .execute_batch("CREATE TABLE t(x); INSERT INTO t VALUES (1);")
        .unwrap();
    assert!(assert_input_error(&other, "other").contains("not an Nsight Systems export"));
    // An export with only host activity.
    let host = d.join("host.sqlite");
    let mut w = NsysWriter::create(&host, Layout::Nsys2026_2).unwrap();
    let n = w.string("cudaMalloc_v3020").unwrap();
    w.call(&CallRec {
        start_ns: 1,
        end_ns: 2,
        event_class: 0,
        pid: 1,
        tid: 1,
        correlation_id: Some(1),
        name: n,
    })
    .unwrap();
    w.nvtx(&NvtxRec {
        start_ns: 0,
        end_ns: Some(5),
        event_type: 59,
        pid: 1,
        tid: 1,
        name: NvtxName::Text("x"),
        domain_id: None,
    })
    .unwrap();
    w.finish().unwrap();
    assert!(assert_input_error(&host, "host only").contains("captured with -t cuda"));
}

#[test]
fn fuzzed_files_never_panic() {
    let dir = tempdir();
    let src = std::fs::read(fixture("nsys/saxpy_mpi_a100_nsys2022.2.sqlite")).unwrap();
    let p = dir.path().join("f.sqlite");
    // Truncated copies: every one is caught (by the header's page count or by SQLite).
    for len in [
        0,
        16,
        99,
        100,
        1024,
        4096,
        8192,
        src.len() / 4,
        src.len() / 2,
        src.len() - 4096,
        src.len() - 1,
    ] {
        std::fs::write(&p, &src[..len]).unwrap();
        let m = assert_input_error(&p, &format!("truncated to {len}"));
        assert!(
            m.contains("SQLite") || m.contains("truncated"),
            "{len}: {m}"
        );
    }
    let mut rng = rand::rngs::SmallRng::seed_from_u64(7);
    for _ in 0..4 {
        let junk: Vec<u8> = (0..rng.random_range(1..20_000))
            .map(|_| rng.random())
            .collect();
        std::fs::write(&p, &junk).unwrap();
        assert_input_error(&p, "random bytes");
    }
    // Flipped bytes: loads or fails with exit 2, never panics.
    let mut failed = 0;
    for round in 0..24 {
        let mut b = src.clone();
        // Half the rounds keep the header intact to reach SQLite's page parsing.
        let lo = if round % 2 == 0 { 100 } else { 0 };
        for _ in 0..64 {
            let i = rng.random_range(lo..b.len());
            b[i] ^= 1 << rng.random_range(0..8);
        }
        std::fs::write(&p, &b).unwrap();
        if let Err(e) = nsys::load(&p) {
            assert_eq!(e.exit_code(), 2, "{e}");
            failed += 1;
        }
    }
    assert!(
        failed > 0,
        "64 flipped bits per file broke none of 24 files"
    );
}

#[test]
fn read_only_report_is_read_and_left_unchanged() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempdir();
    let p = dir.path().join("ro.sqlite");
    std::fs::copy(fixture("nsys/saxpy_mpi_a100_nsys2022.2.sqlite"), &p).unwrap();
    let before = std::fs::read(&p).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o444)).unwrap();
    let t = nsys::load(&p).unwrap();
    assert_eq!(t.ops.height(), 5 + 15);
    assert_eq!(std::fs::read(&p).unwrap(), before);
    let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert_eq!(names.len(), 1, "no journal or side file left behind");
}

fn fake_report(dir: &Path, name: &str) -> PathBuf {
    let rep = dir.join(name);
    let src = fixture("nsys/saxpy_mpi_a100_nsys2022.2.sqlite");
    std::fs::write(
        &rep,
        format!("NVIDIA Tegra Profiler Report 1.\n{}\n", src.display()),
    )
    .unwrap();
    rep
}

fn fake_path() -> Option<std::ffi::OsString> {
    Some(
        root()
            .join("tests")
            .join("fake_nsys_export")
            .into_os_string(),
    )
}

fn calls_logged(dir: &Path) -> usize {
    std::fs::read_to_string(dir.join("calls.log"))
        .map(|s| s.lines().count())
        .unwrap_or(0)
}

#[test]
fn nsys_rep_is_exported_once_with_nsys_on_path() {
    let dir = tempdir();
    let d = dir.path();
    let rep = fake_report(d, "run.nsys-rep");
    assert_eq!(nsys::sniff(&rep).unwrap(), nsys::FileKind::Report);
    let opts = ExportOptions {
        path_env: fake_path(),
        dir_writable: None,
    };
    let out = export::ensure_sqlite(&rep, &opts).unwrap();
    assert_eq!(out, d.join("run.sqlite"));
    assert_eq!(calls_logged(d), 1);
    // Reused while newer than the report.
    assert_eq!(export::ensure_sqlite(&rep, &opts).unwrap(), out);
    assert_eq!(calls_logged(d), 1);
    // The loader goes through the same path and needs no nsys now.
    let t = nsys::load(&rep).unwrap();
    assert_eq!(t.ops.height(), 5 + 15);
    assert_eq!(t.meta.path, rep.display().to_string());
    // A report newer than its export is exported again.
    let later = std::time::SystemTime::now() + std::time::Duration::from_secs(5);
    std::fs::File::options()
        .write(true)
        .open(&rep)
        .unwrap()
        .set_modified(later)
        .unwrap();
    export::ensure_sqlite(&rep, &opts).unwrap();
    assert_eq!(calls_logged(d), 2);
}

#[test]
fn nsys_rep_in_unwritable_dir_exports_to_temp() {
    let dir = tempdir();
    let rep = fake_report(dir.path(), "ro_dir.qdrep");
    let opts = ExportOptions {
        path_env: fake_path(),
        dir_writable: Some(false),
    };
    let out = export::ensure_sqlite(&rep, &opts).unwrap();
    assert_eq!(out, export::temp_export(&rep));
    assert!(out.starts_with(std::env::temp_dir()));
    assert!(!dir.path().join("ro_dir.sqlite").exists());
    assert_eq!(nsys::sniff(&out).unwrap(), nsys::FileKind::Sqlite);
    std::fs::remove_file(out).unwrap();
}

#[test]
fn nsys_rep_without_nsys_is_an_environment_error() {
    let dir = tempdir();
    let rep = fake_report(dir.path(), "nonsys.nsys-rep");
    let empty = tempdir();
    let opts = ExportOptions {
        path_env: Some(empty.path().as_os_str().to_owned()),
        dir_writable: None,
    };
    let e = export::ensure_sqlite(&rep, &opts).unwrap_err();
    assert_eq!(e.exit_code(), 4);
    let m = e.to_string();
    assert!(m.contains("nsys export --type sqlite -o"), "{m}");
    assert!(m.contains("nonsys.nsys-rep"), "{m}");
    // A damaged report: nsys fails, the user is told (exit 2).
    std::fs::write(&rep, "NVIDIA Tegra Profiler Report 1.\n/nonexistent\n").unwrap();
    let opts = ExportOptions {
        path_env: fake_path(),
        dir_writable: None,
    };
    let e = export::ensure_sqlite(&rep, &opts).unwrap_err();
    assert_eq!(e.exit_code(), 2);
    assert!(e.to_string().contains("report is damaged"), "{e}");
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
