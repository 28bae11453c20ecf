//! The one door from steps to a [`Baseline`]: per-step samples grouped by step kind and
//! batch size, with the kernels and categories of every step. Both a report's steps
//! ([`samples_from_steps`]) and a dataset's stored steps (`gate --history`) go through
//! [`GroupBuilder`], and every step is held to [`bounds`] before it is pushed, so a
//! baseline that `record` writes is one that `gate` reads.

use std::collections::{BTreeSet, HashMap};

use crate::baseline::metrics::{Metrics, StepSample};
use crate::baseline::model::bounds::{self, OutOfRange};
use crate::wire::baseline::{Baseline, BaselineMeta, Group, KernelSamples, SampleSet};
use crate::wire::steps::{Step, StepsReport};

/// Where a pushed step landed: its group and its position in the group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Slot {
    group: usize,
    step: usize,
}

/// A group while steps are pushed: the contexts seen, to average when every step has one.
#[derive(Debug, Default)]
struct Building {
    group: Group,
    steps: usize,
    context_sum: f64,
    contexts: usize,
    /// Steps each kernel class was priced on.
    class_steps: HashMap<String, usize>,
}

/// Groups built one step at a time. Kernel and category vectors hold one value per step
/// of the group, 0 where a step lacks that kernel (filled in by [`GroupBuilder::finish`]).
#[derive(Debug, Default)]
pub(crate) struct GroupBuilder {
    /// Metric names kept where only some steps of a group have them (the table's
    /// `partial` rows).
    partial: Vec<&'static str>,
    /// kind → batch size → index into `groups` (borrowed-key lookups, no allocation per step).
    index: HashMap<String, HashMap<Option<u32>, usize>>,
    groups: Vec<Building>,
}

impl GroupBuilder {
    /// A builder for samples read through `table`.
    pub fn new(table: &Metrics) -> Self {
        GroupBuilder {
            partial: table
                .rows()
                .iter()
                .filter(|r| r.partial)
                .map(|r| r.name)
                .collect(),
            ..GroupBuilder::default()
        }
    }

    /// Add one step's metric samples; the caller has held them to [`bounds`].
    pub fn push(&mut self, kind: &str, batch: Option<u32>, s: &StepSample) -> Slot {
        let next = self.groups.len();
        let g = match self.index.get_mut(kind) {
            Some(by) => *by.entry(batch).or_insert(next),
            None => {
                self.index
                    .insert(kind.to_owned(), HashMap::from([(batch, next)]));
                next
            }
        };
        if g == next {
            self.groups.push(Building {
                group: Group::new(kind, batch),
                ..Building::default()
            });
        }
        let b = &mut self.groups[g];
        let mut push = |name: &str, v: f64| match b.group.metrics.get_mut(name) {
            Some(x) => x.push(v),
            None => {
                b.group.metrics.insert(name.to_owned(), vec![v]);
            }
        };
        for &(name, v) in &s.values {
            if let Some(v) = v {
                push(name, v);
            }
        }
        if let Some(c) = s.mean_context {
            b.context_sum += c;
            b.contexts += 1;
        }
        b.steps += 1;
        Slot {
            group: g,
            step: b.steps - 1,
        }
    }

    /// Add one kernel's exclusive ns and instances to a pushed step.
    pub(crate) fn add_kernel(
        &mut self,
        at: Slot,
        name: &str,
        short_name: &str,
        category: &str,
        exclusive_ns: f64,
        instances: f64,
    ) {
        let g = &mut self.groups[at.group].group;
        let k = match g.kernels.get_mut(name) {
            Some(k) => k,
            None => g
                .kernels
                .entry(name.to_owned())
                .or_insert_with(|| KernelSamples {
                    short_name: short_name.to_owned(),
                    category: category.to_owned(),
                    ..KernelSamples::default()
                }),
        };
        add_at(&mut k.exclusive_ns, at.step, exclusive_ns);
        add_at(&mut k.instances, at.step, instances);
    }

    /// Add a category's exclusive ns to a pushed step.
    pub(crate) fn add_category(&mut self, at: Slot, category: &str, exclusive_ns: f64) {
        let g = &mut self.groups[at.group].group;
        let v = match g.categories.get_mut(category) {
            Some(v) => v,
            None => g.categories.entry(category.to_owned()).or_default(),
        };
        add_at(v, at.step, exclusive_ns);
    }

    /// Add a kernel class's floor and excess to a pushed step (derived, where the step
    /// was priced).
    pub fn add_class(&mut self, at: Slot, class: &str, floor_ns: f64, excess_ns: f64) {
        let b = &mut self.groups[at.group];
        let c = match b.group.classes.get_mut(class) {
            Some(c) => c,
            None => b.group.classes.entry(class.to_owned()).or_default(),
        };
        add_at(&mut c.floor_ns, at.step, floor_ns);
        add_at(&mut c.excess_ns, at.step, excess_ns);
        match b.class_steps.get_mut(class) {
            Some(n) => *n += 1,
            None => {
                b.class_steps.insert(class.to_owned(), 1);
            }
        }
    }

    /// The groups in (kind, batch size) order. A metric present on only some steps (MBU
    /// where a floor exists) is dropped rather than compared over a different set of
    /// steps; a `partial` one (`period_ns`) may have one sample fewer per series (the last
    /// step has none).
    pub fn finish(self) -> Vec<Group> {
        let partial = self.partial;
        let mut out: Vec<Group> = self
            .groups
            .into_iter()
            .map(|b| {
                let n = b.steps;
                let mut g = b.group;
                g.metrics
                    .retain(|k, v| partial.contains(&k.as_str()) || v.len() == n);
                for k in g.kernels.values_mut() {
                    k.exclusive_ns.resize(n, 0.0);
                    k.instances.resize(n, 0.0);
                }
                for v in g.categories.values_mut() {
                    v.resize(n, 0.0);
                }
                // A class priced on only some steps is dropped, as MBU is.
                g.classes
                    .retain(|k, _| b.class_steps.get(k).copied() == Some(n));
                if b.contexts == n && n > 0 {
                    g.mean_context = Some(b.context_sum / n as f64);
                }
                g
            })
            .collect();
        out.sort_by(|a, b| (&a.step_kind, a.batch_size).cmp(&(&b.step_kind, b.batch_size)));
        out
    }
}

/// `v[i] += x`, growing `v` with zeros up to `i`.
fn add_at(v: &mut Vec<f64>, i: usize, x: f64) {
    if v.len() <= i {
        v.resize(i + 1, 0.0);
    }
    v[i] += x;
}

/// Steps left out, or derived samples dropped, while building a baseline: a count and
/// the first case, for one warning line.
#[derive(Debug, Default)]
pub(crate) struct Tally {
    pub count: usize,
    pub first: Option<String>,
}

impl Tally {
    pub fn note(&mut self, what: impl FnOnce() -> String) {
        self.count += 1;
        if self.first.is_none() {
            self.first = Some(what());
        }
    }
}

/// The first kernel or category sample of a step out of range.
fn bad_kernel(s: &Step) -> Option<OutOfRange> {
    let bad = |field: String, v: i64, range: bounds::Range| {
        let v = v as f64;
        (!range.holds(v)).then_some(OutOfRange {
            field,
            value: v,
            range,
        })
    };
    s.all_kernels
        .iter()
        .find_map(|k| {
            bad(
                format!("kernel {} exclusive_ns", k.name),
                k.exclusive_ns,
                bounds::TIME,
            )
            .or_else(|| {
                bad(
                    format!("kernel {} instances", k.name),
                    i64::try_from(k.instances).unwrap_or(i64::MAX),
                    bounds::COUNT,
                )
            })
        })
        .or_else(|| {
            s.categories.iter().find_map(|c| {
                bad(
                    format!("category {}", c.category),
                    c.exclusive_ns,
                    bounds::TIME,
                )
            })
        })
}

/// Samples of every step with GPU work, grouped so that only like steps are compared:
/// [`samples_from_steps_with`] the built-in metrics.
pub fn samples_from_steps(report: &StepsReport, meta: BaselineMeta) -> (Baseline, Vec<String>) {
    samples_from_steps_with(report, meta, &Metrics::builtin())
}

/// Samples of every step with GPU work, each step's metrics read through `table`, grouped
/// so that only like steps are compared. Kernel and category vectors hold one value per
/// step (0 where absent). A step with a measured sample outside [`bounds`] is left out,
/// and a derived sample (MBU) or mean context outside them is dropped from its step; the
/// returned lines say so (empty when nothing was).
pub fn samples_from_steps_with(
    report: &StepsReport,
    meta: BaselineMeta,
    table: &Metrics,
) -> (Baseline, Vec<String>) {
    let mut b = GroupBuilder::new(table);
    let (mut left_out, mut dropped) = (Tally::default(), Tally::default());
    let at = |s: &Step| format!("step {} of series {}", s.index, s.series);
    for s in report.steps.iter().filter(|s| s.wall_ns.is_some()) {
        let mut x = table.sample(s, s.composition.as_ref().and_then(|c| c.mean_context()));
        if let Some(bad) = x.bad_measurement(table).or_else(|| bad_kernel(s)) {
            left_out.note(|| format!("{}: {bad}", at(s)));
            continue;
        }
        for bad in x.drop_bad_derived(table) {
            dropped.note(|| format!("{}: {bad}", at(s)));
        }
        for r in table.rows().iter().filter(|r| !(r.valid_on)(s)) {
            x.set(r.name, None);
        }
        let batch = s
            .composition
            .as_ref()
            .and_then(|c| c.requests)
            .and_then(|r| u32::try_from(r).ok());
        // An inferred kind keys as `decode (inferred)`, so a later exact marker never
        // silently matches a guess.
        let slot = b.push(s.kind_label().as_str(), batch, &x);
        for k in &s.all_kernels {
            b.add_kernel(
                slot,
                &k.name,
                &k.short_name,
                &k.category,
                k.exclusive_ns as f64,
                k.instances as f64,
            );
        }
        for c in &s.categories {
            b.add_category(slot, &c.category, c.exclusive_ns as f64);
        }
        for c in s.attribution.iter().flat_map(|a| &a.classes) {
            if let (Some(f), Some(e)) = (c.floor_ns, c.excess_ns) {
                b.add_class(slot, c.class.key(), f as f64, e as f64);
            }
        }
    }
    let mut warnings = Vec::new();
    if let Some(first) = left_out.first {
        warnings.push(format!(
            "{} step(s) left out of the baseline: a sample is outside what a baseline holds \
             (first: {first})",
            left_out.count
        ));
    }
    if let Some(first) = dropped.first {
        warnings.push(format!(
            "{} derived sample(s) dropped: an MBU or mean context is outside what a baseline \
             holds, so the floor or the step name behind it is not meaningful (first: {first})",
            dropped.count
        ));
    }
    let groups = b.finish();
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
    // The operating point a gate compares before anything else (baseline::compare::
    // identity): how the steps were found, and TP where the report says (not a default).
    meta.found_by = Some(report.found_by.as_str().to_owned());
    meta.tp = report
        .operating_point
        .as_ref()
        .filter(|op| op.tp.basis != crate::wire::attribution::Basis::Default)
        .map(|op| op.tp.value);
    let mut b = Baseline::new(meta, SampleSet { groups });
    b.source.clone_from(&report.source);
    (b, warnings)
}
