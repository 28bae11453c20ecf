//! Power before pass: samples of known spread, generated here, and the gate's answer.
//! Inconclusive exactly when the smallest visible change (half the interval's width)
//! exceeds the threshold, on both sides of that boundary; a large clean sample passes; a
//! planted 5% regression is found at the sample size the inconclusive report asks for.
//!
//! The spread is uniform: a side's wall is `mean · scale · (1 + a·U)`, U uniform on
//! [−1, 1]. The median of n such steps has standard error ≈ a·mean/√n (1 / (2·f(median)·√n)
//! with density f = 1/(2·a·mean)), so the change of the medians between two sides of n
//! steps has a 95% half-width ≈ 1.96·√2·a/√n relative: the independent estimate the
//! gate's bootstrap is checked against.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use stepgate::baseline::write_baseline;
use stepgate::wire::baseline::{metric, Baseline, BaselineMeta, Group, SampleSet};

use crate::common;

const WALL_NS: f64 = 1_000_000.0;

/// One side: `n` steps whose wall has relative spread `a`, times `scale`; busy is quiet
/// (±0.5%) and launches constant, so the wall alone can lack power.
fn side(seed: u64, n: usize, a: f64, scale: f64) -> Baseline {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut g = Group::new("decode", Some(32));
    let mut m: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for _ in 0..n {
        let u = |rng: &mut SmallRng| 2.0 * rng.random::<f64>() - 1.0;
        let wall = (WALL_NS * scale * (1.0 + a * u(&mut rng))).round();
        let busy = (0.8 * WALL_NS * (1.0 + 0.005 * u(&mut rng))).round();
        m.entry(metric::WALL_NS.into()).or_default().push(wall);
        m.entry(metric::BUSY_NS.into()).or_default().push(busy);
        m.entry(metric::LAUNCHES.into()).or_default().push(100.0);
    }
    g.metrics = m;
    Baseline::new(
        BaselineMeta {
            gpu_name: Some("NVIDIA H100 80GB HBM3".into()),
            source_format: "synthetic".into(),
            step_kinds: vec!["decode".into()],
            created_by: "stepgate tests".into(),
            ..BaselineMeta::default()
        },
        SampleSet { groups: vec![g] },
    )
}

fn write(dir: &Path, name: &str, b: &Baseline) -> PathBuf {
    let p = dir.join(name);
    write_baseline(&p, &stepgate::store::StoreConfig::default(), b).unwrap();
    p
}

/// A policy with the wall's relative threshold `rel` and no absolute one (so the
/// effective threshold is `rel` itself).
fn policy(dir: &Path, rel: f64) -> PathBuf {
    let p = dir.join(format!("policy-{rel}.toml"));
    std::fs::write(&p, format!("[metrics.wall_ns]\nrel = {rel}\nabs = 0\n")).unwrap();
    p
}

fn gate(base: &Path, cand: &Path, extra: &[&str]) -> (i32, String) {
    let mut args = vec![
        "gate",
        cand.to_str().unwrap(),
        "--baseline",
        base.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let (code, out, err) = common::run(&args);
    assert!(code == 0 || code == 1 || code == 3, "{code}: {out}{err}");
    (code, out)
}

fn gate_json(base: &Path, cand: &Path, extra: &[&str]) -> (i32, serde_json::Value) {
    let mut a = vec!["--format", "json"];
    a.extend_from_slice(extra);
    let (code, out) = gate(base, cand, &a);
    (code, serde_json::from_str(&out).unwrap())
}

fn wall(v: &serde_json::Value) -> &serde_json::Value {
    v["groups"][0]["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["metric"] == metric::WALL_NS)
        .unwrap()
}

/// The independent estimate of the half-width (module doc).
fn expected_half_width(a: f64, n: usize) -> f64 {
    1.96 * 2f64.sqrt() * a / (n as f64).sqrt()
}

#[test]
fn inconclusive_exactly_when_the_smallest_visible_change_exceeds_the_threshold() {
    let dir = tempfile::tempdir().unwrap();
    let base = write(dir.path(), "base.json", &side(1, 30, 0.10, 1.0));
    let cand = write(dir.path(), "cand.json", &side(2, 30, 0.10, 1.0));
    // The interval does not depend on the threshold: read it once.
    let (_, v) = gate_json(&base, &cand, &[]);
    let d = wall(&v)["detectable_rel"].as_f64().unwrap();
    let iv = wall(&v)["interval_rel"].as_array().unwrap();
    let half = (iv[1].as_f64().unwrap() - iv[0].as_f64().unwrap()) / 2.0;
    assert!(
        (d - half).abs() < 1e-12,
        "{d} vs the interval's half-width {half}"
    );
    let want = expected_half_width(0.10, 30); // 5.1%
    assert!((d / want - 1.0).abs() < 0.35, "{d} vs about {want}");
    // Just above the threshold: inconclusive, exit 3, never a pass.
    let p = policy(dir.path(), d * 0.98);
    let (code, v) = gate_json(&base, &cand, &["--policy", p.to_str().unwrap()]);
    assert_eq!(
        (code, v["verdict"].as_str()),
        (3, Some("inconclusive")),
        "{v}"
    );
    assert_eq!(wall(&v)["verdict"], "inconclusive");
    assert!(wall(&v)["steps_needed"].as_u64().unwrap() > 30);
    assert_eq!(
        (v["gated_metrics"].as_u64(), v["resolved_metrics"].as_u64()),
        (Some(3), Some(2))
    );
    // Just below: resolved, and with no change it passes.
    let p = policy(dir.path(), d * 1.02);
    let (code, v) = gate_json(&base, &cand, &["--policy", p.to_str().unwrap()]);
    assert_eq!((code, v["verdict"].as_str()), (0, Some("pass")), "{v}");
    assert_eq!(wall(&v)["verdict"], "ok");
    assert!(wall(&v).get("steps_needed").is_none(), "{v}");
    assert_eq!(v["resolved_metrics"], 3);
}

#[test]
fn a_large_clean_sample_passes_and_the_headline_counts_resolved_metrics() {
    let dir = tempfile::tempdir().unwrap();
    let base = write(dir.path(), "base.json", &side(3, 2000, 0.01, 1.0));
    let cand = write(dir.path(), "cand.json", &side(4, 2000, 0.01, 1.0));
    let (code, v) = gate_json(&base, &cand, &[]);
    assert_eq!(code, 0, "{v}");
    let d = wall(&v)["detectable_rel"].as_f64().unwrap();
    let want = expected_half_width(0.01, 2000); // 0.06%
    assert!((d / want - 1.0).abs() < 0.35, "{d} vs about {want}");
    let (_, md) = gate(&base, &cand, &["--format", "markdown"]);
    let first = md.lines().next().unwrap();
    assert!(first.starts_with("### ✅ Pass"), "{first}");
    assert!(
        first.ends_with("· 3 of 3 gated metrics resolved"),
        "{first}"
    );
}

#[test]
fn a_planted_regression_is_found_at_the_sample_size_the_report_asks_for() {
    let dir = tempfile::tempdir().unwrap();
    // 14 noisy steps a side (±15% uniform): the wall's interval is about ±11%, far
    // beyond the default 3%, so no verdict can be "pass".
    let a = 0.15;
    let base = write(dir.path(), "base14.json", &side(5, 14, a, 1.0));
    let cand = write(dir.path(), "cand14.json", &side(6, 14, a, 1.0));
    let (code, v) = gate_json(&base, &cand, &[]);
    assert_eq!(code, 3, "{v}");
    let d = wall(&v)["detectable_rel"].as_f64().unwrap();
    let n = wall(&v)["steps_needed"].as_u64().unwrap() as usize;
    // N = 14 · (d / 1.5%)²: the half-width shrinks as 1/√n to half the 3% threshold.
    let by_hand = (14.0 * (d / 0.015).powi(2)).ceil() as usize;
    assert_eq!(n, by_hand, "{v}");
    // The analytic spread gives about the same N (1.96·√2·a/√N = 1.5%).
    let analytic = (1.96 * 2f64.sqrt() * a / 0.015).powi(2);
    assert!(
        (n as f64 / analytic) < 2.0 && (n as f64 / analytic) > 0.5,
        "{n} vs {analytic}"
    );
    // The report says it in words, with that N, in the headline and the JSON reasons.
    let (_, md) = gate(&base, &cand, &["--format", "markdown"]);
    let first = md.lines().next().unwrap();
    let said = format!(
        "cannot see a 3.0% change in wall with 14 noisy steps: the smallest visible change is \
         {:.1}%; capture ≥ {} steps per side",
        d * 100.0,
        stepgate::report::fmt_int(n as i64)
    );
    assert!(first.contains(&said), "{first}\nwanted: {said}");
    assert!(first.starts_with("### ⚠️ Inconclusive"), "{first}");
    assert!(
        first.ends_with("· 2 of 3 gated metrics resolved"),
        "{first}"
    );
    // At N steps a side (fresh samples), a 5% slower wall is a regression ...
    let base_n = write(dir.path(), "base_n.json", &side(7, n, a, 1.0));
    let slow = write(dir.path(), "slow_n.json", &side(8, n, a, 1.05));
    let (code, v) = gate_json(&base_n, &slow, &[]);
    assert_eq!(
        (code, wall(&v)["verdict"].as_str()),
        (1, Some("regression")),
        "{v}"
    );
    // ... and the same run unchanged is resolved and passes.
    let same = write(dir.path(), "same_n.json", &side(9, n, a, 1.0));
    let (code, v) = gate_json(&base_n, &same, &[]);
    assert_eq!((code, wall(&v)["verdict"].as_str()), (0, Some("ok")), "{v}");
    assert!(wall(&v)["detectable_rel"].as_f64().unwrap() < 0.03);
}

/// `baseline record` of a report with `steps` decode steps, with an optional policy.
fn record(dir: &Path, steps: usize, policy: Option<&str>) -> (i32, String, String, PathBuf) {
    let report = dir.join(format!("run{steps}.sqlite"));
    common::jittered_decode_report(&report, 4, steps, 11, "NVIDIA H100 80GB HBM3", &|_| 1.0);
    let out = dir.join(format!("base{steps}.json"));
    let mut args = vec![
        "baseline".to_owned(),
        "record".to_owned(),
        report.display().to_string(),
        "-o".to_owned(),
        out.display().to_string(),
    ];
    if let Some(text) = policy {
        let p = dir.join("small.toml");
        std::fs::write(&p, text).unwrap();
        args.extend(["--policy".to_owned(), p.display().to_string()]);
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (code, o, e) = common::run(&args);
    (code, o, e, out)
}

#[test]
fn a_baseline_too_small_to_serve_is_refused_naming_what_is_missing() {
    let dir = tempfile::tempdir().unwrap();
    let (code, out, err, path) = record(dir.path(), 9, None);
    assert_eq!(code, 2, "{out}{err}");
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert!(
        err.contains("has 9 steps, 10 needed: capture 1 more"),
        "{err}"
    );
    assert!(err.contains("small_baseline = \"warn\""), "{err}");
    assert!(!path.exists(), "nothing written");
    // A stricter policy asks for more, and says how many more.
    let (code, _, err, _) = record(dir.path(), 9, Some("min_samples = 20\n"));
    assert_eq!(code, 2);
    assert!(err.contains("9 steps, 20 needed: capture 11 more"), "{err}");
    // Downgraded by policy: written, with a warning that cannot be missed.
    let (code, out, err, path) = record(dir.path(), 9, Some("small_baseline = \"warn\"\n"));
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        err.contains("warning: WRITTEN ANYWAY (small_baseline = \"warn\")")
            && err.contains("9 steps, 10 needed: capture 1 more"),
        "{err}"
    );
    assert!(path.exists());
    // A gate against it says exactly what is missing, not "(and 1 more)".
    let (_, _, _, cand) = record(dir.path(), 12, None);
    let (code, out, _) = common::run(&[
        "gate",
        cand.to_str().unwrap(),
        "--baseline",
        path.to_str().unwrap(),
    ]);
    assert_eq!(code, 3, "{out}");
    assert!(
        out.contains("9 baseline and 12 candidate steps; at least 10 per side are needed: capture 1 more baseline steps"),
        "{out}"
    );
    // Ten steps serve.
    let (code, _, err, _) = record(dir.path(), 10, None);
    assert_eq!(code, 0, "{err}");
}

/// One statistic per number: a GEMM that runs in 3 of 20 baseline steps (40 µs) and 4
/// of 20 candidate steps has median 0 but mean 6.0 → 8.0 µs per step; the category table
/// shows both, and the waterfall's mean for that kernel is the same 6.0 → 8.0.
#[test]
fn tables_say_median_and_mean_and_agree_with_the_waterfall() {
    use stepgate::wire::baseline::KernelSamples;
    let sparse = |runs: usize| -> Baseline {
        let mut g = Group::new("decode", Some(32));
        let mut m: BTreeMap<String, Vec<f64>> = BTreeMap::new();
        let mut gemm = Vec::new();
        let mut attn = Vec::new();
        for i in 0..20 {
            let k = if i < runs { 40_000.0 } else { 0.0 };
            gemm.push(k);
            attn.push(100_000.0);
            let busy = 100_000.0 + k;
            m.entry(metric::WALL_NS.into())
                .or_default()
                .push(busy + 10_000.0);
            m.entry(metric::BUSY_NS.into()).or_default().push(busy);
            m.entry(metric::GAP_NS.into()).or_default().push(10_000.0);
        }
        let ks = |short: &str, cat: &str, v: &[f64]| KernelSamples {
            short_name: short.into(),
            category: cat.into(),
            exclusive_ns: v.to_vec(),
            instances: v.iter().map(|x| f64::from(u8::from(*x > 0.0))).collect(),
        };
        g.kernels
            .insert("nvjet_sparse".into(), ks("nvjet_sparse", "gemm", &gemm));
        g.kernels
            .insert("attn".into(), ks("attn", "attention", &attn));
        g.categories.insert("gemm".into(), gemm);
        g.categories.insert("attention".into(), attn);
        g.metrics = m;
        let mut b = side(1, 0, 0.0, 1.0);
        b.samples.groups = vec![g];
        b
    };
    let dir = tempfile::tempdir().unwrap();
    let base = write(dir.path(), "base.json", &sparse(3));
    let cand = write(dir.path(), "cand.json", &sparse(4));
    let (_, md) = gate(&base, &cand, &["--format", "markdown"]);
    // Medians 0.0, means 3·40/20 = 6.0 and 4·40/20 = 8.0 µs, in the header's order.
    assert!(
        md.contains("| category | baseline µs (median · mean) | candidate µs (median · mean) |"),
        "{md}"
    );
    assert!(md.contains("| gemm | 0.0 · 6.0 | 0.0 · 8.0 |"), "{md}");
    assert!(
        md.contains("| `nvjet_sparse` | gemm | 6.0 | 8.0 | +2.0 µs |"),
        "{md}"
    );
    assert!(
        md.contains("baseline µs (mean) | candidate µs (mean)"),
        "{md}"
    );
    // Walls 110 µs in 17 steps, 150 µs in 3: median 110.0, mean (17·110 + 3·150)/20 = 116.0.
    assert!(
        md.contains("| wall | 110.0 µs · 116.0 µs | 110.0 µs · 118.0 µs |"),
        "{md}"
    );
    // `baseline show` calls the median of measured walls measured.
    let (code, out, err) = common::run(&["baseline", "show", base.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("median wall µs (measured)") && !out.contains("(derived)"),
        "{out}"
    );
    let row = out.lines().find(|l| l.starts_with("decode bs=32")).unwrap();
    assert!(row.contains("110.0"), "{row}");
}
