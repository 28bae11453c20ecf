//! Baseline against candidate: match groups like for like, judge every metric, kernel and
//! category by the change in its median with a bootstrap interval, and reach one verdict.
//!
//! A change is a regression only when the whole interval of the relative change lies beyond
//! the relative threshold in the worse direction AND the point change is beyond the
//! absolute threshold (issue 5). Fewer than `min_samples` per side is inconclusive.
//!
//! One job per file: [`types`] (what the comparison prints), `identity` (same GPU, same
//! model), `matching` (which groups meet), `judge` (one row), `group` (one group's rows
//! and verdict); this file rolls the groups up into one verdict.

mod group;
mod identity;
mod judge;
mod matching;
pub mod types;

pub use types::{
    CategoryRow, Change, Comparison, GroupComparison, KernelPresence, KernelRow, Method, MetricRow,
    OneSided, RowVerdict, Side, SideInfo, Verdict,
};

use crate::baseline::model::{Baseline, SCHEMA_VERSION};
use crate::baseline::policy::Policy;
use crate::exit::Result;
use crate::timing::labels::NameLabels;

/// Compare for a gate: a GPU or model mismatch between the sides is an input error.
pub fn compare(baseline: &Baseline, candidate: &Baseline, policy: &Policy) -> Result<Comparison> {
    compare_inner(baseline, candidate, policy, true)
}

/// Compare for a plain diff: a GPU or model mismatch is a warning, not an error (comparing
/// two GPUs on purpose is a fair question; gating across them is not).
pub fn compare_unchecked(
    baseline: &Baseline,
    candidate: &Baseline,
    policy: &Policy,
) -> Result<Comparison> {
    compare_inner(baseline, candidate, policy, false)
}

fn compare_inner(
    baseline: &Baseline,
    candidate: &Baseline,
    policy: &Policy,
    strict: bool,
) -> Result<Comparison> {
    let warnings = identity::check_identity(&baseline.meta, &candidate.meta, strict)?;
    let matched = matching::match_groups(baseline, candidate);
    let mut scratch = judge::Scratch::default();
    // Reason lines name kernels by the labels the reports show (distinct kernels that
    // share a short name told apart), over every kernel either side of a compared group
    // has: the same set the reports label, so a kernel reads the same in both.
    let labels = NameLabels::new(matched.pairs.iter().flat_map(|(b, c)| {
        b.kernels
            .iter()
            .chain(&c.kernels)
            .map(|(name, k)| (name.as_str(), k.short_name.as_str()))
    }));
    let groups: Vec<GroupComparison> = matched
        .pairs
        .iter()
        .map(|(b, c)| group::compare_group(b, c, policy, &labels, &mut scratch))
        .collect();
    let (verdict, reasons) = roll_up(&groups);
    Ok(Comparison {
        schema_version: SCHEMA_VERSION,
        verdict,
        exit_code: verdict.exit_code(policy.inconclusive_fails),
        inconclusive_fails: policy.inconclusive_fails,
        reasons,
        warnings,
        baseline: identity::side_info(baseline),
        candidate: identity::side_info(candidate),
        method: method(policy),
        groups,
        one_sided: matched.one_sided,
    })
}

/// One verdict from the groups': any regression fails; no group on both sides or any
/// inconclusive group is inconclusive. The reasons are the groups' that drove it.
fn roll_up(groups: &[GroupComparison]) -> (Verdict, Vec<String>) {
    let mut reasons: Vec<String> = Vec::new();
    let verdict = if groups.iter().any(|g| g.verdict == Verdict::Regression) {
        Verdict::Regression
    } else if groups.is_empty() || groups.iter().any(|g| g.verdict == Verdict::Inconclusive) {
        Verdict::Inconclusive
    } else {
        Verdict::Pass
    };
    if groups.is_empty() {
        reasons.push("no step group (kind, batch size) is present on both sides".to_owned());
    }
    for g in groups {
        if g.verdict != Verdict::Pass && (verdict != Verdict::Regression || g.verdict == verdict) {
            reasons.extend(g.reasons.iter().map(|r| format!("{}: {r}", g.label)));
        }
    }
    (verdict, reasons)
}

fn method(policy: &Policy) -> Method {
    Method {
        statistic: "median of per-step samples",
        interval: "percentile bootstrap of the change in medians",
        confidence: policy.confidence,
        resamples: policy.resamples,
        seed: policy.seed,
        min_samples: policy.min_samples,
        context_shift: policy.context_shift,
        new_kernel_share: policy.new_kernel_share,
    }
}
