//! The per-layer view of a decode step (docs/method.md §4.1): a decode step repeats one
//! kernel sequence per layer; find that period from the attention kernel that runs once
//! per layer, and map the GEMMs in it to the model's linear layers by their order
//! around attention (o right after it, the MLP's gate/up then down, qkv before the next
//! one), each with its own weight bytes and achieved bandwidth. When the sequence does
//! not repeat, or the order or the bytes do not fit the model, it says why instead of
//! guessing. A split-K GEMM's separate reduction (cuBLASLt `splitKreduce_kernel`,
//! hipBLASLt's `…_PostGSU…`, CUTLASS `ReduceSplitK`) is folded into the GEMM it finishes
//! first: it is that GEMM's time, and counted apart it breaks the GEMMs-per-layer match.
//! MoE and MLA layers are mapped by `layers::moe` (router, routed and shared experts, MLA's
//! projections and absorbed `bmm`s).

use crate::categories::families::KernelFamily;
use crate::wire::attribution::{KernelClass, LayerGemm, LayerMap};
use crate::wire::roofline::{ModelSpec, MoeRouting};

mod moe;
pub use moe::is_expert_gemm;

/// One kernel of the step in launch order: its name, class and exclusive time.
#[derive(Debug, Clone)]
pub struct Kernel<'a> {
    pub name: &'a str,
    pub class: Option<KernelClass>,
    pub exclusive_ns: i64,
}

/// Whether a kernel is the separate reduction of a split-K GEMM
/// ([`KernelFamily::GemmSplitKReduction`]: cuBLASLt's `cublasLt::splitKreduce_kernel<…>`,
/// hipBLASLt/Tensile's `Cijk_…_PostGSU<N>…` (the "global split-U" reduction, named in
/// Tensile's `KernelWriterConversion`), CUTLASS's `cutlass::reduction::kernel::ReduceSplitK`
/// (the reduction of `GemmSplitKParallel`); docs/kernel-families.md lists them).
pub fn is_split_k_reduction(name: &str) -> bool {
    KernelFamily::GemmSplitKReduction.matches(name)
}

/// A GEMM with the split-K reduction that follows it folded in (launch order).
#[derive(Debug, Clone)]
struct Folded<'a> {
    kernel: Kernel<'a>,
    reduction: Option<&'a str>,
}

/// Fold each split-K reduction into the GEMM launched last before it, across the small
/// kernels (rest, no class) between them; attention, a collective or a KV write between
/// them breaks the link. A reduction with no such GEMM stays a kernel of its own.
fn fold_split_k<'a>(kernels: &[Kernel<'a>]) -> Vec<Folded<'a>> {
    let mut out: Vec<Folded<'a>> = Vec::with_capacity(kernels.len());
    let mut last_gemm: Option<usize> = None;
    for k in kernels {
        let weights = k.class == Some(KernelClass::Weights);
        if weights && is_split_k_reduction(k.name) {
            if let Some(g) = last_gemm.filter(|&g| out[g].reduction.is_none()) {
                out[g].kernel.exclusive_ns += k.exclusive_ns;
                out[g].reduction = Some(k.name);
                continue;
            }
        }
        if weights {
            last_gemm = Some(out.len());
        } else if !matches!(k.class, Some(KernelClass::Rest) | None) {
            // Attention, a collective or a KV write between them: not this GEMM's.
            last_gemm = None;
        }
        out.push(Folded {
            kernel: k.clone(),
            reduction: None,
        });
    }
    out
}

/// A mapping that puts a GEMM this far above the roof is the wrong mapping.
const ABOVE_ROOF: f64 = 1.05;

/// What the mapping needs of the model: its geometry, the per-GPU split, the roof, and
/// how the floor spreads tokens over routed experts (MoE layers price the experts the
/// step's tokens touch as the floor does).
#[derive(Debug, Clone, Copy)]
pub struct Geometry<'a> {
    pub model: &'a ModelSpec,
    pub tp: u32,
    pub pp: u32,
    pub roof_bytes_per_s: f64,
    pub routing: MoeRouting,
}

impl Geometry<'_> {
    /// Layers on one pipeline stage.
    fn layers(&self) -> u64 {
        self.model.layers / u64::from(self.pp.max(1))
    }

    /// Weight bytes per GPU of one dense layer's GEMMs, in the order they run after
    /// attention: o, gate_up, down, then the next layer's qkv.
    fn dense_roles(&self) -> [(&'static str, f64); 4] {
        let m = self.model;
        let (d, h, kv, dh, i) = (m.hidden, m.heads, m.kv_heads, m.head_dim, m.intermediate);
        let per = m.weight_dtype.bytes_per_param() / f64::from(self.tp.max(1));
        [
            ("o", (h * dh * d) as f64 * per),
            ("gate_up", (2 * d * i) as f64 * per),
            ("down", (i * d) as f64 * per),
            ("qkv", (d * (h + 2 * kv) * dh) as f64 * per),
        ]
    }
}

fn ambiguous(period: usize, repeats: u64, layers: u64, why: String) -> LayerMap {
    LayerMap {
        period_kernels: period,
        repeats,
        layers,
        gemms: Vec::new(),
        ambiguous: Some(why),
    }
}

/// Map one decode step's kernels (launch order) onto the model's layers; `tokens` is the
/// step's new tokens (Σ N_Q, None when unknown), which the routed experts' bytes depend on.
pub fn map(launched: &[Kernel<'_>], g: &Geometry<'_>, tokens: Option<f64>) -> LayerMap {
    let layers = g.layers();
    let folded = fold_split_k(launched);
    let reduction = |i: usize| folded[i].reduction;
    let kernels: Vec<Kernel<'_>> = folded.iter().map(|f| f.kernel.clone()).collect();
    let kernels = &kernels[..];
    // The anchor: an attention kernel that runs exactly once per layer.
    let mut counts: Vec<(&str, u64)> = Vec::new();
    for k in kernels
        .iter()
        .filter(|k| k.class == Some(KernelClass::Attention))
    {
        match counts.iter_mut().find(|c| c.0 == k.name) {
            Some(c) => c.1 += 1,
            None => counts.push((k.name, 1)),
        }
    }
    let Some(&(anchor, _)) = counts.iter().find(|c| c.1 == layers) else {
        return ambiguous(
            0,
            0,
            layers,
            format!(
                "no attention kernel runs once per layer ({layers} layers on this GPU): the layer period is not visible"
            ),
        );
    };
    let at: Vec<usize> = (0..kernels.len())
        .filter(|&i| kernels[i].name == anchor)
        .collect();
    // A layer's skeleton: its GEMMs, attention, KV writes and collectives in order. A
    // stray copy or elementwise kernel on a side stream does not change the layer.
    let skeleton = |a: usize, b: usize| -> Vec<usize> {
        (a..b)
            .filter(|&i| !matches!(kernels[i].class, Some(KernelClass::Rest) | None))
            .collect()
    };
    let segments: Vec<Vec<usize>> = at.windows(2).map(|w| skeleton(w[0], w[1])).collect();
    let mut lengths: Vec<usize> = at.windows(2).map(|w| w[1] - w[0]).collect();
    lengths.sort_unstable();
    let period = lengths.get(lengths.len() / 2).copied().unwrap_or(0);
    if g.model.mla.is_some() || g.model.moe.is_some() {
        // Their dense-FFN layers (DeepSeek's first_k_dense_replace) repeat another
        // sequence than the MoE ones: moe::map compares each kind apart.
        return moe::map(&folded, &at, &segments, g, tokens, period);
    }
    let same = segments.windows(2).all(|w| {
        w[0].len() == w[1].len()
            && w[0]
                .iter()
                .zip(&w[1])
                .all(|(&a, &b)| kernels[a].name == kernels[b].name)
    });
    if segments.is_empty() || !same {
        return ambiguous(
            period,
            layers,
            layers,
            "the GEMMs and attention kernels between consecutive attention kernels differ from layer to layer"
                .to_owned(),
        );
    }
    // GEMM positions within a segment's skeleton.
    let gemm_at: Vec<usize> = (0..segments[0].len())
        .filter(|&j| kernels[segments[0][j]].class == Some(KernelClass::Weights))
        .collect();
    let roles = g.dense_roles();
    if gemm_at.len() != roles.len() {
        return ambiguous(
            period,
            layers,
            layers,
            format!(
                "{} GEMMs per layer where a dense layer has {} (qkv, o, gate_up, down): fused or split differently",
                gemm_at.len(),
                roles.len()
            ),
        );
    }
    let full = segments.len() as f64;
    let mut gemms: Vec<LayerGemm> = gemm_at
        .iter()
        .zip(roles)
        .map(|(&j, (role, bytes))| {
            let total: i64 = segments
                .iter()
                .map(|seg| kernels[seg[j]].exclusive_ns)
                .sum();
            let first = segments[0][j];
            let mut r = row(
                Some(role),
                kernels[first].name,
                total as f64 / full,
                Some(bytes),
                g,
            );
            launched_per_step(&mut r, layers);
            r.split_k_reduction =
                reduction(first).map(|n| crate::timing::labels::display_name("", n));
            r
        })
        .collect();
    // lm_head: after the last attention come that layer's o, gate_up and down, then
    // one more GEMM.
    let last = at[at.len() - 1];
    let tail: Vec<usize> = (last..kernels.len())
        .filter(|&i| kernels[i].class == Some(KernelClass::Weights))
        .collect();
    if let Some(&i) = tail.last().filter(|_| tail.len() == roles.len()) {
        let m = g.model;
        let bytes = (m.vocab * m.hidden) as f64 * 2.0 / f64::from(g.tp.max(1));
        let k = &kernels[i];
        let mut r = row(
            Some("lm_head"),
            k.name,
            k.exclusive_ns as f64,
            Some(bytes),
            g,
        );
        r.split_k_reduction = reduction(i).map(|n| crate::timing::labels::display_name("", n));
        gemms.push(r);
    }
    if let Some(r) = gemms
        .iter()
        .find(|r| r.roof_fraction.is_some_and(|f| f > ABOVE_ROOF))
    {
        let name = r.kernel.clone();
        let role = r.role.clone().unwrap_or_default();
        let mut m = ambiguous(
            period,
            layers,
            layers,
            format!(
                "mapped by order, {name} as {role} would run above the roof: the order does not fit the model's layers"
            ),
        );
        m.gemms = gemms.into_iter().map(unpriced).collect();
        return m;
    }
    LayerMap {
        period_kernels: period,
        repeats: layers,
        layers,
        gemms,
        ambiguous: None,
    }
}

/// A GEMM row without its role and pricing: what an order that does not fit the model
/// leaves of it (its kernel and time are still measured).
pub(crate) fn unpriced(r: LayerGemm) -> LayerGemm {
    LayerGemm {
        role: None,
        bytes: None,
        achieved_bytes_per_s: None,
        roof_fraction: None,
        excess_ns: None,
        excess_per_step_ns: None,
        ..r
    }
}

fn row(
    role: Option<&str>,
    kernel: &str,
    time_ns: f64,
    bytes: Option<f64>,
    g: &Geometry<'_>,
) -> LayerGemm {
    let achieved = bytes.filter(|_| time_ns > 0.0).map(|b| b / (time_ns / 1e9));
    let excess = bytes
        .filter(|_| g.roof_bytes_per_s > 0.0)
        .map(|b| time_ns - b / g.roof_bytes_per_s * 1e9);
    LayerGemm {
        role: role.map(str::to_owned),
        kernel: crate::timing::labels::display_name("", kernel),
        split_k_reduction: None,
        time_ns,
        launches_per_step: 1,
        bytes,
        achieved_bytes_per_s: achieved,
        roof_fraction: achieved.map(|a| a / g.roof_bytes_per_s),
        excess_ns: excess,
        excess_per_step_ns: excess,
    }
}

/// A row launched `n` times per step: its per-step excess follows.
fn launched_per_step(r: &mut LayerGemm, n: u64) {
    r.launches_per_step = n;
    r.excess_per_step_ns = r.excess_ns.map(|x| x * n as f64);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn k(name: &str, class: Option<KernelClass>, ns: i64) -> Kernel<'_> {
        Kernel {
            name,
            class,
            exclusive_ns: ns,
        }
    }

    #[test]
    fn a_split_k_reduction_folds_into_the_gemm_before_it_and_nowhere_else() {
        let w = Some(KernelClass::Weights);
        let ks = [
            // A reduction with no GEMM before it stays a kernel of its own.
            k("void cublasLt::splitKreduce_kernel<32>", w, 5),
            k("gemm_a", w, 100),
            k("elementwise", Some(KernelClass::Rest), 1),
            k("void cublasLt::splitKreduce_kernel<32>", w, 7),
            k("Cijk_Ailk_Bljk_BBS_MT64", w, 50),
            k("Cijk_SS_BiasS_HAS_ScaleAlphaVec_PostGSU16_VW1", w, 3),
            // Attention in between: the next reduction is not that GEMM's.
            k("gemm_b", w, 40),
            k("flash_fwd", Some(KernelClass::Attention), 9),
            k("void cutlass::reduction::kernel::ReduceSplitK<x>", w, 2),
        ];
        let f = fold_split_k(&ks);
        let got: Vec<(&str, i64, Option<&str>)> = f
            .iter()
            .map(|x| (x.kernel.name, x.kernel.exclusive_ns, x.reduction))
            .collect();
        assert_eq!(
            got,
            vec![
                ("void cublasLt::splitKreduce_kernel<32>", 5, None),
                (
                    "gemm_a",
                    107,
                    Some("void cublasLt::splitKreduce_kernel<32>")
                ),
                ("elementwise", 1, None),
                (
                    "Cijk_Ailk_Bljk_BBS_MT64",
                    53,
                    Some("Cijk_SS_BiasS_HAS_ScaleAlphaVec_PostGSU16_VW1")
                ),
                ("gemm_b", 40, None),
                ("flash_fwd", 9, None),
                ("void cutlass::reduction::kernel::ReduceSplitK<x>", 2, None),
            ]
        );
        assert!(!is_split_k_reduction(
            "nvjet_tst_64x32_64x16_4x1_v_bz_splitK_TNT"
        ));
    }

    #[test]
    fn a_stream_k_gemm_is_one_gemm_with_nothing_to_fold() {
        // CUTLASS 3 adds a stream-K GEMM's partial tiles inside the kernel
        // (docs/kernel-families.md): the GEMM after it is a GEMM, not its reduction.
        let w = Some(KernelClass::Weights);
        let stream_k = "void cutlass::device_kernel<cutlass::gemm::kernel::GemmUniversal<cute::tuple<int, int, int, int>, cutlass::gemm::collective::CollectiveMma<>, cutlass::gemm::StreamKScheduler, void>>(cutlass::gemm::kernel::GemmUniversal<>::Params)";
        assert!(!is_split_k_reduction(stream_k));
        let ks = [k(stream_k, w, 80), k("gemm_b", w, 40)];
        let f = fold_split_k(&ks);
        let got: Vec<(&str, i64, Option<&str>)> = f
            .iter()
            .map(|x| (x.kernel.name, x.kernel.exclusive_ns, x.reduction))
            .collect();
        assert_eq!(got, vec![(stream_k, 80, None), ("gemm_b", 40, None)]);
    }
}
