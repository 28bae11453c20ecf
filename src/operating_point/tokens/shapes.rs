//! Tokens and requests from Kineto's recorded operator shapes (`record_shapes`), where
//! no launch grid counts them: the slot mapping of vLLM's KV-cache write operators and
//! the sampler's logits.

use crate::categories::families::KV_WRITE_OPS;
use crate::exit::Result;
use crate::trace::Trace;
use crate::wire::steps::Step;

use super::super::batch;
use super::{most_often, Count};

/// The slot-mapping input of a KV-cache write operator, by the operator's exact name
/// ([`KV_WRITE_OPS`]: vLLM's registrations; read from Kineto's `record_shapes` where the
/// grid is not recorded).
pub(super) fn kv_write_op(op: &str) -> Option<usize> {
    KV_WRITE_OPS.iter().find(|(n, _)| *n == op).map(|&(_, i)| i)
}

/// The first dimension of input `n` of a compact `[[a,…],[b,…],…]` dims text (`[]` and
/// scalars have none).
pub(super) fn nth_first_dim(dims: &str, n: usize) -> Option<u64> {
    let inner = dims.strip_prefix('[')?.strip_suffix(']')?;
    let (mut depth, mut start, mut k) = (0usize, 0usize, 0usize);
    for (i, c) in inner.char_indices() {
        match c {
            '[' => depth += 1,
            ']' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                if k == n {
                    return first_of(&inner[start..i]);
                }
                k += 1;
                start = i + 1;
            }
            _ => {}
        }
    }
    (k == n).then(|| first_of(&inner[start..])).flatten()
}

/// The first whole number of one input's `[a,b,…]`.
fn first_of(input: &str) -> Option<u64> {
    let r = input.strip_prefix('[')?;
    let end = r.find([',', ']'])?;
    r[..end].parse().ok()
}

/// One recorded operator whose input shape counts something: where it ran on the host,
/// the count, the operator.
pub(super) struct Shaped<'t> {
    pid: i64,
    tid: i64,
    start: i64,
    value: u64,
    op: &'t str,
}

/// The recorded operators `pick` counts (`pick(op, dims)`), in (pid, start) order.
fn shaped_rows<'t>(
    trace: &'t Trace,
    pick: impl Fn(&str, &str) -> Option<u64>,
) -> Result<Vec<Shaped<'t>>> {
    let v = trace.shapes_view()?;
    let mut rows: Vec<Shaped<'t>> = (0..v.start_ns.len())
        .filter_map(|i| {
            let op = trace.name(v.name_id[i]);
            let value = pick(op, trace.name(v.dims_id[i])).filter(|&n| n > 0)?;
            Some(Shaped {
                pid: i64::from(v.pid[i]),
                tid: v.tid[i],
                start: v.start_ns[i],
                value,
                op,
            })
        })
        .collect();
    rows.sort_by_key(|r| (r.pid, r.start));
    Ok(rows)
}

/// The tokens each recorded KV-cache write operator wrote: its slot mapping's length.
pub(super) fn write_shapes(trace: &Trace) -> Result<Vec<Shaped<'_>>> {
    shaped_rows(trace, |op, dims| nth_first_dim(dims, kv_write_op(op)?))
}

/// The sampler's `aten::argmax` over the `[requests, vocab]` logits (vLLM V1 samples
/// every request's next token, greedy or by `probs.div_(q).argmax(-1)`): its first
/// dimension is the requests of the step, prefill and decode alike.
pub(super) fn sampler_shapes(trace: &Trace) -> Result<Vec<Shaped<'_>>> {
    shaped_rows(trace, |op, dims| {
        if op != "aten::argmax" {
            return None;
        }
        let first = dims.strip_prefix("[[")?.split(']').next()?;
        (first.split(',').count() == 2)
            .then(|| first_of(&format!("[{first}]")))
            .flatten()
    })
}

/// The recorded operators of `rows` inside the step's host range, on its thread.
fn in_step<'r, 't>(step: &Step, rows: &'r [Shaped<'t>]) -> Vec<&'r Shaped<'t>> {
    let (Some(cs), Some(ce)) = (step.cpu_start_ns, step.cpu_end_ns) else {
        return Vec::new();
    };
    batch::window(rows, |r| (r.pid, r.start), step.pid, cs, ce)
        .iter()
        .filter(|r| step.tid.is_none_or(|t| t == r.tid))
        .collect()
}

/// The step's token count from the recorded shapes of its KV-cache write operators.
pub(super) fn tokens_from_shapes(step: &Step, rows: &[Shaped<'_>]) -> Option<Count> {
    let mine = in_step(step, rows);
    let (v, n, all, others) = most_often(mine.iter().map(|r| r.value))?;
    let op = mine.first().map_or("", |r| r.op);
    Some(Count {
        value: v,
        evidence: format!(
            "{v} token(s) written by {op} (its slot_mapping input is [{v}] in the recorded shapes; {n} of {all} calls){others}"
        ),
    })
}

/// The step's requests from the sampler's recorded logits shape.
pub(super) fn requests_from_sampler(step: &Step, rows: &[Shaped<'_>]) -> Option<Count> {
    let mine = in_step(step, rows);
    let (v, n, all, others) = most_often(mine.iter().map(|r| r.value))?;
    Some(Count {
        value: v,
        evidence: format!(
            "{v} request(s) sampled (aten::argmax over [{v}, vocab] logits in the recorded shapes; {n} of {all} calls){others}"
        ),
    })
}
