//! The PR comment's first two lines on generated captures: line 1 the verdict with the
//! change and its interval, line 2 the largest contributor with its share of the change of
//! the mean wall. The captures are built so that every kernel but two has the same
//! duration on both sides (the same seeded jitter) and those two move by a set number of
//! ns per step, so the expected share is known by construction: Δ kernel / Σ Δ kernels.

use std::path::Path;

use crate::common;

const GEMM: &str = "pr_comment_gemm_kernel";
const NORM: &str = "pr_comment_norm_kernel";

/// A vLLM CUDA-graph decode capture (24 kernels × 60 steps, ±0.5% jitter from `seed`)
/// whose kernels 0 and 1 are `GEMM` and `NORM`, without jitter, their base durations
/// plus `add` ns each.
fn capture(path: &Path, seed: u64, add: [i64; 2]) {
    use rand::{Rng, SeedableRng};
    use stepgate::synth::workload::*;
    let mut rng = rand::rngs::SmallRng::seed_from_u64(seed);
    let name = vllm_execute_detailed(32, [0; 5], [32, 32, 32 * 2048, 32, 32 * 2048]);
    let base = decode_kernels(24);
    let specs = (0..60)
        .map(|_| {
            let ks = base
                .iter()
                .enumerate()
                .map(|(k, spec)| {
                    // Drawn for every kernel, so both sides draw the same sequence.
                    let jitter = 1.0 + rng.random_range(-0.005..0.005);
                    match k {
                        0 => KernelSpec::new(GEMM, 40_000 + add[0]),
                        1 => KernelSpec::new(NORM, 20_000 + add[1]),
                        _ => KernelSpec::new(&spec.name, (spec.duration_ns as f64 * jitter) as i64),
                    }
                })
                .collect();
            let mut s = StepSpec::new(Some(&name), LaunchMode::GraphNode, ks);
            s.host_gap_before_ns = 50_000;
            s
        })
        .collect();
    let scn = Scenario::new(stepgate::synth::Layout::Nsys2026_2, 1, specs);
    build(&scn, path).expect("generated capture");
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The gate's PR comment for a candidate whose two kernels moved by `add` ns per step.
fn comment(add: [i64; 2]) -> Vec<String> {
    let d = tempfile::tempdir().unwrap();
    let base = d.path().join("base.sqlite");
    capture(&base, 7, [0, 0]);
    let json = d.path().join("base.json");
    let (code, _, err) = common::run(&["baseline", "record", s(&base), "-o", s(&json)]);
    assert_eq!(code, 0, "{err}");
    let cand = d.path().join("cand.sqlite");
    capture(&cand, 7, add);
    let md = d.path().join("gate.md");
    let (code, out, err) = common::run(&[
        "gate",
        s(&cand),
        "--baseline",
        s(&json),
        "--markdown",
        s(&md),
    ]);
    assert!(code == 0 || code == 1, "{code}: {out}{err}");
    let text = std::fs::read_to_string(&md).unwrap();
    text.lines().map(str::to_owned).collect()
}

#[test]
fn line_two_names_the_largest_contributor_with_its_share_of_the_change() {
    // GEMM +30 µs, norm +10 µs per step, nothing else moves: the wall moves +40 µs and
    // the GEMM is 30 / 40 = 75% of it.
    let lines = comment([30_000, 10_000]);
    assert!(lines[0].starts_with("### ❌ Regression"), "{}", lines[0]);
    // Line 1: the verdict with the change and its 95% interval.
    assert!(lines[0].contains("95% interval"), "{}", lines[0]);
    assert_eq!(
        lines[1],
        format!(
            "Largest contributor: `{GEMM}` +30.0 µs per step (mean): 75% of the +40.0 µs change in the mean wall."
        ),
        "{}",
        lines.join("\n")
    );
}

#[test]
fn a_contributor_larger_than_the_change_is_more_than_all_of_it() {
    // GEMM +30 µs, norm −10 µs: the wall moves +20 µs, the GEMM 30 / 20 = 150% of it.
    let lines = comment([30_000, -10_000]);
    assert_eq!(
        lines[1],
        format!(
            "Largest contributor: `{GEMM}` +30.0 µs per step (mean): 150% of the +20.0 µs change in the mean wall."
        ),
        "{}",
        lines.join("\n")
    );
}
