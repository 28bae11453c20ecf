//! What a heuristic family's steps lack, said in the report: the engine the trace's names
//! suggest, and the engine flag or version that would make the steps exact.

use super::{Found, FoundBy, Index};

/// What makes steps exact, for captures where stepgate had to guess.
fn exact_hint(ix: &Index<'_>, by: FoundBy, engine: Option<&str>) -> Option<String> {
    let nsys = ix.trace.meta.format.capabilities().marker_api.is_some();
    let vllm = if nsys {
        "vLLM ≥ 0.13 with --profiler-config.profiler=cuda (0.12: VLLM_TORCH_CUDA_PROFILE=1) writes execute_… NVTX step ranges"
    } else {
        "vLLM ≥ 0.14 with the torch profiler writes execute_… step annotations (0.11.1–0.13: execute_new_N_cached_M)"
    };
    let sglang = if nsys {
        "SGLang: SGLANG_ENABLE_NVTX_SCHEDULER=1 writes scheduler.run_batch NVTX ranges (its step[…] span is never NVTX)"
    } else {
        "SGLang ≥ 0.5.15 with the torch profiler writes step[…] annotations"
    };
    match (by, engine) {
        (FoundBy::Marker | FoundBy::Regex, _) => None,
        (FoundBy::Recurring, _) => Some(
            "plain PyTorch: torch.profiler.profile(schedule=torch.profiler.schedule(…)) with prof.step() once per iteration writes ProfilerStep#N, one exact step per iteration".to_owned(),
        ),
        (FoundBy::Scheduler, Some("sglang")) => Some(if nsys {
            "SGLang's step[…] span (batch composition) exists only in torch-profiler captures (SGLang ≥ 0.5.15)".to_owned()
        } else {
            "SGLang ≥ 0.5.15 writes step[…] annotations with the batch composition".to_owned()
        }),
        (_, Some("vllm")) => Some(vllm.to_owned()),
        (_, Some("sglang")) => Some(sglang.to_owned()),
        _ => Some(format!(
            "{vllm}; {sglang}; TensorRT-LLM writes _forward_step NVTX ranges under nsys; plain PyTorch: a profiler schedule gives ProfilerStep#N"
        )),
    }
}

/// Add the exact-steps hint for the engine the names suggest.
pub(super) fn hinted(ix: &Index<'_>, mut f: Found) -> Found {
    let engine = engine_of(ix);
    f.hint = exact_hint(ix, f.found_by, engine);
    f
}

/// Which engine the trace's names suggest (process names and range names).
fn engine_of(ix: &Index<'_>) -> Option<&'static str> {
    let t = ix.trace;
    let mut sglang = false;
    let mut vllm = false;
    for (_, n) in &t.meta.process_names {
        sglang |= n.contains("sglang");
        vllm |= n.contains("vllm") || n.contains("VLLM");
    }
    if let Ok(r) = t.ranges_view() {
        for &id in r.name_id {
            let n = t.name(id);
            sglang |= n.starts_with("scheduler.") || n.contains("sglang/");
            vllm |= n.starts_with("gpu_model_runner") || n.contains("vllm/");
        }
    }
    match (vllm, sglang) {
        (true, false) => Some("vllm"),
        (false, true) => Some("sglang"),
        _ => None,
    }
}
