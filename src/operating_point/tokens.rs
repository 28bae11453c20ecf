//! The tokens and requests each step ran, from its own kernels' launch grids
//! (docs/method.md §3.3): the KV-cache write kernel's grid counts the tokens the step wrote
//! (one per request in a decode, the prompt's tokens in a prefill), the decode-attention
//! grid counts its sequences ([`super::batch`]). What the step kinds, the batch of unnamed
//! decodes and the `--batch` check rest on. Read only from a second load with the launch
//! grids, and only when the trace names a kernel whose grid is read here.

use crate::exit::Result;
use crate::trace::Trace;
use crate::wire::steps::{Step, StepKind};

use super::batch;

/// KV-cache write kernels whose grid x is the number of tokens written, as vLLM's
/// `csrc/cache_kernels.cu` launches them: `dim3 grid(num_tokens)` in `reshape_and_cache`
/// and `reshape_and_cache_flash` (`num_tokens = key.size(0)`). ROCm vLLM builds the same
/// source (hipified), so its `reshape_and_cache_flash_kernel<__hip_bfloat16, …>` is read
/// alike. SGLang's `store_kvcache` is not: its launcher gives each token a warp and packs
/// several warps per block, so its grid is not the token count.
const KV_WRITE: [&str; 2] = ["reshape_and_cache_kernel", "reshape_and_cache_flash_kernel"];

/// Whether `name` is a KV-cache write kernel whose grid x counts tokens.
pub fn is_kv_write(name: &str) -> bool {
    KV_WRITE.iter().any(|k| name.contains(k))
}

/// Whether the trace names a kernel whose grid this module reads (a KV-cache write or a
/// decode attention with a known layout): a cheap scan of the interned names that decides
/// whether the launch grids are worth a second read.
pub fn trace_has_counted_kernels(trace: &Trace) -> bool {
    trace
        .strings
        .iter()
        .any(|s| is_kv_write(s) || batch::seqs_axis(s).is_some())
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
}

/// The KV-cache write launches of the trace and their grid x (the tokens written).
fn write_rows(trace: &Trace) -> Result<Vec<batch::Counted<'_>>> {
    batch::counted_launches(
        trace,
        |n| is_kv_write(n).then_some(()),
        |(), grid| u64::from(grid[0]),
    )
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
    let t = batch::tally(mine.iter().map(|r| r.value));
    let &(v, n) = t.first()?;
    let others = if t.len() > 1 {
        let rest: Vec<String> = t[1..]
            .iter()
            .take(3)
            .map(|(v, k)| format!("{v} ×{k}"))
            .collect();
        format!("; also seen: {}", rest.join(", "))
    } else {
        String::new()
    };
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
    let grids = batch::grid_rows(evidence)?;
    // The context bound's module reads grids the same way; its bound is kept as a count.
    let keys = super::context::bounds(evidence, steps)?;
    Ok(steps
        .iter()
        .zip(keys)
        .map(|(s, max_keys)| StepCounts {
            tokens: tokens_of(s, &writes),
            requests: batch::from_grid(s, &grids)
                .map(|(value, evidence)| Count { value, evidence }),
            max_keys: max_keys.map(|(value, evidence)| Count { value, evidence }),
        })
        .collect())
}

/// The kind the counts make of a step, and why; None where they do not decide it.
/// `decode_family` is the decode-attention kernel the step ran, if any: with several
/// sequences and more tokens than sequences, it makes the step `mixed` (decodes beside a
/// prefill chunk) rather than a prefill.
pub fn kind_of(c: &StepCounts, decode_family: Option<&str>) -> Option<(StepKind, String)> {
    match (&c.tokens, &c.requests) {
        (Some(t), Some(r)) if t.value == r.value => Some((
            StepKind::Decode,
            format!("one token per request: {}; {}", t.evidence, r.evidence),
        )),
        (Some(t), Some(r)) if t.value > r.value => {
            let (kind, what) = match decode_family {
                Some(d) if r.value > 1 => (
                    StepKind::Mixed,
                    format!("decode attention {d} beside a prefill chunk"),
                ),
                _ => (StepKind::Prefill, "a prefill".to_owned()),
            };
            Some((
                kind,
                format!(
                    "{} tokens for {} sequence(s) ({}; {}): {what}",
                    t.value, r.value, t.evidence, r.evidence
                ),
            ))
        }
        (Some(t), None) if t.value == 1 => Some((
            StepKind::Decode,
            format!(
                "one token written: a decode of one request ({})",
                t.evidence
            ),
        )),
        _ => None,
    }
}

/// The requests of a decode step from its counts: the sequences its attention grid
/// carries, else the tokens it wrote (one per request in a decode).
pub fn decode_requests(c: &StepCounts) -> Option<&Count> {
    c.requests.as_ref().or(c.tokens.as_ref())
}

#[cfg(test)]
mod tests {
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
        assert!(!is_kv_write(
            "void (anonymous namespace)::store_kvcache<2048l, 4, false, long>(...)"
        ));
    }

    #[test]
    fn tokens_against_requests_decide_the_kind() {
        let c = |t, r| StepCounts {
            tokens: count(t),
            requests: count(r),
            max_keys: None,
        };
        assert_eq!(kind_of(&c(8, 8), None).unwrap().0, StepKind::Decode);
        // A prefill that launches a decode-attention kernel is still a prefill.
        assert_eq!(
            kind_of(&c(2048, 1), Some("paged_attention_ll4mi"))
                .unwrap()
                .0,
            StepKind::Prefill
        );
        assert_eq!(
            kind_of(&c(600, 9), Some("paged_attention_v2")).unwrap().0,
            StepKind::Mixed
        );
        assert_eq!(kind_of(&c(600, 9), None).unwrap().0, StepKind::Prefill);
        // Fewer tokens than sequences (a padded grid): the counts do not decide.
        assert!(kind_of(&c(4, 8), None).is_none());
        let only_tokens = |t| StepCounts {
            tokens: count(t),
            requests: None,
            max_keys: None,
        };
        assert_eq!(kind_of(&only_tokens(1), None).unwrap().0, StepKind::Decode);
        assert!(kind_of(&only_tokens(32), None).is_none());
        assert!(kind_of(&StepCounts::default(), None).is_none());
    }
}
