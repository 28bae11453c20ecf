//! Hostile nsys exports: unusable times, bad call rows, duplicate correlation ids, ids beyond 32 bits, WAL and locked files.

use super::*;

/// Replace `table` by a copy without NOT NULL constraints (as a damaged or hand-edited
/// export may have), so NULL times can be stored.
fn drop_constraints(conn: &Connection, table: &str) {
    conn.execute_batch(&format!(
        "CREATE TABLE t_copy AS SELECT * FROM {table}; DROP TABLE {table}; \
         ALTER TABLE t_copy RENAME TO {table};"
    ))
    .unwrap();
}

// ---------------------------------------------------------------- nsys

#[test]
fn nsys_rows_with_unusable_times_are_dropped_never_read_as_zero() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("bad.sqlite");
    two_kernels(&p);
    let conn = Connection::open(&p).unwrap();
    drop_constraints(&conn, "CUPTI_ACTIVITY_KIND_KERNEL");
    let bad = [
        ("NULL", "200"),
        ("100", "NULL"),
        ("'abc'", "200"),
        ("100", "'x'"),
        ("500", "400"),
        ("9223372036854775000", "9223372036854775807"),
        ("100.5", "200"),
        ("-9223372036854775808", "200"),
    ];
    for (s, e) in bad {
        conn.execute_batch(&format!(
            "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL SELECT * FROM CUPTI_ACTIVITY_KIND_KERNEL \
             WHERE start = 100 AND end = 200 LIMIT 1; \
             UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = {s}, end = {e} \
             WHERE rowid = (SELECT max(rowid) FROM CUPTI_ACTIVITY_KIND_KERNEL);"
        ))
        .unwrap();
    }
    let n: i64 = conn
        .query_row("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(n, 10);
    drop(conn);

    let t = load_ok(&p);
    let v = t.ops_view().unwrap();
    let mut spans: Vec<(i64, i64)> = v
        .start_ns
        .iter()
        .copied()
        .zip(v.end_ns.iter().copied())
        .collect();
    spans.sort_unstable();
    assert_eq!(spans, vec![(100, 200), (300, 450)]);
    assert!(
        has_warning(&t, "8 row(s) of CUPTI_ACTIVITY_KIND_KERNEL"),
        "{:?}",
        t.meta.warnings
    );

    // The numbers a user sees: busy 100 + 150 ns over a window of 100..450, and the
    // warning in the JSON `warnings`.
    let (code, out, err) = run(&["analyze", p.to_str().unwrap(), "--format", "json"]);
    assert_eq!(code, 0, "{err}");
    let j: serde_json::Value = serde_json::from_str(&out).unwrap();
    let dev = &j["devices"][0];
    assert_eq!(dev["busy_ns"], 250);
    assert_eq!(dev["kernel_sum_ns"], 250);
    assert_eq!(
        (dev["window_start_ns"].clone(), dev["window_end_ns"].clone()),
        (100.into(), 450.into())
    );
    assert!(j["warnings"]
        .to_string()
        .contains("8 row(s) of CUPTI_ACTIVITY_KIND_KERNEL"));
    // And in the table.
    let (code, out, _) = run(&["analyze", p.to_str().unwrap()]);
    assert_eq!(code, 0);
    assert!(
        out.contains("warning: 8 row(s) of CUPTI_ACTIVITY_KIND_KERNEL"),
        "{out}"
    );
    // `steps` prints them too: under the headline in a table, on stderr beside JSON.
    let (_, out, _) = run(&["steps", p.to_str().unwrap(), "--steps", "gaps"]);
    assert!(
        out.contains("warning: 8 row(s) of CUPTI_ACTIVITY_KIND_KERNEL"),
        "{out}"
    );
    let (_, _, err) = run(&[
        "steps",
        p.to_str().unwrap(),
        "--steps",
        "gaps",
        "--format",
        "json",
    ]);
    assert!(
        err.contains("warning: 8 row(s) of CUPTI_ACTIVITY_KIND_KERNEL"),
        "{err}"
    );

    // Every row unusable: says why.
    let conn = Connection::open(&p).unwrap();
    conn.execute_batch("UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = NULL")
        .unwrap();
    drop(conn);
    let e = load_err(&p);
    assert_eq!(e.exit_code(), 2);
    assert!(
        e.message.contains("no usable GPU ops: 10 row(s)"),
        "{}",
        e.message
    );
}

#[test]
fn nsys_bad_call_rows_and_memcpy_kind_names() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("calls.sqlite");
    let mut w = NsysWriter::create(&p, Layout::Nsys2026_2).unwrap();
    let k = w.string("k").unwrap();
    let launch = w.string("cudaLaunchKernel_v7000").unwrap();
    w.kernel(&kernel_rec(100, 200, k, Some(11))).unwrap();
    for (s, corr) in [(50, 11), (60, 12)] {
        w.call(&call_rec(s, corr, launch)).unwrap();
    }
    w.memcpy(&MemcpyRec {
        start_ns: 300,
        end_ns: 340,
        device: 0,
        stream: 7,
        pid: 5,
        correlation_id: None,
        copy_kind: 20,
        bytes: 4096,
        graph_node_id: None,
    })
    .unwrap();
    w.finish().unwrap();
    let conn = Connection::open(&p).unwrap();
    // "éAB" is 4 bytes with a 2-byte first character: a str slice [1..3] would panic.
    conn.execute_batch(
        "INSERT INTO ENUM_CUDA_MEMCPY_OPER (id, name, label) VALUES (20, 'CUDA_MEMCPY_KIND_éAB', 'x'); \
         UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET start = 'soon' WHERE correlationId = 12;",
    )
    .unwrap();
    drop(conn);
    let t = load_ok(&p);
    assert_eq!(t.calls.height(), 1);
    assert!(
        has_warning(&t, "1 row(s) of CUPTI_ACTIVITY_KIND_RUNTIME"),
        "{:?}",
        t.meta.warnings
    );
    let v = t.ops_view().unwrap();
    let names: Vec<&str> = v
        .name_id
        .iter()
        .map(|&i| t.strings[i as usize].as_str())
        .collect();
    assert!(names.contains(&"[memcpy éab]"), "{names:?}");
}

#[test]
fn nsys_duplicate_launch_correlation_ids_are_warned() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("dup.sqlite");
    let mut w = NsysWriter::create(&p, Layout::Nsys2026_2).unwrap();
    let k = w.string("k").unwrap();
    let launch = w.string("cudaLaunchKernel_v7000").unwrap();
    for (s, e) in [(100, 200), (300, 400), (500, 600)] {
        w.kernel(&kernel_rec(s, e, k, Some(7))).unwrap();
    }
    for s in [50, 250, 450] {
        w.call(&call_rec(s, 7, launch)).unwrap();
    }
    w.finish().unwrap();
    let t = load_ok(&p);
    assert!(
        has_warning(
            &t,
            "1 correlation id(s) are shared by 3 launch calls of the same process"
        ),
        "{:?}",
        t.meta.warnings
    );
    // Real captures join one launch to its kernels: no such warning on any fixture.
    for f in [
        "nsys/fastvideo_h100_2gpu_nsys2026.2.sqlite",
        "nsys/fastvideo_train_2gpu_nsys2026.2.sqlite",
        "nsys/saxpy_mpi_a100_nsys2022.2.sqlite",
        "nsys/sglang_decode_mi300x_converted_nsys2026.2.sqlite",
        "kineto/hta_v100_ns_resolution_rank-0.pt.trace.json.gz",
        "kineto/sglang_mi300x_qwen3-8b_decode_step.json.gz",
        "kineto/vllm_b200_eager_prefill_rank0.json.gz",
        "kineto/vllm_mi300x_decode_fullgraph_step.json.gz",
    ] {
        let t = load_ok(&fixture(f));
        assert!(
            !has_warning(&t, "correlation id(s) are shared"),
            "{f}: {:?}",
            t.meta.warnings
        );
    }
}

#[test]
fn nsys_ids_beyond_32_bits_read_as_unknown_with_a_warning() {
    // CUPTI's ids are 32-bit unsigned; stepgate holds them in 32 signed bits. An id of
    // 2^31 or more (a correlation id of 3e9, a stream of 2^31) reads as unknown.
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("ids.sqlite");
    let mut w = NsysWriter::create(&p, Layout::Nsys2026_2).unwrap();
    let k = w.string("k").unwrap();
    let launch = w.string("cudaLaunchKernel_v7000").unwrap();
    w.kernel(&kernel_rec(100, 200, k, Some(3_000_000_000)))
        .unwrap();
    w.kernel(&KernelRec {
        stream: 1 << 31,
        ..kernel_rec(300, 400, k, Some(7))
    })
    .unwrap();
    for (s, corr) in [(50, 3_000_000_000), (250, 7)] {
        w.call(&call_rec(s, corr, launch)).unwrap();
    }
    w.finish().unwrap();
    let t = load_ok(&p);
    let v = t.ops_view().unwrap();
    assert_eq!(v.correlation_id, &[-1, 7]);
    assert_eq!(v.stream, &[7, -1]);
    assert_eq!(t.calls_view().unwrap().correlation_id, &[-1, 7]);
    // Both kernels' times are still read; the warning counts the three ids.
    assert_eq!((v.start_ns, v.end_ns), (&[100, 300][..], &[200, 400][..]));
    assert!(
        has_warning(
            &t,
            "3 id(s) (device, stream, process, correlation or graph) were 2^31 or more"
        ),
        "{:?}",
        t.meta.warnings
    );
}

/// Names of the files in `dir`, sorted.
fn listing(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[cfg(unix)]
fn chmod(p: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
}

#[cfg(unix)]
#[test]
fn wal_exports_are_read_without_writing_beside_them() {
    // WAL mode, no -wal file left: read in place (immutable), nothing created.
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("ro");
    std::fs::create_dir(&dir).unwrap();
    let p = dir.join("wal.sqlite");
    two_kernels(&p);
    let conn = Connection::open(&p).unwrap();
    let mode: String = conn
        .query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
    drop(conn);
    let head = std::fs::read(&p).unwrap();
    assert_eq!((head[18], head[19]), (2, 2), "the header says WAL");
    assert_eq!(listing(&dir), vec!["wal.sqlite"]);
    // Read-only directory (tests may run as root, where this does not stop writes: the
    // listing below is the real check).
    chmod(&dir, 0o555);
    let t = load_ok(&p);
    chmod(&dir, 0o755);
    assert_eq!(t.ops_view().unwrap().end_ns.len(), 2);
    assert_eq!(listing(&dir), vec!["wal.sqlite"]);
    assert_eq!(std::fs::read(&p).unwrap(), head, "the report is unchanged");

    // The immutable open goes through a file: URI: characters that mean something in a
    // URI (`?`, `#`, `%`, space) in the path must still name the file.
    let odd = d.path().join("a b?#%41c");
    std::fs::create_dir(&odd).unwrap();
    let q = odd.join("w%3F.sqlite");
    std::fs::copy(&p, &q).unwrap();
    assert_eq!(load_ok(&q).ops.height(), 2);
    assert_eq!(listing(&odd), vec!["w%3F.sqlite"]);

    // WAL mode with committed pages still in the -wal: they are read (from a private
    // copy), the warning says so, and the directory is left exactly as it was.
    let live = d.path().join("live.sqlite");
    two_kernels(&live);
    let writer = Connection::open(&live).unwrap();
    writer
        .execute_batch(
            "PRAGMA journal_mode=WAL; PRAGMA wal_autocheckpoint=0; \
             UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET end = end + 1000;",
        )
        .unwrap();
    let crash = d.path().join("crash");
    std::fs::create_dir(&crash).unwrap();
    let p = crash.join("live.sqlite");
    std::fs::copy(&live, &p).unwrap();
    std::fs::copy(
        d.path().join("live.sqlite-wal"),
        crash.join("live.sqlite-wal"),
    )
    .unwrap();
    drop(writer);
    let wal_before = std::fs::read(crash.join("live.sqlite-wal")).unwrap();
    let db_before = std::fs::read(&p).unwrap();
    chmod(&crash, 0o555);
    let t = load_ok(&p);
    chmod(&crash, 0o755);
    let mut ends = t.ops_view().unwrap().end_ns.to_vec();
    ends.sort_unstable();
    assert_eq!(
        ends,
        vec![1200, 1450],
        "the -wal's committed update is read"
    );
    assert!(has_warning(&t, "WAL mode"), "{:?}", t.meta.warnings);
    assert_eq!(listing(&crash), vec!["live.sqlite", "live.sqlite-wal"]);
    assert_eq!(
        std::fs::read(crash.join("live.sqlite-wal")).unwrap(),
        wal_before
    );
    assert_eq!(std::fs::read(&p).unwrap(), db_before);
}

#[test]
fn a_locked_export_says_what_to_do() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("locked.sqlite");
    two_kernels(&p);
    let holder = Connection::open(&p).unwrap();
    holder
        .execute_batch("BEGIN EXCLUSIVE; UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET end = end + 1;")
        .unwrap();
    let e = load_err(&p);
    assert_eq!(e.exit_code(), 4, "{}", e.message);
    assert!(
        e.message.contains("locked by another process"),
        "{}",
        e.message
    );
    assert!(e.message.contains("copy the file"), "{}", e.message);
    holder.execute_batch("ROLLBACK").unwrap();
    drop(holder);
    assert_eq!(load_ok(&p).ops.height(), 2);
}

// ---------------------------------------------------------------- huge names
