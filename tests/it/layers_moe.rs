//! The per-layer GEMM map of MoE and MLA decodes (docs/method.md §4.1) on generated
//! vLLM captures: every role's bytes worked out here by hand from the models'
//! `config.json` numbers, the times from the planted fractions of β, the ranking by
//! excess, the verdict naming the slow GEMM, and nothing named when all run at the roof.

use serde_json::Value;
use stepgate::synth::planted::{self, Cause};

use crate::verdict_rules::{build, steps, verdict};

/// H100 SXM HBM3, bytes/s (cited in the GPU table; the planted schedule uses it too).
const BETA: f64 = 3.35e12;

/// Nanoseconds to move `bytes` at `fraction` of β, as the planted schedule rounds them.
fn ns_at(bytes: f64, fraction: f64) -> f64 {
    (bytes / (BETA * fraction) * 1e9).round()
}

fn floor_ns(bytes: f64) -> f64 {
    bytes / BETA * 1e9
}

fn us(ns: f64) -> String {
    format!("{:.1} µs", ns / 1e3)
}

fn layer_map(p: &std::path::Path, model: &str) -> Value {
    let j: Value = serde_json::from_str(&steps(p, &["--model", model], "json")).unwrap();
    j["groups"][0]["layers"].clone()
}

/// The row whose role is `r` or starts with `r (` (the routed experts' role says what
/// their bytes were derived from).
fn role<'a>(gemms: &'a [Value], r: &str) -> &'a Value {
    gemms
        .iter()
        .find(|g| {
            let s = g["role"].as_str().unwrap_or_default();
            s == r || s.starts_with(&format!("{r} ("))
        })
        .unwrap_or_else(|| panic!("no {r} in {gemms:?}"))
}

fn close(v: &Value, want: f64, tol: f64) {
    let got = v.as_f64().unwrap();
    assert!((got - want).abs() <= tol, "{got} vs {want}");
}

#[test]
fn qwen3_moe_layers_map_router_and_experts_and_rank_the_slow_experts_first() {
    let dir = tempfile::tempdir().unwrap();
    let p = build(
        dir.path(),
        "moe",
        &planted::scenario(Cause::MoeSlowExperts, 6),
    );
    let map = layer_map(&p, "qwen3-30b-a3b");
    assert!(map["ambiguous"].is_null(), "{map}");
    assert_eq!(map["layers"], 48);
    let gemms = map["gemms"].as_array().unwrap();
    // Qwen3-30B-A3B, bf16, TP 1: hidden 2048, 32 heads, 4 KV heads of 128, 128 experts
    // of 768, top-8. B = 16 tokens touch 128·(1 − (1 − 8/128)^16) experts in expectation.
    let touched = 128.0 * (1.0 - (1.0f64 - 8.0 / 128.0).powi(16));
    assert!((touched - 82.4).abs() < 0.05, "{touched}");
    let qkv = 2048.0 * 40.0 * 128.0 * 2.0; // 20,971,520 B
    let o = 32.0 * 128.0 * 2048.0 * 2.0; // 16,777,216 B
    let router = 2048.0 * 128.0 * 2.0; // 524,288 B
    let gate_up = touched * 2.0 * 2048.0 * 768.0 * 2.0;
    let down = touched * 768.0 * 2048.0 * 2.0;
    for (r, b, f) in [
        ("qkv", qkv, 0.97),
        ("o", o, 0.97),
        ("router", router, 0.97),
        ("experts_gate_up", gate_up, 0.5),
        ("experts_down", down, 0.5),
    ] {
        let g = role(gemms, r);
        close(&g["bytes"], b, b * 1e-12 + 1e-6);
        close(&g["time_ns"], ns_at(b, f), 0.5);
        close(&g["excess_ns"], ns_at(b, f) - floor_ns(b), 0.5);
        assert_eq!(g["launches_per_step"], 48, "{r}");
    }
    let e = role(gemms, "experts_gate_up");
    assert_eq!(e["kernel"], "fused_moe_kernel");
    assert!(e["role"]
        .as_str()
        .unwrap()
        .contains("derived: 82.4 of 128 experts touched, uniform routing"));
    // Ranked by excess per step: the experts' gate_up, then their down.
    let mut by: Vec<(f64, String)> = gemms
        .iter()
        .map(|g| {
            (
                g["excess_ns"].as_f64().unwrap() * g["launches_per_step"].as_f64().unwrap(),
                g["role"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    by.sort_by(|a, b| b.0.total_cmp(&a.0));
    assert!(by[0].1.starts_with("experts_gate_up"), "{by:?}");
    assert!(by[1].1.starts_with("experts_down"), "{by:?}");
    // The verdict names the slow expert GEMM with its numbers.
    let (_, line, _) = verdict(&p, &["--model", "qwen3-30b-a3b"]);
    let x = ns_at(gate_up, 0.5) - floor_ns(gate_up);
    let want = format!(
        "fused_moe_kernel (experts_gate_up (derived: 82.4 of 128 experts touched, uniform routing)) {} per step (48 × {}) at 50% of β",
        us((48.0 * x).round()),
        us(x.round())
    );
    assert!(line.contains(&want), "{line}\nwant {want}");
}

#[test]
fn moe_gemms_at_the_roof_are_not_named() {
    let dir = tempfile::tempdir().unwrap();
    let p = build(dir.path(), "roof", &planted::scenario(Cause::MoeAtRoof, 6));
    let map = layer_map(&p, "qwen3-30b-a3b");
    assert!(map["ambiguous"].is_null(), "{map}");
    for g in map["gemms"].as_array().unwrap() {
        let f = g["roof_fraction"].as_f64().unwrap();
        assert!((f - 0.97).abs() < 0.01, "{g}");
    }
    let (rule, line, _) = verdict(&p, &["--model", "qwen3-30b-a3b"]);
    assert_ne!(rule, "gemms-below-roof", "{line}");
    assert!(!line.contains("GEMMs by excess"), "{line}");
    assert!(!line.contains("GEMMs below"), "{line}");
}

#[test]
fn deepseek_v2_lite_maps_mla_shared_experts_and_its_dense_first_layer() {
    let dir = tempfile::tempdir().unwrap();
    let p = build(dir.path(), "mla", &planted::scenario(Cause::MlaDecode, 6));
    let map = layer_map(&p, "deepseek-v2-lite");
    assert!(map["ambiguous"].is_null(), "{map}");
    let gemms = map["gemms"].as_array().unwrap();
    // DeepSeek-V2-Lite, bf16, TP 1: hidden 2048, 16 heads, no q LoRA, kv_lora_rank 512,
    // nope 128 + rope 64, v 128; 64 experts of 1408, top-6, 2 shared experts (2816
    // wide); layer 0 dense (10944 wide), 26 MoE layers. B = 8.
    let touched = 64.0 * (1.0 - (1.0f64 - 6.0 / 64.0).powi(8));
    let rows = [
        ("kv_a", 2048.0 * 576.0 * 2.0, 0.97, 27),
        ("q", 2048.0 * 16.0 * 192.0 * 2.0, 0.97, 27),
        ("w_uk", 512.0 * 16.0 * 128.0 * 2.0, 0.3, 27),
        ("w_uv", 512.0 * 16.0 * 128.0 * 2.0, 0.3, 27),
        ("o", 16.0 * 128.0 * 2048.0 * 2.0, 0.97, 27),
        ("shared_gate_up", 2.0 * 2048.0 * 2816.0 * 2.0, 0.97, 26),
        ("shared_down", 2816.0 * 2048.0 * 2.0, 0.97, 26),
        ("router", 2048.0 * 64.0 * 2.0, 0.97, 26),
        (
            "experts_gate_up",
            touched * 2.0 * 2048.0 * 1408.0 * 2.0,
            0.97,
            26,
        ),
        ("experts_down", touched * 1408.0 * 2048.0 * 2.0, 0.97, 26),
        ("gate_up", 2.0 * 2048.0 * 10944.0 * 2.0, 0.97, 1),
        ("down", 10944.0 * 2048.0 * 2.0, 0.97, 1),
        ("lm_head", 102_400.0 * 2048.0 * 2.0, 0.97, 1),
    ];
    assert_eq!(gemms.len(), rows.len(), "{gemms:?}");
    for (r, b, f, n) in rows {
        let g = role(gemms, r);
        close(&g["bytes"], b, 1e-6);
        close(&g["time_ns"], ns_at(b, f), 0.5);
        assert_eq!(g["launches_per_step"], n, "{r}");
    }
    // The absorbed bmms at 30% of β are the GEMMs below the roof the verdict names.
    let (_, line, _) = verdict(&p, &["--model", "deepseek-v2-lite"]);
    let b = 512.0 * 16.0 * 128.0 * 2.0;
    let x = ns_at(b, 0.3) - floor_ns(b);
    assert!(
        line.contains(&format!(
            "(w_uv) {} per step (27 × {}) at 30% of β",
            us((27.0 * x).round()),
            us(x.round())
        )),
        "{line}"
    );
    assert!(line.contains("(w_uk) "), "{line}");
}
