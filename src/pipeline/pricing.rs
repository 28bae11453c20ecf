//! Pricing steps against their own roofline floor: the model and GPU resolved once per
//! report, what the floor was derived from (as data), and a step's batch composition turned
//! into the floor's inputs.

use std::fmt;

use crate::exit::{Error, Result};
use crate::pipeline::plan::FloorPlan;
use crate::roofline::floor::step_floor;
use crate::roofline::gpu;
use crate::roofline::mixed::least_mixed;
use crate::roofline::options::GpuOptions;
use crate::wire::attribution::{Basis, OperatingPoint};
use crate::wire::roofline::{FloorOptions, GpuSpec, ModelSpec, StepComposition};
use crate::wire::steps::{BatchComposition, Step, StepKind};

/// Where the GPU the floor is priced on came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GpuFrom {
    /// `--gpu`.
    Flag,
    /// The GPU name the report carries, matched in the GPU table.
    Report,
    /// An unnamed device whose properties (SM count, memory) fit one preset only.
    Properties,
}

/// What a step's floor was derived from. Its `Display` is the text after `floor: ` in the
/// steps report's notes.
#[derive(Debug, Clone, PartialEq)]
pub struct FloorBasis {
    /// The model's name as resolved (preset key or the config's).
    pub model: String,
    /// The GPU's marketing name.
    pub gpu: String,
    pub gpu_from: GpuFrom,
    /// HBM bandwidth priced with, bytes/s.
    pub hbm_bytes_per_s: f64,
    /// The bandwidth was given (`--hbm-tb-s`), not the cited datasheet figure.
    pub hbm_given: bool,
    pub tp: u32,
    /// Where the TP came from (flag, capture, default).
    pub tp_basis: Basis,
    /// Pipeline-parallel degree: the last stage is priced when above 1.
    pub pp: u32,
}

impl fmt::Display for FloorBasis {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} on {} ({}; {:.2} TB/s {}), tp={} ({}){} — derived",
            self.model,
            self.gpu,
            match self.gpu_from {
                GpuFrom::Flag => "--gpu",
                GpuFrom::Report => "named by the report",
                GpuFrom::Properties => "inferred from the device's SM count and memory",
            },
            self.hbm_bytes_per_s / 1e12,
            if self.hbm_given { "given" } else { "cited" },
            self.tp,
            self.tp_basis.as_str(),
            if self.pp > 1 {
                format!(", pp={}", self.pp)
            } else {
                String::new()
            }
        )
    }
}

/// A resolved model and GPU to price steps with.
#[derive(Debug, Clone)]
pub struct Pricing {
    pub model: ModelSpec,
    pub gpu: GpuSpec,
    pub opts: FloorOptions,
    pub batch: Option<u64>,
    pub context: Option<u64>,
    pub basis: FloorBasis,
}

impl Pricing {
    /// The pricing for a report's steps, or None without a model. The GPU is the operating
    /// point's (the plan's, else the one the report names or its properties fit); TP, PP, batch and context are the operating point's
    /// (flag over capture, [`crate::operating_point::resolve`]): batch and context fill what
    /// step names do not say.
    pub fn resolve(plan: &FloorPlan, point: &OperatingPoint) -> Result<Option<Pricing>> {
        let Some(model) = &plan.model else {
            return Ok(None);
        };
        // The GPU the operating point resolved (flag, the report's name, or inferred from
        // the device's properties): one resolution, priced here.
        let (gpu_key, gpu_from) = match (&plan.gpu, &point.gpu) {
            (Some(g), _) => (g.clone(), GpuFrom::Flag),
            (None, Some(g)) if gpu::lookup(&g.value).is_some() => (
                g.value.clone(),
                if g.basis == Basis::Inferred {
                    GpuFrom::Properties
                } else {
                    GpuFrom::Report
                },
            ),
            (None, Some(g)) => {
                return Err(Error::usage(format!(
                    "the report names the GPU {:?}, which is not in the GPU table: pass --gpu (and --hbm-tb-s)",
                    g.value
                )))
            }
            (None, None) => {
                return Err(Error::usage(
                    "the report does not name its GPU: pass --gpu (e.g. --gpu h100-sxm) to price steps against the floor",
                ))
            }
        };
        let model = model.resolve()?;
        let pp = point.pp.as_ref().map_or(1, |p| p.value);
        let gpu = GpuOptions {
            key: gpu_key,
            hbm_bytes_per_s: plan.hbm_bytes_per_s,
            peak_flops_per_s: None,
        }
        .resolve()?;
        let basis = FloorBasis {
            model: model.name.clone(),
            gpu: gpu.name.to_owned(),
            gpu_from,
            hbm_bytes_per_s: gpu.hbm_bytes_per_s,
            hbm_given: plan.hbm_bytes_per_s.is_some(),
            tp: point.tp.value,
            tp_basis: point.tp.basis,
            pp,
        };
        Ok(Some(Pricing {
            model,
            gpu,
            opts: FloorOptions {
                tp: point.tp.value,
                pp,
                moe_routing: plan.moe_routing,
                include_kv_write: true,
            },
            batch: point.batch.as_ref().map(|b| b.value),
            context: point.context.as_ref().map(|c| c.value),
            basis,
        }))
    }

    /// The step's composition for its floor: its name's; for a step inferred to be a
    /// prefill, the tokens its KV-cache writes count ([`prefill`]); else its own batch
    /// guess (from its shapes or grid; never made when `--batch` is given) or the operating
    /// point's batch, with the point's context, as a decode; a mixed step from its tokens and sequences ([`least_mixed`]) — never
    /// for one whose counted tokens are not that batch, which a decode would misprice.
    pub(crate) fn composition_of(&self, step: &Step) -> Option<StepComposition> {
        // A name that counts no requests (ProfilerStep#N) says nothing of the batch.
        let named = step.composition.as_ref().filter(|c| c.counts_requests());
        match (named, step.kind_label().kind) {
            // An inferred prefill is priced from the tokens its KV-cache writes count.
            (None, StepKind::Prefill) => {
                let t = step.tokens_guess?;
                return match step.batch_guess {
                    Some(r) => prefill(t, r),
                    None => self.least_prefill(t),
                };
            }
            // A mixed step from its tokens and sequences, split the way that costs least;
            // its decodes attend the point's context where one is known, else one key.
            (None, StepKind::Mixed) => {
                let (t, r) = (step.tokens_guess?, step.batch_guess?);
                let ctx = self.context.unwrap_or(1);
                return least_mixed(&self.model, &self.gpu, &self.opts, t, r, ctx);
            }
            // A step of no known kind whose KV-cache writes count other tokens than the
            // decode batch it would be priced at is not that decode.
            (None, StepKind::Unknown)
                if step
                    .tokens_guess
                    .is_some_and(|t| Some(t) != step.batch_guess.or(self.batch)) =>
            {
                return None
            }
            _ => {}
        }
        let batch = step.batch_guess.or(self.batch);
        let comp = composition(named, batch, self.context)?;
        (comp.sq > 0).then_some(comp)
    }

    /// A prefill of `tokens` whose prompts are not counted: the split into prompts with
    /// the least floor (one long prompt costs the most attention, one prompt per token the
    /// most logits; tried at every power of two between), so the floor stays a floor.
    fn least_prefill(&self, tokens: u64) -> Option<StepComposition> {
        let mut best: Option<(f64, StepComposition)> = None;
        let mut r = 1u64;
        loop {
            let c = prefill(tokens, r.min(tokens))?;
            let f = step_floor(&self.model, &self.gpu, &c, &self.opts).floor_ns;
            if best.as_ref().is_none_or(|(b, _)| f < *b) {
                best = Some((f, c));
            }
            if r >= tokens {
                break;
            }
            r = r.saturating_mul(2);
        }
        best.map(|(_, c)| c)
    }

    /// The attribution's view of this pricing: each step's composition, the model, GPU
    /// and options, handed to `one`.
    pub(crate) fn with_pricer<T>(
        &self,
        one: impl FnOnce(&crate::attribution::Pricer<'_>) -> T,
    ) -> T {
        let comp = |s: &Step| self.composition_of(s);
        one(&crate::attribution::Pricer {
            composition: &comp,
            model: &self.model,
            gpu: &self.gpu,
            opts: self.opts,
        })
    }
}

/// An inferred prefill of `tokens` new tokens in `prompts` prompts of equal length and no
/// cached prefix (the least attention those tokens can cost in that many prompts).
pub fn prefill(tokens: u64, prompts: u64) -> Option<StepComposition> {
    if tokens == 0 {
        return None;
    }
    let r = prompts.clamp(1, tokens);
    let per = tokens.checked_mul(tokens)? / r;
    Some(StepComposition {
        prefill_requests: r,
        sq: tokens,
        sk: tokens,
        sqsq: per,
        sqsk: per,
        ..StepComposition::default()
    })
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timing::stepname::parse;

    #[test]
    fn the_basis_reads_as_the_floor_note_always_has() {
        // The text the README's first transcript shows after `floor: `.
        let mut b = FloorBasis {
            model: "qwen3-8b".into(),
            gpu: "AMD Instinct MI300X 192GB".into(),
            gpu_from: GpuFrom::Flag,
            hbm_bytes_per_s: 5.3e12,
            hbm_given: false,
            tp: 1,
            tp_basis: Basis::Default,
            pp: 1,
        };
        assert_eq!(
            b.to_string(),
            "qwen3-8b on AMD Instinct MI300X 192GB (--gpu; 5.30 TB/s cited), tp=1 (default) — derived"
        );
        b.gpu_from = GpuFrom::Report;
        b.hbm_given = true;
        b.hbm_bytes_per_s = 3.1e12;
        b.tp = 2;
        b.tp_basis = Basis::Read;
        b.pp = 2;
        assert_eq!(
            b.to_string(),
            "qwen3-8b on AMD Instinct MI300X 192GB (named by the report; 3.10 TB/s given), tp=2 (read), pp=2 — derived"
        );
    }

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
