//! Engine step markers: vLLM `execute_…`, SGLang `step[…]`, TensorRT-LLM `_forward_step`
//! (NVTX or annotation, emit_nvtx suffixes ignored), and PyTorch `ProfilerStep#N` only
//! when no engine marker is present (a profiler step may wrap several engine steps).
//! A marker that encloses several others on its thread contradicts them: the inner ones
//! are the steps, and a warning says so.

use crate::exit::Result;
use crate::timing::stepname::{self, Marker};

use super::{host_ranges, outermost, Candidate, Found, Index};
use crate::timing::steps::StepOptions;
use crate::wire::steps::FoundBy;

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
    let (cands, enclosing) = drop_enclosing(ix, cands);
    let mut f = Found::spans(FoundBy::Marker, outermost(cands));
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
    warnings.extend(enclosing);
    f.warnings = warnings;
    Ok(Some(f))
}

/// Markers that enclose two or more other markers on their thread contradict them (one
/// 1 s vLLM `execute_…` around 20 SGLang `step[…]`: one step cannot hold twenty): they
/// are dropped, the markers inside are the steps, and the returned warning says so. A
/// marker around exactly one other (TraceLens-patched SGLang wraps each `step[…]` in an
/// `execute_…`) stays, and `outermost` lends it the inner name. Counted through dropped
/// levels: a marker around one that is dropped for holding several holds several too.
fn drop_enclosing(ix: &Index<'_>, cands: Vec<Candidate>) -> (Vec<Candidate>, Option<String>) {
    let mut order: Vec<usize> = (0..cands.len()).collect();
    order.sort_by_key(|&i| {
        let c = &cands[i];
        (c.pid, c.tid, c.start, std::cmp::Reverse(c.end))
    });
    let contains = |o: &Candidate, c: &Candidate| {
        (o.pid, o.tid) == (c.pid, c.tid) && c.start >= o.start && c.end <= o.end
    };
    // Per candidate: the steps inside it (each kept marker one, a dropped one its own).
    let mut inner = vec![0usize; cands.len()];
    let close = |x: usize, stack: &[usize], inner: &mut [usize]| {
        if let Some(&parent) = stack.last() {
            inner[parent] += inner[x].max(1);
        }
    };
    let mut stack: Vec<usize> = Vec::new();
    for &i in &order {
        while let Some(&top) = stack.last() {
            if contains(&cands[top], &cands[i]) {
                break;
            }
            stack.pop();
            close(top, &stack, &mut inner);
        }
        stack.push(i);
    }
    while let Some(top) = stack.pop() {
        close(top, &stack, &mut inner);
    }
    let dropped: Vec<usize> = order.iter().copied().filter(|&i| inner[i] >= 2).collect();
    let Some(&first) = dropped.first() else {
        return (cands, None);
    };
    let name = cands[first].name_id.map_or("", |id| ix.trace.name(id));
    let warning = format!(
        "{} step marker(s) enclose several other step markers on their thread ({name:?} encloses {}): a step cannot hold other steps, so the enclosing marker(s) are dropped and the markers inside are the steps",
        dropped.len(),
        inner[first]
    );
    let kept = cands
        .into_iter()
        .zip(inner)
        .filter(|(_, n)| *n < 2)
        .map(|(c, _)| c)
        .collect();
    (kept, Some(warning))
}
