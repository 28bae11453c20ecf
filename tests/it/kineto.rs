//! Kineto (PyTorch profiler) traces: every fixture loads with numbers checked against an
//! independent reading (serde_json::Value + plain loops, the decimal text by hand, and the
//! converted nsys SQLite read with rusqlite), step annotations, ranks, malformed input.

mod formats;

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
