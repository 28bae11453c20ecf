//! The one door from found steps to a [`Baseline`]: per-step samples grouped by step kind
//! and batch size, with the kernels and categories of every step.

use std::collections::{BTreeMap, BTreeSet};

use crate::baseline::model::{metric, Baseline, BaselineMeta, Group, KernelSamples, SampleSet};
use crate::timing::steps::{Step, StepsReport};

/// Group key: (kind, requests per step). An inferred kind keys as `decode (inferred)`,
/// so a later exact marker never silently matches a guess.
type Key = (String, Option<u32>);

fn key(s: &Step) -> Key {
    let batch = s
        .composition
        .as_ref()
        .and_then(|c| c.requests)
        .and_then(|r| u32::try_from(r).ok());
    (s.kind_label().to_string(), batch)
}

/// Samples of every step with GPU work, grouped so that only like steps are compared.
/// Kernel and category vectors hold one value per step (0 where absent).
pub fn samples_from_steps(report: &StepsReport, meta: BaselineMeta) -> Baseline {
    let mut by: BTreeMap<Key, Vec<&Step>> = BTreeMap::new();
    for s in report.steps.iter().filter(|s| s.wall_ns.is_some()) {
        by.entry(key(s)).or_default().push(s);
    }
    let mut groups = Vec::with_capacity(by.len());
    for ((kind, batch), steps) in by {
        let mut g = Group::new(kind, batch);
        let n = steps.len();
        let ctx: Vec<f64> = steps
            .iter()
            .filter_map(|s| s.composition.as_ref().and_then(|c| c.mean_context()))
            .collect();
        if ctx.len() == n && n > 0 {
            g.mean_context = Some(ctx.iter().sum::<f64>() / n as f64);
        }
        let mut push = |name: &str, v: f64| g.metrics.entry(name.to_owned()).or_default().push(v);
        for s in &steps {
            let wall = s.wall_ns.unwrap_or(0) as f64;
            push(metric::WALL_NS, wall);
            if let Some(p) = s.period_ns {
                push(metric::PERIOD_NS, p as f64);
            }
            push(metric::BUSY_NS, s.busy_ns as f64);
            let gap = s.gap_ns.unwrap_or(0) as f64;
            push(metric::GAP_NS, gap);
            push(
                metric::GAP_FRACTION,
                if wall > 0.0 { gap / wall } else { 0.0 },
            );
            push(metric::LAUNCHES, s.launches as f64);
            // Below its floor a step has no MBU: the floor is wrong, not a result.
            let floor = s.attribution.as_ref().and_then(|a| a.floor.as_ref());
            if let Some(f) = floor.filter(|f| !f.below_floor) {
                push(metric::MBU, f.mbu);
            }
        }
        // A metric present on only some steps (MBU where a floor exists) is dropped rather
        // than compared over a different set of steps.
        g.metrics
            .retain(|k, v| k == metric::PERIOD_NS || v.len() == n);
        for (i, s) in steps.iter().enumerate() {
            for k in &s.all_kernels {
                let e = g
                    .kernels
                    .entry(k.name.to_string())
                    .or_insert_with(|| KernelSamples {
                        short_name: k.short_name.to_string(),
                        category: k.category.to_string(),
                        exclusive_ns: vec![0.0; n],
                        instances: vec![0.0; n],
                    });
                e.exclusive_ns[i] += k.exclusive_ns as f64;
                e.instances[i] += k.instances as f64;
            }
            for c in &s.categories {
                g.categories
                    .entry(c.category.clone())
                    .or_insert_with(|| vec![0.0; n])[i] += c.exclusive_ns as f64;
            }
        }
        g.classes = crate::attribution::compare::class_samples(&steps);
        groups.push(g);
    }
    let mut meta = meta;
    let kinds: BTreeSet<String> = groups.iter().map(|g| g.step_kind.clone()).collect();
    meta.step_kinds = kinds.into_iter().collect();
    meta.batch_compositions = groups
        .iter()
        .map(|g| match g.mean_context {
            Some(c) => format!("{} ctx={c:.0}", g.label()),
            None => g.label(),
        })
        .collect();
    if meta.engine.is_none() {
        meta.engine = report
            .steps
            .iter()
            .find_map(|s| s.composition.as_ref().map(|c| c.engine.clone()));
    }
    Baseline::new(meta, SampleSet { groups })
}
