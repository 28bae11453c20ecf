//! The tokens and requests each step ran, from its own kernels' launch grids
//! (docs/method.md §3.3): the KV-cache write kernel's grid counts the tokens the step wrote
//! (one per request in a decode, the prompt's tokens in a prefill), the decode-attention
//! grid counts its sequences ([`super::batch`]). What the step kinds, the batch of unnamed
//! decodes and the `--batch` check rest on. Read only from a second load with the launch
//! grids, and only when the trace names a kernel whose grid is read here.

use crate::categories::families::KernelFamily;
use crate::exit::Result;
use crate::trace::Trace;
use crate::wire::steps::{Step, StepKind};

use super::batch;

mod shapes;

use shapes::{
    kv_write_op, requests_from_sampler, sampler_shapes, tokens_from_shapes, write_shapes,
};

/// Whether `name` is a KV-cache write kernel whose grid x counts tokens
/// ([`KernelFamily::KvWriteTokenGrid`]: vLLM's `csrc/cache_kernels.cu` launches
/// `reshape_and_cache`, `reshape_and_cache_flash`, `concat_and_cache_mla` and
/// `concat_and_cache_ds_mla` with `dim3 grid(num_tokens)`, the tokens before CUDA-graph
/// padding; ROCm vLLM and aiter keep the launchers). The other engines' KV stores do not
/// launch a grid of their tokens: SGLang's `store_kvcache<bytes, split, …>` launches
/// ⌈tokens · split / warps per block⌉ blocks, FlashInfer's `AppendPagedKVCacheKernel`
/// fills the SMs, and SGLang's CUDA-graph decodes write the cache with plain `index_put_`
/// copies. Their steps get tokens from recorded operator shapes where recorded, else their
/// kind from the attention kernels and the neighbouring decodes ([`super::kind`]), else
/// stay unknown with the reason.
pub(crate) fn is_kv_write(name: &str) -> bool {
    KernelFamily::KvWriteTokenGrid.matches(name)
}

/// Whether the trace names a kernel whose grid this module reads (a KV-cache write or a
/// decode attention with a known layout): a cheap scan of the interned names that decides
/// whether the launch grids are worth a second read.
pub(crate) fn trace_has_counted_kernels(trace: &Trace) -> bool {
    trace
        .strings
        .iter()
        .any(|s| is_kv_write(s) || kv_write_op(s).is_some() || batch::seqs_axis(s).is_some())
}

/// One count with the line of evidence it rests on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Count {
    pub value: u64,
    pub evidence: String,
}

/// What one step's grids say: tokens written and sequences attended (None: not seen).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StepCounts {
    pub tokens: Option<Count>,
    pub requests: Option<Count>,
    /// The most keys a request of the step can hold, from its attention grid
    /// ([`super::context`]).
    pub max_keys: Option<Count>,
    /// The most query blocks FlashAttention-2's forward launched in the step (grid x =
    /// ⌈max_seqlen_q / kBlockM⌉): more than one means a sequence of more query tokens than
    /// a block (≥ 64), which no decode has.
    pub query_blocks: Option<Count>,
}

/// FlashAttention-2's forward kernels (vLLM's `vllm_flash_attn` and the upstream
/// `flash_fwd_launch_template.h`): `dim3 grid(num_m_block, …)` with `num_m_block =
/// ⌈max_seqlen_q / kBlockM⌉` in both `flash_fwd_kernel` and `flash_fwd_splitkv_kernel`
/// (not the combine kernel, whose grid counts rows; not the MLA split kernel).
fn is_fa2_forward(name: &str) -> bool {
    KernelFamily::Fa2QueryGrid.matches(name)
}

/// The step's largest FlashAttention-2 query-block count, where it ran one.
fn query_blocks_of(step: &Step, rows: &[batch::Counted<'_>]) -> Option<Count> {
    let (Some(dev), Some(gs), Some(ge)) = (step.device, step.gpu_start_ns, step.gpu_end_ns) else {
        return None;
    };
    let most = batch::window(rows, |r| (r.device, r.start), dev, gs, ge)
        .iter()
        .filter(|r| r.pid == step.pid)
        .max_by_key(|r| r.value)?;
    Some(Count {
        value: most.value,
        evidence: format!(
            "{} query blocks in the launch grid of {} (grid x = ⌈longest query / block⌉)",
            most.value,
            batch::short(most.name)
        ),
    })
}

/// The KV-cache write launches of the trace and their grid x (the tokens written).
fn write_rows(trace: &Trace) -> Result<Vec<batch::Counted<'_>>> {
    batch::counted_launches(
        trace,
        |n| is_kv_write(n).then_some(()),
        |(), grid| u64::from(grid[0]),
    )
}

/// The most frequent value of `values` with the line saying how often, and what else.
pub(super) fn most_often(values: impl Iterator<Item = u64>) -> Option<(u64, usize, usize, String)> {
    let t = batch::tally(values);
    let &(v, n) = t.first()?;
    let all = t.iter().map(|(_, k)| k).sum();
    let others = batch::also_seen(&t);
    Some((v, n, all, others))
}

/// The step's token count from its KV-cache writes: the value most launches carry (one
/// launch per layer, each writing the step's tokens), with the others named.
fn tokens_of(step: &Step, rows: &[batch::Counted<'_>]) -> Option<Count> {
    let (Some(dev), Some(gs), Some(ge)) = (step.device, step.gpu_start_ns, step.gpu_end_ns) else {
        return None;
    };
    let mine: Vec<&batch::Counted<'_>> = batch::window(rows, |r| (r.device, r.start), dev, gs, ge)
        .iter()
        .filter(|r| r.pid == step.pid)
        .collect();
    let (v, n, _, others) = most_often(mine.iter().map(|r| r.value))?;
    let name = mine.first().map_or("", |r| batch::short(r.name));
    Some(Count {
        value: v,
        evidence: format!(
            "{v} token(s) written by {name} (grid x = tokens; {n} of {} launches){others}",
            mine.len()
        ),
    })
}

/// Per step of `steps` (same order), the tokens and requests its grids say; `evidence` is
/// a load of the same report with the launch grids.
pub fn read(evidence: &Trace, steps: &[Step]) -> Result<Vec<StepCounts>> {
    let writes = write_rows(evidence)?;
    let written = write_shapes(evidence)?;
    let sampled = sampler_shapes(evidence)?;
    let grids = batch::grid_rows(evidence)?;
    let blocks = batch::counted_launches(
        evidence,
        |n| is_fa2_forward(n).then_some(()),
        |(), grid| u64::from(grid[0]),
    )?;
    // The context bound's module reads grids the same way; its bound is kept as a count.
    let keys = super::context::bounds(evidence, steps)?;
    Ok(steps
        .iter()
        .zip(keys)
        .map(|(s, max_keys)| StepCounts {
            // The grid first (what the kernel ran), the recorded operator after it.
            tokens: tokens_of(s, &writes).or_else(|| tokens_from_shapes(s, &written)),
            requests: batch::from_grid(s, &grids)
                .map(|(value, evidence)| Count { value, evidence })
                .or_else(|| requests_from_sampler(s, &sampled)),
            max_keys: max_keys.map(|(value, evidence)| Count { value, evidence }),
            query_blocks: query_blocks_of(s, &blocks),
        })
        .collect())
}

/// What the counts say of a step's kind: a kind with its evidence, or (kind None) the
/// reason they do not decide it, kept as the step's evidence when nothing else does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reading {
    pub kind: Option<StepKind>,
    pub why: String,
}

/// What the counts make of a step, cross-checked with its attention kernels; None where
/// the step wrote no counted tokens. `decode_family` is the decode-attention kernel the
/// step ran, if any: with several sequences and more tokens than sequences, it makes the
/// step `mixed` (decodes beside a prefill chunk) rather than a prefill. `attention` is the
/// kind the step's attention kernels alone say (a prefill-only, decode-only or both
/// kernel families) with the kernel that says it: it decides a step whose sequences are
/// not counted.
pub fn kind_of(
    c: &StepCounts,
    decode_family: Option<&str>,
    attention: Option<(StepKind, &str)>,
) -> Option<Reading> {
    let t = c.tokens.as_ref()?;
    let read = |kind: StepKind, why: String| {
        Some(Reading {
            kind: Some(kind),
            why,
        })
    };
    match &c.requests {
        Some(r) if t.value == r.value => read(
            StepKind::Decode,
            format!("one token per request: {}; {}", t.evidence, r.evidence),
        ),
        Some(r) if t.value > r.value => {
            let (kind, what) = match decode_family {
                Some(d) if r.value > 1 => (
                    StepKind::Mixed,
                    format!("decode attention {d} beside a prefill chunk"),
                ),
                _ => (StepKind::Prefill, "a prefill".to_owned()),
            };
            read(
                kind,
                format!(
                    "{} tokens for {} sequence(s) ({}; {}): {what}",
                    t.value, r.value, t.evidence, r.evidence
                ),
            )
        }
        Some(r) => Some(Reading {
            kind: None,
            why: format!(
                "{} tokens written for {} sequences ({}; {}): fewer tokens than sequences (a padded grid), so the counts do not decide",
                t.value, r.value, t.evidence, r.evidence
            ),
        }),
        None if t.value == 1 => read(
            StepKind::Decode,
            format!(
                "one token written: a decode of one request ({})",
                t.evidence
            ),
        ),
        None => match attention {
            _ if c.query_blocks.as_ref().is_some_and(|b| b.value > 1) && decode_family.is_none() => {
                let b = c.query_blocks.as_ref().map_or("", |b| b.evidence.as_str());
                read(
                    StepKind::Prefill,
                    format!(
                        "{} tokens written ({}) and {b}: a sequence longer than one query block, which no decode has — a prefill of {} tokens (decodes beside it are not excluded)",
                        t.value, t.evidence, t.value
                    ),
                )
            }
            Some((StepKind::Prefill, k)) => read(
                StepKind::Prefill,
                format!(
                    "{} tokens written ({}) and the prefill-only attention kernel {k}: a prefill of {} tokens",
                    t.value, t.evidence, t.value
                ),
            ),
            Some((StepKind::Decode, k)) => read(
                StepKind::Decode,
                format!(
                    "{} tokens written ({}) and only the decode attention kernel {k}: a decode of {} requests, one token each",
                    t.value, t.evidence, t.value
                ),
            ),
            Some((StepKind::Mixed, k)) => read(
                StepKind::Mixed,
                format!(
                    "{} tokens written ({}) by prefill and decode attention ({k}) in one step",
                    t.value, t.evidence
                ),
            ),
            _ => Some(Reading {
                kind: None,
                why: format!(
                    "{} tokens written ({}), but the capture counts no sequences (no decode-attention grid, no sampler shape) and its attention kernel runs prefill and decode alike: a prefill of {} tokens and a decode of {} requests cannot be told apart",
                    t.value, t.evidence, t.value, t.value
                ),
            }),
        },
    }
}

/// The requests of a decode step from its counts: the sequences its attention grid
/// carries, else the tokens it wrote (one per request in a decode).
pub fn decode_requests(c: &StepCounts) -> Option<&Count> {
    c.requests.as_ref().or(c.tokens.as_ref())
}

#[cfg(test)]
mod tests {
    use super::shapes::nth_first_dim;
    use super::*;

    fn count(v: u64) -> Option<Count> {
        Some(Count {
            value: v,
            evidence: format!("e{v}"),
        })
    }

    #[test]
    fn kv_writes_are_vllm_cache_kernels_on_both_vendors() {
        assert!(is_kv_write("void vllm::reshape_and_cache_flash_kernel<__nv_bfloat16, __nv_bfloat16, (vllm::Fp8KVCacheDataType)0>(...)"));
        assert!(is_kv_write("void vllm::reshape_and_cache_flash_kernel<__hip_bfloat16, __hip_bfloat16, (vllm::Fp8KVCacheDataType)0>(...)"));
        assert!(is_kv_write(
            "void vllm::reshape_and_cache_kernel<__nv_bfloat16, __nv_bfloat16, 0>(...)"
        ));
        assert!(is_kv_write("void vllm::concat_and_cache_mla_kernel<__hip_bfloat16, __hip_bfloat16, (vllm::Fp8KVCacheDataType)0>(...)"));
        assert!(is_kv_write(
            "void aiter::concat_and_cache_mla_kernel<__hip_bfloat16, __hip_bfloat16, 0>(...)"
        ));
        assert!(!is_kv_write(
            "void (anonymous namespace)::store_kvcache<2048l, 4, false, long>(...)"
        ));
    }

    #[test]
    fn the_slot_mapping_of_a_recorded_cache_write_counts_its_tokens() {
        // vllm_b200_eager_prefill_rank0.json.gz: _C_cache_ops::reshape_and_cache_flash's
        // Input Dims, compacted as the Kineto reader stores them.
        let dims = "[[888,1,64],[888,1,64],[4213816,16,1,64],[4213816,16,1,64],[888],[],[],[]]";
        let slot = kv_write_op("_C_cache_ops::reshape_and_cache_flash").unwrap();
        assert_eq!(nth_first_dim(dims, slot), Some(888));
        assert_eq!(nth_first_dim(dims, 2), Some(4_213_816));
        assert_eq!(nth_first_dim(dims, 5), None);
        assert_eq!(nth_first_dim(dims, 9), None);
        assert_eq!(kv_write_op("_C_cache_ops::concat_and_cache_mla"), Some(3));
        assert_eq!(kv_write_op("aten::linear"), None);
    }

    #[test]
    fn tokens_against_requests_decide_the_kind() {
        let c = |t, r| StepCounts {
            tokens: count(t),
            requests: count(r),
            ..StepCounts::default()
        };
        let kind = |c: &StepCounts, d, a| kind_of(c, d, a).and_then(|r| r.kind);
        assert_eq!(kind(&c(8, 8), None, None), Some(StepKind::Decode));
        // A prefill that launches a decode-attention kernel is still a prefill.
        assert_eq!(
            kind(&c(2048, 1), Some("paged_attention_ll4mi"), None),
            Some(StepKind::Prefill)
        );
        assert_eq!(
            kind(&c(600, 9), Some("paged_attention_v2"), None),
            Some(StepKind::Mixed)
        );
        assert_eq!(kind(&c(600, 9), None, None), Some(StepKind::Prefill));
        // Fewer tokens than sequences (a padded grid): the counts do not decide, and say so.
        let padded = kind_of(&c(4, 8), None, None).unwrap();
        assert_eq!(padded.kind, None);
        assert!(
            padded.why.contains("fewer tokens than sequences"),
            "{}",
            padded.why
        );
        let only_tokens = |t| StepCounts {
            tokens: count(t),
            ..StepCounts::default()
        };
        assert_eq!(kind(&only_tokens(1), None, None), Some(StepKind::Decode));
        // 1,049 tokens and no sequence count: the attention family decides, or nothing
        // does and the reason is kept.
        let open = kind_of(&only_tokens(1049), None, None).unwrap();
        assert_eq!(open.kind, None);
        assert!(open.why.contains("cannot be told apart"), "{}", open.why);
        assert_eq!(
            kind(
                &only_tokens(1049),
                None,
                Some((StepKind::Prefill, "fmha_context"))
            ),
            Some(StepKind::Prefill)
        );
        assert_eq!(
            kind(
                &only_tokens(32),
                None,
                Some((StepKind::Decode, "BatchDecode"))
            ),
            Some(StepKind::Decode)
        );
        // FlashAttention-2 launched 17 query blocks: a sequence longer than a block.
        let blocks = StepCounts {
            query_blocks: count(17),
            ..only_tokens(1049)
        };
        assert_eq!(kind(&blocks, None, None), Some(StepKind::Prefill));
        let one_block = StepCounts {
            query_blocks: count(1),
            ..only_tokens(1049)
        };
        assert_eq!(kind(&one_block, None, None), None);
        assert!(is_fa2_forward("void flash::flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4, false, false, cutlass::bfloat16_t>, false, true, false, false, true, true, false, false>(Flash_fwd_params)"));
        assert!(!is_fa2_forward("void flash::flash_fwd_splitkv_combine_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4, false, false, cutlass::bfloat16_t>, 4, 2, true>(Flash_fwd_params)"));
        assert!(kind_of(&StepCounts::default(), None, None).is_none());
    }
}
