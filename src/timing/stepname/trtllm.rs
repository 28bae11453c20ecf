//! TensorRT-LLM's PyExecutor step range (NVTX, domain `TensorRT-LLM`), from
//! `tensorrt_llm/_torch/pyexecutor/py_executor.py` `_forward_step`: `[Executor]
//! _forward_step {iter}: {n} ctx reqs, {t} ctx tokens, {m} gen reqs`, and the older
//! forms without `ctx tokens`, without the iteration, or without the `[Executor]` prefix.

use std::sync::OnceLock;

use regex::Regex;

use super::{kind_of_counts, num, re, ParsedStep};
use crate::wire::steps::{BatchComposition, StepKind};

/// TensorRT-LLM PyExecutor's `_forward_step` NVTX range.
pub(super) fn parse(name: &str) -> Option<ParsedStep> {
    static FULL: OnceLock<Regex> = OnceLock::new();
    static BARE: OnceLock<Regex> = OnceLock::new();
    let full = re(
        &FULL,
        r"^(?:\[Executor\] )?_forward_step(?: (\d+))?: (\d+) ctx reqs?,(?: (\d+) ctx tokens?,)? (\d+) gen reqs?$",
    );
    let mut c = BatchComposition {
        engine: "trtllm".into(),
        stage: "forward_step".into(),
        ..Default::default()
    };
    if let Some(m) = full.captures(name) {
        c.iteration = num(m.get(1));
        c.context.requests = num(m.get(2));
        c.context.sq = num(m.get(3));
        c.generation.requests = num(m.get(4));
        // One new token per generation request (no speculative decoding stated).
        c.generation.sq = c.generation.requests;
        let (ctx, gen) = (
            c.context.requests.unwrap_or(0),
            c.generation.requests.unwrap_or(0),
        );
        c.requests = ctx.checked_add(gen);
        if let (Some(a), Some(b)) = (c.context.sq, c.generation.sq) {
            c.tokens = a.checked_add(b);
        }
        return Some(ParsedStep {
            kind: kind_of_counts(ctx, gen),
            composition: c,
        });
    }
    // A `_forward_step` range whose text carries no counts: a step of unknown kind.
    let bare = re(
        &BARE,
        r"^(?:\[Executor\] )?_forward_step(?: (\d+))?(?::.*)?$",
    );
    let m = bare.captures(name)?;
    c.iteration = num(m.get(1));
    Some(ParsedStep {
        kind: StepKind::Unknown,
        composition: c,
    })
}

#[cfg(test)]
mod tests {
    use super::super::parse;
    use super::*;

    #[test]
    fn trtllm_forms() {
        let p =
            parse("[Executor] _forward_step 12: 2 ctx reqs, 300 ctx tokens, 5 gen reqs").unwrap();
        assert_eq!(p.kind, StepKind::Mixed);
        let c = &p.composition;
        assert_eq!(c.engine, "trtllm");
        assert_eq!(c.iteration, Some(12));
        assert_eq!(c.context.requests, Some(2));
        assert_eq!(c.context.sq, Some(300));
        assert_eq!(c.generation.requests, Some(5));
        assert_eq!(c.requests, Some(7));
        assert_eq!(c.tokens, Some(305));
        let p = parse("[Executor] _forward_step 3: 0 ctx reqs, 64 gen reqs").unwrap();
        assert_eq!(p.kind, StepKind::Decode);
        assert_eq!(p.composition.generation.requests, Some(64));
        assert_eq!(p.composition.context.sq, None);
        let p = parse("[Executor] _forward_step: 4 ctx reqs, 0 gen reqs").unwrap();
        assert_eq!(p.kind, StepKind::Prefill);
        assert_eq!(p.composition.iteration, None);
        assert_eq!(p.composition.context.requests, Some(4));
        let p = parse("_forward_step: 1 ctx reqs, 2 gen reqs").unwrap();
        assert_eq!(p.kind, StepKind::Mixed);
        assert_eq!(p.composition.requests, Some(3));
        // A `_forward_step` range without counts is a step of unknown kind.
        let p = parse("[Executor] _forward_step 9").unwrap();
        assert_eq!(p.kind, StepKind::Unknown);
        assert_eq!(p.composition.iteration, Some(9));
        assert!(parse("_forward_step_helper").is_none());
    }
}
