//! Step discovery on real captures: the annotation-less forms of real vLLM and SGLang
//! traces (annotations dropped in the test) give the same steps from python-stack spans,
//! each with the busy time of an independent projection; ProfilerStep#N traces give
//! their N steps; every op of a series is accounted once (steps, tails, outside).

use std::collections::{HashMap, HashSet};

use polars::prelude::*;
use stepgate::categories::Categorizer;
use stepgate::timing::steps::{find_steps, StepOptions};
use stepgate::trace::{RangeKind, Trace};
use stepgate::wire::steps::{FoundBy, StepKind, StepsReport};

use crate::common::{fixture, union_ns};

fn load(rel: &str) -> Trace {
    stepgate::source::load(&fixture(rel)).unwrap()
}

fn steps(t: &Trace) -> StepsReport {
    find_steps(t, &StepOptions::default(), &Categorizer::default()).unwrap()
}

/// The trace as a capture without step annotations: only python-stack ranges remain.
fn without_annotations(mut t: Trace) -> Trace {
    let keep: Vec<bool> = t
        .ranges_view()
        .unwrap()
        .kind
        .iter()
        .map(|&k| k == RangeKind::PythonStack as u32)
        .collect();
    let mask = BooleanChunked::new("keep".into(), keep);
    t.ranges = t.ranges.filter(&mask).unwrap();
    t
}

/// Python-stack spans ending in `: func` on files named `file.py`, outermost per thread,
/// as (pid, tid, start, end) in start order.
fn python_spans(t: &Trace, file: &str, func: &str) -> Vec<(i64, i64, i64, i64)> {
    let r = t.ranges_view().unwrap();
    let mut v: Vec<(i64, i64, i64, i64)> = (0..r.start_ns.len())
        .filter(|&i| r.kind[i] == RangeKind::PythonStack as u32)
        .filter(|&i| {
            let n = t.name(r.name_id[i]);
            n.ends_with(&format!("): {func}")) && n.contains(&format!("/{file}.py("))
        })
        .map(|i| (i64::from(r.pid[i]), r.tid[i], r.start_ns[i], r.end_ns[i]))
        .collect();
    v.sort_by_key(|s| (s.0, s.1, s.2, std::cmp::Reverse(s.3)));
    let mut out: Vec<(i64, i64, i64, i64)> = Vec::new();
    for s in v {
        if let Some(l) = out.last() {
            if (l.0, l.1) == (s.0, s.1) && s.2 >= l.2 && s.3 <= l.3 {
                continue;
            }
        }
        out.push(s);
    }
    out.sort_by_key(|s| s.2);
    out
}

/// An independent projection: the union of the intervals of the ops whose launching
/// call (same process, same correlation id) starts inside [s, e] on thread `tid` (any
/// thread of the process when None). Returns (union ns, op count).
fn independent_busy(t: &Trace, pid: i64, tid: Option<i64>, s: i64, e: i64) -> (i64, usize) {
    let c = t.calls_view().unwrap();
    let o = t.ops_view().unwrap();
    let corrs: HashSet<i64> = (0..c.start_ns.len())
        .filter(|&i| i64::from(c.pid[i]) == pid && tid.is_none_or(|t| c.tid[i] == t))
        .filter(|&i| {
            c.start_ns[i] >= s && c.start_ns[i] <= e && i64::from(c.correlation_id[i]) >= 0
        })
        .map(|i| i64::from(c.correlation_id[i]))
        .collect();
    let iv: Vec<(i64, i64)> = (0..o.start_ns.len())
        .filter(|&i| i64::from(o.pid[i]) == pid && corrs.contains(&i64::from(o.correlation_id[i])))
        .map(|i| (o.start_ns[i], o.end_ns[i]))
        .collect();
    (union_ns(iv.iter().copied()), iv.len())
}

/// Per series: Σ(busy + tail) + outside = the series' busy time, with the series busy
/// computed here from the ops of its process on its device. Holds exactly when the
/// steps' GPU work does not overlap, which the test checks first.
fn check_accounting(t: &Trace, r: &StepsReport) {
    let o = t.ops_view().unwrap();
    for out in &r.outside_steps {
        let s = &r.series[out.series];
        let mut of: Vec<_> = r.steps.iter().filter(|x| x.series == out.series).collect();
        of.sort_by_key(|x| x.gpu_start_ns);
        for w in of.windows(2) {
            if let (Some(a), Some(b)) = (w[0].gpu_end_ns, w[1].gpu_start_ns) {
                assert!(a <= b, "steps overlap on the GPU");
            }
        }
        let iv: Vec<(i64, i64)> = (0..o.start_ns.len())
            .filter(|&i| i64::from(o.pid[i]) == s.pid && Some(i64::from(o.device[i])) == s.device)
            .map(|i| (o.start_ns[i], o.end_ns[i]))
            .collect();
        let series_busy = union_ns(iv.iter().copied());
        assert_eq!(out.busy_ns, series_busy);
        let accounted: i64 = of.iter().map(|x| x.busy_ns + x.tail_busy_ns).sum();
        assert_eq!(
            accounted + out.before_ns + out.between_ns + out.after_ns,
            series_busy,
            "series {} of {}",
            out.series,
            t.meta.path
        );
    }
}

#[test]
fn annotation_less_vllm_and_sglang_traces_give_the_same_steps_from_python_spans() {
    for (rel, file, func, engine) in [
        (
            "kineto/vllm_b200_eager_prefill_rank0.json.gz",
            "gpu_model_runner",
            "execute_model",
            "vLLM",
        ),
        (
            "kineto/vllm_mi300x_decode_fullgraph_step.json.gz",
            "gpu_model_runner",
            "execute_model",
            "vLLM",
        ),
        (
            "kineto/sglang_mi300x_qwen3-8b_decode_step.json.gz",
            "scheduler",
            "_run_batch_inner",
            "SGLang",
        ),
    ] {
        let full = load(rel);
        let with = steps(&full);
        assert_eq!(with.found_by, FoundBy::Marker, "{rel}");
        assert_eq!(with.exact_steps_hint, None);
        let bare = without_annotations(full);
        let r = steps(&bare);
        assert_eq!(r.found_by, FoundBy::Python, "{rel}");
        assert_eq!(r.method, FoundBy::Python);
        assert!(
            r.exact_steps_hint
                .as_deref()
                .is_some_and(|h| h.contains(engine)),
            "{rel}: {:?}",
            r.exact_steps_hint
        );
        assert_eq!(r.steps.len(), with.steps.len(), "{rel}");
        let spans = python_spans(&bare, file, func);
        assert_eq!(spans.len(), r.steps.len(), "{rel}");
        let mut got: Vec<_> = r.steps.iter().collect();
        got.sort_by_key(|s| s.cpu_start_ns);
        for (s, &(pid, tid, a, b)) in got.iter().zip(&spans) {
            assert_eq!(
                (s.pid, s.tid, s.cpu_start_ns, s.cpu_end_ns),
                (pid, Some(tid), Some(a), Some(b))
            );
            assert_eq!(s.found_by, FoundBy::Python);
            // No marker named the kind: a python span never claims one.
            assert_eq!(s.kind, StepKind::Unknown);
            let (busy, ops) = independent_busy(&bare, pid, Some(tid), a, b);
            assert!(ops > 0, "{rel}: the span launched nothing");
            assert_eq!(s.busy_ns, busy, "{rel}");
            assert_eq!(s.ops, ops as u64, "{rel}");
        }
        check_accounting(&bare, &r);
        check_accounting(&bare, &steps(&bare));
    }
}

#[test]
fn hf_profiler_step_trace_is_one_step_and_orphan_ops_fall_outside() {
    let t = load("kineto/hf_qwen1.5-0.5b_h100_profilerstep.json.gz");
    let r = steps(&t);
    assert_eq!(r.found_by, FoundBy::Marker);
    assert_eq!(r.steps.len(), 1);
    let s = &r.steps[0];
    assert_eq!(s.name, "ProfilerStep#6");
    assert_eq!(s.kind, StepKind::Unknown);
    assert_eq!(s.found_by, FoundBy::Marker);
    // ProfilerStep#N covers the whole process: every thread's launches in the span.
    let (busy, ops) = independent_busy(
        &t,
        s.pid,
        None,
        s.cpu_start_ns.unwrap(),
        s.cpu_end_ns.unwrap(),
    );
    assert_eq!(s.busy_ns, busy);
    assert_eq!(s.ops, ops as u64);
    // The step's GPU annotation starts with its first op (Kineto rounds them apart by
    // at most 1 ns).
    assert!((s.annotation_gpu_start_ns.unwrap() - s.gpu_start_ns.unwrap()).abs() <= 1);
    // 509 ops have no launching call in the trace (README of the fixtures); they all
    // start before the step's GPU annotation (queued by the previous iteration), so the
    // time-window fallback leaves them to outside_steps.before_ns.
    let c = t.calls_view().unwrap();
    let o = t.ops_view().unwrap();
    let launched: HashSet<(i64, i64)> = (0..c.start_ns.len())
        .map(|i| (i64::from(c.pid[i]), i64::from(c.correlation_id[i])))
        .collect();
    let orphans: Vec<(i64, i64)> = (0..o.start_ns.len())
        .filter(|&i| !launched.contains(&(i64::from(o.pid[i]), i64::from(o.correlation_id[i]))))
        .map(|i| (o.start_ns[i], o.end_ns[i]))
        .collect();
    assert_eq!(orphans.len(), 509);
    let ann_start = s.annotation_gpu_start_ns.unwrap();
    assert!(orphans.iter().all(|&(a, _)| a < ann_start));
    assert!(!r.notes.iter().any(|n| n.contains("time-window")));
    assert_eq!(r.outside_steps.len(), 1);
    assert_eq!(
        r.outside_steps[0].before_ns,
        union_ns(orphans.iter().copied())
    );
    assert_eq!(r.outside_steps[0].after_ns, 0);
    check_accounting(&t, &r);
}

#[test]
fn hta_training_trace_gives_its_five_profiler_steps_with_backward_threads() {
    let t = load("kineto/hta_v100_ns_resolution_rank-0.pt.trace.json.gz");
    let r = steps(&t);
    assert_eq!(r.found_by, FoundBy::Marker);
    let names: Vec<&str> = r.steps.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "ProfilerStep#101",
            "ProfilerStep#102",
            "ProfilerStep#103",
            "ProfilerStep#104",
            "ProfilerStep#105"
        ]
    );
    for s in &r.steps {
        let (busy, ops) = independent_busy(
            &t,
            s.pid,
            None,
            s.cpu_start_ns.unwrap(),
            s.cpu_end_ns.unwrap(),
        );
        assert_eq!((s.busy_ns, s.ops), (busy, ops as u64));
    }
    check_accounting(&t, &r);
}

#[test]
fn training_capture_without_markers_steps_at_its_recurring_syncs() {
    let t = stepgate::source::nsys::load(&fixture("nsys/fastvideo_train_2gpu_nsys2026.2.sqlite"))
        .unwrap();
    let r = steps(&t);
    assert_eq!(r.found_by, FoundBy::Sync);
    assert!(r.exact_steps_hint.is_some());
    let c = t.calls_view().unwrap();
    // Each step runs from the end of one stream sync to the end of the next on its
    // thread, and its busy time is the independent projection of that span. The work
    // before a thread's first sync is a step too when it holds a full period's launches:
    // then it starts at the thread's first call.
    let sync_ends: HashSet<(i64, i64, i64)> = (0..c.start_ns.len())
        .filter(|&i| t.name(c.name_id[i]).starts_with("cudaStreamSynchronize"))
        .map(|i| (i64::from(c.pid[i]), c.tid[i], c.end_ns[i]))
        .collect();
    let mut first_call: HashMap<(i64, i64), i64> = HashMap::new();
    for i in 0..c.start_ns.len() {
        let e = first_call
            .entry((i64::from(c.pid[i]), c.tid[i]))
            .or_insert(i64::MAX);
        *e = (*e).min(c.start_ns[i]);
    }
    let mut leading = 0;
    for s in &r.steps {
        let (a, b, tid) = (
            s.cpu_start_ns.unwrap(),
            s.cpu_end_ns.unwrap(),
            s.tid.unwrap(),
        );
        assert!(sync_ends.contains(&(s.pid, tid, b)));
        if !sync_ends.contains(&(s.pid, tid, a)) {
            assert_eq!((s.index, Some(&a)), (0, first_call.get(&(s.pid, tid))));
            // A full period: the same 119 launches as every other step of this loop.
            assert_eq!(s.launches, 119);
            leading += 1;
        }
        let (busy, ops) = independent_busy(&t, s.pid, Some(tid), a, b);
        assert_eq!((s.busy_ns, s.ops), (busy, ops as u64));
        assert_eq!(s.kind, StepKind::Unknown);
    }
    assert_eq!(r.series.len(), 2);
    // On both ranks the first call in the capture opens a full step (119 launches, as
    // every period has); the GPU work before it has no launching call in the capture.
    assert_eq!(leading, 2);
    check_accounting(&t, &r);
}

#[test]
fn json_carries_the_discovery_contract() {
    let path = fixture("kineto/hf_qwen1.5-0.5b_h100_profilerstep.json.gz");
    let (code, out, err) =
        crate::common::run(&["steps", path.to_str().unwrap(), "--format", "json"]);
    assert_eq!(code, 0, "{err}");
    let j: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(j["found_by"], "marker");
    assert_eq!(j["method"], "engine");
    assert!(j["exact_steps_hint"].is_null());
    assert!(j["warnings"].is_array());
    let o = &j["outside_steps"][0];
    for k in ["series", "before_ns", "after_ns", "between_ns", "busy_ns"] {
        assert!(o[k].is_i64() || o[k].is_u64(), "{k}");
    }
    let s = &j["steps"][0];
    assert_eq!(s["found_by"], "marker");
    // ProfilerStep#N names no kind; the step's own attention kernel (FA2's non-paged
    // forward over the 16 × 2048-token batch the trace's metadata records) says prefill,
    // as a guess beside the kind, never as it.
    assert_eq!(s["kind"], "unknown");
    assert_eq!(s["kind_guess"], "prefill");
    assert!(
        s["kind_evidence"]
            .as_str()
            .unwrap()
            .contains("flash_fwd_kernel"),
        "{}",
        s["kind_evidence"]
    );
    for k in ["tail_busy_ns", "tail_kernels", "tail_ops"] {
        assert!(s[k].is_i64() || s[k].is_u64(), "{k}");
    }
    // The table's first line says how steps were found.
    let (_, table, _) = crate::common::run(&["steps", path.to_str().unwrap()]);
    assert!(table
        .lines()
        .next()
        .unwrap()
        .contains("1 steps by engine step markers"));
}
