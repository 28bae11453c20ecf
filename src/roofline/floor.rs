//! The per-step roofline floor: compulsory HBM bytes and executed FLOPs of one engine step
//! for its own batch composition, and t = max(bytes/β, FLOPs/π).
//!
//! Bytes (docs/method.md §2.1, §3.1): streamed weights W, plus KV read
//! k·ΣN_KV, plus KV write k·ΣN_Q (the reference definition; the chapter's omits the write,
//! 0.02 % lower at B=32, s=2048). FLOPs (docs/method.md §2.2): 2·P per token (lm_head only for tokens
//! that need logits) plus attention 2·h·(w_qk + w_v) per query-key pair, with causal
//! pairs counted exactly: Σ N_Q·N_KV − Σ N_Q(N_Q−1)/2 (the ΣN_Q·N_KV − ΣN_Q²/2 is
//! its continuum form; the exact count keeps a decode token at N_KV pairs, as the chapter's
//! 4·L·h·d_h·s does). MLA decode pairs use the absorbed widths (576/512), prefill 192/128.

use super::vllm::{Batch, Breakdown, ModelComponents, Request};
use crate::wire::attribution::Bound;
use crate::wire::floor::{FloorReport, MlaComparison};
use crate::wire::roofline::{
    FloorOptions, GpuSpec, ModelSpec, MoeRouting, StepComposition, StepFloor, WeightDtype,
};

impl StepComposition {
    /// `batch` decode requests, each attending `context` keys (new token included).
    pub fn decode(batch: u64, context: u64) -> Self {
        StepComposition {
            decode_requests: batch,
            sq: batch,
            sk: batch * context,
            sqsq: batch,
            sqsk: batch * context,
            decode_sq: batch,
            decode_sk: batch * context,
            decode_sqsq: batch,
            decode_sqsk: batch * context,
            ..Default::default()
        }
    }

    /// From per-request (N_Q, N_KV, is_prefill); `window` clamps sliding-window layers.
    pub(crate) fn from_requests(reqs: &[Request], window: Option<u64>) -> Self {
        let mut c = StepComposition::default();
        let (mut skw, mut sqskw) = (0, 0);
        for r in reqs {
            let (q, k) = (r.num_tokens, r.context_len);
            c.sq += q;
            c.sk += k;
            c.sqsq += q * q;
            c.sqsk += q * k;
            if r.is_prefill {
                c.prefill_requests += 1;
            } else {
                c.decode_requests += 1;
                c.decode_sq += q;
                c.decode_sk += k;
                c.decode_sqsq += q * q;
                c.decode_sqsk += q * k;
            }
            if let Some(w) = window {
                skw += k.min(w);
                sqskw += q * k.min(w);
            }
        }
        if window.is_some() {
            c.sk_window = Some(skw);
            c.sqsk_window = Some(sqskw);
        }
        c
    }

    fn requests(&self) -> u64 {
        self.decode_requests + self.prefill_requests
    }

    /// Causal query-key pairs (decode, prefill), counted exactly.
    fn pairs(&self) -> (f64, f64) {
        let dec = self.decode_sqsk as f64 - (self.decode_sqsq as f64 - self.decode_sq as f64) / 2.0;
        let pre_sqsk = (self.sqsk - self.decode_sqsk) as f64;
        let pre_sqsq = (self.sqsq - self.decode_sqsq) as f64;
        let pre_sq = (self.sq - self.decode_sq) as f64;
        (dec, pre_sqsk - (pre_sqsq - pre_sq) / 2.0)
    }

    /// Tokens that need logits: every decode token, the last token of each prefill.
    fn logits_tokens(&self) -> u64 {
        self.decode_sq + self.prefill_requests
    }
}

impl Default for FloorOptions {
    fn default() -> Self {
        FloorOptions {
            tp: 1,
            pp: 1,
            moe_routing: MoeRouting::Uniform,
            include_kv_write: true,
        }
    }
}

/// The floor of one step of `comp` for `model` on `gpu`, per GPU.
pub fn step_floor(
    model: &ModelSpec,
    gpu: &GpuSpec,
    comp: &StepComposition,
    opts: &FloorOptions,
) -> StepFloor {
    let (tp, pp) = (opts.tp.max(1), opts.pp.max(1));
    let tpf = f64::from(tp);
    let ppf = f64::from(pp);
    let sq = comp.sq as f64;

    let split = model.streamed_weight_split(sq, opts.moe_routing, tp, pp);
    let weights = split.total();
    let swa = model.swa_layers.min(model.layers);
    let full_layers = (model.layers - swa) as f64 / ppf;
    let swa_layers = swa as f64 / ppf;
    let cell_full = model.kv_cell_bytes_for_layers(full_layers, tp);
    let cell_swa = model.kv_cell_bytes_for_layers(swa_layers, tp);
    let window = model.sliding_window.unwrap_or(u64::MAX);
    let sk_w =
        comp.sk_window
            .unwrap_or_else(|| comp.sk.min(comp.requests().saturating_mul(window))) as f64;
    let sqsk_w = comp
        .sqsk_window
        .unwrap_or_else(|| comp.sqsk.min(comp.sq.saturating_mul(window))) as f64;
    let kv_read = cell_full * comp.sk as f64 + cell_swa * sk_w;
    let kv_write = if opts.include_kv_write {
        (cell_full + cell_swa) * sq
    } else {
        0.0
    };
    let total = weights + kv_read + kv_write;

    // Dense FLOPs: 2 per streamed parameter per token; lm_head only for logits tokens.
    let lm_head = model.params().lm_head as f64;
    let p = model.params_streamed();
    let dense =
        2.0 * (p - lm_head) * sq / (tpf * ppf) + 2.0 * lm_head * comp.logits_tokens() as f64 / tpf;

    let heads = model.heads as f64 / tpf;
    let (dec_pairs, pre_pairs) = comp.pairs();
    let (attention, vllm_attention) = match &model.mla {
        Some(m) => {
            let lps = model.layers as f64 / ppf;
            let (aq, av) = m.absorbed_widths();
            let (uq, uv) = m.unabsorbed_widths();
            let (absorbed, unabsorbed) = ((aq + av) as f64, (uq + uv) as f64);
            let ours = 2.0 * heads * lps * (dec_pairs * absorbed + pre_pairs * unabsorbed);
            let theirs = 2.0 * heads * lps * unabsorbed * comp.sqsk as f64;
            (ours, theirs)
        }
        None => {
            let per_pair = 4.0 * heads * model.head_dim as f64;
            let pairs = dec_pairs + pre_pairs;
            let pairs_w = pairs.min(sqsk_w);
            let ours = per_pair * (pairs * full_layers + pairs_w * swa_layers);
            let theirs = per_pair * (comp.sqsk as f64 * full_layers + sqsk_w * swa_layers);
            (ours, theirs)
        }
    };
    let flops = dense + attention;
    let act_bytes = if model.weight_dtype == WeightDtype::Fp32 {
        4.0
    } else {
        2.0
    };
    let allreduce_bytes = 2.0
        * (model.layers as f64 / ppf)
        * sq
        * model.hidden as f64
        * act_bytes
        * 2.0
        * (tpf - 1.0)
        / tpf;

    let beta = gpu.hbm_bytes_per_s;
    let pi = gpu.peak_flops_per_s(model.weight_dtype.is_fp8());
    let memory_floor_ns = total / beta * 1e9;
    let compute_floor_ns = flops / pi * 1e9;
    let (floor_ns, bound) = if compute_floor_ns > memory_floor_ns {
        (compute_floor_ns, Bound::Compute)
    } else {
        (memory_floor_ns, Bound::Memory)
    };
    StepFloor {
        weights_bytes: weights,
        weights: split,
        kv_read_bytes: kv_read,
        kv_write_bytes: kv_write,
        total_bytes: total,
        flops,
        dense_flops: dense,
        attention_flops: attention,
        allreduce_bytes,
        vllm_attention_flops: vllm_attention,
        hbm_bytes_per_s: beta,
        peak_flops_per_s: pi,
        memory_floor_ns,
        compute_floor_ns,
        floor_ns,
        bound,
        experts_touched: model
            .moe
            .as_ref()
            .map(|m| opts.moe_routing.experts_touched(m, sq)),
    }
}

/// One input changed, to see whether a floor the measurement undercuts becomes plausible
/// under it (docs/method.md §4: an MBU above 100% names the inputs that would fix it).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum FloorChange {
    Tp(u32),
    /// Bytes per KV-cache element.
    KvDtypeBytes(f64),
    WeightDtype(WeightDtype),
}

impl FloorChange {
    /// The model and options with this input changed.
    pub fn apply(&self, model: &ModelSpec, opts: &FloorOptions) -> (ModelSpec, FloorOptions) {
        let (mut m, mut o) = (model.clone(), *opts);
        match *self {
            FloorChange::Tp(t) => o.tp = t,
            FloorChange::KvDtypeBytes(b) => m.kv_dtype_bytes = b,
            FloorChange::WeightDtype(w) => m.weight_dtype = w,
        }
        (m, o)
    }

    /// The flag that sets it.
    pub fn flag(&self) -> String {
        match *self {
            FloorChange::Tp(t) => format!("--tp {t}"),
            FloorChange::KvDtypeBytes(_) => "--kv-dtype fp8".to_owned(),
            FloorChange::WeightDtype(WeightDtype::Int4 { group: 128 }) => {
                "--weight-dtype int4".to_owned()
            }
            FloorChange::WeightDtype(_) => "--weight-dtype fp8".to_owned(),
        }
    }
}

/// The changes worth pricing when a step ran below its floor: a larger TP that divides
/// the query heads (and the KV heads, or is a multiple of them), an fp8 KV cache, fp8 or
/// int4 weights — each only where it lowers what is in effect.
pub(crate) fn plausibility_changes(model: &ModelSpec, opts: &FloorOptions) -> Vec<FloorChange> {
    let mut out: Vec<FloorChange> = [2u32, 4, 8]
        .into_iter()
        .filter(|&t| t > opts.tp.max(1))
        .filter(|&t| {
            let (h, kv) = (model.heads, model.kv_heads.max(1));
            h % u64::from(t) == 0 && (kv % u64::from(t) == 0 || u64::from(t) % kv == 0)
        })
        .map(FloorChange::Tp)
        .collect();
    if model.kv_dtype_bytes > 1.0 {
        out.push(FloorChange::KvDtypeBytes(1.0));
    }
    let wb = model.weight_dtype.bytes_per_param();
    for w in [WeightDtype::Fp8, WeightDtype::Int4 { group: 128 }] {
        if w.bytes_per_param() < wb {
            out.push(FloorChange::WeightDtype(w));
        }
    }
    out
}

/// FlashAttention-2's decode grid at query length 1: batch × heads thread blocks
/// (docs/method.md §4: 1,024 at B=32, h=32; 128 at B=4, under-filling an H100's 132 SMs).
pub fn decode_grid_blocks(batch: u64, heads: u64) -> u64 {
    batch * heads
}

/// Whether a decode grid of `blocks` thread blocks leaves some of `sms` SMs without one
/// (one wave, under-filled: the attention kernel cannot reach the roof).
pub fn grid_underfills(blocks: u64, sms: u32) -> bool {
    blocks < u64::from(sms)
}

/// Launch budget: launches × per-launch cost (docs/method.md §8.2: 330 × 2.374 µs = 0.783 ms).
pub fn launch_budget_ns(launches: u64, per_launch_ns: f64) -> f64 {
    launches as f64 * per_launch_ns
}

/// Inputs of [`decode_floor`] besides the model and GPU.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DecodePoint {
    pub batch: u64,
    pub context: u64,
    pub launches: u64,
    pub launch_cost_ns: f64,
    pub launch_cost_measured: bool,
    pub hbm_overridden: bool,
    pub peak_overridden: bool,
}

/// The full `floor` report for `batch` decode requests at `context` keys each.
pub fn decode_floor(
    model: &ModelSpec,
    gpu: &GpuSpec,
    point: &DecodePoint,
    opts: &FloorOptions,
) -> FloorReport {
    let comp = StepComposition::decode(point.batch, point.context);
    let s = step_floor(model, gpu, &comp, opts);
    let chapter = step_floor(
        model,
        gpu,
        &comp,
        &FloorOptions {
            include_kv_write: false,
            ..*opts
        },
    );
    let intensity = s.flops / s.total_bytes;
    let attainable = (s.hbm_bytes_per_s * intensity).min(s.peak_flops_per_s);
    let launch_budget_ns = launch_budget_ns(point.launches, point.launch_cost_ns);
    let grid = decode_grid_blocks(
        point.batch,
        (model.heads / u64::from(opts.tp.max(1))).max(1),
    );
    let mla = model.mla.as_ref().map(|_| {
        let comps = ModelComponents::from_model(model, opts.tp, opts.pp, 2.0);
        let batch = Batch::new(&vec![
            Request {
                num_tokens: 1,
                context_len: point.context,
                is_prefill: false,
            };
            point.batch as usize
        ]);
        let sum = |absorbed: bool| -> f64 {
            comps
                .breakdowns(&batch, true, absorbed)
                .iter()
                .map(|(_, b)| Breakdown::total(&b.flops) as f64)
                .sum()
        };
        let (reported, corrected) = (sum(false), sum(true));
        MlaComparison {
            attention_ratio: s.attention_flops / s.vllm_attention_flops,
            attention_flops: s.attention_flops,
            vllm_attention_flops: s.vllm_attention_flops,
            vllm_reported_flops: reported,
            corrected_flops: corrected,
            ratio: corrected / reported,
        }
    });
    FloorReport {
        model: model.name.clone(),
        gpu: gpu.key.to_owned(),
        gpu_name: gpu.name.to_owned(),
        gpu_source: gpu.source.to_owned(),
        hbm_basis: if point.hbm_overridden {
            "input"
        } else {
            "cited"
        },
        peak_basis: if point.peak_overridden {
            "input"
        } else {
            "cited"
        },
        batch: point.batch,
        context: point.context,
        tp: opts.tp,
        pp: opts.pp,
        kv_cell_bytes: model.kv_cell_bytes(opts.tp, opts.pp),
        weights_bytes: s.weights_bytes,
        kv_read_bytes: s.kv_read_bytes,
        kv_write_bytes: s.kv_write_bytes,
        total_bytes: s.total_bytes,
        weights_share: s.weights_bytes / s.total_bytes,
        kv_read_share: s.kv_read_bytes / s.total_bytes,
        kv_write_share: s.kv_write_bytes / s.total_bytes,
        hbm_bytes_per_s: s.hbm_bytes_per_s,
        peak_flops_per_s: s.peak_flops_per_s,
        memory_floor_ns: s.memory_floor_ns,
        compute_floor_ns: s.compute_floor_ns,
        floor_ns: s.floor_ns,
        chapter_floor_ns: chapter.floor_ns,
        floor_definition:
            "reference (docs/method.md §3.1): weights + KV read + KV write of the new token",
        decode_tokens_per_s: point.batch as f64 / (s.floor_ns / 1e9),
        flops: s.flops,
        attention_flops: s.attention_flops,
        attention_flops_share: if s.flops > 0.0 {
            s.attention_flops / s.flops
        } else {
            0.0
        },
        intensity_flop_per_byte: intensity,
        ridge_flop_per_byte: s.peak_flops_per_s / s.hbm_bytes_per_s,
        attainable_flops_per_s: attainable,
        best_mfu: s.flops / (s.floor_ns / 1e9) / s.peak_flops_per_s,
        bound: s.bound,
        moe_routing: model.moe.as_ref().map(|_| opts.moe_routing),
        experts_touched: s.experts_touched,
        launches: point.launches,
        launch_cost_ns: point.launch_cost_ns,
        launch_cost_basis: if point.launch_cost_measured {
            "input"
        } else {
            "cited"
        },
        launch_budget_ns,
        launch_share_of_floor: launch_budget_ns / s.floor_ns,
        decode_grid_blocks: grid,
        sm_count: gpu.sm_count,
        grid_underfills_sms: grid_underfills(grid, gpu.sm_count),
        mla,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::roofline::{gpu, presets};

    #[test]
    fn chapter_point_by_hand() {
        // Llama-3-8B, B=32, s=2048, H100 SXM: W = 15,009,849,344 B (exact params × 2),
        // KV read 131,072·32·2048 = 8 GiB, write 131,072·32.
        let m = presets::preset("llama-3-8b").unwrap();
        let g = gpu::lookup("h100-sxm").unwrap();
        let s = step_floor(
            &m,
            &g,
            &StepComposition::decode(32, 2048),
            &FloorOptions::default(),
        );
        assert_eq!(s.weights_bytes, 15_009_849_344.0);
        assert_eq!(s.kv_read_bytes, 8_589_934_592.0);
        assert_eq!(s.kv_write_bytes, 4_194_304.0);
        // F = 32·(2·7,504,924,672 + 4·32·32·128·2048).
        assert_eq!(s.flops, 32.0 * (2.0 * 7_504_924_672.0 + 1_073_741_824.0));
        assert_eq!(s.bound, Bound::Memory);
    }

    #[test]
    fn prefill_is_compute_bound() {
        let m = presets::preset("llama-3-8b").unwrap();
        let g = gpu::lookup("h100-sxm").unwrap();
        let comp = StepComposition::from_requests(
            &[Request {
                num_tokens: 8192,
                context_len: 8192,
                is_prefill: true,
            }],
            None,
        );
        let s = step_floor(&m, &g, &comp, &FloorOptions::default());
        assert_eq!(s.bound, Bound::Compute);
        // Causal pairs of an 8192-token prompt: 8192·8193/2.
        let pairs = 8192.0 * 8193.0 / 2.0;
        assert_eq!(s.attention_flops, 4.0 * 32.0 * 128.0 * 32.0 * pairs);
    }
}
