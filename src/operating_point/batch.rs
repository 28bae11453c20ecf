//! The batch of decode steps whose names do not state it, from what the capture recorded
//! of the step itself (docs/method.md §3.3): the token count of its linear layers in the
//! Kineto input shapes (`record_shapes`), else the sequence count in the launch grid of a
//! decode-attention kernel whose grid layout is public. A decode runs one query token per
//! request, so its token count is its batch. Each value is a guess: it goes into
//! `batch_guess` with its evidence in one line, never into the step's composition.

use std::collections::HashMap;

use crate::categories::families::KernelFamily;
use crate::exit::Result;
use crate::limits::MAX_BATCH;
use crate::trace::{OpKind, Trace};
use crate::wire::steps::{Step, StepKind};

// Decode-attention kernels whose grid carries the sequence count, and on which axis, as
// their launchers in the engines' sources write them (the families' rows cite them):
// - x: vLLM `csrc/rocm/attention.cu` (also aiter) `dim3 grid(num_seqs, max_num_partitions,
//   num_kv_heads)` for `paged_attention_ll4mi_QKV_mfma{4,16}_kernel`; SGLang
//   `triton_ops/decode_attention.py` `grid = (batch, head_num or head groups,
//   MAX_KV_SPLITS)` for `_fwd_kernel_stage1` / `_fwd_grouped_kernel_stage1`, `(batch,
//   head_num)` for `_fwd_kernel_stage2` ([`KernelFamily::DecodeSeqsGridX`]);
// - y: vLLM `csrc/attention/paged_attention_v1.cu` / `_v2.cu` `dim3 grid(num_heads,
//   num_seqs, max_num_partitions)`, the v2 reduce `dim3 reduce_grid(num_heads, num_seqs)`,
//   and the ll4mi reduce kernel's `(num_heads, num_seqs)` ([`KernelFamily::DecodeSeqsGridY`]).
//
// FlashInfer's BatchDecode pads its grid's batch when it splits the KV, and FlashAttention's
// split-KV grid folds batch and heads together: neither is read.

/// Operators whose first input is the step's `[tokens, …]` activation: the linear layers
/// (`aten::linear` and the `aten::mm` / `aten::matmul` it lowers to; not `aten::addmm`,
/// whose first input is the bias), vLLM's attention op (`[tokens, heads, head_dim]`) and
/// the greedy sampler's `aten::argmax` over the `[requests, vocab]` logits.
fn token_major(op: &str) -> bool {
    matches!(
        op,
        "aten::linear" | "aten::mm" | "aten::matmul" | "aten::argmax"
    ) || op.starts_with("vllm::unified_attention")
}

/// The axis of `name`'s grid that counts sequences, if its layout is known.
pub(super) fn seqs_axis(name: &str) -> Option<usize> {
    if KernelFamily::DecodeSeqsGridX.matches(name) {
        Some(0)
    } else if KernelFamily::DecodeSeqsGridY.matches(name) {
        Some(1)
    } else {
        None
    }
}

/// A decode step whose name counts no requests: the steps a batch guess is for.
pub(crate) fn wants_batch(step: &Step) -> bool {
    step.kind_label().kind == StepKind::Decode
        && !step
            .composition
            .as_ref()
            .is_some_and(|c| c.counts_requests())
}

/// "; also seen: 8 ×3, 16 ×1": the values after a tally's first, at most three.
pub(super) fn also_seen(t: &[(u64, usize)]) -> String {
    if t.len() < 2 {
        return String::new();
    }
    let rest: Vec<String> = t[1..]
        .iter()
        .take(3)
        .map(|(v, k)| format!("{v} ×{k}"))
        .collect();
    format!("; also seen: {}", rest.join(", "))
}

/// The most frequent value and how often each was seen, most frequent first (ties: the
/// larger value first, so a padded count never loses to a stray one).
pub(super) fn tally(values: impl Iterator<Item = u64>) -> Vec<(u64, usize)> {
    let mut by: HashMap<u64, usize> = HashMap::new();
    for v in values {
        *by.entry(v).or_default() += 1;
    }
    let mut t: Vec<(u64, usize)> = by.into_iter().collect();
    t.sort_unstable_by(|a, b| b.1.cmp(&a.1).then(b.0.cmp(&a.0)));
    t
}

/// One token-major operator's shape: where it ran, its first dimension, its name and dims.
struct ShapeRow<'t> {
    pid: i64,
    tid: i64,
    start: i64,
    first_dim: u64,
    op: &'t str,
    dims: &'t str,
}

/// The token-major shape rows of the trace, in (pid, start) order, and how many token-major
/// rows had a first dimension the reader refused (a fraction, an exponent, beyond
/// 2^31 − 1), with one of them.
fn shape_rows(trace: &Trace) -> Result<(Vec<ShapeRow<'_>>, Refused<'_>)> {
    let v = trace.shapes_view()?;
    let mut refused = Refused::default();
    let mut rows: Vec<ShapeRow<'_>> = (0..v.start_ns.len())
        .filter_map(|i| {
            let op = trace.name(v.name_id[i]);
            if !token_major(op) {
                return None;
            }
            let dims = trace.name(v.dims_id[i]);
            if v.first_dim[i] < 0 && has_first_dim(dims) {
                refused.n += 1;
                refused.example.get_or_insert((op, dims));
                return None;
            }
            let m = u64::try_from(v.first_dim[i]).ok().filter(|&m| m > 0)?;
            // The sampler's argmax counts requests only over 2-D logits.
            if op == "aten::argmax" && !is_2d_first(dims) {
                return None;
            }
            Some(ShapeRow {
                pid: i64::from(v.pid[i]),
                tid: v.tid[i],
                start: v.start_ns[i],
                first_dim: m,
                op,
                dims,
            })
        })
        .collect();
    rows.sort_by_key(|r| (r.pid, r.start));
    Ok((rows, refused))
}

/// Token-major shapes whose first dimension was refused as a count.
#[derive(Default)]
struct Refused<'t> {
    n: usize,
    example: Option<(&'t str, &'t str)>,
}

impl Refused<'_> {
    /// The warning for the report, when any was refused: the value and where it came from.
    fn warning(&self) -> Option<String> {
        let (op, dims) = self.example?;
        let dims: String = if dims.chars().count() > 80 {
            dims.chars().take(80).chain("…".chars()).collect()
        } else {
            dims.to_owned()
        };
        Some(format!(
            "{} input shape(s) of token-major operators ignored as batch evidence: the first \
             dimension is not a whole number below 2^31 (e.g. {op} with Input Dims {dims}, \
             from the trace's record_shapes args)",
            self.n
        ))
    }
}

/// Whether the compact dims text's first input has a first dimension at all (`[[x…`, not
/// `[[]` or a scalar): a -1 first dimension then means the reader refused it.
fn has_first_dim(dims: &str) -> bool {
    dims.strip_prefix("[[")
        .is_some_and(|r| !r.is_empty() && !r.starts_with(']'))
}

/// Whether the compact dims text's first input has exactly two dimensions (`[[a,b],…`).
fn is_2d_first(dims: &str) -> bool {
    dims.strip_prefix("[[")
        .and_then(|r| r.split(']').next())
        .is_some_and(|first| first.split(',').count() == 2)
}

/// One kernel launch whose grid counts something (sequences, tokens, keys): where it
/// ran, the count, the kernel's name.
pub(super) struct Counted<'t> {
    pub(super) device: i64,
    pub(super) pid: i64,
    pub(super) start: i64,
    pub(super) value: u64,
    pub(super) name: &'t str,
}

/// The kernel launches whose name `select` picks (looked up once per interned name:
/// millions of rows, few names), each with `count(picked, grid)` where that is non-zero,
/// in (device, start) order. Empty when the trace carries no launch geometry.
pub(super) fn counted_launches<'t, S: Copy>(
    trace: &'t Trace,
    select: impl Fn(&str) -> Option<S>,
    count: impl Fn(S, [u32; 3]) -> u64,
) -> Result<Vec<Counted<'t>>> {
    let Some(g) = trace.geometry_view()? else {
        return Ok(Vec::new());
    };
    let o = trace.ops_view()?;
    let picked: Vec<Option<S>> = trace.strings.iter().map(|n| select(n)).collect();
    let mut rows = Vec::new();
    for i in 0..o.start_ns.len() {
        let Some(&Some(p)) = picked.get(o.name_id[i] as usize) else {
            continue;
        };
        if OpKind::from_u32(o.kind[i]) != OpKind::Kernel {
            continue;
        }
        let value = count(p, g.launch(i).grid);
        if value > 0 {
            rows.push(Counted {
                device: i64::from(o.device[i]),
                pid: i64::from(o.pid[i]),
                start: o.start_ns[i],
                value,
                name: trace.name(o.name_id[i]),
            });
        }
    }
    rows.sort_by_key(|r| (r.device, r.start));
    Ok(rows)
}

/// The decode-attention kernels with a known grid layout and their sequences.
pub(super) fn grid_rows(trace: &Trace) -> Result<Vec<Counted<'_>>> {
    counted_launches(trace, seqs_axis, |axis, grid| u64::from(grid[axis]))
}

/// The rows whose key `(a, t)` lies in `(a, [from, to])`, `rows` sorted by that key.
pub(super) fn window<T>(
    rows: &[T],
    key: impl Fn(&T) -> (i64, i64),
    a: i64,
    from: i64,
    to: i64,
) -> &[T] {
    let lo = rows.partition_point(|r| key(r) < (a, from));
    let hi = rows.partition_point(|r| key(r) <= (a, to));
    &rows[lo..hi.max(lo)]
}

/// A short name for a kernel in one line of evidence.
pub(super) fn short(name: &str) -> &str {
    let n = name.strip_prefix("void ").unwrap_or(name);
    let end = n.find(['<', '(']).unwrap_or(n.len());
    n[..end].rsplit("::").next().unwrap_or(n)
}

/// From the shapes: the step's token count, with its evidence.
fn from_shapes(step: &Step, rows: &[ShapeRow<'_>]) -> Option<(u64, String)> {
    let (Some(cs), Some(ce)) = (step.cpu_start_ns, step.cpu_end_ns) else {
        return None;
    };
    let mine: Vec<&ShapeRow<'_>> = window(rows, |r| (r.pid, r.start), step.pid, cs, ce)
        .iter()
        .filter(|r| step.tid.is_none_or(|t| t == r.tid))
        .collect();
    let t = tally(mine.iter().map(|r| r.first_dim));
    let &(m, n) = t.first()?;
    let eg = mine.iter().find(|r| r.first_dim == m)?;
    let others = also_seen(&t);
    Some((
        m,
        format!(
            "{m} in the step's input shapes: first input {} of {} ({n} of {} token-major operators; a decode runs one token per request){others}",
            first_input(eg.dims),
            eg.op,
            mine.len()
        ),
    ))
}

/// The first input's dimensions of a compact dims text (`[32,2880]`).
fn first_input(dims: &str) -> &str {
    dims.strip_prefix('[')
        .and_then(|r| r.find(']').map(|e| &r[..=e]))
        .unwrap_or(dims)
}

/// From the grid: the step's sequence count, with its evidence. Kernels that disagree
/// leave it unknown (a fork that folds the grid differently must not be read as batch).
pub(super) fn from_grid(step: &Step, rows: &[Counted<'_>]) -> Option<(u64, String)> {
    let (Some(dev), Some(gs), Some(ge)) = (step.device, step.gpu_start_ns, step.gpu_end_ns) else {
        return None;
    };
    let mine: Vec<&Counted<'_>> = window(rows, |r| (r.device, r.start), dev, gs, ge)
        .iter()
        .filter(|r| r.pid == step.pid)
        .collect();
    let t = tally(mine.iter().map(|r| r.value));
    match t.as_slice() {
        [] => None,
        [(s, n)] => {
            let eg = mine[0].name;
            Some((
                *s,
                format!(
                    "{s} sequences in the launch grid of {} ({n} launches; inside a CUDA graph, the captured batch size, which may be padded)",
                    short(eg)
                ),
            ))
        }
        _ => None,
    }
}

/// Put a batch guess on every decode step whose name counts no requests and whose shapes
/// or decode-attention grid say how many it ran. Shapes refused as counts are named in
/// `warnings` (the same bounds as `--batch`: a value out of them is ignored, and said).
pub(crate) fn infer(trace: &Trace, steps: &mut [Step], warnings: &mut Vec<String>) -> Result<()> {
    if !steps.iter().any(wants_batch) {
        return Ok(());
    }
    let (shapes, refused) = shape_rows(trace)?;
    warnings.extend(refused.warning());
    let grids = grid_rows(trace)?;
    if shapes.is_empty() && grids.is_empty() {
        return Ok(());
    }
    let (mut over, mut over_example) = (0usize, None);
    for s in steps.iter_mut().filter(|s| wants_batch(s)) {
        let shaped = from_shapes(s, &shapes);
        let gridded = from_grid(s, &grids);
        // The shapes count the requests the step ran; a graph's grid may count its padded
        // batch, so the shapes win and the grid is named beside them when it differs.
        let (b, why) = match (shaped, gridded) {
            (Some(a), Some(g)) if g.0 != a.0 => {
                let mut a = a;
                a.1 = format!("{} (the attention grid says {})", a.1, g.0);
                a
            }
            (Some(a), _) => a,
            (None, Some(g)) => g,
            (None, None) => continue,
        };
        // The capture gets the bounds the flag has: a guess `--batch` would refuse is
        // not priced.
        if b > MAX_BATCH {
            over += 1;
            over_example.get_or_insert((s.index, b, why));
            continue;
        }
        s.batch_guess = Some(b);
        s.batch_evidence = Some(why);
    }
    if let Some((index, b, why)) = over_example {
        warnings.push(format!(
            "{over} step(s) without a batch guess: the batch read from the capture is above \
             --batch's bound of {MAX_BATCH} (e.g. step {index}: {b}, {why}); pass --batch"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grid_axes_follow_the_launchers() {
        assert_eq!(seqs_axis("void vllm::paged_attention_v2_kernel<__nv_bfloat16, __nv_bfloat16, 128, 16, 128, (vllm::Fp8KVCacheDataType)0, false, 512>(float*, ...)"), Some(1));
        assert_eq!(
            seqs_axis(
                "void vllm::paged_attention_v2_reduce_kernel<__nv_bfloat16, 128, 128, 512>(...)"
            ),
            Some(1)
        );
        assert_eq!(
            seqs_axis("void paged_attention_ll4mi_QKV_mfma16_kernel<0, __hip_bfloat16>(...)"),
            Some(0)
        );
        assert_eq!(
            seqs_axis("void paged_attention_ll4mi_reduce_kernel<__hip_bfloat16>(...)"),
            Some(1)
        );
        assert_eq!(seqs_axis("_fwd_grouped_kernel_stage1"), Some(0));
        assert_eq!(seqs_axis("_fwd_kernel_stage2"), Some(0));
        assert_eq!(seqs_axis("BatchDecodeWithPagedKVCacheKernel"), None);
        assert_eq!(seqs_axis("flash_fwd_splitkv_kernel"), None);
    }

    #[test]
    fn tally_breaks_ties_toward_the_larger_count() {
        assert_eq!(tally([1, 32, 32, 1].into_iter()), vec![(32, 2), (1, 2)]);
        assert_eq!(tally([8, 8, 8, 1].into_iter())[0], (8, 3));
        assert!(tally(std::iter::empty()).is_empty());
    }

    #[test]
    fn argmax_counts_requests_only_over_two_dimensional_logits() {
        assert!(is_2d_first("[[32,151936],[],[]]"));
        assert!(!is_2d_first("[[151936],[],[]]"));
        assert!(!is_2d_first("[[2,32,151936]]"));
        assert_eq!(first_input("[[32,2880],[201088,2880],[]]"), "[32,2880]");
    }

    #[test]
    fn window_takes_one_key_and_an_inclusive_range() {
        let rows = [(1, 5), (1, 10), (1, 20), (2, 10)];
        let w = window(&rows, |r| *r, 1, 10, 20);
        assert_eq!(w, &[(1, 10), (1, 20)]);
        assert!(window(&rows, |r| *r, 3, 0, 100).is_empty());
        assert!(window(&rows, |r| *r, 1, 30, 20).is_empty());
    }
}
