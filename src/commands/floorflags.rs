//! Model and GPU flags shared by `steps`, `gate`, `baseline` and `diff`: turning a step's
//! parsed batch composition into its own roofline floor.

use crate::attribution::FloorInput;
use crate::commands::floor::ModelGpuArgs;
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
    #[arg(long)]
    pub batch: Option<u64>,
    /// Context per request (keys attended, new token included) when names lack ΣN_KV.
    #[arg(long)]
    pub context: Option<u64>,
    /// Tensor-parallel degree.
    #[arg(long, default_value_t = 1)]
    pub tp: u32,
    /// Weight storage: bf16, fp16, fp8, int8, int4, mxfp4.
    #[arg(long)]
    pub weight_dtype: Option<String>,
    /// KV-cache dtype.
    #[arg(long, value_parser = ["bf16", "fp16", "fp8"])]
    pub kv_dtype: Option<String>,
    /// HBM bandwidth in TB/s (a measured number beats the datasheet).
    #[arg(long)]
    pub hbm_tb_s: Option<f64>,
    /// MoE expert routing model for the weight bytes.
    #[arg(long, value_enum, default_value_t = MoeRouting::Uniform)]
    pub moe_routing: MoeRouting,
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
    let Some(c) = c else {
        return match (batch, context) {
            (Some(b), Some(s)) => Some(StepComposition::decode(b, s)),
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
        g.sk.or(context.map(|s| dec_n * s))
    }?;
    let d_sqsq = g.sqsq.unwrap_or(d_sq);
    let d_sqsk = g.sqsk.unwrap_or(d_sk);
    // Prefill: without per-request sums, assume equal-length requests (derived).
    let (p_sq, p_sk, p_sqsq, p_sqsk) = match std::num::NonZeroU64::new(pre_n) {
        None => (0, 0, 0, 0),
        Some(n) => {
            let sq = x.sq?;
            let sk = x.sk.or(context.map(|s| pre_n * s))?;
            let sqsq = x.sqsq.unwrap_or(sq * sq / n);
            let sqsk = x.sqsk.unwrap_or(sq * sk / n);
            (sq, sk, sqsq, sqsk)
        }
    };
    Some(StepComposition {
        decode_requests: dec_n,
        prefill_requests: pre_n,
        sq: d_sq + p_sq,
        sk: d_sk + p_sk,
        sqsq: d_sqsq + p_sqsq,
        sqsk: d_sqsk + p_sqsk,
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
}
