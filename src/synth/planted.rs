//! Decode (and prefill) steps of a dense transformer whose kernel durations follow its
//! bytes, with one cause planted: attention slower than its floor at small batch, GEMMs
//! at the roof, a TP-4 capture whose ranks say so only in their all-reduce template, a
//! prefill among unmarked decodes, unmarked decodes whose batch shows only in their
//! paged-attention launch grid, a split-K GEMM with its own reduction kernel; MoE and
//! MLA decodes come from [`super::planted_moe`]. Written as nsys exports through
//! [`super::workload`].
//!
//! Every duration is plain arithmetic here, from the model's dimensions as its
//! `config.json` states them: a GEMM reads its weight matrix once (bf16, 1/TP of it per
//! GPU), decode attention reads B·s cached K and V rows per layer, the KV write stores
//! B new rows, each at the stated fraction of the bandwidth β; small kernels take a fixed
//! time. A prefill's GEMMs take 2·params·T FLOPs at the tensor peak.

use super::workload::{vllm_execute_detailed, KernelSpec, LaunchMode, Scenario, StepSpec};
use super::Layout;

/// A dense decoder's geometry (the `config.json` fields the durations use).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dense {
    pub layers: u64,
    pub hidden: u64,
    pub heads: u64,
    pub kv_heads: u64,
    pub head_dim: u64,
    pub intermediate: u64,
    pub vocab: u64,
}

impl Dense {
    /// meta-llama/Meta-Llama-3-8B `config.json`.
    pub const LLAMA_3_8B: Dense = Dense {
        layers: 32,
        hidden: 4096,
        heads: 32,
        kv_heads: 8,
        head_dim: 128,
        intermediate: 14336,
        vocab: 128_256,
    };
    /// meta-llama/Meta-Llama-3-70B `config.json`.
    pub(crate) const LLAMA_3_70B: Dense = Dense {
        layers: 80,
        hidden: 8192,
        heads: 64,
        kv_heads: 8,
        head_dim: 128,
        intermediate: 28672,
        vocab: 128_256,
    };
}

/// One decode layer's GEMMs, in launch order, with their weight bytes per GPU.
pub(crate) fn layer_gemms(d: &Dense, tp: u64) -> [(&'static str, &'static str, u64); 4] {
    let qkv = d.hidden * (d.heads + 2 * d.kv_heads) * d.head_dim * 2 / tp;
    let o = d.heads * d.head_dim * d.hidden * 2 / tp;
    let gate_up = d.hidden * 2 * d.intermediate * 2 / tp;
    let down = d.intermediate * d.hidden * 2 / tp;
    [
        ("qkv", GEMM_QKV, qkv),
        ("o", GEMM_O, o),
        ("gate_up", GEMM_GATE_UP, gate_up),
        ("down", GEMM_DOWN, down),
    ]
}

/// KV bytes of one layer per token on one GPU: K and V rows of the heads it holds.
pub(crate) fn kv_row_bytes(d: &Dense, tp: u64) -> u64 {
    2 * (d.kv_heads / tp).max(1) * d.head_dim * 2
}

// Kernel names as vLLM V1 traces on an H100 carry them.
pub const NORM: &str = "void vllm::fused_add_rms_norm_kernel<c10::BFloat16, 8>(c10::BFloat16*, c10::BFloat16*, c10::BFloat16 const*, float, int, int)";
pub const GEMM_QKV: &str = "nvjet_tst_64x16_64x16_2x4_2cta_h_bz_TNT";
pub const GEMM_O: &str = "nvjet_tst_64x8_64x16_4x1_v_bz_TNT";
pub const GEMM_GATE_UP: &str = "nvjet_tst_128x16_64x16_2x2_h_bz_TNT";
pub const GEMM_DOWN: &str = "nvjet_tst_64x32_64x16_4x1_v_bz_splitK_TNT";
pub const GEMM_LM_HEAD: &str = "nvjet_tst_192x8_64x8_4x1_v_bz_TNT";
pub(crate) const ROPE: &str = "void vllm::rotary_embedding_kernel<c10::BFloat16, true>(long const*, c10::BFloat16*, c10::BFloat16*, c10::BFloat16 const*, int, long, long, int, int, int)";
pub const KV_WRITE: &str = "void vllm::reshape_and_cache_flash_kernel<__nv_bfloat16, __nv_bfloat16, (vllm::Fp8KVCacheDataType)0>(__nv_bfloat16 const*, __nv_bfloat16 const*, __nv_bfloat16*, __nv_bfloat16*, long const*, long, long, long, long, int, int, int, float const*, float const*)";
/// FlashAttention 3 runs prefill and decode alike: its name says neither.
pub const ATTENTION: &str = "void cutlass::device_kernel<flash::enable_sm90_or_later<flash::FlashAttnFwdSm90<flash::CollectiveMainloopFwdSm90<2, cute::tuple<cute::C<1>, cute::C<1>, cute::C<1> >, cute::tuple<cute::C<128>, cute::C<128>, cute::C<128> >, 128, cutlass::bfloat16_t, float, cutlass::arch::Sm90, true, false, false, true, true, false, false, true, true, false, true, false>, flash::CollectiveEpilogueFwd<cute::tuple<cute::C<128>, cute::C<128>, cute::C<128> >, cute::tuple<cute::C<1>, cute::C<1>, cute::C<1> >, cutlass::bfloat16_t, cutlass::arch::Sm90, 256, true, true, false, false>, flash::VarlenDynamicPersistentTileScheduler<128, 256, 128, false, true, true> > > >(flash::FlashAttnFwdSm90<flash::CollectiveMainloopFwdSm90<2, cute::tuple<cute::C<1>, cute::C<1>, cute::C<1> >, cute::tuple<cute::C<128>, cute::C<128>, cute::C<128> >, 128, cutlass::bfloat16_t, float, cutlass::arch::Sm90, true, false, false, true, true, false, false, true, true, false, true, false>, flash::CollectiveEpilogueFwd<cute::tuple<cute::C<128>, cute::C<128>, cute::C<128> >, cute::tuple<cute::C<1>, cute::C<1>, cute::C<1> >, cutlass::bfloat16_t, cutlass::arch::Sm90, 256, true, true, false, false>, flash::VarlenDynamicPersistentTileScheduler<128, 256, 128, false, true, true> >::Params)";
pub const ACT: &str = "void vllm::act_and_mul_kernel<c10::BFloat16, &vllm::silu_kernel<c10::BFloat16>, true>(c10::BFloat16*, c10::BFloat16 const*, int)";
pub(crate) const FINAL_NORM: &str = "void vllm::rms_norm_kernel<c10::BFloat16, 8, 2>(c10::BFloat16*, c10::BFloat16 const*, long, long, long, long, long, c10::BFloat16 const*, float, int, int)";
pub(crate) const SAMPLE: &str = "void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float, at::native::(anonymous namespace)::SoftMaxForwardEpilogue>(float*, float const*, int)";

/// vLLM's paged attention v2 (its CUDA decode kernel) and the reduce that merges its
/// partitions.
pub(crate) const PAGED_V2: &str = "void vllm::paged_attention_v2_kernel<__nv_bfloat16, __nv_bfloat16, 128, 16, 128, (vllm::Fp8KVCacheDataType)0, false, 512>(float*, float*, __nv_bfloat16*, __nv_bfloat16 const*, __nv_bfloat16 const*, __nv_bfloat16 const*, int, float, int const*, int const*, int, float const*, int, int, int, float const*, float const*, int, int, int)";
pub(crate) const PAGED_V2_REDUCE: &str = "void vllm::paged_attention_v2_reduce_kernel<__nv_bfloat16, 128, 128, 512>(__nv_bfloat16*, float const*, float const*, __nv_bfloat16 const*, int const*, int)";

/// `kernels` with each attention launch replaced by vLLM's paged attention v2 over
/// `batch` sequences of `context` keys: the same duration, launched as vLLM's
/// `paged_attention_v2.cu` launches it — `grid(num_heads, num_seqs, max_num_partitions)`
/// with 512-key partitions — then its reduce, `grid(num_heads, num_seqs)`, for
/// `small_ns`.
pub(crate) fn paged_v2(
    kernels: Vec<KernelSpec>,
    d: &Dense,
    tp: u64,
    batch: u64,
    context: u64,
    small_ns: i64,
) -> Vec<KernelSpec> {
    let heads = (d.heads / tp) as u32;
    let (b, parts) = (batch as u32, context.div_ceil(512) as u32);
    let mut out = Vec::with_capacity(kernels.len() * 2);
    for k in kernels {
        if k.name == ATTENTION {
            out.push(KernelSpec::new(PAGED_V2, k.duration_ns).with_grid([heads, b, parts]));
            out.push(KernelSpec::new(PAGED_V2_REDUCE, small_ns).with_grid([heads, b, 1]));
        } else {
            out.push(k);
        }
    }
    out
}

/// A cuBLAS (not nvjet) GEMM that splits K, and the cuBLASLt reduction it launches after
/// itself to sum the partial products (the names as H100 traces carry them).
pub(crate) const SPLIT_K_GEMM: &str = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize64x64x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas";
pub(crate) const SPLIT_K_REDUCE: &str = "void cublasLt::splitKreduce_kernel<32, 16, int, float, __nv_bfloat16, float, __nv_bfloat16, false, __nv_bfloat16, __nv_bfloat16, __nv_bfloat16, true, false, false>(cublasLt::cublasSplitKParams<float>, float const*, __nv_bfloat16 const*, __nv_bfloat16*, float const*, float const*, __nv_bfloat16 const*, __nv_bfloat16 const*, __nv_bfloat16*, void*, long, float*, int*)";

/// [`Cause::SplitKGemms`]: qkv as a split-K GEMM at this fraction of the roof, then its
/// reduction for [`SPLIT_K_REDUCE_NS`]; o at [`SPLIT_K_O_OF_ROOF`].
pub(crate) const SPLIT_K_QKV_OF_ROOF: f64 = 0.7;
pub(crate) const SPLIT_K_REDUCE_NS: i64 = 3_000;
pub(crate) const SPLIT_K_O_OF_ROOF: f64 = 0.5;

/// `kernels` (Llama-3-8B at TP 1 from [`step_kernels`]) with qkv launched as a split-K
/// GEMM plus its reduction and o slowed, both as [`Cause::SplitKGemms`] states.
pub(crate) fn split_k(kernels: Vec<KernelSpec>, d: &Dense, s: &Speeds) -> Vec<KernelSpec> {
    let [qkv, o, ..] = layer_gemms(d, 1);
    let bw = s.hbm_bytes_per_s;
    let mut out = Vec::with_capacity(kernels.len() + d.layers as usize);
    for k in kernels {
        if k.name == GEMM_QKV {
            out.push(KernelSpec::new(
                SPLIT_K_GEMM,
                at(qkv.2, bw, SPLIT_K_QKV_OF_ROOF),
            ));
            out.push(KernelSpec::new(SPLIT_K_REDUCE, SPLIT_K_REDUCE_NS));
        } else if k.name == GEMM_O {
            out.push(KernelSpec::new(GEMM_O, at(o.2, bw, SPLIT_K_O_OF_ROOF)));
        } else {
            out.push(k);
        }
    }
    out
}

/// vLLM's custom all-reduce, its rank count in the template.
pub fn all_reduce(tp: u64) -> String {
    format!("void vllm::cross_device_reduce_1stage<__nv_bfloat16, {tp}>(vllm::RankData*, vllm::RankSignals, vllm::Signal*, __nv_bfloat16*, int, int)")
}

/// How fast each class runs, as a fraction of the roof, and the fixed small times.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Speeds {
    /// HBM bandwidth the fractions are of, bytes/s (an H100 SXM: 3.35e12, cited).
    pub hbm_bytes_per_s: f64,
    /// Dense tensor peak for prefill GEMMs, FLOP/s (H100 SXM bf16: 989.4e12, cited).
    pub peak_flops_per_s: f64,
    pub gemm_of_roof: f64,
    pub attention_of_roof: f64,
    pub kv_write_of_roof: f64,
    /// Norms, rope, activation, sampling: each this long.
    pub small_ns: i64,
    /// Each all-reduce (TP > 1).
    pub all_reduce_ns: i64,
}

impl Default for Speeds {
    fn default() -> Self {
        Speeds {
            hbm_bytes_per_s: 3.35e12,
            peak_flops_per_s: 989.4e12,
            gemm_of_roof: 0.9,
            attention_of_roof: 0.8,
            kv_write_of_roof: 0.5,
            small_ns: 2_000,
            all_reduce_ns: 8_000,
        }
    }
}

/// Nanoseconds to move `bytes` at `fraction` of `bw`, at least 1.
fn at(bytes: u64, bw: f64, fraction: f64) -> i64 {
    ((bytes as f64 / (bw * fraction) * 1e9).round() as i64).max(1)
}

/// The kernels of one step of `tokens` new tokens per request over `batch` requests
/// attending `context` keys each (decode: tokens = 1), at tensor parallelism `tp`. A
/// prefill (tokens > 1) prices its GEMMs at the tensor peak and its attention at the
/// same peak over its causal pairs.
pub fn step_kernels(
    d: &Dense,
    tp: u64,
    batch: u64,
    tokens: u64,
    context: u64,
    s: &Speeds,
) -> Vec<KernelSpec> {
    let t = batch * tokens;
    let bw = s.hbm_bytes_per_s;
    let gemm = |bytes: u64| {
        let memory = at(bytes, bw, s.gemm_of_roof);
        // 2 FLOPs per weight (bytes / 2 of them) per token.
        let compute = (bytes as f64 * t as f64 / s.peak_flops_per_s * 1e9).round() as i64;
        memory.max(compute)
    };
    let attention = if tokens == 1 {
        at(
            kv_row_bytes(d, tp) * batch * context,
            bw,
            s.attention_of_roof,
        )
    } else {
        let pairs = batch as f64 * (tokens * (tokens + 1) / 2) as f64;
        let flops = 4.0 * (d.heads / tp) as f64 * d.head_dim as f64 * pairs;
        (flops / s.peak_flops_per_s * 1e9).round() as i64
    };
    let kv_write = at(kv_row_bytes(d, tp) * t, bw, s.kv_write_of_roof);
    let ar = all_reduce(tp);
    let [qkv, o, gate_up, down] = layer_gemms(d, tp);
    let mut out: Vec<KernelSpec> = Vec::new();
    for _ in 0..d.layers {
        out.push(KernelSpec::new(NORM, s.small_ns));
        out.push(KernelSpec::new(qkv.1, gemm(qkv.2)));
        out.push(KernelSpec::new(ROPE, s.small_ns));
        // Launched as vLLM's `reshape_and_cache_flash` is: `dim3 grid(num_tokens)`.
        out.push(KernelSpec::new(KV_WRITE, kv_write).with_grid([t as u32, 1, 1]));
        out.push(KernelSpec::new(ATTENTION, attention));
        out.push(KernelSpec::new(o.1, gemm(o.2)));
        if tp > 1 {
            out.push(KernelSpec::new(&ar, s.all_reduce_ns));
        }
        out.push(KernelSpec::new(NORM, s.small_ns));
        out.push(KernelSpec::new(gate_up.1, gemm(gate_up.2)));
        out.push(KernelSpec::new(ACT, s.small_ns));
        out.push(KernelSpec::new(down.1, gemm(down.2)));
        if tp > 1 {
            out.push(KernelSpec::new(&ar, s.all_reduce_ns));
        }
    }
    out.push(KernelSpec::new(FINAL_NORM, s.small_ns));
    // lm_head runs for the tokens that need logits: one per request.
    let lm_head = d.vocab * d.hidden * 2 / tp;
    out.push(KernelSpec::new(
        GEMM_LM_HEAD,
        at(lm_head, bw, s.gemm_of_roof)
            .max((lm_head as f64 * batch as f64 / s.peak_flops_per_s * 1e9).round() as i64),
    ));
    out.push(KernelSpec::new(SAMPLE, s.small_ns));
    out
}

/// The causes [`scenario`] plants.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cause {
    /// Llama-3-8B, TP 1, B = 4, s = 4,096: attention at half its roof (2× its floor),
    /// GEMMs at 95% of it.
    SlowAttentionSmallBatch,
    /// Llama-3-8B, TP 1, B = 32, s = 2,048: every GEMM at 97% of the roof.
    GemmsAtRoof,
    /// Llama-3-70B over 4 ranks (one per GPU), B = 32, s = 1,010: the TP shows only in
    /// the all-reduce template `cross_device_reduce_1stage<__nv_bfloat16, 4>`.
    Tp4,
    /// Llama-3-8B, 12 unmarked steps: a 32 × 1,000-token prefill first and again at
    /// step 6, decodes at B = 32, s = 1,010 around them.
    PrefillAmongDecodes,
    /// Llama-3-8B, unmarked decodes at s = 1,010 whose batch alternates 8 and 24: it
    /// shows only in the launch grid of vLLM's paged attention v2.
    BatchInGrid,
    /// [`Cause::Tp4`]'s decodes, except that every all-reduce of step `i` takes
    /// [`straggler_factor`]`(i)` times its usual 8 µs: the collectives wait on another
    /// rank in some steps, so the class's time per step spreads while the median hides it.
    StragglingAllReduce,
    /// Llama-3-8B, TP 1, B = 8, s = 1,010: qkv runs as a split-K cuBLAS GEMM at 70% of
    /// the roof followed by its `splitKreduce_kernel` (3 µs), o at 50% of the roof, the
    /// MLP GEMMs at 90%: by time the MLP GEMMs lead, by excess o and qkv do.
    SplitKGemms,
    /// Qwen3-30B-A3B, TP 1, B = 16, s = 1,024: the routed-expert GEMMs (triton
    /// `fused_moe_kernel`, w13 then w2) at [`MOE_EXPERTS_OF_ROOF`] of the roof for the
    /// experts 16 tokens touch in expectation, every other GEMM at 97%.
    MoeSlowExperts,
    /// [`Cause::MoeSlowExperts`]'s decodes with every GEMM, experts included, at 97%.
    MoeAtRoof,
    /// DeepSeek-V2-Lite (MLA, a dense first layer, 2 shared experts), TP 1, B = 8,
    /// s = 2,048: the absorbed W_UK and W_UV `bmm`s at [`MLA_BMM_OF_ROOF`] of the roof,
    /// every other GEMM at 97%.
    MlaDecode,
}

/// [`Cause::MoeSlowExperts`]: the routed experts' fraction of β.
pub(crate) const MOE_EXPERTS_OF_ROOF: f64 = 0.5;
/// [`Cause::MlaDecode`]: the absorbed `bmm`s' fraction of β.
pub(crate) const MLA_BMM_OF_ROOF: f64 = 0.3;

/// Every cause, with its `stepgate-synth planted --cause` name.
pub(crate) const CAUSES: [(&str, Cause); 10] = [
    ("slow-attention-small-batch", Cause::SlowAttentionSmallBatch),
    ("gemms-at-roof", Cause::GemmsAtRoof),
    ("tp4", Cause::Tp4),
    ("prefill-among-decodes", Cause::PrefillAmongDecodes),
    ("batch-in-grid", Cause::BatchInGrid),
    ("straggling-all-reduce", Cause::StragglingAllReduce),
    ("split-k-gemms", Cause::SplitKGemms),
    ("moe-slow-experts", Cause::MoeSlowExperts),
    ("moe-at-roof", Cause::MoeAtRoof),
    ("mla-decode", Cause::MlaDecode),
];

/// How many times its usual length every all-reduce of step `i` of
/// [`Cause::StragglingAllReduce`] takes: 1, 3, 5, 7, 1, 3, …
pub fn straggler_factor(i: usize) -> i64 {
    1 + 2 * (i % 4) as i64
}

/// The batch of step `i` of [`Cause::BatchInGrid`].
pub fn grid_batch(i: usize) -> u64 {
    if i.is_multiple_of(2) {
        8
    } else {
        24
    }
}

/// Unmarked steps launched eagerly, separated only by the GPU's idle gaps: the host waits
/// out the previous step's GPU time (its kernels and the gaps between them) and 1 ms more.
pub fn unmarked(kernels: Vec<Vec<KernelSpec>>) -> Vec<StepSpec> {
    let mut specs: Vec<StepSpec> = Vec::new();
    for ks in kernels {
        let before = specs.last().map_or(1_000_000, |p: &StepSpec| {
            p.kernels.iter().map(|k| k.duration_ns + 1_000).sum::<i64>() + 1_000_000
        });
        let mut st = StepSpec::new(None, LaunchMode::Eager, ks);
        st.host_gap_before_ns = before;
        specs.push(st);
    }
    specs
}

/// Steps of the planted scenario (`steps` of them; the prefill cause always writes 12),
/// on H100s. Decodes carry vLLM's detailed `execute_…` annotation except in
/// [`Cause::PrefillAmongDecodes`] and [`Cause::BatchInGrid`], whose steps are found by the
/// GPU's idle gaps.
pub fn scenario(cause: Cause, steps: usize) -> Scenario {
    let s = Speeds::default();
    let decode = |d: &Dense, tp: u64, b: u64, ctx: u64, sp: &Speeds| {
        let name = vllm_execute_detailed(b, [0; 5], [b, b, b * ctx, b, b * ctx]);
        let mut st = StepSpec::new(
            Some(&name),
            LaunchMode::GraphNode,
            step_kernels(d, tp, b, 1, ctx, sp),
        );
        st.host_gap_before_ns = 200_000;
        st
    };
    let (ranks, specs) = match cause {
        Cause::SlowAttentionSmallBatch => {
            let sp = Speeds {
                attention_of_roof: 0.5,
                gemm_of_roof: 0.95,
                ..s
            };
            (
                1,
                (0..steps)
                    .map(|_| decode(&Dense::LLAMA_3_8B, 1, 4, 4096, &sp))
                    .collect(),
            )
        }
        Cause::GemmsAtRoof => {
            let sp = Speeds {
                gemm_of_roof: 0.97,
                ..s
            };
            (
                1,
                (0..steps)
                    .map(|_| decode(&Dense::LLAMA_3_8B, 1, 32, 2048, &sp))
                    .collect(),
            )
        }
        Cause::Tp4 => (
            4,
            (0..steps)
                .map(|_| decode(&Dense::LLAMA_3_70B, 4, 32, 1010, &s))
                .collect(),
        ),
        Cause::StragglingAllReduce => (
            4,
            (0..steps)
                .map(|i| {
                    let sp = Speeds {
                        all_reduce_ns: s.all_reduce_ns * straggler_factor(i),
                        ..s
                    };
                    decode(&Dense::LLAMA_3_70B, 4, 32, 1010, &sp)
                })
                .collect(),
        ),
        Cause::SplitKGemms => (
            1,
            (0..steps)
                .map(|_| {
                    let mut st = decode(&Dense::LLAMA_3_8B, 1, 8, 1010, &s);
                    st.kernels = split_k(st.kernels, &Dense::LLAMA_3_8B, &s);
                    st
                })
                .collect(),
        ),
        Cause::MoeSlowExperts | Cause::MoeAtRoof | Cause::MlaDecode => {
            use super::planted_moe::{decodes, Moe, MoeSpeeds, Names};
            let (m, b, ctx, experts, bmm) = match cause {
                Cause::MoeSlowExperts => (Moe::QWEN3_30B_A3B, 16, 1024, MOE_EXPERTS_OF_ROOF, 0.97),
                Cause::MoeAtRoof => (Moe::QWEN3_30B_A3B, 16, 1024, 0.97, 0.97),
                _ => (Moe::DEEPSEEK_V2_LITE, 8, 2048, 0.97, MLA_BMM_OF_ROOF),
            };
            let sp = MoeSpeeds {
                hbm_bytes_per_s: s.hbm_bytes_per_s,
                gemm_of_roof: 0.97,
                experts_of_roof: experts,
                bmm_of_roof: bmm,
                attention_of_roof: s.attention_of_roof,
                kv_write_of_roof: s.kv_write_of_roof,
                small_ns: s.small_ns,
            };
            let names = Names {
                norm: NORM,
                rope: ROPE,
                act: ACT,
                kv_write: KV_WRITE,
                attention: ATTENTION,
                final_norm: FINAL_NORM,
                sample: SAMPLE,
            };
            (1, decodes(&m, b, ctx, &sp, &names, steps))
        }
        Cause::PrefillAmongDecodes => {
            let d = Dense::LLAMA_3_8B;
            let ks = (0..12).map(|i| {
                if i == 0 || i == 6 {
                    step_kernels(&d, 1, 32, 1000, 1000, &s)
                } else {
                    step_kernels(&d, 1, 32, 1, 1010, &s)
                }
            });
            (1, unmarked(ks.collect()))
        }
        Cause::BatchInGrid => {
            let d = Dense::LLAMA_3_8B;
            let ks = (0..steps).map(|i| {
                let b = grid_batch(i);
                paged_v2(
                    step_kernels(&d, 1, b, 1, 1010, &s),
                    &d,
                    1,
                    b,
                    1010,
                    s.small_ns,
                )
            });
            (1, unmarked(ks.collect()))
        }
    };
    Scenario::new(Layout::Nsys2026_2, ranks, specs)
}
