//! The answer a steps report opens with, in every format: the run verdict's sentence with
//! its measured numbers, its next action, where the median step's wall goes (the exact
//! waterfall, the basis of every number above), then the other actions ranked by what each
//! can win per step. The first of each only: every figure, the proof and the ranking are
//! the pipeline's (`attribution::verdict`).

use super::classes::waterfall_line;
use super::markup::Markup;
use super::{fmt_pct, fmt_us};
use crate::wire::steps::StepsReport;
use crate::wire::verdict::{Proof, ProofUnit, ShareOf};

/// The ranked actions printed without `--detail`.
pub(crate) const RANKED_SHOWN: usize = 3;

/// `463,977.0 µs (98% of wall) — the longest gap between two kernels inside a step,
/// measured`: the proof's value in its unit, its share, what it is, its basis.
fn proof_line(p: &Proof) -> String {
    let value = |v: f64| match p.unit {
        ProofUnit::Ns => format!("{} µs", fmt_us(v)),
        ProofUnit::Fraction => fmt_pct(v),
    };
    let mut s = value(p.value);
    if let Some(sh) = &p.share {
        let of = match sh.of {
            ShareOf::Wall => "wall",
            ShareOf::Busy => "busy time",
            ShareOf::Excess => "excess",
        };
        s.push_str(&format!(" ({} of {of})", fmt_pct(sh.fraction)));
    }
    s.push_str(&format!(" — {}", p.what));
    if let Some([lo, hi]) = p.interval {
        s.push_str(&format!(", {} … {}", value(lo), value(hi)));
    }
    s.push_str(&format!(", {}", p.basis.as_str()));
    s
}

/// The answer block: verdict, next, the waterfall per group, the ranked actions (the first
/// [`RANKED_SHOWN`], all with `all`).
pub fn walk<M: Markup>(m: &mut M, r: &StepsReport, all: bool) {
    if let Some(v) = &r.verdict {
        let sentence = v.sentence.as_str();
        match &v.label {
            Some(label) => m.answer("verdict", &format!("{label} — {sentence}")),
            None => m.answer("verdict", sentence),
        }
        if let Some(p) = &v.proof {
            m.answer("proof", &proof_line(p));
        }
        if let Some(a) = &v.action {
            m.answer("next", a);
        }
    }
    let many = r.groups.len() > 1;
    for g in &r.groups {
        let label = if many {
            format!("{} median step", g.group)
        } else {
            "median step".to_owned()
        };
        m.answer(&label, &waterfall_line(&g.waterfall));
    }
    let ranked = r.verdict.as_ref().map_or(&[][..], |v| &v.ranked[..]);
    if ranked.is_empty() {
        return;
    }
    let shown = if all { ranked.len() } else { RANKED_SHOWN };
    m.line(&format!(
        "{} by what each can win per step (at most its excess over the floor, derived):",
        if r.verdict.is_some() {
            "then,"
        } else {
            "next,"
        }
    ));
    for x in ranked.iter().take(shown) {
        let what = if many {
            format!("{}: {}", x.group, x.action)
        } else {
            x.action.clone()
        };
        m.ranked(&format!("≤ {} µs", fmt_us(x.win_ns as f64)), &what);
    }
    if ranked.len() > shown {
        m.hint(&format!(
            "({} more action(s) with --detail)",
            ranked.len() - shown
        ));
    }
}
