//! The six-step capacity-planning template of docs/method.md: KV pool → B_max, step time at B,
//! decode tok/s, causal prefill at an assumed MFU, GPU service time per request, the
//! M/M/1 p99 TTFT proxy, the fluid ITL closure, replicas and cost.
//!
//! A screening model, not a capacity guarantee: batching changes service distributions,
//! TTFT depends on chunking and queue discipline, live occupancy is length-biased. Steps
//! are priced with the chapter's bytes (weights + KV read, no KV write), as its golden
//! cases are. Infeasible inputs are `Error::input`, never NaN; targets no load meets leave
//! the plan's steps 1–4 priced and name the step without a solution ([`Unmet`]);
//! `roofline::capacity_plan` says why in words and what would change it.

use crate::exit::{Error, Result};
use crate::wire::capacity::{CapacityPlan, FixedBatch, Fluid};
// The inputs and the caveats are part of the capacity document (what a renderer shows).
use crate::wire::capacity::CapacityInputs;

fn positive(name: &str, v: f64) -> Result<()> {
    if v.is_finite() && v > 0.0 {
        Ok(())
    } else {
        Err(Error::input(format!(
            "{name} must be a positive number, got {v}"
        )))
    }
}

/// Replicas to serve `fleet_rps` at `per_replica_rps` each: ⌈fleet / per replica⌉. A
/// count that is not finite or beyond 2^53 (where f64 stops being exact) is an error, never
/// a wrapped or saturated integer printed as a plan.
fn replicas(fleet_rps: Option<f64>, per_replica_rps: f64) -> Result<Option<u64>> {
    let Some(f) = fleet_rps else {
        return Ok(None);
    };
    positive("fleet request rate", f)?;
    let n = (f / per_replica_rps).ceil();
    if !(n.is_finite() && n >= 0.0 && n <= (1u64 << 53) as f64) {
        return Err(Error::input(format!(
            "{f} req/s needs {n:e} replicas at {per_replica_rps:e} req/s each: no plan; check --fleet-rps and the model"
        )));
    }
    Ok(Some(n as u64))
}

/// c in the causal prefill attention term c·S² per GPU: each of the S²/2 causal pairs
/// costs 2·h·(w_qk + w_v) per layer, so c = L·h·(w_qk + w_v)/tp = 2·L·h·d_h/tp for
/// standard attention (docs/method.md §7 step 3), un-absorbed widths for MLA prefill.
pub fn prefill_attention_coeff(m: &crate::wire::roofline::ModelSpec, tp: u32) -> f64 {
    let (wq, wv) = match &m.mla {
        Some(x) => x.unabsorbed_widths(),
        None => (m.head_dim, m.head_dim),
    };
    m.layers as f64 * m.heads as f64 / f64::from(tp.max(1)) * (wq + wv) as f64
}

/// M/M/1 FCFS p99 queueing wait S·ln(100ρ)/(1−ρ): 0 at or below ρ = 0.01 (where the
/// raw formula goes negative), an error at ρ ≥ 1 (unstable queue).
pub fn wq99_s(service_s: f64, rho: f64) -> Result<f64> {
    if rho >= 1.0 || rho.is_nan() {
        return Err(Error::input(format!(
            "utilisation rho = {rho} >= 1: the queue is unstable; lower the load"
        )));
    }
    if rho <= 0.01 {
        return Ok(0.0);
    }
    Ok(service_s * (100.0 * rho).ln() / (1.0 - rho))
}

/// ρ such that W_q99(ρ) + offset = target (bisection; W_q99 increases on (0.01, 1)).
pub(crate) fn solve_rho(service_s: f64, offset_s: f64, target_s: f64) -> Result<f64> {
    positive("service time", service_s)?;
    let budget = target_s - offset_s;
    if budget <= 0.0 || budget.is_nan() {
        return Err(Error::input(format!(
            "TTFT target {:.1} ms is not above the prefill time {:.1} ms: no load meets it; raise --ttft-ms or the prefill MFU",
            target_s * 1e3,
            offset_s * 1e3
        )));
    }
    let (mut lo, mut hi) = (0.01_f64, 1.0_f64);
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if service_s * (100.0 * mid).ln() / (1.0 - mid) < budget {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Ok(0.5 * (lo + hi))
}

/// Prefill FLOPs of one request of `s_in` prompt tokens (step 3): 2·P per token plus the
/// causal attention term `coeff`·s² (`coeff` from [`prefill_attention_coeff`]).
pub fn prefill_flops(params_streamed: f64, attention_coeff: f64, s_in: f64) -> f64 {
    2.0 * params_streamed * s_in + attention_coeff * s_in * s_in
}

/// Prefill time at an assumed MFU: FLOPs / (MFU · peak) (step 3, derived).
pub fn prefill_time_s(prefill_flops: f64, mfu: f64, peak_flops_per_s: f64) -> f64 {
    prefill_flops / (mfu * peak_flops_per_s)
}

/// p99 time to first token at utilisation ρ in the M/M/1 screen: the queueing wait plus
/// the prefill (derived).
pub fn ttft_p99_s(service_s: f64, prefill_s: f64, rho: f64) -> Result<f64> {
    Ok(wq99_s(service_s, rho)? + prefill_s)
}

/// Inputs of the fixed-batch screen (step 5).
#[derive(Debug, Clone, Copy)]
pub struct ScreenInputs {
    /// GPU service time per request S.
    pub service_s: f64,
    /// Prefill time: the TTFT offset above the queueing wait.
    pub prefill_s: f64,
    pub ttft_p99_target_s: f64,
    pub output_tokens: f64,
    pub fleet_rps: Option<f64>,
    pub price_usd_per_gpu_hour: f64,
    pub gpus_per_replica: f64,
}

/// Step 5: the highest ρ whose p99 TTFT meets the target, its request rate ρ/S, the
/// replicas for the fleet rate and the cost per million output tokens.
pub fn fixed_batch_screen(inp: &ScreenInputs) -> Result<FixedBatch> {
    let rho = solve_rho(inp.service_s, inp.prefill_s, inp.ttft_p99_target_s)?;
    let lambda = rho / inp.service_s;
    Ok(FixedBatch {
        rho,
        lambda_rps: lambda,
        replicas: replicas(inp.fleet_rps, lambda)?,
        usd_per_million_output_tokens: usd_per_million(
            inp.price_usd_per_gpu_hour,
            inp.gpus_per_replica,
            lambda * inp.output_tokens,
        ),
    })
}

/// Cost per 1e6 output tokens: price·N_GPU·1e6 / (3600·goodput_tok_s).
pub fn usd_per_million(price_usd_per_gpu_hour: f64, gpus: f64, goodput_tok_s: f64) -> f64 {
    price_usd_per_gpu_hour * gpus * 1e6 / (3600.0 * goodput_tok_s)
}

/// Inputs of the fluid ITL closure (docs/method.md §7 step 6).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FluidInputs {
    pub weights_bytes: f64,
    pub mean_context: f64,
    pub kv_cell_bytes: f64,
    pub hbm_bytes_per_s: f64,
    pub prefill_s: f64,
    pub output_tokens: f64,
    pub itl_target_s: f64,
    pub ttft_p99_target_s: f64,
    pub b_cap: f64,
    pub fleet_rps: Option<f64>,
    pub price_usd_per_gpu_hour: f64,
    pub gpus_per_replica: f64,
}

/// Why the fluid model of step 6 has no operating point.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum NoRoot {
    /// Streaming the weights alone (this many seconds) takes longer than the ITL target.
    WeightsAboveItl(f64),
    /// The higher-load root needs a live batch above B_max (the KV pool binds).
    BatchCap,
    /// The p99 TTFT stays above the target at every load.
    TtftAboveTarget,
}

/// The fluid model's p99 TTFT at request rate `lambda`: B = ITL·out·λ, t(B) = (W +
/// B·ctx·k)/β, S(B) = t_pre + out·t(B)/B, W_q99(S, λS) + t_pre (0 at λS ≤ 0.01, as
/// [`wq99_s`]; infinite at λS ≥ 1).
pub(crate) fn fluid_ttft_s(inp: &FluidInputs, lambda: f64) -> f64 {
    let b = inp.itl_target_s * inp.output_tokens * lambda;
    let t = (inp.weights_bytes + b * inp.mean_context * inp.kv_cell_bytes) / inp.hbm_bytes_per_s;
    let s = inp.prefill_s + inp.output_tokens * t / b;
    let rho = lambda * s;
    let w = if rho >= 1.0 {
        f64::INFINITY
    } else if rho <= 0.01 {
        0.0
    } else {
        s * (100.0 * rho).ln() / (1.0 - rho)
    };
    w + inp.prefill_s
}

/// The highest request rate the fluid model admits: ρ(λ) = λ·S is affine in λ (ρ0 + a·λ
/// with ρ0 = (W/β)/ITL), so ρ < 1 below (1 − ρ0)/a, and B ≤ B_cap below B_cap/(ITL·out).
/// Returns (λ at ρ = 1, λ at B_cap, ρ0).
pub(crate) fn fluid_lambda_bounds(inp: &FluidInputs) -> (f64, f64, f64) {
    let rho0 = inp.weights_bytes / inp.hbm_bytes_per_s / inp.itl_target_s;
    let a = inp.prefill_s
        + inp.output_tokens * inp.mean_context * inp.kv_cell_bytes / inp.hbm_bytes_per_s;
    let per_lambda_b = inp.itl_target_s * inp.output_tokens;
    ((1.0 - rho0) / a, inp.b_cap / per_lambda_b, rho0)
}

/// Grid points of the fluid model's root scan over (0, λ_max).
pub(crate) const FLUID_GRID: usize = 20_000;

/// Solve the fluid model: B = ITL·out·λ, t(B) = (W + B·ctx·k)/β, S(B) = t_pre + out·t(B)/B,
/// and S·ln(100·λS)/(1−λS) + t_pre = TTFT with 0 < λS < 1, B ≤ B_cap. The equation has two
/// roots (S(B) → ∞ as B → 0); the higher-load one is reported, the other noted. No root is
/// an input error; [`fluid_outcome`] says which kind.
pub fn fluid(inp: &FluidInputs) -> Result<Fluid> {
    match fluid_outcome(inp)? {
        Ok(f) => Ok(f),
        Err(NoRoot::WeightsAboveItl(w)) => Err(Error::input(format!(
            "streaming the weights alone takes {:.2} ms, above the {:.1} ms ITL target: no batch meets it",
            w * 1e3,
            inp.itl_target_s * 1e3
        ))),
        Err(NoRoot::BatchCap) => Err(Error::input(format!(
            "the ITL model's higher-load root needs a batch above B_max = {}: the KV pool, not the TTFT target, limits this deployment; lower --itl-ms or add KV memory",
            inp.b_cap
        ))),
        Err(NoRoot::TtftAboveTarget) => Err(Error::input(format!(
            "no load meets both the {:.0} ms p99 TTFT and the {:.0} ms ITL target (the fluid model has no root); relax one of them",
            inp.ttft_p99_target_s * 1e3,
            inp.itl_target_s * 1e3
        ))),
    }
}

/// [`fluid`], with "no operating point" kept apart from bad inputs: `Ok(Err(why))`.
pub(crate) fn fluid_outcome(inp: &FluidInputs) -> Result<std::result::Result<Fluid, NoRoot>> {
    positive("ITL target", inp.itl_target_s)?;
    positive("output tokens", inp.output_tokens)?;
    let per_lambda_b = inp.itl_target_s * inp.output_tokens;
    let service = |lambda: f64| {
        let b = per_lambda_b * lambda;
        let t =
            (inp.weights_bytes + b * inp.mean_context * inp.kv_cell_bytes) / inp.hbm_bytes_per_s;
        inp.prefill_s + inp.output_tokens * t / b
    };
    let (lambda_rho1, lambda_cap, rho0) = fluid_lambda_bounds(inp);
    if rho0 >= 1.0 {
        return Ok(Err(NoRoot::WeightsAboveItl(
            inp.weights_bytes / inp.hbm_bytes_per_s,
        )));
    }
    let lambda_max = lambda_rho1.min(lambda_cap);
    let g = |lambda: f64| fluid_ttft_s(inp, lambda) - inp.ttft_p99_target_s;
    const N: usize = FLUID_GRID;
    let mut roots = Vec::new();
    let mut prev_x = lambda_max / N as f64;
    let mut prev = g(prev_x);
    for i in 2..N {
        let x = lambda_max * i as f64 / N as f64;
        let y = g(x);
        if (prev < 0.0) != (y < 0.0) {
            let (mut lo, mut hi) = (prev_x, x);
            for _ in 0..200 {
                let mid = 0.5 * (lo + hi);
                if (g(mid) < 0.0) == (prev < 0.0) {
                    lo = mid;
                } else {
                    hi = mid;
                }
            }
            roots.push(0.5 * (lo + hi));
        }
        prev_x = x;
        prev = y;
    }
    if lambda_cap < lambda_rho1 && prev < 0.0 {
        return Ok(Err(NoRoot::BatchCap));
    }
    let Some(&hi) = roots.last() else {
        return Ok(Err(NoRoot::TtftAboveTarget));
    };
    let lower = (roots.len() >= 2).then(|| roots[roots.len() - 2]);
    let s = service(hi);
    Ok(Ok(Fluid {
        itl_target_ns: inp.itl_target_s * 1e9,
        lambda_rps: hi,
        batch: per_lambda_b * hi,
        service_ns: s * 1e9,
        rho: hi * s,
        replicas: replicas(inp.fleet_rps, hi)?,
        usd_per_million_output_tokens: usd_per_million(
            inp.price_usd_per_gpu_hour,
            inp.gpus_per_replica,
            hi * inp.output_tokens,
        ),
        lower_root_lambda_rps: lower,
        lower_root_batch: lower.map(|l| per_lambda_b * l),
    }))
}

/// The step of the plan without a solution, with what explaining it needs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Unmet {
    /// Step 5: the prefill (seconds) is not under the TTFT target.
    Screen { prefill_s: f64 },
    /// Step 6: the fluid model has no operating point, for `why`; `prefill_share` is the
    /// prefill's share of the service time of step 4.
    Fluid {
        inputs: FluidInputs,
        why: NoRoot,
        prefill_share: f64,
    },
}

/// Run steps 1–6. A step 5 or 6 without a solution (a target no load meets) is no error:
/// the plan keeps every step before it (its `unsolved` left empty) and [`Unmet`] names
/// the step; `roofline::capacity_plan::plan` fills in why.
pub(crate) fn plan_steps(inp: &CapacityInputs) -> Result<(CapacityPlan, Option<Unmet>)> {
    positive("KV pool (tokens)", inp.kv_pool_tokens)?;
    positive("KV cell bytes", inp.kv_cell_bytes)?;
    positive("input tokens", inp.input_tokens)?;
    positive("output tokens", inp.output_tokens)?;
    positive("HBM bandwidth", inp.hbm_bytes_per_s)?;
    positive("peak FLOP/s", inp.peak_flops_per_s)?;
    positive("prefill MFU", inp.prefill_mfu)?;
    positive("TTFT target", inp.ttft_p99_target_s)?;
    positive("GPU-hour price", inp.price_usd_per_gpu_hour)?;
    if inp.prefill_mfu > 1.0 {
        return Err(Error::input(format!(
            "prefill MFU {} is above 1; pass a fraction such as 0.4",
            inp.prefill_mfu
        )));
    }
    // Step 1: concurrency from the KV budget.
    let mean_context = inp.input_tokens + inp.output_tokens / 2.0;
    let b_max = (inp.kv_pool_tokens / mean_context).floor();
    if b_max < 1.0 {
        return Err(Error::input(format!(
            "the KV pool holds {:.0} tokens, less than one request's mean resident context {mean_context}; add memory or shorten requests",
            inp.kv_pool_tokens
        )));
    }
    let batch = match inp.batch {
        Some(b) if b > b_max => {
            return Err(Error::input(format!(
                "batch {b} is above B_max = {b_max} (KV pool / mean context); lower --batch"
            )))
        }
        Some(b) => {
            positive("batch", b)?;
            b
        }
        None => b_max,
    };
    // Step 2: price a step at that batch (chapter bytes: no KV write).
    let step_bytes = inp.weights_bytes + batch * mean_context * inp.kv_cell_bytes;
    let step_s = step_bytes / inp.hbm_bytes_per_s;
    let tok_s = batch / step_s;
    // Step 3: causal prefill at the assumed MFU.
    let s_in = inp.input_tokens;
    let prefill_flops = prefill_flops(inp.params_streamed, inp.prefill_attention_coeff, s_in);
    let prefill_s = prefill_time_s(prefill_flops, inp.prefill_mfu, inp.peak_flops_per_s);
    // Step 4: GPU service time per request.
    let decode_share_s = inp.output_tokens / tok_s;
    let service_s = prefill_s + decode_share_s;
    // Step 5: the fixed-batch M/M/1 screen; a prefill at or above the TTFT target leaves
    // it (and step 6, whose TTFT has the same prefill offset) without a solution.
    let mut unsolved = None;
    let fixed_batch = if inp.ttft_p99_target_s > prefill_s {
        Some(fixed_batch_screen(&ScreenInputs {
            service_s,
            prefill_s,
            ttft_p99_target_s: inp.ttft_p99_target_s,
            output_tokens: inp.output_tokens,
            fleet_rps: inp.fleet_rps,
            price_usd_per_gpu_hour: inp.price_usd_per_gpu_hour,
            gpus_per_replica: inp.gpus_per_replica,
        })?)
    } else {
        unsolved = Some(Unmet::Screen { prefill_s });
        None
    };
    // Step 6: the fluid ITL closure.
    let fluid = match (inp.itl_target_s, &unsolved) {
        (Some(itl), None) => {
            let f = FluidInputs {
                weights_bytes: inp.weights_bytes,
                mean_context,
                kv_cell_bytes: inp.kv_cell_bytes,
                hbm_bytes_per_s: inp.hbm_bytes_per_s,
                prefill_s,
                output_tokens: inp.output_tokens,
                itl_target_s: itl,
                ttft_p99_target_s: inp.ttft_p99_target_s,
                b_cap: b_max,
                fleet_rps: inp.fleet_rps,
                price_usd_per_gpu_hour: inp.price_usd_per_gpu_hour,
                gpus_per_replica: inp.gpus_per_replica,
            };
            match fluid_outcome(&f)? {
                Ok(root) => Some(root),
                Err(why) => {
                    unsolved = Some(Unmet::Fluid {
                        inputs: f,
                        why,
                        prefill_share: prefill_s / service_s,
                    });
                    None
                }
            }
        }
        _ => None,
    };
    let plan = CapacityPlan {
        kv_pool_tokens: inp.kv_pool_tokens,
        mean_context,
        b_max: b_max as u64,
        batch,
        step_bytes,
        step_ns: step_s * 1e9,
        decode_tokens_per_s: tok_s,
        prefill_flops,
        prefill_ns: prefill_s * 1e9,
        decode_share_ns: decode_share_s * 1e9,
        service_ns: service_s * 1e9,
        saturation_rps: 1.0 / service_s,
        prefill_fraction: prefill_s / service_s,
        decode_fraction: decode_share_s / service_s,
        fixed_batch,
        fluid,
        unsolved: None,
    };
    Ok((plan, unsolved))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_rho_at_one_and_clamps_below_001() {
        assert!(wq99_s(0.1, 1.0).is_err());
        assert_eq!(wq99_s(0.1, 0.005).unwrap(), 0.0);
        assert!(solve_rho(0.1, 0.9, 0.9).is_err());
    }

    #[test]
    fn solved_rho_satisfies_its_equation() {
        let rho = solve_rho(0.0912, 0.0704, 0.9).unwrap();
        let w = wq99_s(0.0912, rho).unwrap();
        assert!((w + 0.0704 - 0.9).abs() < 1e-12);
    }
}
