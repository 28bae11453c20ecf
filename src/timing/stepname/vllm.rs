//! vLLM's step annotation (`Worker.annotate_profile` in `vllm/v1/worker/gpu_worker.py`):
//! `execute_context_{n}({toks})_generation_{m}({toks})`, the detailed
//! `execute_{T}_context_{n}(sq…sk…sqsq…sqsk…)_generation_{m}(…)`, the older
//! `execute_new_{n}_cached_{m}`, and a variant seen in a real B200 trace
//! `execute_context_1(888_788544)_generation_0(0)` (tokens and ΣN_Q², no ΣN_KV).

use std::sync::OnceLock;

use regex::Regex;

use super::{kind_of_counts, num, re, ParsedStep};
use crate::wire::steps::{BatchComposition, GroupAggregates};

pub(super) fn parse(name: &str) -> Option<ParsedStep> {
    static DETAILED: OnceLock<Regex> = OnceLock::new();
    static PLAIN: OnceLock<Regex> = OnceLock::new();
    static B200: OnceLock<Regex> = OnceLock::new();
    static OLD: OnceLock<Regex> = OnceLock::new();
    let detailed = re(
        &DETAILED,
        r"^execute_(\d+)_context_(\d+)\(sq(\d+)sk(\d+)sqsq(\d+)sqsk(\d+)\)_generation_(\d+)\(sq(\d+)sk(\d+)sqsq(\d+)sqsk(\d+)\)$",
    );
    let mut c = BatchComposition {
        engine: "vllm".into(),
        stage: "execute".into(),
        ..Default::default()
    };
    if let Some(m) = detailed.captures(name) {
        c.tokens = num(m.get(1));
        c.context = GroupAggregates {
            requests: num(m.get(2)),
            sq: num(m.get(3)),
            sk: num(m.get(4)),
            sqsq: num(m.get(5)),
            sqsk: num(m.get(6)),
        };
        c.generation = GroupAggregates {
            requests: num(m.get(7)),
            sq: num(m.get(8)),
            sk: num(m.get(9)),
            sqsq: num(m.get(10)),
            sqsk: num(m.get(11)),
        };
    } else if let Some(m) = re(
        &PLAIN,
        r"^execute_context_(\d+)\((\d+)\)_generation_(\d+)\((\d+)\)$",
    )
    .captures(name)
    {
        c.context = GroupAggregates {
            requests: num(m.get(1)),
            sq: num(m.get(2)),
            ..Default::default()
        };
        c.generation = GroupAggregates {
            requests: num(m.get(3)),
            sq: num(m.get(4)),
            ..Default::default()
        };
    } else if let Some(m) = re(
        &B200,
        r"^execute_context_(\d+)\((\d+)_(\d+)\)_generation_(\d+)\((\d+)(?:_(\d+))?\)$",
    )
    .captures(name)
    {
        // `(tokens_ΣN_Q²)`: 888_788544 is 888 tokens and 888² (one request).
        c.context = GroupAggregates {
            requests: num(m.get(1)),
            sq: num(m.get(2)),
            sqsq: num(m.get(3)),
            ..Default::default()
        };
        c.generation = GroupAggregates {
            requests: num(m.get(4)),
            sq: num(m.get(5)),
            sqsq: num(m.get(6)),
            ..Default::default()
        };
    } else if let Some(m) = re(&OLD, r"^execute_new_(\d+)_cached_(\d+)$").captures(name) {
        // New requests are prefills; cached ones are mostly decodes (chunked-prefill
        // continuations are cached too, so this split is approximate).
        c.context.requests = num(m.get(1));
        c.generation.requests = num(m.get(2));
    } else {
        return None;
    }
    let ctx = c.context.requests.unwrap_or(0);
    let gen = c.generation.requests.unwrap_or(0);
    c.requests = ctx.checked_add(gen);
    if c.tokens.is_none() {
        c.tokens = match (c.context.sq, c.generation.sq) {
            (Some(a), Some(b)) => a.checked_add(b),
            _ => None,
        };
    }
    Some(ParsedStep {
        kind: kind_of_counts(ctx, gen),
        composition: c,
    })
}

#[cfg(test)]
mod tests {
    use super::super::parse;
    use crate::wire::steps::StepKind;

    #[test]
    fn vllm_detailed_decode() {
        let p = parse(
            "execute_32_context_0(sq0sk0sqsq0sqsk0)_generation_32(sq32sk55086sqsq32sqsk55086)",
        )
        .unwrap();
        assert_eq!(p.kind, StepKind::Decode);
        let c = &p.composition;
        assert_eq!(c.tokens, Some(32));
        assert_eq!(c.requests, Some(32));
        assert_eq!(c.generation.sk, Some(55086));
        assert_eq!(c.sum_kv(), Some(55086));
        assert_eq!(c.sum_q(), Some(32));
        assert!((c.mean_context().unwrap() - 55086.0 / 32.0).abs() < 1e-12);
    }

    #[test]
    fn vllm_detailed_mixed() {
        let p = parse("execute_8192_context_9(sq8155sk8430sqsq7475785sqsk7671310)_generation_37(sq37sk34489sqsq37sqsk34489)").unwrap();
        assert_eq!(p.kind, StepKind::Mixed);
        assert_eq!(p.composition.sum_q(), Some(8192));
        assert_eq!(p.composition.sum_kv(), Some(8430 + 34489));
        assert_eq!(p.composition.requests, Some(46));
    }

    #[test]
    fn vllm_plain_old_and_b200() {
        let p = parse("execute_context_0(0)_generation_32(32)").unwrap();
        assert_eq!(p.kind, StepKind::Decode);
        assert_eq!(p.composition.sum_q(), Some(32));
        assert_eq!(p.composition.sum_kv(), None);
        let p = parse("execute_new_3_cached_0").unwrap();
        assert_eq!(p.kind, StepKind::Prefill);
        assert_eq!(p.composition.requests, Some(3));
        let p = parse("execute_context_1(888_788544)_generation_0(0)").unwrap();
        assert_eq!(p.kind, StepKind::Prefill);
        assert_eq!(p.composition.context.sq, Some(888));
        assert_eq!(p.composition.context.sqsq, Some(888 * 888));
        assert_eq!(p.composition.sum_kv(), None);
        assert!(parse("execute_model").is_none());
    }
}
