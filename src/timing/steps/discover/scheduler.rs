//! Scheduler scopes. The step span is the scope that runs the model: SGLang's
//! `scheduler.run_batch` (NVTX under `SGLANG_ENABLE_NVTX_SCHEDULER=1`, an annotation in
//! torch traces), vLLM's `gpu_model_runner: forward` (`VLLM_CUSTOM_SCOPES_FOR_PROFILING=1`
//! or `VLLM_NVTX_SCOPES_FOR_PROFILING=1`; 0.11.0 spells it `Forward`, accepted only next
//! to its sibling `Preprocess`). vLLM's `… : sample` scope follows `forward` on the same
//! thread, so sampling lands in the step's tail.

use crate::exit::Result;
use crate::timing::stepname::strip_emit_nvtx;

use super::{host_ranges, outermost, Found, Index};
use crate::timing::steps::FoundBy;

pub fn find(ix: &Index<'_>) -> Result<Option<Found>> {
    let t = ix.trace;
    let old_vllm = t.strings.iter().any(|s| s == "Preprocess");
    let c = host_ranges(ix, |n| {
        let n = strip_emit_nvtx(n);
        n == "scheduler.run_batch"
            || n == "gpu_model_runner: forward"
            || (old_vllm && n == "Forward")
    })?;
    if c.is_empty() {
        return Ok(None);
    }
    Ok(Some(Found::spans(
        "scheduler",
        FoundBy::Scheduler,
        outermost(c),
    )))
}
