//! Engine step markers: vLLM `execute_…`, SGLang `step[…]`, TensorRT-LLM `_forward_step`
//! (NVTX or annotation, emit_nvtx suffixes ignored), and PyTorch `ProfilerStep#N` only
//! when no engine marker is present (a profiler step may wrap several engine steps).

use crate::exit::Result;
use crate::timing::stepname::{self, Marker};

use super::{host_ranges, outermost, Found, Index};
use crate::timing::steps::{FoundBy, StepMethod, StepOptions};

/// How many steps have context requests with no context-token count (none: `None`).
fn untokened(f: &Found) -> Option<usize> {
    let super::Items::Spans(c) = &f.items else {
        return None;
    };
    let n = c
        .iter()
        .filter_map(|c| c.parsed.as_ref())
        .filter(|p| {
            let x = &p.composition.context;
            x.requests.is_some_and(|r| r > 0) && x.sq.is_none()
        })
        .count();
    (n > 0).then_some(n)
}

/// The range names an nsys read keeps for markers (emit_nvtx suffixes follow the name).
pub(super) const RANGES: &str =
    r"^(execute_|step\[|\[Executor\] _forward_step|_forward_step|ProfilerStep#)";

pub(super) fn find(ix: &Index<'_>, _: &StepOptions) -> Result<Option<Found>> {
    let mut warnings = Vec::new();
    let mut engine = host_ranges(ix, |n| {
        !n.starts_with("ProfilerStep#")
            && stepname::is_engine_step_name(stepname::strip_emit_nvtx(n))
    })?;
    engine.retain_mut(
        |c| match c.name_id.map(|id| stepname::marker(ix.trace.name(id))) {
            Some(Marker::Step(p)) => {
                c.parsed = Some(*p);
                true
            }
            Some(Marker::Refused(why)) => {
                if !warnings.contains(&why) {
                    warnings.push(why);
                }
                true
            }
            _ => false,
        },
    );
    let cands = if engine.is_empty() {
        let mut p = host_ranges(ix, |n| {
            n.starts_with("ProfilerStep#") && stepname::parse(n).is_some()
        })?;
        for c in &mut p {
            c.parsed = c.name_id.and_then(|id| stepname::parse(ix.trace.name(id)));
            c.all_threads = true;
        }
        p
    } else {
        engine
    };
    if cands.is_empty() {
        return Ok(None);
    }
    let mut f = Found::spans(StepMethod::Engine, FoundBy::Marker, outermost(cands));
    if let Some(n) = untokened(&f) {
        f.notes.push(format!(
            "{n} step(s) name context (prefill) requests but not their token count (TensorRT-LLM's older `_forward_step N: n ctx reqs, m gen reqs`, vLLM `execute_new_N_cached_M`): no floor can be priced for them (a prefill's floor scales with its tokens; --context is the decode KV length); TensorRT-LLM with `ctx tokens` in the name and vLLM ≥ 0.14 `execute_context_N(T)` carry it"
        ));
    }
    if !warnings.is_empty() {
        let n = warnings.len();
        warnings.truncate(5);
        if n > 5 {
            warnings.push(format!("… and {} more step name(s) refused", n - 5));
        }
    }
    f.warnings = warnings;
    Ok(Some(f))
}
