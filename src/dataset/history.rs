//! `gate --history`: the baseline side built from the last N matching runs of a dataset,
//! as the same per-group samples a baseline file holds, so the statistics, thresholds and
//! exit codes are those of a gate against a file.
//!
//! `steps` mode pools every step of those runs per (kind, batch size) group; `runs` mode
//! uses one sample per run (the run's median of each metric, kernel and category), which
//! weighs every run equally however many steps it captured.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use crate::baseline::from_report::{GroupBuilder, Slot};
use crate::baseline::metrics::Metrics;
use crate::baseline::stats::median_in_place;
use crate::dataset::filter::Filter;
use crate::dataset::layout::Prune;
use crate::dataset::read;
use crate::dataset::rows::{self, KernelName, KernelPick, StepKernelRow, StepRow};
use crate::dataset::store::Store;
use crate::exit::Result;
use crate::wire::baseline::{Baseline, BaselineMeta, Group, KernelSamples, SampleSet};
use crate::wire::dataset::RunRow;

use super::reference::{decide, merge_reference, AcceptedSelf, Moved};

/// `--history-mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum HistoryMode {
    /// Pool the steps of the matching runs per group.
    #[default]
    Steps,
    /// One sample per run: its median.
    Runs,
}

/// The report being gated, so its own earlier export is never part of its history.
#[derive(Debug, Clone)]
pub struct Candidate {
    /// The run id `export` computes for it (report hash and the `--label`s given).
    pub run_id: String,
    /// sha256 of the report's bytes: the same report under other labels is the same run.
    pub report_sha256: String,
}

/// Which runs make the baseline.
#[derive(Debug, Clone)]
pub struct HistoryQuery {
    pub filter: Filter,
    pub last: usize,
    pub mode: HistoryMode,
    /// Fewer matching runs than this: the baseline is empty, so the gate is inconclusive.
    pub min_runs: usize,
    /// Only runs on this GPU (the candidate's), when known.
    pub gpu: Option<String>,
    /// Only runs priced for this model (the candidate's), when given.
    pub model: Option<String>,
    /// The candidate, when it is a report (a baseline file has no run id).
    pub candidate: Option<Candidate>,
    /// Read each step's class floors and excess (a policy gates a class excess).
    pub classes: bool,
    /// The step metrics read from each run's steps (the gate policy's table).
    pub metrics: crate::baseline::metrics::Metrics,
    /// How a remote dataset is reached.
    pub store: crate::store::StoreConfig,
}

/// The baseline and how it was made.
#[derive(Debug, Clone)]
pub struct History {
    pub baseline: Baseline,
    pub runs: Vec<String>,
    /// One line for the report: which runs, which mode, or why too few.
    pub note: String,
    pub too_few: bool,
    /// Runs left out (damaged rows, the candidate's own export, duplicates), one line each.
    pub warnings: Vec<String>,
    /// An accepted decision on the candidate's own run: its metrics are to be measured
    /// against the candidate itself (it is the reference a reviewer chose), which only the
    /// caller holds; see [`super::reference::merge_reference`].
    pub accepts_candidate: Option<AcceptedSelf>,
}

impl Candidate {
    fn is(&self, r: &RunRow) -> bool {
        r.run_id == self.run_id || r.report_sha256.as_deref() == Some(self.report_sha256.as_str())
    }
}

/// Build the baseline from the dataset. A dataset that does not exist yet, or holds no
/// matching run, gives an empty baseline (the gate is inconclusive) with a note saying so,
/// so the documented CI line `gate R --history DS --export DS` starts a history from
/// nothing.
pub fn history_baseline(dataset: &Path, q: &HistoryQuery) -> Result<History> {
    let mut warnings = Vec::new();
    let store = Store::open(dataset, &q.store)?;
    let exists = store.exists()?;
    // Only the partitions a matching run can be in are listed: the candidate's GPU (and
    // runs without one), its model, and the `--where gpu=`/`model=` substrings.
    let contains = |key: &str| -> Vec<String> {
        q.filter
            .clauses
            .iter()
            .filter(|(k, _)| k == key)
            .map(|(_, v)| v.clone())
            .collect()
    };
    let gpu = Prune {
        exact: q.gpu.clone().map(|g| (g, true)),
        contains: contains("gpu"),
    };
    let model = Prune {
        exact: q.model.clone().map(|m| (m, false)),
        contains: contains("model"),
    };
    // And of those, only the `runs` objects whose names may carry every `--where
    // label.K=V` (names without label digests are read).
    let labels = crate::dataset::layout::required_digests(&q.filter.clauses);
    let mut objs = read::list_runs(&store, &gpu, &model, &labels, &mut warnings)?;
    let stored = if objs.is_empty() {
        usize::from(!store.list_dirs("runs")?.is_empty())
    } else {
        objs.len()
    };
    // Newest commit first: the `runs` objects are read a batch at a time until the last
    // N matching runs are in hand, so a long history costs a listing, not a read of it all.
    objs.sort_by(|a, b| (b.modified_ns, &b.key).cmp(&(a.modified_ns, &a.key)));
    let passes = |r: &RunRow| {
        q.filter.matches(r)
            && match (&q.gpu, &r.gpu_name) {
                (Some(want), Some(have)) => want == have,
                _ => true,
            }
            && match (&q.model, &r.model) {
                (Some(want), have) => have.as_ref() == Some(want),
                _ => true,
            }
    };
    let mut seen: Vec<RunRow> = Vec::new();
    let mut found = std::collections::HashSet::new();
    for chunk in objs.chunks(read::BATCH) {
        let rows = read::read_rows(&store, chunk, &mut warnings)?;
        for r in rows {
            let own = q.candidate.as_ref().is_some_and(|c| c.is(&r));
            if !own && passes(&r) {
                found.insert(r.run_id.clone());
            }
            seen.push(r);
        }
        if found.len() >= q.last {
            break;
        }
    }
    let all = read::in_order(seen, &store, &mut warnings);
    let (own, all): (Vec<RunRow>, Vec<RunRow>) = all
        .into_iter()
        .partition(|r| q.candidate.as_ref().is_some_and(|c| c.is(r)));
    if !own.is_empty() {
        let ids: Vec<&str> = own.iter().map(|r| r.run_id.as_str()).collect();
        warnings.push(format!(
            "history: left out run {} of {}: it is an export of this very report, and a run \
             is never part of its own history",
            ids.join(", "),
            dataset.display()
        ));
    }
    let mut matching: Vec<RunRow> = all.into_iter().filter(|r| passes(r)).collect();
    let candidate_runs: Vec<&str> = q
        .candidate
        .iter()
        .map(|c| c.run_id.as_str())
        .chain(own.iter().map(|r| r.run_id.as_str()))
        .collect();
    let candidate_sha = q.candidate.as_ref().map(|c| c.report_sha256.as_str());
    let decided = decide(
        &store,
        &mut matching,
        candidate_sha,
        &candidate_runs,
        &mut warnings,
    )?;
    let skip = matching.len().saturating_sub(q.last);
    let runs: Vec<RunRow> = matching.into_iter().skip(skip).collect();
    let min = q.min_runs.max(1);
    let data = if runs.len() >= min {
        rows::read_run_data(
            &store,
            &runs,
            q.filter.kind.as_deref(),
            Some(&KernelPick::All),
            q.classes,
            &q.metrics,
            &mut warnings,
        )?
    } else {
        rows::RunData::default()
    };
    let used: Vec<&RunRow> = runs
        .iter()
        .enumerate()
        .filter(|(i, _)| !data.left_out.contains(i))
        .map(|(_, r)| r)
        .collect();
    let ids: Vec<String> = used.iter().map(|r| r.run_id.clone()).collect();
    let mut meta = BaselineMeta {
        gpu_name: used.iter().find_map(|r| r.gpu_name.clone()),
        nsys_version: None,
        source_format: used
            .iter()
            .find_map(|r| r.source_format.clone())
            .unwrap_or_else(|| "dataset".into()),
        engine: used.iter().find_map(|r| r.engine.clone()),
        model: used.iter().find_map(|r| r.model.clone()),
        created_by: format!(
            "stepgate {} history of {}",
            env!("CARGO_PKG_VERSION"),
            dataset.display()
        ),
        ..BaselineMeta::default()
    };
    if used.len() < min {
        let why = if !exists {
            format!("{} does not exist yet", dataset.display())
        } else if stored == 0 {
            format!("{} holds no runs yet", dataset.display())
        } else {
            format!(
                "{} matching run(s) in {} (at least {min} needed)",
                used.len(),
                dataset.display()
            )
        };
        return Ok(History {
            baseline: Baseline::new(meta, SampleSet::default()),
            runs: ids,
            note: format!(
                "history: {why}: inconclusive (with --export, this run is added to it){}{}",
                decided.tail,
                decided.own.as_ref().map_or("", |o| o.too_few_note.as_str())
            ),
            too_few: true,
            warnings,
            accepts_candidate: decided.own,
        });
    }
    let build = |from: usize| {
        let steps: Vec<StepRow> = data
            .steps
            .iter()
            .filter(|s| s.run >= from)
            .cloned()
            .collect();
        let kernels: Vec<StepKernelRow> = data
            .kernels
            .rows
            .iter()
            .filter(|k| k.run >= from)
            .copied()
            .collect();
        match q.mode {
            HistoryMode::Steps => groups_of(&steps, &kernels, &data.kernels.names, &q.metrics),
            HistoryMode::Runs => run_medians(
                &steps,
                &kernels,
                &data.kernels.names,
                runs.len(),
                &q.metrics,
            ),
        }
    };
    let mut groups = build(0);
    let mut tail = decided.tail;
    if let Moved::Metrics { from, keys, note } = &decided.moved {
        // The accepted run's index among the runs kept (the window is the newest of them).
        let from = from.saturating_sub(skip);
        merge_reference(&mut groups, &build(from), Some(keys));
        tail.push_str(note);
        let after: Vec<&str> = runs[from..].iter().map(|r| r.run_id.as_str()).collect();
        tail.push_str(&format!(
            " ({}); the other metrics keep all {} run(s)",
            after.join(", "),
            runs.len()
        ));
    }
    let labels: Vec<String> = groups.iter().map(Group::label).collect();
    meta.step_kinds = {
        let mut k: Vec<String> = groups.iter().map(|g| g.step_kind.clone()).collect();
        k.sort();
        k.dedup();
        k
    };
    meta.batch_compositions = labels;
    Ok(History {
        baseline: Baseline::new(meta, SampleSet { groups }),
        note: format!(
            "history: the last {} matching run(s) of {} ({} mode): {}",
            ids.len(),
            dataset.display(),
            match q.mode {
                HistoryMode::Steps => "steps pooled",
                HistoryMode::Runs => "one median per run",
            },
            ids.join(", ")
        ) + &tail
            + decided.own.as_ref().map_or("", |o| o.note.as_str()),
        runs: ids,
        too_few: false,
        warnings,
        accepts_candidate: decided.own,
    })
}

/// Per-step samples grouped by (kind, batch size) through the same [`GroupBuilder`] that
/// groups a report: kernel and category vectors hold one value per step, 0 where absent.
fn groups_of(
    steps: &[StepRow],
    kernels: &[StepKernelRow],
    names: &[KernelName],
    table: &Metrics,
) -> Vec<Group> {
    let mut b = GroupBuilder::new(table);
    let mut at: HashMap<(usize, i64, i64), Slot> = HashMap::with_capacity(steps.len());
    for s in steps {
        let slot = b.push(&s.kind, s.batch, &s.sample);
        for (class, floor, excess) in &s.classes {
            b.add_class(slot, class, *floor, *excess);
        }
        at.insert((s.run, s.series, s.index), slot);
    }
    for k in kernels {
        if let Some(&slot) = at.get(&(k.run, k.series, k.index)) {
            let id = &names[k.name as usize];
            b.add_kernel(
                slot,
                &id.name,
                &id.short_name,
                &id.category,
                k.exclusive_ns,
                k.instances,
            );
            b.add_category(slot, &id.category, k.exclusive_ns);
        }
    }
    b.finish()
}

/// One sample per run and group: the run's median of every metric, kernel and category
/// (a kernel or category a run lacks counts 0 for that run).
fn run_medians(
    steps: &[StepRow],
    kernels: &[StepKernelRow],
    names: &[KernelName],
    runs: usize,
    table: &Metrics,
) -> Vec<Group> {
    let mut out: BTreeMap<(String, Option<u32>), Group> = BTreeMap::new();
    // Per group: the runs seen, in order, to pad kernels a later run adds.
    let mut seen: BTreeMap<(String, Option<u32>), usize> = BTreeMap::new();
    let mut ctxs: BTreeMap<(String, Option<u32>), Vec<Option<f64>>> = BTreeMap::new();
    let mut steps_of: Vec<Vec<StepRow>> = vec![Vec::new(); runs];
    for s in steps {
        if let Some(v) = steps_of.get_mut(s.run) {
            v.push(s.clone());
        }
    }
    let mut kernels_of: Vec<Vec<StepKernelRow>> = vec![Vec::new(); runs];
    for k in kernels {
        if let Some(v) = kernels_of.get_mut(k.run) {
            v.push(*k);
        }
    }
    for (s, k) in steps_of.iter().zip(&kernels_of) {
        for g in groups_of(s, k, names, table) {
            let key = (g.step_kind.clone(), g.batch_size);
            let n = *seen.get(&key).unwrap_or(&0);
            let acc = out
                .entry(key.clone())
                .or_insert_with(|| Group::new(g.step_kind.clone(), g.batch_size));
            ctxs.entry(key.clone()).or_default().push(g.mean_context);
            let med = |v: &[f64]| median_in_place(&mut v.to_vec()).unwrap_or(0.0);
            for (m, v) in &g.metrics {
                if !v.is_empty() {
                    acc.metrics.entry(m.clone()).or_default().push(med(v));
                }
            }
            for (name, ks) in &g.kernels {
                let e = acc
                    .kernels
                    .entry(name.clone())
                    .or_insert_with(|| KernelSamples {
                        short_name: ks.short_name.clone(),
                        category: ks.category.clone(),
                        exclusive_ns: vec![0.0; n],
                        instances: vec![0.0; n],
                    });
                e.exclusive_ns.push(med(&ks.exclusive_ns));
                e.instances.push(med(&ks.instances));
            }
            for (c, v) in &g.categories {
                acc.categories
                    .entry(c.clone())
                    .or_insert_with(|| vec![0.0; n])
                    .push(med(v));
            }
            // A class has no 0 to pad with: one missing from a run drops it below (the
            // length check), as a metric priced on only some steps is dropped.
            for (c, v) in &g.classes {
                let e = acc.classes.entry(c.clone()).or_default();
                e.floor_ns.push(med(&v.floor_ns));
                e.excess_ns.push(med(&v.excess_ns));
            }
            let n = n + 1;
            // Kernels and categories absent from this run: 0 for it.
            for ks in acc.kernels.values_mut() {
                ks.exclusive_ns.resize(n, 0.0);
                ks.instances.resize(n, 0.0);
            }
            for v in acc.categories.values_mut() {
                v.resize(n, 0.0);
            }
            seen.insert(key, n);
        }
    }
    let mut groups = Vec::with_capacity(out.len());
    for (key, mut g) in out {
        let n = seen.get(&key).copied().unwrap_or(0);
        g.metrics
            .retain(|k, v| table.get(k).is_some_and(|r| r.partial) || v.len() == n);
        g.classes.retain(|_, v| v.excess_ns.len() == n);
        let c = ctxs.remove(&key).unwrap_or_default();
        if !c.is_empty() && c.iter().all(Option::is_some) {
            g.mean_context = Some(c.iter().flatten().sum::<f64>() / c.len() as f64);
        }
        groups.push(g);
    }
    groups
}

#[cfg(test)]
mod tests;
