//! Kernel categories from an ordered regex table: built-in defaults that cover vLLM,
//! SGLang and TensorRT-LLM kernel names, overridable with a user TOML file; and the
//! kernel class each category's time is attributed to (docs/method.md §4.1).
//!
//! Order matters: the first matching rule wins, so specific families (communication, KV
//! writes, MoE routing, attention) come before generic ones (gemm, elementwise). A user
//! file's rules are tried before the defaults.

use std::path::Path;

use regex::{Regex, RegexSet};
use serde::Deserialize;

use crate::exit::{Error, Result};
use crate::wire::attribution::KernelClass;

/// The category of collectives (NCCL, RCCL, custom all-reduce): the one whose time
/// steps report as exposed when nothing else hides it.
pub const COMMUNICATION: &str = "communication";

/// The category names, in report order.
pub const CATEGORIES: &[&str] = &[
    "gemm",
    "attention",
    "kv_cache",
    "moe",
    "moe_routing",
    "communication",
    "norm",
    "activation",
    "rope",
    "quantize",
    "sampling",
    "elementwise",
    "memory",
    "other",
];

/// Built-in rules: (category, case-insensitive pattern). Sources of the name families:
/// NCCL/RCCL and vLLM/SGLang custom all-reduce kernels; vLLM `fused_moe`/Marlin MoE and
/// SGLang `moe_align`; FlashAttention, FlashInfer, FlashMLA, vLLM paged/unified attention,
/// TensorRT-LLM `fmha`/`xqa`/`mmha`; cuBLAS/CUTLASS/nvjet/hipBLASLt (`Cijk_`) GEMMs;
/// Triton inductor kernels (`triton_red_…rsqrt` is an RMSNorm, `triton_poi_` pointwise).
const DEFAULT_RULES: &[(&str, &str)] = &[
    ("memory", r"^\[memcpy|^\[memset"),
    // Inductor's generated pointwise, reduction and persistent-reduction kernels are named
    // after the ATen ops and modules they fuse (`…_moe_forward_0`, the `…_all_reduce_…` of
    // a TP embedding mask): never a GEMM, a collective or attention. One that names a norm
    // (or reduces with an rsqrt) is a norm; one that names another family's word is
    // elementwise; the rest go through the table below like any kernel.
    (
        "norm",
        r"^triton_(poi|red|per)_fused\w*(rsqrt|rms_?norm|layer_?norm)",
    ),
    (
        "elementwise",
        r"^triton_(poi|red|per)_fused\w*(all_?reduce|all_?gather|reduce_?scatter|alltoall|moe|expert|attn|attention|flash|gemm|matmul|bmm|_mm_|_mm$)",
    ),
    // Activation quantize kernels, before the families whose words their signatures carry
    // (TensorRT-LLM's quantize_with_block_size takes a flashinfer:: argument). A norm
    // fused with its quantization (aiter add_rmsnorm_quant, vLLM
    // rms_norm_dynamic_per_token_quant) stays a norm: the later generic rule sees it
    // after the norm rule.
    (
        "quantize",
        r"quantize_with_block_size|per_token_group_quant|scaled_fp8_quant|scaled_int8_quant|dynamic_\w*scaled_\w*quant|fp4_quant|mxfp\d_quant|block_?scale_?quant|cvt_fp16_to_fp4|cvt_\w*_to_fp8",
    ),
    // FlashAttention-2's and FlashMLA's split-KV combine (`flash::flash_fwd_splitkv_combine_kernel`,
    // `flash::flash_fwd_splitkv_mla_combine_kernel`) are attention's own reduction of its
    // KV splits, not an expert-parallel combine: before the communication rule, whose
    // `combine_kernel` (all-to-all combine) they would match.
    ("attention", r"splitkv\w*_combine|fwd_combine"),
    (
        "communication",
        r"nccl|rccl|all_?reduce|all_?gather|reduce_?scatter|alltoall|all_to_all|sendrecv|cross_device_reduce|one_?shot|two_?shot|quick_?reduce|deep_?ep|dispatch_kernel|combine_kernel|mscclpp|symm_mem",
    ),
    // KV-cache writes of the new tokens: vLLM reshape_and_cache(_flash) and
    // concat_and_cache_mla, SGLang store_kvcache / set_kv_buffer, FlashInfer
    // AppendPagedKVCache, TensorRT-LLM's fused rope + KV update.
    (
        "kv_cache",
        r"reshape_and_cache|concat_and_cache|store_kvcache|set_kv_buffer|append_?paged_?kv|updatekvcache|update_kv_cache",
    ),
    // Expert selection and the combine after the experts, not expert weights:
    // TensorRT-LLM moe::dev::routing and moe::dev::finalize, vLLM topk_softmax /
    // moe_align_block_size, SGLang grouped_topk, triton_kernels' routing (gpt-oss:
    // _topk_forward, _combined_routing_*, _sum_bitmatrix_rows, _finalize_matmul_scatter).
    (
        "moe_routing",
        r"topk_softmax|topkgating|grouped_topk|moe_align|count_and_sort|::routing::|routing_?kernel|moe::dev::finalize|finalizekernel|moe_finalize|finalize_moe|_finalize_matmul_scatter|^_topk_forward|_combined_routing|_sum_bitmatrix|moe_sum",
    ),
    ("moe", r"fused_moe|moe_|_moe|expert|fused_experts"),
    // Attention, including the triton prefix-prefill `_fwd_kernel` (vLLM
    // prefix_prefill.py), varlen FlashAttention on CUDA and ROCm (CK `fmha_fwd`, aiter
    // `mha_varlen_fwd`) and the triton unified attention's `reduce_segments`.
    (
        "attention",
        r"flash|fmha|attention|attn|paged|flashinfer|flashmla|mla_|batchdecode|batchprefill|xqa|mmha|masked_multihead|merge_state|splitkv|split_kv|cascade|decode_kernel|prefill_kernel|unified_attention|xformers|sdpa|cutlass_mla|aiter.*(fwd|decode)|^_fwd_kernel|varlen_fwd|mha_fwd|mha_varlen|^reduce_segments",
    ),
    (
        "gemm",
        r"gemm|gemv|matmul|cublas|cutlass|xmma|wgmma|nvjet|cijk_|scaled_mm|_mm_|splitk|sm\d+_.*(tn|nt|nn|tt)|hipblaslt|rocblas|marlin|machete|bmm",
    ),
    (
        "norm",
        r"rms_?norm|layer_?norm|group_?norm|batch_?norm|fused_add_rms|norm_kernel|rsqrt",
    ),
    ("rope", r"rotary|rope|pos_encoding|posencoding"),
    (
        "activation",
        r"silu|gelu|swiglu|geglu|act_and_mul|relu|sigmoid|activation|tanh",
    ),
    (
        "quantize",
        r"quant|fp8|fp4|int8|int4|mxfp|nvfp|awq|gptq|scaled_",
    ),
    (
        "sampling",
        r"sampl|top_?k|top_?p|min_p|argmax|multinomial|gumbel|penalt|logits|softmax|exponential_|argsort|radix_?sort|cub::",
    ),
    (
        "elementwise",
        r"elementwise|triton_poi|triton_red|triton_per|reduce_kernel|vectorized|unrolled|catarraybatched|index|fill|copy|cast|where|add|mul|embedding|gather|scatter|arange|zero",
    ),
];

/// The class a category's kernels are attributed to, from the class table
/// ([`crate::wire::class_table::CLASSES`]): GEMMs and MoE experts stream the weights,
/// attention reads the KV cache, KV writes, collectives and activation quantization are
/// their own classes, and the small kernels are the rest; `other` (and a user category
/// stepgate does not know) is in no class.
pub fn class_of(category: &str) -> Option<KernelClass> {
    KernelClass::of_category(category)
}

/// A compiled, ordered rule table.
#[derive(Debug, Clone)]
pub struct Categorizer {
    set: RegexSet,
    categories: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct UserFile {
    #[serde(default)]
    rule: Vec<UserRule>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct UserRule {
    category: String,
    pattern: String,
}

impl Default for Categorizer {
    fn default() -> Self {
        Categorizer::from_rules(
            DEFAULT_RULES
                .iter()
                .map(|(c, p)| ((*c).to_owned(), (*p).to_owned())),
        )
        .expect("built-in category patterns compile")
    }
}

impl Categorizer {
    fn from_rules(rules: impl Iterator<Item = (String, String)>) -> Result<Self> {
        let (categories, patterns): (Vec<String>, Vec<String>) =
            rules.map(|(c, p)| (c, format!("(?i){p}"))).unzip();
        let set = RegexSet::new(&patterns)
            .map_err(|e| Error::input(format!("a category pattern does not compile: {e}")))?;
        Ok(Categorizer { set, categories })
    }

    /// Defaults, with the rules of a user TOML file tried first:
    /// `[[rule]]` tables of `category = "…"` and `pattern = "regex"`.
    pub(crate) fn with_user_file(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            Error::input(format!(
                "cannot read categories file {}: {e}",
                path.display()
            ))
        })?;
        let user: UserFile = toml::from_str(&text).map_err(|e| {
            Error::input(format!(
                "{} is not a categories file ([[rule]] with category and pattern): {}",
                path.display(),
                e.message()
            ))
        })?;
        for r in &user.rule {
            Regex::new(&r.pattern).map_err(|e| {
                Error::input(format!(
                    "{}: pattern for category {:?} does not compile: {e}",
                    path.display(),
                    r.category
                ))
            })?;
        }
        let rules = user
            .rule
            .into_iter()
            .map(|r| (r.category, r.pattern))
            .chain(
                DEFAULT_RULES
                    .iter()
                    .map(|(c, p)| ((*c).to_owned(), (*p).to_owned())),
            );
        Categorizer::from_rules(rules)
    }

    /// The category of a kernel (or `[memcpy …]`) name; `other` when nothing matches.
    /// Every category a kernel can get here, `other` included.
    pub fn names(&self) -> Vec<&str> {
        let mut v: Vec<&str> = self.categories.iter().map(String::as_str).collect();
        v.push("other");
        v.sort_unstable();
        v.dedup();
        v
    }

    pub fn categorize(&self, name: &str) -> &str {
        // RegexSet reports every match; the lowest index is the first rule in order.
        match self.set.matches(name).iter().next() {
            Some(i) => &self.categories[i],
            None => "other",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn engine_kernel_names() {
        let c = Categorizer::default();
        let cases = [
            ("ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "communication"),
            ("void vllm::cross_device_reduce_1stage<__nv_bfloat16, 2>(...)", "communication"),
            ("fused_moe_kernel", "moe"),
            ("void flash::flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<128>>(...)", "attention"),
            ("void vllm::reshape_and_cache_flash_kernel<__nv_bfloat16>(...)", "kv_cache"),
            ("void (anonymous namespace)::store_kvcache<2048l, 4, false, long>(...)", "kv_cache"),
            ("void vllm::concat_and_cache_mla_kernel<__nv_bfloat16>(...)", "kv_cache"),
            ("void vllm::moe::topkGatingSoftmax<4, 128, 4, 16>(...)", "moe_routing"),
            ("void moe::dev::routing::routingIndicesHistogramKernel<...>(...)", "moe_routing"),
            ("void vllm::moe_align_block_size_kernel<int>(...)", "moe_routing"),
            ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64", "gemm"),
            ("nvjet_tst_128x256_64x4_2x1_v_bz_coopB_TNT", "gemm"),
            ("Cijk_Alik_Bljk_BBS_BH_MT128x128x64", "gemm"),
            ("void vllm::rms_norm_kernel<c10::BFloat16>(...)", "norm"),
            ("triton_red_fused__to_copy_add_mean_mul_pow_rsqrt_0", "norm"),
            ("void vllm::rotary_embedding_kernel<c10::BFloat16, true>(...)", "rope"),
            ("void vllm::act_and_mul_kernel<c10::BFloat16, &vllm::silu_kernel>(...)", "activation"),
            ("void vllm::scaled_fp8_quant_kernel<c10::BFloat16>(...)", "quantize"),
            ("void at::native::(anonymous namespace)::cunn_SoftMaxForward<4>(...)", "sampling"),
            ("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<int>>(...)", "elementwise"),
            ("[memcpy HtoD]", "memory"),
            ("[memset]", "memory"),
            ("[cuda graph 3]", "other"),
            // A flashinfer:: argument type does not make a quantize kernel attention.
            ("void tensorrt_llm::kernels::quantize_with_block_size<(tensorrt_llm::BlockScaleQuantizationType)2, __nv_bfloat16, 32, true>(int, int, int, int, __nv_bfloat16 const*, float const*, unsigned int*, unsigned int*, flashinfer::trtllm_alltoall::QuantizationSFLayout)", "quantize"),
            // A cutlass:: argument type does not make the MoE combine a weight GEMM.
            ("void moe::dev::finalize::finalizeKernelVecLoad<moe::dev::finalize::KernelParams<cutlass::bfloat16_t, cutlass::bfloat16_t, 4, true> >(moe::dev::finalize::KernelParams<cutlass::bfloat16_t, cutlass::bfloat16_t, 4, true>)", "moe_routing"),
            ("triton_poi_fused_constant_pad_nd_moe_forward_0", "elementwise"),
            ("triton_poi_fused_all_reduce_embedding_ge_lt_masked_fill_mul_sub_0", "elementwise"),
            ("triton_poi_fused_add_rms_norm_0", "norm"),
            ("ncclDevKernel_Generic_2(ncclDevKernelArgsStorage<4096ul>)", "communication"),
            ("_fwd_kernel", "attention"),
            ("reduce_segments", "attention"),
        ];
        for (name, want) in cases {
            assert_eq!(c.categorize(name), want, "{name}");
        }
    }

    #[test]
    fn every_built_in_category_has_its_class() {
        // `other` is the one category in no class; every other built-in has one.
        for c in CATEGORIES {
            assert_eq!(class_of(c).is_none(), *c == "other", "{c}");
        }
        assert_eq!(class_of("gemm"), Some(KernelClass::Weights));
        assert_eq!(class_of("quantize"), Some(KernelClass::Quantize));
        assert_eq!(class_of("moe_routing"), Some(KernelClass::Rest));
        assert_eq!(class_of("kv_cache"), Some(KernelClass::KvWrite));
        assert_eq!(class_of("my_team_category"), None);
    }

    #[test]
    fn user_rules_win() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("cats.toml");
        std::fs::write(
            &p,
            "[[rule]]\ncategory = \"attention\"\npattern = \"my_custom_gemm\"\n",
        )
        .unwrap();
        let c = Categorizer::with_user_file(&p).unwrap();
        assert_eq!(c.categorize("my_custom_gemm_kernel"), "attention");
        assert_eq!(c.categorize("other_gemm"), "gemm");
        std::fs::write(&p, "[[rule]]\ncategory = \"x\"\npattern = \"(\"\n").unwrap();
        assert!(Categorizer::with_user_file(&p).is_err());
    }
}
