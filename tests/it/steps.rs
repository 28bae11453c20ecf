//! Steps: projection of host ranges onto the GPU, checked against hand-computed values
//! on small traces built row by row, and against the generator's own ground truth.

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

#[test]
fn recurring_syncs_are_step_boundaries_only_with_a_stable_period() {
    let r = auto(&synced(&[1000, 1000, 1000]));
    assert_eq!(r.found_by, FoundBy::Sync);
    assert!(r.exact_steps_hint.is_some());
    // Boundaries at 100, 1100, 2100, 3100: four steps, each holding one iteration's
    // launch (42 ns busy: kernel 40 + copy 2). Iteration 0, before the first sync, has a
    // full period's launches (1 of a median 1), so it is a step too: from its first call
    // (10) to the first sync's end.
    assert_eq!(r.steps.len(), 4);
    for (j, s) in r.steps.iter().enumerate() {
        let j = j as i64;
        let start = if j == 0 { 10 } else { j * 1000 - 900 };
        assert_eq!(
            (s.cpu_start_ns, s.cpu_end_ns),
            (Some(start), Some(j * 1000 + 100))
        );
        assert_eq!((s.busy_ns, s.kernels, s.ops), (42, 1, 2));
        assert_eq!(s.kind, StepKind::Unknown);
        assert_eq!(s.found_by, FoundBy::Sync);
    }
    assert_eq!(r.outside_steps[0].before_ns, 0);
    // A launch after the last sync never reached its closing sync: not a step, and not
    // the last step's tail either (sync steps tile the thread's time): outside, after.
    let mut b = synced_b(&[1000, 1000, 1000]);
    b.call(1, 11, 4010, 4015, "cudaLaunchKernel_v7000", 99);
    b.op(1, 0, 7, 4020, 4060, "k", OpKind::Kernel, 99);
    let r = auto(&b.trace());
    assert_eq!(r.steps.len(), 4);
    assert_eq!((r.steps[3].tail_busy_ns, r.steps[3].tail_kernels), (0, 0));
    assert_eq!(r.outside_steps[0].after_ns, 40);
    // Periods 1000, 20000, 100, 40000: none within ±50 % of the median, so no sync
    // steps; nothing else is there but idle gaps.
    let r = auto(&synced(&[1000, 20000, 100, 40000]));
    assert_eq!(r.found_by, FoundBy::Gaps);
    // Two boundaries are not enough either.
    let r = auto(&synced(&[1000]));
    assert_eq!(r.found_by, FoundBy::Gaps);
}

#[test]
fn sync_segments_replaying_a_graph_are_decode_guesses_and_eager_ones_prefill_by_sync() {
    // SGLang under nsys, no NVTX: decode = one graph launch, prefill = eager launches,
    // each iteration ends with a DtoH copy and a stream sync. Iterations D D D P D D D.
    let mut b = B::new();
    let mut t0 = 0;
    let mut corr = 0;
    for (k, prefill) in [false, false, false, true, false, false, false]
        .iter()
        .enumerate()
    {
        t0 += if k == 0 {
            0
        } else if *prefill {
            5000
        } else {
            1000
        };
        let n = if *prefill { 3 } else { 1 };
        for j in 0..n {
            corr += 1;
            let name = if *prefill {
                "cudaLaunchKernel_v7000"
            } else {
                "cudaGraphLaunch_v10000"
            };
            b.call(1, 11, t0 + 10 + j, t0 + 11 + j, name, corr);
            b.op(
                1,
                0,
                7,
                t0 + 20 + 50 * j,
                t0 + 60 + 50 * j,
                "k",
                OpKind::Kernel,
                corr,
            );
        }
        b.call(1, 11, t0 + 30, t0 + 100, "cudaStreamSynchronize_v3020", -1);
    }
    let r = auto(&b.trace());
    assert_eq!(r.found_by, FoundBy::Sync);
    // Seven boundaries, seven steps: each holds the iteration its sync closes (the first
    // one, before the first sync, holds a full period's launch).
    assert_eq!(r.steps.len(), 7);
    let by: Vec<(FoundBy, Option<StepKind>, u64)> = r
        .steps
        .iter()
        .map(|s| (s.found_by, s.kind_guess, s.kernels))
        .collect();
    // found_by says what delimited the step: here every iteration ends at a sync, so
    // every step is `sync`; the one graph replay in a decode makes its kind_guess decode.
    // (`graphs` is for steps split at a graph's second replay with no sync between, as
    // SGLang's decodes without a host sync: see the next test.)
    let d = (FoundBy::Sync, Some(StepKind::Decode), 1);
    assert_eq!(by, vec![d, d, d, (FoundBy::Sync, None, 3), d, d, d]);
    assert!(r.steps.iter().all(|s| s.kind == StepKind::Unknown));
}

#[test]
fn scheduler_scopes_are_steps_and_the_sample_scope_is_the_tail() {
    // vLLM custom scopes: forward then sample on the same thread, twice.
    let mut b = B::new();
    for k in 0..2i64 {
        let t0 = k * 10_000;
        b.range(1, 11, t0 + 100, t0 + 1000, "gpu_model_runner: forward");
        b.call(
            1,
            11,
            t0 + 110,
            t0 + 120,
            "cudaLaunchKernel_v7000",
            2 * k + 1,
        );
        b.op(
            1,
            0,
            7,
            t0 + 500,
            t0 + 700,
            "gemm",
            OpKind::Kernel,
            2 * k + 1,
        );
        b.range(1, 11, t0 + 1100, t0 + 1500, "gpu_model_runner: sample");
        b.call(
            1,
            11,
            t0 + 1110,
            t0 + 1120,
            "cudaLaunchKernel_v7000",
            2 * k + 2,
        );
        b.op(
            1,
            0,
            7,
            t0 + 1200,
            t0 + 1210,
            "sampler",
            OpKind::Kernel,
            2 * k + 2,
        );
    }
    let r = auto(&b.trace());
    assert_eq!(r.found_by, FoundBy::Scheduler);
    assert_eq!(r.method, FoundBy::Scheduler);
    assert!(r
        .exact_steps_hint
        .as_deref()
        .is_some_and(|h| h.contains("vLLM")));
    assert_eq!(r.steps.len(), 2);
    for s in &r.steps {
        assert_eq!(s.name, "gpu_model_runner: forward");
        assert_eq!((s.busy_ns, s.tail_busy_ns, s.tail_kernels), (200, 10, 1));
    }
    // SGLang's scheduler.run_batch under nsys: the hint names the torch-profiler span.
    let mut b = B::new();
    for k in 0..3i64 {
        b.range(1, 11, k * 1000, k * 1000 + 500, "scheduler.run_batch");
        b.call(
            1,
            11,
            k * 1000 + 10,
            k * 1000 + 20,
            "cudaLaunchKernel_v7000",
            k + 1,
        );
        b.op(
            1,
            0,
            7,
            k * 1000 + 30,
            k * 1000 + 90,
            "k",
            OpKind::Kernel,
            k + 1,
        );
    }
    let r = auto(&b.trace());
    assert_eq!((r.found_by, r.steps.len()), (FoundBy::Scheduler, 3));
    assert!(r
        .exact_steps_hint
        .as_deref()
        .is_some_and(|h| h.contains("step[")));
}

#[test]
fn sglang_overlap_python_spans_come_from_the_launching_thread() {
    // run_batch on the scheduler thread launches nothing; forward_batch_generation on
    // the overlap thread launches the work: that family is the step.
    let mut b = B::new();
    let py = RangeKind::PythonStack;
    for k in 0..3i64 {
        let t0 = k * 1000;
        b.range_of(
            py,
            1,
            11,
            t0,
            t0 + 400,
            "x/sglang/srt/managers/scheduler.py(900): run_batch",
        );
        b.range_of(
            py,
            1,
            12,
            t0 + 50,
            t0 + 600,
            "x/sglang/srt/managers/tp_worker.py(445): forward_batch_generation",
        );
        b.call(1, 12, t0 + 60, t0 + 70, "cudaGraphLaunch_v10000", k + 1);
        b.op(1, 0, 7, t0 + 100, t0 + 300, "g", OpKind::Kernel, k + 1);
    }
    let r = auto(&b.trace());
    assert_eq!(r.found_by, FoundBy::Python);
    assert_eq!(r.steps.len(), 3);
    assert!(r
        .steps
        .iter()
        .all(|s| s.tid == Some(12) && s.busy_ns == 200));
    assert!(r
        .exact_steps_hint
        .as_deref()
        .is_some_and(|h| h.contains("SGLang")));
}

#[test]
fn kineto_ops_without_a_launching_call_join_the_step_by_its_gpu_window() {
    let mut b = B::new();
    b.range(1, 11, 100, 1000, "ProfilerStep#3");
    // Kineto's GPU-side span of the annotation: pid holds the device.
    b.range_of(RangeKind::GpuAnnotation, 0, 7, 400, 900, "ProfilerStep#3");
    b.call(1, 11, 110, 120, "cudaLaunchKernel_v7000", 1);
    b.op(1, 0, 7, 500, 600, "k", OpKind::Kernel, 1);
    // No launching call in the trace: inside the GPU window, and after it.
    b.op(1, 0, 7, 650, 700, "lost", OpKind::Kernel, 77);
    b.op(1, 0, 7, 950, 990, "late", OpKind::Kernel, 78);
    let mut t = b.trace();
    t.meta.format = SourceFormat::Kineto;
    let r = auto(&t);
    assert_eq!(r.steps.len(), 1);
    let s = &r.steps[0];
    assert_eq!((s.busy_ns, s.ops, s.gpu_end_ns), (150, 2, Some(700)));
    assert!(r
        .notes
        .iter()
        .any(|n| n.contains("1 op(s)") && n.contains("time-window")));
    let o = &r.outside_steps[0];
    assert_eq!(
        (o.before_ns, o.between_ns, o.after_ns, o.busy_ns),
        (0, 0, 40, 190)
    );
    // nsys always records the launch: no fallback there.
    t.meta.format = SourceFormat::Nsys;
    let r = auto(&t);
    assert_eq!(r.steps[0].busy_ns, 100);
    assert!(!r.notes.iter().any(|n| n.contains("time-window")));
}

#[test]
fn vllm_tp_python_spans_one_worker_per_rank_outermost_with_sampling_tail() {
    let mut b = B::new();
    let py = RangeKind::PythonStack;
    for (rank, pid) in [(0i64, 100i64), (1, 200)] {
        let tid = pid + 1;
        for k in 0..2i64 {
            let t0 = k * 10_000;
            b.range_of(
                py,
                pid,
                tid,
                t0 + 100,
                t0 + 5000,
                "vllm/v1/worker/gpu_worker.py(263): execute_model",
            );
            b.range_of(
                py,
                pid,
                tid,
                t0 + 200,
                t0 + 4000,
                "vllm/v1/worker/gpu_model_runner.py(1002): execute_model",
            );
            let corr = 10 * k + 1;
            // One piece launched in the outer span but outside the inner one.
            b.call(pid, tid, t0 + 150, t0 + 160, "cudaLaunchKernel_v7000", corr);
            b.op(
                pid,
                rank,
                7,
                t0 + 1000,
                t0 + 1100,
                "prep",
                OpKind::Kernel,
                corr,
            );
            b.call(
                pid,
                tid,
                t0 + 300,
                t0 + 310,
                "cudaGraphLaunch_v10000",
                corr + 1,
            );
            b.op(
                pid,
                rank,
                7,
                t0 + 1200,
                t0 + 1500,
                "piece",
                OpKind::Kernel,
                corr + 1,
            );
            // Sampling after execute_model returns (sample_tokens in vLLM ≥ 0.11.2).
            b.call(
                pid,
                tid,
                t0 + 6000,
                t0 + 6010,
                "cudaLaunchKernel_v7000",
                corr + 2,
            );
            b.op(
                pid,
                rank,
                7,
                t0 + 6100,
                t0 + 6130,
                "sampler",
                OpKind::Kernel,
                corr + 2,
            );
        }
    }
    let r = auto(&b.trace());
    assert_eq!(r.found_by, FoundBy::Python);
    assert!(r
        .exact_steps_hint
        .as_deref()
        .is_some_and(|h| h.contains("vLLM")));
    assert_eq!(r.series.len(), 2);
    assert_eq!(r.steps.len(), 4);
    for s in &r.steps {
        let t0 = s.index as i64 * 10_000;
        assert_eq!(s.name, "vllm/v1/worker/gpu_worker.py(263): execute_model");
        assert_eq!(
            (s.cpu_start_ns, s.cpu_end_ns),
            (Some(t0 + 100), Some(t0 + 5000))
        );
        assert_eq!((s.busy_ns, s.launches, s.kernels), (400, 2, 2));
        assert_eq!((s.tail_busy_ns, s.tail_ops), (30, 1));
        assert_eq!(s.kind, StepKind::Unknown);
    }
    assert_eq!(r.ranks.len(), 2);
    for o in &r.outside_steps {
        assert_eq!(
            (o.before_ns, o.between_ns, o.after_ns, o.busy_ns),
            (0, 0, 0, 2 * 430)
        );
    }
}

mod generated {
    //! Steps on generated nsys exports (real 2026.2 DDL), checked against the generator's
    //! own schedule arithmetic, and on the real fastvideo export against SQL.

    use stepgate::categories::Categorizer;
    use stepgate::source::nsys;
    use stepgate::synth::workload::*;
    use stepgate::synth::Layout;
    use stepgate::timing::steps::{find_steps, StepOptions, StepSource};
    use stepgate::wire::steps::{FoundBy, StepKind, StepsReport};
    use stepgate::wire::synth::Expected;

    fn run(scn: &Scenario, opts: &StepOptions) -> (Expected, StepsReport) {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("w.sqlite");
        let exp = build(scn, &p).unwrap();
        let t = nsys::load(&p).unwrap();
        let r = find_steps(&t, opts, &Categorizer::default()).unwrap();
        (exp, r)
    }

    /// Every expected step matched with the found one of the same rank and order.
    fn check(exp: &Expected, r: &StepsReport) {
        let with_gpu: Vec<_> = r.steps.iter().collect();
        assert_eq!(with_gpu.len(), exp.steps.len(), "step count");
        for e in &exp.steps {
            let s = r
                .steps
                .iter()
                .find(|s| s.pid == e.pid && s.cpu_start_ns == Some(e.cpu_start_ns))
                .unwrap_or_else(|| panic!("no step for rank {} at {}", e.rank, e.cpu_start_ns));
            let ctx = format!("rank {} step {}", e.rank, e.step);
            assert_eq!(s.cpu_end_ns, Some(e.cpu_end_ns), "{ctx} cpu end");
            assert_eq!(s.gpu_start_ns, e.gpu_start_ns, "{ctx} gpu start");
            assert_eq!(s.gpu_end_ns, e.gpu_end_ns, "{ctx} gpu end");
            assert_eq!(s.busy_ns, e.busy_ns, "{ctx} busy");
            assert_eq!(s.kernels, e.kernels, "{ctx} kernels");
            assert_eq!(s.graph_replays, e.graph_replays, "{ctx} graph replays");
            assert_eq!(s.launches, e.launches, "{ctx} launches");
            assert_eq!(s.launch_host_ns, e.launch_host_ns, "{ctx} launch host time");
            // Every named step, SGLang's step[…] included, is reported under its innermost
            // range's name (the outer one when not nested).
            if let Some(n) = &e.inner_name {
                assert_eq!(&s.name, n, "{ctx} name");
            }
        }
    }

    fn ks(n: usize) -> Vec<KernelSpec> {
        decode_kernels(n)
    }

    #[test]
    fn vllm_eager_node_graph_opaque_and_piecewise_steps() {
        let dec = vllm_execute_detailed(8, [0; 5], [8, 8, 8 * 1024, 8, 8 * 1024]);
        let pre = vllm_execute(2, 512, 0, 0);
        let mixed = vllm_execute(1, 100, 7, 7);
        let mut pw = ks(6);
        pw[3] = KernelSpec::eager("attention_eager_kernel", 7_000);
        let mut odd = StepSpec::new(Some(&dec), LaunchMode::Eager, ks(4));
        odd.launches_without_kernels = 2;
        odd.kernels_without_launch_after = 3;
        odd.memcpy_h2d_bytes = Some(1 << 20);
        let steps = vec![
            StepSpec::new(Some(&pre), LaunchMode::Eager, ks(10)),
            StepSpec::new(Some(&dec), LaunchMode::GraphNode, ks(16)),
            StepSpec::new(Some(&dec), LaunchMode::GraphOpaque, ks(16)),
            StepSpec::new(Some(&mixed), LaunchMode::Piecewise, pw),
            odd,
        ];
        let (exp, r) = run(
            &Scenario::new(Layout::Nsys2026_2, 1, steps),
            &StepOptions::default(),
        );
        assert_eq!(r.method, FoundBy::Marker);
        check(&exp, &r);
        let kinds: Vec<StepKind> = r.steps.iter().map(|s| s.kind).collect();
        assert_eq!(
            kinds,
            vec![
                StepKind::Prefill,
                StepKind::Decode,
                StepKind::Decode,
                StepKind::Mixed,
                StepKind::Decode
            ]
        );
        // The opaque replay asks for node-mode tracing.
        assert!(r
            .notes
            .iter()
            .any(|n| n.contains("--cuda-graph-trace=node")));
    }

    #[test]
    fn two_tp_ranks_align_and_name_the_slowest() {
        let name = sglang_step("DECODE", 16, None);
        let steps: Vec<StepSpec> = (0..4)
            .map(|_| StepSpec::new(Some(&name), LaunchMode::GraphNode, ks(24)))
            .collect();
        let mut scn = Scenario::new(Layout::Nsys2026_2, 2, steps);
        scn.rank_extra_ns = vec![0, 300];
        let (exp, r) = run(&scn, &StepOptions::default());
        check(&exp, &r);
        assert_eq!(r.series.len(), 2);
        assert_eq!(r.ranks.len(), 4);
        // Rank 1 runs every kernel 300 ns longer: it is the slowest in every step.
        let slow_pid = exp.steps.iter().find(|e| e.rank == 1).unwrap().pid;
        assert!(r.ranks.iter().all(|a| a.slowest_pid == slow_pid));
        // Periods: next GPU start − this GPU start, per rank.
        for rank in 0..2u32 {
            let e: Vec<_> = exp.steps.iter().filter(|e| e.rank == rank).collect();
            let s: Vec<_> = r.steps.iter().filter(|s| s.pid == e[0].pid).collect();
            for i in 0..e.len() - 1 {
                let want = e[i + 1].gpu_start_ns.unwrap() - e[i].gpu_start_ns.unwrap();
                assert_eq!(s[i].period_ns, Some(want));
                let idle = e[i + 1].gpu_start_ns.unwrap() - e[i].gpu_end_ns.unwrap();
                assert_eq!(s[i + 1].idle_before_ns, Some(idle));
            }
            assert_eq!(s.last().unwrap().period_ns, None);
        }
    }

    #[test]
    fn nested_sglang_in_execute_and_start_end_and_registered_ranges() {
        let outer = vllm_execute_detailed(8, [0; 5], [8, 8, 4096, 8, 4096]);
        let inner = sglang_step("DECODE", 8, None);
        let mut nested = StepSpec::new(None, LaunchMode::GraphNode, ks(8));
        nested.names = vec![outer, inner.clone()];
        let mut se = StepSpec::new(Some(&inner), LaunchMode::Eager, ks(5));
        se.nvtx = NvtxStyle::StartEnd;
        let mut reg = StepSpec::new(Some(&inner), LaunchMode::Eager, ks(5));
        reg.nvtx = NvtxStyle::Registered;
        let (exp, r) = run(
            &Scenario::new(Layout::Nsys2026_2, 1, vec![nested, se, reg]),
            &StepOptions::default(),
        );
        check(&exp, &r);
        let first = &r.steps[0];
        assert_eq!(first.name, inner);
        // ΣN_KV comes from the outer execute_… annotation.
        assert_eq!(first.composition.as_ref().unwrap().sum_kv(), Some(4096));
    }

    #[test]
    fn old_layouts_and_graph_fallback() {
        for layout in [Layout::Nsys2022_2, Layout::Nsys2022_1, Layout::Nsys2020_5] {
            let mut scn = Scenario::new(
                layout,
                1,
                (0..3)
                    .map(|_| StepSpec::new(Some("step[DECODE bs=4]"), LaunchMode::Eager, ks(6)))
                    .collect(),
            );
            scn.backtrace_duplicates = layout != Layout::Nsys2020_5;
            let (exp, r) = run(&scn, &StepOptions::default());
            check(&exp, &r);
        }
        // No step ranges at all: auto falls back to one step per graph launch.
        let steps = (0..5)
            .map(|_| StepSpec::new(None, LaunchMode::GraphNode, ks(12)))
            .collect();
        let (exp, r) = run(
            &Scenario::new(Layout::Nsys2026_2, 1, steps),
            &StepOptions::default(),
        );
        assert_eq!(r.method, FoundBy::Graphs);
        assert_eq!(r.found_by, FoundBy::Graphs);
        assert_eq!(r.steps.len(), 5);
        // One full graph per step: each launch one step, kind only guessed.
        assert!(r
            .steps
            .iter()
            .all(|s| s.kind == StepKind::Unknown && s.kind_guess == Some(StepKind::Decode)));
        for (s, e) in r.steps.iter().zip(&exp.steps) {
            assert_eq!(
                (s.gpu_start_ns, s.gpu_end_ns, s.busy_ns),
                (e.gpu_start_ns, e.gpu_end_ns, e.busy_ns)
            );
        }
        let opts = StepOptions {
            source: StepSource::Gaps,
            gap_threshold_ns: 100_000,
            ..Default::default()
        };
        // Host gaps of 500 µs between steps leave the GPU idle far longer than the threshold.
        let steps = (0..5)
            .map(|_| {
                let mut s = StepSpec::new(None, LaunchMode::Eager, ks(12));
                s.host_gap_before_ns = 500_000;
                s
            })
            .collect();
        let (exp, r) = run(&Scenario::new(Layout::Nsys2026_2, 1, steps), &opts);
        assert_eq!(r.steps.len(), 5);
        for (s, e) in r.steps.iter().zip(&exp.steps) {
            assert_eq!(
                (s.gpu_start_ns, s.busy_ns, s.launches),
                (e.gpu_start_ns, e.busy_ns, e.launches)
            );
        }
    }

    #[test]
    fn piecewise_graph_steps_without_markers_are_grouped_per_step() {
        // Each step: graph piece, eager attention, graph piece, eager, graph piece (3
        // different graphs per step, replayed again by the next step), no host sync.
        let steps: Vec<StepSpec> = (0..4)
            .map(|_| {
                let mut k = ks(8);
                k[2] = KernelSpec::eager("attention_eager_kernel", 7_000);
                k[5] = KernelSpec::eager("attention_eager_kernel", 7_000);
                let mut s = StepSpec::new(None, LaunchMode::Piecewise, k);
                s.host_gap_before_ns = 50_000;
                s
            })
            .collect();
        let (exp, r) = run(
            &Scenario::new(Layout::Nsys2026_2, 1, steps),
            &StepOptions::default(),
        );
        assert_eq!(r.found_by, FoundBy::Graphs);
        assert_eq!(r.method, FoundBy::Graphs);
        assert_eq!(r.steps.len(), 4, "one step per engine step, not per piece");
        for (s, e) in r.steps.iter().zip(&exp.steps) {
            assert_eq!(
                (
                    s.gpu_start_ns,
                    s.gpu_end_ns,
                    s.busy_ns,
                    s.kernels,
                    s.launches
                ),
                (
                    e.gpu_start_ns,
                    e.gpu_end_ns,
                    e.busy_ns,
                    e.kernels,
                    e.launches
                )
            );
            assert_eq!(s.name, "[3 CUDA-graph launches]");
            assert_eq!(s.kind, StepKind::Unknown);
            assert_eq!(s.kind_guess, None);
        }
    }

    #[test]
    fn fastvideo_fsdp_ranges_project_like_sql() {
        let path = crate::common::fixture("nsys/fastvideo_train_2gpu_nsys2026.2.sqlite");
        let t = nsys::load(&path).unwrap();
        let opts = StepOptions {
            source: StepSource::Regex(regex::Regex::new("^FSDP::").unwrap()),
            ..Default::default()
        };
        let r = find_steps(&t, &opts, &Categorizer::default()).unwrap();
        // Independent projection in SQL: outermost FSDP ranges → runtime calls (eventClass
        // 0/1) starting inside them on the same thread → ops with the same correlation id
        // in the same process.
        let db = rusqlite::Connection::open_with_flags(
            &path,
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
        )
        .unwrap();
        // SQLite has no index on these tables: materialize the ops and calls with indexes in
        // the temp schema (the report itself stays read-only).
        db.execute_batch(
            "CREATE TEMP TABLE ops AS
               SELECT start, end, correlationId c, (globalPid >> 24) & 16777215 p FROM CUPTI_ACTIVITY_KIND_KERNEL
               UNION ALL SELECT start, end, correlationId, (globalPid >> 24) & 16777215 FROM CUPTI_ACTIVITY_KIND_MEMCPY
               UNION ALL SELECT start, end, correlationId, (globalPid >> 24) & 16777215 FROM CUPTI_ACTIVITY_KIND_MEMSET;
             CREATE INDEX temp.ops_cp ON ops(c, p);
             CREATE TEMP TABLE rt AS SELECT start, globalTid g, correlationId c FROM CUPTI_ACTIVITY_KIND_RUNTIME
               WHERE eventClass IN (0, 1);
             CREATE INDEX temp.rt_g ON rt(g, start);
             CREATE TEMP TABLE r AS
               SELECT n.start s, n.end e, n.globalTid g
               FROM NVTX_EVENTS n LEFT JOIN StringIds si ON si.id = n.textId
               WHERE n.eventType = 59 AND COALESCE(n.text, si.value) LIKE 'FSDP::%' AND n.end IS NOT NULL;
             CREATE INDEX temp.r_g ON r(g, s);",
        )
        .unwrap();
        let sql = "
            WITH outer_r AS (
              SELECT * FROM r a WHERE NOT EXISTS (
                SELECT 1 FROM r b WHERE b.g = a.g AND b.s <= a.s AND b.e >= a.e
                  AND (b.s < a.s OR b.e > a.e)))
            SELECT o.s, MIN(ops.start), MAX(ops.end), COUNT(ops.start)
            FROM outer_r o
            LEFT JOIN rt ON rt.g = o.g AND rt.start >= o.s AND rt.start <= o.e
            LEFT JOIN ops ON ops.c = rt.c AND ops.p = (rt.g >> 24) & 16777215
            GROUP BY o.s, o.g ORDER BY o.s, o.g";
        let mut st = db.prepare(sql).unwrap();
        let rows: Vec<(i64, Option<i64>, Option<i64>, i64)> = st
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert_eq!(rows.len(), r.steps.len());
        let with_gpu = rows.iter().filter(|x| x.3 > 0).count();
        assert_eq!(with_gpu, r.steps.len() - r.steps_without_gpu_work);
        let mut found: Vec<(i64, Option<i64>, Option<i64>, u64)> = r
            .steps
            .iter()
            .map(|s| (s.cpu_start_ns.unwrap(), s.gpu_start_ns, s.gpu_end_ns, s.ops))
            .collect();
        found.sort();
        let mut want: Vec<(i64, Option<i64>, Option<i64>, u64)> = rows
            .into_iter()
            .map(|(s, a, b, n)| (s, a, b, n as u64))
            .collect();
        want.sort();
        assert_eq!(found, want);
    }
}

#[test]
fn steps_output_is_pinned() {
    let rel = "tests/fixtures/nsys/sglang_decode_mi300x_converted_nsys2026.2.sqlite";
    let at = |columns: &str, extra: &[&str]| {
        let mut args = vec!["steps", rel, "--model", "qwen3-8b", "--gpu", "mi300x"];
        args.extend_from_slice(extra);
        let out = std::process::Command::new(crate::common::bin())
            .current_dir(crate::common::root())
            .env("COLUMNS", columns)
            .args(&args)
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let go = |extra: &[&str]| at("120", extra);
    // As a user sees it: the answer first, fitted to 120 and to 80 columns.
    insta::assert_snapshot!("steps_sglang_table", go(&["--each"]));
    insta::assert_snapshot!("steps_sglang_table_80", at("80", &[]));
    insta::assert_snapshot!("steps_sglang_detail_120", at("120", &["--detail"]));
    insta::assert_snapshot!(
        "steps_sglang_markdown",
        go(&["--format", "markdown", "--each"])
    );
    let j: serde_json::Value = serde_json::from_str(&go(&["--format", "json"])).unwrap();
    let s = &j["steps"][0];
    // ΣN_KV = 32,785 comes from the enclosing execute_… range (read with sqlite3), the
    // name from the inner step[…]; the floor is the roofline's for exactly that batch.
    assert_eq!(s["name"], "step[DECODE bs=32]");
    assert_eq!(s["composition"]["generation"]["sk"], 32785);
    assert_eq!(s["kind"], "decode");
    use stepgate::roofline::floor::step_floor;
    use stepgate::wire::roofline::{FloorOptions, StepComposition};
    let comp = StepComposition {
        decode_requests: 32,
        sq: 32,
        sk: 32785,
        sqsq: 32,
        sqsk: 32785,
        decode_sq: 32,
        decode_sk: 32785,
        decode_sqsq: 32,
        decode_sqsk: 32785,
        ..Default::default()
    };
    let model = stepgate::roofline::presets::preset("qwen3-8b").unwrap();
    let gpu = stepgate::roofline::gpu::lookup("mi300x").unwrap();
    let want = step_floor(&model, &gpu, &comp, &FloorOptions::default()).floor_ns;
    let got = s["attribution"]["floor"]["floor_ns"].as_f64().unwrap();
    assert!((got - want).abs() <= 1e-9 * want, "{got} vs {want}");
    let wall = s["wall_ns"].as_f64().unwrap();
    assert!((s["attribution"]["floor"]["mbu"].as_f64().unwrap() - want / wall).abs() < 1e-12);
    insta::assert_json_snapshot!("steps_sglang_json", j);
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
