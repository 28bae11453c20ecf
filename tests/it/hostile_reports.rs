//! Reports that cannot be trusted: each test builds its bad input, then checks stepgate
//! neither panics nor hangs nor reads garbage as numbers, and says what it did.

use std::io::Write;
use std::path::{Path, PathBuf};

use rusqlite::Connection;
use stepgate::source;
use stepgate::synth::writer::{CallRec, KernelRec, MemcpyRec};
use stepgate::synth::{Layout, NsysWriter};
use stepgate::trace::Trace;

use crate::common::{fixture, run};

// ---------------------------------------------------------------- Kineto builders

/// A kernel event on device `device` (raw JSON text, so any value can be put in).
fn kernel(ts: &str, dur: &str, device: &str, corr: i64) -> String {
    format!(
        r#"{{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": {ts}, "dur": {dur}, "args": {{"device": {device}, "stream": 7, "correlation": {corr}}}}}"#
    )
}

/// A kernel event with `ts`/`dur` members given verbatim (or left out).
fn kernel_members(members: &str) -> String {
    format!(
        r#"{{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, {members} "args": {{"device": 0, "stream": 7, "correlation": 9}}}}"#
    )
}

/// A `cudaLaunchKernel` runtime event.
fn launch(pid: &str, ts: &str, dur: &str, corr: i64) -> String {
    format!(
        r#"{{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": {pid}, "tid": 5, "ts": {ts}, "dur": {dur}, "args": {{"correlation": {corr}}}}}"#
    )
}

/// A trace document: `header` members (each ending in a comma) then the events.
fn doc(header: &str, events: &[String]) -> String {
    format!(
        r#"{{"schemaVersion": 1, {header} "traceEvents": [{}]}}"#,
        events.join(", ")
    )
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

fn load_ok(p: &Path) -> Trace {
    source::load(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn load_err(p: &Path) -> stepgate::exit::Error {
    match source::load(p) {
        Ok(_) => panic!("{}: loaded", p.display()),
        Err(e) => {
            assert!(!e.message.contains('\n'), "one line: {}", e.message);
            e
        }
    }
}

fn has_warning(t: &Trace, needle: &str) -> bool {
    t.meta.warnings.iter().any(|w| w.contains(needle))
}

// ---------------------------------------------------------------- Kineto

#[test]
fn kineto_ids_of_2_pow_31_and_more_never_panic() {
    let d = tempfile::tempdir().unwrap();
    let events = vec![
        kernel("10", "5", "0", 1),
        // args.device 2^31 (one past the trace's 32-bit ids) and, without args.device, a
        // pid of 2^33 as the device.
        kernel("20", "5", "2147483648", 2),
        r#"{"ph": "X", "cat": "kernel", "name": "k", "pid": 8589934592, "tid": 7, "ts": 30, "dur": 5, "args": {"correlation": 3}}"#.to_owned(),
        // The launch of the kept kernel comes from a process id of 2^33.
        launch("8589934592", "9", "1", 1),
        r#"{"ph": "M", "name": "process_name", "pid": 8589934592, "args": {"name": "x"}}"#
            .to_owned(),
    ];
    let p = write(d.path(), "ids.json", doc("", &events).as_bytes());
    let t = load_ok(&p);
    let v = t.ops_view().unwrap();
    assert_eq!(v.device, &[0]);
    assert_eq!((v.start_ns[0], v.end_ns[0]), (10_000, 15_000));
    // Its launching process is unknown, not a number made of the id's low bits.
    assert_eq!(v.pid, &[-1]);
    assert!(
        has_warning(&t, "2 GPU event(s) had a device id of 2^31 or more"),
        "{:?}",
        t.meta.warnings
    );
    assert!(
        has_warning(&t, "1 host event(s) had a pid of 2^31 or more"),
        "{:?}",
        t.meta.warnings
    );
    // The command line: no panic (exit 101), the numbers and the warning in the JSON.
    let (code, out, err) = run(&["analyze", p.to_str().unwrap(), "--format", "json"]);
    assert_eq!(code, 0, "{err}");
    let j: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(j["devices"][0]["busy_ns"], 5_000);
    assert!(j["warnings"].to_string().contains("device id of 2^31"));
}

#[test]
fn kineto_unusable_times_are_dropped_with_a_warning() {
    let d = tempfile::tempdir().unwrap();
    let events = vec![
        kernel("10", "5", "0", 1),
        kernel("NaN", "5", "0", 2),
        kernel("Infinity", "5", "0", 3),
        kernel("1e308", "5", "0", 4),
        kernel("20", "-Infinity", "0", 5),
        kernel("20", "1e308", "0", 6),
        kernel("20", "-1", "0", 7),
        kernel("9223372036854775807", "1", "0", 8),
        // ±2^62 ns: each alone is a time, together they would span more than i64 holds.
        kernel("-4611686018427387.904", "1", "0", 8),
        kernel_members(r#""ts": 20,"#),
        kernel_members(r#""dur": 5,"#),
        kernel_members(r#""ts": "20", "dur": 5,"#),
        kernel_members(r#""ts": 20, "dur": [5],"#),
        launch("100", "NaN", "1", 1),
    ];
    let p = write(d.path(), "times.json", doc("", &events).as_bytes());
    let t = load_ok(&p);
    let v = t.ops_view().unwrap();
    // Only the one well-formed kernel is kept; nothing became a zero-length op at 0.
    assert_eq!(v.start_ns, &[10_000]);
    assert_eq!(v.end_ns, &[15_000]);
    assert!(
        has_warning(
            &t,
            "12 kernel/memcpy/memset event(s) had a missing, non-numeric"
        ),
        "{:?}",
        t.meta.warnings
    );
    assert!(
        has_warning(&t, "1 runtime/annotation event(s)"),
        "{:?}",
        t.meta.warnings
    );

    // Every kernel unusable: an input error that says why, not "no GPU kernels".
    let p = write(
        d.path(),
        "all_bad.json",
        doc("", &[kernel("NaN", "5", "0", 1)]).as_bytes(),
    );
    let e = load_err(&p);
    assert_eq!(e.exit_code(), 2);
    assert!(e.message.contains("no usable GPU kernels"), "{}", e.message);
}

#[test]
fn kineto_time_bases_out_of_range_are_ignored_and_said() {
    let d = tempfile::tempdir().unwrap();
    for (i, base) in [
        "9000000000000000000",
        "-9000000000000000000",
        "9e18",
        "\"soon\"",
    ]
    .iter()
    .enumerate()
    {
        let header = format!(r#""baseTimeNanoseconds": {base},"#);
        let p = write(
            d.path(),
            &format!("base{i}.json"),
            doc(&header, &[kernel("10", "5", "0", 1)]).as_bytes(),
        );
        let t = load_ok(&p);
        let v = t.ops_view().unwrap();
        assert_eq!((v.start_ns[0], v.end_ns[0]), (10_000, 15_000), "{base}");
        assert!(
            has_warning(&t, "baseTimeNanoseconds"),
            "{base}: {:?}",
            t.meta.warnings
        );
    }

    // Two ranks whose bases are ±9e18: both ignored, no overflow in the shift.
    let dir = d.path().join("extreme");
    std::fs::create_dir(&dir).unwrap();
    for (r, base) in [(0, "9000000000000000000"), (1, "-9000000000000000000")] {
        let header = format!(r#""baseTimeNanoseconds": {base},"#);
        write(
            &dir,
            &format!("x_rank{r}.1.pt.trace.json"),
            doc(&header, &[kernel("10", "5", "0", 1)]).as_bytes(),
        );
    }
    let t = load_ok(&dir);
    assert_eq!(t.ops.height(), 2);
    assert_eq!(
        t.meta
            .warnings
            .iter()
            .filter(|w| w.contains("not a plausible time"))
            .count(),
        2,
        "{:?}",
        t.meta.warnings
    );

    // Two ranks 30 years apart: loaded, shifted exactly, and flagged.
    let dir = d.path().join("decades");
    std::fs::create_dir(&dir).unwrap();
    let late: i64 = 1_700_000_000_000_000_000;
    let early: i64 = late - 30 * 365 * 86_400 * 1_000_000_000;
    for (r, base) in [(0, late), (1, early)] {
        let header = format!(r#""baseTimeNanoseconds": {base},"#);
        write(
            &dir,
            &format!("x_rank{r}.1.pt.trace.json"),
            doc(&header, &[kernel("10", "5", "0", 1)]).as_bytes(),
        );
    }
    let t = load_ok(&dir);
    assert_eq!(t.meta.origin_epoch_ns, Some(early));
    let mut starts = t.ops_view().unwrap().start_ns.to_vec();
    starts.sort_unstable();
    assert_eq!(starts, vec![10_000, late - early + 10_000]);
    assert!(has_warning(&t, "s apart"), "{:?}", t.meta.warnings);

    // A shift that cannot be represented: one line, exit 2.
    let dir = d.path().join("overflow");
    std::fs::create_dir(&dir).unwrap();
    write(
        &dir,
        "x_rank0.1.pt.trace.json",
        doc(r#""baseTimeNanoseconds": 0,"#, &[kernel("10", "5", "0", 1)]).as_bytes(),
    );
    write(
        &dir,
        "x_rank1.1.pt.trace.json",
        doc(
            r#""baseTimeNanoseconds": 4611686018427387904,"#,
            &[kernel("4611686018427387.000", "5", "0", 1)],
        )
        .as_bytes(),
    );
    let e = load_err(&dir);
    assert_eq!(e.exit_code(), 2);
    assert!(e.message.contains("overflows"), "{}", e.message);
}

#[test]
fn kineto_utf8_bom_is_skipped_plain_and_gzip() {
    let d = tempfile::tempdir().unwrap();
    let text = doc("", &[kernel("10", "5", "0", 1), kernel("20", "3", "0", 2)]);
    let mut bom = vec![0xef, 0xbb, 0xbf];
    bom.extend_from_slice(text.as_bytes());
    // No .json name: detection by content must see past the BOM too.
    let p = write(d.path(), "bom_trace", &bom);
    let t = load_ok(&p);
    assert_eq!(t.ops_view().unwrap().end_ns, &[15_000, 23_000]);

    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&bom).unwrap();
    let p = write(d.path(), "bom.json.gz", &gz.finish().unwrap());
    let t = load_ok(&p);
    assert_eq!(t.ops_view().unwrap().end_ns, &[15_000, 23_000]);
}

#[test]
fn kineto_trace_events_that_is_not_an_array_says_so() {
    let d = tempfile::tempdir().unwrap();
    for (value, what) in [
        (r#"{"a": 1}"#, "an object"),
        ("5", "a number"),
        (r#""events""#, "a string"),
        ("null", "null"),
        ("true", "a boolean"),
    ] {
        let p = write(
            d.path(),
            "t.json",
            format!(r#"{{"schemaVersion": 1, "traceEvents": {value}}}"#).as_bytes(),
        );
        let e = load_err(&p);
        assert_eq!(e.exit_code(), 2);
        assert!(
            e.message
                .contains(&format!("\"traceEvents\" is {what}, not an array")),
            "{value}: {}",
            e.message
        );
    }
}

// ---------------------------------------------------------------- paths

#[test]
fn non_regular_report_paths_are_refused_without_blocking() {
    let d = tempfile::tempdir().unwrap();
    let fifo = d.path().join("report.json");
    let ok = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success();
    assert!(ok, "mkfifo");
    // Opening a FIFO with no writer blocks forever: this must return at once.
    let e = load_err(&fifo);
    assert_eq!(e.exit_code(), 2);
    assert!(e.message.contains("a pipe"), "{}", e.message);
    assert!(
        e.message.contains("save it to a file first"),
        "{}",
        e.message
    );

    // A FIFO inside a directory of ranks is skipped, not opened.
    let ranks = d.path().join("ranks");
    std::fs::create_dir(&ranks).unwrap();
    let ok = std::process::Command::new("mkfifo")
        .arg(ranks.join("x_rank1.1.pt.trace.json"))
        .status()
        .unwrap()
        .success();
    assert!(ok, "mkfifo");
    write(
        &ranks,
        "x_rank0.1.pt.trace.json",
        doc("", &[kernel("10", "5", "0", 1)]).as_bytes(),
    );
    assert_eq!(load_ok(&ranks).ops.height(), 1);

    let e = load_err(Path::new("/dev/null"));
    assert!(e.message.contains("a character device"), "{}", e.message);

    // A process substitution is a /dev/fd/N pipe.
    let script = format!(
        "'{}' analyze <(cat '{}')",
        crate::common::bin().display(),
        fixture("kineto/vllm_mi300x_decode_fullgraph_step.json.gz").display()
    );
    let out = std::process::Command::new("bash")
        .args(["-c", &script])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("process substitution"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
}

// ---------------------------------------------------------------- nsys builders

/// A 5 ns runtime call of process and thread 5 (a launch when `name` is one).
fn call_rec(start_ns: i64, corr: i64, name: i64) -> CallRec {
    CallRec {
        start_ns,
        end_ns: start_ns + 5,
        event_class: 0,
        pid: 5,
        tid: 5,
        correlation_id: Some(corr),
        name,
    }
}

fn kernel_rec(start_ns: i64, end_ns: i64, name: i64, corr: Option<i64>) -> KernelRec {
    KernelRec {
        start_ns,
        end_ns,
        device: 0,
        stream: 7,
        pid: 5,
        correlation_id: corr,
        demangled_name: name,
        short_name: name,
        graph_node_id: None,
        graph_id: None,
        grid: None,
    }
}

/// An export with kernels (100, 200) and (300, 450) on device 0.
fn two_kernels(p: &Path) {
    let mut w = NsysWriter::create(p, Layout::Nsys2026_2).unwrap();
    let k = w.string("k").unwrap();
    w.kernel(&kernel_rec(100, 200, k, None)).unwrap();
    w.kernel(&kernel_rec(300, 450, k, None)).unwrap();
    w.finish().unwrap();
}

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

#[test]
fn megabyte_kernel_names_are_bounded_and_stay_two_names() {
    use stepgate::synth::long_names::{self, Format};
    use stepgate::trace::MAX_NAME_BYTES;
    let dir = tempfile::tempdir().unwrap();
    let bytes = 2_000_000;
    for (format, name) in [(Format::Nsys, "long.sqlite"), (Format::Kineto, "long.json")] {
        let path = dir.path().join(name);
        let long = long_names::write(&path, format, bytes).unwrap();
        assert_eq!(long[0].len(), bytes);
        let t = load_ok(&path);
        // No interned name is longer than the bound: nothing holds a 2 MB copy.
        let longest = t.strings.iter().map(String::len).max().unwrap();
        assert!(longest <= MAX_NAME_BYTES, "{format:?}: {longest}");
        // The two long names (equal but for their last byte) are still two kernels, each
        // run twice, named by their first bytes.
        let v = t.ops_view().unwrap();
        let mut per_name = std::collections::BTreeMap::<&str, usize>::new();
        for &id in v.name_id {
            *per_name.entry(t.name(id)).or_default() += 1;
        }
        let bounded: Vec<(&&str, &usize)> = per_name
            .iter()
            .filter(|(n, _)| n.len() == MAX_NAME_BYTES)
            .collect();
        assert_eq!(bounded.len(), 2, "{format:?}");
        for (n, count) in &bounded {
            assert_eq!(**count, 2, "{format:?}");
            assert!(long[0].starts_with(&n[..1000]), "{format:?}");
            assert!(n.ends_with(']') && n.contains(&format!("…[{bytes} bytes, fnv1a ")));
        }
        assert_ne!(bounded[0].0, bounded[1].0);
        // The same bound in both formats: the names compare across them.
        let (code, out, err) = run(&["analyze", "--format", "json", path.to_str().unwrap()]);
        assert_eq!(code, 0, "{err}");
        assert!(
            out.len() < 200_000,
            "{format:?}: {} bytes of JSON",
            out.len()
        );
    }
    let nsys = load_ok(&dir.path().join("long.sqlite"));
    let kineto = load_ok(&dir.path().join("long.json"));
    let long_of = |t: &Trace| -> std::collections::BTreeSet<String> {
        t.strings
            .iter()
            .filter(|s| s.len() == MAX_NAME_BYTES)
            .cloned()
            .collect()
    };
    assert_eq!(long_of(&nsys), long_of(&kineto));
}
