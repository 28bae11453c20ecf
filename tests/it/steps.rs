//! Steps: projection of host ranges onto the GPU, checked against hand-computed values
//! on small traces built row by row, and against the generator's own ground truth.

mod engine_spans;
mod generated_captures;

use stepgate::categories::Categorizer;
use stepgate::timing::steps::{find_steps, StepOptions, StepSource};
use stepgate::trace::*;
use stepgate::wire::steps::{FoundBy, StepKind};
use stepgate::wire::trace::{SourceFormat, TraceMeta};

struct B {
    i: Interner,
    ops: OpsBuilder,
    calls: CallsBuilder,
    ranges: RangesBuilder,
}

impl B {
    fn new() -> Self {
        B {
            i: Interner::default(),
            ops: OpsBuilder::default(),
            calls: CallsBuilder::default(),
            ranges: RangesBuilder::default(),
        }
    }
    fn range(&mut self, pid: i64, tid: i64, s: i64, e: i64, name: &str) {
        self.range_of(RangeKind::HostPushPop, pid, tid, s, e, name);
    }
    fn range_of(&mut self, kind: RangeKind, pid: i64, tid: i64, s: i64, e: i64, name: &str) {
        let n = self.i.intern(name);
        self.ranges.push(RangeRow {
            pid,
            tid,
            start_ns: s,
            end_ns: e,
            name_id: n,
            domain_id: 0,
            kind,
        });
    }
    fn call(&mut self, pid: i64, tid: i64, s: i64, e: i64, name: &str, corr: i64) {
        let n = self.i.intern(name);
        self.calls.push(CallRow {
            pid,
            tid,
            start_ns: s,
            end_ns: e,
            name_id: n,
            correlation_id: corr,
            api: CallApi::Runtime,
        });
    }
    #[allow(clippy::too_many_arguments)]
    fn op(
        &mut self,
        pid: i64,
        dev: i64,
        stream: i64,
        s: i64,
        e: i64,
        name: &str,
        kind: OpKind,
        corr: i64,
    ) {
        let n = self.i.intern(name);
        self.ops.push(OpRow {
            device: dev,
            stream,
            pid,
            start_ns: s,
            end_ns: e,
            name_id: n,
            short_id: n,
            kind,
            correlation_id: corr,
            graph_id: -1,
            bytes: 0,
        });
    }
    fn trace(self) -> Trace {
        let (ops, short_names) = self.ops.finish_ops().unwrap();
        let (calls, call_apis) = self.calls.finish_calls().unwrap();
        Trace {
            ops,
            short_names,
            calls,
            call_apis,
            ranges: self.ranges.finish().unwrap(),
            strings: self.i.into_strings(),
            ..Trace::empty(TraceMeta::new(SourceFormat::Nsys, "hand-built")).unwrap()
        }
    }
}

const DECODE: &str =
    "execute_32_context_0(sq0sk0sqsq0sqsk0)_generation_32(sq32sk65536sqsq32sqsk65536)";

fn hand_trace() -> Trace {
    let mut b = B::new();
    // Step A, eager: two launches and a copy.
    b.range(1, 11, 100, 1000, DECODE);
    b.call(1, 11, 110, 120, "cudaLaunchKernel_v7000", 1);
    b.call(1, 11, 130, 140, "cudaLaunchKernel_v7000", 2);
    b.call(1, 11, 150, 400, "cudaMemcpyAsync_v3020", 3);
    b.op(1, 0, 7, 500, 600, "k1", OpKind::Kernel, 1);
    b.op(1, 0, 7, 650, 700, "k2", OpKind::Kernel, 2);
    b.op(1, 0, 7, 700, 750, "[memcpy DtoH]", OpKind::Memcpy, 3);
    // Another process reuses correlation id 1: must not land in step A.
    b.op(2, 1, 7, 520, 580, "foreign", OpKind::Kernel, 1);
    // Step B, node-mode graph: three kernels share the launch's correlation id, two
    // overlap on different streams.
    b.range(1, 11, 2000, 3000, DECODE);
    b.call(1, 11, 2010, 2030, "cudaGraphLaunch_v10000", 10);
    b.op(1, 0, 7, 2100, 2200, "g1", OpKind::Kernel, 10);
    b.op(1, 0, 8, 2150, 2250, "g2", OpKind::Kernel, 10);
    b.op(1, 0, 7, 2300, 2400, "g1", OpKind::Kernel, 10);
    // Step C: a range that launched nothing.
    b.range(1, 11, 4000, 4100, DECODE);
    // A kernel with no launching call anywhere.
    b.op(1, 0, 9, 5000, 5100, "orphan", OpKind::Kernel, -1);
    b.trace()
}

#[test]
fn hand_built_steps_match_hand_computed_values() {
    let t = hand_trace();
    let r = find_steps(&t, &StepOptions::default(), &Categorizer::default()).unwrap();
    assert_eq!(r.method.method_str(), "engine");
    assert_eq!(r.steps.len(), 3);
    assert_eq!(r.steps_without_gpu_work, 1);
    let a = &r.steps[0];
    assert_eq!(a.kind, StepKind::Decode);
    assert_eq!((a.gpu_start_ns, a.gpu_end_ns), (Some(500), Some(750)));
    assert_eq!(a.wall_ns, Some(250));
    assert_eq!(a.busy_ns, 200);
    assert_eq!(a.gap_ns, Some(50));
    assert_eq!(
        (a.kernels, a.ops, a.launches, a.launch_host_ns),
        (2, 3, 2, 20)
    );
    assert_eq!(a.cpu_ns, Some(900));
    assert_eq!(
        a.longest_host_call.as_ref().unwrap().name,
        "cudaMemcpyAsync_v3020"
    );
    assert_eq!(a.longest_host_call.as_ref().unwrap().dur_ns, 250);
    assert_eq!(a.period_ns, Some(2100 - 500));
    assert_eq!(a.idle_before_ns, None);
    let b = &r.steps[1];
    assert_eq!(b.wall_ns, Some(300));
    // [2100,2250) ∪ [2300,2400) = 150 + 100.
    assert_eq!(b.busy_ns, 250);
    assert_eq!((b.kernels, b.launches, b.launch_host_ns), (3, 1, 20));
    assert_eq!(b.idle_before_ns, Some(2100 - 750));
    assert_eq!(b.period_ns, None);
    // g1 twice: 100 + 100 exclusive; g2 only its 50 past g1's end.
    let g1 = b.top_kernels.iter().find(|k| &*k.name == "g1").unwrap();
    let g2 = b.top_kernels.iter().find(|k| &*k.name == "g2").unwrap();
    assert_eq!((g1.instances, g1.exclusive_ns, g1.total_ns), (2, 200, 200));
    assert_eq!((g2.instances, g2.exclusive_ns, g2.total_ns), (1, 50, 100));
    let c = &r.steps[2];
    assert_eq!((c.wall_ns, c.busy_ns, c.kernels), (None, 0, 0));
    // Summaries only count steps with GPU work.
    assert_eq!(r.summary.len(), 1);
    assert_eq!(r.summary[0].count, 2);
    assert_eq!(r.summary[0].wall_ns.unwrap().median, 275.0);
}

#[test]
fn graphs_and_gaps_modes() {
    let t = hand_trace();
    let opts = StepOptions {
        source: StepSource::Graphs,
        ..Default::default()
    };
    let r = find_steps(&t, &opts, &Categorizer::default()).unwrap();
    assert_eq!(r.steps.len(), 1);
    assert_eq!(r.steps[0].busy_ns, 250);
    assert_eq!(r.steps[0].cpu_ns, Some(20));
    // Gaps of more than 1000 ns split device 0 into [500,750], [2100,2400], [5000,5100].
    let opts = StepOptions {
        source: StepSource::Gaps,
        gap_threshold_ns: 1000,
        ..Default::default()
    };
    let r = find_steps(&t, &opts, &Categorizer::default()).unwrap();
    let dev0: Vec<_> = r.steps.iter().filter(|s| s.device == Some(0)).collect();
    assert_eq!(dev0.len(), 3);
    assert_eq!(dev0[0].wall_ns, Some(250));
    assert_eq!(dev0[0].launches, 2);
    assert_eq!(dev0[1].launches, 1);
    assert_eq!(dev0[2].launches, 0);
}

/// Graph launches at 1000·k + 10 (op at +20..+60, graph `gid(k)`), with a stream sync
/// after the launches whose index is in `sync_after`.
fn graph_launches(n: i64, gid: impl Fn(i64) -> i64, sync_after: &[i64]) -> Trace {
    let mut b = B::new();
    for k in 0..n {
        let t0 = 1000 * k;
        b.call(1, 11, t0 + 10, t0 + 15, "cudaGraphLaunch_v10000", k + 1);
        b.op(1, 0, 7, t0 + 20, t0 + 60, "k", OpKind::Kernel, k + 1);
        if let Some(o) = b.ops.graph_id.last_mut() {
            *o = gid(k) as i32;
        }
        if sync_after.contains(&k) {
            b.call(1, 11, t0 + 70, t0 + 80, "cudaStreamSynchronize_v3020", -1);
        }
    }
    b.trace()
}

#[test]
fn graph_groups_split_at_syncs_and_repeated_graphs() {
    let opts = StepOptions {
        source: StepSource::Graphs,
        ..Default::default()
    };
    let run = |t: &Trace| -> Vec<u64> {
        let r = find_steps(t, &opts, &Categorizer::default()).unwrap();
        assert_eq!(r.found_by, FoundBy::Graphs);
        r.steps.iter().map(|s| s.kernels).collect()
    };
    // No graph ids (as in Kineto): 6 launches, syncs after the 3rd and the 6th: two
    // piecewise steps of 3 pieces each.
    assert_eq!(run(&graph_launches(6, |_| -1, &[2, 5])), vec![3, 3]);
    // No graph ids and no sync at all: nothing separates the launches, so each is its
    // own step (one full graph per step), never one step for the whole capture.
    let t = graph_launches(4, |_| -1, &[]);
    assert_eq!(run(&t), vec![1, 1, 1, 1]);
    let r = find_steps(&t, &opts, &Categorizer::default()).unwrap();
    assert!(r
        .notes
        .iter()
        .any(|n| n.contains("each launch counted as its own step")));
    // Graph ids, no sync: pieces 1,2,3 replay per step: a repeat of graph 1 starts the
    // next step (3 steps of 3 pieces); one graph replayed per step: 4 steps.
    assert_eq!(run(&graph_launches(9, |k| k % 3 + 1, &[])), vec![3, 3, 3]);
    assert_eq!(run(&graph_launches(4, |_| 5, &[])), vec![1, 1, 1, 1]);
}

#[test]
fn outer_range_is_the_step_and_keeps_the_inner_name() {
    let mut b = B::new();
    b.range(1, 11, 0, 1000, DECODE);
    b.range(1, 11, 10, 990, "step[DECODE bs=32]");
    b.call(1, 11, 20, 30, "cudaLaunchKernel_v7000", 1);
    b.call(1, 11, 5, 8, "cudaLaunchKernel_v7000", 2);
    b.op(1, 0, 7, 100, 200, "k", OpKind::Kernel, 1);
    b.op(1, 0, 7, 210, 260, "k0", OpKind::Kernel, 2);
    let t = b.trace();
    let r = find_steps(&t, &StepOptions::default(), &Categorizer::default()).unwrap();
    assert_eq!(r.steps.len(), 1);
    let s = &r.steps[0];
    assert_eq!(s.name, "step[DECODE bs=32]");
    // The outer range's launches count: both calls are inside [0, 1000].
    assert_eq!(s.launches, 2);
    assert_eq!(s.wall_ns, Some(160));
    let c = s.composition.as_ref().unwrap();
    assert_eq!(c.engine, "sglang");
    assert_eq!(c.sum_kv(), Some(65536));
}

fn auto(t: &Trace) -> stepgate::wire::steps::StepsReport {
    find_steps(t, &StepOptions::default(), &Categorizer::default()).unwrap()
}

#[test]
fn trtllm_forward_steps_with_composition_tail_and_ignored_capture_ranges() {
    let mut b = B::new();
    b.range(
        1,
        11,
        100,
        1000,
        "[Executor] _forward_step 7: 1 ctx reqs, 100 ctx tokens, 2 gen reqs",
    );
    b.call(1, 11, 110, 120, "cudaLaunchKernel_v7000", 1);
    b.op(1, 0, 7, 500, 600, "gemm", OpKind::Kernel, 1);
    // Sampling launched after the span, before the next step: the step's tail.
    b.call(1, 11, 1100, 1110, "cudaLaunchKernel_v7000", 2);
    b.op(1, 0, 7, 650, 700, "sample", OpKind::Kernel, 2);
    // emit_nvtx suffix on the second step.
    b.range(
        1,
        11,
        2000,
        3000,
        "[Executor] _forward_step 8: 0 ctx reqs, 3 gen reqs, op_id = 5",
    );
    b.call(1, 11, 2010, 2020, "cudaLaunchKernel_v7000", 3);
    b.op(1, 0, 7, 2100, 2200, "gemm", OpKind::Kernel, 3);
    // Graph capture is never a step, even with a step-like name.
    b.range(1, 11, 3100, 3200, "capture_32_FULL");
    let t = b.trace();
    let r = auto(&t);
    assert_eq!(r.found_by, FoundBy::Marker);
    assert_eq!(r.exact_steps_hint, None);
    assert_eq!(r.steps.len(), 2);
    let (a, c) = (&r.steps[0], &r.steps[1]);
    assert_eq!(a.kind, StepKind::Mixed);
    let comp = a.composition.as_ref().unwrap();
    assert_eq!((comp.engine.as_str(), comp.iteration), ("trtllm", Some(7)));
    assert_eq!(
        (
            comp.context.requests,
            comp.context.sq,
            comp.generation.requests
        ),
        (Some(1), Some(100), Some(2))
    );
    assert_eq!(c.kind, StepKind::Decode);
    assert_eq!(c.composition.as_ref().unwrap().generation.requests, Some(3));
    // Busy is the span's own op [500, 600]; the tail adds [650, 700].
    assert_eq!(
        (a.busy_ns, a.tail_busy_ns, a.tail_kernels, a.tail_ops),
        (100, 50, 1, 1)
    );
    assert_eq!((c.busy_ns, c.tail_busy_ns, c.tail_ops), (100, 0, 0));
    let o = &r.outside_steps[0];
    assert_eq!(
        (o.before_ns, o.between_ns, o.after_ns, o.busy_ns),
        (0, 0, 0, 250)
    );
}

#[test]
fn absurd_marker_counts_are_a_step_of_unknown_kind_with_a_warning() {
    let mut b = B::new();
    b.range(1, 11, 100, 1000, "step[DECODE bs=99999999999]");
    b.call(1, 11, 110, 120, "cudaLaunchKernel_v7000", 1);
    b.op(1, 0, 7, 500, 600, "k", OpKind::Kernel, 1);
    let r = auto(&b.trace());
    assert_eq!(r.steps.len(), 1);
    assert_eq!(r.steps[0].kind, StepKind::Unknown);
    assert!(r.steps[0].composition.is_none());
    assert!(
        r.warnings.iter().any(|w| w.contains("2^31")),
        "{:?}",
        r.warnings
    );
}

/// One launch per iteration at k·period + 10 (op at +20..+60), then a DtoH copy and a
/// stream sync ending at k·period + 100.
fn synced(periods: &[i64]) -> Trace {
    synced_b(periods).trace()
}

fn synced_b(periods: &[i64]) -> B {
    let mut b = B::new();
    let mut t0 = 0;
    for (k, p) in std::iter::once(&0).chain(periods).enumerate() {
        t0 += p;
        let corr = 2 * k as i64 + 1;
        b.call(1, 11, t0 + 10, t0 + 15, "cudaLaunchKernel_v7000", corr);
        b.op(1, 0, 7, t0 + 20, t0 + 60, "k", OpKind::Kernel, corr);
        b.call(1, 11, t0 + 20, t0 + 25, "cudaMemcpyAsync_v3020", corr + 1);
        b.op(
            1,
            0,
            7,
            t0 + 60,
            t0 + 62,
            "[memcpy DtoH]",
            OpKind::Memcpy,
            corr + 1,
        );
        b.call(1, 11, t0 + 30, t0 + 100, "cudaStreamSynchronize_v3020", -1);
    }
    b
}

/// The per-step table (CSV, and the `--each` text) says how each step was found, its
/// tail and a guessed kind as a guess: the same values as the JSON document, step by step.
#[test]
fn each_row_carries_found_by_tail_and_guessed_kind_as_in_json() {
    let (mut guessed, mut tails) = (0, 0);
    for args in [
        &[
            "tests/fixtures/nsys/sglang_decode_mi300x_converted_nsys2026.2.sqlite",
            "--steps",
            "graphs",
        ][..],
        &["tests/fixtures/nsys/fastvideo_h100_2gpu_nsys2026.2.sqlite"][..],
        &["tests/fixtures/kineto/vllm_b200_eager_prefill_rank0.json.gz"][..],
    ] {
        let go = |format: &str| {
            let mut a = vec!["steps", "--format", format];
            a.extend_from_slice(args);
            let (code, out, err) = crate::common::run(&a);
            assert_eq!(code, 0, "{args:?}: {err}");
            out
        };
        let j: serde_json::Value = serde_json::from_str(&go("json")).unwrap();
        let csv = go("csv");
        let mut lines = csv.lines();
        let header: Vec<&str> = lines.next().unwrap().split(',').collect();
        let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
        let steps = j["steps"].as_array().unwrap();
        // Names hold no commas in these fixtures, so a plain split is exact.
        let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
        assert_eq!(rows.len(), steps.len(), "{args:?}");
        for (row, s) in rows.iter().zip(steps) {
            assert_eq!(row[col("found_by")], s["found_by"].as_str().unwrap());
            assert_eq!(row[col("kind")], s["kind"].as_str().unwrap());
            assert_eq!(
                row[col("kind_guess")],
                s["kind_guess"].as_str().unwrap_or("")
            );
            let tail = s["tail_busy_ns"].as_i64().unwrap();
            assert_eq!(row[col("tail_busy_ns")], tail.to_string());
            guessed += usize::from(!s["kind_guess"].is_null());
            tails += usize::from(tail > 0);
        }
        // The text table shows a guessed kind as inferred, never as the kind.
        let text = go("table");
        let each = {
            let mut a = vec!["steps", "--each"];
            a.extend_from_slice(args);
            crate::common::run(&a).1
        };
        assert!(text.contains("--each for one row per step)") || steps.len() < 2);
        for s in steps.iter().filter(|s| !s["kind_guess"].is_null()) {
            let shown = format!("{} (inferred)", s["kind_guess"].as_str().unwrap());
            assert!(
                each.contains(&shown),
                "{args:?}: {shown} not in --each table"
            );
        }
        assert!(each.contains("found by") && each.contains("tail µs"));
    }
    // The cases exercise both columns (else the comparisons above prove little).
    assert!(guessed > 0 && tails > 0, "guessed {guessed}, tails {tails}");
}
