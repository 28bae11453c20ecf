//! The step-name spellings the engines write (vLLM plain and detailed, SGLang) and the
//! decode-step kernel mix of the `steps` benchmark.

use super::{KernelSpec, LaunchMode, Scenario, StepSpec};
use crate::synth::writer::Layout;

/// vLLM's plain step annotation (`vllm/v1/worker/gpu_worker.py`, ≥ 0.14): `execute_context_N(T)_generation_M(U)`.
pub fn vllm_execute(ctx_reqs: u64, ctx_toks: u64, gen_reqs: u64, gen_toks: u64) -> String {
    format!("execute_context_{ctx_reqs}({ctx_toks})_generation_{gen_reqs}({gen_toks})")
}

/// vLLM's detailed step annotation (`detailed_trace_annotation`), e.g.
/// `execute_32_context_0(sq0sk0sqsq0sqsk0)_generation_32(sq32sk55086sqsq32sqsk55086)`.
/// Each side is (requests, Σsq, Σsk, Σsq², Σsq·sk).
pub fn vllm_execute_detailed(total: u64, ctx: [u64; 5], gen: [u64; 5]) -> String {
    format!(
        "execute_{total}_context_{}(sq{}sk{}sqsq{}sqsk{})_generation_{}(sq{}sk{}sqsq{}sqsk{})",
        ctx[0], ctx[1], ctx[2], ctx[3], ctx[4], gen[0], gen[1], gen[2], gen[3], gen[4]
    )
}

/// SGLang's step annotation (`sglang/srt/utils/profile_utils.py`): `step[DECODE bs=32]`, `step[EXTEND bs=2 toks=12]`.
pub fn sglang_step(mode: &str, bs: u64, toks: Option<u64>) -> String {
    match toks {
        Some(t) => format!("step[{mode} bs={bs} toks={t}]"),
        None => format!("step[{mode} bs={bs}]"),
    }
}

/// Kernel names and durations of one decode layer stack, looped to `n` kernels: the mix a
/// vLLM CUDA-graph decode step of a dense model launches (names as they appear in traces).
pub fn decode_kernels(n: usize) -> Vec<KernelSpec> {
    const MIX: [(&str, i64); 8] = [
        ("void vllm::rms_norm_kernel<c10::BFloat16, 8, 2>(c10::BFloat16*, c10::BFloat16 const*, c10::BFloat16 const*, float, int, int)", 2_100),
        ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x64x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas", 9_800),
        ("void vllm::rotary_embedding_kernel<c10::BFloat16, true>(long const*, c10::BFloat16*, c10::BFloat16*, c10::BFloat16 const*, int, long, long, int, int, int)", 1_900),
        ("void flash::flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4, false, false, cutlass::bfloat16_t>, false, true, false, false, true, false, false, false>(flash::Flash_fwd_params)", 7_400),
        ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize64x64x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas", 6_300),
        ("void vllm::fused_add_rms_norm_kernel<c10::BFloat16, 8>(c10::BFloat16*, c10::BFloat16*, c10::BFloat16 const*, float, int, int)", 2_300),
        ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas", 15_200),
        ("void vllm::act_and_mul_kernel<c10::BFloat16, &vllm::silu_kernel<c10::BFloat16>, true>(c10::BFloat16*, c10::BFloat16 const*, int)", 2_700),
    ];
    (0..n)
        .map(|i| {
            let (name, d) = MIX[i % MIX.len()];
            KernelSpec::new(name, d)
        })
        .collect()
}

/// `steps` CUDA-graph decode steps (node-mode tracing) of `kernels` kernels each, with vLLM
/// detailed `execute_…` annotations: the `steps` benchmark (10,000 × 400 = 4M kernels).
pub fn decode_benchmark(layout: Layout, ranks: u32, steps: usize, kernels: usize) -> Scenario {
    let ks = decode_kernels(kernels);
    let step_specs = (0..steps)
        .map(|i| {
            let sk = 55_000 + i as u64 % 1000;
            let name = vllm_execute_detailed(32, [0; 5], [32, 32, sk, 32, sk]);
            let mut s = StepSpec::new(Some(&name), LaunchMode::GraphNode, ks.clone());
            s.host_gap_before_ns = 150_000;
            s
        })
        .collect();
    Scenario::new(layout, ranks, step_specs)
}
