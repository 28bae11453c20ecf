//! The run verdict's excess rules (docs/verdict-rules.md): `largest-excess` for
//! under-utilized steps and `class-below-roof` for steps at the roof overall that hide a
//! class far below its own. Floors and excesses are worked out here from the model's
//! bytes and the planted kernel times, not read from the tool.

use serde_json::Value;
use stepgate::synth::planted::{self, Cause};
use stepgate::synth::workload::{self, KernelSpec, LaunchMode, Scenario, StepSpec};
use stepgate::synth::Layout;

use crate::verdict_rules::{build, steps, verdict, H100, LLAMA_8B_GEMM_BYTES};

fn us(ns: f64) -> String {
    format!("{:.1} µs", ns / 1e3)
}

/// Llama-3-8B's KV bytes per token: 32 layers × 8 KV heads × 128 × (K and V) × 2 bytes.
pub(crate) const KV_BYTES_PER_TOKEN: f64 = (32 * 8 * 128 * 2 * 2) as f64;

/// 3 decode steps (B = 1, s = 1,024): the weights streamed by three GEMMs at half the
/// roof together (a third each, so none dominates), 50 µs of attention, a 5 µs KV write
/// and a 20 µs norm. Returns the three GEMMs' summed ns.
pub(crate) fn slow_gemms() -> (Scenario, i64) {
    let third = (LLAMA_8B_GEMM_BYTES / H100 * 1e9 / 0.5 / 3.0).round() as i64;
    let name = workload::vllm_execute_detailed(1, [0; 5], [1, 1, 1024, 1, 1024]);
    let ks = vec![
        KernelSpec::new(planted::GEMM_QKV, third),
        KernelSpec::new(planted::ATTENTION, 50_000),
        KernelSpec::new(planted::KV_WRITE, 5_000),
        KernelSpec::new(planted::GEMM_GATE_UP, third),
        KernelSpec::new(planted::NORM, 20_000),
        KernelSpec::new(planted::GEMM_DOWN, third),
    ];
    let steps = (0..3)
        .map(|_| StepSpec::new(Some(&name), LaunchMode::Eager, ks.clone()))
        .collect();
    (Scenario::new(Layout::Nsys2026_2, 1, steps), 3 * third)
}

#[test]
fn under_utilized_steps_name_the_class_with_the_largest_excess() {
    let dir = tempfile::tempdir().unwrap();
    let (scn, gemms) = slow_gemms();
    let p = build(dir.path(), "slow", &scn);
    let (rule, line, held) = verdict(&p, &["--model", "llama-3-8b"]);
    assert_eq!(rule, "largest-excess", "{line}");
    let gemm_excess = gemms as f64 - LLAMA_8B_GEMM_BYTES / H100 * 1e9;
    let attention_excess = 50_000.0 - 1024.0 * KV_BYTES_PER_TOKEN / H100 * 1e9;
    let kv_excess = 5_000.0 - KV_BYTES_PER_TOKEN / H100 * 1e9;
    let head = format!(
        "the largest excess (time − floor, derived) of the median decode step is weight GEMMs: {} of ",
        us(gemm_excess)
    );
    assert!(line.starts_with(&head), "{line}");
    assert!(
        line.ends_with(" excess, at 50% of its roof — start there"),
        "{line}"
    );
    // The total: the three priced by hand, plus the norm's 20 µs less its floor (a few
    // activation bytes, not priced here): between the three and the three + 20 µs.
    let total: f64 = line[head.len()..]
        .split(" µs")
        .next()
        .unwrap()
        .parse::<f64>()
        .unwrap()
        * 1e3;
    let known = gemm_excess + attention_excess + kv_excess;
    assert!(
        total >= known - 100.0 && total <= known + 20_000.0,
        "{total} vs {known}"
    );
    assert!(held.is_empty(), "{held:?}");
}

#[test]
fn largest_excess_needs_a_floor_and_steps_below_it() {
    let dir = tempfile::tempdir().unwrap();
    let (scn, _) = slow_gemms();
    let p = build(dir.path(), "slow", &scn);
    // No model: nothing is priced, so there is no excess to rank.
    let (rule, line, _) = verdict(&p, &[]);
    assert_ne!(rule, "largest-excess", "{line}");
    // Every GEMM at 97% of the roof: the steps are at the roof, not under-utilized.
    let roof = build(
        dir.path(),
        "roof",
        &planted::scenario(Cause::GemmsAtRoof, 3),
    );
    let (rule, line, _) = verdict(&roof, &["--model", "llama-3-8b"]);
    assert_ne!(rule, "largest-excess", "{line}");
}

/// The planted small-batch decode: B = 4, s = 4,096, attention at half its roof.
pub(crate) fn slow_attention_excess_ns() -> f64 {
    let tokens = 4.0 * 4096.0;
    // 32 layers, each launch rounded to whole ns by the generator.
    let per_layer = (tokens * KV_BYTES_PER_TOKEN / 32.0 / (H100 * 0.5) * 1e9).round();
    32.0 * per_layer - tokens * KV_BYTES_PER_TOKEN / H100 * 1e9
}

#[test]
fn a_class_below_its_roof_is_named_though_the_step_is_at_the_roof() {
    let dir = tempfile::tempdir().unwrap();
    let scn = planted::scenario(Cause::SlowAttentionSmallBatch, 5);
    let p = dir.path().join("slow.sqlite");
    let exp = workload::build(&scn, &p).unwrap();
    let (rule, line, held) = verdict(&p, &["--model", "llama-3-8b"]);
    assert_eq!(rule, "class-below-roof", "{line}");
    let excess = slow_attention_excess_ns();
    assert_eq!(us(excess), "641.0 µs");
    // Every step is planted alike: the median step's wall is any step's.
    let s = &exp.steps[0];
    let wall = (s.gpu_end_ns.unwrap() - s.gpu_start_ns.unwrap()) as f64;
    let want = format!(
        "within 1.3x of the floor overall, but in the median decode step attention holds {} of excess ({:.0}% of its wall, derived): attention at 50% of β",
        us(excess),
        100.0 * excess / wall
    );
    assert!(line.starts_with(&want), "{line}\n{want}");
    assert!(!line.contains("only fewer bytes help"), "{line}");
    assert_eq!(held.len(), 1, "{held:?}");
    // Each step's own action says the same, not "at the roof — only fewer bytes help".
    let j: Value = serde_json::from_str(&steps(&p, &["--model", "llama-3-8b"], "json")).unwrap();
    for s in j["steps"].as_array().unwrap() {
        let a = &s["attribution"];
        assert_eq!(a["shape"], "at-memory-roof");
        let action = a["action"].as_str().unwrap();
        assert!(
            action.starts_with(&format!(
                "kernels are back to back and within 1.3x of the floor, but attention holds {} of excess",
                us(excess)
            )),
            "{action}"
        );
    }
}

#[test]
fn steps_at_the_roof_in_every_class_keep_the_roof_advice() {
    let dir = tempfile::tempdir().unwrap();
    let p = build(
        dir.path(),
        "roof",
        &planted::scenario(Cause::GemmsAtRoof, 5),
    );
    let (rule, line, _) = verdict(&p, &["--model", "llama-3-8b"]);
    assert_ne!(rule, "class-below-roof", "{line}");
    assert!(line.contains("only fewer bytes help"), "{line}");
}
