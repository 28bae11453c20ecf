//! analyze: per-device busy/idle and per-kernel exclusive time on every real nsys fixture,
//! checked against SQL run on the same file; the CLI's output formats and bad inputs.

use rusqlite::{Connection, OpenFlags};
use stepgate::categories::Categorizer;
use stepgate::pipeline::analyze::analyze_trace;
use stepgate::source::nsys;

use crate::common::{fixture, root, run};

const FIXTURES: &[&str] = &[
    "nsys/fastvideo_h100_2gpu_nsys2026.2.sqlite",
    "nsys/fastvideo_train_2gpu_nsys2026.2.sqlite",
    "nsys/saxpy_mpi_a100_nsys2022.2.sqlite",
    "nsys/sglang_decode_mi300x_converted_nsys2026.2.sqlite",
];

fn has_table(db: &Connection, t: &str) -> bool {
    db.query_row(
        "SELECT count(*) FROM sqlite_master WHERE type='table' AND name=?1",
        [t],
        |r| r.get::<_, i64>(0),
    )
    .unwrap()
        > 0
}

/// A temp table of every GPU op (kernel, memcpy, memset) with its name, built in SQL.
fn sql_ops(db: &Connection) {
    let mut parts = vec![
        "SELECT deviceId d, start s, end e, s1.value name, 0 k FROM CUPTI_ACTIVITY_KIND_KERNEL
         JOIN StringIds s1 ON s1.id = demangledName WHERE NOT (start = 0 AND end = 0)"
            .to_owned(),
    ];
    if has_table(db, "CUPTI_ACTIVITY_KIND_MEMCPY") {
        parts.push(
            "SELECT deviceId, start, end, 'memcpy', 1 FROM CUPTI_ACTIVITY_KIND_MEMCPY".into(),
        );
    }
    if has_table(db, "CUPTI_ACTIVITY_KIND_MEMSET") {
        parts.push(
            "SELECT deviceId, start, end, '[memset]', 2 FROM CUPTI_ACTIVITY_KIND_MEMSET".into(),
        );
    }
    db.execute_batch(&format!(
        "CREATE TEMP TABLE ops AS {}; CREATE INDEX temp.ops_d ON ops(d, s, e);",
        parts.join(" UNION ALL ")
    ))
    .unwrap();
}

/// Union length per device by the classic islands method: an op starts a new island when
/// it begins after every earlier op (sorted by start) has ended.
fn sql_busy(db: &Connection) -> Vec<(i64, i64)> {
    let mut st = db
        .prepare(
            "WITH o AS (
               SELECT d, s, e, MAX(e) OVER (PARTITION BY d ORDER BY s, e
                 ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) prev_end FROM ops),
             isl AS (
               SELECT d, s, e, SUM(CASE WHEN prev_end IS NULL OR s > prev_end THEN 1 ELSE 0 END)
                 OVER (PARTITION BY d ORDER BY s, e) island FROM o)
             SELECT d, SUM(len) FROM (SELECT d, MAX(e) - MIN(s) len FROM isl GROUP BY d, island)
             GROUP BY d ORDER BY d",
        )
        .unwrap();
    st.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

#[test]
fn every_fixture_matches_sql_and_the_sweep_invariant_holds() {
    let cats = Categorizer::default();
    for f in FIXTURES {
        let path = fixture(f);
        let trace = nsys::load(&path).unwrap();
        let a = analyze_trace(&trace, &cats, None).unwrap();
        let db = Connection::open_with_flags(&path, OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
        sql_ops(&db);
        let busy = sql_busy(&db);
        assert_eq!(a.devices.len(), busy.len(), "{f}: devices");
        for (d, (dev, want_busy)) in a.devices.iter().zip(&busy) {
            assert_eq!(d.device, *dev, "{f}");
            assert_eq!(d.busy_ns, *want_busy, "{f} device {dev}: busy");
            let sum_excl: i64 = d.kernels_by_name.iter().map(|k| k.exclusive_ns).sum();
            assert_eq!(sum_excl, d.busy_ns, "{f} device {dev}: Σ exclusive = busy");
            let (n_ops, n_k, ksum, ws, we): (u64, u64, i64, i64, i64) = db
                .query_row(
                    "SELECT count(*), SUM(k = 0), SUM(CASE WHEN k = 0 THEN e - s ELSE 0 END), MIN(s), MAX(e)
                     FROM ops WHERE d = ?1",
                    [dev],
                    |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)),
                )
                .unwrap();
            assert_eq!(
                (d.ops, d.kernels, d.kernel_sum_ns),
                (n_ops, n_k, ksum),
                "{f} device {dev}"
            );
            assert_eq!(
                (d.window_start_ns, d.window_end_ns),
                (ws, we),
                "{f} device {dev}"
            );
            assert_eq!(d.idle_ns, we - ws - want_busy, "{f} device {dev}: idle");
            // Per kernel name: instances and total from SQL.
            for k in d
                .kernels_by_name
                .iter()
                .filter(|k| !k.name.starts_with('['))
                .take(5)
            {
                let (n, tot): (u64, i64) = db
                    .query_row(
                        "SELECT count(*), SUM(e - s) FROM ops WHERE d = ?1 AND k = 0 AND name = ?2",
                        rusqlite::params![dev, k.name],
                        |r| Ok((r.get(0)?, r.get(1)?)),
                    )
                    .unwrap();
                assert_eq!((k.instances, k.total_ns), (n, tot), "{f} {}", k.name);
                assert!(k.exclusive_ns <= k.total_ns);
            }
            let cat_sum: i64 = d.categories.iter().map(|c| c.exclusive_ns).sum();
            assert_eq!(cat_sum, d.busy_ns, "{f}: categories add up");
        }
    }
}

#[test]
fn overlapping_kernels_on_one_stream_are_counted_once() {
    // fastvideo_train has two kernels on one stream that overlap by 12.4 µs in the
    // recorded timestamps: the plain sum exceeds the union by at least that much.
    let path = fixture("nsys/fastvideo_train_2gpu_nsys2026.2.sqlite");
    let db = Connection::open_with_flags(&path, OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
    let (dev, overlap): (i64, i64) = db
        .query_row(
            "SELECT a.deviceId, MIN(a.end, b.end) - b.start ov FROM CUPTI_ACTIVITY_KIND_KERNEL a
             JOIN CUPTI_ACTIVITY_KIND_KERNEL b ON a.deviceId = b.deviceId AND a.streamId = b.streamId
              AND b.start > a.start AND b.start < a.end ORDER BY ov DESC LIMIT 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert!((12_000..13_000).contains(&overlap), "overlap {overlap}");
    let t = nsys::load(&path).unwrap();
    let a = analyze_trace(&t, &Categorizer::default(), None).unwrap();
    let d = a.devices.iter().find(|d| d.device == dev).unwrap();
    let plain: i64 = d.kernels_by_name.iter().map(|k| k.total_ns).sum();
    assert!(
        plain - d.busy_ns >= overlap,
        "{plain} - {} < {overlap}",
        d.busy_ns
    );
}

fn analyze(args: &[&str]) -> (i32, String, String) {
    let mut v = vec!["analyze"];
    v.extend_from_slice(args);
    run(&v)
}

#[test]
fn output_formats_are_pinned() {
    // Relative path so the snapshot does not depend on where the repo is checked out.
    let rel = "tests/fixtures/nsys/saxpy_mpi_a100_nsys2022.2.sqlite";
    let at = |columns: &str, fmt: &str| {
        let out = std::process::Command::new(crate::common::bin())
            .current_dir(root())
            .env("COLUMNS", columns)
            .args(["analyze", rel, "--format", fmt])
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let go = |fmt: &str| at("120", fmt);
    insta::assert_snapshot!("analyze_saxpy_table", go("table"));
    insta::assert_snapshot!("analyze_saxpy_table_80", at("80", "table"));
    insta::assert_snapshot!("analyze_saxpy_markdown", go("markdown"));
    insta::assert_snapshot!("analyze_saxpy_csv", go("csv"));
    let mut json: serde_json::Value = serde_json::from_str(&go("json")).unwrap();
    assert_eq!(json["schema_version"], 2);
    assert_eq!(json["devices"][0]["name"], "NVIDIA A100-SXM4-40GB");
    json["tool"] = "[tool]".into();
    insta::assert_json_snapshot!("analyze_saxpy_json", json);
}

#[test]
fn bad_inputs_exit_2_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let text = dir.path().join("notes.sqlite");
    std::fs::write(&text, "hello, not a database\n").unwrap();
    let empty_db = dir.path().join("empty.sqlite");
    Connection::open(&empty_db)
        .unwrap()
        .execute_batch("CREATE TABLE t(x); INSERT INTO t VALUES (1);")
        .unwrap();
    let trunc = dir.path().join("trunc.sqlite");
    let full = std::fs::read(fixture("nsys/saxpy_mpi_a100_nsys2022.2.sqlite")).unwrap();
    std::fs::write(&trunc, &full[..full.len() / 3]).unwrap();
    let cases = [
        dir.path().join("missing.sqlite"),
        dir.path().to_path_buf(),
        text,
        empty_db,
        trunc,
    ];
    for c in &cases {
        let (code, out, err) = analyze(&[c.to_str().unwrap()]);
        assert_eq!(code, 2, "{}: {err}", c.display());
        assert!(out.is_empty());
        assert_eq!(err.trim_end().lines().count(), 1, "{}: {err}", c.display());
        assert!(err.starts_with("stepgate: error: "), "{err}");
    }
    let (code, _, err) = analyze(&[
        fixture("nsys/saxpy_mpi_a100_nsys2022.2.sqlite")
            .to_str()
            .unwrap(),
        "--device",
        "7",
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("device 7 has no GPU activity"), "{err}");
}

#[test]
fn nsys_rep_without_nsys_exits_4() {
    let dir = tempfile::tempdir().unwrap();
    let rep = dir.path().join("run.nsys-rep");
    std::fs::write(&rep, b"NVIDIA Tegra Profiler Report 2026@2@1@210-x").unwrap();
    let out = std::process::Command::new(crate::common::bin())
        .env("PATH", dir.path())
        .args(["analyze", rep.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(4));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("nsys export --type sqlite"), "{err}");
}
