//! The step-time waterfall: its rows add up to the change of the mean step wall time, on
//! sample sets built here and on two generated nsys exports whose schedule the generator
//! reports (one kernel slower, one new, one vanished, a bigger memcpy, a grown gap).

use std::collections::BTreeMap;

use stepgate::baseline::waterfall::waterfall;
use stepgate::baseline::{compare_unchecked, Policy};
use stepgate::wire::baseline::{metric, Baseline, BaselineMeta, Group, KernelSamples, SampleSet};
use stepgate::wire::gate::GAP_ROW;

use crate::common;

/// Per-step exclusive ns of each kernel as integers, so the test's own sums are exact.
struct Side {
    kernels: BTreeMap<&'static str, Vec<i64>>,
    gap: Vec<i64>,
}

impl Side {
    fn wall(&self, i: usize) -> i64 {
        self.kernels.values().map(|v| v[i]).sum::<i64>() + self.gap[i]
    }

    fn group(&self) -> Group {
        let n = self.gap.len();
        let mut g = Group::new("decode", Some(8));
        let f = |v: &[i64]| v.iter().map(|&x| x as f64).collect::<Vec<f64>>();
        let wall: Vec<i64> = (0..n).map(|i| self.wall(i)).collect();
        g.metrics.insert(metric::WALL_NS.into(), f(&wall));
        g.metrics.insert(metric::GAP_NS.into(), f(&self.gap));
        let busy: Vec<i64> = (0..n).map(|i| wall[i] - self.gap[i]).collect();
        g.metrics.insert(metric::BUSY_NS.into(), f(&busy));
        for (name, v) in &self.kernels {
            g.kernels.insert(
                (*name).to_owned(),
                KernelSamples {
                    short_name: (*name).to_owned(),
                    category: if name.starts_with("[memcpy") {
                        "memcpy".into()
                    } else {
                        "other".into()
                    },
                    exclusive_ns: f(v),
                    instances: vec![1.0; n],
                },
            );
        }
        g
    }
}

/// A small deterministic generator (LCG) so the samples vary per step without a crate.
fn lcg(seed: &mut u64) -> i64 {
    *seed = seed
        .wrapping_mul(6_364_136_223_846_793_005)
        .wrapping_add(1_442_695_040_888_963_407);
    ((*seed >> 33) % 10_000) as i64
}

fn side(n: usize, seed: u64, candidate: bool) -> Side {
    let mut s = seed;
    let mut kernels: BTreeMap<&'static str, Vec<i64>> = BTreeMap::new();
    let col = |base: i64, s: &mut u64| (0..n).map(|_| base + lcg(s)).collect::<Vec<i64>>();
    kernels.insert(
        "gemm_big",
        col(if candidate { 180_000 } else { 120_000 }, &mut s),
    );
    kernels.insert("attention", col(40_000, &mut s));
    kernels.insert("[memcpy HtoD]", col(9_000, &mut s));
    if candidate {
        kernels.insert("new_fused_kernel", col(25_000, &mut s));
    } else {
        kernels.insert("vanished_kernel", col(15_000, &mut s));
    }
    let gap = col(if candidate { 70_000 } else { 30_000 }, &mut s);
    Side { kernels, gap }
}

/// Mean of integers, summed exactly first.
fn mean_i(v: &[i64]) -> f64 {
    v.iter().sum::<i64>() as f64 / v.len() as f64
}

#[test]
fn rows_sum_to_the_change_of_the_mean_wall_on_generated_pairs() {
    for (seed, nb, nc) in [(1u64, 40usize, 55usize), (7, 200, 13), (99, 3, 1000)] {
        let b = side(nb, seed, false);
        let c = side(nc, seed ^ 0xabcd, true);
        let w = waterfall(&b.group(), &c.group());
        // Independent: the change of the mean wall from integer per-step walls.
        let wall_b: Vec<i64> = (0..nb).map(|i| b.wall(i)).collect();
        let wall_c: Vec<i64> = (0..nc).map(|i| c.wall(i)).collect();
        let delta = mean_i(&wall_c) - mean_i(&wall_b);
        let check = w.waterfall_check.as_ref().expect("check");
        assert!(
            (check.delta_mean_wall_ns - delta).abs() < 1e-6,
            "seed {seed}"
        );
        let sum: f64 = w.waterfall.iter().map(|r| r.delta_ns).sum();
        assert!((sum - delta).abs() < 1e-6, "seed {seed}: {sum} vs {delta}");
        assert!(check.exact);
        assert!((check.sum_rows_ns - sum).abs() < 1e-9);
        // Every name once (never merged), plus the gap row, which comes last.
        assert_eq!(w.waterfall.len(), 6);
        assert_eq!(w.waterfall.last().map(|r| r.name.as_str()), Some(GAP_ROW));
        let row = |n: &str| w.waterfall.iter().find(|r| r.name == n).unwrap();
        let exp = |s: &Side, n: &str| s.kernels.get(n).map_or(0.0, |v| mean_i(v));
        for name in [
            "gemm_big",
            "attention",
            "[memcpy HtoD]",
            "new_fused_kernel",
            "vanished_kernel",
        ] {
            let r = row(name);
            assert!((r.baseline_mean_ns - exp(&b, name)).abs() < 1e-6, "{name}");
            assert!((r.candidate_mean_ns - exp(&c, name)).abs() < 1e-6, "{name}");
            assert!(
                (r.delta_ns - (exp(&c, name) - exp(&b, name))).abs() < 1e-6,
                "{name}"
            );
        }
        assert_eq!(row("new_fused_kernel").baseline_mean_ns, 0.0);
        assert_eq!(row("vanished_kernel").candidate_mean_ns, 0.0);
        assert_eq!(row("[memcpy HtoD]").category, "memcpy");
        let g = row(GAP_ROW);
        assert!((g.delta_ns - (mean_i(&c.gap) - mean_i(&b.gap))).abs() < 1e-6);
        // The slower GEMM (+60 µs) is the largest kernel row; the gap grew by ~40 µs.
        assert_eq!(w.waterfall[0].name, "gemm_big");
        assert!(g.delta_ns > 35_000.0 && g.delta_ns < 45_000.0);
        assert!(w.waterfall_floor.is_none(), "no MBU, no floor");
    }
}

#[test]
fn floor_beside_the_waterfall_is_mbu_times_wall() {
    let b = side(20, 3, false);
    let c = side(20, 4, true);
    let (mut gb, mut gc) = (b.group(), c.group());
    // Floor 100 µs per step on the baseline, 110 µs on the candidate.
    for (g, floor) in [(&mut gb, 100_000.0), (&mut gc, 110_000.0)] {
        let mbu: Vec<f64> = g.metrics[metric::WALL_NS]
            .iter()
            .map(|w| floor / w)
            .collect();
        g.metrics.insert(metric::MBU.into(), mbu);
    }
    let w = waterfall(&gb, &gc);
    let f = w.waterfall_floor.expect("floor on both sides");
    assert!((f.baseline_mean_floor_ns - 100_000.0).abs() < 1e-6);
    assert!((f.candidate_mean_floor_ns - 110_000.0).abs() < 1e-6);
    assert!((f.delta_floor_ns - 10_000.0).abs() < 1e-6);
    // How far above the floor each side runs: its mean wall (summed here from the
    // samples) less its floor.
    let mean_wall = |s: &Side| {
        let n = s.gap.len();
        (0..n).map(|i| s.wall(i)).sum::<i64>() as f64 / n as f64
    };
    assert!((f.baseline_above_floor_ns - (mean_wall(&b) - 100_000.0)).abs() < 1e-6);
    assert!((f.candidate_above_floor_ns - (mean_wall(&c) - 110_000.0)).abs() < 1e-6);
}

#[test]
fn missing_gap_samples_say_unavailable() {
    let mut gb = side(5, 1, false).group();
    gb.metrics.remove(metric::GAP_NS);
    let w = waterfall(&gb, &side(5, 2, true).group());
    assert!(w.waterfall.is_empty());
    assert!(w.waterfall_check.is_none());
    assert!(w.waterfall_note.unwrap().contains("unavailable"));
}

#[test]
fn json_and_markdown_of_a_comparison_carry_the_waterfall() {
    let b = side(30, 11, false);
    let c = side(30, 12, true);
    let mk = |g: Group| {
        Baseline::new(
            BaselineMeta {
                gpu_name: Some("NVIDIA H100 80GB HBM3".into()),
                source_format: "synthetic".into(),
                ..BaselineMeta::default()
            },
            SampleSet { groups: vec![g] },
        )
    };
    let cmp = compare_unchecked(&mk(b.group()), &mk(c.group()), &Policy::default()).unwrap();
    let json: serde_json::Value = serde_json::from_str(&stepgate::report::to_json(&cmp)).unwrap();
    let g = &json["groups"][0];
    let rows = g["waterfall"].as_array().unwrap();
    assert_eq!(rows.len(), 6, "every row in the JSON, not only the top");
    for r in rows {
        for k in [
            "name",
            "category",
            "delta_ns",
            "baseline_mean_ns",
            "candidate_mean_ns",
        ] {
            assert!(!r[k].is_null(), "row field {k}");
        }
    }
    let sum: f64 = rows.iter().map(|r| r["delta_ns"].as_f64().unwrap()).sum();
    let d = g["waterfall_check"]["delta_mean_wall_ns"].as_f64().unwrap();
    assert!((sum - d).abs() < 1e-6);
    assert!((g["waterfall_check"]["sum_rows_ns"].as_f64().unwrap() - d).abs() < 1e-6);

    // Markdown with --waterfall-top 2: two kernels, "3 others", the gap, the check.
    let o = stepgate::report::gate::RenderOptions {
        waterfall_top: 2,
        ..Default::default()
    };
    let md = stepgate::report::gate::markdown(&cmp, &o);
    assert!(md.contains("**Waterfall**"), "{md}");
    assert!(md.contains("| 3 others |"), "{md}");
    assert!(md.contains("| gap (wall − busy) |"), "{md}");
    assert!(md.contains(", exact)"), "{md}");
}

mod generated {
    //! Two generated nsys exports through `stepgate diff --format json`: the waterfall
    //! rows against the generator's schedule.

    use super::common;
    use stepgate::synth::workload::*;
    use stepgate::synth::Layout;
    use stepgate::wire::synth::{Expected, StepExpect};

    const GEMM: &str = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas";
    const ATTN: &str = "void flash::flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4, false, false, cutlass::bfloat16_t>, false>(flash::Flash_fwd_params)";
    const OLD: &str = "void vllm::rms_norm_kernel<c10::BFloat16>(c10::BFloat16*, c10::BFloat16 const*, c10::BFloat16 const*, float, int, int)";
    const NEW: &str = "triton_poi_fused_add_rms_norm_0";

    /// 12 decode steps; the candidate's GEMM is 30 µs slower, the norm kernel is replaced
    /// by a fused one, its memcpy copies twice the bytes and its kernels sit further apart.
    fn scenario(candidate: bool) -> Scenario {
        let name = vllm_execute(0, 0, 8, 8);
        let steps = (0..12)
            .map(|_| {
                let mut ks = vec![
                    KernelSpec::new(GEMM, if candidate { 80_000 } else { 50_000 }),
                    KernelSpec::new(ATTN, 20_000),
                ];
                ks.push(if candidate {
                    KernelSpec::new(NEW, 6_000)
                } else {
                    KernelSpec::new(OLD, 4_000)
                });
                let mut s = StepSpec::new(Some(&name), LaunchMode::Eager, ks);
                s.memcpy_h2d_bytes = Some(if candidate { 2 << 20 } else { 1 << 20 });
                s
            })
            .collect();
        let mut scn = Scenario::new(Layout::Nsys2026_2, 1, steps);
        if candidate {
            scn.kernel_gap_ns = 9_000;
        }
        scn
    }

    #[test]
    fn diff_json_waterfall_matches_the_generated_schedule() {
        let dir = tempfile::tempdir().unwrap();
        let (pa, pb) = (dir.path().join("a.sqlite"), dir.path().join("b.sqlite"));
        let ea = build(&scenario(false), &pa).unwrap();
        let eb = build(&scenario(true), &pb).unwrap();
        let (code, out, err) = common::run(&[
            "diff",
            pa.to_str().unwrap(),
            pb.to_str().unwrap(),
            "--format",
            "json",
        ]);
        assert_eq!(code, 0, "{err}");
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        let g = &v["groups"][0];
        let rows = g["waterfall"].as_array().unwrap();
        let mean = |e: &Expected, f: &dyn Fn(&StepExpect) -> i64| {
            e.steps.iter().map(f).sum::<i64>() as f64 / e.steps.len() as f64
        };
        let wall = |s: &StepExpect| s.gpu_end_ns.unwrap() - s.gpu_start_ns.unwrap();
        let gap = |s: &StepExpect| wall(s) - s.busy_ns;
        let d_wall = mean(&eb, &wall) - mean(&ea, &wall);
        let d_gap = mean(&eb, &gap) - mean(&ea, &gap);
        assert!(d_gap > 0.0, "the candidate's kernels sit further apart");
        let delta = |name: &str| {
            rows.iter()
                .find(|r| r["name"] == name)
                .unwrap_or_else(|| panic!("no row {name}"))["delta_ns"]
                .as_f64()
                .unwrap()
        };
        assert!((delta(GEMM) - 30_000.0).abs() < 1e-6);
        assert!(delta(ATTN).abs() < 1e-6);
        assert!((delta(NEW) - 6_000.0).abs() < 1e-6);
        assert!((delta(OLD) + 4_000.0).abs() < 1e-6);
        assert!((delta("[gap]") - d_gap).abs() < 1e-6);
        // memcpy: 1 µs + bytes / 20 per copy (the generator's rate), its own row.
        let d_memcpy = ((2 << 20) / 20 - (1 << 20) / 20) as f64;
        assert!((delta("[memcpy HtoD]") - d_memcpy).abs() < 1e-6);
        assert_eq!(rows.len(), 6, "gemm, attention, norm, fused, memcpy, gap");
        let sum: f64 = rows.iter().map(|r| r["delta_ns"].as_f64().unwrap()).sum();
        assert!((sum - d_wall).abs() < 1e-6, "{sum} vs {d_wall}");
        let chk = g["waterfall_check"]["delta_mean_wall_ns"].as_f64().unwrap();
        assert!((chk - d_wall).abs() < 1e-6);
    }
}
