//! Kernel categories from an ordered table of kernel families ([`families`], where every
//! kernel-name pattern lives): built-in defaults that cover vLLM, SGLang and TensorRT-LLM
//! kernel names, overridable with a user TOML file; and the kernel class each category's
//! time is attributed to (docs/method.md §4.1).
//!
//! Order matters: the first matching rule wins, so specific families (communication, KV
//! writes, MoE routing, attention) come before generic ones (gemm, elementwise). A user
//! file's rules are tried before the defaults. The user file overrides categories only:
//! the readers that ask a finer family (the step kinds, the launch-grid counts, TP/DP
//! evidence) read the built-in families, since what they read from a kernel (its grid
//! layout, which collective it runs) is a fact of that kernel's source that a renamed
//! category does not change.

use std::path::Path;
use std::sync::LazyLock;

use regex::{Regex, RegexSet};
use serde::Deserialize;

use crate::exit::{Error, Result};
use crate::wire::attribution::KernelClass;

pub mod families;

use families::KernelFamily;

/// The category of collectives (NCCL, RCCL, custom all-reduce): the one whose time
/// steps report as exposed when nothing else hides it.
pub(crate) const COMMUNICATION: &str = "communication";

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

/// Built-in rules: (category, kernel family), first match wins. The patterns and their
/// sources are the families' rows ([`families::FAMILIES`]); the order is this table's:
/// copies; inductor kernels named after what they fuse (a norm, or elementwise whatever
/// family's word they carry); activation quantization before the families whose words
/// its signatures carry; attention's split-KV combine before the collectives'
/// `combine_kernel`; KV writes and MoE routing before the MoE experts, attention and the
/// GEMMs, whose words they carry; the generic families last.
const DEFAULT_RULES: &[(&str, KernelFamily)] = &[
    ("memory", KernelFamily::Copy),
    ("norm", KernelFamily::InductorNorm),
    ("elementwise", KernelFamily::InductorNamesOther),
    ("quantize", KernelFamily::QuantizeActivation),
    ("attention", KernelFamily::AttentionSplitCombine),
    (COMMUNICATION, KernelFamily::Collective),
    ("kv_cache", KernelFamily::KvWrite),
    ("moe_routing", KernelFamily::MoeRouting),
    ("moe", KernelFamily::MoeExpert),
    ("attention", KernelFamily::Attention),
    ("gemm", KernelFamily::Gemm),
    ("norm", KernelFamily::Norm),
    ("rope", KernelFamily::Rope),
    ("activation", KernelFamily::Activation),
    ("quantize", KernelFamily::Quantize),
    ("sampling", KernelFamily::Sampling),
    ("elementwise", KernelFamily::Elementwise),
];

/// The built-in rules as (category, pattern) pairs.
fn default_rules() -> impl Iterator<Item = (String, String)> {
    DEFAULT_RULES
        .iter()
        .map(|(c, f)| ((*c).to_owned(), f.row().pattern.to_owned()))
}

/// The category the built-in table gives a kernel name (a `--categories` file aside): for
/// the readers that classify names outside a steps report (the operating point's
/// training reader), so they agree with the built-in categories.
pub fn builtin(name: &str) -> &'static str {
    static BUILTIN: LazyLock<Categorizer> = LazyLock::new(Categorizer::default);
    BUILTIN.categorize(name)
}

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
        Categorizer::from_rules(default_rules()).expect("built-in category patterns compile")
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
            .chain(default_rules());
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
