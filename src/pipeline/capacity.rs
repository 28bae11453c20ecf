//! `capacity`'s run: the six-step capacity plan (KV pool → B_max, step time, prefill,
//! service time, M/M/1 TTFT screen, fluid ITL closure, replicas, cost) for one model on
//! one GPU.

use crate::exit::{Error, Result};
use crate::pipeline::plan::ModelGpu;
use crate::report::capacity::Context;
use crate::roofline::capacity::prefill_attention_coeff;
use crate::roofline::capacity_plan::plan;
use crate::wire::capacity::CapacityInputs;
use crate::wire::capacity::CapacityPlan;
use crate::wire::roofline::{FloorOptions, GpuSpec, ModelSpec};

/// The workload and targets to plan for, in the flags' units (checked by the caller).
#[derive(Debug, Clone, Copy)]
pub struct CapacityRequest {
    /// Prompt and output tokens per request.
    pub input_tokens: f64,
    pub output_tokens: f64,
    /// The KV pool in tokens or GiB; neither: GPU memory × `gpu_mem_util` minus weights.
    pub kv_pool_tokens: Option<f64>,
    pub kv_pool_gib: Option<f64>,
    pub gpu_mem_util: f64,
    /// Price the step at this batch instead of B_max.
    pub batch: Option<f64>,
    /// Assumed prefill MFU (fraction of peak).
    pub prefill_mfu: f64,
    pub ttft_ms: f64,
    pub itl_ms: f64,
    pub fleet_rps: Option<f64>,
    pub usd_per_gpu_hour: f64,
}

/// The plan, and what it was derived from for the report. A step without a solution is
/// in the plan ([`CapacityPlan::unsolved`]); when a larger `--tp` would give it one (the
/// same model solved again), that is among its changes.
pub fn run(mg: &ModelGpu, req: &CapacityRequest) -> Result<(Context, CapacityPlan)> {
    let m = mg.model.resolve()?;
    let g = mg.gpu.resolve()?;
    if mg.floor.pp != 1 {
        return Err(Error::usage(
            "capacity models tensor parallelism only; pass --pp 1 (use --tp for multi-GPU replicas)",
        ));
    }
    let tp = mg.floor.tp;
    let (inputs, mut p) = plan_at(&m, &g, mg, req, tp)?;
    if let Some(u) = &mut p.unsolved {
        // A pool given in tokens is the user's, not the GPUs': more GPUs would not change it.
        if req.kv_pool_tokens.is_none() {
            if let Some((n, q)) = more_tp(&m, &g, mg, req, tp) {
                let at = match (&q.fluid, &q.fixed_batch) {
                    (Some(f), _) => f.lambda_rps,
                    (None, Some(s)) => s.lambda_rps,
                    (None, None) => 0.0,
                };
                u.changes.push(format!(
                    "--tp {n}: the plan has a solution ({at:.2} req/s per {n}-GPU replica)"
                ));
            }
        }
    }
    let ctx = Context {
        model: m.name.clone(),
        gpu: g.key.to_owned(),
        gpu_source: g.source.to_owned(),
        hbm_basis: if mg.gpu.hbm_bytes_per_s.is_some() {
            "input"
        } else {
            "cited"
        },
        peak_basis: if mg.gpu.peak_flops_per_s.is_some() {
            "input"
        } else {
            "cited"
        },
        kv_pool_basis: if req.kv_pool_tokens.is_some() || req.kv_pool_gib.is_some() {
            "input"
        } else {
            "derived"
        },
        inputs,
    };
    Ok((ctx, p))
}

/// The smallest power-of-two multiple of `tp` (up to 64 GPUs) whose plan has every step
/// solved, with that plan.
fn more_tp(
    m: &ModelSpec,
    g: &GpuSpec,
    mg: &ModelGpu,
    req: &CapacityRequest,
    tp: u32,
) -> Option<(u32, CapacityPlan)> {
    let mut n = tp.checked_mul(2)?;
    while n <= 64 {
        if let Ok((_, q)) = plan_at(m, g, mg, req, n) {
            if q.unsolved.is_none() {
                return Some((n, q));
            }
        }
        n = n.checked_mul(2)?;
    }
    None
}

/// Steps 1–6 at `tp` GPUs per replica.
fn plan_at(
    m: &ModelSpec,
    g: &GpuSpec,
    mg: &ModelGpu,
    req: &CapacityRequest,
    tp: u32,
) -> Result<(CapacityInputs, CapacityPlan)> {
    let cell = m.kv_cell_bytes(tp, 1);
    let kv_pool_tokens = match (req.kv_pool_tokens, req.kv_pool_gib) {
        (Some(t), _) => t,
        (None, Some(gib)) => (gib * f64::from(1u32 << 30) / cell).floor(),
        (None, None) => {
            if !(req.gpu_mem_util > 0.0 && req.gpu_mem_util <= 1.0) {
                return Err(Error::usage("--gpu-mem-util must be in (0, 1]"));
            }
            let free = g.memory_bytes * req.gpu_mem_util - m.resident_weight_bytes(tp, 1);
            if free <= 0.0 {
                return Err(Error::input(format!(
                    "the weights ({:.1} GB per GPU) do not fit in {:.0}% of {:.0} GB; raise --tp or pass --kv-pool-tokens",
                    m.resident_weight_bytes(tp, 1) / 1e9,
                    req.gpu_mem_util * 100.0,
                    g.memory_bytes / 1e9
                )));
            }
            (free / cell).floor()
        }
    };
    // MoE: the step streams the experts its batch touches; priced at B_max.
    let mean_ctx = req.input_tokens + req.output_tokens / 2.0;
    let b_guess = req
        .batch
        .unwrap_or((kv_pool_tokens / mean_ctx).floor())
        .max(1.0);
    let opts = FloorOptions {
        tp,
        pp: 1,
        moe_routing: mg.floor.moe_routing,
        include_kv_write: false,
    };
    let weights = m.streamed_weight_bytes(b_guess, opts.moe_routing, tp, 1);
    let tpf = f64::from(tp);
    let coeff = prefill_attention_coeff(m, tp);
    let inputs = CapacityInputs {
        kv_pool_tokens,
        kv_cell_bytes: cell,
        input_tokens: req.input_tokens,
        output_tokens: req.output_tokens,
        weights_bytes: weights,
        params_streamed: m.params_streamed() / tpf,
        prefill_attention_coeff: coeff,
        hbm_bytes_per_s: g.hbm_bytes_per_s,
        peak_flops_per_s: g.peak_flops_per_s(m.weight_dtype.is_fp8()),
        prefill_mfu: req.prefill_mfu,
        ttft_p99_target_s: req.ttft_ms / 1e3,
        itl_target_s: Some(req.itl_ms / 1e3),
        fleet_rps: req.fleet_rps,
        price_usd_per_gpu_hour: req.usd_per_gpu_hour,
        gpus_per_replica: tpf,
        batch: req.batch,
    };
    let p = plan(&inputs)?;
    Ok((inputs, p))
}
