//! The 2021 PyTorch-profiler layout (PyTorch 1.8/1.9): capitalised categories, every CPU
//! op and `record_function` range under `Operator`, string tids, integer epoch µs. Two
//! real traces from pytorch/kineto's TensorBoard-plugin samples and the generator's
//! 2021 scenario, each checked against an independent reading of the raw JSON.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::Read;
use std::path::Path;

use serde_json::Value;
use stepgate::source::kineto::load;
use stepgate::synth::kineto::training_2021;
use stepgate::trace::{OpKind, RangeKind, Trace};

use crate::common::{fixture, run};

const STEPS: &str = "kineto/kineto2021_resnet50_nw4_v100_profilerstep_operator.pt.trace.json.gz";
const AUTOGRAD_API: &str =
    "kineto/kineto2021_resnet50_autograd_api_nw4_no_profilerstep.pt.trace.json.gz";

fn json(path: &Path) -> Value {
    let mut raw = Vec::new();
    let f = std::fs::File::open(path).unwrap();
    if path.extension().is_some_and(|e| e == "gz") {
        flate2::read::GzDecoder::new(f)
            .read_to_end(&mut raw)
            .unwrap();
    } else {
        std::io::BufReader::new(f).read_to_end(&mut raw).unwrap();
    }
    serde_json::from_slice(&raw).unwrap()
}

fn events(doc: &Value) -> &Vec<Value> {
    doc["traceEvents"].as_array().unwrap()
}

/// Integer epoch µs → ns (exact: these traces have no fraction).
fn ns(v: &Value) -> i64 {
    v.as_i64().expect("integer µs") * 1000
}

/// A string or integer tid as a number (`"5555"` → 5555).
fn tid(v: &Value) -> i64 {
    v.as_i64()
        .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
        .unwrap()
}

/// The `record_function` ranges of a 2021 trace, the plain way: `Operator` events whose
/// name is not an operator's (PyTorch's own ranges all have a `#`: `ProfilerStep#5`,
/// `Optimizer.step#SGD.step`, `enumerate(DataLoader)#…`).
fn annotations(doc: &Value) -> Vec<(String, i64, i64, i64)> {
    let mut v: Vec<_> = events(doc)
        .iter()
        .filter(|e| e["cat"] == "Operator" && e["name"].as_str().unwrap().contains('#'))
        .map(|e| {
            let s = ns(&e["ts"]);
            (
                e["name"].as_str().unwrap().to_owned(),
                tid(&e["tid"]),
                s,
                s + ns(&e["dur"]),
            )
        })
        .collect();
    v.sort();
    v
}

fn host_ranges(t: &Trace) -> Vec<(String, i64, i64, i64)> {
    let r = t.ranges_view().unwrap();
    let mut v: Vec<_> = (0..r.pid.len())
        .filter(|&i| r.kind[i] == RangeKind::HostPushPop as u32)
        .map(|i| {
            (
                t.name(r.name_id[i]).to_owned(),
                r.tid[i],
                r.start_ns[i],
                r.end_ns[i],
            )
        })
        .collect();
    v.sort();
    v
}

#[test]
fn record_function_ranges_under_operator_become_annotations() {
    for (f, n) in [(STEPS, 24), (AUTOGRAD_API, 18)] {
        let doc = json(&fixture(f));
        let want = annotations(&doc);
        assert_eq!(want.len(), n, "{f}");
        let t = load(&fixture(f)).unwrap();
        assert_eq!(host_ranges(&t), want, "{f}");
        // The guess is said once.
        let notes: Vec<_> = t
            .meta
            .warnings
            .iter()
            .filter(|w| w.starts_with("2021 profiler layout"))
            .collect();
        assert_eq!(notes.len(), 1, "{f}: {:?}", t.meta.warnings);
        assert!(notes[0].contains(&format!("{n} event(s)")), "{}", notes[0]);
    }
}

#[test]
fn string_tids_are_the_same_threads_as_their_integer_spelling() {
    for f in [STEPS, AUTOGRAD_API] {
        let doc = json(&fixture(f));
        // The launch flows (`s`, integer tids) name the threads the Runtime events (string
        // tids) run on: each flow's thread equals its call's.
        let flow_tid: HashMap<i64, i64> = events(&doc)
            .iter()
            .filter(|e| e["ph"] == "s")
            .map(|e| (e["id"].as_i64().unwrap(), e["tid"].as_i64().unwrap()))
            .collect();
        let t = load(&fixture(f)).unwrap();
        let c = t.calls_view().unwrap();
        let mut checked = 0;
        for i in 0..c.pid.len() {
            if let Some(&ft) = flow_tid.get(&i64::from(c.correlation_id[i])) {
                assert_eq!(c.tid[i], ft, "{f}: call {}", i64::from(c.correlation_id[i]));
                checked += 1;
            }
        }
        assert!(checked > 5000, "{f}: {checked}");
        let threads: BTreeSet<i64> = c.tid.iter().copied().collect();
        let json_threads: BTreeSet<i64> = events(&doc)
            .iter()
            .filter(|e| e["cat"] == "Runtime")
            .map(|e| tid(&e["tid"]))
            .collect();
        assert_eq!(threads, json_threads, "{f}");
    }
}

#[test]
fn gpu_ops_keep_their_device_and_stream() {
    for (f, streams) in [(STEPS, vec![7]), (AUTOGRAD_API, vec![7, 15, 16, 27, 28])] {
        let doc = json(&fixture(f));
        // (device, stream) → (ops, Σ dur), from `args`; the tid says "stream N" too
        // (memsets also use eight more streams).
        let mut want: BTreeMap<(i64, i64), (usize, i64)> = BTreeMap::new();
        for e in events(&doc) {
            if e["ph"] == "X" && matches!(e["cat"].as_str(), Some("Kernel" | "Memcpy" | "Memset")) {
                let a = &e["args"];
                let stream = a["stream"].as_i64().unwrap();
                assert_eq!(e["tid"], format!("stream {stream}"));
                let s = want
                    .entry((a["device"].as_i64().unwrap(), stream))
                    .or_default();
                s.0 += 1;
                s.1 += ns(&e["dur"]);
            }
        }
        let t = load(&fixture(f)).unwrap();
        let v = t.ops_view().unwrap();
        let mut got: BTreeMap<(i64, i64), (usize, i64)> = BTreeMap::new();
        for i in 0..v.device.len() {
            let s = got
                .entry((i64::from(v.device[i]), i64::from(v.stream[i])))
                .or_default();
            s.0 += 1;
            s.1 += v.end_ns[i] - v.start_ns[i];
        }
        assert_eq!(got, want, "{f}");
        // The kernels' streams, as the fixture README lists them.
        let kernel_streams: BTreeSet<i64> = (0..v.device.len())
            .filter(|&i| v.kind[i] == OpKind::Kernel as u32)
            .map(|i| i64::from(v.stream[i]))
            .collect();
        assert_eq!(
            kernel_streams.into_iter().collect::<Vec<_>>(),
            streams,
            "{f}"
        );
        assert_eq!(t.op_devices().unwrap(), vec![0], "{f}");
    }
}

/// A step as compared here: (name, cpu start, cpu end, gpu start, gpu end, busy, kernels).
type StepRow = (String, i64, i64, i64, i64, i64, u64);

/// Per `ProfilerStep#N`, projected from the raw JSON the way docs/steps.md defines a
/// step: every Runtime call of the process (any thread: backward runs on the autograd
/// thread) that starts inside the span, plus the calls the span's thread makes after it
/// and before the next step; their correlation ids; the GPU ops carrying them. Busy is
/// the union of the span's ops.
fn projected_steps(doc: &Value) -> Vec<StepRow> {
    let ev = events(doc);
    let steps: Vec<(String, i64, i64, i64)> = {
        let mut v: Vec<_> = ev
            .iter()
            .filter(|e| {
                e["cat"] == "Operator" && e["name"].as_str().unwrap().starts_with("ProfilerStep#")
            })
            .map(|e| {
                let s = ns(&e["ts"]);
                (
                    e["name"].as_str().unwrap().to_owned(),
                    tid(&e["tid"]),
                    s,
                    s + ns(&e["dur"]),
                )
            })
            .collect();
        v.sort_by_key(|s| s.2);
        v
    };
    let calls: Vec<(i64, i64, i64)> = ev
        .iter()
        .filter(|e| e["cat"] == "Runtime")
        .map(|e| {
            (
                tid(&e["tid"]),
                ns(&e["ts"]),
                e["args"]["correlation"].as_i64().unwrap(),
            )
        })
        .collect();
    let mut ops: HashMap<i64, Vec<(i64, i64, bool)>> = HashMap::new();
    for e in ev {
        if e["ph"] == "X" && matches!(e["cat"].as_str(), Some("Kernel" | "Memcpy" | "Memset")) {
            let s = ns(&e["ts"]);
            ops.entry(e["args"]["correlation"].as_i64().unwrap())
                .or_default()
                .push((s, s + ns(&e["dur"]), e["cat"] == "Kernel"));
        }
    }
    let mut out = Vec::new();
    for (k, (name, thread, s, e)) in steps.iter().enumerate() {
        let span: Vec<(i64, i64, bool)> = calls
            .iter()
            .filter(|c| c.1 >= *s && c.1 <= *e)
            .flat_map(|c| ops.get(&c.2).cloned().unwrap_or_default())
            .collect();
        let next = steps.get(k + 1).map_or(i64::MAX, |n| n.2);
        let tail = calls
            .iter()
            .filter(|c| c.0 == *thread && c.1 > *e && c.1 < next)
            .filter(|c| ops.contains_key(&c.2))
            .count();
        assert_eq!(
            tail, 0,
            "{name}: no launches between the steps in this trace"
        );
        let mut iv: Vec<(i64, i64)> = span.iter().map(|o| (o.0, o.1)).collect();
        iv.sort_unstable();
        let (mut busy, mut cur): (i64, Option<(i64, i64)>) = (0, None);
        for (a, b) in iv {
            cur = match cur {
                Some((cs, ce)) if a <= ce => Some((cs, ce.max(b))),
                Some((cs, ce)) => {
                    busy += ce - cs;
                    Some((a, b))
                }
                None => Some((a, b)),
            };
        }
        busy += cur.map_or(0, |(a, b)| b - a);
        out.push((
            name.clone(),
            *s,
            *e,
            span.iter().map(|o| o.0).min().unwrap(),
            span.iter().map(|o| o.1).max().unwrap(),
            busy,
            span.iter().filter(|o| o.2).count() as u64,
        ));
    }
    out
}

fn found_steps(path: &Path) -> (Value, Vec<StepRow>) {
    let (code, out, err) = run(&["steps", "--format", "json", path.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let r: Value = serde_json::from_str(&out).unwrap();
    let steps = r["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            let i = |k: &str| s[k].as_i64().unwrap();
            (
                s["name"].as_str().unwrap().to_owned(),
                i("cpu_start_ns"),
                i("cpu_end_ns"),
                i("gpu_start_ns"),
                i("gpu_end_ns"),
                i("busy_ns"),
                s["kernels"].as_u64().unwrap(),
            )
        })
        .collect();
    (r, steps)
}

#[test]
fn profiler_steps_under_operator_are_the_steps() {
    let path = fixture(STEPS);
    let want = projected_steps(&json(&path));
    assert_eq!(
        want.iter().map(|s| s.0.as_str()).collect::<Vec<_>>(),
        [5, 6, 7, 8, 9, 10].map(|n| format!("ProfilerStep#{n}"))
    );
    let (report, got) = found_steps(&path);
    assert_eq!(report["found_by"], "marker");
    assert_eq!(got, want);
    // Backward runs on the autograd thread ("5786") and is inside the steps: nothing
    // of the GPU's time is outside them.
    let outside = &report["outside_steps"][0];
    for k in ["before_ns", "between_ns", "after_ns"] {
        assert_eq!(outside[k], 0, "{k}");
    }
    let total: i64 = want.iter().map(|s| s.5).sum();
    assert_eq!(outside["busy_ns"].as_i64().unwrap(), total);
}

#[test]
fn the_generated_2021_trace_yields_its_steps() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("train2021.pt.trace.json");
    let truth = training_2021(&path, 4, 6).unwrap();
    let doc = json(&path);
    // The layout as the real traces have it: no base time, integer µs, string tids.
    assert!(doc.get("baseTimeNanoseconds").is_none());
    assert!(events(&doc)
        .iter()
        .filter(|e| e["ph"] == "X")
        .all(|e| e["ts"].is_i64() && e["tid"].is_string()));
    // The projection written here from the JSON agrees with the generator's truth, and
    // stepgate with both.
    let want: Vec<_> = truth
        .iter()
        .map(|s| {
            (
                s.name.clone(),
                s.cpu_start_ns,
                s.cpu_end_ns,
                s.gpu_start_ns,
                s.gpu_end_ns,
                s.busy_ns,
                s.kernels,
            )
        })
        .collect();
    assert_eq!(projected_steps(&doc), want);
    let (report, got) = found_steps(&path);
    assert_eq!(report["found_by"], "marker");
    assert_eq!(got, want);
    // Two annotation ranges per step besides the step itself.
    let t = load(&path).unwrap();
    assert_eq!(host_ranges(&t).len(), 3 * 4);
    assert_eq!(host_ranges(&t), annotations(&doc));
}
