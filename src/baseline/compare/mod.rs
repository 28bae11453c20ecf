//! Baseline against candidate: match groups like for like, judge every metric, kernel and
//! category by the change in its median with a bootstrap interval, and reach one verdict.
//!
//! A change is a regression only when the whole interval of the relative change lies beyond
//! the relative threshold in the worse direction AND the point change is beyond the
//! absolute threshold. Fewer than `min_samples` per side is inconclusive, and so is a
//! baseline side that is not there at all ([`BaselineSide::Unavailable`]).
//!
//! One job per file: [`types`] (what the comparison prints), `identity` (same GPU, same
//! model), `matching` (which groups meet), `judge` (one row), `power` (what its interval could see), `group` (one group's rows
//! and verdict); this file rolls the groups up into one verdict.

mod group;
mod identity;
mod judge;
mod matching;
mod power;
pub mod types;

use crate::wire::gate::{
    Comparison, GroupComparison, Method, NameLabelMap, RuleMatches, SideInfo, Verdict,
};

use crate::baseline::policy::Policy;
use crate::exit::Result;
use crate::timing::labels::NameLabels;
use crate::wire::baseline::{Baseline, Group, SCHEMA_VERSION};

/// What a gate compares the candidate with: stored samples, or nothing, and why. An
/// unavailable side (too few history runs matched) is inconclusive and claims nothing
/// about the candidate's groups; an empty baseline would say none of them is in it.
#[derive(Debug, Clone, Copy)]
pub enum BaselineSide<'a> {
    Samples(&'a Baseline),
    /// The one line that says why there is no baseline.
    Unavailable(&'a str),
}

/// Compare for a gate: operating points that differ in meaning (GPU, model, TP, no step
/// kind in common) are `incomparable`, unless the policy allows comparing them anyway.
pub fn compare(baseline: &Baseline, candidate: &Baseline, policy: &Policy) -> Result<Comparison> {
    compare_inner(baseline, candidate, policy, true)
}

/// Gate the candidate against a baseline side that may be unavailable.
pub fn compare_side(
    baseline: BaselineSide<'_>,
    candidate: &Baseline,
    policy: &Policy,
) -> Result<Comparison> {
    match baseline {
        BaselineSide::Samples(b) => compare(b, candidate, policy),
        BaselineSide::Unavailable(why) => Ok(unavailable(why, candidate, policy)),
    }
}

/// The groups `compare` compared, in the order of its `groups`: the charts of a page
/// take the samples behind each compared group from here rather than matching again.
pub fn compared_pairs<'a>(
    baseline: &'a Baseline,
    candidate: &'a Baseline,
) -> Vec<(&'a Group, &'a Group)> {
    matching::match_groups(baseline, candidate).pairs
}

/// Compare for a plain diff: operating points that differ in meaning are a warning, not a
/// verdict (comparing two GPUs on purpose is a fair question; gating across them is not).
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
    let id = identity::check_identity(baseline, candidate);
    let mut warnings = id.warnings;
    if !id.incomparable.is_empty() {
        if strict && !policy.allow_incomparable {
            return Ok(incomparable(
                id.incomparable,
                id.comparability,
                warnings,
                baseline,
                candidate,
                policy,
            ));
        }
        // A plain diff compares across operating points on purpose; a gate only when
        // asked (--allow-incomparable). Either way the reader is told first.
        warnings.splice(0..0, id.incomparable);
    }
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
    let policy_rules = rule_matches(policy, &[baseline, candidate])?;
    let (gated_metrics, resolved_metrics) = resolved(&groups);
    Ok(Comparison {
        schema_version: SCHEMA_VERSION,
        tool: crate::wire::meta::Tool::current(),
        source: None,
        verdict,
        exit_code: verdict.exit_code(policy.inconclusive_fails),
        inconclusive_fails: policy.inconclusive_fails,
        reasons,
        gated_metrics,
        resolved_metrics,
        warnings,
        comparability: id.comparability,
        baseline: identity::side_info(baseline),
        candidate: identity::side_info(candidate),
        method: method(policy),
        one_sided: matched.one_sided,
        baseline_unavailable: None,
        policy_rules,
        name_labels: shown_labels(&groups),
        groups,
    })
}

/// Labels that tell apart distinct kernels sharing a short name, over every name the
/// comparison can show (both sides, every group: kernel rows, new and vanished kernels,
/// waterfall rows), so one kernel reads the same everywhere.
fn shown_labels(groups: &[GroupComparison]) -> NameLabelMap {
    NameLabelMap(
        NameLabels::new(groups.iter().flat_map(|g| {
            g.kernels
                .iter()
                .map(|k| (k.name.as_str(), k.short_name.as_str()))
                .chain(
                    g.new_kernels
                        .iter()
                        .chain(&g.vanished_kernels)
                        .map(|k| (k.name.as_str(), k.short_name.as_str())),
                )
                .chain(
                    g.explain
                        .waterfall
                        .iter()
                        .map(|r| (r.name.as_str(), r.short_name.as_str())),
                )
        }))
        .into_map(),
    )
}

/// Nothing to compare with: inconclusive, for the reason given, and no group is said to
/// be missing from a side that is not there.
fn unavailable(why: &str, candidate: &Baseline, policy: &Policy) -> Comparison {
    let verdict = Verdict::Inconclusive;
    Comparison {
        schema_version: SCHEMA_VERSION,
        tool: crate::wire::meta::Tool::current(),
        source: None,
        verdict,
        exit_code: verdict.exit_code(policy.inconclusive_fails),
        inconclusive_fails: policy.inconclusive_fails,
        reasons: vec![format!("baseline unavailable: {why}")],
        gated_metrics: 0,
        resolved_metrics: 0,
        warnings: Vec::new(),
        comparability: crate::wire::gate::Comparability::default(),
        baseline: SideInfo {
            gpu_name: None,
            model: None,
            engine: None,
            nsys_version: None,
            source_format: "unavailable".to_owned(),
            created_by: String::new(),
            groups: 0,
            steps: 0,
        },
        candidate: identity::side_info(candidate),
        method: method(policy),
        groups: Vec::new(),
        one_sided: Vec::new(),
        baseline_unavailable: Some(why.to_owned()),
        policy_rules: Vec::new(),
        name_labels: NameLabelMap::default(),
    }
}

/// The operating points differ in meaning: nothing is judged, and the reasons name the
/// fields (docs/gate.md, "Comparable or not").
fn incomparable(
    mut reasons: Vec<String>,
    comparability: crate::wire::gate::Comparability,
    warnings: Vec<String>,
    baseline: &Baseline,
    candidate: &Baseline,
    policy: &Policy,
) -> Comparison {
    let verdict = Verdict::Incomparable;
    reasons.push(
        "nothing was compared: gate against a baseline recorded with the same GPU, model, TP \
         and step kinds (--allow-incomparable compares anyway)"
            .to_owned(),
    );
    Comparison {
        schema_version: SCHEMA_VERSION,
        tool: crate::wire::meta::Tool::current(),
        source: None,
        verdict,
        exit_code: verdict.exit_code(policy.inconclusive_fails),
        inconclusive_fails: policy.inconclusive_fails,
        reasons,
        gated_metrics: 0,
        resolved_metrics: 0,
        warnings,
        comparability,
        baseline: identity::side_info(baseline),
        candidate: identity::side_info(candidate),
        method: method(policy),
        groups: Vec::new(),
        one_sided: Vec::new(),
        baseline_unavailable: None,
        policy_rules: Vec::new(),
        name_labels: NameLabelMap::default(),
    }
}

/// How many kernels of either side each `[[kernel]]` rule selects; a rule that selects
/// none is an input error unless it is `optional` (a typo must not leave a kernel judged
/// by thresholds its policy meant to change, unnoticed).
fn rule_matches(policy: &Policy, sides: &[&Baseline]) -> Result<Vec<RuleMatches>> {
    if policy.kernel_rules.is_empty() {
        return Ok(Vec::new());
    }
    let mut names: Vec<(&str, &str)> = sides
        .iter()
        .flat_map(|b| &b.samples.groups)
        .flat_map(|g| &g.kernels)
        .map(|(full, k)| (full.as_str(), k.short_name.as_str()))
        .collect();
    names.sort_unstable();
    names.dedup_by_key(|n| n.0);
    policy
        .kernel_rules
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let kernels = r.selector.all(names.iter().copied()).len();
            if kernels == 0 && !r.optional {
                let e = r.selector.none_error(names.len());
                return Err(crate::exit::Error::input(format!(
                    "policy [[kernel]] rule {}: {}",
                    i + 1,
                    e.message
                )));
            }
            Ok(RuleMatches {
                selector: r.selector.text(),
                kernels,
                optional: r.optional,
            })
        })
        .collect()
}

/// Gated step-metric rows over every group, and how many of them the samples resolved.
fn resolved(groups: &[GroupComparison]) -> (usize, usize) {
    let gated = groups
        .iter()
        .flat_map(|g| &g.metrics)
        .filter(|m| m.change.gated);
    gated.fold((0, 0), |(n, r), m| {
        let ok = m.change.verdict != crate::wire::gate::RowVerdict::Inconclusive;
        (n + 1, r + usize::from(ok))
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
