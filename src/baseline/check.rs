//! What each rule of a policy selects on one side (a baseline, or a report recorded as
//! one): a `[[kernel]]` rule by the kernels its selector names, a `[[category]]` rule by
//! the groups that have that category, a step metric by the groups that sample it.

use crate::baseline::policy::Policy;
use crate::wire::baseline::Baseline;
use crate::wire::gate::Threshold;
use crate::wire::policy::RuleCheck;

/// How many names `detail` lists before "and N more".
const SHOWN: usize = 3;

fn rule(
    kind: &str,
    name: String,
    t: Threshold,
    selects: usize,
    detail: String,
    optional: bool,
) -> RuleCheck {
    RuleCheck {
        kind: kind.to_owned(),
        rule: name,
        rel: t.rel,
        abs: t.abs,
        gate: t.gate,
        selects,
        detail,
        optional,
        dead: selects == 0 && !optional,
    }
}

fn listed(names: &[String]) -> String {
    let mut s = names
        .iter()
        .take(SHOWN)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if names.len() > SHOWN {
        s.push_str(&format!(" and {} more", names.len() - SHOWN));
    }
    s
}

/// A group's label as the gate's tables print it.
pub(crate) fn group_label(g: &crate::wire::baseline::Group) -> String {
    match g.batch_size {
        Some(b) => format!("{} bs={b}", g.step_kind),
        None => g.step_kind.clone(),
    }
}

/// Every rule of `policy`, checked against `side`, in the policy's order: step metrics,
/// then `[[kernel]]` rules, then `[[category]]` rules. Dead (selecting nothing, not
/// allowed to): a `[[kernel]]` rule without `optional` that selects no kernel, and a
/// `[[category]]` rule naming no category `known` has (a typo). A metric without samples
/// (MBU without a model) and a known category absent on this side are said, not dead.
pub fn check(policy: &Policy, side: &Baseline, known: &[&str]) -> Vec<RuleCheck> {
    let groups = &side.samples.groups;
    let mut out = Vec::new();
    for (name, t) in &policy.metrics {
        let with: Vec<String> = groups
            .iter()
            .filter(|g| g.metric_samples(name).is_some_and(|v| !v.is_empty()))
            .map(group_label)
            .collect();
        let mut r = rule("metric", name.clone(), *t, with.len(), listed(&with), true);
        r.optional = false;
        if with.is_empty() {
            r.detail = if name == crate::wire::baseline::metric::MBU {
                "no samples here: MBU needs a model (--model)".to_owned()
            } else if name.starts_with(crate::wire::baseline::metric::CLASS_EXCESS_PREFIX) {
                "no samples here: a class excess needs a model (--model)".to_owned()
            } else {
                "no samples on this side".to_owned()
            };
        }
        out.push(r);
    }
    let mut names: Vec<(&str, &str)> = groups
        .iter()
        .flat_map(|g| &g.kernels)
        .map(|(full, k)| (full.as_str(), k.short_name.as_str()))
        .collect();
    names.sort_unstable();
    names.dedup_by_key(|n| n.0);
    for r in &policy.kernel_rules {
        let hit = r.selector.all(names.iter().copied());
        let shorts: Vec<String> = hit
            .iter()
            .filter_map(|f| names.iter().find(|n| n.0 == *f).map(|n| n.1.to_owned()))
            .collect();
        let t = policy.kernel_threshold_of(r);
        out.push(rule(
            "kernel",
            r.selector.text(),
            t,
            hit.len(),
            listed(&shorts),
            r.optional,
        ));
    }
    for cat in policy.category_rules.keys() {
        let with: Vec<String> = groups
            .iter()
            .filter(|g| {
                g.categories.contains_key(cat) || g.kernels.values().any(|k| &k.category == cat)
            })
            .map(group_label)
            .collect();
        let t = policy.category_threshold(cat);
        let is_known = known.contains(&cat.as_str());
        let mut r = rule("category", cat.clone(), t, with.len(), listed(&with), true);
        r.optional = false;
        r.dead = !is_known;
        if !is_known {
            r.detail = format!("no such category (categories: {})", known.join(", "));
        } else if with.is_empty() {
            r.detail = "no kernel of this category on this side".to_owned();
        }
        out.push(r);
    }
    out
}
