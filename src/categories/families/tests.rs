//! The family table on real kernel names: the families each name is of, read from the
//! name and its engine's source (the launcher or the kernel's template), not from the
//! patterns.

use super::*;

/// The families finer than the category table's (those after its rules in the table): the
/// category rules overlap freely and are checked through the categories.
fn fine(name: &str) -> Vec<KernelFamily> {
    families_of(name)
        .into_iter()
        .filter(|&f| f as usize >= F::CollectiveAllReduce as usize)
        .collect()
}

/// Real names, from the fixtures named or their engine's source, with the finer families a
/// reader gives them.
fn cases() -> Vec<(&'static str, Vec<KernelFamily>)> {
    vec![
        // vllm_b200_eager_prefill_rank0: NCCL's all-gather (generate.py names the op).
        (
            "ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
            vec![F::CollectiveSharded],
        ),
        // fastvideo_train_2gpu: point-to-point.
        (
            "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<(unsigned long)4096>)",
            vec![F::CollectiveSendRecv],
        ),
        // RCCL's one kernel for every collective.
        (
            "ncclDevKernel_Generic_2(ncclDevKernelArgsStorage<4096ul>)",
            vec![F::CollectiveGeneric],
        ),
        // vllm_b200_eager_prefill_rank0: torch symm_mem's all-reduce; its 16 is a vector
        // width, not a rank count (not a custom all-reduce template).
        (
            "void (anonymous namespace)::multimem_all_reduce_kernel<c10::BFloat16, 16>(c10::BFloat16*, unsigned long, unsigned int**, unsigned long, unsigned long)",
            vec![F::CollectiveAllReduce],
        ),
        // vLLM custom all-reduce: `template <typename T, int ngpus>`.
        (
            "void vllm::cross_device_reduce_2stage<__nv_bfloat16, 4>(vllm::RankData*, vllm::RankSignals, vllm::Signal*, __nv_bfloat16*, int, int)",
            vec![
                F::CollectiveAllReduce,
                F::CustomAllReduce,
                F::AllReduceRanksInTemplate,
            ],
        ),
        // Inductor's TP embedding mask, named after the all_reduce it precedes: the name
        // says all-reduce, and readers that must not count it check its category
        // (elementwise).
        (
            "triton_poi_fused_all_reduce_embedding_ge_lt_masked_fill_mul_sub_0",
            vec![F::CollectiveAllReduce, F::AttentionTriton],
        ),
        // vllm_mi300x_decode_fullgraph_step: ROCm paged attention, grid(num_seqs, …).
        (
            "void paged_attention_ll4mi_QKV_mfma16_kernel<0, __hip_bfloat16, __hip_bfloat16, (vllm::Fp8KVCacheDataType)0, 1, 128, 256, false, 4, 1, ck_tile::ComposedAttention<0u, false> >(__hip_bfloat16 const*)",
            vec![F::AttentionDecode, F::DecodeSeqsGridX, F::AttentionRocmLl4mi],
        ),
        // Its reduce: grid(num_heads, num_seqs).
        (
            "void paged_attention_ll4mi_reduce_kernel<__hip_bfloat16, __hip_bfloat16, 128, 128, 256, 3, false>(__hip_bfloat16*, float const*)",
            vec![F::AttentionDecode, F::DecodeSeqsGridY, F::AttentionRocmLl4mi],
        ),
        // vLLM paged attention v2: grid(num_heads, num_seqs, partitions), PARTITION_SIZE last.
        (
            "void vllm::paged_attention_v2_kernel<__nv_bfloat16, __nv_bfloat16, 128, 16, 128, (vllm::Fp8KVCacheDataType)0, false, 512>(float*, float*, __nv_bfloat16*, int)",
            vec![
                F::AttentionDecode,
                F::DecodeSeqsGridY,
                F::PagedAttentionV2Partitions,
                F::AttentionPagedV2,
            ],
        ),
        // Its reduce: no partition axis.
        (
            "void vllm::paged_attention_v2_reduce_kernel<__nv_bfloat16, 128, 128, 512>(__nv_bfloat16*, float const*)",
            vec![F::AttentionDecode, F::DecodeSeqsGridY],
        ),
        // vllm_b200_eager_prefill_rank0: vLLM's KV write, grid(num_tokens).
        (
            "void vllm::reshape_and_cache_flash_kernel<__nv_bfloat16, unsigned char, (vllm::Fp8KVCacheDataType)1>(__nv_bfloat16 const*, long const*)",
            vec![F::KvWriteTokenGrid],
        ),
        // sglang_mi300x_qwen3-8b_decode_step: SGLang's KV write, whose grid is not its tokens.
        (
            "void (anonymous namespace)::store_kvcache<2048l, 4, false, long>((anonymous namespace)::StoreKVCacheParams)",
            vec![],
        ),
        // FlashMLA's decode kernel (deepseek-ai/FlashMLA `flash_mla_kernel`, the
        // generator's planted MLA decode): decode only. Its template argument
        // `Flash_fwd_kernel_traits_mla` holds FA2's `flash_fwd_kernel` words, yet it is
        // neither FA2 nor a prefill (a decode step of it is not mixed).
        (
            "void flash::flash_fwd_splitkv_mla_kernel<Flash_fwd_kernel_traits_mla<576, 64, 64, 8, cutlass::bfloat16_t, 512>, true, flash::SharedStorageMLA<Flash_fwd_kernel_traits_mla<576, 64, 64, 8, cutlass::bfloat16_t, 512> > >(Flash_fwd_mla_params)",
            vec![F::AttentionDecode],
        ),
        // FlashMLA's combine (MLA decode): no FA2 query grid.
        (
            "void flash::flash_fwd_splitkv_mla_combine_kernel<cutlass::bfloat16_t, 8, 64, 512>(Flash_fwd_mla_params)",
            vec![F::AttentionDecode],
        ),
        // FlashAttention-2's forward as PyTorch builds it: grid x = query blocks.
        (
            "void pytorch_flash::flash_fwd_kernel<pytorch_flash::Flash_fwd_kernel_traits<64, 128, 128, 4, false, false, cutlass::bfloat16_t> >(pytorch_flash::Flash_fwd_params)",
            vec![F::AttentionPrefill, F::Fa2QueryGrid, F::AttentionFa2],
        ),
        // cuBLASLt's split-K reduction.
        (
            "void cublasLt::splitKreduce_kernel<32, 16, int, float, float, float, float, true, true, false>(cublasLt::cublasSplitKParams<float>, float const*)",
            vec![F::GemmSplitKReduction],
        ),
        // vllm_mi300x_decode_fullgraph_step: triton_kernels' MXFP4 expert GEMM.
        (
            "_matmul_ogs_NNT_bf16xbf16xmxfp4_16x128x256x1_swiglu",
            vec![F::MoeExpertGemm],
        ),
        ("[cuda graph 3]", vec![F::CudaGraphReplay]),
    ]
}

#[test]
fn real_names_are_of_the_families_their_sources_say() {
    for (name, want) in cases() {
        assert_eq!(fine(name), want, "{name}");
        // The one-family question agrees with the set's answer, family by family.
        let all = families_of(name);
        for r in FAMILIES {
            assert_eq!(
                matches(r.family, name),
                all.contains(&r.family),
                "{name}: {}",
                r.key
            );
        }
    }
}

#[test]
fn the_rank_count_is_the_custom_all_reduces_second_template_argument() {
    let c = captures(
        F::AllReduceRanksInTemplate,
        "void vllm::cross_device_reduce_1stage<__nv_bfloat16, 8>(vllm::RankData*)",
    )
    .unwrap();
    assert_eq!((&c[1], &c[2]), ("cross_device_reduce_1stage", "8"));
    let trt = "void tensorrt_llm::kernels::oneShotAllReduceKernel<__nv_bfloat16, 2, true>(AllReduceParams)";
    assert_eq!(&captures(F::AllReduceRanksInTemplate, trt).unwrap()[2], "2");
}

#[test]
fn c10d_ranges_name_their_collective() {
    assert_eq!(
        collective_range("nccl:all_to_all, op_id = 7"),
        Some("nccl:all_to_all")
    );
    assert_eq!(collective_range("nccl:"), None);
    assert_eq!(collective_range("ncclGroupStart"), None);
    assert_eq!(collective_range_op("nccl:all_reduce"), Some("all_reduce"));
}

#[test]
fn keys_are_unique_and_every_row_cites_a_source() {
    let mut keys: Vec<&str> = FAMILIES.iter().map(|r| r.key).collect();
    keys.sort_unstable();
    keys.dedup();
    assert_eq!(keys.len(), FAMILIES.len());
    assert!(FAMILIES.iter().all(|r| !r.source.is_empty()));
}
