//! The gate end to end on sample sets generated here from a seeded distribution: pass on
//! identical and noise-only runs, regression naming the slower kernel, inconclusive on 3
//! steps, exit 2 on another GPU or a bad baseline file, policy overrides, and the
//! statistics checked against independent computations.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use stepgate::baseline::{compare, write_baseline, Policy};
use stepgate::wire::baseline::{metric, Baseline, BaselineMeta, Group, KernelSamples, SampleSet};

use crate::common;

/// (full name, short name, category, mean exclusive ns per step)
pub(crate) const KERNELS: [(&str, &str, &str, f64); 6] = [
    (
        "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas",
        "sm90_xmma_gemm_bf16bf16",
        "gemm",
        1_200_000.0,
    ),
    (
        "void flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4, false, false, cutlass::bfloat16_t>, true>(Flash_fwd_params)",
        "flash_fwd_splitkv_kernel",
        "attention",
        300_000.0,
    ),
    (
        "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
        "ncclDevKernel_AllReduce",
        "communication",
        150_000.0,
    ),
    (
        "void vllm::act_and_mul_kernel<c10::BFloat16, &vllm::silu_kernel<c10::BFloat16>, true>(c10::BFloat16*, c10::BFloat16 const*, int)",
        "act_and_mul_kernel",
        "elementwise",
        60_000.0,
    ),
    (
        "void vllm::rms_norm_kernel<c10::BFloat16>(c10::BFloat16*, c10::BFloat16 const*, c10::BFloat16 const*, float, int, int)",
        "rms_norm_kernel",
        "norm",
        40_000.0,
    ),
    ("triton_poi_fused_add_0", "triton_poi_fused_add_0", "elementwise", 8_000.0),
];

pub(crate) const ACT: &str = "act_and_mul_kernel";
const GAP_NS: f64 = 150_000.0;
/// The floor priced for MBU in the samples that carry it (ns per step).
const FLOOR_NS: f64 = 1_000_000.0;

/// How a generated run differs from the reference.
#[derive(Clone)]
pub(crate) struct Spec {
    pub seed: u64,
    pub steps: usize,
    /// Multiplies every time.
    pub scale: f64,
    /// Multiplies one kernel (by short name).
    pub slow: Option<(&'static str, f64)>,
    /// Half-width of the uniform per-sample noise, relative.
    pub noise: f64,
    pub gpu: Option<&'static str>,
    pub mbu: bool,
    pub context: Option<f64>,
    pub extra_kernel: Option<(&'static str, f64)>,
    pub drop_kernel: Option<&'static str>,
}

impl Default for Spec {
    fn default() -> Self {
        Spec {
            seed: 1,
            steps: 200,
            scale: 1.0,
            slow: None,
            noise: 0.02,
            gpu: Some("NVIDIA H100 80GB HBM3"),
            mbu: false,
            context: None,
            extra_kernel: None,
            drop_kernel: None,
        }
    }
}

/// Per-step samples with consistent metrics: busy = Σ kernels (one stream, no overlap),
/// wall = busy + gap, period = wall + 20 µs idle, gap fraction = gap / wall.
pub(crate) fn generate(s: &Spec) -> Baseline {
    let mut rng = SmallRng::seed_from_u64(s.seed);
    let mut g = Group::new("decode", Some(32));
    g.mean_context = s.context;
    let mut kernels: Vec<(String, String, String, f64)> = KERNELS
        .iter()
        .filter(|k| Some(k.1) != s.drop_kernel)
        .map(|&(full, short, cat, mean)| {
            let factor = match s.slow {
                Some((k, f)) if k == short => f,
                _ => 1.0,
            };
            (
                full.to_owned(),
                short.to_owned(),
                cat.to_owned(),
                mean * factor,
            )
        })
        .collect();
    if let Some((name, ns)) = s.extra_kernel {
        kernels.push((name.to_owned(), name.to_owned(), "other".to_owned(), ns));
    }
    let mut metrics: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    let mut ks: BTreeMap<String, KernelSamples> = BTreeMap::new();
    let mut cats: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for (full, short, cat, _) in &kernels {
        ks.insert(
            full.clone(),
            KernelSamples {
                short_name: short.clone(),
                category: cat.clone(),
                exclusive_ns: Vec::new(),
                instances: Vec::new(),
            },
        );
        cats.entry(cat.clone()).or_default();
    }
    let jitter = |rng: &mut SmallRng| 1.0 + s.noise * (2.0 * rng.random::<f64>() - 1.0);
    for _ in 0..s.steps {
        let mut busy = 0.0;
        let mut cat_sum: BTreeMap<&str, f64> = BTreeMap::new();
        for (full, _, cat, mean) in &kernels {
            let t = (mean * s.scale * jitter(&mut rng)).round();
            busy += t;
            *cat_sum.entry(cat.as_str()).or_default() += t;
            let k = ks.get_mut(full).unwrap();
            k.exclusive_ns.push(t);
            k.instances.push(1.0);
        }
        for (c, v) in cat_sum {
            cats.get_mut(c).unwrap().push(v);
        }
        let gap = (GAP_NS * s.scale * jitter(&mut rng)).round();
        let wall = busy + gap;
        metrics
            .entry(metric::WALL_NS.into())
            .or_default()
            .push(wall);
        metrics
            .entry(metric::PERIOD_NS.into())
            .or_default()
            .push(wall + 20_000.0);
        metrics
            .entry(metric::BUSY_NS.into())
            .or_default()
            .push(busy);
        metrics.entry(metric::GAP_NS.into()).or_default().push(gap);
        metrics
            .entry(metric::GAP_FRACTION.into())
            .or_default()
            .push(gap / wall);
        metrics
            .entry(metric::LAUNCHES.into())
            .or_default()
            .push(kernels.len() as f64);
        if s.mbu {
            metrics
                .entry(metric::MBU.into())
                .or_default()
                .push(FLOOR_NS / wall);
        }
    }
    g.metrics = metrics;
    g.kernels = ks;
    g.categories = cats;
    Baseline::new(
        BaselineMeta {
            gpu_name: s.gpu.map(str::to_owned),
            nsys_version: Some("2026.2.1.210".into()),
            source_format: "synthetic".into(),
            engine: Some("vllm".into()),
            step_kinds: vec!["decode".into()],
            batch_compositions: vec!["decode bs=32".into()],
            model: s.mbu.then(|| "llama-3.1-8b".to_owned()),
            floor_inputs: None,
            created_by: "stepgate tests".into(),
            ..BaselineMeta::default()
        },
        SampleSet { groups: vec![g] },
    )
}

/// A temp dir with `base.json` (reference run, seed 1) and one candidate.
struct Case {
    dir: tempfile::TempDir,
}

impl Case {
    fn new() -> Case {
        let c = Case {
            dir: tempfile::tempdir().unwrap(),
        };
        write_baseline(&c.path("base.json"), &generate(&Spec::default())).unwrap();
        c
    }
    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }
    fn write(&self, name: &str, spec: &Spec) -> PathBuf {
        let p = self.path(name);
        write_baseline(&p, &generate(spec)).unwrap();
        p
    }
    fn gate(&self, cand: &Path, extra: &[&str]) -> (i32, String, String) {
        let base = self.path("base.json");
        let mut args = vec![
            "gate",
            cand.to_str().unwrap(),
            "--baseline",
            base.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        common::run(&args)
    }
    fn gate_json(&self, cand: &Path, extra: &[&str]) -> (i32, serde_json::Value) {
        let mut a = vec!["--format", "json"];
        a.extend_from_slice(extra);
        let (code, out, err) = self.gate(cand, &a);
        let v = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out} {err}"));
        (code, v)
    }
}

fn kernel_row<'a>(v: &'a serde_json::Value, short: &str) -> &'a serde_json::Value {
    v["groups"][0]["kernels"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["short_name"] == short)
        .unwrap()
}

fn metric_row<'a>(v: &'a serde_json::Value, m: &str) -> &'a serde_json::Value {
    v["groups"][0]["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["metric"] == m)
        .unwrap()
}

#[test]
fn identical_run_passes() {
    let c = Case::new();
    let cand = c.write("cand.json", &Spec::default());
    let (code, out, err) = c.gate(&cand, &[]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.starts_with("✅ Pass"), "{out}");
}

#[test]
fn one_kernel_20_percent_slower_is_a_regression_naming_it() {
    let c = Case::new();
    let cand = c.write(
        "cand.json",
        &Spec {
            seed: 2,
            slow: Some((ACT, 1.2)),
            ..Spec::default()
        },
    );
    let (code, v) = c.gate_json(&cand, &[]);
    assert_eq!(code, 1);
    assert_eq!(v["verdict"], "regression");
    let reasons = v["reasons"].to_string();
    assert!(reasons.contains(ACT), "{reasons}");
    let k = kernel_row(&v, ACT);
    assert_eq!(k["verdict"], "regression");
    // The true shift is +20%; the interval must bracket it and clear the 10% threshold.
    let iv = k["interval_rel"].as_array().unwrap();
    let (lo, hi) = (iv[0].as_f64().unwrap(), iv[1].as_f64().unwrap());
    assert!(lo > 0.10 && lo <= 0.20 && 0.20 <= hi, "{lo} {hi}");
    // No other kernel is named, and the step wall (+0.6%) stays within its 3%.
    for other in KERNELS.iter().filter(|k| k.1 != ACT) {
        assert!(!reasons.contains(other.1), "{reasons}");
    }
    assert_eq!(metric_row(&v, metric::WALL_NS)["verdict"], "ok");
    // The human report says it too, first line first.
    let (_, out, _) = c.gate(&cand, &["--format", "markdown"]);
    assert!(
        out.starts_with("### ❌ Regression — decode bs=32: kernel act_and_mul_kernel +"),
        "{out}"
    );
}

#[test]
fn one_percent_noise_only_change_passes() {
    let c = Case::new();
    let cand = c.write(
        "cand.json",
        &Spec {
            seed: 3,
            scale: 1.01,
            ..Spec::default()
        },
    );
    let (code, v) = c.gate_json(&cand, &[]);
    assert_eq!(code, 0, "{v}");
    // The change was measured (about +1%), it just is not a regression.
    let rel = metric_row(&v, metric::WALL_NS)["change_rel"]
        .as_f64()
        .unwrap();
    assert!((rel - 0.01).abs() < 0.005, "{rel}");
}

#[test]
fn three_steps_are_inconclusive() {
    let c = Case::new();
    let cand = c.write(
        "cand.json",
        &Spec {
            steps: 3,
            slow: Some((ACT, 1.5)),
            ..Spec::default()
        },
    );
    let (code, out, _) = c.gate(&cand, &[]);
    assert_eq!(code, 3, "{out}");
    assert!(
        out.contains("200 baseline and 3 candidate steps; at least 10"),
        "{out}"
    );
    // Configurable to fail.
    let (code, _, _) = c.gate(&cand, &["--inconclusive-fails"]);
    assert_eq!(code, 1);
}

#[test]
fn another_gpu_is_incomparable() {
    let c = Case::new();
    let cand = c.write(
        "cand.json",
        &Spec {
            gpu: Some("NVIDIA H200"),
            ..Spec::default()
        },
    );
    // Incomparable, its own exit code (tests/it/gate_comparable.rs has the rest).
    let (code, out, _) = c.gate(&cand, &[]);
    assert_eq!(code, 6);
    assert!(
        out.contains("GPU mismatch") && out.contains("NVIDIA H200"),
        "{out}"
    );
    // A side that names no GPU is a warning, not an error.
    let cand = c.write(
        "nogpu.json",
        &Spec {
            gpu: None,
            ..Spec::default()
        },
    );
    let (code, out, _) = c.gate(&cand, &["--format", "markdown"]);
    assert_eq!(code, 0);
    assert!(out.contains("the candidate names no GPU"), "{out}");
    // `diff` without a verdict compares across GPUs on purpose.
    let h200 = c.path("cand.json");
    let base = c.path("base.json");
    let (code, out, _) = common::run(&["diff", base.to_str().unwrap(), h200.to_str().unwrap()]);
    assert_eq!(code, 0);
    assert!(
        out.starts_with("stepgate diff: 1 step group compared"),
        "{out}"
    );
    assert!(out.contains("GPU mismatch"), "{out}");
}

#[test]
fn bad_baseline_files_get_a_clear_error() {
    let c = Case::new();
    let cand = c.write("cand.json", &Spec::default());
    let good = std::fs::read(c.path("base.json")).unwrap();
    let cases: [(&str, Vec<u8>, &str); 4] = [
        ("half.json", good[..good.len() / 2].to_vec(), "is truncated"),
        (
            "corrupt.json",
            b"\x00\x01garbage".to_vec(),
            "is not valid JSON",
        ),
        (
            "foreign.json",
            br#"{"traceEvents": [], "schemaVersion": 1}"#.to_vec(),
            "is not a stepgate baseline",
        ),
        (
            "newer.json",
            String::from_utf8(good.clone())
                .unwrap()
                .replacen("\"schema_version\":1", "\"schema_version\":2", 1)
                .into_bytes(),
            "newer than this stepgate reads",
        ),
    ];
    for (name, bytes, want) in cases {
        let p = c.path(name);
        std::fs::write(&p, bytes).unwrap();
        let (code, out, err) = common::run(&[
            "gate",
            cand.to_str().unwrap(),
            "--baseline",
            p.to_str().unwrap(),
        ]);
        assert_eq!(code, 2, "{name}: {out}");
        assert!(err.contains(want), "{name}: {err}");
        assert_eq!(err.lines().count(), 1, "{name}: one line: {err}");
    }
    let (code, _, err) = c.gate(&c.path("missing.json"), &[]);
    assert_eq!(code, 2, "{err}");
}

#[test]
fn policy_overrides_change_the_verdict() {
    let c = Case::new();
    let slow = c.write(
        "slow.json",
        &Spec {
            seed: 2,
            slow: Some((ACT, 1.2)),
            ..Spec::default()
        },
    );
    let run_with = |name: &str, text: &str, cand: &Path| {
        let p = c.path(name);
        std::fs::write(&p, text).unwrap();
        c.gate(cand, &["--policy", p.to_str().unwrap()]).0
    };
    // The slower kernel also moves its category (elementwise: 68 → 80 µs, +17.6%), which
    // the category check catches on its own.
    let loose_cat = "[[category]]\nname = \"elementwise\"\nrel = 0.2\n";
    assert_eq!(
        run_with(
            "p0.toml",
            "[[kernel]]\nname = \"act_and_mul_kernel\"\ngate = false\n",
            &slow
        ),
        1
    );
    // Exact name, report only (and the category loosened).
    let p1 = format!("[[kernel]]\nname = \"act_and_mul_kernel\"\ngate = false\n{loose_cat}");
    assert_eq!(run_with("p1.toml", &p1, &slow), 0);
    // Regex over the full name with a looser relative threshold (25% > the 20% change).
    let p2 = format!("[[kernel]]\nregex = \"vllm::act_and_mul\"\nrel = 0.25\n{loose_cat}");
    assert_eq!(run_with("p2.toml", &p2, &slow), 0);
    // A per-category override reaches the kernels of that category.
    assert_eq!(
        run_with(
            "p3.json",
            r#"{"category": [{"name": "elementwise", "rel": 0.5}]}"#,
            &slow
        ),
        0
    );
    // A rule for another kernel leaves this one at the default: still a regression.
    assert_eq!(
        run_with(
            "p4.toml",
            "[[kernel]]\nname = \"rms_norm_kernel\"\ngate = false\n",
            &slow
        ),
        1
    );
    // Tightening the step threshold turns a real +1% into a regression.
    let one = c.write(
        "one.json",
        &Spec {
            seed: 3,
            scale: 1.01,
            ..Spec::default()
        },
    );
    assert_eq!(
        run_with(
            "p5.toml",
            "[metrics.wall_ns]\nrel = 0.002\nabs = 1000\n",
            &one
        ),
        1
    );
    // A typo is an input error, not a silently looser gate.
    assert_eq!(run_with("p6.toml", "[kernel]\nrel = 0.5\n", &slow), 2);
}

#[test]
fn new_and_vanished_kernels_are_reported() {
    let c = Case::new();
    let cand = c.write(
        "cand.json",
        &Spec {
            seed: 4,
            extra_kernel: Some(("new_dequant_kernel", 50_000.0)),
            drop_kernel: Some("rms_norm_kernel"),
            ..Spec::default()
        },
    );
    let (code, v) = c.gate_json(&cand, &[]);
    assert_eq!(code, 1, "{v}");
    let g = &v["groups"][0];
    assert_eq!(g["new_kernels"][0]["short_name"], "new_dequant_kernel");
    assert_eq!(g["new_kernels"][0]["gated"], true);
    // 50 µs of a busy time of about 1,758 − 40 + 50 = 1,768 µs per step: 2.8%.
    let share = g["new_kernels"][0]["share_of_busy"].as_f64().unwrap();
    assert!((share - 50.0 / 1768.0).abs() < 0.002, "{share}");
    assert_eq!(g["vanished_kernels"][0]["short_name"], "rms_norm_kernel");
    // Small kernels below 1% of busy time are not listed: drop the 8 µs triton kernel.
    let cand = c.write(
        "small.json",
        &Spec {
            drop_kernel: Some("triton_poi_fused_add_0"),
            ..Spec::default()
        },
    );
    let (code, v) = c.gate_json(&cand, &[]);
    assert_eq!(code, 0);
    assert!(v["groups"][0]["vanished_kernels"]
        .as_array()
        .unwrap()
        .is_empty());
}

#[test]
fn context_shift_hands_the_verdict_to_mbu() {
    let c = Case::new();
    let base_mbu = c.write(
        "bm.json",
        &Spec {
            mbu: true,
            context: Some(1000.0),
            ..Spec::default()
        },
    );
    // Longer contexts, 10% slower everything: raw times regress, MBU (same floor here)
    // drops 9% too, so MBU still judges a regression.
    let cand = c.write(
        "cm.json",
        &Spec {
            seed: 5,
            mbu: true,
            context: Some(1300.0),
            scale: 1.10,
            ..Spec::default()
        },
    );
    let args = |cand: &Path, base: &Path| {
        let (code, out, _) = common::run(&[
            "gate",
            cand.to_str().unwrap(),
            "--baseline",
            base.to_str().unwrap(),
            "--format",
            "json",
        ]);
        (
            code,
            serde_json::from_str::<serde_json::Value>(&out).unwrap(),
        )
    };
    let (code, v) = args(&cand, &base_mbu);
    assert_eq!(code, 1);
    assert_eq!(
        v["reasons"][0].as_str().unwrap().split(' ').nth(2),
        Some("MBU"),
        "{v}"
    );
    assert_eq!(metric_row(&v, metric::WALL_NS)["gated"], false);
    assert!(v["groups"][0]["notes"][0]
        .as_str()
        .unwrap()
        .contains("+30.0%"));
    // Without MBU on either side the group cannot be judged: inconclusive.
    let base = c.write(
        "b2.json",
        &Spec {
            context: Some(1000.0),
            ..Spec::default()
        },
    );
    let cand = c.write(
        "c2.json",
        &Spec {
            seed: 5,
            context: Some(1300.0),
            scale: 1.10,
            ..Spec::default()
        },
    );
    let (code, v) = args(&cand, &base);
    assert_eq!(code, 3, "{v}");
    // A model mismatch is incomparable (exit 6).
    let mut other = generate(&Spec {
        mbu: true,
        ..Spec::default()
    });
    other.meta.model = Some("qwen3-8b".into());
    let p = c.path("other_model.json");
    write_baseline(&p, &other).unwrap();
    let (code, out, _) = common::run(&[
        "gate",
        p.to_str().unwrap(),
        "--baseline",
        base_mbu.to_str().unwrap(),
    ]);
    assert_eq!(code, 6);
    assert!(out.contains("model mismatch"), "{out}");
}

#[test]
fn one_sided_groups_are_reported_not_compared() {
    let mut base = generate(&Spec::default());
    let mut prefill = base.samples.groups[0].clone();
    prefill.step_kind = "prefill".into();
    prefill.batch_size = Some(1);
    base.samples.groups.push(prefill);
    let cand = generate(&Spec {
        seed: 2,
        ..Spec::default()
    });
    let cmp = compare(&base, &cand, &Policy::default()).unwrap();
    assert_eq!(cmp.groups.len(), 1);
    assert_eq!(cmp.one_sided.len(), 1);
    assert_eq!(cmp.one_sided[0].label, "prefill bs=1");
    assert_eq!(cmp.exit_code, 0);
    // Nothing in common at all: inconclusive.
    let mut lone = cand.clone();
    lone.samples.groups[0].batch_size = Some(64);
    let cmp = compare(&base, &lone, &Policy::default()).unwrap();
    assert_eq!(cmp.exit_code, 3);
}

/// Hand-computed medians on small fixed data: baseline 10..=19 µs (median 14.5 µs),
/// candidate the same + 3 µs except one outlier (median of {13..21, 95} = 17.5 µs).
#[test]
fn median_shift_matches_a_hand_computation() {
    let base_v: Vec<f64> = (10..20).map(|i| f64::from(i) * 1000.0).collect();
    let mut cand_v: Vec<f64> = base_v.iter().map(|v| v + 3000.0).collect();
    cand_v[9] = 95_000.0;
    let mk = |v: &Vec<f64>| {
        let mut g = Group::new("decode", Some(1));
        g.metrics.insert(metric::WALL_NS.into(), v.clone());
        Baseline::new(BaselineMeta::default(), SampleSet { groups: vec![g] })
    };
    let mut p = Policy::default();
    p.metrics.get_mut(metric::WALL_NS).unwrap().abs = 1000.0;
    let cmp = compare(&mk(&base_v), &mk(&cand_v), &p).unwrap();
    let ch = &cmp.groups[0].metrics[0].change;
    assert_eq!(ch.baseline_median, Some(14_500.0));
    assert_eq!(ch.candidate_median, Some(17_500.0));
    assert_eq!(ch.change, Some(3_000.0));
    assert_eq!(ch.change_rel, Some(17_500.0 / 14_500.0 - 1.0));
    // Every resample median of 10 values lies in [10, 19] µs (baseline) and [13, 95] µs
    // (candidate), so the interval of the shift lies within [13−19, 95−10] µs, and it
    // must contain the observed 3 µs.
    let [lo, hi] = ch.interval.unwrap();
    assert!(
        (-6_000.0..=3_000.0).contains(&lo) && (3_000.0..=85_000.0).contains(&hi),
        "{lo} {hi}"
    );
}

/// Coverage: over 60 independent pairs with a known true shift of +5% in the median, the
/// 95% interval must contain it in most of them (binomial: ≥ 52 of 60 unless the method is
/// badly miscalibrated).
#[test]
fn intervals_cover_a_known_shift() {
    let mut covered = 0;
    let p = Policy {
        resamples: 2000,
        ..Policy::default()
    };
    for seed in 0..60u64 {
        let mut rng = SmallRng::seed_from_u64(1000 + seed);
        // Uniform(900, 1100): true median 1000; candidate 1050.
        let mut draw = |shift: f64| -> Vec<f64> {
            (0..60)
                .map(|_| 900.0 + 200.0 * rng.random::<f64>() + shift)
                .collect()
        };
        let (b, c) = (draw(0.0), draw(50.0));
        let mk = |v: Vec<f64>| {
            let mut g = Group::new("decode", None);
            g.metrics.insert(metric::WALL_NS.into(), v);
            Baseline::new(BaselineMeta::default(), SampleSet { groups: vec![g] })
        };
        let cmp = compare(&mk(b), &mk(c), &p).unwrap();
        let [lo, hi] = cmp.groups[0].metrics[0].change.interval_rel.unwrap();
        if lo <= 0.05 && 0.05 <= hi {
            covered += 1;
        }
    }
    println!("covered {covered} of 60");
    assert!(covered >= 52, "covered {covered} of 60");
}

#[test]
fn same_inputs_give_the_same_report() {
    let c = Case::new();
    let cand = c.write(
        "cand.json",
        &Spec {
            seed: 9,
            slow: Some((ACT, 1.2)),
            ..Spec::default()
        },
    );
    let a = c.gate(&cand, &["--format", "json"]).1;
    let b = c.gate(&cand, &["--format", "json"]).1;
    assert_eq!(a, b);
}

/// Six significant digits: the snapshot pins the layout, not the last bits of a libm `ln`
/// inside the bootstrap, which may differ between platforms.
fn round_floats(v: &mut serde_json::Value) {
    match v {
        serde_json::Value::Number(n) if n.is_f64() => {
            let x = n.as_f64().unwrap();
            let r: f64 = format!("{x:.5e}").parse().unwrap();
            *v = serde_json::json!(r);
        }
        serde_json::Value::Array(a) => a.iter_mut().for_each(round_floats),
        serde_json::Value::Object(o) => o.values_mut().for_each(round_floats),
        _ => {}
    }
}

/// Snapshots pin the formatting of the markdown and JSON reports (a small run so the
/// JSON stays readable).
#[test]
fn report_snapshots() {
    let c = tempfile::tempdir().unwrap();
    let base = c.path().join("base.json");
    let cand = c.path().join("cand.json");
    let small = Spec {
        steps: 40,
        ..Spec::default()
    };
    write_baseline(
        &base,
        &generate(&Spec {
            mbu: true,
            context: Some(1000.0),
            ..small.clone()
        }),
    )
    .unwrap();
    write_baseline(
        &cand,
        &generate(&Spec {
            seed: 2,
            mbu: true,
            context: Some(1010.0),
            slow: Some((ACT, 1.2)),
            extra_kernel: Some(("new_dequant_kernel", 50_000.0)),
            drop_kernel: Some("rms_norm_kernel"),
            ..small
        }),
    )
    .unwrap();
    let md_path = c.path().join("report.md");
    let (code, json, err) = common::run(&[
        "gate",
        cand.to_str().unwrap(),
        "--baseline",
        base.to_str().unwrap(),
        "--format",
        "json",
        "--markdown",
        md_path.to_str().unwrap(),
    ]);
    assert_eq!(code, 1, "{err}");
    let dir = c.path().display().to_string();
    let md = std::fs::read_to_string(&md_path)
        .unwrap()
        .replace(&dir, "[TMP]");
    insta::assert_snapshot!("gate_markdown", md);
    let mut v: serde_json::Value = serde_json::from_str(&json.replace(&dir, "[TMP]")).unwrap();
    round_floats(&mut v);
    insta::assert_json_snapshot!("gate_json", v);
    let (_, text, _) = common::run(&[
        "gate",
        cand.to_str().unwrap(),
        "--baseline",
        base.to_str().unwrap(),
    ]);
    insta::assert_snapshot!("gate_table", text.replace(&dir, "[TMP]"));
}

/// The documented example policy parses, and says what its comments say.
#[test]
fn example_policy_parses() {
    let p = Policy::from_file(&common::root().join("examples/policy.toml")).unwrap();
    assert_eq!(p.seed, 0x5EED);
    assert_eq!(p.kernel.rel, 0.10);
    let nccl = p.kernel_threshold(
        "ncclDevKernel_AllReduce_Sum_bf16_RING_LL",
        "x",
        "communication",
    );
    assert_eq!((nccl.rel, nccl.abs), (0.20, 20_000.0));
    assert!(
        !p.kernel_threshold(
            "triton_poi_fused_add_0",
            "triton_poi_fused_add_0",
            "elementwise"
        )
        .gate
    );
    assert_eq!(p.category_threshold("communication").rel, 0.15);
    assert_eq!(p.metrics[metric::GAP_FRACTION].abs, 0.01);
}

#[test]
fn diff_reports_without_a_verdict_unless_asked() {
    let c = Case::new();
    let slow = c.write(
        "slow.json",
        &Spec {
            seed: 2,
            slow: Some((ACT, 1.2)),
            ..Spec::default()
        },
    );
    let base = c.path("base.json");
    let (b, s) = (base.to_str().unwrap(), slow.to_str().unwrap());
    let (code, out, _) = common::run(&["diff", b, s, "--format", "markdown"]);
    assert_eq!(code, 0);
    assert!(
        out.starts_with("### stepgate diff: 1 step group compared"),
        "{out}"
    );
    assert!(
        out.contains("**Slower kernels**") && out.contains("| worse |"),
        "{out}"
    );
    assert!(!out.contains("❌") && !out.contains("Regression"), "{out}");
    let (code, out, _) = common::run(&["diff", b, s, "--verdict"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.starts_with("❌ Regression"), "{out}");
}

mod end_to_end {
    //! The issue's end-to-end cases through the real binary: record a baseline from a
    //! generated nsys export, then gate generated candidates against it.

    use stepgate::synth::workload::*;

    const KERNELS: usize = 24;

    /// The shared jittered decode report with this module's kernel mix.
    fn report(
        path: &std::path::Path,
        steps: usize,
        seed: u64,
        gpu: &str,
        scale: &dyn Fn(usize) -> f64,
    ) {
        crate::common::jittered_decode_report(path, KERNELS, steps, seed, gpu, scale);
    }

    fn stepgate(args: &[&str]) -> (i32, String, String) {
        crate::common::run(args)
    }

    #[test]
    fn record_then_gate_generated_runs() {
        let dir = tempfile::tempdir().unwrap();
        let p = |n: &str| dir.path().join(n).to_str().unwrap().to_owned();
        let h100 = "NVIDIA H100 80GB HBM3";
        report(
            dir.path().join("base.sqlite").as_path(),
            60,
            1,
            h100,
            &|_| 1.0,
        );
        let (code, out, err) = stepgate(&[
            "baseline",
            "record",
            &p("base.sqlite"),
            "-o",
            &p("base.json"),
        ]);
        assert_eq!(code, 0, "{err}");
        assert!(out.contains("recorded 1 group(s), 60 steps"), "{out}");
        let b: serde_json::Value =
            serde_json::from_slice(&std::fs::read(p("base.json")).unwrap()).unwrap();
        assert_eq!(b["meta"]["gpu_name"], h100);
        assert_eq!(b["meta"]["engine"], "vllm");
        assert_eq!(b["samples"]["groups"][0]["step_kind"], "decode");
        assert_eq!(b["samples"]["groups"][0]["batch_size"], 32);
        assert_eq!(b["samples"]["groups"][0]["mean_context"], 2048.0);

        // The same workload again (other jitter): pass.
        report(
            dir.path().join("same.sqlite").as_path(),
            60,
            2,
            h100,
            &|_| 1.0,
        );
        let (code, _, err) = stepgate(&["gate", &p("same.sqlite"), "--baseline", &p("base.json")]);
        assert_eq!(code, 0, "{err}");

        // One kernel (the 15.2 µs GEMM, every 8th of the mix) 20% slower in every step:
        // a regression naming it.
        let slow = decode_kernels(KERNELS)[6].name.clone();
        report(
            dir.path().join("slow.sqlite").as_path(),
            60,
            3,
            h100,
            &|k| if k % 8 == 6 { 1.2 } else { 1.0 },
        );
        let (code, out, err) = stepgate(&[
            "gate",
            &p("slow.sqlite"),
            "--baseline",
            &p("base.json"),
            "--format",
            "json",
        ]);
        assert_eq!(code, 1, "{err}");
        let j: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(j["verdict"], "regression");
        // The JSON lists every kernel, so search the verdicts, not the text: exactly the
        // slowed kernel (by full name: the three GEMMs share a prefix) is a regression…
        let rows = j["groups"][0]["kernels"].as_array().unwrap();
        let regressed: Vec<&serde_json::Value> = rows
            .iter()
            .filter(|k| k["verdict"] == "regression")
            .collect();
        assert_eq!(regressed.len(), 1, "{rows:#?}");
        assert_eq!(regressed[0]["name"], slow.as_str());
        // …and the reasons name it and no other kernel.
        let short = regressed[0]["short_name"].as_str().unwrap();
        let reasons: Vec<&str> = j["reasons"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r.as_str().unwrap())
            .collect();
        let kernel_reasons: Vec<&&str> =
            reasons.iter().filter(|r| r.contains(": kernel ")).collect();
        assert_eq!(kernel_reasons.len(), 1, "{reasons:?}");
        assert!(
            kernel_reasons[0].contains(&format!(": kernel {short} +")),
            "{reasons:?}"
        );
        // The step itself moved by 3 × 3.04 µs = 9.1 µs, below the 20 µs absolute floor.
        assert!(
            !reasons.iter().any(|r| r.contains(": wall ")),
            "{reasons:?}"
        );

        // 1% slower everywhere: below the 3% / 10% thresholds, pass.
        report(
            dir.path().join("noise.sqlite").as_path(),
            60,
            4,
            h100,
            &|_| 1.01,
        );
        let (code, _, err) = stepgate(&["gate", &p("noise.sqlite"), "--baseline", &p("base.json")]);
        assert_eq!(code, 0, "{err}");

        // Three steps: inconclusive.
        report(
            dir.path().join("short.sqlite").as_path(),
            3,
            5,
            h100,
            &|_| 1.0,
        );
        let (code, _, err) = stepgate(&["gate", &p("short.sqlite"), "--baseline", &p("base.json")]);
        assert_eq!(code, 3, "{err}");

        // Another GPU: incomparable (exit 6).
        report(
            dir.path().join("a100.sqlite").as_path(),
            60,
            6,
            "NVIDIA A100-SXM4-80GB",
            &|_| 1.0,
        );
        let (code, out, _) = stepgate(&["gate", &p("a100.sqlite"), "--baseline", &p("base.json")]);
        assert_eq!(code, 6, "{out}");
        assert!(out.contains("A100"), "{out}");

        // A markdown report for the PR comment, verdict first.
        let (code, _, _) = stepgate(&[
            "gate",
            &p("slow.sqlite"),
            "--baseline",
            &p("base.json"),
            "--markdown",
            &p("gate.md"),
        ]);
        assert_eq!(code, 1);
        let md = std::fs::read_to_string(p("gate.md")).unwrap();
        assert!(
            md.lines()
                .next()
                .unwrap()
                .to_lowercase()
                .contains("regression"),
            "{md}"
        );
    }
}

/// Markdown and text come from one document walker: with nothing moved, the markdown folds
/// the per-category table into `<details>` and the text shows it, one `ok` row per category
/// of the generated kernels.
#[test]
fn text_and_markdown_both_carry_the_category_table() {
    let b = generate(&Spec::default());
    let cmp = compare(&b, &b, &Policy::default()).unwrap();
    let o = stepgate::report::gate::RenderOptions::default();
    let text = stepgate::report::gate::text(&cmp, &o);
    let md = stepgate::report::gate::markdown(&cmp, &o);
    let want: std::collections::BTreeSet<&str> = KERNELS.iter().map(|k| k.2).collect();
    let (_, after) = text
        .split_once("\ntime per category\n")
        .unwrap_or_else(|| panic!("no category table in:\n{text}"));
    // Header and rule, then one row per category in name order.
    let rows: Vec<&str> = after
        .lines()
        .skip(2)
        .take_while(|l| !l.is_empty())
        .collect();
    assert_eq!(rows.len(), want.len(), "{after}");
    for (row, cat) in rows.iter().zip(&want) {
        assert!(row.starts_with(cat), "{row} should be {cat}");
        assert!(row.trim_end().ends_with(" ok"), "{row}");
    }
    assert!(
        md.contains("<details><summary>Time per category</summary>"),
        "{md}"
    );
    assert!(!md.contains("**Time per category**"), "{md}");
}

/// Two distinct kernels sharing the short name `act_and_mul_kernel` (a BFloat16 and a
/// Half instantiation): the reason line names the slower one by the label that tells
/// them apart (its differing template argument), never by the bare, ambiguous short name.
#[test]
fn reasons_tell_apart_kernels_that_share_a_short_name() {
    const HALF: &str = "void vllm::act_and_mul_kernel<c10::Half, &vllm::silu_kernel<c10::Half>, true>(c10::Half*, c10::Half const*, int)";
    let with_twin = |mut b: Baseline| {
        let g = &mut b.samples.groups[0];
        // The twin runs as long as rms_norm_kernel on that side, on both sides alike.
        let rms = g
            .kernels
            .values()
            .find(|k| k.short_name == "rms_norm_kernel")
            .unwrap()
            .clone();
        g.kernels.insert(
            HALF.to_owned(),
            KernelSamples {
                short_name: ACT.to_owned(),
                category: "elementwise".to_owned(),
                ..rms
            },
        );
        b
    };
    let base = with_twin(generate(&Spec::default()));
    let cand = with_twin(generate(&Spec {
        seed: 2,
        slow: Some((ACT, 1.2)),
        ..Spec::default()
    }));
    let c = compare(&base, &cand, &Policy::default()).unwrap();
    assert_eq!(c.verdict, stepgate::wire::gate::Verdict::Regression);
    let kernel_reasons: Vec<&String> = c.groups[0]
        .reasons
        .iter()
        .filter(|r| r.starts_with("kernel "))
        .collect();
    assert_eq!(kernel_reasons.len(), 1, "{:?}", c.groups[0].reasons);
    let r = kernel_reasons[0];
    assert!(r.starts_with("kernel act_and_mul_kernel<"), "{r}");
    assert!(r.contains("BFloat16") && !r.contains("Half"), "{r}");
    // The roll-up carries the same words, and the markdown report shows the same label.
    assert!(
        c.reasons.iter().any(|x| x.contains(r.as_str())),
        "{:?}",
        c.reasons
    );
}
