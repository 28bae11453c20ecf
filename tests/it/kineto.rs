//! Kineto (PyTorch profiler) traces: every fixture loads with numbers checked against an
//! independent reading (serde_json::Value + plain loops, the decimal text by hand, and the
//! converted nsys SQLite read with rusqlite), step annotations, ranks, malformed input.

use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::Value;
use stepgate::exit::Kind;
use stepgate::source::kineto::{load, looks_like_kineto};
use stepgate::trace::{OpKind, RangeKind, Trace};

use crate::common::{fixture, gunzip, union_ns};

const B200: &str = "kineto/vllm_b200_eager_prefill_rank0.json.gz";
const VLLM_MI300X: &str = "kineto/vllm_mi300x_decode_fullgraph_step.json.gz";
const SGLANG: &str = "kineto/sglang_mi300x_qwen3-8b_decode_step.json.gz";
const HTA: &str = "kineto/hta_v100_ns_resolution_rank-0.pt.trace.json.gz";
const CONVERTED_NSYS: &str = "nsys/sglang_decode_mi300x_converted_nsys2026.2.sqlite";

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

fn json(path: &Path) -> Value {
    serde_json::from_slice(&gunzip(path)).unwrap()
}

fn events(doc: &Value) -> &Vec<Value> {
    doc["traceEvents"].as_array().unwrap()
}

/// µs (as JSON number) → ns. Exact for base-relative times (< 2^43 µs: f64 step < 1 ns)
/// and for durations; NOT for the old absolute layout, which the tests check by hand.
fn ns(v: &Value) -> i64 {
    (v.as_f64().unwrap() * 1000.0).round() as i64
}

/// Per device: (GPU op count, Σ duration ns), the independent way.
fn expected_ops(doc: &Value) -> BTreeMap<i64, (usize, i64)> {
    let mut m = BTreeMap::new();
    for e in events(doc) {
        let cat = e["cat"].as_str().unwrap_or("");
        if e["ph"] == "X" && matches!(cat, "kernel" | "gpu_memcpy" | "gpu_memset") {
            let dev = e["args"]["device"].as_i64().or(e["pid"].as_i64()).unwrap();
            let s = m.entry(dev).or_insert((0, 0));
            s.0 += 1;
            s.1 += ns(&e["dur"]);
        }
    }
    m
}

fn actual_ops(t: &Trace) -> BTreeMap<i64, (usize, i64)> {
    let v = t.ops_view().unwrap();
    let mut m = BTreeMap::new();
    for i in 0..v.device.len() {
        let s = m.entry(i64::from(v.device[i])).or_insert((0, 0));
        s.0 += 1;
        s.1 += v.end_ns[i] - v.start_ns[i];
    }
    m
}

fn count_cat(doc: &Value, cats: &[&str]) -> usize {
    events(doc)
        .iter()
        .filter(|e| e["ph"] == "X" && cats.contains(&e["cat"].as_str().unwrap_or("")))
        .count()
}

#[test]
fn every_fixture_matches_an_independent_count() {
    for f in [B200, VLLM_MI300X, SGLANG, HTA] {
        let path = fixture(f);
        let doc = json(&path);
        let t = load(&path).unwrap();
        assert_eq!(actual_ops(&t), expected_ops(&doc), "{f}: ops per device");
        assert_eq!(
            t.calls.height(),
            count_cat(&doc, &["cuda_runtime", "cuda_driver"]),
            "{f}: calls"
        );
        let r = t.ranges_view().unwrap();
        let host = r
            .kind
            .iter()
            .filter(|k| **k == RangeKind::HostPushPop as u32)
            .count();
        let gpu = r
            .kind
            .iter()
            .filter(|k| **k == RangeKind::GpuAnnotation as u32)
            .count();
        assert_eq!(
            host,
            count_cat(&doc, &["user_annotation"]),
            "{f}: host ranges"
        );
        assert_eq!(
            gpu,
            count_cat(&doc, &["gpu_user_annotation"]),
            "{f}: gpu ranges"
        );
        // Devices: exactly those that ran ops, with deviceProperties' numbers.
        let ids: Vec<i64> = expected_ops(&doc).keys().copied().collect();
        assert_eq!(
            t.devices.iter().map(|d| d.id).collect::<Vec<_>>(),
            ids,
            "{f}"
        );
        let props = &doc["deviceProperties"][0];
        for d in &t.devices {
            assert_eq!(d.sm_count, props["numSms"].as_i64(), "{f}");
            assert_eq!(
                d.total_memory_bytes,
                props["totalGlobalMem"].as_i64(),
                "{f}"
            );
            assert_eq!(
                d.memory_bandwidth_bytes_per_s, None,
                "{f}: Kineto records none"
            );
        }
        assert_eq!(t.meta.schema_version.as_deref(), Some("1"), "{f}");
    }
}

#[test]
fn base_relative_times_and_links_match_the_json() {
    // Per op, in file order: start, end, stream, correlation, and the launching pid.
    for f in [B200, VLLM_MI300X, SGLANG] {
        let path = fixture(f);
        let doc = json(&path);
        let t = load(&path).unwrap();
        let v = t.ops_view().unwrap();
        let mut corr_pid: HashMap<i64, i64> = HashMap::new();
        for e in events(&doc) {
            if matches!(e["cat"].as_str(), Some("cuda_runtime" | "cuda_driver")) {
                if let Some(c) = e["args"]["correlation"].as_i64() {
                    corr_pid.entry(c).or_insert(e["pid"].as_i64().unwrap());
                }
            }
        }
        let gpu: Vec<&Value> = events(&doc)
            .iter()
            .filter(|e| {
                e["ph"] == "X"
                    && matches!(
                        e["cat"].as_str(),
                        Some("kernel" | "gpu_memcpy" | "gpu_memset")
                    )
            })
            .collect();
        assert_eq!(gpu.len(), v.start_ns.len());
        let mut linked = 0;
        for (i, e) in gpu.iter().enumerate() {
            assert_eq!(v.start_ns[i], ns(&e["ts"]), "{f} op {i}");
            assert_eq!(v.end_ns[i] - v.start_ns[i], ns(&e["dur"]), "{f} op {i}");
            assert_eq!(
                i64::from(v.stream[i]),
                e["args"]["stream"].as_i64().unwrap(),
                "{f} op {i}"
            );
            let c = e["args"]["correlation"].as_i64().unwrap();
            assert_eq!(i64::from(v.correlation_id[i]), c, "{f} op {i}");
            if let Some(p) = corr_pid.get(&c) {
                assert_eq!(i64::from(v.pid[i]), *p, "{f} op {i}: launching pid");
                linked += 1;
            }
            assert_eq!(v.graph_id[i], -1, "these Kineto builds write no graph id");
        }
        // docs/kineto-format.md §5: every GPU op of these files has its launching call.
        assert_eq!(linked, gpu.len(), "{f}");
    }
}

#[test]
fn absolute_epoch_nanoseconds_survive() {
    // The HTA file's first kernel reads `"ts": 1712195495505582.988, "dur": 4.928` and the
    // second `"ts": 1712195495505772.650, "dur": 2.752` (zcat | grep, by hand).
    let t = load(&fixture(HTA)).unwrap();
    let v = t.ops_view().unwrap();
    let kernels: Vec<usize> = (0..v.kind.len())
        .filter(|&i| v.kind[i] == OpKind::Kernel as u32)
        .collect();
    assert_eq!(v.start_ns[kernels[0]], 1_712_195_495_505_582_988);
    assert_eq!(v.end_ns[kernels[0]], 1_712_195_495_505_582_988 + 4_928);
    assert_eq!(v.start_ns[kernels[1]], 1_712_195_495_505_772_650);
    assert_eq!(v.end_ns[kernels[1]], 1_712_195_495_505_772_650 + 2_752);
    // What a float parse would have produced instead (so this test can fail).
    assert_ne!(
        (1_712_195_495_505_582.988_f64 * 1000.0) as i64,
        1_712_195_495_505_582_988
    );
    // Its gpu_user_annotation `DistributedDataParallel.forward`: ts …582.987, dur 32432.070.
    let r = t.ranges_view().unwrap();
    let i = (0..r.name_id.len())
        .find(|&i| {
            t.name(r.name_id[i]) == "DistributedDataParallel.forward"
                && r.kind[i] == RangeKind::GpuAnnotation as u32
        })
        .unwrap();
    assert_eq!(
        (r.start_ns[i], r.end_ns[i] - r.start_ns[i]),
        (1_712_195_495_505_582_987, 32_432_070)
    );
    assert_eq!((r.pid[i], r.tid[i]), (0, 7));
    assert!(
        t.meta.tool_version.is_none(),
        "this 2024 file records no versions"
    );
}

/// (name, kind, pid, tid, start_ns, end_ns) of every range.
fn ranges(t: &Trace) -> Vec<(String, u32, i64, i64, i64, i64)> {
    let r = t.ranges_view().unwrap();
    (0..r.pid.len())
        .map(|i| {
            (
                t.name(r.name_id[i]).to_owned(),
                r.kind[i],
                i64::from(r.pid[i]),
                r.tid[i],
                r.start_ns[i],
                r.end_ns[i],
            )
        })
        .collect()
}

#[test]
fn step_annotations_are_ranges_with_their_spans() {
    // Values typed from the files' decimal text (ts, dur in µs with 3 decimals).
    let host = RangeKind::HostPushPop as u32;
    let gpu = RangeKind::GpuAnnotation as u32;
    let b200 = ranges(&load(&fixture(B200)).unwrap());
    let name = "execute_context_1(888_788544)_generation_0(0)";
    assert!(b200.contains(&(
        name.into(),
        host,
        6583,
        6583,
        1_365_627_862_757_064,
        1_365_627_862_757_064 + 87_412_863
    )));
    // The GPU span is shorter (docs/kineto-format.md §7) and sits on device 0, stream 7.
    assert!(b200.contains(&(
        name.into(),
        gpu,
        0,
        7,
        1_365_627_865_398_727,
        1_365_627_865_398_727 + 84_044_109
    )));

    let mi = ranges(&load(&fixture(VLLM_MI300X)).unwrap());
    let name = "execute_32_context_0(sq0sk0sqsq0sqsk0)_generation_32(sq32sk55086sqsq32sqsk55086)";
    // The one python_function kept is the step function (ts 6520618853509.293,
    // dur 2324.868); the file's thousands of other python_function events are not.
    let py = RangeKind::PythonStack as u32;
    assert_eq!(
        mi,
        vec![
            (
                name.into(),
                host,
                851,
                851,
                6_520_618_853_487_683,
                6_520_618_853_487_683 + 2_408_598
            ),
            (
                "vllm/v1/worker/gpu_model_runner.py(3380): execute_model".into(),
                py,
                851,
                851,
                6_520_618_853_509_293,
                6_520_618_853_509_293 + 2_324_868
            )
        ]
    );

    let sg = ranges(&load(&fixture(SGLANG)).unwrap());
    assert!(sg.contains(&(
        "step[DECODE bs=32]".into(),
        host,
        251,
        251,
        4_909_914_216_408_420,
        4_909_914_216_408_420 + 465_248_054
    )));
    let name = "execute_32_context_0(sq0sk0sqsq0sqsk0)_generation_32(sq32sk32785sqsq32sqsk32785)";
    assert!(sg.contains(&(
        name.into(),
        host,
        251,
        251,
        4_909_914_216_204_635,
        4_909_914_216_204_635 + 465_716_634
    )));
    // Two annotations and two step functions (python_function, typed from the file).
    let py = RangeKind::PythonStack as u32;
    assert!(sg.contains(&(
        "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py(2919): _run_batch_inner"
            .into(),
        py,
        251,
        251,
        4_909_914_216_210_414,
        4_909_914_216_210_414 + 465_645_998
    )));
    assert!(sg.contains(&(
        "/sgl-workspace/sglang/python/sglang/srt/managers/tp_worker.py(445): forward_batch_generation"
            .into(),
        py,
        251,
        251,
        4_909_914_216_334_700,
        4_909_914_216_334_700 + 465_392_089
    )));
    assert_eq!(sg.len(), 4);
}

#[test]
fn graph_replay_kernels_keep_the_launch_correlation() {
    for (f, launch, replayed) in [
        (SGLANG, "hipGraphLaunch", 544),
        (VLLM_MI300X, "hipGraphLaunch", 421),
    ] {
        let path = fixture(f);
        let doc = json(&path);
        let corr = events(&doc)
            .iter()
            .find(|e| e["name"] == launch)
            .map(|e| e["args"]["correlation"].as_i64().unwrap())
            .unwrap();
        let by_json = events(&doc)
            .iter()
            .filter(|e| e["cat"] == "kernel" && e["args"]["correlation"].as_i64() == Some(corr))
            .count();
        assert_eq!(by_json, replayed, "{f}: docs/kineto-format.md §6");
        let t = load(&path).unwrap();
        let v = t.ops_view().unwrap();
        assert_eq!(
            v.correlation_id
                .iter()
                .filter(|c| i64::from(**c) == corr)
                .count(),
            replayed,
            "{f}"
        );
        let c = t.calls_view().unwrap();
        let i = (0..c.name_id.len())
            .find(|&i| i64::from(c.correlation_id[i]) == corr)
            .unwrap();
        assert_eq!(t.name(c.name_id[i]), launch);
        assert!(c.is_launch(i));
    }
}

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

fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
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

/// The trace's time zero is kept, so `*_ns` times can be made absolute again.
#[test]
fn origin_is_kept() {
    let t = stepgate::source::load(&fixture("kineto/vllm_mi300x_decode_fullgraph_step.json.gz"))
        .unwrap();
    // baseTimeNanoseconds as written in the file's header (read as text here).
    let mut text = String::new();
    std::io::Read::read_to_string(
        &mut flate2::read::GzDecoder::new(
            std::fs::File::open(fixture("kineto/vllm_mi300x_decode_fullgraph_step.json.gz"))
                .unwrap(),
        ),
        &mut text,
    )
    .unwrap();
    let at = text.find("\"baseTimeNanoseconds\"").expect("header field");
    let digits: String = text[at + 21..]
        .chars()
        .skip_while(|c| !c.is_ascii_digit())
        .take_while(char::is_ascii_digit)
        .collect();
    assert_eq!(t.meta.origin_epoch_ns, Some(digits.parse::<i64>().unwrap()));
    // The old absolute layout: times are already since the epoch.
    let h = stepgate::source::load(&fixture(
        "kineto/hta_v100_ns_resolution_rank-0.pt.trace.json.gz",
    ))
    .unwrap();
    assert_eq!(h.meta.origin_epoch_ns, Some(0));
}
