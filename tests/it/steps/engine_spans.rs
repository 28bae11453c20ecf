//! Steps found from syncs, scheduler scopes and python spans: recurring syncs, graph replays, SGLang overlap, launches without a call, vLLM TP workers.

use super::*;

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
