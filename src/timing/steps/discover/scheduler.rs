//! Scheduler scopes. The step span is the scope that runs the model: SGLang's
//! `scheduler.run_batch` (NVTX under `SGLANG_ENABLE_NVTX_SCHEDULER=1`, an annotation in
//! torch traces), vLLM's `gpu_model_runner: forward` (`VLLM_CUSTOM_SCOPES_FOR_PROFILING=1`
//! or `VLLM_NVTX_SCOPES_FOR_PROFILING=1`; 0.11.0 spells it `Forward`, accepted only next
//! to its sibling `Preprocess`). vLLM's `… : sample` scope follows `forward` on the same
//! thread, so sampling lands in the step's tail.

use crate::exit::Result;
use crate::timing::stepname::strip_emit_nvtx;

use super::{host_ranges, outermost, Found, Index};
use crate::timing::steps::StepOptions;
use crate::wire::steps::FoundBy;

/// The range names an nsys read keeps for scheduler scopes (vLLM 0.11.0 `Preprocess` marks
/// `Forward`).
pub(super) const RANGES: &str =
    r"^(scheduler\.run_batch|gpu_model_runner: forward|Forward|Preprocess)(, |$)";

pub(super) fn find(ix: &Index<'_>, _: &StepOptions) -> Result<Option<Found>> {
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
    let c = outermost(c);
    let mut sglang = false;
    let mut vllm = false;
    for x in &c {
        match x.name_id.map(|id| strip_emit_nvtx(t.name(id))) {
            Some("scheduler.run_batch") => sglang = true,
            Some(_) => vllm = true,
            None => {}
        }
    }
    let mut f = Found::spans(FoundBy::Scheduler, c);
    f.detail = match (sglang, vllm) {
        (true, false) => Some("SGLang scheduler.run_batch"),
        (false, true) => Some("vLLM custom profiling scopes"),
        _ => None,
    };
    Ok(Some(f))
}
