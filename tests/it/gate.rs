//! The gate end to end on sample sets generated here from a seeded distribution: pass on
//! identical and noise-only runs, regression naming the slower kernel, inconclusive on 3
//! steps, exit 2 on another GPU or a bad baseline file, policy overrides, and the
//! statistics checked against independent computations.

mod cli;
mod comparisons;

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
        write_baseline(
            &c.path("base.json"),
            &stepgate::store::StoreConfig::default(),
            &generate(&Spec::default()),
        )
        .unwrap();
        c
    }
    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }
    fn write(&self, name: &str, spec: &Spec) -> PathBuf {
        let p = self.path(name);
        write_baseline(
            &p,
            &stepgate::store::StoreConfig::default(),
            &generate(spec),
        )
        .unwrap();
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
