//! Generated captures whose step kinds show only in what the kernels were launched with,
//! as vLLM V1 runs them on an H100 with no step marker: a 1,049-token prefill then
//! decodes of one request, with FlashAttention 2 (its grid counts query blocks: a prefill
//! shows as more than one) or FlashAttention 3 (its grid says nothing: the prefill's kind
//! is inferred from the decodes beside it, or stays unknown with the reason where only
//! prefills run), and the same decodes as opaque CUDA-graph replays (graph-level tracing:
//! one `[cuda graph N]` item). Written as nsys exports through [`super::workload`], the
//! kernels and their durations from [`super::planted`].

use super::planted::{self, Dense, Speeds, ATTENTION};
use super::workload::{KernelSpec, LaunchMode, Scenario};
use super::Layout;

/// FlashAttention 2's split-KV forward as vLLM's `vllm_flash_attn` names it.
pub const FA2: &str = "void flash::flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4, false, false, cutlass::bfloat16_t>, false, true, false, false, true, true, false, false>(Flash_fwd_params)";

/// FA2's query tile (kBlockM of the traits above): its grid x is ⌈longest query / 64⌉.
pub const FA2_BLOCK_M: u64 = 64;

/// Tokens of the prefill step 0 writes (the vLLM V1 trace: grid 1,049).
pub const PREFILL_TOKENS: u64 = 1049;

/// Context of the decodes that follow.
pub(crate) const DECODE_CONTEXT: u64 = 1010;

/// The cases [`scenario`] writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KindCase {
    /// Llama-3-8B on an H100, TP 1, unmarked: step 0 a prefill of [`PREFILL_TOKENS`], the
    /// others decodes of one request; attention is FlashAttention 2, launched with grid
    /// (⌈query / 64⌉, 1, heads).
    Fa2PrefillThenDecodes,
    /// As above with FlashAttention 3, whose persistent grid counts neither queries nor
    /// sequences.
    Fa3PrefillThenDecodes,
    /// Only prefills of [`PREFILL_TOKENS`] with FlashAttention 3: no decode beside any
    /// step to bound what it is.
    Fa3PrefillsOnly,
    /// Decodes of one request replayed as one CUDA graph per step, traced at graph level:
    /// no kernel rows, one opaque replay.
    OpaqueGraphDecodes,
}

/// The tokens step `i` of `case` writes.
pub fn tokens_of(case: KindCase, i: usize) -> u64 {
    match case {
        KindCase::Fa2PrefillThenDecodes | KindCase::Fa3PrefillThenDecodes if i == 0 => {
            PREFILL_TOKENS
        }
        KindCase::Fa3PrefillsOnly => PREFILL_TOKENS,
        _ => 1,
    }
}

/// `steps` steps of `case`.
pub fn scenario(case: KindCase, steps: usize) -> Scenario {
    let d = Dense::LLAMA_3_8B;
    let s = Speeds::default();
    let kernels = |i: usize| {
        let t = tokens_of(case, i);
        let (tokens, context) = if t > 1 { (t, t) } else { (1, DECODE_CONTEXT) };
        let ks = planted::step_kernels(&d, 1, 1, tokens, context, &s);
        if case != KindCase::Fa2PrefillThenDecodes {
            return ks;
        }
        // FA2's launcher: dim3 grid(num_m_block, num_splits or b, b·h or h).
        let blocks = tokens.div_ceil(FA2_BLOCK_M) as u32;
        ks.into_iter()
            .map(|k| match k.name.as_str() {
                ATTENTION => {
                    KernelSpec::new(FA2, k.duration_ns).with_grid([blocks, 1, d.heads as u32])
                }
                _ => k,
            })
            .collect()
    };
    let mut specs = planted::unmarked((0..steps).map(kernels).collect());
    if case == KindCase::OpaqueGraphDecodes {
        for st in &mut specs {
            st.mode = LaunchMode::GraphOpaque;
        }
    }
    Scenario::new(Layout::Nsys2026_2, 1, specs)
}
