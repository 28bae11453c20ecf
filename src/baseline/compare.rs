//! Baseline against candidate: match groups like for like, judge every metric, kernel and
//! category by the change in its median with a bootstrap interval, and reach one verdict.
//!
//! A change is a regression only when the whole interval of the relative change lies beyond
//! the relative threshold in the worse direction AND the point change is beyond the
//! absolute threshold (issue 5). Fewer than `min_samples` per side is inconclusive.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::baseline::model::{group_label, metric, Baseline, BaselineMeta, Group, SCHEMA_VERSION};
use crate::baseline::policy::{higher_is_worse, Policy, Threshold};
use crate::baseline::stats::{median_in_place, median_shift_interval, seed_for};
use crate::exit::{self, Error, Result};

/// The outcome of a whole comparison or of one group.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Pass,
    Regression,
    Inconclusive,
}

/// What the statistics say about one row, before asking whether it gates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RowVerdict {
    /// Whole interval beyond the threshold in the worse direction.
    Regression,
    /// Whole interval beyond the threshold in the better direction.
    Improvement,
    /// Within threshold or within noise.
    Ok,
    /// Too few samples to say.
    Inconclusive,
}

/// One judged quantity: medians (derived) of the per-step samples and their change.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Change {
    pub baseline_median: Option<f64>,
    pub candidate_median: Option<f64>,
    pub baseline_samples: usize,
    pub candidate_samples: usize,
    /// candidate − baseline median.
    pub change: Option<f64>,
    /// candidate / baseline − 1; None when the baseline median is not positive.
    pub change_rel: Option<f64>,
    /// Bootstrap interval of the absolute change; computed only where the point change
    /// crosses the thresholds (and always for step metrics).
    pub interval: Option<[f64; 2]>,
    /// Bootstrap interval of the relative change.
    pub interval_rel: Option<[f64; 2]>,
    pub threshold: Threshold,
    pub higher_is_worse: bool,
    pub verdict: RowVerdict,
    /// Whether this row can fail the gate (policy `gate`, and not overruled by a context
    /// shift).
    pub gated: bool,
}

/// A step metric's row.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MetricRow {
    pub metric: String,
    #[serde(flatten)]
    pub change: Change,
}

/// A kernel's exclusive ns per step.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KernelRow {
    pub name: String,
    pub short_name: String,
    pub category: String,
    #[serde(flatten)]
    pub change: Change,
}

/// A category's ns per step.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CategoryRow {
    pub category: String,
    #[serde(flatten)]
    pub change: Change,
}

/// A kernel seen on one side of a group only, above the new-kernel share.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KernelPresence {
    pub name: String,
    pub short_name: String,
    pub category: String,
    /// Mean exclusive ns per step on the side that has it (derived).
    pub mean_ns_per_step: f64,
    /// That mean over the side's mean busy ns per step (derived).
    pub share_of_busy: f64,
    /// Whether it fails the gate (new kernels only, per policy).
    pub gated: bool,
}

/// One (step kind, batch size) group present on both sides.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GroupComparison {
    pub step_kind: String,
    pub batch_size: Option<u32>,
    pub label: String,
    pub baseline_steps: usize,
    pub candidate_steps: usize,
    pub baseline_mean_context: Option<f64>,
    pub candidate_mean_context: Option<f64>,
    /// Relative move of the mean context, when both sides know it.
    pub context_change: Option<f64>,
    pub verdict: Verdict,
    /// Why the verdict is what it is, one line each.
    pub reasons: Vec<String>,
    pub notes: Vec<String>,
    pub metrics: Vec<MetricRow>,
    /// Kernels on both sides, the largest increase per step first.
    pub kernels: Vec<KernelRow>,
    pub categories: Vec<CategoryRow>,
    pub new_kernels: Vec<KernelPresence>,
    pub vanished_kernels: Vec<KernelPresence>,
    /// The exact decomposition of the mean wall change (`waterfall`, `waterfall_check`, …).
    #[serde(flatten)]
    pub explain: crate::baseline::waterfall::Waterfall,
}

/// Which side a one-sided group is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Side {
    Baseline,
    Candidate,
}

/// A group present on one side only: reported, not compared.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OneSided {
    pub step_kind: String,
    pub batch_size: Option<u32>,
    pub label: String,
    pub side: Side,
    pub steps: usize,
}

/// What a side is.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SideInfo {
    pub gpu_name: Option<String>,
    pub model: Option<String>,
    pub engine: Option<String>,
    pub nsys_version: Option<String>,
    pub source_format: String,
    pub created_by: String,
    pub groups: usize,
    pub steps: usize,
}

/// How the numbers were derived, so the report can say it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Method {
    pub statistic: &'static str,
    pub interval: &'static str,
    pub confidence: f64,
    pub resamples: usize,
    pub seed: u64,
    pub min_samples: usize,
    pub context_shift: f64,
    pub new_kernel_share: f64,
}

/// The full comparison (the JSON `gate --format json` and `diff --format json` print).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    pub schema_version: u32,
    pub verdict: Verdict,
    /// The process exit code this verdict maps to.
    pub exit_code: u8,
    pub inconclusive_fails: bool,
    /// What drove the verdict, one line each (empty on a clean pass).
    pub reasons: Vec<String>,
    pub warnings: Vec<String>,
    pub baseline: SideInfo,
    pub candidate: SideInfo,
    pub method: Method,
    pub groups: Vec<GroupComparison>,
    pub one_sided: Vec<OneSided>,
}

impl Verdict {
    /// The exit code of `crate::exit` for this verdict.
    pub fn exit_code(self, inconclusive_fails: bool) -> u8 {
        match self {
            Verdict::Pass => exit::OK,
            Verdict::Regression => exit::REGRESSION,
            Verdict::Inconclusive if inconclusive_fails => exit::REGRESSION,
            Verdict::Inconclusive => exit::INCONCLUSIVE,
        }
    }
}

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

fn side_info(b: &Baseline) -> SideInfo {
    let m = &b.meta;
    SideInfo {
        gpu_name: m.gpu_name.clone(),
        model: m.model.clone(),
        engine: m.engine.clone(),
        nsys_version: m.nsys_version.clone(),
        source_format: m.source_format.clone(),
        created_by: m.created_by.clone(),
        groups: b.samples.groups.len(),
        steps: b.samples.groups.iter().map(Group::steps).sum(),
    }
}

/// The identity checks: same GPU, same model, or say why not.
fn check_identity(b: &BaselineMeta, c: &BaselineMeta, strict: bool) -> Result<Vec<String>> {
    let mut warnings = Vec::new();
    match (&b.gpu_name, &c.gpu_name) {
        (Some(x), Some(y)) if x != y => {
            let msg = format!("GPU mismatch: baseline ran on {x:?}, candidate on {y:?}");
            if strict {
                return Err(Error::input(format!(
                    "{msg}; gate against a baseline recorded on the same GPU (keep one per GPU)"
                )));
            }
            warnings.push(msg);
        }
        (None, Some(_)) | (Some(_), None) | (None, None) => {
            let which = match (&b.gpu_name, &c.gpu_name) {
                (None, None) => "neither side names its GPU",
                (None, _) => "the baseline names no GPU",
                _ => "the candidate names no GPU",
            };
            warnings.push(format!(
                "{which}: cannot check that both ran on the same GPU (pass --gpu when recording)"
            ));
        }
        _ => {}
    }
    match (&b.model, &c.model) {
        (Some(x), Some(y)) if x != y => {
            let msg = format!("model mismatch: baseline priced for {x:?}, candidate for {y:?}");
            if strict {
                return Err(Error::input(format!(
                    "{msg}; gate against a baseline recorded for the same model"
                )));
            }
            warnings.push(msg);
        }
        (Some(_), None) | (None, Some(_)) => warnings.push(
            "a model was given on one side only: MBU is not compared (give --model to both)"
                .to_owned(),
        ),
        _ => {}
    }
    Ok(warnings)
}

fn compare_inner(
    baseline: &Baseline,
    candidate: &Baseline,
    policy: &Policy,
    strict: bool,
) -> Result<Comparison> {
    let warnings = check_identity(&baseline.meta, &candidate.meta, strict)?;
    type Key<'a> = (&'a str, Option<u32>);
    let mut base: BTreeMap<Key, &Group> = BTreeMap::new();
    for g in &baseline.samples.groups {
        base.insert((g.step_kind.as_str(), g.batch_size), g);
    }
    let mut cand: BTreeMap<Key, &Group> = BTreeMap::new();
    for g in &candidate.samples.groups {
        cand.insert((g.step_kind.as_str(), g.batch_size), g);
    }
    let mut scratch = Scratch::default();
    let mut groups = Vec::new();
    let mut one_sided = Vec::new();
    for (key, b) in &base {
        match cand.get(key) {
            Some(c) => groups.push(compare_group(b, c, policy, &mut scratch)),
            None => one_sided.push(one_side(b, Side::Baseline)),
        }
    }
    for (key, c) in &cand {
        if !base.contains_key(key) {
            one_sided.push(one_side(c, Side::Candidate));
        }
    }
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
    for g in &groups {
        if g.verdict != Verdict::Pass && (verdict != Verdict::Regression || g.verdict == verdict) {
            reasons.extend(g.reasons.iter().map(|r| format!("{}: {r}", g.label)));
        }
    }
    Ok(Comparison {
        schema_version: SCHEMA_VERSION,
        verdict,
        exit_code: verdict.exit_code(policy.inconclusive_fails),
        inconclusive_fails: policy.inconclusive_fails,
        reasons,
        warnings,
        baseline: side_info(baseline),
        candidate: side_info(candidate),
        method: Method {
            statistic: "median of per-step samples",
            interval: "percentile bootstrap of the change in medians",
            confidence: policy.confidence,
            resamples: policy.resamples,
            seed: policy.seed,
            min_samples: policy.min_samples,
            context_shift: policy.context_shift,
            new_kernel_share: policy.new_kernel_share,
        },
        groups,
        one_sided,
    })
}

fn one_side(g: &Group, side: Side) -> OneSided {
    OneSided {
        step_kind: g.step_kind.clone(),
        batch_size: g.batch_size,
        label: g.label(),
        side,
        steps: g.steps(),
    }
}

/// Reused buffers: judging 400 kernels must not allocate per kernel.
#[derive(Default)]
struct Scratch {
    b: Vec<f64>,
    c: Vec<f64>,
}

/// Step metrics in reading order, then any others by name.
const METRIC_ORDER: [&str; 7] = [
    metric::WALL_NS,
    metric::PERIOD_NS,
    metric::BUSY_NS,
    metric::GAP_NS,
    metric::GAP_FRACTION,
    metric::LAUNCHES,
    metric::MBU,
];

fn metric_rank(name: &str) -> usize {
    METRIC_ORDER
        .iter()
        .position(|m| *m == name)
        .unwrap_or(METRIC_ORDER.len())
}

/// Judge one pair of samples. `want_interval`: compute the interval even when the point
/// change stays inside the thresholds (for the few step metrics; kernels skip it, since an
/// interval cannot lie beyond a threshold its own point estimate does not cross, up to
/// bootstrap discreteness).
#[allow(clippy::too_many_arguments)]
fn judge(
    base: &[f64],
    cand: &[f64],
    threshold: Threshold,
    higher_worse: bool,
    policy: &Policy,
    seed_key: &dyn Fn() -> String,
    want_interval: bool,
    scratch: &mut Scratch,
) -> Change {
    scratch.b.clear();
    scratch.b.extend_from_slice(base);
    scratch.c.clear();
    scratch.c.extend_from_slice(cand);
    let bm = median_in_place(&mut scratch.b);
    let cm = median_in_place(&mut scratch.c);
    let mut out = Change {
        baseline_median: bm,
        candidate_median: cm,
        baseline_samples: base.len(),
        candidate_samples: cand.len(),
        change: None,
        change_rel: None,
        interval: None,
        interval_rel: None,
        threshold,
        higher_is_worse: higher_worse,
        verdict: RowVerdict::Inconclusive,
        gated: threshold.gate,
    };
    let (Some(bm), Some(cm)) = (bm, cm) else {
        return out;
    };
    let change = cm - bm;
    let rel = (bm > 0.0).then(|| cm / bm - 1.0);
    out.change = Some(change);
    out.change_rel = rel;
    if base.len() < policy.min_samples || cand.len() < policy.min_samples {
        return out;
    }
    out.verdict = RowVerdict::Ok;
    let crosses = change.abs() > threshold.abs && rel.is_none_or(|r| r.abs() > threshold.rel);
    if !(crosses || want_interval) {
        return out;
    }
    scratch.b.sort_unstable_by(f64::total_cmp);
    scratch.c.sort_unstable_by(f64::total_cmp);
    let iv = median_shift_interval(
        &scratch.b,
        &scratch.c,
        policy.resamples,
        policy.confidence,
        seed_for(policy.seed, &seed_key()),
    );
    out.interval = Some([iv.abs.0, iv.abs.1]);
    out.interval_rel = iv.rel.map(|(a, b)| [a, b]);
    // Orient so that "worse" is positive.
    let s = if higher_worse { 1.0 } else { -1.0 };
    let abs_beyond = |sign: f64| sign * s * change > threshold.abs;
    let whole_beyond = |sign: f64| {
        // sign = +1: worse side; −1: better side.
        let (lo, hi, t) = match iv.rel {
            Some((lo, hi)) => (lo, hi, threshold.rel),
            // No ratio (baseline median 0): the absolute interval must clear `abs`.
            None => (iv.abs.0, iv.abs.1, threshold.abs),
        };
        let (lo, hi) = if sign * s > 0.0 { (lo, hi) } else { (-hi, -lo) };
        lo > t && hi >= lo
    };
    out.verdict = if abs_beyond(1.0) && whole_beyond(1.0) {
        RowVerdict::Regression
    } else if abs_beyond(-1.0) && whole_beyond(-1.0) {
        RowVerdict::Improvement
    } else {
        RowVerdict::Ok
    };
    out
}

fn mean(xs: &[f64]) -> f64 {
    if xs.is_empty() {
        0.0
    } else {
        xs.iter().sum::<f64>() / xs.len() as f64
    }
}

fn fmt_rel(r: Option<f64>) -> String {
    match r {
        Some(r) => format!("{:+.1}%", r * 100.0),
        None => "from 0".to_owned(),
    }
}

fn compare_group(b: &Group, c: &Group, policy: &Policy, scratch: &mut Scratch) -> GroupComparison {
    let label = b.label();
    let (nb, nc) = (b.steps(), c.steps());
    let mut notes = Vec::new();
    let mut reasons = Vec::new();
    let context_change = match (b.mean_context, c.mean_context) {
        (Some(x), Some(y)) if x > 0.0 => Some(y / x - 1.0),
        _ => None,
    };
    let context_moved = context_change.is_some_and(|r| r.abs() > policy.context_shift);
    let has_mbu = b.metrics.contains_key(metric::MBU) && c.metrics.contains_key(metric::MBU);
    if let (true, Some(r)) = (context_moved, context_change) {
        let (x, y) = (b.mean_context.unwrap_or(0.0), c.mean_context.unwrap_or(0.0));
        notes.push(if has_mbu {
            format!(
                "mean context moved {:+.1}% ({x:.0} → {y:.0} tokens): times are not like for \
                 like, so MBU (floor / wall) carries the verdict for this group",
                r * 100.0
            )
        } else {
            format!(
                "mean context moved {:+.1}% ({x:.0} → {y:.0} tokens): times are not like for \
                 like and no MBU to judge by; give --model so the floor-normalized MBU can",
                r * 100.0
            )
        });
    }
    // Under a context shift only MBU may gate.
    let gate_override = |name_is_mbu: bool| !context_moved || name_is_mbu;

    let mut names: Vec<&String> = b
        .metrics
        .keys()
        .filter(|k| c.metrics.contains_key(*k))
        .collect();
    names.sort_by_key(|n| (metric_rank(n), n.as_str()));
    let mut metrics = Vec::new();
    for name in names {
        let t = policy
            .metrics
            .get(name.as_str())
            .copied()
            .unwrap_or(Threshold {
                rel: 0.03,
                abs: 0.0,
                gate: false,
            });
        let mut ch = judge(
            &b.metrics[name],
            &c.metrics[name],
            t,
            higher_is_worse(name),
            policy,
            &|| format!("{label}/metric:{name}"),
            true,
            scratch,
        );
        ch.gated = ch.gated && gate_override(name == metric::MBU);
        metrics.push(MetricRow {
            metric: name.clone(),
            change: ch,
        });
    }
    for (side, g, other) in [("baseline", b, c), ("candidate", c, b)] {
        for k in g.metrics.keys() {
            if !other.metrics.contains_key(k) {
                notes.push(format!("{k} is measured in the {side} only: not compared"));
            }
        }
    }

    let mut kernels = Vec::new();
    let mut new_kernels = Vec::new();
    let mut vanished_kernels = Vec::new();
    let busy_b = b.metrics.get(metric::BUSY_NS).map(|v| mean(v));
    let busy_c = c.metrics.get(metric::BUSY_NS).map(|v| mean(v));
    for (name, kb) in &b.kernels {
        let t = policy.kernel_threshold(name, &kb.short_name, &kb.category);
        match c.kernels.get(name) {
            Some(kc) => {
                let mut ch = judge(
                    &kb.exclusive_ns,
                    &kc.exclusive_ns,
                    t,
                    true,
                    policy,
                    &|| format!("{label}/kernel:{name}"),
                    false,
                    scratch,
                );
                ch.gated = ch.gated && gate_override(false);
                kernels.push(KernelRow {
                    name: name.clone(),
                    short_name: kb.short_name.clone(),
                    category: kb.category.clone(),
                    change: ch,
                });
            }
            None => {
                if let Some(p) = presence(name, kb, b, busy_b, t, policy, false) {
                    vanished_kernels.push(p);
                }
            }
        }
    }
    for (name, kc) in &c.kernels {
        if !b.kernels.contains_key(name) {
            let t = policy.kernel_threshold(name, &kc.short_name, &kc.category);
            let gates = policy.new_kernels_fail && t.gate && gate_override(false);
            if let Some(p) = presence(name, kc, c, busy_c, t, policy, gates) {
                new_kernels.push(p);
            }
        }
    }
    // Largest increase per step first; kernels without a change (no samples) last.
    kernels.sort_by(|x, y| {
        let a = x.change.change.unwrap_or(f64::NEG_INFINITY);
        let b = y.change.change.unwrap_or(f64::NEG_INFINITY);
        b.total_cmp(&a).then_with(|| x.name.cmp(&y.name))
    });
    let by_share = |x: &KernelPresence, y: &KernelPresence| {
        y.mean_ns_per_step
            .total_cmp(&x.mean_ns_per_step)
            .then_with(|| x.name.cmp(&y.name))
    };
    new_kernels.sort_by(by_share);
    vanished_kernels.sort_by(by_share);

    let mut categories = Vec::new();
    for (cat, vb) in &b.categories {
        if let Some(vc) = c.categories.get(cat) {
            let t = policy.category_threshold(cat);
            let mut ch = judge(
                vb,
                vc,
                t,
                true,
                policy,
                &|| format!("{label}/category:{cat}"),
                false,
                scratch,
            );
            ch.gated = ch.gated && gate_override(false);
            categories.push(CategoryRow {
                category: cat.clone(),
                change: ch,
            });
        }
    }

    // The verdict.
    let too_few = nb < policy.min_samples || nc < policy.min_samples;
    let regress = |ch: &Change| ch.gated && ch.verdict == RowVerdict::Regression;
    for m in &metrics {
        if regress(&m.change) {
            reasons.push(format!("{} {}", m.metric, fmt_rel(m.change.change_rel)));
        }
    }
    for k in &kernels {
        if regress(&k.change) {
            reasons.push(format!(
                "kernel {} {} per step",
                k.short_name,
                fmt_rel(k.change.change_rel)
            ));
        }
    }
    for cat in &categories {
        if regress(&cat.change) {
            reasons.push(format!(
                "category {} {} per step",
                cat.category,
                fmt_rel(cat.change.change_rel)
            ));
        }
    }
    if !too_few {
        for k in new_kernels.iter().filter(|k| k.gated) {
            reasons.push(format!(
                "new kernel {} ({:.1}% of step busy time)",
                k.short_name,
                k.share_of_busy * 100.0
            ));
        }
    }
    let any_gated_inconclusive = metrics
        .iter()
        .map(|m| &m.change)
        .chain(kernels.iter().map(|k| &k.change))
        .chain(categories.iter().map(|c| &c.change))
        .any(|ch| ch.gated && ch.verdict == RowVerdict::Inconclusive);
    let verdict = if too_few {
        reasons.clear();
        reasons.push(format!(
            "{nb} baseline and {nc} candidate steps; at least {} per side are needed",
            policy.min_samples
        ));
        Verdict::Inconclusive
    } else if !reasons.is_empty() {
        Verdict::Regression
    } else if context_moved && !has_mbu {
        reasons.push("mean context moved and no MBU to judge by (give --model)".to_owned());
        Verdict::Inconclusive
    } else if any_gated_inconclusive {
        reasons.push(format!(
            "a gated metric has fewer than {} samples on a side",
            policy.min_samples
        ));
        Verdict::Inconclusive
    } else {
        Verdict::Pass
    };
    GroupComparison {
        step_kind: b.step_kind.clone(),
        batch_size: b.batch_size,
        label: group_label(&b.step_kind, b.batch_size),
        baseline_steps: nb,
        candidate_steps: nc,
        baseline_mean_context: b.mean_context,
        candidate_mean_context: c.mean_context,
        context_change,
        verdict,
        reasons,
        notes,
        metrics,
        kernels,
        categories,
        new_kernels,
        vanished_kernels,
        explain: crate::baseline::waterfall::waterfall(b, c),
    }
}

/// A one-sided kernel, if its mean time per step is above both the share of busy time and
/// its absolute threshold.
fn presence(
    name: &str,
    k: &crate::baseline::model::KernelSamples,
    g: &Group,
    busy_mean: Option<f64>,
    t: Threshold,
    policy: &Policy,
    gated: bool,
) -> Option<KernelPresence> {
    let m = mean(&k.exclusive_ns);
    // Without busy samples, the sum of all kernels' mean exclusive time is the busy time
    // (exclusive times partition the busy union).
    let busy = busy_mean.unwrap_or_else(|| g.kernels.values().map(|k| mean(&k.exclusive_ns)).sum());
    let share = if busy > 0.0 { m / busy } else { 0.0 };
    (share > policy.new_kernel_share && m > t.abs).then(|| KernelPresence {
        name: name.to_owned(),
        short_name: k.short_name.clone(),
        category: k.category.clone(),
        mean_ns_per_step: m,
        share_of_busy: share,
        gated,
    })
}
