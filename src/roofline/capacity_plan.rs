//! The capacity plan as a user gets it: steps 1–6 (`roofline::capacity`) and, when a step
//! has no solution, why in the model's own terms and what would give it one. Each
//! suggested change is solved again with the same model and kept only when it does give a
//! solution, so no suggestion is a guess.

use crate::exit::Result;
use crate::roofline::capacity::{
    fluid_lambda_bounds, fluid_outcome, fluid_ttft_s, plan_steps, FluidInputs, NoRoot, Unmet,
    FLUID_GRID,
};
use crate::wire::capacity::CapacityInputs;
use crate::wire::capacity::{CapacityPlan, Unsolved};

/// Steps 1–6 of the plan; a step without a solution is kept in
/// [`CapacityPlan::unsolved`] with its reason and the changes that would solve it.
pub fn plan(inp: &CapacityInputs) -> Result<CapacityPlan> {
    let (mut p, unmet) = plan_steps(inp)?;
    p.unsolved = match unmet {
        None => None,
        Some(Unmet::Screen { prefill_s }) => Some(screen(inp, prefill_s)),
        Some(Unmet::Fluid {
            inputs,
            why,
            prefill_share,
        }) => Some(fluid(&inputs, why, prefill_share, inp.prefill_mfu)),
    };
    Ok(p)
}

const SCREEN: &str = "fixed-batch M/M/1 screen";
const FLUID: &str = "fluid ITL closure";

/// Seconds as milliseconds with one decimal (the model does not import the renderers).
fn ms(s: f64) -> String {
    format!("{:.1}", s * 1e3)
}

/// Step 5 without a solution: the prefill alone (`prefill_s`) is not under the TTFT target,
/// and the queueing wait only adds to it.
pub fn screen(inp: &CapacityInputs, prefill_s: f64) -> Unsolved {
    let target = inp.ttft_p99_target_s;
    let reason = format!(
        "the prefill alone takes {} ms at {:.0}% MFU, not under the {} ms p99 TTFT \
         target; queueing only adds to it, so no load meets the target",
        ms(prefill_s),
        inp.prefill_mfu * 100.0,
        ms(target)
    );
    let mut changes = vec![
        format!("a p99 TTFT target above {} ms (--ttft-ms)", ms(prefill_s)),
        format!(
            "a prefill under {} ms: more GPUs per replica (--tp) or a shorter prompt \
             (--input-tokens)",
            ms(target)
        ),
    ];
    // Prefill time is FLOPs / (MFU · peak): the MFU that brings it to the target.
    let mfu = inp.prefill_mfu * prefill_s / target;
    if mfu < 1.0 {
        changes.push(format!(
            "a measured prefill MFU above {:.2} (--prefill-mfu)",
            (mfu * 100.0).ceil() / 100.0
        ));
    }
    Unsolved {
        step: 5,
        name: SCREEN.to_owned(),
        reason,
        changes,
        lowest_ttft_p99_ns: None,
        lowest_at_lambda_rps: None,
        prefill_at_most_ns: Some(target * 1e9),
    }
}

/// Whether the fluid model has an operating point with these inputs.
fn solves(f: &FluidInputs) -> bool {
    matches!(fluid_outcome(f), Ok(Ok(_)))
}

/// The lowest p99 TTFT the fluid model reaches over every admissible load, and where:
/// a grid over (0, λ_max) refined by golden-section search around its lowest point.
pub(crate) fn lowest_ttft(f: &FluidInputs) -> (f64, f64) {
    let (rho1, cap, _) = fluid_lambda_bounds(f);
    let max = rho1.min(cap);
    let at = |i: usize| max * i as f64 / FLUID_GRID as f64;
    let best = (1..FLUID_GRID)
        .map(|i| (i, fluid_ttft_s(f, at(i))))
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .map_or(1, |(i, _)| i);
    let (mut lo, mut hi) = (at(best - 1).max(f64::MIN_POSITIVE), at(best + 1));
    let r = (5f64.sqrt() - 1.0) / 2.0;
    for _ in 0..100 {
        let (x1, x2) = (hi - r * (hi - lo), lo + r * (hi - lo));
        if fluid_ttft_s(f, x1) <= fluid_ttft_s(f, x2) {
            hi = x2;
        } else {
            lo = x1;
        }
    }
    let x = 0.5 * (lo + hi);
    (fluid_ttft_s(f, x), x)
}

/// The longest prefill (below the current one) at which the fluid model has a root: a
/// scan down in 1/200 steps finds the first that solves (too short a prefill can push the
/// root past B_max, so solving is not monotone), bisection sharpens it, and the value
/// printed is checked; None when no prefill on the scan solves.
fn prefill_at_most(f: &FluidInputs) -> Option<f64> {
    let with = |p: f64| FluidInputs { prefill_s: p, ..*f };
    const STEPS: usize = 200;
    let at = |i: usize| f.prefill_s * (1.0 - i as f64 / STEPS as f64);
    let first = (1..STEPS).find(|&i| solves(&with(at(i))))?;
    let (mut lo, mut hi) = (at(first), at(first - 1));
    for _ in 0..50 {
        let mid = 0.5 * (lo + hi);
        if solves(&with(mid)) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    // Rounded down to the 0.1 ms it is printed with, and checked there.
    let shown = (lo * 1e4).floor() / 1e4;
    solves(&with(shown)).then_some(shown)
}

/// The first ITL target on a ×1.25 ladder above the current one (up to 10 s) at which the
/// fluid model has a root.
fn looser_itl(f: &FluidInputs) -> Option<f64> {
    let mut itl = f.itl_target_s;
    while itl < 10.0 {
        itl = (itl * 1.25 * 1e3).ceil() / 1e3;
        if solves(&FluidInputs {
            itl_target_s: itl,
            ..*f
        }) {
            return Some(itl);
        }
    }
    None
}

/// The first ITL target on a ×0.8 ladder below the current one at which the fluid model
/// has a root (a tighter target keeps the live batch under B_max).
fn tighter_itl(f: &FluidInputs) -> Option<f64> {
    let mut itl = f.itl_target_s;
    for _ in 0..30 {
        itl = (itl * 0.8 * 1e4).floor() / 1e4;
        if itl <= 0.0 {
            break;
        }
        if solves(&FluidInputs {
            itl_target_s: itl,
            ..*f
        }) {
            return Some(itl);
        }
    }
    None
}

/// Step 6 without a solution, for the reason `why`; `prefill_share` is the prefill's
/// share of the service time of step 4, `mfu` the prefill MFU assumed.
pub fn fluid(f: &FluidInputs, why: NoRoot, prefill_share: f64, mfu: f64) -> Unsolved {
    let itl = ms(f.itl_target_s);
    let mut out = Unsolved {
        step: 6,
        name: FLUID.to_owned(),
        reason: String::new(),
        changes: Vec::new(),
        lowest_ttft_p99_ns: None,
        lowest_at_lambda_rps: None,
        prefill_at_most_ns: None,
    };
    match why {
        NoRoot::WeightsAboveItl(w) => {
            out.reason = format!(
                "streaming the weights alone takes {} ms per decode step, above the {itl} \
                 ms ITL target: no batch meets it",
                ms(w)
            );
            out.changes
                .push(format!("an ITL target above {} ms (--itl-ms)", ms(w)));
            out.changes.push(
                "fewer weight bytes per GPU: more GPUs per replica (--tp) or a narrower \
                 --weight-dtype (fp8, int4)"
                    .to_owned(),
            );
        }
        NoRoot::BatchCap => {
            out.reason = format!(
                "at a {itl} ms ITL the live batch ITL·out·λ reaches B_max = {} (the KV pool) \
                 while the p99 TTFT is still under its target: the KV pool, not the TTFT \
                 target, limits this deployment",
                f.b_cap
            );
            if let Some(t) = tighter_itl(f) {
                out.changes
                    .push(format!("an ITL target of {} ms (--itl-ms)", ms(t)));
            }
            out.changes.push(
                "more KV memory: more GPUs per replica (--tp), --kv-dtype fp8, a higher \
                 --gpu-mem-util"
                    .to_owned(),
            );
        }
        NoRoot::TtftAboveTarget => {
            let (lowest, at) = lowest_ttft(f);
            out.lowest_ttft_p99_ns = Some(lowest * 1e9);
            out.lowest_at_lambda_rps = Some(at);
            out.reason = format!(
                "at a {itl} ms ITL the p99 TTFT is at least {} ms at any load (lowest at \
                 {:.2} req/s), above the {} ms target: prefill is {:.0}% of the \
                 per-request service time S (step 4), so S and the M/M/1 wait stay long \
                 at every arrival rate",
                ms(lowest),
                at,
                ms(f.ttft_p99_target_s),
                prefill_share * 100.0
            );
            // A TTFT target just above the lowest reachable one: checked, not assumed.
            let t = ((lowest * 1e3).ceil() + 1.0) / 1e3;
            if solves(&FluidInputs {
                ttft_p99_target_s: t,
                ..*f
            }) {
                out.changes
                    .push(format!("a p99 TTFT target of {} ms (--ttft-ms)", ms(t)));
            }
            if let Some(p) = prefill_at_most(f) {
                out.prefill_at_most_ns = Some(p * 1e9);
                // Prefill time is FLOPs / (MFU · peak): the MFU that brings it to p.
                let need = if p > 0.0 { mfu * f.prefill_s / p } else { 2.0 };
                let by_mfu = if need <= 1.0 {
                    format!(
                        " or a measured prefill MFU of {:.2} (--prefill-mfu)",
                        (need * 100.0).ceil() / 100.0
                    )
                } else {
                    String::new()
                };
                out.changes.push(format!(
                    "a prefill of at most {} ms (now {} ms): more GPUs per replica (--tp), \
                     a shorter prompt (--input-tokens){by_mfu}",
                    ms(p),
                    ms(f.prefill_s),
                ));
            }
            if let Some(t) = looser_itl(f) {
                out.changes
                    .push(format!("an ITL target of {} ms (--itl-ms)", ms(t)));
            }
        }
    }
    out
}
