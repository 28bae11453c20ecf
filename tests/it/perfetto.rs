//! `steps --perfetto`: the file follows the trace-event format's rules for `ph`, `ts`,
//! `dur`, `pid`, `tid`, and stepgate's own Kineto reader loads it back to the same GPU ops
//! and the same steps as the generated nsys export it came from.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;
use stepgate::categories::Categorizer;
use stepgate::source::{kineto, nsys};
use stepgate::synth::workload::*;
use stepgate::synth::Layout;
use stepgate::timing::steps::{find_steps, StepOptions, StepsReport};
use stepgate::trace::Trace;

use crate::common;

/// Two ranks of vLLM steps: eager and CUDA-graph launches, a memcpy, 2 ms apart.
fn scenario() -> Scenario {
    let dec = vllm_execute(0, 0, 8, 8);
    let pre = vllm_execute(2, 512, 0, 0);
    let mut steps = Vec::new();
    for i in 0..10 {
        let mut s = if i % 3 == 0 {
            StepSpec::new(Some(&pre), LaunchMode::Eager, decode_kernels(10))
        } else {
            StepSpec::new(Some(&dec), LaunchMode::GraphNode, decode_kernels(16))
        };
        if i == 4 {
            s.memcpy_h2d_bytes = Some(1 << 20);
        }
        steps.push(s);
    }
    Scenario::new(Layout::Nsys2026_2, 2, steps)
}

/// Every trace-event rule the file must keep (Trace Event Format, JSON object format).
fn validate(v: &Value) -> usize {
    let events = v["traceEvents"].as_array().expect("traceEvents array");
    let mut complete = 0;
    for e in events {
        let ph = e["ph"].as_str().expect("every event has a ph string");
        assert!(e["pid"].is_i64(), "pid is an integer: {e}");
        match ph {
            "X" => {
                complete += 1;
                let ts = e["ts"].as_f64().expect("X has numeric ts");
                let dur = e["dur"].as_f64().expect("X has numeric dur");
                assert!(ts >= 0.0 && dur >= 0.0, "{e}");
                assert!(e["tid"].is_i64(), "X has an integer tid: {e}");
                assert!(e["name"].is_string() && e["cat"].is_string(), "{e}");
                assert!(e["args"].is_object(), "{e}");
            }
            "M" => {
                let n = e["name"].as_str().unwrap();
                assert!(
                    ["process_name", "thread_name", "thread_sort_index"].contains(&n),
                    "{e}"
                );
                if n == "thread_name" || n == "thread_sort_index" {
                    assert!(e["tid"].is_i64(), "{e}");
                }
                assert!(e["args"].is_object());
                assert!(e.get("ts").is_none() || e["ts"].is_number());
            }
            other => panic!("unexpected ph {other}: {e}"),
        }
    }
    complete
}

/// (device, start, end, name) of every GPU op, sorted.
fn ops(t: &Trace) -> Vec<(i64, i64, i64, String)> {
    let o = t.ops_view().unwrap();
    let mut v: Vec<_> = (0..o.start_ns.len())
        .map(|i| {
            (
                o.device[i],
                o.start_ns[i],
                o.end_ns[i],
                t.name(o.name_id[i]).to_owned(),
            )
        })
        .collect();
    v.sort();
    v
}

/// (pid, gpu start, gpu end, busy, kernels, name) of one step.
type Span = (i64, Option<i64>, Option<i64>, i64, u64, String);

/// Every step's [`Span`], sorted.
fn spans(r: &StepsReport) -> Vec<Span> {
    let mut v: Vec<_> = r
        .steps
        .iter()
        .map(|s| {
            (
                s.pid,
                s.gpu_start_ns,
                s.gpu_end_ns,
                s.busy_ns,
                s.kernels,
                s.name.clone(),
            )
        })
        .collect();
    v.sort();
    v
}

fn write_trace(dir: &Path, extra: &[&str]) -> (Trace, Value, std::path::PathBuf) {
    let rep = dir.join("w.sqlite");
    build(&scenario(), &rep).unwrap();
    let out = dir.join("steps.perfetto.json");
    let mut args = vec![
        "steps",
        rep.to_str().unwrap(),
        "--perfetto",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let (code, _, err) = common::run(&args);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    (nsys::load(&rep).unwrap(), v, out)
}

#[test]
fn perfetto_trace_is_valid_and_loads_back_to_the_same_ops_and_steps() {
    let dir = tempfile::tempdir().unwrap();
    let (orig, v, out) = write_trace(dir.path(), &[]);
    assert!(validate(&v) > 0);
    let back = kineto::load(&out).unwrap();
    assert_eq!(ops(&back), ops(&orig), "GPU ops round-trip");

    let cats = Categorizer::default();
    let a = find_steps(&orig, &StepOptions::default(), &cats).unwrap();
    let b = find_steps(&back, &StepOptions::default(), &cats).unwrap();
    assert_eq!(a.steps.len(), 20, "10 steps on each of 2 ranks");
    assert_eq!(spans(&b), spans(&a), "step spans round-trip");

    // One step track per series, a slice per step with its measurements.
    let step_events: Vec<&Value> = v["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["cat"] == "stepgate.step")
        .collect();
    assert_eq!(step_events.len(), 20);
    let mut per_track: BTreeMap<(i64, i64), usize> = BTreeMap::new();
    for e in &step_events {
        *per_track
            .entry((e["pid"].as_i64().unwrap(), e["tid"].as_i64().unwrap()))
            .or_default() += 1;
        for k in ["kind", "busy_ns", "gap_ns", "wall_ns", "shape", "found_by"] {
            assert!(!e["args"][k].is_null(), "step arg {k}: {e}");
        }
    }
    assert_eq!(per_track.len(), 2, "{per_track:?}");
    assert!(per_track.values().all(|&n| n == 10));
    // A step slice spans the step's GPU projection, and its args carry the same busy time.
    let s0 = a
        .steps
        .iter()
        .find(|s| s.index == 0 && s.series == 0)
        .unwrap();
    let e0 = step_events
        .iter()
        .find(|e| e["args"]["index"] == 0 && e["args"]["series"] == 0)
        .unwrap();
    let ns = |x: &Value| (x.as_f64().unwrap() * 1000.0).round() as i64;
    assert_eq!(ns(&e0["ts"]), s0.gpu_start_ns.unwrap());
    assert_eq!(ns(&e0["dur"]), s0.wall_ns.unwrap());
    assert_eq!(e0["args"]["busy_ns"].as_i64().unwrap(), s0.busy_ns);
    // Kernels carry their exclusive time; per device these add up to the busy union.
    let mut excl: BTreeMap<i64, i64> = BTreeMap::new();
    for e in v["traceEvents"].as_array().unwrap() {
        if e["cat"] == "kernel" || e["cat"] == "gpu_memcpy" {
            *excl.entry(e["pid"].as_i64().unwrap()).or_default() +=
                e["args"]["exclusive_ns"].as_i64().unwrap();
        }
    }
    let a_dev = stepgate::timing::overlap::device_summaries(&orig, &cats).unwrap();
    for d in &a_dev {
        assert_eq!(excl[&d.device], d.busy_ns, "device {}", d.device);
    }
}

#[test]
fn perfetto_steps_window_keeps_only_those_steps() {
    let dir = tempfile::tempdir().unwrap();
    let (orig, v, out) = write_trace(dir.path(), &["--perfetto-steps", "3..6"]);
    validate(&v);
    let idx: Vec<i64> = v["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["cat"] == "stepgate.step")
        .map(|e| e["args"]["index"].as_i64().unwrap())
        .collect();
    let mut sorted = idx.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, vec![3, 3, 4, 4, 5, 5]);
    // Loaded back: exactly the steps 3..6 of each rank, with the same spans.
    let cats = Categorizer::default();
    let a = find_steps(&orig, &StepOptions::default(), &cats).unwrap();
    let back = kineto::load(&out).unwrap();
    let b = find_steps(&back, &StepOptions::default(), &cats).unwrap();
    let mut want = a.clone();
    want.steps.retain(|s| (3..6).contains(&s.index));
    assert_eq!(spans(&b), spans(&want));
}

#[test]
fn bad_window_is_an_input_error() {
    let dir = tempfile::tempdir().unwrap();
    let rep = dir.path().join("w.sqlite");
    build(&scenario(), &rep).unwrap();
    let out = dir.path().join("p.json");
    let (code, _, err) = common::run(&[
        "steps",
        rep.to_str().unwrap(),
        "--perfetto",
        out.to_str().unwrap(),
        "--perfetto-steps",
        "9..2",
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("--perfetto-steps"), "{err}");
    assert!(!out.exists());
}
