//! One group on both sides: is the context like for like, judge its step metrics, kernels
//! and categories, then reach the group's verdict.

use crate::baseline::metrics::Metrics;
use crate::baseline::model::group_label;
use crate::baseline::policy::Policy;
use crate::timing::labels::NameLabels;
use crate::wire::baseline::{metric, Group, KernelSamples};
use crate::wire::gate::{
    CategoryRow, Change, GroupComparison, KernelPresence, KernelRow, MetricRow, RowVerdict,
    Threshold, Verdict,
};
use crate::words::{fmt_rel, metric_name};

use super::judge::{judge, mean, Scratch};
use super::power::{inconclusive_reason, missing};

/// Compare one group present on both sides.
pub(super) fn compare_group(
    b: &Group,
    c: &Group,
    policy: &Policy,
    labels: &NameLabels,
    scratch: &mut Scratch,
) -> GroupComparison {
    let label = b.label();
    let (nb, nc) = (b.steps(), c.steps());
    let ctx = ContextShift::of(b, c, policy);
    let mut notes: Vec<String> = ctx.note(b, c).into_iter().collect();
    let metrics = judge_metrics(b, c, &label, policy, &ctx, scratch);
    notes.extend(launch_mode_note(&metrics));
    notes.extend(unjudged_class_notes(b, c, policy));
    one_sided_metric_notes(b, c, &policy.table, &mut notes);
    let kernels = judge_kernels(b, c, &label, policy, &ctx, scratch);
    let categories = judge_categories(b, c, &label, policy, &ctx, scratch);
    let rows = Rows {
        metrics: &metrics,
        kernels: &kernels,
        categories: &categories,
    };
    let (verdict, reasons) = group_verdict(nb, nc, policy, &ctx, &rows, labels);
    GroupComparison {
        step_kind: b.step_kind.clone(),
        batch_size: b.batch_size,
        label: group_label(&b.step_kind, b.batch_size),
        baseline_steps: nb,
        candidate_steps: nc,
        baseline_mean_context: b.mean_context,
        candidate_mean_context: c.mean_context,
        context_change: ctx.change,
        verdict,
        reasons,
        notes,
        metrics,
        kernels: kernels.both,
        categories,
        new_kernels: kernels.new,
        vanished_kernels: kernels.vanished,
        explain: crate::baseline::waterfall::waterfall(b, c),
    }
}

/// Whether the mean context moved enough that times are not like for like; then only MBU
/// (floor / wall, which normalizes for context) may gate.
struct ContextShift {
    /// Relative move of the mean context, when both sides know it.
    change: Option<f64>,
    /// Beyond the policy's `context_shift`.
    moved: bool,
    /// Both sides carry MBU samples.
    has_mbu: bool,
}

impl ContextShift {
    fn of(b: &Group, c: &Group, policy: &Policy) -> Self {
        let change = match (b.mean_context, c.mean_context) {
            (Some(x), Some(y)) if x > 0.0 => Some(y / x - 1.0),
            _ => None,
        };
        ContextShift {
            change,
            moved: change.is_some_and(|r| r.abs() > policy.context_shift),
            has_mbu: b.metrics.contains_key(metric::MBU) && c.metrics.contains_key(metric::MBU),
        }
    }

    /// Whether a row may gate: under a context shift only MBU may.
    fn allows_gate(&self, is_mbu: bool) -> bool {
        !self.moved || is_mbu
    }

    /// The note that says the context moved, if it did.
    fn note(&self, b: &Group, c: &Group) -> Option<String> {
        let r = self.change.filter(|_| self.moved)?;
        let (x, y) = (b.mean_context.unwrap_or(0.0), c.mean_context.unwrap_or(0.0));
        Some(if self.has_mbu {
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
        })
    }
}

/// Every step metric both sides measure, in reading order.
fn judge_metrics(
    b: &Group,
    c: &Group,
    label: &str,
    policy: &Policy,
    ctx: &ContextShift,
    scratch: &mut Scratch,
) -> Vec<MetricRow> {
    // Class excess is judged only where the policy names it: every priced class in every
    // table would bury the step metrics.
    let mut names: Vec<&String> = b
        .metrics
        .keys()
        .filter(|k| c.metrics.contains_key(*k))
        .chain(policy.metrics.keys().filter(|k| {
            k.starts_with(metric::CLASS_EXCESS_PREFIX)
                && b.metric_samples(k).is_some()
                && c.metric_samples(k).is_some()
        }))
        .collect();
    // The table's order, then any others by name.
    names.sort_by_key(|n| (policy.table.rank(n), n.as_str()));
    let mut metrics = Vec::with_capacity(names.len());
    for name in names {
        let (Some(bs), Some(cs)) = (b.metric_samples(name), c.metric_samples(name)) else {
            continue;
        };
        let mut ch = judge(
            bs,
            cs,
            policy.metric_threshold(name),
            policy.table.higher_is_worse(name),
            policy,
            &|| format!("{label}/metric:{name}"),
            true,
            scratch,
        );
        ch.gated = ch.gated && ctx.allows_gate(name == metric::MBU);
        let (label, unit) = policy.table.shown(name);
        metrics.push(MetricRow {
            metric: name.clone(),
            change: ch,
            label,
            unit,
        });
    }
    metrics
}

/// Launches per step that moved by an order of magnitude or more: the likely cause is a
/// switch between CUDA-graph replay (one launch per graph) and eager launches (one per
/// kernel). A heuristic, and said as one.
const LAUNCH_MODE_RATIO: f64 = 10.0;

fn launch_mode_note(metrics: &[MetricRow]) -> Option<String> {
    let ch = &metrics
        .iter()
        .find(|m| m.metric == metric::LAUNCHES)?
        .change;
    let (b, c) = (ch.baseline_median?, ch.candidate_median?);
    if !(b > 0.0 && c > 0.0) {
        return None;
    }
    let moved = format!(
        "launches per step {} → {}",
        crate::text::fmt_int(b.round() as i64),
        crate::text::fmt_int(c.round() as i64)
    );
    if c >= b * LAUNCH_MODE_RATIO {
        Some(format!(
            "{moved}: the candidate likely runs eager where the baseline replays CUDA graphs \
             (CUDA graphs off: vLLM --enforce-eager, SGLang --disable-cuda-graph) (heuristic)"
        ))
    } else if b >= c * LAUNCH_MODE_RATIO {
        Some(format!(
            "{moved}: the candidate likely replays CUDA graphs where the baseline ran eager \
             (heuristic)"
        ))
    } else {
        None
    }
}

/// A note for each class excess the policy gates that a side has no samples of (no model,
/// a class priced on only some steps, a history of runs exported without a model): a
/// gated metric that could not be judged is said, never passed over.
fn unjudged_class_notes(b: &Group, c: &Group, policy: &Policy) -> Vec<String> {
    policy
        .metrics
        .iter()
        .filter(|(k, t)| t.gate && k.starts_with(metric::CLASS_EXCESS_PREFIX))
        .filter_map(|(k, _)| {
            let missing: Vec<&str> = [("baseline", b), ("candidate", c)]
                .into_iter()
                .filter(|(_, g)| g.metric_samples(k).is_none())
                .map(|(side, _)| side)
                .collect();
            (!missing.is_empty()).then(|| {
                format!(
                    "{} is gated by the policy but the {} has no samples of it (it needs \
                     --model on both sides, for a history runs exported with --model, and \
                     the class priced on every step): not compared",
                    metric_name(k),
                    missing.join(" and the ")
                )
            })
        })
        .collect()
}

/// A note for each metric measured on one side only.
fn one_sided_metric_notes(b: &Group, c: &Group, table: &Metrics, notes: &mut Vec<String>) {
    for (side, g, other) in [("baseline", b, c), ("candidate", c, b)] {
        for k in g.metrics.keys() {
            if !other.metrics.contains_key(k) {
                notes.push(format!(
                    "{} is measured in the {side} only: not compared",
                    table.label(k)
                ));
            }
        }
    }
}

/// Kernels on both sides (judged), and those on one side only above the new-kernel share.
struct KernelRows {
    /// Largest increase per step first.
    both: Vec<KernelRow>,
    new: Vec<KernelPresence>,
    vanished: Vec<KernelPresence>,
}

fn judge_kernels(
    b: &Group,
    c: &Group,
    label: &str,
    policy: &Policy,
    ctx: &ContextShift,
    scratch: &mut Scratch,
) -> KernelRows {
    let mut both = Vec::new();
    let mut new = Vec::new();
    let mut vanished = Vec::new();
    let busy_b = b.metrics.get(metric::BUSY_NS).map(|v| mean(v));
    let busy_c = c.metrics.get(metric::BUSY_NS).map(|v| mean(v));
    for (name, kb) in &b.kernels {
        let t = policy.kernel_threshold(name, &kb.short_name, &kb.category);
        match c.kernels.get(name) {
            Some(kc) => {
                let ch = judge_time(
                    (&kb.exclusive_ns, &kc.exclusive_ns),
                    t,
                    policy,
                    ctx,
                    &|| format!("{label}/kernel:{name}"),
                    scratch,
                );
                both.push(KernelRow {
                    name: name.clone(),
                    short_name: kb.short_name.clone(),
                    category: kb.category.clone(),
                    change: ch,
                });
            }
            None => {
                if let Some(p) = presence(name, kb, b, busy_b, t, policy, false) {
                    vanished.push(p);
                }
            }
        }
    }
    for (name, kc) in &c.kernels {
        if !b.kernels.contains_key(name) {
            let t = policy.kernel_threshold(name, &kc.short_name, &kc.category);
            let gates = policy.new_kernels_fail && t.gate && ctx.allows_gate(false);
            if let Some(p) = presence(name, kc, c, busy_c, t, policy, gates) {
                new.push(p);
            }
        }
    }
    // Largest increase per step first; kernels without a change (no samples) last.
    both.sort_by(|x, y| {
        let a = x.change.change.unwrap_or(f64::NEG_INFINITY);
        let b = y.change.change.unwrap_or(f64::NEG_INFINITY);
        b.total_cmp(&a).then_with(|| x.name.cmp(&y.name))
    });
    let by_share = |x: &KernelPresence, y: &KernelPresence| {
        y.mean_ns_per_step
            .total_cmp(&x.mean_ns_per_step)
            .then_with(|| x.name.cmp(&y.name))
    };
    new.sort_by(by_share);
    vanished.sort_by(by_share);
    KernelRows {
        both,
        new,
        vanished,
    }
}

/// Judge a time per step (a kernel's or a category's exclusive ns): higher is worse, no
/// interval unless the point change crosses a threshold, and no gating under a context
/// shift (only MBU may gate then).
fn judge_time(
    (base, cand): (&[f64], &[f64]),
    threshold: Threshold,
    policy: &Policy,
    ctx: &ContextShift,
    seed_key: &dyn Fn() -> String,
    scratch: &mut Scratch,
) -> Change {
    let mut ch = judge(
        base, cand, threshold, true, policy, seed_key, false, scratch,
    );
    ch.gated = ch.gated && ctx.allows_gate(false);
    ch
}

/// Every category both sides have.
fn judge_categories(
    b: &Group,
    c: &Group,
    label: &str,
    policy: &Policy,
    ctx: &ContextShift,
    scratch: &mut Scratch,
) -> Vec<CategoryRow> {
    let mut categories = Vec::new();
    for (cat, vb) in &b.categories {
        if let Some(vc) = c.categories.get(cat) {
            let ch = judge_time(
                (vb, vc),
                policy.category_threshold(cat),
                policy,
                ctx,
                &|| format!("{label}/category:{cat}"),
                scratch,
            );
            categories.push(CategoryRow {
                category: cat.clone(),
                change: ch,
            });
        }
    }
    categories
}

/// The group's verdict and the lines that say why: too few steps is inconclusive whatever
/// the rows say; else any gated regression (or gated new kernel) fails; else a context
/// shift without MBU, or a gated row without enough samples, is inconclusive.
/// A group's judged rows.
struct Rows<'a> {
    metrics: &'a [MetricRow],
    kernels: &'a KernelRows,
    categories: &'a [CategoryRow],
}

fn group_verdict(
    nb: usize,
    nc: usize,
    policy: &Policy,
    ctx: &ContextShift,
    rows: &Rows<'_>,
    labels: &NameLabels,
) -> (Verdict, Vec<String>) {
    let Rows {
        metrics,
        kernels,
        categories,
    } = *rows;
    let too_few = nb < policy.min_samples || nc < policy.min_samples;
    if too_few {
        let reason = format!(
            "{nb} baseline and {nc} candidate steps; at least {} per side are needed: {}",
            policy.min_samples,
            missing(nb, nc, policy.min_samples, "steps")
        );
        return (Verdict::Inconclusive, vec![reason]);
    }
    let regress = |ch: &Change| ch.gated && ch.verdict == RowVerdict::Regression;
    let mut reasons = Vec::new();
    for m in metrics {
        if regress(&m.change) {
            reasons.push(format!("{} {}", m.label, fmt_rel(m.change.change_rel)));
        }
    }
    for k in &kernels.both {
        if regress(&k.change) {
            reasons.push(format!(
                "kernel {} {} per step",
                labels.get(&k.name, &k.short_name),
                fmt_rel(k.change.change_rel)
            ));
        }
    }
    for cat in categories {
        if regress(&cat.change) {
            reasons.push(format!(
                "category {} {} per step",
                cat.category,
                fmt_rel(cat.change.change_rel)
            ));
        }
    }
    for k in kernels.new.iter().filter(|k| k.gated) {
        reasons.push(format!(
            "new kernel {} ({:.1}% of step busy time)",
            labels.get(&k.name, &k.short_name),
            k.share_of_busy * 100.0
        ));
    }
    // Step metrics say why each is inconclusive (too few samples, or too noisy to have
    // seen the threshold); kernels and categories only ever lack samples, and say so once.
    let inconclusive: Vec<String> = metrics
        .iter()
        .filter(|m| m.change.gated && m.change.verdict == RowVerdict::Inconclusive)
        .map(|m| inconclusive_reason(&m.label, &m.change, policy))
        .collect();
    let other_inconclusive = kernels
        .both
        .iter()
        .map(|k| &k.change)
        .chain(categories.iter().map(|c| &c.change))
        .any(|ch| ch.gated && ch.verdict == RowVerdict::Inconclusive);
    let verdict = if !reasons.is_empty() {
        Verdict::Regression
    } else if ctx.moved && !ctx.has_mbu {
        reasons.push("mean context moved and no MBU to judge by (give --model)".to_owned());
        Verdict::Inconclusive
    } else if !inconclusive.is_empty() || other_inconclusive {
        reasons.extend(inconclusive);
        if reasons.is_empty() {
            reasons.push(format!(
                "a gated kernel or category has fewer than {} samples on a side",
                policy.min_samples
            ));
        }
        Verdict::Inconclusive
    } else {
        Verdict::Pass
    };
    (verdict, reasons)
}

/// A one-sided kernel, if its mean time per step is above both the share of busy time and
/// its absolute threshold.
fn presence(
    name: &str,
    k: &KernelSamples,
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
