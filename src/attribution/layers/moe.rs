//! The per-layer map of MoE and MLA decode layers (docs/method.md §4.1). A MoE layer's
//! GEMMs run, after attention, as o, then the FFN — the router (hidden × E), the routed
//! experts (vLLM's and SGLang's triton `fused_moe_kernel` launched twice: w13 = gate_up,
//! then w2 = down; gpt-oss's triton_kernels `_matmul_ogs`), the shared experts where the
//! model has them — then the next layer's attention projections: qkv, or MLA's q / q_a +
//! kv_a (vLLM's `fused_qkv_a_proj`), q_b and the absorbed W_UK `bmm`, with W_UV's `bmm`
//! after attention and before o. Engines order the router and the shared experts (and
//! MLA's q and kv_a) differently, so each documented order is tried and kept only when no
//! GEMM would run above the roof: by order and by bytes, never by order alone. Dense-FFN
//! layers (DeepSeek's `first_k_dense_replace`) are mapped apart from the MoE ones. The
//! routed experts' bytes are derived: the distinct experts the step's tokens touch under
//! the floor's routing, times one expert's matrix.

use super::{ambiguous, launched_per_step, row, Folded, Geometry, ABOVE_ROOF};
use crate::categories::families::KernelFamily;
use crate::wire::attribution::{KernelClass, LayerGemm, LayerMap};

/// Whether a GEMM-class kernel is a routed-expert GEMM ([`KernelFamily::MoeExpertGemm`]:
/// vLLM's and SGLang's triton `fused_moe_kernel` (and `fused_moe_kernel_gptq_awq`),
/// launched once for w13 and once for w2 (`fused_moe.py`), and triton_kernels'
/// `_matmul_ogs_…` that vLLM runs for gpt-oss's MXFP4 experts; docs/kernel-families.md
/// lists them).
pub fn is_expert_gemm(name: &str) -> bool {
    KernelFamily::MoeExpertGemm.matches(name)
}

/// One linear layer: its role, its bytes per layer on one GPU (None when they depend on
/// a token count the step does not state), and whether an expert kernel runs it.
#[derive(Debug, Clone, PartialEq)]
struct Role {
    name: String,
    bytes: Option<f64>,
    expert: bool,
}

fn role(name: &str, bytes: f64) -> Role {
    Role {
        name: name.to_owned(),
        bytes: Some(bytes),
        expert: false,
    }
}

impl Geometry<'_> {
    /// Bytes per weight of the attention projections and of the rest, over TP.
    fn per_weight(&self) -> (f64, f64) {
        let m = self.model;
        let wb = m.weight_dtype.bytes_per_param();
        let ab = m.attention_dtype.map_or(wb, |d| d.bytes_per_param());
        let tp = f64::from(self.tp.max(1));
        (ab / tp, wb / tp)
    }

    /// The GEMMs after attention: MLA's W_UV `bmm` (the value half of kv_b), then o.
    fn post_attention(&self) -> Vec<Role> {
        let m = self.model;
        let (a, _) = self.per_weight();
        match &m.mla {
            Some(l) => vec![
                role("w_uv", (l.kv_lora_rank * m.heads * l.v_head_dim) as f64 * a),
                role("o", (m.heads * l.v_head_dim * m.hidden) as f64 * a),
            ],
            None => vec![role("o", (m.heads * m.head_dim * m.hidden) as f64 * a)],
        }
    }

    /// The GEMMs before the next attention, in each order an engine launches them.
    fn pre_attention(&self) -> Vec<Vec<Role>> {
        let m = self.model;
        let (a, _) = self.per_weight();
        let d = m.hidden;
        let Some(l) = &m.mla else {
            let qkv = (d * (m.heads + 2 * m.kv_heads) * m.head_dim) as f64 * a;
            return vec![vec![role("qkv", qkv)]];
        };
        let qk = l.qk_nope_head_dim + l.qk_rope_head_dim;
        let kv_a = (d * (l.kv_lora_rank + l.qk_rope_head_dim)) as f64 * a;
        let w_uk = role(
            "w_uk",
            (l.kv_lora_rank * m.heads * l.qk_nope_head_dim) as f64 * a,
        );
        match l.q_lora_rank {
            // vLLM's MultiHeadLatentAttentionWrapper: kv_a_proj_with_mqa, then q_proj;
            // other implementations launch q_proj first.
            None => {
                let q = role("q", (d * m.heads * qk) as f64 * a);
                let kv = role("kv_a", kv_a);
                vec![vec![kv.clone(), q.clone(), w_uk.clone()], vec![q, kv, w_uk]]
            }
            // fused_qkv_a_proj (q_a and kv_a_proj_with_mqa in one GEMM), then q_b.
            Some(r) => vec![vec![
                role("qkv_a", (d * r) as f64 * a + kv_a),
                role("q_b", (r * m.heads * qk) as f64 * a),
                w_uk,
            ]],
        }
    }

    /// A dense SwiGLU FFN's GEMMs.
    fn dense_ffn(&self) -> Vec<Role> {
        let (d, i) = (self.model.hidden, self.model.intermediate);
        let (_, w) = self.per_weight();
        vec![
            role("gate_up", (2 * d * i) as f64 * w),
            role("down", (i * d) as f64 * w),
        ]
    }

    /// A MoE FFN's GEMMs in each documented order, with `experts` expert kernels (2:
    /// gate_up then down; 1: both in one launch).
    fn moe_ffn(&self, tokens: Option<f64>, experts: usize) -> Vec<Vec<Role>> {
        let Some(moe) = &self.model.moe else {
            return Vec::new();
        };
        let d = self.model.hidden;
        let (_, w) = self.per_weight();
        // The router is replicated and kept at 2 bytes, as the floor prices it.
        let router = role("router", (d * moe.num_experts) as f64 * 2.0);
        let touched = tokens.map(|t| self.routing.experts_touched(moe, t));
        let label = |what: &str| match touched {
            Some(n) => format!(
                "{what} (derived: {n:.1} of {} experts touched, {} routing)",
                moe.num_experts,
                routing_word(self.routing)
            ),
            None => format!("{what} (bytes unknown: the step's token count is not known)"),
        };
        let expert = |what: &str, params: u64| Role {
            name: label(what),
            bytes: touched.map(|n| n * params as f64 * w),
            expert: true,
        };
        let mi = moe.moe_intermediate;
        let routed = match experts {
            1 => vec![expert("experts", 3 * d * mi)],
            _ => vec![
                expert("experts_gate_up", 2 * d * mi),
                expert("experts_down", mi * d),
            ],
        };
        let si = moe.shared_intermediate;
        if si == 0 {
            return vec![[vec![router], routed].concat()];
        }
        let shared = vec![
            role("shared_gate_up", (2 * d * si) as f64 * w),
            role("shared_down", (si * d) as f64 * w),
        ];
        vec![
            // DeepseekV2MoE (vLLM before SharedFusedMoE, SGLang's forward_normal): the
            // shared experts, the gate, then the routed experts.
            [shared.clone(), vec![router.clone()], routed.clone()].concat(),
            // The gate first, then the shared experts before the routed ones (where an
            // engine runs them inside its fused MoE layer).
            [vec![router.clone()], shared.clone(), routed.clone()].concat(),
            // The shared experts after the routed ones.
            [vec![router], routed, shared].concat(),
        ]
    }
}

fn routing_word(r: crate::wire::roofline::MoeRouting) -> &'static str {
    match r {
        crate::wire::roofline::MoeRouting::Uniform => "uniform",
        crate::wire::roofline::MoeRouting::Spread => "spread",
        crate::wire::roofline::MoeRouting::Packed => "packed",
    }
}

/// Layers on this GPU whose FFN is dense: the model's first ones, on the last pipeline
/// stage as the floor prices it.
fn dense_layers_here(g: &Geometry<'_>, here: u64) -> u64 {
    let total = g.model.layers;
    let moe = g.model.moe.as_ref().map_or(0, |m| m.moe_layers.min(total));
    (total - moe).saturating_sub(total - here)
}

/// Map MoE/MLA decode layers. `segments[i]` holds the skeleton (kernel indices) from
/// layer i's anchor attention kernel to layer i+1's.
pub(super) fn map(
    folded: &[Folded<'_>],
    at: &[usize],
    segments: &[Vec<usize>],
    g: &Geometry<'_>,
    tokens: Option<f64>,
    period: usize,
) -> LayerMap {
    let layers = g.layers();
    let dense_here = dense_layers_here(g, layers) as usize;
    let k = |i: usize| &folded[i].kernel;
    let gemms_of = |seg: &Vec<usize>| -> Vec<usize> {
        seg.iter()
            .copied()
            .filter(|&i| k(i).class == Some(KernelClass::Weights))
            .collect()
    };
    let names = |seg: &Vec<usize>| -> Vec<&str> { seg.iter().map(|&i| k(i).name).collect() };
    let (dense_segs, moe_segs) = segments.split_at(dense_here.min(segments.len()));
    let uniform = |segs: &[Vec<usize>]| segs.windows(2).all(|w| names(&w[0]) == names(&w[1]));
    let fail = |why: String| ambiguous(period, layers, layers, why);
    if segments.is_empty() || !uniform(dense_segs) || !uniform(moe_segs) {
        return fail("the GEMMs and attention kernels between consecutive attention kernels differ from layer to layer (dense-FFN and MoE layers compared apart)".to_owned());
    }
    // The layer kind the FFN roles come from: MoE where there are MoE layers here.
    let moe_kind = g.model.moe.is_some() && !moe_segs.is_empty();
    let main: &[Vec<usize>] = if moe_kind { moe_segs } else { dense_segs };
    let main_gemms = gemms_of(&main[0]);
    let experts = main_gemms
        .iter()
        .filter(|&&i| is_expert_gemm(k(i).name))
        .count();
    let post = g.post_attention();
    let ffns = if moe_kind {
        g.moe_ffn(tokens, experts)
    } else {
        vec![g.dense_ffn()]
    };
    // Every (pre-attention order, FFN order) whose roles land on kernels of their kind.
    let mut candidates: Vec<(Vec<Role>, Vec<Role>)> = Vec::new();
    for pre in g.pre_attention() {
        for ffn in &ffns {
            let seq: Vec<&Role> = post.iter().chain(ffn).chain(&pre).collect();
            let fits = seq.len() == main_gemms.len()
                && seq
                    .iter()
                    .zip(&main_gemms)
                    .all(|(r, &i)| r.expert == is_expert_gemm(k(i).name));
            if fits {
                candidates.push((pre.clone(), ffn.clone()));
            }
        }
    }
    if candidates.is_empty() {
        let want: Vec<String> = post
            .iter()
            .chain(&ffns[0])
            .chain(&g.pre_attention()[0])
            .map(|r| r.name.split(' ').next().unwrap_or_default().to_owned())
            .collect();
        return fail(format!(
            "{} GEMMs per {} layer ({experts} of them routed-expert kernels) where this model's layer has {} ({}): fused or split differently",
            main_gemms.len(),
            if moe_kind { "MoE" } else { "dense" },
            want.len(),
            want.join(", ")
        ));
    }
    let mut fitting: Vec<Vec<LayerGemm>> = Vec::new();
    let mut first_rows: Option<Vec<LayerGemm>> = None;
    for (pre, ffn) in &candidates {
        let rows = match rows_for(folded, at, segments, dense_here, g, &post, ffn, pre) {
            Ok(r) => r,
            Err(why) => return fail(why),
        };
        if first_rows.is_none() {
            first_rows = Some(rows.clone());
        }
        if !rows
            .iter()
            .any(|r| r.roof_fraction.is_some_and(|f| f > ABOVE_ROOF))
        {
            fitting.push(rows);
        }
    }
    match fitting.len() {
        1 => LayerMap {
            period_kernels: period,
            repeats: layers,
            layers,
            gemms: fitting.remove(0),
            ambiguous: None,
        },
        0 => {
            let rows = first_rows.unwrap_or_default();
            let bad = rows
                .iter()
                .find(|r| r.roof_fraction.is_some_and(|f| f > ABOVE_ROOF))
                .map(|r| (r.kernel.clone(), r.role.clone().unwrap_or_default()))
                .unwrap_or_default();
            let orders = if candidates.len() > 1 {
                format!(" in any of the {} orders engines launch them", candidates.len())
            } else {
                String::new()
            };
            let mut m = fail(format!(
                "mapped by order{orders}, {} as {} would run above the roof: the order does not fit the model's layers",
                bad.0, bad.1
            ));
            m.gemms = rows.into_iter().map(super::unpriced).collect();
            m
        }
        n => fail(format!(
            "{n} launch orders of the layer's GEMMs fit under the roof (router and shared experts, or MLA's q and kv_a, of like sizes): which GEMM is which is not decided by bytes"
        )),
    }
}

/// The rows of one candidate mapping: the attention GEMMs over every layer, the FFN
/// GEMMs over the layers of their kind, lm_head once.
#[allow(clippy::too_many_arguments)]
fn rows_for(
    folded: &[Folded<'_>],
    at: &[usize],
    segments: &[Vec<usize>],
    dense_here: usize,
    g: &Geometry<'_>,
    post: &[Role],
    ffn: &[Role],
    pre: &[Role],
) -> Result<Vec<LayerGemm>, String> {
    let layers = g.layers();
    let k = |i: usize| &folded[i].kernel;
    let gemms_of = |seg: &Vec<usize>| -> Vec<usize> {
        seg.iter()
            .copied()
            .filter(|&i| k(i).class == Some(KernelClass::Weights))
            .collect()
    };
    let per_seg: Vec<Vec<usize>> = segments.iter().map(gemms_of).collect();
    let moe_kind = g.model.moe.is_some() && segments.len() > dense_here;
    let is_main = |s: usize| (s >= dense_here) == moe_kind;
    let dense_ffn = g.dense_ffn();
    // Every segment must hold its kind's GEMMs, routed experts where the roles say so.
    for (s, gs) in per_seg.iter().enumerate() {
        let mid = if is_main(s) { ffn } else { &dense_ffn[..] };
        let want: Vec<bool> = post
            .iter()
            .chain(mid)
            .chain(pre)
            .map(|r| r.expert)
            .collect();
        let got: Vec<bool> = gs.iter().map(|&i| is_expert_gemm(k(i).name)).collect();
        if want != got {
            return Err(format!(
                "layer {s} has {} GEMMs where its kind of layer has {}: the dense-FFN and MoE layers do not split where the model says (first {dense_here} dense)",
                got.len(),
                want.len()
            ));
        }
    }
    let mut out: Vec<LayerGemm> = Vec::new();
    // One row: the mean over the segments `which` picks of the GEMM at position `pos`
    // (from the end when `from_end`), launched `launches` times a step.
    let mut push = |r: &Role,
                    which: &dyn Fn(usize) -> bool,
                    pos: usize,
                    from_end: bool,
                    launches: u64|
     -> Result<(), String> {
        let picked: Vec<usize> = (0..per_seg.len())
            .filter(|&s| which(s))
            .map(|s| {
                let gs = &per_seg[s];
                if from_end {
                    gs[gs.len() - 1 - pos]
                } else {
                    gs[pos]
                }
            })
            .collect();
        let Some(&first) = picked.first() else {
            return Ok(());
        };
        if picked.iter().any(|&i| k(i).name != k(first).name) {
            return Err(format!(
                "the {} GEMM is another kernel in the dense-FFN layers than in the MoE layers",
                r.name
            ));
        }
        let total: i64 = picked.iter().map(|&i| k(i).exclusive_ns).sum();
        let mut row = row(
            Some(&r.name),
            k(first).name,
            total as f64 / picked.len() as f64,
            r.bytes,
            g,
        );
        launched_per_step(&mut row, launches);
        row.split_k_reduction = folded[first]
            .reduction
            .map(|n| crate::timing::labels::display_name("", n));
        out.push(row);
        Ok(())
    };
    let all = |_: usize| true;
    for (j, r) in post.iter().enumerate() {
        push(r, &all, j, false, layers)?;
    }
    let main_launches = if moe_kind {
        layers - dense_here as u64
    } else {
        dense_here as u64
    };
    for (j, r) in ffn.iter().enumerate() {
        push(r, &is_main, post.len() + j, false, main_launches)?;
    }
    if moe_kind && dense_here > 0 {
        let dense = |s: usize| s < dense_here;
        for (j, r) in dense_ffn.iter().enumerate() {
            push(r, &dense, post.len() + j, false, dense_here as u64)?;
        }
    }
    for (j, r) in pre.iter().rev().enumerate() {
        push(r, &all, j, true, layers)?;
    }
    // lm_head: after the last attention come that layer's post-attention and FFN GEMMs
    // (a MoE layer's, the last layer being MoE), then one more GEMM.
    let last = at[at.len() - 1];
    let tail: Vec<usize> = (last..folded.len())
        .filter(|&i| k(i).class == Some(KernelClass::Weights))
        .collect();
    if let Some(&i) = tail
        .last()
        .filter(|_| tail.len() == post.len() + ffn.len() + 1)
    {
        let m = g.model;
        let bytes = (m.vocab * m.hidden) as f64 * 2.0 / f64::from(g.tp.max(1));
        let mut r = row(
            Some("lm_head"),
            k(i).name,
            k(i).exclusive_ns as f64,
            Some(bytes),
            g,
        );
        r.split_k_reduction = folded[i]
            .reduction
            .map(|n| crate::timing::labels::display_name("", n));
        out.push(r);
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
