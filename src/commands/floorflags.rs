//! The model and GPU flags every pricing command shares (defined once, converted into the
//! plain [`crate::roofline::options`]), and the step commands' pricing: turning a step's
//! parsed batch composition into its own roofline floor.

use std::path::PathBuf;

use crate::attribution::FloorInput;
use crate::commands::floor::MAX_HBM_TB_S;
use crate::commands::numbers;
use crate::exit::{Error, Result};
use crate::roofline::floor::{step_floor, FloorOptions, StepComposition};
use crate::roofline::gpu::{self, GpuSpec};
use crate::roofline::model::{ModelSpec, MoeRouting};
use crate::roofline::options::{GpuOptions, ModelOptions};
use crate::timing::stepname::{BatchComposition, StepKind};
use crate::timing::steps::Step;
use crate::trace::Trace;
use crate::wire::attribution::Sourced;

/// The model and GPU flags, defined once: `floor` and `capacity` flatten them beside their
/// raw geometry overrides ([`crate::commands::floor::ModelGpuArgs`]), the step commands
/// beside `--batch`/`--context` ([`crate::commands::stepflags::StepFlags`]).
#[derive(Debug, Clone, clap::Args)]
pub struct ModelFlags {
    /// Model preset (e.g. llama-3-8b, qwen3-8b, deepseek-v3). `floor` and `capacity`
    /// default to llama-3-8b; the step commands price floors only when a model is given.
    #[arg(long, conflicts_with = "model_config")]
    pub model: Option<String>,
    /// A Hugging Face config.json to read the geometry from, instead of a preset.
    #[arg(long, value_name = "PATH")]
    pub model_config: Option<PathBuf>,
    /// GPU preset, e.g. h100-sxm, a100-80gb, l40s, mi300x. Default: h100-sxm for `floor`
    /// and `capacity`, the GPU the report names for the step commands.
    #[arg(long, alias = "card")]
    pub gpu: Option<String>,
    /// Weight storage: bf16, fp16, fp8, int8, int4 (group 128 scales), int4-gN, mxfp4.
    #[arg(long)]
    pub weight_dtype: Option<String>,
    /// KV-cache dtype.
    #[arg(long, value_parser = ["bf16", "fp16", "fp8"])]
    pub kv_dtype: Option<String>,
    /// Tensor-parallel degree: per-GPU bytes and FLOPs (default: what the capture says,
    /// else 1).
    #[arg(long, allow_negative_numbers = true, value_parser = tp_flag)]
    pub tp: Option<u32>,
    /// HBM bandwidth in TB/s; a measured number beats the datasheet.
    #[arg(long, allow_negative_numbers = true)]
    pub hbm_tb_s: Option<f64>,
    /// How a step's tokens spread over MoE experts: uniform (expected count), spread
    /// (min(B·k, E), vLLM's convention) or packed (k, the lower bound).
    #[arg(long, value_enum, default_value_t = MoeRouting::Uniform)]
    pub moe_routing: MoeRouting,
}

impl ModelFlags {
    /// The model these flags name, as plain options (no raw geometry overrides).
    pub fn model_options(&self) -> ModelOptions {
        ModelOptions {
            preset: self.model.clone(),
            config: self.model_config.clone(),
            weight_dtype: self.weight_dtype.clone(),
            kv_dtype_bytes: self
                .kv_dtype
                .as_deref()
                .map(|k| if k == "fp8" { 1.0 } else { 2.0 }),
            ..ModelOptions::default()
        }
    }

    /// `--hbm-tb-s`, checked, in bytes/s.
    pub fn hbm_bytes_per_s(&self) -> Result<Option<f64>> {
        Ok(numbers::real_opt("--hbm-tb-s", "TB/s", self.hbm_tb_s, MAX_HBM_TB_S)?.map(|b| b * 1e12))
    }
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

/// The pricing for the step commands, or None without `--model`/`--model-config`. The GPU
/// is `--gpu`, else the one the report names; `batch`/`context` fill what step names do
/// not say; `tp` and `pp` are the operating point's (flag, capture or default).
pub fn pricing(
    flags: &ModelFlags,
    batch: Option<u64>,
    context: Option<u64>,
    (tp, pp): (&Sourced<u32>, u32),
    trace: &Trace,
) -> Result<Option<Pricing>> {
    if flags.model.is_none() && flags.model_config.is_none() {
        return Ok(None);
    }
    let report_gpu = trace.devices.iter().find_map(|d| d.name.clone());
    let (gpu_key, gpu_from) = match (&flags.gpu, &report_gpu) {
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
    let hbm_bytes_per_s = flags.hbm_bytes_per_s()?;
    let model = flags.model_options().resolve()?;
    let gpu = GpuOptions {
        key: gpu_key,
        hbm_bytes_per_s,
        peak_flops_per_s: None,
    }
    .resolve()?;
    let basis = format!(
        "{} on {} ({gpu_from}; {:.2} TB/s {}), tp={} ({}){} — derived",
        model.name,
        gpu.name,
        gpu.hbm_bytes_per_s / 1e12,
        if flags.hbm_tb_s.is_some() {
            "given"
        } else {
            "cited"
        },
        tp.value,
        tp.basis.as_str(),
        if pp > 1 {
            format!(", pp={pp}")
        } else {
            String::new()
        }
    );
    Ok(Some(Pricing {
        model,
        gpu,
        opts: FloorOptions {
            tp: tp.value,
            pp,
            moe_routing: flags.moe_routing,
            include_kv_write: true,
        },
        batch,
        context,
        basis,
    }))
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
    /// The step's composition for its floor: its name's, else `batch`/`context` as a
    /// decode — never for a step inferred to be a prefill or mixed, which a decode
    /// composition would misprice.
    pub fn composition_of(&self, step: &Step) -> Option<StepComposition> {
        // A name that counts no requests (ProfilerStep#N) says nothing of the batch.
        let named = step.composition.as_ref().filter(|c| c.counts_requests());
        if named.is_none() && matches!(step.kind_label().kind, StepKind::Prefill | StepKind::Mixed)
        {
            return None;
        }
        let comp = composition(named, self.batch, self.context)?;
        (comp.sq > 0).then_some(comp)
    }

    /// The step's own floor, when its composition is known.
    pub fn floor_of(&self, step: &Step) -> Option<FloorInput> {
        let comp = self.composition_of(step)?;
        Some(FloorInput::from(&step_floor(
            &self.model,
            &self.gpu,
            &comp,
            &self.opts,
        )))
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
