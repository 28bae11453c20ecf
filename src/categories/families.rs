//! The kernel families: every kernel-name pattern stepgate knows, one row each, with the
//! engine or library source it was read from, compiled once. The category table
//! ([`super::DEFAULT_RULES`]) is an ordered list of these families; every other reader of
//! kernel names (the step kinds, the launch-grid counts, TP/DP evidence, the attention
//! advice, the layer map) asks a family here instead of holding a pattern of its own
//! (`tests/it/kernel_family_home.rs` fails on a pattern literal anywhere else).
//!
//! A family is a pattern, and optionally an `unless` pattern that takes a name back out
//! (the regex crate has no look-around). Patterns that start `(?i)` ignore case; the rest
//! match as written (a launcher's exact kernel name). The categories are coarse and
//! exclusive (first rule wins); the finer families below them overlap freely (a name can
//! be `Attention`, `AttentionDecode` and `DecodeSeqsGridY` at once), and where a finer
//! reader must agree with the category it also checks the kernel's category.

use std::sync::LazyLock;

use regex::{Captures, Regex, RegexSet};

/// One kernel family. Row `i` of [`FAMILIES`] is the family whose discriminant is `i`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum KernelFamily {
    // The category rules' families, in the category table's order.
    Copy,
    InductorNorm,
    InductorNamesOther,
    QuantizeActivation,
    AttentionSplitCombine,
    Collective,
    KvWrite,
    MoeRouting,
    MoeExpert,
    Attention,
    Gemm,
    Norm,
    Rope,
    Activation,
    Quantize,
    Sampling,
    Elementwise,
    // Which collective (inside the `Collective` category).
    CollectiveAllReduce,
    CollectiveSharded,
    CollectiveAllToAll,
    CollectiveSendRecv,
    CollectiveBroadcast,
    CollectiveGeneric,
    CustomAllReduce,
    AllReduceRanksInTemplate,
    NcclRange,
    // What a step is from its kernels.
    AttentionDecode,
    AttentionPrefill,
    Backward,
    // Which kernels' launch grids count something.
    KvWriteTokenGrid,
    Fa2QueryGrid,
    DecodeSeqsGridX,
    DecodeSeqsGridY,
    PagedAttentionV2Partitions,
    // Which attention implementation (the decode-grid advice).
    AttentionFa3,
    AttentionFa2SplitKv,
    AttentionFa2,
    AttentionFlashInfer,
    AttentionRocmLl4mi,
    AttentionPagedV1,
    AttentionPagedV2,
    AttentionTriton,
    // The per-layer map.
    GemmSplitKReduction,
    MoeExpertGemm,
    CudaGraphReplay,
}

/// One row of the table.
#[derive(Debug, Clone, Copy)]
pub struct FamilyRow {
    pub family: KernelFamily,
    /// The name docs and tests use.
    pub key: &'static str,
    pub pattern: &'static str,
    /// A name the pattern matches that this also matches is not of the family.
    pub unless: Option<&'static str>,
    /// Where the names come from.
    pub source: &'static str,
}

const fn row(
    family: KernelFamily,
    key: &'static str,
    pattern: &'static str,
    source: &'static str,
) -> FamilyRow {
    FamilyRow {
        family,
        key,
        pattern,
        unless: None,
        source,
    }
}

/// A row that does not take names matching `unless`.
const fn row_unless(
    family: KernelFamily,
    key: &'static str,
    pattern: &'static str,
    unless: &'static str,
    source: &'static str,
) -> FamilyRow {
    FamilyRow {
        unless: Some(unless),
        ..row(family, key, pattern, source)
    }
}

use KernelFamily as F;

/// Every family, in discriminant order.
pub(crate) const FAMILIES: &[FamilyRow] = &[
    row(F::Copy, "copy", r"(?i)^\[memcpy|^\[memset", "nsys and Kineto name copies and sets `[memcpy …]` / `[memset …]`"),
    // Inductor's generated pointwise, reduction and persistent-reduction kernels are named
    // after the ATen ops and modules they fuse (`…_moe_forward_0`, the `…_all_reduce_…` of
    // a TP embedding mask): never a GEMM, a collective or attention. One that names a norm
    // (or reduces with an rsqrt) is a norm; one that names another family's word is not
    // of that family.
    row(F::InductorNorm, "inductor_norm", r"(?i)^triton_(poi|red|per)_fused\w*(rsqrt|rms_?norm|layer_?norm)", "torch inductor kernel names"),
    row(F::InductorNamesOther, "inductor_names_other", r"(?i)^triton_(poi|red|per)_fused\w*(all_?reduce|all_?gather|reduce_?scatter|alltoall|moe|expert|attn|attention|flash|gemm|matmul|bmm|_mm_|_mm$)", "torch inductor kernel names"),
    // Activation quantize kernels, before the families whose words their signatures carry
    // (TensorRT-LLM's quantize_with_block_size takes a flashinfer:: argument). A norm
    // fused with its quantization (aiter add_rmsnorm_quant, vLLM
    // rms_norm_dynamic_per_token_quant) stays a norm: the later generic rule sees it
    // after the norm rule.
    row(F::QuantizeActivation, "quantize_activation", r"(?i)quantize_with_block_size|per_token_group_quant|scaled_fp8_quant|scaled_int8_quant|dynamic_\w*scaled_\w*quant|fp4_quant|mxfp\d_quant|block_?scale_?quant|cvt_fp16_to_fp4|cvt_\w*_to_fp8", "TensorRT-LLM, vLLM and SGLang quantization kernels"),
    // FlashAttention-2's and FlashMLA's split-KV combine are attention's own reduction of
    // its KV splits, not an expert-parallel combine: before `Collective`, whose
    // `combine_kernel` (all-to-all combine) they would match.
    row(F::AttentionSplitCombine, "attention_split_combine", r"(?i)splitkv\w*_combine|fwd_combine", "FlashAttention-2 / FlashMLA `flash_fwd_splitkv{,_mla}_combine_kernel`"),
    row(F::Collective, "collective", r"(?i)nccl|rccl|all_?reduce|all_?gather|reduce_?scatter|alltoall|all_to_all|sendrecv|cross_device_reduce|one_?shot|two_?shot|quick_?reduce|deep_?ep|dispatch_kernel|combine_kernel|mscclpp|symm_mem", "NCCL/RCCL, vLLM/SGLang/TensorRT-LLM custom all-reduce, DeepEP, mscclpp, torch symm_mem"),
    row(F::KvWrite, "kv_write", r"(?i)reshape_and_cache|concat_and_cache|store_kvcache|set_kv_buffer|append_?paged_?kv|updatekvcache|update_kv_cache", "vLLM reshape_and_cache(_flash), concat_and_cache_mla; SGLang store_kvcache / set_kv_buffer; FlashInfer AppendPagedKVCache; TensorRT-LLM's fused rope + KV update"),
    // Expert selection and the combine after the experts, not expert weights.
    row(F::MoeRouting, "moe_routing", r"(?i)topk_softmax|topkgating|grouped_topk|moe_align|count_and_sort|::routing::|routing_?kernel|moe::dev::finalize|finalizekernel|moe_finalize|finalize_moe|_finalize_matmul_scatter|^_topk_forward|_combined_routing|_sum_bitmatrix|moe_sum", "TensorRT-LLM moe::dev::routing / finalize, vLLM topk_softmax / moe_align_block_size, SGLang grouped_topk, triton_kernels' routing (gpt-oss)"),
    row(F::MoeExpert, "moe_expert", r"(?i)fused_moe|moe_|_moe|expert|fused_experts", "vLLM/SGLang fused_moe, Marlin MoE"),
    row(F::Attention, "attention", r"(?i)flash|fmha|attention|attn|paged|flashinfer|flashmla|mla_|batchdecode|batchprefill|xqa|mmha|masked_multihead|merge_state|splitkv|split_kv|cascade|decode_kernel|prefill_kernel|unified_attention|xformers|sdpa|cutlass_mla|aiter.*(fwd|decode)|^_fwd_kernel|varlen_fwd|mha_fwd|mha_varlen|^reduce_segments", "FlashAttention, FlashInfer, FlashMLA, vLLM paged/unified/prefix-prefill attention, TensorRT-LLM fmha/xqa/mmha, CK/aiter"),
    row(F::Gemm, "gemm", r"(?i)gemm|gemv|matmul|cublas|cutlass|xmma|wgmma|nvjet|cijk_|scaled_mm|_mm_|splitk|sm\d+_.*(tn|nt|nn|tt)|hipblaslt|rocblas|marlin|machete|bmm", "cuBLAS/cuBLASLt (nvjet, xmma), CUTLASS, hipBLASLt/Tensile (`Cijk_`), Marlin, Machete"),
    row(F::Norm, "norm", r"(?i)rms_?norm|layer_?norm|group_?norm|batch_?norm|fused_add_rms|norm_kernel|rsqrt", "vLLM/SGLang/FlashInfer norms"),
    row(F::Rope, "rope", r"(?i)rotary|rope|pos_encoding|posencoding", "rotary embedding kernels"),
    row(F::Activation, "activation", r"(?i)silu|gelu|swiglu|geglu|act_and_mul|relu|sigmoid|activation|tanh", "activation kernels"),
    row(F::Quantize, "quantize", r"(?i)quant|fp8|fp4|int8|int4|mxfp|nvfp|awq|gptq|scaled_", "quantization kernels"),
    row(F::Sampling, "sampling", r"(?i)sampl|top_?k|top_?p|min_p|argmax|multinomial|gumbel|penalt|logits|softmax|exponential_|argsort|radix_?sort|cub::", "samplers (FlashInfer sampling, torch argmax/softmax/sort)"),
    row(F::Elementwise, "elementwise", r"(?i)elementwise|triton_poi|triton_red|triton_per|reduce_kernel|vectorized|unrolled|catarraybatched|index|fill|copy|cast|where|add|mul|embedding|gather|scatter|arange|zero", "ATen and inductor pointwise kernels"),
    row(F::CollectiveAllReduce, "collective_all_reduce", r"(?i)all_?reduce|allreduce|cross_device_reduce", "NCCL AllReduce, vLLM/SGLang cross_device_reduce, TensorRT-LLM AllReduce kernels"),
    row(F::CollectiveSharded, "collective_sharded", r"(?i)all_?gather|allgather|reduce_?scatter|reducescatter", "NCCL AllGather / ReduceScatter (FSDP, ZeRO)"),
    row(F::CollectiveAllToAll, "collective_all_to_all", r"(?i)all_?to_?all|alltoall", "all-to-all (expert, sequence parallelism)"),
    row(F::CollectiveSendRecv, "collective_send_recv", r"(?i)send_?recv|sendrecv|\bsend\b|\brecv\b", "NCCL SendRecv / Send / Recv (pipeline stages; all-to-all)"),
    row(F::CollectiveBroadcast, "collective_broadcast", r"(?i)broadcast", "NCCL Broadcast (DDP's parameter sync)"),
    row(F::CollectiveGeneric, "collective_generic", r"(?i)ncclDevKernel_Generic", "RCCL/NCCL `ncclDevKernel_Generic`, which runs every collective under one name"),
    row(F::CustomAllReduce, "custom_all_reduce", r"cross_device_reduce", "vLLM/SGLang custom all-reduce (`csrc/custom_all_reduce.cuh`)"),
    // Captures: 1 the kernel, 2 the rank count.
    row(F::AllReduceRanksInTemplate, "all_reduce_ranks_in_template", r"(cross_device_reduce_[12]stage|(?:one|two)ShotAllReduceKernel)<[^,<>]+,\s*(\d+)\s*[,>]", "`template <typename T, int ngpus>` in vLLM `csrc/custom_all_reduce.cuh`; `template <typename T, int RANKS_PER_NODE, …>` in TensorRT-LLM `customAllReduceKernels.cu`"),
    row(F::NcclRange, "nccl_range", r"^nccl:", "the NVTX range PyTorch c10d wraps each collective in (`nccl:all_reduce`), not a kernel"),
    row(F::AttentionDecode, "attention_decode", r"(?i)paged_attention_v[12]|paged_attention_ll4mi|batchdecode|decode_attention|flash_?decoding|mla_decode|_fwd_(grouped_)?kernel_stage1|flashmla|flash_fwd_splitkv_mla|masked_multihead|mmha|xqa|fmha.*forgen", "decode-only attention: vLLM paged v1/v2 and ROCm ll4mi, FlashInfer BatchDecode, SGLang triton decode stage 1, FlashMLA, TensorRT-LLM mmha/XQA and `…ForGen` fmha"),
    // FlashMLA's decode kernels carry `Flash_fwd_kernel_traits_mla` in their template:
    // FA2's words, not FA2 and not a prefill.
    row_unless(F::AttentionPrefill, "attention_prefill", r"(?i)batchprefillwith(ragged|paged)|context_attention|extend_attention|_fwd_kernel_extend|fmha.*context|flash_fwd_kernel|flash::flash_fwd_kernel|fmha_fwd|_attn_fwd", r"_mla", "prefill-only attention: FlashInfer BatchPrefill, vLLM/SGLang triton context/extend, TensorRT-LLM `…Context` fmha, FA2's non-split forward, CK/aiter fmha_fwd, triton `_attn_fwd`"),
    row(F::Backward, "backward", r"(?i)backward|bwd|wgrad|dgrad", "autograd `…_backward_…`, cuDNN/MIOpen wgrad/dgrad, `bwd` GEMMs and attention"),
    row(F::KvWriteTokenGrid, "kv_write_token_grid", r"reshape_and_cache_kernel|reshape_and_cache_flash_kernel|concat_and_cache_mla_kernel|concat_and_cache_ds_mla_kernel", "vLLM `csrc/cache_kernels.cu` (and aiter's copy): `dim3 grid(num_tokens)`"),
    row_unless(F::Fa2QueryGrid, "fa2_query_grid", r"flash_fwd_kernel|flash_fwd_splitkv_kernel", r"combine|mla", "FlashAttention-2 `flash_fwd_launch_template.h`: `dim3 grid(num_m_block, …)`, num_m_block = ⌈max_seqlen_q / kBlockM⌉"),
    row(F::DecodeSeqsGridX, "decode_seqs_grid_x", r"paged_attention_ll4mi_QKV_mfma|_fwd_kernel_stage|_fwd_grouped_kernel_stage1", "vLLM `csrc/rocm/attention.cu` `grid(num_seqs, …)`; SGLang `decode_attention.py` `grid = (batch, …)`"),
    row(F::DecodeSeqsGridY, "decode_seqs_grid_y", r"paged_attention_v1_kernel|paged_attention_v2_kernel|paged_attention_v2_reduce_kernel|paged_attention_ll4mi_reduce_kernel", "vLLM `paged_attention_v1.cu`/`_v2.cu` `grid(num_heads, num_seqs, …)`, ll4mi reduce `(num_heads, num_seqs)`"),
    row_unless(F::PagedAttentionV2Partitions, "paged_attention_v2_partitions", r"paged_attention_v2_kernel", r"reduce", "vLLM `paged_attention_v2.cu`: grid z = ⌈max_seq_len / PARTITION_SIZE⌉, its last template argument"),
    row(F::AttentionFa3, "attention_fa3", r"(?i)flashattnfwdsm90|flash_fwd_sm90", "FlashAttention-3 `FlashAttnFwdSm90`"),
    row(F::AttentionFa2SplitKv, "attention_fa2_splitkv", r"(?i)flash_fwd_splitkv_kernel", "FlashAttention-2 split-KV forward"),
    row_unless(F::AttentionFa2, "attention_fa2", r"(?i)flash_fwd_kernel", r"_mla", "FlashAttention-2 forward (not FlashMLA, whose traits borrow its name)"),
    row(F::AttentionFlashInfer, "attention_flashinfer", r"(?i)flashinfer|batchdecode|batchprefill", "FlashInfer BatchDecode / BatchPrefill"),
    row(F::AttentionRocmLl4mi, "attention_rocm_ll4mi", r"(?i)paged_attention_ll4mi", "vLLM ROCm `paged_attention_ll4mi_*`"),
    row(F::AttentionPagedV1, "attention_paged_v1", r"(?i)paged_attention_v1_kernel", "vLLM paged attention v1"),
    row(F::AttentionPagedV2, "attention_paged_v2", r"(?i)paged_attention_v2_kernel", "vLLM paged attention v2"),
    row(F::AttentionTriton, "attention_triton", r"(?i)unified_attention|^_fwd_kernel|^attn_fwd|^triton_", "vLLM triton unified / prefix-prefill attention, triton `attn_fwd`"),
    row(F::GemmSplitKReduction, "gemm_split_k_reduction", r"(?i)splitkreduce|postgsu|reducesplitk", "cuBLASLt `splitKreduce_kernel`, hipBLASLt/Tensile `…_PostGSU<N>…`, CUTLASS `ReduceSplitK`"),
    row(F::MoeExpertGemm, "moe_expert_gemm", r"(?i)fused_moe|matmul_ogs", "vLLM/SGLang triton `fused_moe_kernel`, triton_kernels' `_matmul_ogs_…` (gpt-oss MXFP4 experts)"),
    row(F::CudaGraphReplay, "cuda_graph_replay", r"^\[cuda graph", "nsys' `--cuda-graph-trace=graph` replay range, one op per replay"),
];

// One row per variant, in variant order.
const _: () = {
    let mut i = 0;
    while i < FAMILIES.len() {
        assert!(FAMILIES[i].family as usize == i);
        i += 1;
    }
    assert!(FAMILIES.len() == F::CudaGraphReplay as usize + 1);
};

/// KV-cache write operators as vLLM registers them (`csrc/torch_bindings.cpp`), with the
/// position of their `slot_mapping` input, whose one dimension is the tokens written:
/// `reshape_and_cache{,_flash}(key, value, key_cache, value_cache, slot_mapping, …)`,
/// `concat_and_cache_mla(kv_c, k_pe, kv_cache, slot_mapping, …)`. Operator names (Kineto
/// `record_shapes`), matched exactly.
pub(crate) const KV_WRITE_OPS: [(&str, usize); 3] = [
    ("_C_cache_ops::reshape_and_cache", 4),
    ("_C_cache_ops::reshape_and_cache_flash", 4),
    ("_C_cache_ops::concat_and_cache_mla", 3),
];

struct Compiled {
    each: Vec<(Regex, Option<Regex>)>,
    set: RegexSet,
}

static COMPILED: LazyLock<Compiled> = LazyLock::new(|| {
    let re = |p: &str| Regex::new(p).expect("built-in family patterns compile");
    Compiled {
        each: FAMILIES
            .iter()
            .map(|r| (re(r.pattern), r.unless.map(re)))
            .collect(),
        set: RegexSet::new(FAMILIES.iter().map(|r| r.pattern))
            .expect("built-in family patterns compile"),
    }
});

impl KernelFamily {
    pub fn row(self) -> &'static FamilyRow {
        &FAMILIES[self as usize]
    }

    /// Whether `name` is of this family.
    pub fn matches(self, name: &str) -> bool {
        matches(self, name)
    }

    /// The pattern's compiled regex (its `unless` not applied).
    pub fn regex(self) -> &'static Regex {
        &COMPILED.each[self as usize].0
    }
}

/// Whether `name` is of `family`.
pub fn matches(family: KernelFamily, name: &str) -> bool {
    let (re, unless) = &COMPILED.each[family as usize];
    re.is_match(name) && !unless.as_ref().is_some_and(|u| u.is_match(name))
}

/// The first of `families` that `name` is of.
pub fn first_of(families: &[KernelFamily], name: &str) -> Option<KernelFamily> {
    families.iter().copied().find(|&f| matches(f, name))
}

/// Every family `name` is of, in table order.
pub fn families_of(name: &str) -> Vec<KernelFamily> {
    COMPILED
        .set
        .matches(name)
        .iter()
        .map(|i| FAMILIES[i].family)
        .filter(|&f| matches(f, name))
        .collect()
}

/// The capture groups of `family`'s pattern in `name` (for the families whose names carry
/// a number: [`KernelFamily::AllReduceRanksInTemplate`]).
pub fn captures(family: KernelFamily, name: &str) -> Option<Captures<'_>> {
    COMPILED.each[family as usize].0.captures(name)
}

/// The collective a c10d NVTX range names: `nccl:all_to_all, op_id = 7` → `nccl:all_to_all`;
/// None for any other range (NCCL's own `ncclSend`/`ncclGroupStart` API ranges name the
/// calls, not the collective they build).
pub fn collective_range(name: &str) -> Option<&str> {
    let op = name.split(',').next()?.trim();
    let m = KernelFamily::NcclRange.regex().find(op)?;
    (m.end() < op.len()).then_some(op)
}

/// The operation a c10d range names, without its `nccl:` prefix.
pub fn collective_range_op(range: &str) -> Option<&str> {
    let m = KernelFamily::NcclRange.regex().find(range)?;
    Some(&range[m.end()..])
}

#[cfg(test)]
mod tests;
