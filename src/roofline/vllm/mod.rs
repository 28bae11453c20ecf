//! A re-derivation of vLLM's analytic per-component perf model (`vllm/v1/metrics/perf.py`:
//! attention, MLA attention, FFN/MoE, unembed) so stepgate's numbers can be checked
//! against the figures vLLM logs, term by term.
//!
//! Its conventions are copied deliberately, including the odd ones (golden README,
//! "vLLM conventions"): standard attention divides layer counts by pp as floats and
//! truncates the product; MLA and FFN use integer division; heads are max(1, h // tp);
//! prefill attention bills the full T·C product (no causal halving); MoE weight reads use
//! min(activated tokens, experts). The one deliberate difference: with `absorbed_decode`
//! the MLA decode attention core is billed at the absorbed widths 576/512 (what the
//! kernel executes) instead of 192/128.

use serde::Deserialize;

mod mla_ffn;

/// One request of a batch: (new tokens, context length including them, prefill?).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub struct Request {
    pub num_tokens: u64,
    pub context_len: u64,
    pub is_prefill: bool,
}

/// Batch aggregates, as vLLM's `ExecutionContext` keeps them.
#[derive(Debug, Clone, Default)]
pub struct Batch {
    pub requests: Vec<Request>,
    pub num_prefill_requests: u64,
    pub prefill_num_tokens: u64,
    pub prefill_context_len: u64,
    pub prefill_tc: u64,
    pub decode_num_tokens: u64,
    pub decode_context_len: u64,
    pub decode_tc: u64,
}

impl Batch {
    pub fn new(requests: &[Request]) -> Self {
        let mut b = Batch {
            requests: requests.to_vec(),
            ..Default::default()
        };
        for r in requests {
            if r.is_prefill {
                b.num_prefill_requests += 1;
                b.prefill_num_tokens += r.num_tokens;
                b.prefill_context_len += r.context_len;
                b.prefill_tc += r.num_tokens * r.context_len;
            } else {
                b.decode_num_tokens += r.num_tokens;
                b.decode_context_len += r.context_len;
                b.decode_tc += r.num_tokens * r.context_len;
            }
        }
        b
    }

    fn tokens(&self) -> u64 {
        self.prefill_num_tokens + self.decode_num_tokens
    }

    /// Σ tokens × min(context, window).
    fn tc(&self, window: Option<u64>) -> u64 {
        match window {
            None => self.prefill_tc + self.decode_tc,
            Some(w) => self
                .requests
                .iter()
                .map(|r| r.num_tokens * r.context_len.min(w))
                .sum(),
        }
    }

    fn ctx_for_window(&self, window: Option<u64>, prefill: bool) -> u64 {
        self.requests
            .iter()
            .filter(|r| r.is_prefill == prefill)
            .map(|r| window.map_or(r.context_len, |w| r.context_len.min(w)))
            .sum()
    }

    /// Tokens needing logits: the last token of each prefill plus every decode token.
    fn logits_tokens(&self) -> u64 {
        self.num_prefill_requests + self.decode_num_tokens
    }
}

/// Named terms of one breakdown, in vLLM's key order.
pub(crate) type Terms = Vec<(&'static str, i64)>;

/// FLOPs, read bytes and write bytes of one component.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Breakdown {
    pub flops: Terms,
    pub read: Terms,
    pub write: Terms,
}

impl Breakdown {
    /// The terms of `kind` (`flops`, `read`, `write`).
    pub fn kind(&self, kind: &str) -> Option<&Terms> {
        match kind {
            "flops" => Some(&self.flops),
            "read" => Some(&self.read),
            "write" => Some(&self.write),
            _ => None,
        }
    }

    pub fn total(terms: &Terms) -> i64 {
        terms.iter().map(|(_, v)| v).sum()
    }
}

/// Standard (GQA/MHA, optionally sliding-window) attention: golden keys
/// {D, q, kv, d, L, L_swa, sw, act, w, cache, tp, pp}.
#[derive(Debug, Clone, Deserialize)]
pub struct AttnCfg {
    #[serde(rename = "D")]
    pub hidden: u64,
    pub q: u64,
    pub kv: u64,
    pub d: u64,
    #[serde(rename = "L")]
    pub layers: u64,
    #[serde(rename = "L_swa", default)]
    pub swa_layers: u64,
    #[serde(default)]
    pub sw: Option<u64>,
    pub act: f64,
    pub w: f64,
    pub cache: f64,
    pub tp: u64,
    pub pp: u64,
}

/// MLA attention: golden keys {L, D, q, c, nope, rope, v, q_lora, act, w, cache, tp, pp}.
#[derive(Debug, Clone, Deserialize)]
pub struct MlaCfg {
    #[serde(rename = "L")]
    pub layers: u64,
    #[serde(rename = "D")]
    pub hidden: u64,
    pub q: u64,
    pub c: u64,
    pub nope: u64,
    pub rope: u64,
    pub v: u64,
    pub q_lora: Option<u64>,
    pub act: f64,
    pub w: f64,
    pub cache: f64,
    pub tp: u64,
    pub pp: u64,
}

/// FFN (dense, MoE, shared experts): golden keys
/// {D, DI, L, Lm, E=top-k, MI, S=shared, num_experts, act, w, pp, ffn_tp, ffn_ep}.
#[derive(Debug, Clone, Deserialize)]
pub struct FfnCfg {
    #[serde(rename = "D")]
    pub hidden: u64,
    #[serde(rename = "DI")]
    pub intermediate: u64,
    #[serde(rename = "L")]
    pub layers: u64,
    #[serde(rename = "Lm")]
    pub moe_layers: u64,
    #[serde(rename = "E")]
    pub top_k: u64,
    #[serde(rename = "MI")]
    pub moe_intermediate: u64,
    #[serde(rename = "S")]
    pub shared: u64,
    pub num_experts: u64,
    pub act: f64,
    pub w: f64,
    pub pp: u64,
    pub ffn_tp: u64,
    pub ffn_ep: u64,
}

/// Unembedding (lm_head): golden keys {D, V, act, w, tp}.
#[derive(Debug, Clone, Deserialize)]
pub struct UnembedCfg {
    #[serde(rename = "D")]
    pub hidden: u64,
    #[serde(rename = "V")]
    pub vocab: u64,
    pub act: f64,
    pub w: f64,
    pub tp: u64,
}

/// Python's `int(float)`: truncation toward zero.
fn trunc(x: f64) -> i64 {
    x.trunc() as i64
}

/// Integer product as f64 (the point where Python switches to float arithmetic).
fn f(x: u64) -> f64 {
    x as f64
}

impl AttnCfg {
    fn heads(&self, per_gpu: bool) -> (u64, u64) {
        if per_gpu {
            ((self.q / self.tp).max(1), (self.kv / self.tp).max(1))
        } else {
            (self.q, self.kv)
        }
    }

    /// (L, L_full, L_swa) as floats, each divided by pp per GPU.
    fn layer_counts(&self, per_gpu: bool) -> (f64, f64, f64) {
        let l = self.layers as f64;
        let swa = self.swa_layers as f64;
        let full = l - swa;
        let pp = if per_gpu { self.pp as f64 } else { 1.0 };
        (l / pp, full / pp, swa / pp)
    }

    pub fn breakdown(&self, b: &Batch, per_gpu: bool) -> Breakdown {
        let (d_model, d) = (self.hidden, self.d);
        let (q, kv) = self.heads(per_gpu);
        let t = b.tokens();
        let (l, l_full, l_swa) = self.layer_counts(per_gpu);
        let mut flops = vec![
            ("qkv_proj", trunc(f(2 * t * d_model * (q + 2 * kv) * d) * l)),
            ("out_proj", trunc(f(2 * t * d_model * q * d) * l)),
        ];
        let (mut qk, mut av) = (0.0, 0.0);
        if l_full > 0.0 {
            let tc = b.tc(None);
            qk += f(2 * q * tc * d) * l_full;
            av += f(2 * q * tc * d) * l_full;
        }
        if l_swa > 0.0 && self.sw.is_some() {
            let tc = b.tc(self.sw);
            qk += f(2 * q * tc * d) * l_swa;
            av += f(2 * q * tc * d) * l_swa;
        }
        flops.push(("attn_qk", trunc(qk)));
        flops.push(("attn_av", trunc(av)));

        let (act, w, cache) = (self.act, self.w, self.cache);
        let mut read = vec![
            ("qkv_input", trunc(f(t * d_model) * act * l)),
            ("qkv_weight", trunc(f(d_model * (q + 2 * kv) * d) * w * l)),
        ];
        let mut attn_input = 0.0;
        let mut add_layers = |lay: f64, window: Option<u64>| {
            let pre_ctx = b.ctx_for_window(window, true);
            let dec_ctx = b.ctx_for_window(window, false);
            if b.prefill_num_tokens > 0 {
                attn_input += f((b.prefill_num_tokens * q + 2 * pre_ctx * kv) * d) * act * lay;
            }
            if b.decode_num_tokens > 0 {
                attn_input += f(b.decode_num_tokens * q * d) * act * lay
                    + f(2 * dec_ctx * kv * d) * cache * lay;
            }
        };
        if l_full > 0.0 {
            add_layers(l_full, None);
        }
        if l_swa > 0.0 {
            add_layers(l_swa, self.sw);
        }
        if t > 0 {
            read.push(("attn_input", trunc(attn_input)));
        }
        read.push(("out_input", trunc(f(t * q * d) * act * l)));
        read.push(("out_weight", trunc(f(q * d * d_model) * w * l)));

        let write = vec![
            ("qkv_output", trunc(f(t * (q + 2 * kv) * d) * act * l)),
            ("kv_cache", trunc(f(2 * t * kv * d) * cache * l)),
            ("out_output", trunc(f(t * d_model) * act * l)),
        ];
        Breakdown { flops, read, write }
    }
}

impl UnembedCfg {
    pub fn breakdown(&self, b: &Batch, per_gpu: bool) -> Breakdown {
        let d = self.hidden;
        let t = b.logits_tokens();
        let v = if per_gpu {
            self.vocab / self.tp
        } else {
            self.vocab
        };
        Breakdown {
            flops: vec![("unembed", (2 * t * d * v) as i64)],
            read: vec![
                ("input", trunc(f(t * d) * self.act)),
                ("weight", trunc(f(d * v) * self.w)),
            ],
            write: vec![("output", trunc(f(t * v) * self.act))],
        }
    }
}

/// A whole model as vLLM sees it: the components it instantiates.
#[derive(Debug, Clone, Default)]
pub struct ModelComponents {
    pub attn: Option<AttnCfg>,
    pub mla_attn: Option<MlaCfg>,
    pub ffn: Option<FfnCfg>,
    pub unembed: Option<UnembedCfg>,
}

impl ModelComponents {
    /// Component types present, in vLLM's registry order.
    pub fn component_types(&self) -> Vec<&'static str> {
        let mut v = Vec::new();
        if self.attn.is_some() {
            v.push("attn");
        }
        if self.mla_attn.is_some() {
            v.push("mla_attn");
        }
        if self.ffn.is_some() {
            v.push("ffn");
        }
        if self.unembed.is_some() {
            v.push("unembed");
        }
        v
    }

    /// Every component's breakdown, keyed by component type.
    pub fn breakdowns(
        &self,
        b: &Batch,
        per_gpu: bool,
        absorbed_decode: bool,
    ) -> Vec<(&'static str, Breakdown)> {
        let mut out = Vec::new();
        if let Some(a) = &self.attn {
            out.push(("attn", a.breakdown(b, per_gpu)));
        }
        if let Some(m) = &self.mla_attn {
            out.push(("mla_attn", m.breakdown(b, per_gpu, absorbed_decode)));
        }
        if let Some(f) = &self.ffn {
            out.push(("ffn", f.breakdown(b, per_gpu)));
        }
        if let Some(u) = &self.unembed {
            out.push(("unembed", u.breakdown(b, per_gpu)));
        }
        out
    }

    /// Resolved components of a [`crate::wire::roofline::ModelSpec`] the way vLLM's parsers would
    /// build them at `tp`/`pp` (EP off, dp 1). `moe_layers_vllm` overrides the MoE layer
    /// count (vLLM bills every layer as MoE for a DeepSeek-V3 config without
    /// `moe_layer_freq`).
    pub fn from_model(
        m: &crate::wire::roofline::ModelSpec,
        tp: u32,
        pp: u32,
        act_bytes: f64,
    ) -> Self {
        let w = m.weight_dtype.bytes_per_param();
        let (tp, pp) = (u64::from(tp.max(1)), u64::from(pp.max(1)));
        let attn = m.mla.is_none().then_some(AttnCfg {
            hidden: m.hidden,
            q: m.heads,
            kv: m.kv_heads,
            d: m.head_dim,
            layers: m.layers,
            swa_layers: m.swa_layers,
            sw: m.sliding_window,
            act: act_bytes,
            w,
            cache: m.kv_dtype_bytes,
            tp,
            pp,
        });
        let mla_attn = m.mla.as_ref().map(|x| MlaCfg {
            layers: m.layers,
            hidden: m.hidden,
            q: m.heads,
            c: x.kv_lora_rank,
            nope: x.qk_nope_head_dim,
            rope: x.qk_rope_head_dim,
            v: x.v_head_dim,
            q_lora: x.q_lora_rank,
            act: act_bytes,
            w,
            cache: m.kv_dtype_bytes,
            tp,
            pp,
        });
        let (lm, e, mi, s, ne) = match &m.moe {
            Some(x) => (
                x.moe_layers,
                x.top_k,
                x.moe_intermediate,
                x.shared_intermediate / x.moe_intermediate.max(1),
                x.num_experts,
            ),
            None => (0, 0, 0, 0, 0),
        };
        let ffn = Some(FfnCfg {
            hidden: m.hidden,
            intermediate: m.intermediate,
            layers: m.layers,
            moe_layers: lm,
            top_k: e,
            moe_intermediate: mi,
            shared: s,
            num_experts: ne,
            act: act_bytes,
            w,
            pp,
            ffn_tp: tp,
            ffn_ep: 1,
        });
        let unembed = Some(UnembedCfg {
            hidden: m.hidden,
            vocab: m.vocab,
            act: act_bytes,
            w: act_bytes,
            tp,
        });
        ModelComponents {
            attn,
            mla_attn,
            ffn,
            unembed,
        }
    }
}
