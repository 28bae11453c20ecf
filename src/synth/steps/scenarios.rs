//! The scenarios: one function per step-marker form, each driving a rank's [`Host`]
//! through the engine's iterations (spans, launches, syncs) and declaring, per iteration,
//! how it must be found and what kind it is.

use crate::synth::workload::decode_kernels;

use super::host::{CallKind, Host, SpanKind, StepMeta};
use super::Scenario;
use crate::wire::synth::{CompositionTruth, Format};

mod pytorch;

use pytorch::{emit_nvtx, profiler_step, pytorch_train, pytorch_train_unstable};

fn meta(name: Option<&str>, found_by: &'static str, kind: &'static str) -> StepMeta {
    StepMeta {
        name: name.map(str::to_owned),
        found_by,
        kind,
        composition: None,
        graph_launches: 0,
    }
}

fn comp_kind(ctx: u64, gen: u64) -> &'static str {
    match (ctx > 0, gen > 0) {
        (true, true) => "mixed",
        (true, false) => "prefill",
        (false, true) => "decode",
        (false, false) => "idle",
    }
}

/// `n` eager prefill kernels of `dur` each (the decode mix's names).
fn eager_kernels(h: &mut Host, n: usize, dur: i64) {
    for k in decode_kernels(n) {
        h.kernel(&k.name, dur);
    }
}

/// A vLLM piecewise decode: 81 graph pieces of 3 kernels (55 µs on average) with one eager
/// triton attention kernel (39 µs, `cuLaunchKernel`) between consecutive pieces.
fn piecewise_decode(h: &mut Host) {
    let mix = decode_kernels(3);
    for g in 0..81 {
        let d = 54_000 + (g % 3) as i64 * 1_000;
        let ks: Vec<(&str, i64)> = mix.iter().map(|k| (k.name.as_str(), d)).collect();
        h.graph_keyed(&format!("piece{g}"), &ks);
        if g < 80 {
            h.kernel_via(
                CallKind::DriverLaunch,
                "kernel_unified_attention_2d",
                39_000,
            );
        }
    }
}

const VLLM_WORKER_LOOP: &str = "vllm/v1/executor/multiproc_executor.py(596): worker_busy_loop";

/// The frame [`Scenario::VllmV1PythonStall`]'s host stalls in, and for how long.
const STALL_FRAME: &str = "vllm/v1/worker/gpu_model_runner.py(1733): _prepare_inputs";
const STALL_NS: i64 = 60_000_000;

/// vLLM V1 without annotation. Under nsys (no python frames, no NVTX) the same server's
/// steps can only come from the blocking `.tolist()` sync that ends each one, and the step
/// without GPU work leaves no trace at all. `stall`: decode 5 stalls in [`STALL_FRAME`].
fn vllm_v1_python(h: &mut Host, asyncs: bool, nsys: bool, stall: bool) {
    let (worker, runner) = if asyncs {
        (
            "vllm/v1/worker/gpu_worker.py(520): execute_model",
            "vllm/v1/worker/gpu_model_runner.py(2531): execute_model",
        )
    } else {
        (
            "vllm/v1/worker/gpu_worker.py(263): execute_model",
            "vllm/v1/worker/gpu_model_runner.py(1002): execute_model",
        )
    };
    h.open(SpanKind::Python, VLLM_WORKER_LOOP);
    // 1 prefill, 9 decodes, 1 step without GPU work.
    for i in 0..11 {
        h.idle(2_000_000);
        if !nsys {
            h.begin(meta(Some(worker), "python", "unknown"));
        } else if i < 10 {
            h.begin(meta(None, "sync", "unknown"));
        }
        h.open(SpanKind::Python, worker);
        h.open(SpanKind::Python, runner);
        if i < 10 {
            h.memcpy(1, 65_536);
            if stall && i == 5 {
                h.open(SpanKind::Python, STALL_FRAME);
                h.idle(STALL_NS);
                h.close();
            }
            if i == 0 {
                eager_kernels(h, 400, 210_000);
            } else {
                piecewise_decode(h);
            }
            if !asyncs {
                h.sampling();
                h.copy_and_sync();
            }
        }
        h.close();
        h.close();
        if asyncs && i < 10 {
            h.tail();
            h.idle(30_000);
            h.open(
                SpanKind::Python,
                "vllm/v1/worker/gpu_worker.py(497): sample_tokens",
            );
            h.sampling();
            h.memcpy(2, 256);
            h.call(CallKind::EventRecord, 2_000);
            h.sync(CallKind::EventSync);
            h.close();
        }
        h.end();
    }
    h.close();
}

/// vLLM ≥ 0.14 / 0.11.1–0.13 annotations: prefill, 7 full-graph decodes, one mixed step;
/// sampling after the span (the tail). A `capture_32_FULL` range with no GPU work precedes.
fn vllm_annotated(h: &mut Host, new_form: bool) {
    h.open(SpanKind::Python, VLLM_WORKER_LOOP);
    h.open(SpanKind::Marker, "capture_32_FULL");
    h.close();
    let decode = decode_kernels(200);
    let graph: Vec<(&str, i64)> = decode
        .iter()
        .map(|k| (k.name.as_str(), k.duration_ns))
        .collect();
    for i in 0..9 {
        h.idle(300_000);
        let (ctx, toks, gen) = match i {
            0 => (2, 4096, 0),
            8 => (1, 2048, 5),
            _ => (0, 0, 2),
        };
        let name = if new_form {
            // New requests vs cached ones: a decode step schedules only cached requests.
            format!("execute_new_{ctx}_cached_{gen}")
        } else if i == 8 {
            crate::synth::workload::vllm_execute_detailed(
                toks + gen,
                [ctx, toks, toks, toks * toks, toks * toks],
                [gen, gen, 5_000, gen, 5_000],
            )
        } else {
            crate::synth::workload::vllm_execute(ctx, toks, gen, gen)
        };
        let mut m = meta(Some(&name), "marker", comp_kind(ctx, gen));
        m.composition = Some(CompositionTruth {
            context_requests: ctx,
            context_tokens: (!new_form).then_some(toks),
            generation_requests: gen,
        });
        h.begin(m);
        h.open(SpanKind::Marker, &name);
        h.memcpy(1, 16_384);
        if ctx > 0 {
            eager_kernels(h, 120, 40_000 + 2_000 * ctx as i64);
        } else {
            h.graph(&graph);
        }
        h.close();
        h.tail();
        h.sampling();
        h.memcpy(2, 64);
        h.sync(CallKind::StreamSync);
        h.end();
    }
    h.close();
}

fn vllm_custom_scopes(h: &mut Host) {
    let graph: Vec<(String, i64)> = decode_kernels(160)
        .into_iter()
        .map(|k| (k.name, k.duration_ns))
        .collect();
    let graph: Vec<(&str, i64)> = graph.iter().map(|(n, d)| (n.as_str(), *d)).collect();
    for _ in 0..8 {
        h.idle(250_000);
        h.open(SpanKind::Marker, "gpu_model_runner: preprocess");
        h.close();
        h.begin(meta(
            Some("gpu_model_runner: forward"),
            "scheduler",
            "unknown",
        ));
        h.open(SpanKind::Marker, "gpu_model_runner: forward");
        h.graph(&graph);
        h.close();
        h.tail();
        h.open(SpanKind::Marker, "gpu_model_runner: sample");
        h.sampling();
        h.close();
        h.open(SpanKind::Marker, "gpu_model_runner: bookkeep");
        h.copy_and_sync();
        h.close();
        h.end();
    }
}

fn sglang_step(h: &mut Host) {
    let graph: Vec<(String, i64)> = decode_kernels(240)
        .into_iter()
        .map(|k| (k.name, k.duration_ns))
        .collect();
    let graph: Vec<(&str, i64)> = graph.iter().map(|(n, d)| (n.as_str(), *d)).collect();
    h.open(
        SpanKind::Python,
        "sglang/srt/managers/scheduler.py(1012): event_loop_normal",
    );
    for i in 0..10 {
        h.idle(200_000);
        let extend = i == 0 || i == 5;
        let name = if extend {
            crate::synth::workload::sglang_step("EXTEND", 4, Some(4096))
        } else {
            crate::synth::workload::sglang_step("DECODE", 4, None)
        };
        h.open(
            SpanKind::Python,
            "sglang/srt/managers/scheduler.py(2261): run_batch",
        );
        h.open(SpanKind::Marker, "scheduler.run_batch");
        h.open(
            SpanKind::Python,
            "sglang/srt/managers/tp_worker.py(361): forward_batch_generation",
        );
        let kind = if extend { "prefill" } else { "decode" };
        h.begin(meta(Some(&name), "marker", kind));
        h.open(SpanKind::Marker, &name);
        h.memcpy(1, 8_192);
        if extend {
            eager_kernels(h, 150, 30_000);
        } else {
            h.graph(&graph);
        }
        h.close();
        h.tail();
        h.sampling();
        h.close();
        h.close();
        h.close();
        h.memcpy(2, 32);
        h.sync(CallKind::StreamSync);
        h.end();
    }
    h.close();
}

fn sglang_python(h: &mut Host) {
    let graph: Vec<(String, i64)> = decode_kernels(240)
        .into_iter()
        .map(|k| (k.name, k.duration_ns))
        .collect();
    let graph: Vec<(&str, i64)> = graph.iter().map(|(n, d)| (n.as_str(), *d)).collect();
    let run_batch = "sglang/srt/managers/scheduler.py(1378): run_batch";
    h.open(
        SpanKind::Python,
        "sglang/srt/managers/scheduler.py(702): event_loop_normal",
    );
    for i in 0..10 {
        h.idle(180_000);
        h.open(
            SpanKind::Python,
            "sglang/srt/managers/scheduler.py(1030): get_next_batch_to_run",
        );
        h.close();
        h.begin(meta(Some(run_batch), "python", "unknown"));
        h.open(SpanKind::Python, run_batch);
        h.open(
            SpanKind::Python,
            "sglang/srt/managers/tp_worker.py(212): forward_batch_generation",
        );
        h.memcpy(1, 8_192);
        if i % 5 == 0 {
            eager_kernels(h, 150, 30_000);
        } else {
            h.graph(&graph);
        }
        h.sampling();
        h.close();
        h.close();
        h.tail();
        h.open(
            SpanKind::Python,
            "sglang/srt/managers/scheduler.py(1501): process_batch_result",
        );
        h.copy_and_sync();
        h.close();
        h.end();
    }
    h.close();
}

fn sglang_nsys_bare(h: &mut Host) {
    let graph: Vec<(String, i64)> = decode_kernels(240)
        .into_iter()
        .map(|k| (k.name, k.duration_ns))
        .collect();
    let graph: Vec<(&str, i64)> = graph.iter().map(|(n, d)| (n.as_str(), *d)).collect();
    // 4 extend steps at a stable period, then 12 decodes (one full graph each, no sync).
    for i in 0..16 {
        if i < 4 {
            h.idle(100_000);
            h.begin(meta(None, "sync", "unknown"));
            h.memcpy(1, 8_192);
            eager_kernels(h, 100, 30_000);
            h.copy_and_sync();
        } else {
            // Decodes block on no CUDA call: the host is paced by the scheduler (it polls
            // the previous step's copy), so each graph starts after the last one drained
            // and the GPU idles ~150 µs between them.
            h.idle(1_700_000);
            h.begin(meta(None, "graphs", "unknown"));
            h.graph(&graph);
        }
        h.end();
    }
}

fn sglang_scheduler(h: &mut Host) {
    let graph: Vec<(String, i64)> = decode_kernels(240)
        .into_iter()
        .map(|k| (k.name, k.duration_ns))
        .collect();
    let graph: Vec<(&str, i64)> = graph.iter().map(|(n, d)| (n.as_str(), *d)).collect();
    for i in 0..10 {
        h.idle(120_000);
        h.open(SpanKind::Marker, "scheduler.recv_requests");
        h.close();
        h.open(SpanKind::Marker, "scheduler.get_next_batch_to_run");
        h.close();
        h.begin(meta(Some("scheduler.run_batch"), "scheduler", "unknown"));
        h.open(SpanKind::Marker, "scheduler.run_batch");
        h.memcpy(1, 8_192);
        if i == 0 {
            eager_kernels(h, 100, 30_000);
        } else {
            h.graph(&graph);
        }
        h.sampling();
        h.close();
        h.tail();
        h.open(SpanKind::Marker, "scheduler.process_batch_result");
        h.copy_and_sync();
        h.close();
        h.end();
    }
}

fn trtllm(h: &mut Host, old: bool) {
    // Durations of an 8B model at batch 8 (a decode reads ~16 GB of weights: ≈ 6.6 ms
    // here, above its memory floor on an H100, as a real step is).
    let graph: Vec<(String, i64)> = decode_kernels(224)
        .into_iter()
        .map(|k| (k.name, k.duration_ns * 5))
        .collect();
    let graph: Vec<(&str, i64)> = graph.iter().map(|(n, d)| (n.as_str(), *d)).collect();
    // iterations 100..=111: a context step, decodes, a mixed one.
    for i in 0..12u64 {
        let iter = 100 + i;
        h.idle(80_000);
        let (ctx, toks, gen) = match i {
            0 => (4, 2048, 0),
            6 => (1, 512, 7),
            _ => (0, 0, 8),
        };
        let name = if !old {
            format!("[Executor] _forward_step {iter}: {ctx} ctx reqs, {toks} ctx tokens, {gen} gen reqs")
        } else if i % 2 == 0 {
            format!("[Executor] _forward_step {iter}: {ctx} ctx reqs, {gen} gen reqs")
        } else {
            format!("_forward_step: {ctx} ctx reqs, {gen} gen reqs")
        };
        let mut m = meta(Some(&name), "marker", comp_kind(ctx, gen));
        m.composition = Some(CompositionTruth {
            context_requests: ctx,
            context_tokens: (!old).then_some(toks),
            generation_requests: gen,
        });
        h.begin(m);
        h.open_in(SpanKind::Marker, &name, Some("TensorRT-LLM"));
        h.memcpy(1, 4_096);
        if ctx > 0 {
            eager_kernels(h, 96, 400_000);
        } else {
            h.graph(&graph);
        }
        h.sampling();
        h.close();
        // _update_requests: the sampled tokens come back after the step's range.
        h.tail();
        h.memcpy(2, 64);
        h.sync(CallKind::EventSync);
        h.end();
    }
}

fn sync_only(h: &mut Host) {
    for i in 0..10 {
        h.idle(90_000);
        h.begin(meta(None, "sync", "unknown"));
        h.memcpy(1, 2_048);
        eager_kernels(h, 50 + (i % 2) * 10, 20_000);
        h.copy_and_sync();
        h.end();
    }
}

fn markers_contradict(h: &mut Host) {
    let graph: Vec<(String, i64)> = decode_kernels(200)
        .into_iter()
        .map(|k| (k.name, k.duration_ns))
        .collect();
    let graph: Vec<(&str, i64)> = graph.iter().map(|(n, d)| (n.as_str(), *d)).collect();
    h.open(
        SpanKind::Marker,
        &crate::synth::workload::vllm_execute(0, 0, 8, 8),
    );
    for _ in 0..20 {
        h.idle(45_000_000);
        let name = crate::synth::workload::sglang_step("DECODE", 8, None);
        let mut m = meta(Some(&name), "marker", "decode");
        m.composition = Some(CompositionTruth {
            context_requests: 0,
            context_tokens: None,
            generation_requests: 8,
        });
        h.begin(m);
        h.open(SpanKind::Marker, &name);
        h.memcpy(1, 4_096);
        h.graph(&graph);
        h.close();
        h.tail();
        h.sampling();
        h.memcpy(2, 64);
        h.sync(CallKind::StreamSync);
        h.end();
    }
    h.close();
}

pub(super) fn schedule(scn: Scenario, rank: u32, format: Format) -> Host {
    // Python/cpu_op noise exists only in torch traces; the big vLLM one carries it.
    let noise = format == Format::Kineto
        && matches!(
            scn,
            Scenario::VllmV1Python
                | Scenario::VllmV1PythonStall
                | Scenario::VllmV1PythonAsync
                | Scenario::SglangStep
                | Scenario::SglangPython
        );
    let mut h = Host::new(rank, noise);
    match scn {
        Scenario::VllmV1Python => vllm_v1_python(&mut h, false, format == Format::Nsys, false),
        Scenario::VllmV1PythonStall => vllm_v1_python(&mut h, false, false, true),
        Scenario::VllmV1PythonAsync => vllm_v1_python(&mut h, true, false, false),
        Scenario::VllmExecuteContext => vllm_annotated(&mut h, false),
        Scenario::VllmExecuteNew => vllm_annotated(&mut h, true),
        Scenario::VllmCustomScopes => vllm_custom_scopes(&mut h),
        Scenario::SglangStep => sglang_step(&mut h),
        Scenario::SglangPython => sglang_python(&mut h),
        Scenario::SglangNsysBare => sglang_nsys_bare(&mut h),
        Scenario::SglangScheduler => sglang_scheduler(&mut h),
        Scenario::Trtllm => trtllm(&mut h, false),
        Scenario::TrtllmOld => trtllm(&mut h, true),
        Scenario::ProfilerStep => profiler_step(&mut h),
        Scenario::EmitNvtx => emit_nvtx(&mut h),
        Scenario::SyncOnly => sync_only(&mut h),
        Scenario::PytorchTrain => pytorch_train(&mut h, format == Format::Nsys),
        Scenario::PytorchTrainUnstable => pytorch_train_unstable(&mut h),
        Scenario::MarkersContradict => markers_contradict(&mut h),
    }
    h
}
