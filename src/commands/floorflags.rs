//! Model and GPU flags shared by `steps`, `gate`, `baseline` and `diff`: turning a step's
//! parsed batch composition into its own roofline floor.

use crate::attribution::FloorInput;
use crate::commands::floor::ModelGpuArgs;
use crate::commands::floor::MAX_HBM_TB_S;
use crate::commands::numbers;
use crate::exit::{Error, Result};
use crate::roofline::floor::{step_floor, Bound, FloorOptions, StepComposition};
use crate::roofline::gpu::{self, GpuSpec};
use crate::roofline::model::{ModelSpec, MoeRouting};
use crate::timing::stepname::BatchComposition;
use crate::timing::steps::Step;
use crate::trace::Trace;

/// `--model …` and friends; the floor is priced only when a model is given.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct FloorFlags {
    /// Model preset (e.g. llama-3-8b, qwen3-8b, deepseek-v3): enables per-step floors.
    #[arg(long, conflicts_with = "model_config")]
    pub model: Option<String>,
    /// A Hugging Face config.json instead of a preset.
    #[arg(long, value_name = "PATH")]
    pub model_config: Option<std::path::PathBuf>,
    /// GPU preset; default: the GPU the report names.
    #[arg(long)]
    pub gpu: Option<String>,
    /// Requests per step, for steps whose names do not say (graphs, gaps, regex).
    #[arg(long, allow_negative_numbers = true, value_parser = batch_flag)]
    pub batch: Option<u64>,
    /// Context per request (keys attended, new token included) when names lack ΣN_KV.
    #[arg(long, allow_negative_numbers = true, value_parser = context_flag)]
    pub context: Option<u64>,
    /// Tensor-parallel degree.
    #[arg(long, default_value_t = 1, allow_negative_numbers = true, value_parser = tp_flag)]
    pub tp: u32,
    /// Weight storage: bf16, fp16, fp8, int8, int4, mxfp4.
    #[arg(long)]
    pub weight_dtype: Option<String>,
    /// KV-cache dtype.
    #[arg(long, value_parser = ["bf16", "fp16", "fp8"])]
    pub kv_dtype: Option<String>,
    /// HBM bandwidth in TB/s (a measured number beats the datasheet).
    #[arg(long, allow_negative_numbers = true)]
    pub hbm_tb_s: Option<f64>,
    /// MoE expert routing model for the weight bytes.
    #[arg(long, value_enum, default_value_t = MoeRouting::Uniform)]
    pub moe_routing: MoeRouting,
}

/// `--batch`: requests per step, 1 ..= [`numbers::MAX_BATCH`].
pub fn batch_flag(s: &str) -> std::result::Result<u64, String> {
    numbers::count("--batch", "requests", s, 1, numbers::MAX_BATCH)
}

/// `--context`: keys per request, 0 ..= [`numbers::MAX_CONTEXT`] (0: weights only).
pub fn context_flag(s: &str) -> std::result::Result<u64, String> {
    numbers::count("--context", "tokens", s, 0, numbers::MAX_CONTEXT)
}

/// `--tp` / `--pp`: GPUs in the group, 1 ..= [`numbers::MAX_PARALLEL`].
pub fn tp_flag(s: &str) -> std::result::Result<u32, String> {
    numbers::count("--tp", "GPUs", s, 1, numbers::MAX_PARALLEL).map(|v| v as u32)
}

/// `--pp`, as [`tp_flag`].
pub fn pp_flag(s: &str) -> std::result::Result<u32, String> {
    numbers::count("--pp", "GPUs", s, 1, numbers::MAX_PARALLEL).map(|v| v as u32)
}

/// A resolved model and GPU to price steps with.
#[derive(Debug, Clone)]
pub struct Pricing {
    pub model: ModelSpec,
    pub gpu: GpuSpec,
    pub opts: FloorOptions,
    pub batch: Option<u64>,
    pub context: Option<u64>,
    /// What the floor was derived from, for the output.
    pub basis: String,
}

impl FloorFlags {
    /// The pricing, or None without `--model`/`--model-config`.
    pub fn pricing(&self, trace: &Trace) -> Result<Option<Pricing>> {
        if self.model.is_none() && self.model_config.is_none() {
            return Ok(None);
        }
        let report_gpu = trace.devices.iter().find_map(|d| d.name.clone());
        let (gpu_key, gpu_from) = match (&self.gpu, &report_gpu) {
            (Some(g), _) => (g.clone(), "--gpu"),
            (None, Some(name)) => match gpu::from_report_name(name) {
                Some(g) => (g.key.to_owned(), "named by the report"),
                None => {
                    return Err(Error::input(format!(
                        "the report names the GPU {name:?}, which is not in the GPU table: pass --gpu (and --hbm-tb-s)"
                    )))
                }
            },
            (None, None) => {
                return Err(Error::input(
                    "the report does not name its GPU: pass --gpu (e.g. --gpu h100-sxm) to price steps against the floor",
                ))
            }
        };
        numbers::real_opt("--hbm-tb-s", "TB/s", self.hbm_tb_s, MAX_HBM_TB_S)?;
        let mg = ModelGpuArgs {
            model: self.model.clone(),
            model_config: self.model_config.clone(),
            gpu: gpu_key,
            weight_dtype: self.weight_dtype.clone(),
            kv_dtype: self.kv_dtype.clone(),
            kv_dtype_bytes: None,
            tp: self.tp,
            pp: 1,
            weights_gb: None,
            params_b: None,
            layers: None,
            kv_heads: None,
            head_dim: None,
            hbm_tb_s: self.hbm_tb_s,
            peak_tflops: None,
            moe_routing: self.moe_routing,
        };
        let model = mg.model()?;
        let gpu = mg.gpu()?;
        let basis = format!(
            "{} on {} ({gpu_from}; {:.2} TB/s {}), tp={} — derived",
            model.name,
            gpu.name,
            gpu.hbm_bytes_per_s / 1e12,
            if self.hbm_tb_s.is_some() {
                "given"
            } else {
                "cited"
            },
            self.tp
        );
        Ok(Some(Pricing {
            model,
            gpu,
            opts: FloorOptions {
                tp: self.tp,
                pp: 1,
                moe_routing: self.moe_routing,
                include_kv_write: true,
            },
            batch: self.batch,
            context: self.context,
            basis,
        }))
    }
}

/// A step's composition for the floor: the parsed name first, `--batch`/`--context`
/// where the name is silent. None when ΣN_KV is unknown and no `--context` fills it.
pub fn composition(
    c: Option<&BatchComposition>,
    batch: Option<u64>,
    context: Option<u64>,
) -> Option<StepComposition> {
    // Checked arithmetic throughout: the counts come from step names other tools wrote, and
    // a product that wraps would price a step at a floor of nothing. Overflow = no floor.
    let Some(c) = c else {
        return match (batch, context) {
            (Some(b), Some(s)) => {
                b.checked_mul(s)?;
                Some(StepComposition::decode(b, s))
            }
            _ => None,
        };
    };
    let (g, x) = (&c.generation, &c.context);
    let dec_n = g.requests.unwrap_or(0);
    let pre_n = x.requests.unwrap_or(0);
    // Decode: one query token per request unless the name says otherwise.
    let d_sq = g.sq.unwrap_or(dec_n);
    let d_sk = if dec_n == 0 {
        Some(0)
    } else {
        g.sk.or(context.and_then(|s| dec_n.checked_mul(s)))
    }?;
    let d_sqsq = g.sqsq.unwrap_or(d_sq);
    let d_sqsk = g.sqsk.unwrap_or(d_sk);
    // Prefill: without per-request sums, assume equal-length requests (derived).
    let (p_sq, p_sk, p_sqsq, p_sqsk) = match std::num::NonZeroU64::new(pre_n) {
        None => (0, 0, 0, 0),
        Some(n) => {
            let sq = x.sq?;
            let sk = x.sk.or(context.and_then(|s| pre_n.checked_mul(s)))?;
            let sqsq = match x.sqsq {
                Some(v) => v,
                None => sq.checked_mul(sq)? / n,
            };
            let sqsk = match x.sqsk {
                Some(v) => v,
                None => sq.checked_mul(sk)? / n,
            };
            (sq, sk, sqsq, sqsk)
        }
    };
    Some(StepComposition {
        decode_requests: dec_n,
        prefill_requests: pre_n,
        sq: d_sq.checked_add(p_sq)?,
        sk: d_sk.checked_add(p_sk)?,
        sqsq: d_sqsq.checked_add(p_sqsq)?,
        sqsk: d_sqsk.checked_add(p_sqsk)?,
        decode_sq: d_sq,
        decode_sk: d_sk,
        decode_sqsq: d_sqsq,
        decode_sqsk: d_sqsk,
        sk_window: None,
        sqsk_window: None,
    })
}

impl Pricing {
    /// The step's own floor, when its composition is known.
    pub fn floor_of(&self, step: &Step) -> Option<FloorInput> {
        let comp = composition(step.composition.as_ref(), self.batch, self.context)?;
        if comp.sq == 0 {
            return None;
        }
        let f = step_floor(&self.model, &self.gpu, &comp, &self.opts);
        Some(FloorInput {
            floor_ns: f.floor_ns,
            total_bytes: f.total_bytes,
            flops: f.flops,
            bound: match f.bound {
                Bound::Memory => "memory".to_owned(),
                Bound::Compute => "compute".to_owned(),
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timing::stepname::parse;

    #[test]
    fn decode_composition_from_a_detailed_name() {
        let p = parse(
            "execute_32_context_0(sq0sk0sqsq0sqsk0)_generation_32(sq32sk65536sqsq32sqsk65536)",
        )
        .unwrap();
        let c = composition(Some(&p.composition), None, None).unwrap();
        assert_eq!(c, StepComposition::decode(32, 2048));
    }

    #[test]
    fn names_without_kv_need_context() {
        let p = parse("step[DECODE bs=32]").unwrap();
        assert!(composition(Some(&p.composition), None, None).is_none());
        assert_eq!(
            composition(Some(&p.composition), None, Some(2048)).unwrap(),
            StepComposition::decode(32, 2048)
        );
        let p = parse("execute_context_1(888_788544)_generation_0(0)").unwrap();
        assert!(composition(Some(&p.composition), None, None).is_none());
        let c = composition(Some(&p.composition), None, Some(888)).unwrap();
        assert_eq!(
            (c.sq, c.sk, c.sqsq, c.sqsk, c.prefill_requests),
            (888, 888, 788_544, 788_544, 1)
        );
        assert_eq!(
            composition(None, Some(4), Some(100)).unwrap(),
            StepComposition::decode(4, 100)
        );
    }

    #[test]
    fn products_that_would_wrap_give_no_floor() {
        // 2^32 · 2^32 = 2^64 wraps to 0 in u64: no composition, not a floor of nothing.
        assert!(composition(None, Some(1 << 32), Some(1 << 32)).is_none());
        let p = parse("step[DECODE bs=32]").unwrap();
        assert!(composition(Some(&p.composition), None, Some(u64::MAX / 2)).is_none());
        assert!(composition(Some(&p.composition), None, Some(1 << 20)).is_some());
    }
}
