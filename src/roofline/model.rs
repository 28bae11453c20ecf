//! What a model's geometry implies (`ModelSpec`, defined in `wire::roofline`): exact
//! parameter counts, per-GPU streamed weight bytes and KV cell size, the bytes per weight
//! of each storage format, and the bounds a geometry must stay within. The built-in
//! presets are in [`super::presets`].
//!
//! Conventions (docs/method.md §2.1, golden README "Units and definitions"): the input
//! embedding is gathered one row per token, not streamed; lm_head is streamed (with tied
//! embeddings the one shared matrix is streamed as lm_head); norms are streamed.

use crate::exit::{Error, Result};
use crate::wire::roofline::{
    MlaSpec, ModelSpec, MoeRouting, MoeSpec, ParamCounts, WeightDtype, WeightSplit,
};

/// Bounds on a model's geometry: about ten times the largest open models (DeepSeek-V3,
/// Kimi K2, Llama 4), and small enough that the exact `u64` parameter counts in
/// [`ModelSpec::params`] cannot overflow (largest product 3·d·mi·E·L < 2^62).
pub(crate) const MAX_HIDDEN: u64 = 1 << 17;
pub(crate) const MAX_INTERMEDIATE: u64 = 1 << 19;
pub(crate) const MAX_LAYERS: u64 = 1 << 12;
pub(crate) const MAX_HEADS: u64 = 1 << 12;
pub(crate) const MAX_HEAD_DIM: u64 = 1 << 12;
pub(crate) const MAX_VOCAB: u64 = 1 << 22;
pub(crate) const MAX_EXPERTS: u64 = 1 << 11;
pub(crate) const MAX_LORA_RANK: u64 = 1 << 14;
/// Smallest int4 scale group: below 8 the fp16 scales outweigh the 4-bit weights and the
/// format stores more than int8 (group 0 or 1: more than bf16).
pub(crate) const MIN_INT4_GROUP: u32 = 8;

impl WeightDtype {
    /// Bytes per weight including the scales the format stores.
    pub fn bytes_per_param(self) -> f64 {
        match self {
            WeightDtype::Bf16 | WeightDtype::Fp16 => 2.0,
            WeightDtype::Fp32 => 4.0,
            WeightDtype::Fp8 | WeightDtype::Int8 => 1.0,
            WeightDtype::Int4 { group } => 0.5 + 2.0 / f64::from(group.max(1)),
            WeightDtype::Mxfp4 => 0.5 + 1.0 / 32.0,
        }
    }

    /// Parse `bf16|fp16|fp32|fp8|int8|int4|int4-g64|mxfp4`.
    pub fn parse(s: &str) -> Result<Self> {
        let s = s.trim().to_ascii_lowercase();
        Ok(match s.as_str() {
            "bf16" | "bfloat16" => WeightDtype::Bf16,
            "fp16" | "float16" | "half" => WeightDtype::Fp16,
            "fp32" | "float32" => WeightDtype::Fp32,
            "fp8" | "fp8-e4m3" => WeightDtype::Fp8,
            "int8" => WeightDtype::Int8,
            "int4" => WeightDtype::Int4 { group: 128 },
            "mxfp4" => WeightDtype::Mxfp4,
            other => {
                if let Some(g) = other.strip_prefix("int4-g") {
                    let group = g.parse().map_err(|_| {
                        Error::input(format!("weight dtype `{other}`: group must be a number"))
                    })?;
                    WeightDtype::int4(group).map_err(|e| {
                        Error::input(format!("weight dtype `{other}`: {}", e.message))
                    })?
                } else {
                    return Err(Error::input(format!(
                        "unknown weight dtype `{other}`; use bf16, fp16, fp32, fp8, int8, int4, int4-gN or mxfp4"
                    )));
                }
            }
        })
    }

    /// int4 with one fp16 scale per `group` weights; a group below [`MIN_INT4_GROUP`] is
    /// refused (its scales would make "4-bit" weights heavier than int8 or bf16).
    pub fn int4(group: u32) -> Result<Self> {
        if group < MIN_INT4_GROUP {
            return Err(Error::input(format!(
                "the int4 scale group size must be at least {MIN_INT4_GROUP} (GPTQ/AWQ use 32, 64 or 128), got {group}"
            )));
        }
        Ok(WeightDtype::Int4 { group })
    }

    /// Whether compute can use the fp8 tensor path.
    pub(crate) fn is_fp8(self) -> bool {
        matches!(self, WeightDtype::Fp8)
    }
}

impl MlaSpec {
    /// (QK width, V width) of the un-absorbed path vLLM bills and prefill runs:
    /// (nope + rope, v) = (192, 128) for DeepSeek-V3.
    pub fn unabsorbed_widths(&self) -> (u64, u64) {
        (
            self.qk_nope_head_dim + self.qk_rope_head_dim,
            self.v_head_dim,
        )
    }

    /// (QK width, V width) of the absorbed decode kernel: the latent row and its value
    /// slice, (kv_lora_rank + rope, kv_lora_rank) = (576, 512) for DeepSeek-V3.
    pub fn absorbed_widths(&self) -> (u64, u64) {
        (self.kv_lora_rank + self.qk_rope_head_dim, self.kv_lora_rank)
    }
}

impl WeightSplit {
    /// Every streamed weight byte.
    pub fn total(&self) -> f64 {
        self.linear + self.experts + self.lm_head + self.small
    }

    /// The bytes GEMM kernels read: linear layers, experts and lm_head.
    pub fn gemm(&self) -> f64 {
        self.linear + self.experts + self.lm_head
    }
}

impl MoeRouting {
    /// Distinct experts touched per MoE layer by `tokens` tokens.
    pub(crate) fn experts_touched(self, moe: &MoeSpec, tokens: f64) -> f64 {
        let e = moe.num_experts as f64;
        let k = moe.top_k as f64;
        if tokens <= 0.0 {
            return 0.0;
        }
        match self {
            MoeRouting::Uniform => e * (1.0 - (1.0 - k / e).powf(tokens)),
            MoeRouting::Spread => (tokens * k).min(e),
            MoeRouting::Packed => k.min(e),
        }
    }
}

impl ModelSpec {
    /// Linear params of one attention block.
    fn attn_linear_per_layer(&self) -> u64 {
        let (d, h, kv, dh) = (self.hidden, self.heads, self.kv_heads, self.head_dim);
        match &self.mla {
            Some(m) => {
                let qk = m.qk_nope_head_dim + m.qk_rope_head_dim;
                let q = match m.q_lora_rank {
                    Some(r) => d * r + r * h * qk,
                    None => d * h * qk,
                };
                q + d * (m.kv_lora_rank + m.qk_rope_head_dim)
                    + m.kv_lora_rank * h * (m.qk_nope_head_dim + m.v_head_dim)
                    + h * m.v_head_dim * d
            }
            None => d * h * dh + 2 * d * kv * dh + h * dh * d,
        }
    }

    /// Small 2-byte params of one attention block: biases and the norms inside attention.
    fn attn_small_per_layer(&self) -> u64 {
        let mut n = 0;
        if self.attention_bias {
            n += (self.heads + 2 * self.kv_heads) * self.head_dim;
        }
        if self.qk_norm {
            n += 2 * self.head_dim;
        }
        if let Some(m) = &self.mla {
            // q_a_layernorm and kv_a_layernorm.
            n += m.q_lora_rank.unwrap_or(0) + m.kv_lora_rank;
        }
        n
    }

    fn moe_layers(&self) -> u64 {
        self.moe.as_ref().map_or(0, |m| m.moe_layers)
    }

    /// Exact parameter counts from the geometry.
    pub fn params(&self) -> ParamCounts {
        let (d, v, l) = (self.hidden, self.vocab, self.layers);
        let lm = self.moe_layers();
        let embed = v * d;
        let lm_head = v * d;
        let dense_ffn = 3 * d * self.intermediate * (l - lm);
        let linear = self.attn_linear_per_layer() * l + dense_ffn;
        let (routed, one_expert, shared, router) = match &self.moe {
            Some(m) => {
                let one = 3 * d * m.moe_intermediate;
                (
                    one * m.num_experts * lm,
                    one,
                    3 * d * m.shared_intermediate * lm,
                    d * m.num_experts * lm,
                )
            }
            None => (0, 0, 0, 0),
        };
        let norms = (self.norms_per_layer * d + self.attn_small_per_layer()) * l + d;
        let total = embed
            + linear
            + shared
            + routed
            + router
            + norms
            + if self.tie_word_embeddings { 0 } else { lm_head };
        let active_experts = self.moe.as_ref().map_or(0, |m| m.top_k * one_expert * lm);
        let streamed = linear + shared + active_experts + router + norms + lm_head;
        ParamCounts {
            total,
            input_embedding: embed,
            streamed,
            linear: linear + shared,
            attention_linear: self.attn_linear_per_layer() * l,
            routed_experts: routed,
            one_expert,
            unquantized: router + norms + lm_head,
            lm_head,
        }
    }

    /// Streamed parameter count P (2·P FLOP per token), honouring `--params` overrides.
    pub fn params_streamed(&self) -> f64 {
        self.overrides
            .params_streamed
            .unwrap_or(self.params().streamed as f64)
    }

    /// Bytes of the linear weights (attention at its own dtype where the checkpoint keeps
    /// it unquantized, the rest at the weight dtype), all layers, one copy.
    fn linear_bytes(&self, p: &ParamCounts) -> f64 {
        let wb = self.weight_dtype.bytes_per_param();
        let ab = self.attention_dtype.map_or(wb, |d| d.bytes_per_param());
        (p.linear - p.attention_linear) as f64 * wb + p.attention_linear as f64 * ab
    }

    /// Bytes of all weights resident on one GPU (input embedding included), for the KV pool.
    pub(crate) fn resident_weight_bytes(&self, tp: u32, pp: u32) -> f64 {
        let p = self.params();
        let wb = self.weight_dtype.bytes_per_param();
        let lin = self.linear_bytes(&p) + p.routed_experts as f64 * wb;
        let other = (p.total - p.linear - p.routed_experts) as f64 * 2.0;
        match self.overrides.weights_bytes {
            Some(w) => w / f64::from(tp * pp),
            None => (lin + other) / f64::from(tp * pp),
        }
    }

    /// Weight bytes one GPU streams in a step of `tokens` tokens: the last pipeline stage
    /// (layers/pp plus lm_head), 1/tp of every sharded matrix. MoE layers stream the
    /// experts `routing` says `tokens` touch.
    pub fn streamed_weight_bytes(&self, tokens: f64, routing: MoeRouting, tp: u32, pp: u32) -> f64 {
        self.streamed_weight_split(tokens, routing, tp, pp).total()
    }

    /// [`ModelSpec::streamed_weight_bytes`] split by the kernels that read the bytes: the
    /// linear layers, the routed experts and lm_head (GEMMs), and the 2-byte norms,
    /// biases and routers (small kernels). A `--weights-gb` override has no split: all of
    /// it is linear.
    pub(crate) fn streamed_weight_split(
        &self,
        tokens: f64,
        routing: MoeRouting,
        tp: u32,
        pp: u32,
    ) -> WeightSplit {
        let tp = f64::from(tp.max(1));
        let pp = f64::from(pp.max(1));
        if let Some(w) = self.overrides.weights_bytes {
            return WeightSplit {
                linear: w / (tp * pp),
                ..WeightSplit::default()
            };
        }
        let p = self.params();
        let wb = self.weight_dtype.bytes_per_param();
        let experts = match &self.moe {
            Some(m) => {
                routing.experts_touched(m, tokens) * p.one_expert as f64 * m.moe_layers as f64 * wb
            }
            None => 0.0,
        };
        WeightSplit {
            linear: self.linear_bytes(&p) / (tp * pp),
            experts: experts / (tp * pp),
            lm_head: p.lm_head as f64 * 2.0 / tp,
            small: (p.unquantized - p.lm_head) as f64 * 2.0 / pp,
        }
    }

    /// KV heads one GPU holds: heads shard over TP but never below one (replicated).
    pub(crate) fn kv_heads_per_gpu(&self, tp: u32) -> f64 {
        (self.kv_heads as f64 / f64::from(tp.max(1))).max(1.0)
    }

    /// KV-cache bytes per token per GPU over `layers` layers (k = 2·L·h_kv·d_h·b; MLA:
    /// L·(kv_lora_rank + rope)·b, one latent row replicated on every TP rank).
    pub(crate) fn kv_cell_bytes_for_layers(&self, layers: f64, tp: u32) -> f64 {
        match &self.mla {
            Some(m) => layers * (m.kv_lora_rank + m.qk_rope_head_dim) as f64 * self.kv_dtype_bytes,
            None => {
                2.0 * layers
                    * self.kv_heads_per_gpu(tp)
                    * self.head_dim as f64
                    * self.kv_dtype_bytes
            }
        }
    }

    /// KV-cache bytes per token per GPU (all layers of the stage).
    pub fn kv_cell_bytes(&self, tp: u32, pp: u32) -> f64 {
        self.kv_cell_bytes_for_layers(self.layers as f64 / f64::from(pp.max(1)), tp)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::roofline::presets::preset;

    #[test]
    fn int4_groups_below_eight_are_refused() {
        // Group 0 was priced as group 1: 0.5 + 2/1 = 2.5 bytes per weight, above bf16's 2.
        for g in ["int4-g0", "int4-g1", "int4-g4"] {
            assert!(WeightDtype::parse(g).is_err(), "{g}");
        }
        let g8 = WeightDtype::parse("int4-g8").unwrap();
        assert_eq!(g8.bytes_per_param(), 0.5 + 2.0 / 8.0);
        assert!(g8.bytes_per_param() < WeightDtype::Int8.bytes_per_param());
        assert_eq!(
            WeightDtype::parse("int4-g128").unwrap(),
            WeightDtype::Int4 { group: 128 }
        );
    }

    #[test]
    fn llama3_8b_counts_by_hand() {
        // vocab 128256 × d 4096 = 525,336,576 (embedding); per layer q,o 4096² each, k,v
        // 4096·1024 each, MLP 3·4096·14336, two norms: 218,112,000; ×32 + final norm + head.
        let p = preset("llama-3-8b").unwrap().params();
        assert_eq!(p.input_embedding, 525_336_576);
        assert_eq!(p.total, 32 * 218_112_000 + 4096 + 2 * 525_336_576);
        assert_eq!(p.streamed, p.total - p.input_embedding);
    }

    #[test]
    fn tied_embeddings_stream_the_shared_matrix() {
        let p = preset("qwen3-0.6b").unwrap().params();
        // Tied: the total counts the matrix once and the step streams it as lm_head.
        assert_eq!(p.streamed, p.total);
    }

    #[test]
    fn deepseek_v3_is_671b_total_37b_active() {
        let p = preset("deepseek-v3").unwrap().params();
        assert!((p.total as f64 / 1e9 - 671.0).abs() < 1.0, "{}", p.total);
        let active = (p.streamed + p.input_embedding) as f64 / 1e9;
        assert!((active - 37.5).abs() < 1.0, "{active}");
    }

    #[test]
    fn routing_conventions() {
        let m = MoeSpec {
            num_experts: 64,
            top_k: 8,
            moe_intermediate: 1,
            shared_intermediate: 0,
            shared_experts: None,
            moe_layers: 1,
        };
        assert_eq!(MoeRouting::Spread.experts_touched(&m, 4.0), 32.0);
        assert_eq!(MoeRouting::Spread.experts_touched(&m, 100.0), 64.0);
        assert_eq!(MoeRouting::Packed.experts_touched(&m, 100.0), 8.0);
        // One token touches exactly k under uniform routing.
        assert!((MoeRouting::Uniform.experts_touched(&m, 1.0) - 8.0).abs() < 1e-12);
    }
}
