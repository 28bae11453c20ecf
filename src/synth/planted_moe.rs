//! Decode steps of a MoE model (Qwen3-30B-A3B) and of an MLA + MoE model with a dense
//! first layer and shared experts (DeepSeek-V2-Lite), written as vLLM launches them on an
//! H100, each kernel's duration following its bytes at a stated fraction of β: the
//! routed-expert GEMMs (triton `fused_moe_kernel`, w13 then w2) read the experts the
//! step's tokens touch in expectation under uniform routing, E·(1−(1−k/E)^T), worked out
//! here from the config numbers. One cause each is planted ([`super::planted::Cause`]).

use super::workload::{vllm_execute_detailed, KernelSpec, LaunchMode, StepSpec};

/// The kernel names a dense decode shares with these (vLLM's norm, rope, activation, KV
/// write, FlashAttention, final norm and sampling), as [`super::planted`] names them: it
/// passes them in, so the two generators cannot drift apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Names<'a> {
    pub norm: &'a str,
    pub rope: &'a str,
    pub act: &'a str,
    pub kv_write: &'a str,
    pub attention: &'a str,
    pub final_norm: &'a str,
    pub sample: &'a str,
}

/// MLA geometry (DeepSeek-V2-Lite has no q LoRA: q_proj straight from the hidden state).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mla {
    pub kv_lora_rank: u64,
    pub qk_nope_head_dim: u64,
    pub qk_rope_head_dim: u64,
    pub v_head_dim: u64,
}

/// A MoE decoder's `config.json` fields the durations use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Moe {
    pub layers: u64,
    pub hidden: u64,
    pub heads: u64,
    pub kv_heads: u64,
    pub head_dim: u64,
    pub vocab: u64,
    pub experts: u64,
    pub top_k: u64,
    pub moe_intermediate: u64,
    /// n_shared_experts × moe_intermediate (0: none).
    pub shared_intermediate: u64,
    /// first_k_dense_replace, and those layers' FFN width.
    pub dense_layers: u64,
    pub intermediate: u64,
    pub mla: Option<Mla>,
}

impl Moe {
    /// Qwen/Qwen3-30B-A3B `config.json`.
    pub(crate) const QWEN3_30B_A3B: Moe = Moe {
        layers: 48,
        hidden: 2048,
        heads: 32,
        kv_heads: 4,
        head_dim: 128,
        vocab: 151_936,
        experts: 128,
        top_k: 8,
        moe_intermediate: 768,
        shared_intermediate: 0,
        dense_layers: 0,
        intermediate: 6144,
        mla: None,
    };
    /// deepseek-ai/DeepSeek-V2-Lite `config.json` (2 shared experts of 1,408).
    pub(crate) const DEEPSEEK_V2_LITE: Moe = Moe {
        layers: 27,
        hidden: 2048,
        heads: 16,
        kv_heads: 16,
        head_dim: 128,
        vocab: 102_400,
        experts: 64,
        top_k: 6,
        moe_intermediate: 1408,
        shared_intermediate: 2 * 1408,
        dense_layers: 1,
        intermediate: 10944,
        mla: Some(Mla {
            kv_lora_rank: 512,
            qk_nope_head_dim: 128,
            qk_rope_head_dim: 64,
            v_head_dim: 128,
        }),
    };

    /// Expected distinct experts `tokens` tokens touch under uniform routing.
    pub(crate) fn experts_touched(&self, tokens: u64) -> f64 {
        let (e, k) = (self.experts as f64, self.top_k as f64);
        e * (1.0 - (1.0 - k / e).powi(tokens as i32))
    }
}

// Kernel names as vLLM traces carry them (triton kernels by their function name).
pub(crate) const FUSED_MOE: &str = "fused_moe_kernel";
pub(crate) const TOPK: &str = "void vllm::moe::topkGatingSoftmax<4, 128, 4, 16, 32, int, 4>(float const*, bool const*, float*, int, int*, int*, int, int, int)";
pub(crate) const ALIGN: &str = "void vllm::moe::moe_align_block_size_kernel<int>(int const*, int*, int*, int*, int, int, int, int, unsigned long, int*)";
pub(crate) const MOE_SUM: &str =
    "void vllm::moe::moe_sum_kernel<c10::BFloat16, 8>(c10::BFloat16*, c10::BFloat16 const*, int)";
pub(crate) const GEMM_ROUTER: &str = "nvjet_tst_32x8_64x16_4x1_v_bz_TNN";
pub const GEMM_QKV: &str = "nvjet_tst_64x16_64x16_2x4_2cta_h_bz_TNT";
pub const GEMM_O: &str = "nvjet_tst_64x8_64x16_4x1_v_bz_TNT";
pub(crate) const GEMM_SHARED_GATE_UP: &str = "nvjet_tst_128x16_64x16_2x2_h_bz_TNT";
pub(crate) const GEMM_SHARED_DOWN: &str = "nvjet_tst_64x32_64x16_4x1_v_bz_TNT";
pub(crate) const GEMM_DENSE_GATE_UP: &str = "nvjet_tst_192x16_64x16_2x2_h_bz_TNT";
pub(crate) const GEMM_DENSE_DOWN: &str = "nvjet_tst_96x32_64x16_4x1_v_bz_TNT";
pub const GEMM_LM_HEAD: &str = "nvjet_tst_192x8_64x8_4x1_v_bz_TNT";
pub(crate) const GEMM_KV_A: &str = "nvjet_tst_32x16_64x16_4x1_v_bz_TNT";
pub(crate) const GEMM_Q: &str = "nvjet_tst_64x16_64x16_4x1_v_bz_TNT";
/// The absorbed W_UK and W_UV `torch.bmm`s of vLLM's MLA decode (cuBLAS batched).
pub(crate) const BMM_UK: &str = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_nn_n_tilesize64x32x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas";
pub(crate) const BMM_UV: &str = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_nn_n_tilesize64x64x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas";
pub(crate) const FLASH_MLA: &str = "void flash::flash_fwd_splitkv_mla_kernel<Flash_fwd_kernel_traits_mla<576, 64, 64, 8, cutlass::bfloat16_t, 512>, true, flash::SharedStorageMLA<Flash_fwd_kernel_traits_mla<576, 64, 64, 8, cutlass::bfloat16_t, 512> > >(Flash_fwd_mla_params)";
pub(crate) const FLASH_MLA_COMBINE: &str = "void flash::flash_fwd_splitkv_mla_combine_kernel<cutlass::bfloat16_t, 8, 64, 512>(Flash_fwd_mla_params)";
pub(crate) const CONCAT_MLA: &str = "void vllm::concat_and_cache_mla_kernel<__nv_bfloat16, __nv_bfloat16, (vllm::Fp8KVCacheDataType)0>(__nv_bfloat16 const*, __nv_bfloat16 const*, __nv_bfloat16*, long const*, int, int, int, int, int, int, float const*)";

/// How fast each kernel runs: every GEMM at `gemm_of_roof` of β except the routed
/// experts at `experts_of_roof` and MLA's absorbed `bmm`s at `bmm_of_roof`; attention and
/// the KV write at theirs; small kernels `small_ns` each.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MoeSpeeds {
    /// HBM bandwidth the fractions are of, bytes/s.
    pub hbm_bytes_per_s: f64,
    pub gemm_of_roof: f64,
    pub experts_of_roof: f64,
    pub bmm_of_roof: f64,
    pub attention_of_roof: f64,
    pub kv_write_of_roof: f64,
    pub small_ns: i64,
}

/// Nanoseconds to move `bytes` at `fraction` of `bw`, at least 1.
fn at(bytes: f64, bw: f64, fraction: f64) -> i64 {
    ((bytes / (bw * fraction) * 1e9).round() as i64).max(1)
}

/// One decode layer's GEMM bytes (bf16, TP 1): (role, kernel, bytes), in launch order
/// from the layer's first GEMM; `moe` picks the MoE FFN over the dense one, `tokens` the
/// step's tokens (the experts they touch).
pub(crate) fn layer_gemms(
    m: &Moe,
    moe: bool,
    tokens: u64,
) -> Vec<(&'static str, &'static str, f64)> {
    let d = m.hidden;
    let b = |params: u64| params as f64 * 2.0;
    let mut out = Vec::new();
    match &m.mla {
        Some(l) => {
            out.push((
                "kv_a",
                GEMM_KV_A,
                b(d * (l.kv_lora_rank + l.qk_rope_head_dim)),
            ));
            let qk = l.qk_nope_head_dim + l.qk_rope_head_dim;
            out.push(("q", GEMM_Q, b(d * m.heads * qk)));
            out.push((
                "w_uk",
                BMM_UK,
                b(l.kv_lora_rank * m.heads * l.qk_nope_head_dim),
            ));
            out.push(("w_uv", BMM_UV, b(l.kv_lora_rank * m.heads * l.v_head_dim)));
            out.push(("o", GEMM_O, b(m.heads * l.v_head_dim * d)));
        }
        None => {
            out.push((
                "qkv",
                GEMM_QKV,
                b(d * (m.heads + 2 * m.kv_heads) * m.head_dim),
            ));
            out.push(("o", GEMM_O, b(m.heads * m.head_dim * d)));
        }
    }
    if !moe {
        out.push(("gate_up", GEMM_DENSE_GATE_UP, b(2 * d * m.intermediate)));
        out.push(("down", GEMM_DENSE_DOWN, b(m.intermediate * d)));
        return out;
    }
    let si = m.shared_intermediate;
    if si > 0 {
        out.push(("shared_gate_up", GEMM_SHARED_GATE_UP, b(2 * d * si)));
        out.push(("shared_down", GEMM_SHARED_DOWN, b(si * d)));
    }
    out.push(("router", GEMM_ROUTER, b(d * m.experts)));
    let n = m.experts_touched(tokens);
    let mi = m.moe_intermediate;
    out.push(("experts_gate_up", FUSED_MOE, n * b(2 * d * mi)));
    out.push(("experts_down", FUSED_MOE, n * b(mi * d)));
    out
}

/// The kernels of one decode step over `batch` requests attending `context` keys each.
pub fn decode_kernels(
    m: &Moe,
    batch: u64,
    context: u64,
    s: &MoeSpeeds,
    n: &Names<'_>,
) -> Vec<KernelSpec> {
    let bw = s.hbm_bytes_per_s;
    let small = s.small_ns;
    let gemm = |role: &str, name: &str, bytes: f64| {
        let f = if role.starts_with("experts") {
            s.experts_of_roof
        } else if role.starts_with("w_u") {
            s.bmm_of_roof
        } else {
            s.gemm_of_roof
        };
        KernelSpec::new(name, at(bytes, bw, f))
    };
    // KV bytes per token per layer: K and V rows of every KV head, or MLA's latent row.
    let kv_row = match &m.mla {
        Some(l) => ((l.kv_lora_rank + l.qk_rope_head_dim) * 2) as f64,
        None => (2 * m.kv_heads * m.head_dim * 2) as f64,
    };
    let attention = at(kv_row * (batch * context) as f64, bw, s.attention_of_roof);
    let kv_write = at(kv_row * batch as f64, bw, s.kv_write_of_roof);
    let mut out: Vec<KernelSpec> = Vec::new();
    for layer in 0..m.layers {
        let moe = layer >= m.dense_layers;
        let g = layer_gemms(m, moe, batch);
        let by = |r: &str| g.iter().find(|x| x.0 == r).copied();
        out.push(KernelSpec::new(n.norm, small));
        match &m.mla {
            Some(_) => {
                // MultiHeadLatentAttentionWrapper: kv_a_proj_with_mqa, q_proj, the
                // latent's norm, rope, the cache write, W_UK, FlashMLA, W_UV, o_proj.
                for r in ["kv_a", "q"] {
                    let (role, name, bytes) = by(r).unwrap_or_default();
                    out.push(gemm(role, name, bytes));
                }
                out.push(KernelSpec::new(n.norm, small));
                out.push(KernelSpec::new(n.rope, small));
                out.push(KernelSpec::new(CONCAT_MLA, kv_write));
                let (role, name, bytes) = by("w_uk").unwrap_or_default();
                out.push(gemm(role, name, bytes));
                out.push(KernelSpec::new(FLASH_MLA, attention));
                out.push(KernelSpec::new(FLASH_MLA_COMBINE, small));
                let (role, name, bytes) = by("w_uv").unwrap_or_default();
                out.push(gemm(role, name, bytes));
            }
            None => {
                let (role, name, bytes) = by("qkv").unwrap_or_default();
                out.push(gemm(role, name, bytes));
                out.push(KernelSpec::new(n.rope, small));
                out.push(KernelSpec::new(n.kv_write, kv_write));
                out.push(KernelSpec::new(n.attention, attention));
            }
        }
        let (role, name, bytes) = by("o").unwrap_or_default();
        out.push(gemm(role, name, bytes));
        out.push(KernelSpec::new(n.norm, small));
        if !moe {
            for (r, then) in [("gate_up", Some(n.act)), ("down", None)] {
                let (role, name, bytes) = by(r).unwrap_or_default();
                out.push(gemm(role, name, bytes));
                if let Some(a) = then {
                    out.push(KernelSpec::new(a, small));
                }
            }
            continue;
        }
        // DeepseekV2MoE: the shared experts, then the gate, then fused_moe.
        if let Some((role, name, bytes)) = by("shared_gate_up") {
            out.push(gemm(role, name, bytes));
            out.push(KernelSpec::new(n.act, small));
            let (role, name, bytes) = by("shared_down").unwrap_or_default();
            out.push(gemm(role, name, bytes));
        }
        let (role, name, bytes) = by("router").unwrap_or_default();
        out.push(gemm(role, name, bytes));
        out.push(KernelSpec::new(TOPK, small));
        out.push(KernelSpec::new(ALIGN, small));
        let (role, name, bytes) = by("experts_gate_up").unwrap_or_default();
        out.push(gemm(role, name, bytes));
        out.push(KernelSpec::new(n.act, small));
        let (role, name, bytes) = by("experts_down").unwrap_or_default();
        out.push(gemm(role, name, bytes));
        out.push(KernelSpec::new(MOE_SUM, small));
    }
    out.push(KernelSpec::new(n.final_norm, small));
    let lm_head = (m.vocab * m.hidden * 2) as f64;
    out.push(KernelSpec::new(
        GEMM_LM_HEAD,
        at(lm_head, bw, s.gemm_of_roof),
    ));
    out.push(KernelSpec::new(n.sample, small));
    out
}

/// `steps` decode steps at `batch` × `context`, each named as vLLM's detailed
/// `execute_…` annotation names it, launched as CUDA graph nodes.
pub fn decodes(
    m: &Moe,
    batch: u64,
    context: u64,
    s: &MoeSpeeds,
    names: &Names<'_>,
    steps: usize,
) -> Vec<StepSpec> {
    (0..steps)
        .map(|_| {
            let name = vllm_execute_detailed(
                batch,
                [0; 5],
                [batch, batch, batch * context, batch, batch * context],
            );
            let mut st = StepSpec::new(
                Some(&name),
                LaunchMode::GraphNode,
                decode_kernels(m, batch, context, s, names),
            );
            st.host_gap_before_ns = 200_000;
            st
        })
        .collect()
}
