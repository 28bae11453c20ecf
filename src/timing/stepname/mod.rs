//! Parse engine step-span names into a batch composition and a step kind.
//!
//! Formats (sources: vLLM `gpu_worker.py` `annotate_profile`, SGLang `profile_utils.py`
//! `build_step_span_name` and `step_span_utils.py`, TensorRT-LLM
//! `tensorrt_llm/_torch/pyexecutor/py_executor.py` `_forward_step`, PyTorch
//! `torch/profiler/profiler.py` `ProfilerStep#N`):
//! - vLLM default: `execute_context_{n}({toks})_generation_{n}({toks})`
//! - vLLM detailed: `execute_{T}_context_{n}(sq..sk..sqsq..sqsk..)_generation_{n}(sq..sk..sqsq..sqsk..)`
//! - vLLM before the above: `execute_new_{n}_cached_{m}`
//! - a variant seen in a real B200 trace: `execute_context_1(888_788544)_generation_0(0)`
//!   (tokens and ΣN_Q², no ΣN_KV)
//! - SGLang: `step[MODE bs=N[ toks=T][ c=.. g=.. c_sq=.. …][ forward_id=K]]`
//! - TensorRT-LLM (NVTX, domain `TensorRT-LLM`): `[Executor] _forward_step {iter}: {n} ctx
//!   reqs, {t} ctx tokens, {m} gen reqs`; older `… {iter}: {n} ctx reqs, {m} gen reqs`,
//!   `[Executor] _forward_step: …` and `_forward_step: …`
//! - PyTorch: `ProfilerStep#N` (a step, no composition, kind unknown)
//! - any of these under `torch.autograd.profiler.emit_nvtx`, which appends `, seq = N`,
//!   `, op_id = N`, `, sizes = […]`: the suffix is ignored.
//!
//! Counts are bounded: a name claiming more than 2^31 tokens or requests, or counts that
//! contradict each other, is still a step but its composition is refused (kind unknown)
//! with a reason the report shows as a warning.
//!
//! One module per engine's names (`vllm`, `sglang`, `trtllm`); `composition` holds what a
//! parsed batch says (sums, refusal, merging an inner name into an outer one); this module
//! classifies a name and hands it to its engine's parser.

mod composition;
mod sglang;
mod trtllm;
mod vllm;

use std::sync::OnceLock;

use regex::Regex;

use crate::wire::steps::{BatchComposition, StepKind};

pub use composition::merge_inner;

/// A parsed step-span name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsedStep {
    pub kind: StepKind,
    pub composition: BatchComposition,
}

pub(super) fn re(cell: &'static OnceLock<Regex>, pat: &str) -> &'static Regex {
    cell.get_or_init(|| Regex::new(pat).expect("step-name pattern compiles"))
}

pub(super) fn num(s: Option<regex::Match<'_>>) -> Option<u64> {
    s.and_then(|m| m.as_str().parse().ok())
}

/// Largest token or request count a name may claim (2^31): anything above is a corrupt
/// or hostile name, not a batch.
pub(crate) const MAX_COUNT: u64 = 1 << 31;

/// The name without the suffix `torch.autograd.profiler.emit_nvtx` appends
/// (`, seq = N`, `, op_id = N`, `, sizes = […]`).
pub(crate) fn strip_emit_nvtx(name: &str) -> &str {
    let mut end = name.len();
    for tag in [", seq = ", ", op_id = ", ", sizes = ["] {
        if let Some(p) = name.find(tag) {
            end = end.min(p);
        }
    }
    &name[..end]
}

/// Whether a name looks like an engine step marker at all (cheap prefilter).
pub(crate) fn is_engine_step_name(name: &str) -> bool {
    let n = name.as_bytes();
    n.starts_with(b"execute_")
        || n.starts_with(b"step[")
        || n.starts_with(b"[Executor] _forward_step")
        || n.starts_with(b"_forward_step")
        || n.starts_with(b"ProfilerStep#")
}

/// Names that are never steps even when they match a step pattern: CUDA-graph capture
/// and vLLM's warm-up dummy runs.
pub(crate) fn is_never_step(name: &str) -> bool {
    name.starts_with("capture_") || name.contains("_dummy_run")
}

/// What a marker name says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Marker {
    /// Not a step marker.
    NotStep,
    /// A step marker with its composition (kind unknown and empty composition for
    /// `ProfilerStep#N`).
    Step(Box<ParsedStep>),
    /// A step marker whose numbers are refused; the reason says why.
    Refused(String),
}

/// Classify a name as a step marker (emit_nvtx suffix ignored).
pub fn marker(name: &str) -> Marker {
    let name = strip_emit_nvtx(name);
    if !is_engine_step_name(name) || is_never_step(name) {
        return Marker::NotStep;
    }
    // Any number in the name beyond 2^62 (or beyond u64 altogether) cannot be a count:
    // refuse, when the name is a marker at all (checked with the number shrunk), before
    // the patterns would quietly drop the field.
    if let Some(big) = name
        .split(|c: char| !c.is_ascii_digit())
        .find(|d| !d.is_empty() && d.parse::<u64>().map_or(true, |v| v > 1 << 62))
    {
        let shrunk: String = name
            .split_inclusive(|c: char| !c.is_ascii_digit())
            .map(|part| {
                let digits = part.trim_end_matches(|c: char| !c.is_ascii_digit());
                if digits.len() == part.len() || digits == big {
                    part.replacen(digits, if digits == big { "1" } else { digits }, 1)
                } else {
                    part.to_owned()
                }
            })
            .collect();
        return match marker(&shrunk) {
            Marker::NotStep => Marker::NotStep,
            _ => Marker::Refused(format!(
                "step name {name:?}: number {big} is out of range: composition ignored"
            )),
        };
    }
    let parsed = if name.starts_with("execute_") {
        vllm::parse(name)
    } else if name.starts_with("step[") {
        sglang::parse(name)
    } else if let Some(n) = name.strip_prefix("ProfilerStep#") {
        return match n.parse::<u64>() {
            Ok(_) => Marker::Step(Box::new(ParsedStep {
                kind: StepKind::Unknown,
                composition: BatchComposition {
                    engine: "pytorch".into(),
                    stage: "ProfilerStep".into(),
                    ..Default::default()
                },
            })),
            Err(_) => Marker::NotStep,
        };
    } else {
        trtllm::parse(name)
    };
    match parsed {
        None => Marker::NotStep,
        Some(p) => match composition::refuse_reason(&p.composition) {
            Some(why) => Marker::Refused(format!("step name {name:?}: {why}")),
            None => Marker::Step(Box::new(p)),
        },
    }
}

/// Parse a step marker name; None when it is none, or when its numbers are refused.
pub fn parse(name: &str) -> Option<ParsedStep> {
    match marker(name) {
        Marker::Step(p) => Some(*p),
        _ => None,
    }
}

/// The kind a step's context and generation request counts make (vLLM, TensorRT-LLM).
pub(super) fn kind_of_counts(ctx: u64, gen: u64) -> StepKind {
    match (ctx > 0, gen > 0) {
        (true, true) => StepKind::Mixed,
        (true, false) => StepKind::Prefill,
        (false, true) => StepKind::Decode,
        (false, false) => StepKind::Idle,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profiler_step_and_emit_nvtx_suffixes() {
        let p = parse("ProfilerStep#6").unwrap();
        assert_eq!(p.kind, StepKind::Unknown);
        assert_eq!(p.composition.requests, None);
        assert!(parse("ProfilerStep#").is_none());
        assert!(parse("ProfilerStep#x").is_none());
        assert_eq!(
            strip_emit_nvtx("step[DECODE bs=8], seq = 12, op_id = 40"),
            "step[DECODE bs=8]"
        );
        assert_eq!(
            strip_emit_nvtx("ProfilerStep#2, sizes = [[1, 2]]"),
            "ProfilerStep#2"
        );
        let p =
            parse("execute_context_0(0)_generation_8(8), seq = 3, op_id = 7, sizes = []").unwrap();
        assert_eq!(p.kind, StepKind::Decode);
        assert_eq!(p.composition.requests, Some(8));
        let p =
            parse("[Executor] _forward_step 1: 1 ctx reqs, 17 ctx tokens, 0 gen reqs, op_id = 2")
                .unwrap();
        assert_eq!(p.composition.context.sq, Some(17));
    }

    #[test]
    fn never_steps() {
        assert!(parse("capture_32_FULL").is_none());
        // A huge number in a name that is no marker pattern is simply not a step.
        assert_eq!(
            marker("execute_foo_99999999999999999999999"),
            Marker::NotStep
        );
        assert_eq!(marker("execute_dummy_run"), Marker::NotStep);
        assert!(parse("aten::mm").is_none());
    }

    #[test]
    fn absurd_numbers_are_refused() {
        // 2^31 + 1 requests.
        let m = marker("step[DECODE bs=2147483649]");
        assert!(
            matches!(&m, Marker::Refused(w) if w.contains("2^31")),
            "{m:?}"
        );
        assert!(parse("step[DECODE bs=2147483649]").is_none());
        // Beyond u64 entirely: not parsed as a number, so not a composition either.
        assert!(matches!(
            marker("execute_context_1(99999999999999999999999)_generation_0(0)"),
            Marker::Refused(_)
        ));
        // 3 + 4 ≠ 5 requests.
        assert!(matches!(
            marker("step[MIXED bs=5 c=3 g=4]"),
            Marker::Refused(_)
        ));
        // Detailed vLLM: T = 10 but 4 + 4 tokens scheduled.
        assert!(matches!(
            marker("execute_10_context_1(sq4sk4sqsq16sqsk16)_generation_4(sq4sk40sqsq4sqsk40)"),
            Marker::Refused(_)
        ));
        // 2 context requests with 1 token between them.
        assert!(matches!(
            marker("[Executor] _forward_step 1: 2 ctx reqs, 1 ctx tokens, 0 gen reqs"),
            Marker::Refused(_)
        ));
        // At the limit is still accepted.
        assert!(parse("step[DECODE bs=2147483648]").is_some());
    }
}
