//! `steps --perfetto`: the file follows the trace-event format's rules for `ph`, `ts`,
//! `dur`, `pid`, `tid`; its GPU ops, exclusive times, step ranges and step slices are those
//! the raw rows of the generated nsys export give (read here with SQL, not through
//! stepgate's loader); and stepgate's own Kineto reader loads it back to the same ops and
//! steps.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde_json::Value;
use stepgate::categories::Categorizer;
use stepgate::source::{kineto, nsys};
use stepgate::synth::workload::*;
use stepgate::synth::Layout;
use stepgate::timing::steps::{find_steps, StepOptions};
use stepgate::trace::Trace;
use stepgate::wire::steps::StepsReport;

use crate::common;

/// The rows of a generated export, read with SQL.
struct Raw {
    /// (device, stream, start, end, name or `memcpy`, process, correlation id)
    ops: Vec<(i64, i64, i64, i64, String, i64, i64)>,
    /// (process, thread, start, end, correlation id) of every runtime call.
    calls: Vec<(i64, i64, i64, i64, i64)>,
    /// (process, thread, start, end, text) of every NVTX range.
    ranges: Vec<(i64, i64, i64, i64, String)>,
}

/// A serialized global id's process and thread (nsys: pid in bits 24–47, tid below).
fn ids(global: i64) -> (i64, i64) {
    ((global >> 24) & 0xFF_FFFF, global & 0xFF_FFFF)
}

fn raw(path: &Path) -> Raw {
    let db =
        rusqlite::Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .unwrap();
    let rows = |sql: &str| -> Vec<(i64, i64, i64, i64, String, i64, i64)> {
        let mut st = db.prepare(sql).unwrap();
        st.query_map([], |r| {
            Ok((
                r.get(0)?,
                r.get(1)?,
                r.get(2)?,
                r.get(3)?,
                r.get(4)?,
                ids(r.get(5)?).0,
                r.get(6)?,
            ))
        })
        .unwrap()
        .map(Result::unwrap)
        .collect()
    };
    let mut ops = rows(
        "SELECT k.deviceId, k.streamId, k.start, k.end, s.value, k.globalPid, k.correlationId \
         FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = k.demangledName",
    );
    ops.extend(rows(
        "SELECT deviceId, streamId, start, end, 'memcpy', globalPid, correlationId \
         FROM CUPTI_ACTIVITY_KIND_MEMCPY",
    ));
    let mut st = db
        .prepare("SELECT globalTid, start, end, correlationId FROM CUPTI_ACTIVITY_KIND_RUNTIME")
        .unwrap();
    let calls = st
        .query_map([], |r| {
            let (p, t) = ids(r.get(0)?);
            Ok((p, t, r.get(1)?, r.get(2)?, r.get(3)?))
        })
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let mut st = db
        .prepare(
            "SELECT n.globalTid, n.start, n.end, COALESCE(n.text, s.value) FROM NVTX_EVENTS n \
             LEFT JOIN StringIds s ON s.id = n.textId WHERE n.end IS NOT NULL",
        )
        .unwrap();
    let ranges = st
        .query_map([], |r| {
            let (p, t) = ids(r.get(0)?);
            Ok((p, t, r.get(1)?, r.get(2)?, r.get(3)?))
        })
        .unwrap()
        .map(Result::unwrap)
        .collect();
    Raw { ops, calls, ranges }
}

/// Per step range (the engine's `execute_…` NVTX ranges), from the raw rows: the calls on
/// its thread inside it, the ops those calls launched in its process, and their GPU span,
/// union (busy) and kernel count — the projection docs/steps.md describes, done by hand.
fn raw_steps(r: &Raw) -> Vec<(i64, i64, i64, i64, i64)> {
    let mut out = Vec::new();
    for (p, t, a, b, text) in &r.ranges {
        if !text.starts_with("execute_") {
            continue;
        }
        let corr: BTreeSet<i64> = r
            .calls
            .iter()
            .filter(|c| c.0 == *p && c.1 == *t && c.2 >= *a && c.2 <= *b)
            .map(|c| c.4)
            .collect();
        let ops: Vec<&(i64, i64, i64, i64, String, i64, i64)> = r
            .ops
            .iter()
            .filter(|o| o.5 == *p && corr.contains(&o.6))
            .collect();
        let start = ops.iter().map(|o| o.2).min().unwrap();
        let end = ops.iter().map(|o| o.3).max().unwrap();
        let busy = common::union_ns(ops.iter().map(|o| (o.2, o.3)));
        let kernels = ops.iter().filter(|o| o.4 != "memcpy").count() as i64;
        out.push((*p, start, end - start, busy, kernels));
    }
    out.sort_unstable();
    out
}

/// Trace-event µs with three decimals → ns.
fn ns(x: &Value) -> i64 {
    (x.as_f64().unwrap() * 1000.0).round() as i64
}

fn events<'a>(v: &'a Value, cat: &str) -> Vec<&'a Value> {
    v["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["cat"] == cat)
        .collect()
}

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
                i64::from(o.device[i]),
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
fn perfetto_trace_holds_the_raw_rows_and_loads_back_to_the_same_ops_and_steps() {
    let dir = tempfile::tempdir().unwrap();
    let (orig, v, out) = write_trace(dir.path(), &[]);
    assert!(validate(&v) > 0);
    let r = raw(&dir.path().join("w.sqlite"));

    // Every kernel and copy row is one event on its device and stream, at its times.
    let mut want: Vec<(i64, i64, i64, i64, String)> = r
        .ops
        .iter()
        .map(|o| (o.0, o.1, o.2, o.3 - o.2, o.4.clone()))
        .collect();
    want.sort();
    let mut got: Vec<(i64, i64, i64, i64, String)> = events(&v, "kernel")
        .into_iter()
        .map(|e| (e, e["name"].as_str().unwrap().to_owned()))
        .chain(
            events(&v, "gpu_memcpy")
                .into_iter()
                .map(|e| (e, "memcpy".to_owned())),
        )
        .map(|(e, name)| {
            (
                e["pid"].as_i64().unwrap(),
                e["tid"].as_i64().unwrap(),
                ns(&e["ts"]),
                ns(&e["dur"]),
                name,
            )
        })
        .collect();
    got.sort();
    assert!(want.len() > 250, "{}", want.len());
    assert_eq!(got, want, "GPU ops against the export's rows");

    // Exclusive time: each op's share of the device's busy time not covered by an op that
    // started earlier (a sweep in start order here); per device they add up to the union.
    let mut by_dev: BTreeMap<i64, Vec<(i64, i64)>> = BTreeMap::new();
    for o in &r.ops {
        by_dev.entry(o.0).or_default().push((o.2, o.3));
    }
    let mut want_excl: BTreeMap<(i64, i64, i64), i64> = BTreeMap::new();
    for (dev, mut iv) in by_dev.clone() {
        iv.sort_unstable();
        assert!(
            iv.windows(2).all(|w| w[0] != w[1]),
            "no tie to break on device {dev}"
        );
        let mut reach = i64::MIN;
        for (s, e) in iv {
            want_excl.insert((dev, s, e), (e - s.max(reach)).max(0));
            reach = reach.max(e);
        }
    }
    let mut got_excl: BTreeMap<(i64, i64, i64), i64> = BTreeMap::new();
    for e in events(&v, "kernel")
        .into_iter()
        .chain(events(&v, "gpu_memcpy"))
    {
        let (s, d) = (ns(&e["ts"]), ns(&e["dur"]));
        got_excl.insert(
            (e["pid"].as_i64().unwrap(), s, s + d),
            e["args"]["exclusive_ns"].as_i64().unwrap(),
        );
    }
    assert_eq!(got_excl, want_excl);
    for (dev, iv) in by_dev {
        let sum: i64 = got_excl
            .iter()
            .filter(|(k, _)| k.0 == dev)
            .map(|(_, x)| x)
            .sum();
        assert_eq!(
            sum,
            common::union_ns(iv),
            "device {dev}: exclusive times add up to busy"
        );
    }

    // The steps' host ranges are the engine's NVTX ranges, on their process and thread.
    let mut want_ranges: Vec<(i64, i64, i64, i64, String)> = r
        .ranges
        .iter()
        .filter(|x| x.4.starts_with("execute_"))
        .map(|x| (x.0, x.1, x.2, x.3 - x.2, x.4.clone()))
        .collect();
    want_ranges.sort();
    let mut got_ranges: Vec<(i64, i64, i64, i64, String)> = events(&v, "user_annotation")
        .into_iter()
        .map(|e| {
            (
                e["pid"].as_i64().unwrap(),
                e["tid"].as_i64().unwrap(),
                ns(&e["ts"]),
                ns(&e["dur"]),
                e["name"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    got_ranges.sort();
    assert_eq!(want_ranges.len(), 20, "10 steps on each of 2 ranks");
    assert_eq!(got_ranges, want_ranges);

    // Each step slice spans the GPU work its range launched: span, busy union and kernel
    // count from the raw rows. The slice sits on its GPU; the range's process gives the
    // device (one process per rank, one GPU each).
    let step_events = events(&v, "stepgate.step");
    let devices: BTreeMap<i64, i64> = r.ops.iter().map(|o| (o.5, o.0)).collect();
    let mut want_steps = raw_steps(&r);
    for s in &mut want_steps {
        s.0 = devices[&s.0];
    }
    want_steps.sort_unstable();
    let mut got_steps: Vec<(i64, i64, i64, i64, i64)> = step_events
        .iter()
        .map(|e| {
            (
                e["pid"].as_i64().unwrap(),
                ns(&e["ts"]),
                ns(&e["dur"]),
                e["args"]["busy_ns"].as_i64().unwrap(),
                e["args"]["kernels"].as_i64().unwrap(),
            )
        })
        .collect();
    got_steps.sort_unstable();
    assert_eq!(got_steps, want_steps);
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

    // Read back with stepgate's Kineto reader: the same ops and steps as the export.
    let back = kineto::load(&out).unwrap();
    assert_eq!(ops(&back), ops(&orig), "GPU ops round-trip");
    let cats = Categorizer::default();
    let a = find_steps(&orig, &StepOptions::default(), &cats).unwrap();
    let b = find_steps(&back, &StepOptions::default(), &cats).unwrap();
    assert_eq!(spans(&b), spans(&a), "step spans round-trip");
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
    // The host ranges kept are the raw rows' 4th to 6th `execute_` range of each thread.
    let r = raw(&dir.path().join("w.sqlite"));
    let mut threads: BTreeMap<(i64, i64), Vec<(i64, i64)>> = BTreeMap::new();
    for x in r.ranges.iter().filter(|x| x.4.starts_with("execute_")) {
        threads
            .entry((x.0, x.1))
            .or_default()
            .push((x.2, x.3 - x.2));
    }
    let mut want: Vec<(i64, i64)> = threads
        .into_values()
        .flat_map(|mut v| {
            v.sort_unstable();
            v.into_iter().skip(3).take(3)
        })
        .collect();
    want.sort_unstable();
    let mut got: Vec<(i64, i64)> = events(&v, "user_annotation")
        .into_iter()
        .map(|e| (ns(&e["ts"]), ns(&e["dur"])))
        .collect();
    got.sort_unstable();
    assert_eq!(got, want);
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

#[test]
fn a_window_outside_the_steps_is_an_input_error() {
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
        "500..600",
    ]);
    assert_eq!(code, 2, "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    // Ten steps per rank in the scenario: 0..10 in each series.
    assert!(
        err.contains("--perfetto-steps 500..600 holds none of the steps: the report's steps are 0..10 (series 0), 0..10 (series 1)"),
        "{err}"
    );
    assert!(!out.exists(), "no empty trace written");
}
