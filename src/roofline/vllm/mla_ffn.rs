//! The MLA attention and FFN/MoE terms of vLLM's perf model (`vllm/v1/metrics/perf.py`),
//! with the parent module's conventions.

use super::*;

impl MlaCfg {
    /// `absorbed_decode`: bill decode attention at (kv_lora_rank + rope) / kv_lora_rank
    /// wide (the absorbed kernel, stepgate's default) instead of vLLM's (nope + rope) / v.
    pub fn breakdown(&self, b: &Batch, per_gpu: bool, absorbed_decode: bool) -> Breakdown {
        let (mut l, d_model, mut q) = (self.layers, self.hidden, self.q);
        let qk_dim = self.nope + self.rope;
        let (v, c, r) = (self.v, self.c, self.rope);
        let t = b.tokens();
        if per_gpu {
            l /= self.pp;
            q = (q / self.tp).max(1);
        }
        let mut flops = Vec::new();
        match self.q_lora {
            Some(qr) => {
                flops.push(("q_a_proj", (2 * t * d_model * qr * l) as i64));
                flops.push(("q_b_proj", (2 * t * qr * q * qk_dim * l) as i64));
            }
            None => flops.push(("q_proj", (2 * t * d_model * q * qk_dim * l) as i64)),
        }
        flops.push(("kv_a_proj", (2 * t * d_model * (c + r) * l) as i64));
        // = q-fold 2·h·nope·c + v-fold 2·h·c·v of the absorbed path (docs/method.md §6).
        flops.push(("kv_b_proj", (2 * t * c * q * (self.nope + v) * l) as i64));
        let (qk, av) = if absorbed_decode {
            (
                2 * q * b.prefill_tc * qk_dim * l + 2 * q * b.decode_tc * (c + r) * l,
                2 * q * b.prefill_tc * v * l + 2 * q * b.decode_tc * c * l,
            )
        } else {
            let tc = b.tc(None);
            (2 * q * tc * qk_dim * l, 2 * q * tc * v * l)
        };
        flops.push(("attn_qk", qk as i64));
        flops.push(("attn_av", av as i64));
        flops.push(("out_proj", (2 * t * q * v * d_model * l) as i64));

        let (act, w, cache) = (self.act, self.w, self.cache);
        let ai = |x: u64| trunc(f(x) * act);
        let wl = |x: u64| trunc(f(x) * w * f(l));
        let mut read = Vec::new();
        match self.q_lora {
            Some(qr) => {
                read.push(("q_a_input", ai(t * d_model * l)));
                read.push(("q_a_weight", wl(d_model * qr)));
                read.push(("q_b_input", ai(t * qr * l)));
                read.push(("q_b_weight", wl(qr * q * qk_dim)));
            }
            None => {
                read.push(("q_input", ai(t * d_model * l)));
                read.push(("q_weight", wl(d_model * q * qk_dim)));
            }
        }
        read.push(("kv_a_input", ai(t * d_model * l)));
        read.push(("kv_a_weight", wl(d_model * (c + r))));
        read.push(("kv_b_input", ai(t * c * l)));
        read.push(("kv_b_weight", wl(c * q * (self.nope + v))));
        let mut attn: Option<f64> = None;
        if b.prefill_num_tokens > 0 {
            attn = Some(
                f(b.prefill_num_tokens * q * qk_dim) * act * f(l)
                    + f(b.prefill_context_len * q * (qk_dim + v)) * act * f(l),
            );
        }
        if b.decode_num_tokens > 0 {
            // vLLM bills the decode query at 192 wide; kept (golden README: tiny, matches).
            attn = Some(
                attn.unwrap_or(0.0)
                    + f(b.decode_num_tokens * q * qk_dim) * act * f(l)
                    + f(b.decode_context_len * (c + r)) * cache * f(l),
            );
        }
        if let Some(a) = attn {
            read.push(("attn_input", trunc(a)));
        }
        read.push(("out_input", ai(t * q * v * l)));
        read.push(("out_weight", wl(q * v * d_model)));

        let mut write = Vec::new();
        match self.q_lora {
            Some(qr) => {
                write.push(("q_a_output", ai(t * qr * l)));
                write.push(("q_b_output", ai(t * q * qk_dim * l)));
            }
            None => write.push(("q_output", ai(t * q * qk_dim * l))),
        }
        write.push(("kv_a_output", ai(t * (c + r) * l)));
        write.push(("kv_b_output", ai(t * q * (self.nope + v) * l)));
        write.push(("kv_cache", trunc(f(t * (c + r)) * cache * f(l))));
        write.push(("out_output", ai(t * d_model * l)));
        Breakdown { flops, read, write }
    }
}

impl FfnCfg {
    pub fn breakdown(&self, b: &Batch, per_gpu: bool) -> Breakdown {
        let d = self.hidden;
        let (mut di, mut mi, e, s) = (
            self.intermediate,
            self.moe_intermediate,
            self.top_k,
            self.shared,
        );
        let t = b.tokens();
        let mut lm = self.moe_layers;
        let mut ld = self.layers - lm;
        let mut activated = if e > 0 { t * e } else { 0 };
        let mut experts = self.num_experts;
        if per_gpu {
            ld /= self.pp;
            lm /= self.pp;
            di /= self.ffn_tp;
            mi /= self.ffn_tp;
            if e > 0 {
                activated /= self.ffn_ep;
            }
            experts /= self.ffn_ep;
        }
        let (act, w) = (self.act, self.w);
        let ai = |x: u64| trunc(f(x) * act);
        let wi = |x: u64, lay: u64| trunc(f(x) * w * f(lay));
        let mut flops = Vec::new();
        let mut read = Vec::new();
        let mut write = Vec::new();
        if ld > 0 {
            flops.push(("dense_ffn", (2 * d * 3 * di * t * ld) as i64));
            read.push(("dense_up_gate_input", ai(t * d * ld)));
            read.push(("dense_up_gate_weights", wi(2 * d * di, ld)));
            read.push(("dense_silu_input", ai(2 * t * di * ld)));
            read.push(("dense_down_input", ai(t * di * ld)));
            read.push(("dense_down_weights", wi(d * di, ld)));
            write.push(("dense_up_gate_output", ai(2 * t * di * ld)));
            write.push(("dense_silu_output", ai(t * di * ld)));
            write.push(("dense_down_output", ai(t * d * ld)));
        }
        if lm > 0 && e > 0 {
            flops.push(("routed_ffn", (2 * d * 3 * mi * activated * lm) as i64));
        }
        if lm > 0 && s > 0 {
            // Shared experts run for every token and are not divided under EP.
            flops.push(("shared_ffn", (2 * d * 3 * mi * s * t * lm) as i64));
        }
        if lm > 0 {
            if e > 0 {
                // Perfect balance: min(activated tokens, experts) experts' weights read.
                let touched = activated.min(experts);
                read.push(("routed_up_gate_input", ai(activated * d * lm)));
                read.push(("routed_up_gate_weights", wi(2 * d * mi * touched, lm)));
                read.push(("routed_silu_input", ai(2 * activated * mi * lm)));
                read.push(("routed_down_input", ai(activated * mi * lm)));
                read.push(("routed_down_weights", wi(d * mi * touched, lm)));
                write.push(("routed_up_gate_output", ai(2 * activated * mi * lm)));
                write.push(("routed_silu_output", ai(activated * mi * lm)));
                write.push(("routed_down_output", ai(activated * d * lm)));
            }
            if s > 0 {
                read.push(("shared_up_gate_input", ai(t * d * lm)));
                read.push(("shared_up_gate_weights", wi(2 * d * mi * s, lm)));
                read.push(("shared_silu_input", ai(2 * t * mi * s * lm)));
                // vLLM quirk: no factor S here, unlike its sibling terms.
                read.push(("shared_down_input", ai(t * mi * lm)));
                read.push(("shared_down_weights", wi(d * mi * s, lm)));
                write.push(("shared_up_gate_output", ai(2 * t * s * mi * lm)));
                write.push(("shared_silu_output", ai(t * s * mi * lm)));
                write.push(("shared_down_output", ai(t * s * d * lm)));
            }
        }
        Breakdown { flops, read, write }
    }
}
