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

use std::sync::OnceLock;

use regex::Regex;

pub use crate::wire::steps::{BatchComposition, GroupAggregates, StepKind};

impl BatchComposition {
    /// Σ over both groups of a field, when every present group has it.
    fn sum(&self, f: impl Fn(&GroupAggregates) -> Option<u64>) -> Option<u64> {
        let groups = [&self.context, &self.generation];
        let mut total: u64 = 0;
        let mut any = false;
        for g in groups {
            let empty = g.requests == Some(0) && g.sq.unwrap_or(0) == 0;
            match f(g) {
                Some(v) => {
                    total = total.saturating_add(v);
                    any = true;
                }
                None if empty => {}
                None if g.requests.is_none() && g.sq.is_none() => {}
                None => return None,
            }
        }
        any.then_some(total)
    }

    /// ΣN_Q over the batch.
    pub fn sum_q(&self) -> Option<u64> {
        self.sum(|g| g.sq).or(self.tokens)
    }

    /// ΣN_KV over the batch (None when the name does not carry it).
    pub fn sum_kv(&self) -> Option<u64> {
        self.sum(|g| g.sk)
    }

    /// Mean context per request: ΣN_KV / requests.
    pub fn mean_context(&self) -> Option<f64> {
        match (self.sum_kv(), self.requests) {
            (Some(k), Some(r)) if r > 0 => Some(k as f64 / r as f64),
            _ => None,
        }
    }
}

/// A parsed step-span name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsedStep {
    pub kind: StepKind,
    pub composition: BatchComposition,
}

fn re(cell: &'static OnceLock<Regex>, pat: &str) -> &'static Regex {
    cell.get_or_init(|| Regex::new(pat).expect("step-name pattern compiles"))
}

fn num(s: Option<regex::Match<'_>>) -> Option<u64> {
    s.and_then(|m| m.as_str().parse().ok())
}

/// Largest token or request count a name may claim (2^31): anything above is a corrupt
/// or hostile name, not a batch.
pub const MAX_COUNT: u64 = 1 << 31;

/// The name without the suffix `torch.autograd.profiler.emit_nvtx` appends
/// (`, seq = N`, `, op_id = N`, `, sizes = […]`).
pub fn strip_emit_nvtx(name: &str) -> &str {
    let mut end = name.len();
    for tag in [", seq = ", ", op_id = ", ", sizes = ["] {
        if let Some(p) = name.find(tag) {
            end = end.min(p);
        }
    }
    &name[..end]
}

/// Whether a name looks like an engine step marker at all (cheap prefilter).
pub fn is_engine_step_name(name: &str) -> bool {
    let n = name.as_bytes();
    n.starts_with(b"execute_")
        || n.starts_with(b"step[")
        || n.starts_with(b"[Executor] _forward_step")
        || n.starts_with(b"_forward_step")
        || n.starts_with(b"ProfilerStep#")
}

/// Names that are never steps even when they match a step pattern: CUDA-graph capture
/// and vLLM's warm-up dummy runs.
pub fn is_never_step(name: &str) -> bool {
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
        parse_vllm(name)
    } else if name.starts_with("step[") {
        parse_sglang(name)
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
        parse_trtllm(name)
    };
    match parsed {
        None => Marker::NotStep,
        Some(p) => match refuse_reason(&p.composition) {
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

/// Why a parsed composition cannot be believed: counts out of range or contradicting
/// each other.
fn refuse_reason(c: &BatchComposition) -> Option<String> {
    let counts = [
        ("requests", c.requests),
        ("tokens", c.tokens),
        ("context requests", c.context.requests),
        ("context tokens", c.context.sq),
        ("context KV length", c.context.sk),
        ("generation requests", c.generation.requests),
        ("generation tokens", c.generation.sq),
        ("generation KV length", c.generation.sk),
    ];
    for (what, v) in counts {
        if v.is_some_and(|v| v > MAX_COUNT) {
            return Some(format!(
                "{what} {} is beyond 2^31: composition ignored",
                v.unwrap_or(0)
            ));
        }
    }
    for (what, v) in [
        ("ΣN_Q²", c.context.sqsq),
        ("ΣN_Q·N_KV", c.context.sqsk),
        ("ΣN_Q²", c.generation.sqsq),
        ("ΣN_Q·N_KV", c.generation.sqsk),
    ] {
        if v.is_some_and(|v| v > 1 << 62) {
            return Some(format!("{what} is beyond 2^62: composition ignored"));
        }
    }
    let (cr, gr) = (c.context.requests, c.generation.requests);
    if let (Some(r), Some(a), Some(b)) = (c.requests, cr, gr) {
        if a.checked_add(b) != Some(r) {
            return Some(format!(
                "{a} context + {b} generation requests is not the {r} stated: composition ignored"
            ));
        }
    }
    if let (Some(t), Some(a), Some(b)) = (c.tokens, c.context.sq, c.generation.sq) {
        if a.checked_add(b) != Some(t) {
            return Some(format!(
                "{a} context + {b} generation tokens is not the {t} stated: composition ignored"
            ));
        }
    }
    for g in [&c.context, &c.generation] {
        if let (Some(r), Some(q)) = (g.requests, g.sq) {
            if q < r {
                return Some(format!(
                    "{q} tokens for {r} requests (each request schedules at least one): composition ignored"
                ));
            }
        }
    }
    None
}

/// TensorRT-LLM PyExecutor's `_forward_step` NVTX range.
fn parse_trtllm(name: &str) -> Option<ParsedStep> {
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
            kind: vllm_kind(ctx, gen),
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

fn vllm_kind(ctx: u64, gen: u64) -> StepKind {
    match (ctx > 0, gen > 0) {
        (true, true) => StepKind::Mixed,
        (true, false) => StepKind::Prefill,
        (false, true) => StepKind::Decode,
        (false, false) => StepKind::Idle,
    }
}

fn parse_vllm(name: &str) -> Option<ParsedStep> {
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
        kind: vllm_kind(ctx, gen),
        composition: c,
    })
}

fn parse_sglang(name: &str) -> Option<ParsedStep> {
    static HEAD: OnceLock<Regex> = OnceLock::new();
    let head = re(&HEAD, r"^step\[([A-Za-z_0-9]+) bs=(\d+)(.*)\]$");
    let m = head.captures(name)?;
    let stage = m.get(1)?.as_str().to_ascii_uppercase();
    let bs = num(m.get(2));
    let mut c = BatchComposition {
        engine: "sglang".into(),
        stage: stage.clone(),
        requests: bs,
        ..Default::default()
    };
    for kv in m
        .get(3)
        .map(|x| x.as_str())
        .unwrap_or("")
        .split_whitespace()
    {
        let Some((k, v)) = kv.split_once('=') else {
            continue;
        };
        let Ok(v) = v.parse::<u64>() else { continue };
        match k {
            "toks" => c.tokens = Some(v),
            "c" => c.context.requests = Some(v),
            "g" => c.generation.requests = Some(v),
            "c_sq" => c.context.sq = Some(v),
            "c_sk" => c.context.sk = Some(v),
            "c_sqsq" => c.context.sqsq = Some(v),
            "c_sqsk" => c.context.sqsk = Some(v),
            "g_sq" => c.generation.sq = Some(v),
            "g_sk" => c.generation.sk = Some(v),
            "g_sqsq" => c.generation.sqsq = Some(v),
            "g_sqsk" => c.generation.sqsk = Some(v),
            "forward_id" => c.forward_id = Some(v),
            _ => {}
        }
    }
    let kind = match stage.as_str() {
        "DECODE" => StepKind::Decode,
        "EXTEND" | "SPLIT_PREFILL" | "DLLM_EXTEND" | "PREBUILT" => StepKind::Prefill,
        "MIXED" => StepKind::Mixed,
        "IDLE" => StepKind::Idle,
        "VERIFY" | "TARGET_VERIFY" => StepKind::Verify,
        s if s.starts_with("DRAFT") => StepKind::Draft,
        _ => StepKind::Unknown,
    };
    // Group sizes the name leaves implicit: a pure decode batch is all generation, a
    // pure extend all context (SGLang's `_agg` splits MIXED explicitly with c=/g=).
    match kind {
        StepKind::Decode | StepKind::Verify => {
            c.generation.requests = c.generation.requests.or(bs);
            c.context.requests = c.context.requests.or(Some(0));
        }
        StepKind::Prefill => {
            c.context.requests = c.context.requests.or(bs);
            c.context.sq = c.context.sq.or(c.tokens);
            c.generation.requests = c.generation.requests.or(Some(0));
        }
        _ => {}
    }
    if c.tokens.is_none() {
        c.tokens = match kind {
            StepKind::Decode => c.generation.sq.or(bs),
            _ => c.sum(|g| g.sq),
        };
    }
    if kind == StepKind::Decode && c.generation.sq.is_none() {
        // One query token per request in plain decode (no speculative tokens stated).
        c.generation.sq = bs;
    }
    Some(ParsedStep {
        kind,
        composition: c,
    })
}

/// Merge an inner step span into the outer one that encloses it (TraceLens-patched
/// SGLang wraps `step[…]` in an `execute_…`): the inner name and composition win, with
/// fields the inner one lacks filled from the outer.
pub fn merge_inner(outer: &BatchComposition, inner: &BatchComposition) -> BatchComposition {
    let fill = |i: GroupAggregates, o: GroupAggregates| GroupAggregates {
        requests: i.requests.or(o.requests),
        sq: i.sq.or(o.sq),
        sk: i.sk.or(o.sk),
        sqsq: i.sqsq.or(o.sqsq),
        sqsk: i.sqsk.or(o.sqsk),
    };
    BatchComposition {
        engine: inner.engine.clone(),
        stage: inner.stage.clone(),
        requests: inner.requests.or(outer.requests),
        tokens: inner.tokens.or(outer.tokens),
        context: fill(inner.context, outer.context),
        generation: fill(inner.generation, outer.generation),
        forward_id: inner.forward_id.or(outer.forward_id),
        iteration: inner.iteration.or(outer.iteration),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn sglang_forms() {
        let p = parse("step[DECODE bs=32]").unwrap();
        assert_eq!(p.kind, StepKind::Decode);
        assert_eq!(p.composition.requests, Some(32));
        assert_eq!(p.composition.sum_q(), Some(32));
        let p = parse("step[EXTEND bs=15 toks=15360]").unwrap();
        assert_eq!(p.kind, StepKind::Prefill);
        assert_eq!(p.composition.tokens, Some(15360));
        assert_eq!(p.composition.context.sq, Some(15360));
        let p = parse("step[DECODE bs=2 g_sq=2 g_sqsq=2 g_sqsk=30 g_sk=30 forward_id=7]").unwrap();
        assert_eq!(p.composition.sum_kv(), Some(30));
        assert_eq!(p.composition.generation.sqsk, Some(30));
        assert_eq!(p.composition.forward_id, Some(7));
        let p = parse("step[EXTEND bs=2 toks=12 c_sq=12 c_sqsq=80 c_sqsk=120 c_sk=20]").unwrap();
        assert_eq!(p.composition.sum_kv(), Some(20));
        assert_eq!(p.composition.context.sqsq, Some(80));
        let p = parse("step[MIXED bs=3 c=1 g=2 c_sq=8 c_sk=10 c_sqsq=64 c_sqsk=80 g_sq=2 g_sk=40 g_sqsq=2 g_sqsk=40]").unwrap();
        assert_eq!(p.kind, StepKind::Mixed);
        assert_eq!(p.composition.sum_kv(), Some(50));
        assert_eq!(parse("step[VERIFY bs=4]").unwrap().kind, StepKind::Verify);
        assert_eq!(
            parse("step[TARGET_VERIFY bs=4]").unwrap().kind,
            StepKind::Verify
        );
        assert_eq!(parse("step[DRAFT bs=4]").unwrap().kind, StepKind::Draft);
        assert_eq!(
            parse("step[DRAFT_EXTEND_V2 bs=1]").unwrap().kind,
            StepKind::Draft
        );
        assert_eq!(parse("step[IDLE bs=0]").unwrap().kind, StepKind::Idle);
        assert_eq!(parse("step[decode bs=8]").unwrap().kind, StepKind::Decode);
    }

    #[test]
    fn inner_span_wins_outer_fills() {
        let outer = parse(
            "execute_32_context_0(sq0sk0sqsq0sqsk0)_generation_32(sq32sk55086sqsq32sqsk55086)",
        )
        .unwrap();
        let inner = parse("step[DECODE bs=32]").unwrap();
        let m = merge_inner(&outer.composition, &inner.composition);
        assert_eq!(m.engine, "sglang");
        assert_eq!(m.stage, "DECODE");
        assert_eq!(m.sum_kv(), Some(55086));
        assert_eq!(m.requests, Some(32));
    }
}

#[cfg(test)]
mod marker_tests {
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
