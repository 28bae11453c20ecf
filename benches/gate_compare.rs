//! Benchmark, not a test: time `baseline::compare`, baseline write and read on 10,000
//! steps × 400 kernels per side, 40 kernels 20% slower (run with
//! `cargo bench --bench gate_compare`). Prints the times; exits non-zero if the comparison
//! does not find exactly the 40 slowed kernels, so a fast wrong answer is not a result.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use stepgate::baseline::{compare, read_baseline, write_baseline, Policy};
use stepgate::wire::baseline::{metric, Baseline, BaselineMeta, Group, KernelSamples, SampleSet};
use stepgate::wire::gate::RowVerdict;

const STEPS: usize = 10_000;
const KERNELS: usize = 400;

fn side(rng: &mut SmallRng, slow: bool) -> Baseline {
    let mut g = Group::new("decode", Some(64));
    let mut busy = vec![0.0; STEPS];
    for k in 0..KERNELS {
        let mean = 30_000.0 + 100.0 * k as f64;
        let f = if slow && k % 10 == 0 { 1.2 } else { 1.0 };
        let v: Vec<f64> = (0..STEPS)
            .map(|_| (mean * f * (0.97 + 0.06 * rng.random::<f64>())).round())
            .collect();
        for (b, x) in busy.iter_mut().zip(&v) {
            *b += x;
        }
        g.kernels.insert(
            format!("void kernel_{k}<float, 128>(Params)"),
            KernelSamples {
                short_name: format!("kernel_{k}"),
                category: ["gemm", "attention", "norm", "elementwise"][k % 4].into(),
                exclusive_ns: v,
                instances: vec![1.0; STEPS],
            },
        );
    }
    g.metrics.insert(
        metric::WALL_NS.into(),
        busy.iter().map(|b| b + 50_000.0).collect(),
    );
    g.metrics.insert(metric::BUSY_NS.into(), busy);
    Baseline::new(BaselineMeta::default(), SampleSet { groups: vec![g] })
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut rng = SmallRng::seed_from_u64(42);
    let (a, b) = (side(&mut rng, false), side(&mut rng, true));
    let t = std::time::Instant::now();
    let cmp = compare(&a, &b, &Policy::default())?;
    let compare_s = t.elapsed().as_secs_f64();
    let dir = tempfile::tempdir()?;
    let p = dir.path().join("big.json");
    let t = std::time::Instant::now();
    write_baseline(&p, &stepgate::store::StoreConfig::default(), &a)?;
    let write_s = t.elapsed().as_secs_f64();
    let t = std::time::Instant::now();
    read_baseline(&p, &stepgate::store::StoreConfig::default())?;
    let read_s = t.elapsed().as_secs_f64();
    let regressed = cmp.groups[0]
        .kernels
        .iter()
        .filter(|k| k.change.verdict == RowVerdict::Regression)
        .count();
    println!(
        "compare {compare_s:.2} s, write {write_s:.2} s, read {read_s:.2} s, file {} MB, {regressed} kernels regressed",
        std::fs::metadata(&p)?.len() / 1_000_000
    );
    if regressed != KERNELS / 10 {
        return Err(format!(
            "expected {} regressed kernels, found {regressed}",
            KERNELS / 10
        )
        .into());
    }
    Ok(())
}
