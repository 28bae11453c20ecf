//! `capacity` when a step has no solution: the steps before it are printed (priced as by
//! hand below), the step is marked with its reason and what would change it, each
//! suggested change solves when run, and the exit code is 2.

use serde_json::Value;

use crate::common;

/// Llama-3-70B bf16 at TP 4 on H100 SXM, the defaults otherwise (1,800 in / 220 out,
/// 900 ms p99 TTFT, 60 ms ITL): a common deployment whose fluid model has no root.
const L70: &[&str] = &[
    "capacity",
    "--model",
    "llama-3-70b",
    "--gpu",
    "h100-sxm",
    "--tp",
    "4",
];

fn run_json(args: &[&str]) -> (i32, Value, String) {
    let mut a = args.to_vec();
    a.extend(["--format", "json"]);
    let (code, out, err) = common::run(&a);
    (code, serde_json::from_str(&out).expect("a JSON plan"), err)
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("{v} is not a number"))
}

fn close(got: f64, want: f64, rel: f64) -> bool {
    (got - want).abs() <= rel * want.abs()
}

/// The fluid model's p99 TTFT at rate λ, written out again from docs/method.md §7 step 6:
/// B = ITL·out·λ, t = (W + B·ctx·k)/β, S = t_pre + out·t/B, ρ = λS,
/// TTFT = S·ln(100ρ)/(1−ρ) + t_pre (no wait at ρ ≤ 0.01).
struct FluidModel {
    /// Weight bytes per step, context tokens, KV bytes per token, bytes/s, prefill s,
    /// output tokens, ITL target s.
    w: f64,
    ctx: f64,
    k: f64,
    beta: f64,
    pre: f64,
    out: f64,
    itl: f64,
}

impl FluidModel {
    fn ttft(&self, lambda: f64) -> f64 {
        let b = self.itl * self.out * lambda;
        let t = (self.w + b * self.ctx * self.k) / self.beta;
        let s = self.pre + self.out * t / b;
        let rho = lambda * s;
        if rho >= 1.0 {
            return f64::INFINITY;
        }
        let wait = if rho <= 0.01 {
            0.0
        } else {
            s * (100.0 * rho).ln() / (1.0 - rho)
        };
        wait + self.pre
    }
}

#[test]
fn llama_70b_tp4_prints_steps_1_to_5_and_marks_step_6() {
    let (code, j, err) = run_json(L70);
    assert_eq!(code, 2, "{err}");
    assert!(err.starts_with("stepgate: error: capacity step 6"), "{err}");
    // By hand. Llama-3-70B: per layer q,o 8192² + k,v 8192·1024 + MLP 3·8192·28672 +
    // 2 norms of 8192 = 855,654,400 params; 80 layers + final norm + embedding and
    // untied lm_head of 128,256·8192 = 70,553,706,496 params, 141.1 GB in bf16.
    let layer =
        2.0 * 8192.0 * 8192.0 + 2.0 * 8192.0 * 1024.0 + 3.0 * 8192.0 * 28672.0 + 2.0 * 8192.0;
    let embed = 128_256.0 * 8192.0;
    let total = 80.0 * layer + 8192.0 + 2.0 * embed;
    assert_eq!(total, 70_553_706_496.0);
    let streamed = (total - embed) / 4.0; // the embedding is looked up, not streamed
    let resident = 2.0 * total / 4.0;
    // KV per token per GPU: K and V × 80 layers × 8/4 heads × 128 × 2 B.
    let k: f64 = 2.0 * 80.0 * 2.0 * 128.0 * 2.0;
    let pool = ((80e9 * 0.9 - resident) / k).floor();
    assert!(
        close(f(&j["kv_pool_tokens"]), pool, 1e-4),
        "{}",
        j["kv_pool_tokens"]
    );
    let ctx = 1800.0 + 220.0 / 2.0;
    let b_max = (pool / ctx).floor();
    assert_eq!(b_max, 234.0);
    assert_eq!(f(&j["b_max"]), 234.0);
    let step_s = (2.0 * streamed + b_max * ctx * k) / 3.35e12;
    assert!(
        close(f(&j["step_ns"]) / 1e9, step_s, 1e-4),
        "step {}",
        j["step_ns"]
    );
    // Prefill: 2·P·S + (L·h/tp)·2·d_h·S² FLOPs at 40% of 989.4 TFLOP/s.
    let flops = 2.0 * streamed * 1800.0 + 80.0 * 64.0 / 4.0 * 256.0 * 1800.0 * 1800.0;
    assert!(close(f(&j["prefill_flops"]), flops, 1e-4));
    let pre = flops / (0.4 * 989.4e12);
    assert!(close(f(&j["prefill_ns"]) / 1e9, pre, 1e-4));
    let service = pre + 220.0 / (b_max / step_s);
    assert!(close(f(&j["service_ns"]) / 1e9, service, 1e-4));
    // The figure: prefill is 89% of the per-request service time.
    assert_eq!((pre / service * 100.0).round(), 89.0);
    assert!(close(f(&j["prefill_fraction"]), pre / service, 1e-4));
    // Step 5 has an answer: ρ solves S·ln(100ρ)/(1−ρ) = 0.9 − prefill.
    let rho = f(&j["fixed_batch"]["rho"]);
    let wait = service * (100.0 * rho).ln() / (1.0 - rho);
    // 1e-4: the hand-priced S above, not the plan's own, feeds this check.
    assert!(
        close(wait + pre, 0.9, 1e-4),
        "TTFT at ρ {rho}: {}",
        wait + pre
    );
    // Step 6 has none: marked, with the lowest p99 TTFT any load reaches.
    assert!(j["fluid"].is_null());
    let u = &j["unsolved"];
    assert_eq!(u["step"], 6);
    assert!(u["reason"].as_str().unwrap().contains("89%"), "{u}");
    let lowest = f(&u["lowest_ttft_p99_ns"]) / 1e9;
    let at = f(&u["lowest_at_lambda_rps"]);
    let w = streamed * 2.0;
    let model = FluidModel {
        w,
        ctx,
        k,
        beta: 3.35e12,
        pre,
        out: 220.0,
        itl: 0.06,
    };
    let g = |l: f64| model.ttft(l);
    assert!(close(g(at), lowest, 1e-3), "{} vs {lowest}", g(at));
    assert!(lowest > 0.9, "{lowest}");
    // No load on an independent grid does better (to the grid's resolution).
    let min = (1..4000)
        .map(|i| g(i as f64 * 0.005))
        .fold(f64::INFINITY, f64::min);
    assert!(min >= lowest * (1.0 - 1e-3), "grid {min} below {lowest}");
    assert!(u["changes"].as_array().unwrap().len() >= 2, "{u}");
}

/// The value a suggestion gives `flag`: `--tp N: …`, or `… VALUE [ms] (flag)`.
fn suggested(u: &Value, flag: &str) -> Option<String> {
    u["changes"].as_array()?.iter().find_map(|c| {
        let c = c.as_str()?;
        if let Some(rest) = c.strip_prefix(&format!("{flag} ")) {
            return rest.split(':').next().map(str::to_owned);
        }
        let head = c.strip_suffix(&format!(" ({flag})"))?;
        let head = head.strip_suffix(" ms").unwrap_or(head);
        head.rsplit(' ').next().map(str::to_owned)
    })
}

#[test]
fn each_suggested_change_gives_the_plan_a_solution() {
    let (_, j, _) = run_json(L70);
    let u = &j["unsolved"];
    let ttft = suggested(u, "--ttft-ms").expect("a TTFT target is suggested");
    let tp = suggested(u, "--tp");
    // The other levers named with a value: each one alone, the rest as given.
    for flag in ["--itl-ms", "--prefill-mfu"] {
        let v = suggested(u, flag).unwrap_or_else(|| panic!("no {flag} in {u}"));
        let mut a = L70.to_vec();
        a.extend([flag, &v]);
        let (code, _, err) = run_json(&a);
        assert_eq!(code, 0, "{flag} {v}: {err}");
    }
    let mut a = L70.to_vec();
    a.extend(["--ttft-ms", &ttft]);
    let (code, j2, err) = run_json(&a);
    assert_eq!(code, 0, "--ttft-ms {ttft}: {err}");
    assert!(j2["fluid"]["lambda_rps"].as_f64().unwrap() > 0.0);
    if let Some(tp) = tp {
        let mut a: Vec<&str> = L70.iter().copied().filter(|s| *s != "4").collect();
        a.retain(|s| *s != "--tp");
        a.extend(["--tp", &tp]);
        let (code, _, err) = run_json(&a);
        assert_eq!(code, 0, "--tp {tp}: {err}");
    }
}

#[test]
fn text_marks_the_step_and_fits_80_columns() {
    let (code, out, _) = common::run(L70);
    assert_eq!(code, 2);
    assert!(
        out.starts_with("Capacity: step 6 (fluid ITL closure) has no solution"),
        "{out}"
    );
    assert!(out.contains("no solution, see below"), "{out}");
    assert!(out.contains("It would have one with any of:"), "{out}");
    for line in out.lines() {
        assert!(
            line.chars().count() <= 80,
            "{} columns: {line}",
            line.chars().count()
        );
    }
}

#[test]
fn a_prefill_above_the_ttft_target_marks_step_5() {
    // The seed's plan (prefill 70.369 ms) against a 50 ms TTFT target.
    let (code, j, err) = run_json(&[
        "capacity",
        "--model",
        "llama-3-8b",
        "--weights-gb",
        "15.01",
        "--params-b",
        "7.5",
        "--kv-pool-tokens",
        "428569",
        "--ttft-ms",
        "50",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(close(f(&j["prefill_ns"]) / 1e6, 70.369, 1e-4));
    assert!(j["fixed_batch"].is_null() && j["fluid"].is_null());
    assert_eq!(j["unsolved"]["step"], 5);
    assert_eq!(f(&j["unsolved"]["prefill_at_most_ns"]), 50e6);
    let r = j["unsolved"]["reason"].as_str().unwrap();
    assert!(r.contains("70.4 ms") && r.contains("50.0 ms"), "{r}");
}
