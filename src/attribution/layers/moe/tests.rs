//! The MoE layer map's tests: expert GEMMs, routing and the all-to-all around them.

use super::super::{map as map_layers, Kernel};
use super::*;
use crate::roofline::presets::preset;
use crate::wire::roofline::{ModelSpec, MoeRouting};

fn geometry(m: &ModelSpec) -> Geometry<'_> {
    Geometry {
        model: m,
        tp: 1,
        pp: 1,
        roof_bytes_per_s: 3.35e12,
        routing: MoeRouting::Uniform,
    }
}

fn sum(roles: &[Role]) -> f64 {
    roles.iter().map(|r| r.bytes.unwrap()).sum()
}

#[test]
fn a_moe_layers_roles_add_up_to_what_the_floor_prices_for_it() {
    // Qwen3-30B-A3B at B = 16 (bf16): per layer qkv 2048·40·128·2 = 20,971,520,
    // o 32·128·2048·2 = 16,777,216, router 2048·128·2 = 524,288, the experts
    // 82.4 × (3·2048·768·2 = 9,437,184).
    let m = preset("qwen3-30b-a3b").unwrap();
    let g = geometry(&m);
    let t = 16.0;
    let n = 128.0 * (1.0 - (1.0f64 - 8.0 / 128.0).powi(16));
    let per_layer = 20_971_520.0 + 16_777_216.0 + 524_288.0 + n * 9_437_184.0;
    let roles: Vec<Role> = [
        g.post_attention(),
        g.moe_ffn(Some(t), 2)[0].clone(),
        g.pre_attention()[0].clone(),
    ]
    .concat();
    assert!((sum(&roles) - per_layer).abs() < 1e-3, "{}", sum(&roles));
    // The floor: linear + routed experts over 48 layers, plus the router (priced
    // with the norms at 2 bytes): 48 × 2048·128·2.
    let split = m.streamed_weight_split(t, MoeRouting::Uniform, 1, 1);
    let floor = split.linear + split.experts + 48.0 * 524_288.0;
    assert!((48.0 * per_layer - floor).abs() < 1.0, "{floor}");
}

#[test]
fn deepseek_v2_lites_layers_add_up_to_the_floor_dense_first_layer_included() {
    // MoE layer: kv_a 2048·576, q 2048·16·192, W_UK and W_UV 512·16·128 each, o
    // 16·128·2048, shared 3·2048·2816, router 2048·64, experts n × 3·2048·1408; the
    // dense layer 3·2048·10944 in place of the MoE FFN. All bf16 (2 bytes).
    let m = preset("deepseek-v2-lite").unwrap();
    let g = geometry(&m);
    let t = 8.0;
    let n = 64.0 * (1.0 - (1.0f64 - 6.0 / 64.0).powi(8));
    let attn = 2.0 * (2048.0 * 576.0 + 2048.0 * 3072.0 + 2.0 * 512.0 * 2048.0 + 2048.0 * 2048.0);
    let moe = 2.0 * (3.0 * 2048.0 * 2816.0 + 2048.0 * 64.0 + n * 3.0 * 2048.0 * 1408.0);
    let dense = 2.0 * 3.0 * 2048.0 * 10944.0;
    let post = g.post_attention();
    for pre in g.pre_attention() {
        assert_eq!(sum(&post) + sum(&pre), attn);
    }
    for ffn in g.moe_ffn(Some(t), 2) {
        assert!((sum(&ffn) - moe).abs() < 1e-3);
    }
    assert_eq!(sum(&g.dense_ffn()), dense);
    let split = m.streamed_weight_split(t, MoeRouting::Uniform, 1, 1);
    let floor = split.linear + split.experts + 26.0 * 2048.0 * 64.0 * 2.0;
    assert!(
        (27.0 * attn + 26.0 * moe + dense - floor).abs() < 1.0,
        "{floor}"
    );
}

fn k(name: &str, class: KernelClass, ns: i64) -> Kernel<'_> {
    Kernel {
        name,
        class: Some(class),
        exclusive_ns: ns,
    }
}

/// Nanoseconds for `bytes` at 90% of 3.35 TB/s.
fn t(bytes: f64) -> i64 {
    (bytes / (3.35e12 * 0.9) * 1e9).round() as i64
}

#[test]
fn q_before_kv_a_is_told_apart_by_bytes_and_a_missing_expert_kernel_is_named() {
    // Three MLA + dense-FFN layers (deepseek-v2-lite's attention, its dense FFN as
    // if every layer were dense) launched q_proj first, as SGLang does.
    let mut m = preset("deepseek-v2-lite").unwrap();
    m.moe = None;
    m.layers = 3;
    let g = geometry(&m);
    let (w, a) = (KernelClass::Weights, KernelClass::Attention);
    let b = |p: f64| p * 2.0;
    let q = t(b(2048.0 * 3072.0));
    let kv_a = t(b(2048.0 * 576.0));
    let bmm = t(b(512.0 * 2048.0));
    let o = t(b(2048.0 * 2048.0));
    let (gu, dn) = (t(b(2.0 * 2048.0 * 10944.0)), t(b(10944.0 * 2048.0)));
    let mut ks = Vec::new();
    for _ in 0..3 {
        ks.extend([
            k("gemm_q", w, q),
            k("gemm_kv_a", w, kv_a),
            k("bmm_uk", w, bmm),
            k("flash_mla", a, 50_000),
            k("bmm_uv", w, bmm),
            k("gemm_o", w, o),
            k("gemm_gate_up", w, gu),
            k("gemm_down", w, dn),
        ]);
    }
    ks.push(k("gemm_lm_head", w, t(b(102_400.0 * 2048.0))));
    let map = map_layers(&ks, &g, Some(8.0));
    assert!(map.ambiguous.is_none(), "{:?}", map.ambiguous);
    let kernel_of = |r: &str| {
        map.gemms
            .iter()
            .find(|x| x.role.as_deref() == Some(r))
            .map(|x| x.kernel.clone())
    };
    assert_eq!(kernel_of("q").as_deref(), Some("gemm_q"));
    assert_eq!(kernel_of("kv_a").as_deref(), Some("gemm_kv_a"));
    assert_eq!(kernel_of("lm_head").as_deref(), Some("gemm_lm_head"));
    // A MoE model whose layers run no kernel stepgate knows as a routed expert.
    let qm = preset("qwen3-30b-a3b").unwrap();
    let mut qm = qm.clone();
    qm.layers = 3;
    if let Some(moe) = qm.moe.as_mut() {
        moe.moe_layers = 3;
    }
    let g = geometry(&qm);
    let mut ks = Vec::new();
    for _ in 0..3 {
        ks.extend([
            k("gemm_qkv", w, 1_000),
            k("flash_attn", a, 5_000),
            k("gemm_o", w, 1_000),
            k("gemm_router", w, 100),
            k("cutlass_grouped_experts", w, 9_000),
        ]);
    }
    let map = map_layers(&ks, &g, Some(8.0));
    let why = map.ambiguous.unwrap();
    assert!(
        why.starts_with("4 GEMMs per MoE layer (0 of them routed-expert kernels) where this model's layer has 5 (o, router, experts_gate_up, experts_down, qkv)"),
        "{why}"
    );
}

#[test]
fn one_expert_kernel_per_layer_carries_both_expert_matrices() {
    // Qwen3-30B-A3B cut to 3 layers, its experts in one launch per layer: the row is
    // `experts` with 82.4 (B = 16) × 3·2048·768·2 bytes, its time the kernel's.
    let mut m = preset("qwen3-30b-a3b").unwrap();
    m.layers = 3;
    if let Some(moe) = m.moe.as_mut() {
        moe.moe_layers = 3;
    }
    let g = geometry(&m);
    let (w, a) = (KernelClass::Weights, KernelClass::Attention);
    let n = 128.0 * (1.0 - (1.0f64 - 8.0 / 128.0).powi(16));
    let experts = n * 3.0 * 2048.0 * 768.0 * 2.0;
    let mut ks = Vec::new();
    for _ in 0..3 {
        ks.extend([
            k("gemm_qkv", w, t(2048.0 * 40.0 * 128.0 * 2.0)),
            k("flash_attn", a, 5_000),
            k("gemm_o", w, t(32.0 * 128.0 * 2048.0 * 2.0)),
            k("gemm_router", w, t(2048.0 * 128.0 * 2.0)),
            k("_matmul_ogs_NNT_bf16xbf16xbf16", w, t(experts)),
        ]);
    }
    let map = map_layers(&ks, &g, Some(16.0));
    assert!(map.ambiguous.is_none(), "{:?}", map.ambiguous);
    let e = map
        .gemms
        .iter()
        .find(|x| {
            x.role
                .as_deref()
                .is_some_and(|r| r.starts_with("experts (derived: 82.4 of 128"))
        })
        .unwrap();
    assert!((e.bytes.unwrap() - experts).abs() < 1e-3);
    assert_eq!(e.time_ns, t(experts) as f64);
    assert_eq!(e.launches_per_step, 3);
    // Without the step's token count the experts' bytes are unknown, not guessed.
    let map = map_layers(&ks, &g, None);
    let e = map
        .gemms
        .iter()
        .find(|x| x.kernel.starts_with("_matmul_ogs"))
        .unwrap();
    assert!(e.bytes.is_none() && e.excess_ns.is_none(), "{e:?}");
}
