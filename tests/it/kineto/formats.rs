//! Kineto beside other forms: the converted nsys export, a directory of ranks, merged SGLang traces, malformed inputs, detection by content, and the same numbers from both formats.

use super::*;

#[test]
fn same_kernels_as_the_converted_nsys_export() {
    // The nsys fixture is this Kineto trace rewritten into the 2026.2 schema (fixtures
    // README): both formats must give the same kernels, durations and names.
    let db = rusqlite::Connection::open_with_flags(
        fixture(CONVERTED_NSYS),
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
    )
    .unwrap();
    let (n, total, devices): (i64, i64, i64) = db
        .query_row(
            "SELECT count(*), sum(end - start), count(DISTINCT deviceId) FROM CUPTI_ACTIVITY_KIND_KERNEL",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .unwrap();
    let mut per_name: BTreeMap<String, (i64, i64)> = BTreeMap::new();
    let mut shorts: BTreeMap<String, String> = BTreeMap::new();
    let mut st = db
        .prepare(
            "SELECT d.value, s.value, count(*), sum(k.end - k.start)
             FROM CUPTI_ACTIVITY_KIND_KERNEL k
             JOIN StringIds d ON d.id = k.demangledName JOIN StringIds s ON s.id = k.shortName
             GROUP BY d.value, s.value",
        )
        .unwrap();
    let rows = st
        .query_map([], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get(2)?,
                r.get(3)?,
            ))
        })
        .unwrap();
    for row in rows {
        let (d, s, c, sum) = row.unwrap();
        per_name.insert(d.clone(), (c, sum));
        shorts.insert(d, s);
    }
    let mut streams: Vec<i64> = db
        .prepare("SELECT DISTINCT streamId FROM CUPTI_ACTIVITY_KIND_KERNEL ORDER BY 1")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(|r| r.unwrap())
        .collect();

    let t = load(&fixture(SGLANG)).unwrap();
    let v = t.ops_view().unwrap();
    let mut k_n = 0;
    let mut k_total = 0;
    let mut k_per_name: BTreeMap<String, (i64, i64)> = BTreeMap::new();
    let mut k_streams = Vec::new();
    for i in 0..v.kind.len() {
        if v.kind[i] != OpKind::Kernel as u32 {
            continue;
        }
        let d = v.end_ns[i] - v.start_ns[i];
        k_n += 1;
        k_total += d;
        let e = k_per_name
            .entry(t.name(v.name_id[i]).to_owned())
            .or_insert((0, 0));
        e.0 += 1;
        e.1 += d;
        // The converter capped shortName at 200 characters (three Cijk_ GEMM names); we do not.
        let (ours, theirs) = (t.name(v.short_id(i)), &shorts[t.name(v.name_id[i])]);
        let capped: String = ours.chars().take(200).collect();
        assert_eq!(&capped, theirs, "short name");
        assert_eq!(
            v.device[i], 9,
            "the converted file keeps the GPU pid as deviceId"
        );
        k_streams.push(i64::from(v.stream[i]));
    }
    k_streams.sort_unstable();
    k_streams.dedup();
    streams.dedup();
    assert_eq!((k_n, k_total, 1), (n, total, devices));
    assert_eq!(k_per_name, per_name);
    assert_eq!(k_streams, streams);

    // GPU busy time (union of kernel, memcpy and memset intervals), computed the same plain
    // way from both: the origins differ, the length of the union must not.
    let mut nsys_iv: Vec<(i64, i64)> = Vec::new();
    for table in [
        "CUPTI_ACTIVITY_KIND_KERNEL",
        "CUPTI_ACTIVITY_KIND_MEMCPY",
        "CUPTI_ACTIVITY_KIND_MEMSET",
    ] {
        let mut st = db
            .prepare(&format!("SELECT start, end FROM {table}"))
            .unwrap();
        let rows = st.query_map([], |r| Ok((r.get(0)?, r.get(1)?))).unwrap();
        nsys_iv.extend(rows.map(|r| r.unwrap()));
    }
    let kineto_iv: Vec<(i64, i64)> = (0..v.start_ns.len())
        .map(|i| (v.start_ns[i], v.end_ns[i]))
        .collect();
    assert_eq!(kineto_iv.len(), nsys_iv.len());
    assert_eq!(union_ns(kineto_iv), union_ns(nsys_iv));
}

pub(super) fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

#[test]
fn a_directory_of_two_ranks() {
    let d = tempfile::tempdir().unwrap();
    // Two different captures as ranks 0 and 1: devices 2 and 9 do not clash, and the
    // files have different bases, so rank 1 moves by the difference of the bases.
    std::fs::copy(
        fixture(VLLM_MI300X),
        d.path()
            .join("dp0_pp0_tp0_dcp0_ep0_rank0.1.pt.trace.json.gz"),
    )
    .unwrap();
    std::fs::copy(
        fixture(SGLANG),
        d.path()
            .join("dp0_pp0_tp1_dcp0_ep0_rank1.2.pt.trace.json.gz"),
    )
    .unwrap();
    // vLLM's CPU-only front-end trace is not a rank.
    write(d.path(), "host_77.async_llm.3.pt.trace.json", br#"{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 77, "tid": 77, "ts": 1.0, "dur": 1.0}]}"#);
    let t = load(d.path()).unwrap();
    let (a, b) = (json(&fixture(VLLM_MI300X)), json(&fixture(SGLANG)));
    let mut want = expected_ops(&a);
    want.extend(expected_ops(&b));
    assert_eq!(actual_ops(&t), want);
    assert_eq!(
        t.devices.iter().map(|d| d.id).collect::<Vec<_>>(),
        vec![2, 9]
    );
    let shift =
        b["baseTimeNanoseconds"].as_i64().unwrap() - a["baseTimeNanoseconds"].as_i64().unwrap();
    let first_sglang_kernel = events(&b).iter().find(|e| e["cat"] == "kernel").unwrap();
    let v = t.ops_view().unwrap();
    let i = v.device.iter().position(|d| *d == 9).unwrap();
    assert_eq!(v.start_ns[i], ns(&first_sglang_kernel["ts"]) + shift);
    assert!(
        t.meta.warnings.iter().any(|w| w.contains("async_llm")),
        "{:?}",
        t.meta.warnings
    );

    // The same capture twice: device 2 and pid 851 clash, so rank 1 is renumbered.
    let d2 = tempfile::tempdir().unwrap();
    for r in 0..2 {
        std::fs::copy(
            fixture(VLLM_MI300X),
            d2.path().join(format!("x_rank{r}.5.pt.trace.json.gz")),
        )
        .unwrap();
    }
    let t = load(d2.path()).unwrap();
    let one = expected_ops(&a)[&2];
    assert_eq!(actual_ops(&t), BTreeMap::from([(2, one), (1002, one)]));
    let c = t.calls_view().unwrap();
    let mut pids: Vec<i64> = c.pid.iter().map(|&p| i64::from(p)).collect();
    pids.sort_unstable();
    pids.dedup();
    assert_eq!(pids, vec![851, 10_000_851]);
    let r = t.ranges_view().unwrap();
    // Each rank's annotation and its python-stack step function.
    let mut pids = r.pid.to_vec();
    pids.sort_unstable();
    assert_eq!(pids, &[851, 851, 10_000_851, 10_000_851]);
    assert!(t.meta.warnings.iter().any(|w| w.contains("renumbered")));
}

#[test]
fn sglang_merged_trace_with_string_pids() {
    // Build what SGLang's ProfileMerger writes: every pid becomes "[TPxx] <pid>".
    let doc = json(&fixture(SGLANG));
    let mut all = Vec::new();
    for tp in 0..2 {
        for e in events(&doc) {
            let mut e = e.clone();
            let pid = e["pid"].clone();
            let pid = pid
                .as_i64()
                .map(|p| p.to_string())
                .unwrap_or_else(|| pid.as_str().unwrap_or("").to_owned());
            e["pid"] = Value::String(format!("[TP{tp:02}] {pid}"));
            all.push(e);
        }
    }
    let mut merged = doc.clone();
    merged["traceEvents"] = Value::Array(all);
    let d = tempfile::tempdir().unwrap();
    let p = write(
        d.path(),
        "merged-1.trace.json.gz",
        &gzip(&serde_json::to_vec(&merged).unwrap()),
    );
    let t = load(&p).unwrap();
    let one = expected_ops(&doc)[&9];
    assert_eq!(actual_ops(&t), BTreeMap::from([(9, one), (1009, one)]));
    // Each rank's kernels are linked to its own launching process.
    let v = t.ops_view().unwrap();
    for i in 0..v.device.len() {
        assert_eq!(v.pid[i], if v.device[i] == 9 { 251 } else { 10_000_251 });
    }
}

fn input_error(p: &Path) -> String {
    let e = load(p).unwrap_err();
    assert_eq!(e.kind, Kind::Input, "{}", e.message);
    assert!(!e.message.contains('\n'), "one line: {}", e.message);
    // Pin the wording (paths redacted) in the snapshot of the calling test.
    let dir = p.parent().unwrap().to_string_lossy().into_owned();
    MESSAGES.with(|m| m.borrow_mut().push(e.message.replace(&dir, "<dir>")));
    e.message
}

thread_local! {
    static MESSAGES: std::cell::RefCell<Vec<String>> = const { std::cell::RefCell::new(Vec::new()) };
}

#[test]
fn malformed_inputs_get_one_line_input_errors() {
    let d = tempfile::tempdir().unwrap();
    let whole = std::fs::read(fixture(SGLANG)).unwrap();
    let p = write(d.path(), "cut.json.gz", &whole[..whole.len() / 2]);
    assert!(input_error(&p).contains("truncated or corrupt gzip"));

    let text = gunzip(&fixture(SGLANG));
    let p = write(d.path(), "cut.json", &text[..text.len() / 2]);
    assert!(input_error(&p).contains("truncated"));

    let p = write(d.path(), "notes.json", b"hello, world");
    assert!(input_error(&p).contains("not a JSON trace"));

    let p = write(
        d.path(),
        "config.json",
        br#"{"model": "x", "layers": [1, 2]}"#,
    );
    assert!(input_error(&p).contains("not a PyTorch profiler trace"));

    let p = write(d.path(), "cpu.json", br#"{"schemaVersion": 1, "traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 1.5, "dur": 2.0}]}"#);
    assert!(input_error(&p)
        .contains("no GPU kernels in this trace: was the profiler run with CUDA activities?"));

    let p = write(
        d.path(),
        "bad_event.json",
        br#"{"traceEvents": [{"ph": "X", "cat": "kernel" "name": "k"}]}"#,
    );
    assert!(input_error(&p).contains("malformed"));

    let empty = tempfile::tempdir().unwrap();
    assert!(input_error(empty.path()).contains("no PyTorch profiler traces"));

    let mut msgs = MESSAGES.with(|m| m.borrow().clone());
    // The empty directory's own path is its parent-relative name: redact it too.
    let empty_name = empty
        .path()
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    for m in &mut msgs {
        *m = m.replace(&empty_name, "<empty>");
    }
    insta::assert_snapshot!(msgs.join("\n"));
}

#[test]
fn detection_by_content() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("capture.bin");
    std::fs::copy(fixture(SGLANG), &p).unwrap();
    assert!(looks_like_kineto(&p), "gzip magic");
    let p = write(d.path(), "trace.txt", b"  {\"traceEvents\": []}");
    assert!(looks_like_kineto(&p), "leading brace");
    assert!(!looks_like_kineto(&fixture(CONVERTED_NSYS)));
    assert!(looks_like_kineto(&fixture(B200)));
    assert!(looks_like_kineto(d.path()));
}

/// The same SGLang decode step in both formats (the nsys file is the Kineto trace
/// converted to the 2026.2 schema): devices, per-kernel exclusive time and the per-step
/// metrics agree exactly; absolute times keep each format's own origin.
#[test]
fn same_numbers_from_both_formats() {
    use stepgate::categories::Categorizer;
    use stepgate::pipeline::analyze::analyze_trace;
    use stepgate::timing::steps::{find_steps, StepOptions};

    let cats = Categorizer::default();
    let k = stepgate::source::load(&fixture(
        "kineto/sglang_mi300x_qwen3-8b_decode_step.json.gz",
    ))
    .unwrap();
    let n = stepgate::source::load(&fixture(
        "nsys/sglang_decode_mi300x_converted_nsys2026.2.sqlite",
    ))
    .unwrap();
    let (ak, an) = (
        analyze_trace(&k, &cats, None).unwrap(),
        analyze_trace(&n, &cats, None).unwrap(),
    );
    assert_eq!(ak.devices.len(), an.devices.len());
    for (dk, dn) in ak.devices.iter().zip(&an.devices) {
        assert_eq!(dk.device, dn.device);
        assert_eq!((dk.ops, dk.kernels), (dn.ops, dn.kernels));
        assert_eq!(
            (dk.busy_ns, dk.kernel_sum_ns, dk.idle_ns),
            (dn.busy_ns, dn.kernel_sum_ns, dn.idle_ns)
        );
        assert_eq!(
            dk.window_end_ns - dk.window_start_ns,
            dn.window_end_ns - dn.window_start_ns
        );
        let by_name = |d: &stepgate::wire::analysis::DeviceSummary| {
            let mut v: Vec<(String, u64, i64, i64)> = d
                .kernels_by_name
                .iter()
                .map(|x| (x.name.clone(), x.instances, x.total_ns, x.exclusive_ns))
                .collect();
            v.sort();
            v
        };
        assert_eq!(by_name(dk), by_name(dn));
    }
    let opts = StepOptions::default();
    let (sk, sn) = (
        find_steps(&k, &opts, &cats).unwrap(),
        find_steps(&n, &opts, &cats).unwrap(),
    );
    assert_eq!(sk.steps.len(), 1);
    assert_eq!(sk.steps.len(), sn.steps.len());
    for (a, b) in sk.steps.iter().zip(&sn.steps) {
        assert_eq!(a.name, b.name);
        assert_eq!(a.kind, b.kind);
        assert_eq!(
            (a.wall_ns, a.busy_ns, a.gap_ns),
            (b.wall_ns, b.busy_ns, b.gap_ns)
        );
        assert_eq!(
            (a.kernels, a.ops, a.launches),
            (b.kernels, b.ops, b.launches)
        );
        assert_eq!(a.launch_host_ns, b.launch_host_ns);
        assert_eq!(a.cpu_ns, b.cpu_ns);
        // Display names differ (the converted file's shortName is cut); the numbers do not.
        let nums = |s: &stepgate::wire::steps::Step| -> Vec<(String, u64, i64, i64)> {
            s.top_kernels
                .iter()
                .map(|k| (k.name.to_string(), k.instances, k.total_ns, k.exclusive_ns))
                .collect()
        };
        assert_eq!(nums(a), nums(b));
    }
}
