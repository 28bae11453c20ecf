//! Generated captures whose operating point shows only in what the kernels were launched
//! with, each contradicting a reading from names alone: decodes of one request (the KV-cache
//! write's grid is 1 token), a prefill that launches ROCm's decode-attention kernel (its
//! grid is 1 sequence, its KV write 2,048 tokens), CUDA-graph replays of a capture with no
//! LLM in it, decodes whose only count is the size of the token-id copy to the host. Written as nsys exports through [`super::workload`], the kernels and their
//! durations from [`super::planted`].

use super::planted::{self, Dense, Speeds, ATTENTION, KV_WRITE};
use super::workload::{KernelSpec, LaunchMode, Scenario, StepSpec};
use super::Layout;

/// ROCm vLLM's paged attention (`csrc/rocm/attention.cu`) and the reduce that merges its
/// partitions, as an MI300X trace names them.
pub(crate) const LL4MI: &str = "void paged_attention_ll4mi_QKV_mfma16_kernel<__hip_bfloat16, __hip_bfloat16, (vllm::Fp8KVCacheDataType)0, 16, 128, 256, false, 4>(__hip_bfloat16 const*, __hip_bfloat16 const*, __hip_bfloat16 const*, int, float, int const*, int const*, int const*, int, float const*, int, int, int, float*, float*, __hip_bfloat16*, __hip_bfloat16*, int, float const*, float const*, float const*)";
pub(crate) const LL4MI_REDUCE: &str = "void paged_attention_ll4mi_reduce_kernel<__hip_bfloat16, __hip_bfloat16, 128, 128, 256, 3, false>(__hip_bfloat16*, float const*, float const*, __hip_bfloat16 const*, int const*, int const*, int, int)";

/// FlashInfer's paged decode attention as an SGLang trace names it: a decode by its
/// family; its grid is not read (it pads the batch when it splits the KV).
pub(crate) const FLASHINFER_DECODE: &str = "void flashinfer::BatchDecodeWithPagedKVCacheKernel<(flashinfer::PosEncodingMode)0, (unsigned int)2, (unsigned int)1, (unsigned int)8, (unsigned int)16, (unsigned int)2, (unsigned int)4, flashinfer::DefaultAttention<(bool)0, (bool)0, (bool)0, (bool)0>, Params>(T9)";

/// SGLang's KV-cache write as the real MI300X fixture names it: its grid is not the
/// token count (a warp per token, several per block), so it is not read.
pub(crate) const STORE_KVCACHE: &str = "void (anonymous namespace)::store_kvcache<2048l, 4, false, long>((anonymous namespace)::StoreKVCacheParams)";

/// An elementwise kernel of a CUDA-graph smoke test (no LLM).
pub const ELEMENTWISE: &str = "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul>)";

/// The cases [`scenario`] writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PointCase {
    /// Llama-3-8B on an H100, TP 1, unmarked decodes of one request over 1,010 keys: each
    /// layer's `reshape_and_cache_flash` is launched with grid (1) (one token), attention is
    /// FlashAttention 3 (whose grid is not read). `--batch 32` contradicts it.
    Batch1Decodes,
    /// Llama-3-8B on an MI300X, unmarked: steps 0 and [`PREFILL_AT`] are a 2,048-token
    /// prefill of one sequence, the others decodes of one request over 1,010 keys; every
    /// step's attention is ROCm's `paged_attention_ll4mi` over one sequence (grid
    /// (num_seqs, partitions, kv_heads)), its KV writes grid (tokens).
    PrefillWithDecodeAttention,
    /// One CUDA graph of 40 elementwise kernels replayed once per step (node-mode
    /// tracing): no attention, no KV-cache write, no LLM.
    GraphSmokeNoLlm,
    /// Llama-3-8B on an H100, TP 1, unmarked decodes of one request over 1,010 keys with
    /// no grid that counts requests ([`FLASHINFER_DECODE`] attention, [`STORE_KVCACHE`]
    /// writes), each ending with a device-to-host copy of `to_host` bytes, as an engine
    /// copies the sampled token ids (4 for one int32 id, 8 for one int64); None: no copy
    /// to the host at all (the tokens go out in a later step).
    TokenCopy { to_host: Option<i64> },
}

/// The step (besides the first) that [`PointCase::PrefillWithDecodeAttention`] prefills.
pub(crate) const PREFILL_AT: usize = 5;

/// Tokens of that prefill.
pub const PREFILL_TOKENS: u64 = 2048;

/// Context of the decodes.
pub(crate) const DECODE_CONTEXT: u64 = 1010;

/// `kernels` with each attention launch replaced by ROCm's ll4mi over `seqs` sequences of
/// `context` keys (256-key partitions), then its reduce: grid (num_seqs, partitions,
/// kv_heads) and (num_heads, num_seqs), as `csrc/rocm/attention.cu` launches them.
pub fn ll4mi(kernels: Vec<KernelSpec>, d: &Dense, seqs: u64, context: u64) -> Vec<KernelSpec> {
    let parts = context.div_ceil(256) as u32;
    let mut out = Vec::with_capacity(kernels.len() + d.layers as usize);
    for k in kernels {
        if k.name == ATTENTION {
            out.push(KernelSpec::new(LL4MI, k.duration_ns).with_grid([
                seqs as u32,
                parts,
                d.kv_heads as u32,
            ]));
            out.push(KernelSpec::new(LL4MI_REDUCE, 2_000).with_grid([
                d.heads as u32,
                seqs as u32,
                1,
            ]));
        } else {
            out.push(k);
        }
    }
    out
}

/// The tokens step `i` of `case` writes (its KV-cache write grid).
pub fn tokens_of(case: PointCase, i: usize) -> u64 {
    match case {
        PointCase::PrefillWithDecodeAttention if i == 0 || i == PREFILL_AT => PREFILL_TOKENS,
        _ => 1,
    }
}

/// `steps` steps of `case` (at least [`PREFILL_AT`] + 2 for the prefill case).
pub fn scenario(case: PointCase, steps: usize) -> Scenario {
    let d = Dense::LLAMA_3_8B;
    let s = Speeds::default();
    match case {
        PointCase::Batch1Decodes => {
            // The planted KV-cache writes carry grid (tokens): (1) here.
            let ks = (0..steps).map(|_| planted::step_kernels(&d, 1, 1, 1, DECODE_CONTEXT, &s));
            Scenario::new(Layout::Nsys2026_2, 1, planted::unmarked(ks.collect()))
        }
        PointCase::PrefillWithDecodeAttention => {
            let ks = (0..steps.max(PREFILL_AT + 2)).map(|i| {
                let t = tokens_of(case, i);
                let (tokens, context) = if t > 1 { (t, t) } else { (1, DECODE_CONTEXT) };
                ll4mi(
                    planted::step_kernels(&d, 1, 1, tokens, context, &s),
                    &d,
                    1,
                    context,
                )
            });
            let mut scn = Scenario::new(Layout::Nsys2026_2, 1, planted::unmarked(ks.collect()));
            scn.gpu_name = "AMD Instinct MI300X".to_owned();
            scn
        }
        PointCase::TokenCopy { to_host } => {
            let specs = (0..steps).map(|_| {
                let ks = planted::step_kernels(&d, 1, 1, 1, DECODE_CONTEXT, &s)
                    .into_iter()
                    .map(|k| match k.name.as_str() {
                        ATTENTION => KernelSpec::new(FLASHINFER_DECODE, k.duration_ns),
                        KV_WRITE => KernelSpec::new(STORE_KVCACHE, k.duration_ns),
                        _ => k,
                    })
                    .collect();
                ks
            });
            let mut specs = planted::unmarked(specs.collect());
            for st in &mut specs {
                st.memcpy_d2h_bytes = to_host;
            }
            Scenario::new(Layout::Nsys2026_2, 1, specs)
        }
        PointCase::GraphSmokeNoLlm => {
            let specs = (0..steps)
                .map(|_| {
                    let ks = (0..40)
                        .map(|_| KernelSpec::new(ELEMENTWISE, 3_000))
                        .collect();
                    let mut st = StepSpec::new(None, LaunchMode::GraphNode, ks);
                    st.host_gap_before_ns = 200_000;
                    st
                })
                .collect();
            Scenario::new(Layout::Nsys2026_2, 1, specs)
        }
    }
}
