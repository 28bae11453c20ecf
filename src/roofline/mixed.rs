//! The floor of a mixed step whose split into decodes and prefill chunks is not counted:
//! the split that costs least, so the floor stays a floor.

use super::floor::step_floor;
use super::vllm::Request;
use crate::wire::roofline::{FloorOptions, GpuSpec, ModelSpec, StepComposition};

/// A mixed step of `tokens` new tokens over `requests` sequences (decodes beside prefill
/// chunks, the split not counted): the composition of least floor among `d` decodes of one
/// token attending `decode_context` keys and `requests - d` prefill chunks of no cached
/// prefix sharing the other tokens, tried at `d` = 1, every power of two and
/// `requests - 1`. Weights and the 2·params·T GEMM FLOPs do not depend on the split; the
/// attention and the decodes' KV reads do. None unless tokens > requests > 1.
pub(crate) fn least_mixed(
    model: &ModelSpec,
    gpu: &GpuSpec,
    opts: &FloorOptions,
    tokens: u64,
    requests: u64,
    decode_context: u64,
) -> Option<StepComposition> {
    if requests < 2 || tokens <= requests {
        return None;
    }
    let split = |d: u64| {
        let p = requests - d;
        let (q, rem) = ((tokens - d) / p, (tokens - d) % p);
        let mut reqs: Vec<Request> = (0..p)
            .map(|i| {
                let n = q + u64::from(i < rem);
                Request {
                    num_tokens: n,
                    context_len: n,
                    is_prefill: true,
                }
            })
            .collect();
        reqs.extend((0..d).map(|_| Request {
            num_tokens: 1,
            context_len: decode_context.max(1),
            is_prefill: false,
        }));
        StepComposition::from_requests(&reqs, None)
    };
    let mut tries = vec![1, requests - 1];
    let mut d = 2;
    while d < requests - 1 {
        tries.push(d);
        d *= 2;
    }
    tries
        .into_iter()
        .map(|d| {
            let c = split(d);
            (step_floor(model, gpu, &c, opts).floor_ns, c)
        })
        .min_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, c)| c)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::roofline::{gpu, presets};
    use crate::wire::attribution::Bound;

    #[test]
    fn a_mixed_step_of_two_sequences_is_one_prefill_chunk_beside_one_decode() {
        // T = 1,000 tokens over R = 2 sequences: the only split is a decode (1 token, 2,048
        // keys) beside a 999-token prefill. FLOPs by hand: 2·(params − lm_head)·T + 2·lm_head
        // per logits row (2: the decode's and the prefill's last) + 4·32·32·128 per causal
        // pair (2,048 + 999·1,000/2).
        let m = presets::preset("llama-3-8b").unwrap();
        let g = gpu::lookup("h100-sxm").unwrap();
        let o = FloorOptions::default();
        let c = least_mixed(&m, &g, &o, 1000, 2, 2048).unwrap();
        assert_eq!((c.prefill_requests, c.decode_requests), (1, 1));
        assert_eq!((c.sq, c.sk, c.sqsq), (1000, 999 + 2048, 999 * 999 + 1));
        let s = step_floor(&m, &g, &c, &o);
        assert_eq!(s.flops, 14_224_233_136_128.0);
        assert_eq!(s.bound, Bound::Compute);
        // More sequences than tokens, or a single one, is not a mixed step.
        assert!(least_mixed(&m, &g, &o, 8, 8, 2048).is_none());
        assert!(least_mixed(&m, &g, &o, 1000, 1, 2048).is_none());
    }
}
