//! What a parsed step name's batch composition says: its token and KV sums, whether its
//! numbers can be believed, and how an inner step name fills an outer one.

use super::MAX_COUNT;
use crate::wire::steps::{BatchComposition, GroupAggregates};

impl BatchComposition {
    /// Whether the name counted any requests (a `ProfilerStep#N` composition counts none).
    pub(crate) fn counts_requests(&self) -> bool {
        self.requests.is_some()
            || self.context.requests.is_some()
            || self.generation.requests.is_some()
    }

    /// Σ over both groups of a field, when every present group has it.
    pub(super) fn sum(&self, f: impl Fn(&GroupAggregates) -> Option<u64>) -> Option<u64> {
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
    #[cfg(test)]
    pub(crate) fn sum_q(&self) -> Option<u64> {
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

/// Why a parsed composition cannot be believed: counts out of range or contradicting
/// each other.
pub(super) fn refuse_reason(c: &BatchComposition) -> Option<String> {
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
    use super::super::parse;
    use super::*;

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
