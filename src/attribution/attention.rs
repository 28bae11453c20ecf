//! Which attention kernel family a step runs, and how that family lays out its decode
//! grid: the FlashAttention-2 "B × heads blocks against the SMs" reading holds for FA2's
//! non-split kernel and vLLM's paged attention v1 only; other families split the KV
//! themselves or schedule persistently, and get their own words or none.

use crate::categories::class_of;
use crate::categories::families::KernelFamily;
use crate::wire::attribution::KernelClass;
use crate::wire::steps::Step;

/// An attention kernel family, from its kernel name (docs/kernel-families.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    /// FlashAttention-2 `flash_fwd_kernel`: one block per (batch, head) in decode.
    Fa2,
    /// FlashAttention-2 `flash_fwd_splitkv_kernel`: the KV split across blocks.
    Fa2SplitKv,
    /// FlashAttention-3 (`FlashAttnFwdSm90`, a persistent tile scheduler).
    Fa3,
    /// FlashInfer `BatchDecode…` / `BatchPrefill…`: it plans its own KV split.
    FlashInfer,
    /// vLLM `paged_attention_v1_kernel`: `grid(num_heads, num_seqs)`.
    VllmPagedV1,
    /// vLLM `paged_attention_v2_kernel`: `grid(num_heads, num_seqs, partitions of 512)`.
    VllmPagedV2,
    /// vLLM ROCm `paged_attention_ll4mi_*`: `grid(num_seqs, partitions of 256, kv_heads)`.
    RocmLl4mi,
    /// Triton attention (vLLM unified attention, prefix-prefill `_fwd_kernel`, `attn_fwd`).
    Triton,
}

/// Each family's kernel-name family, first match wins: FA3 before FA2 (whose words its
/// names carry), split-KV before FA2's plain forward.
const BY_NAME: [(KernelFamily, Family); 8] = [
    (KernelFamily::AttentionFa3, Family::Fa3),
    (KernelFamily::AttentionFa2SplitKv, Family::Fa2SplitKv),
    (KernelFamily::AttentionFa2, Family::Fa2),
    (KernelFamily::AttentionFlashInfer, Family::FlashInfer),
    (KernelFamily::AttentionRocmLl4mi, Family::RocmLl4mi),
    (KernelFamily::AttentionPagedV1, Family::VllmPagedV1),
    (KernelFamily::AttentionPagedV2, Family::VllmPagedV2),
    (KernelFamily::AttentionTriton, Family::Triton),
];

impl Family {
    /// The family of one attention kernel name, or None for one this table does not know.
    pub fn of(name: &str) -> Option<Family> {
        BY_NAME
            .iter()
            .find(|(k, _)| k.matches(name))
            .map(|&(_, f)| f)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Family::Fa2 => "FA2",
            Family::Fa2SplitKv => "FA2 split-KV",
            Family::Fa3 => "FA3",
            Family::FlashInfer => "FlashInfer",
            Family::VllmPagedV1 => "vLLM paged attention v1",
            Family::VllmPagedV2 => "vLLM paged attention v2",
            Family::RocmLl4mi => "ROCm ll4mi paged attention",
            Family::Triton => "triton attention",
        }
    }

    /// The family of the step's attention kernel with the most exclusive time.
    pub(crate) fn of_step(step: &Step) -> Option<Family> {
        step.all_kernels
            .iter()
            .filter(|k| class_of(&k.category) == Some(KernelClass::Attention))
            .max_by_key(|k| k.exclusive_ns)
            .and_then(|k| Family::of(&k.name))
    }
}

/// What a decode grid's words need: the batch, heads, the mean context and the GPU.
#[derive(Debug, Clone, Copy)]
pub struct Grid {
    pub batch: Option<u64>,
    pub heads_per_gpu: u64,
    pub kv_heads_per_gpu: u64,
    /// Mean keys per request (Σ N_KV / requests), where the step states them.
    pub mean_context: Option<u64>,
    pub sms: u32,
    pub sm_word: &'static str,
}

/// The attention class's next action below the roof, in the words of the family that
/// runs; `at` is " at N% of β", `profiler` where DRAM throughput per kernel is read.
pub(crate) fn below_roof(family: Option<Family>, at: &str, g: &Grid, profiler: &str) -> String {
    let (sms, word) = (g.sms, g.sm_word);
    let check =
        format!("check the KV layout and page size ({profiler}'s DRAM throughput per kernel)");
    let Some(b) = g.batch.filter(|&b| b > 0) else {
        let fam = family
            .map(|f| format!(" ({})", f.as_str()))
            .unwrap_or_default();
        return format!("attention{at}{fam}: below the roof — {check}");
    };
    // A family whose grid already splits the KV into partitions is not told to split it.
    let splits = matches!(family, Some(Family::VllmPagedV2 | Family::RocmLl4mi));
    let fills = |blocks: u64, how: String| {
        if blocks < u64::from(sms) && splits {
            format!(
                "attention{at}: its decode grid ({how} = {blocks} blocks) on {sms} {word}, under-filled (one partial wave) although it splits the KV already — batch more"
            )
        } else if blocks < u64::from(sms) {
            format!(
                "attention{at}: its decode grid ({how} = {blocks} blocks) on {sms} {word}, under-filled (one partial wave) — use a split-KV (flash-decoding) kernel or batch more"
            )
        } else {
            format!("attention{at}: its decode grid ({how} = {blocks} blocks) fills the {sms} {word} — {check}")
        }
    };
    let parts = |size: u64| g.mean_context.map(|c| c.div_ceil(size).max(1));
    match family {
        Some(Family::Fa2) => fills(b * g.heads_per_gpu, format!("FA2: B × heads/GPU = {b} × {}", g.heads_per_gpu)),
        Some(Family::VllmPagedV1) => fills(
            b * g.heads_per_gpu,
            format!("vLLM paged v1: heads/GPU × B = {} × {b}", g.heads_per_gpu),
        ),
        Some(Family::VllmPagedV2) => match parts(512) {
            Some(p) => fills(
                b * g.heads_per_gpu * p,
                format!(
                    "vLLM paged v2, 512-key partitions cited from its launcher: heads/GPU × B × ⌈mean context/512⌉ = {} × {b} × {p}, derived",
                    g.heads_per_gpu
                ),
            ),
            None => format!("attention{at} (vLLM paged attention v2, split into 512-key partitions): below the roof — {check}"),
        },
        Some(Family::RocmLl4mi) => match parts(256) {
            Some(p) => fills(
                b * p * g.kv_heads_per_gpu,
                format!(
                    "ll4mi, 256-key partitions cited from vLLM's launcher: B × ⌈mean context/256⌉ × KV heads/GPU = {b} × {p} × {}, derived",
                    g.kv_heads_per_gpu
                ),
            ),
            None => format!("attention{at} (ROCm ll4mi, split into 256-key partitions per KV head): below the roof — {check}"),
        },
        Some(Family::Fa3) => format!(
            "attention{at} (FA3): its persistent scheduler spreads the tiles over the {word} itself, so batch × heads does not bound it — check its KV split (num_splits) and pack-GQA settings, the page size and the KV layout ({profiler})"
        ),
        Some(Family::Fa2SplitKv) => format!(
            "attention{at} (FA2 split-KV): the KV is already split across blocks — {check}"
        ),
        Some(Family::FlashInfer) => format!(
            "attention{at} (FlashInfer): it plans its own KV split, so batch × heads does not bound it — check its plan (page size, split) and whether CUDA-graph padding inflates the batch ({profiler})"
        ),
        Some(Family::Triton) => format!(
            "attention{at} (triton): its grid is the launcher's (unified attention splits the KV into segments) — {check}"
        ),
        None => format!("attention{at}: below the roof — {check}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_from_real_kernel_names() {
        for (name, f) in [
            ("void flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, cutlass::half_t, Flash_kernel_traits<128, 128, 64, 4, cutlass::half_t> >, false, true, false, false, true, true, false>(Flash_fwd_params)", Family::Fa2),
            ("void flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4, false, false, cutlass::bfloat16_t, Flash_kernel_traits<128, 64, 128, 4, cutlass::bfloat16_t> >, true, false, false, false, true, true, false, false>(Flash_fwd_params)", Family::Fa2SplitKv),
            ("void cutlass::device_kernel<flash::enable_sm90_or_later<flash::FlashAttnFwdSm90<x> > >(y)", Family::Fa3),
            ("void flashinfer::BatchDecodeWithPagedKVCacheKernel<x>(y)", Family::FlashInfer),
            ("void paged_attention_ll4mi_QKV_mfma16_kernel<0, __hip_bfloat16>(x)", Family::RocmLl4mi),
            ("void vllm::paged_attention_v1_kernel<__nv_bfloat16>(x)", Family::VllmPagedV1),
            ("void vllm::paged_attention_v2_kernel<__nv_bfloat16>(x)", Family::VllmPagedV2),
            ("kernel_unified_attention_3d", Family::Triton),
            ("_fwd_kernel", Family::Triton),
        ] {
            assert_eq!(Family::of(name), Some(f), "{name}");
        }
        assert_eq!(
            Family::of("fmha_cutlassF_bf16_aligned_64x128_rf_sm80"),
            None
        );
    }

    fn grid(batch: u64, ctx: Option<u64>) -> Grid {
        Grid {
            batch: Some(batch),
            heads_per_gpu: 32,
            kv_heads_per_gpu: 8,
            mean_context: ctx,
            sms: 304,
            sm_word: "CUs",
        }
    }

    #[test]
    fn each_family_gets_its_own_grid_or_none() {
        // FA2: 4 × 32 = 128 blocks on 304 CUs: under-filled.
        let fa2 = below_roof(Some(Family::Fa2), " at 40% of β", &grid(4, None), "p");
        assert!(
            fa2.contains("FA2: B × heads/GPU = 4 × 32 = 128 blocks) on 304 CUs, under-filled"),
            "{fa2}"
        );
        // ll4mi at B = 32 and a mean context of 1,010: 32 × ⌈1010/256⌉ = 4 × 8 = 1,024.
        let ll = below_roof(Some(Family::RocmLl4mi), "", &grid(32, Some(1010)), "p");
        assert!(ll.contains("ll4mi, 256-key partitions cited from vLLM's launcher: B × ⌈mean context/256⌉ × KV heads/GPU = 32 × 4 × 8, derived = 1024 blocks) fills the 304 CUs"), "{ll}");
        assert!(!ll.contains("FA2"));
        // FA3 and FlashInfer: no B × heads reading at all.
        for f in [
            Family::Fa3,
            Family::FlashInfer,
            Family::Triton,
            Family::Fa2SplitKv,
        ] {
            let s = below_roof(Some(f), "", &grid(4, Some(1000)), "p");
            assert!(!s.contains("B × heads/GPU ="), "{s}");
            assert!(!s.contains("under-filled"), "{s}");
        }
        // ll4mi at B = 1, 300 keys: 1 × 2 × 8 = 16 blocks, under-filled, yet already split.
        let small = below_roof(Some(Family::RocmLl4mi), "", &grid(1, Some(300)), "p");
        assert!(
            small.contains("= 16 blocks) on 304 CUs, under-filled"),
            "{small}"
        );
        assert!(
            small.ends_with("although it splits the KV already — batch more"),
            "{small}"
        );
        // An unknown family: nothing about grids.
        let none = below_roof(None, "", &grid(4, None), "p");
        assert!(!none.contains("grid"), "{none}");
    }
}
