//! Reports that cannot be trusted: each test builds its bad input, then checks stepgate
//! neither panics nor hangs nor reads garbage as numbers, and says what it did.

mod nsys;

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
