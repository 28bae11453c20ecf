//! SGLang's step annotation (`build_step_span_name` in
//! `sglang/srt/utils/profile_utils.py`): `step[MODE bs=N[ toks=T][ c=.. g=.. c_sq=.. …][
//! forward_id=K]]`, a torch `record_function` only.

use std::sync::OnceLock;

use regex::Regex;

use super::{num, re, ParsedStep};
use crate::wire::steps::{BatchComposition, StepKind};

pub(super) fn parse(name: &str) -> Option<ParsedStep> {
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

#[cfg(test)]
mod tests {
    use super::super::parse;
    use crate::wire::steps::StepKind;

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
}
