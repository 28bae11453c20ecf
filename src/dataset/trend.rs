//! `stepgate trend`: one metric per run over time, per group, with change points marked.
//!
//! A change point is a heuristic: a run whose median moved beyond the gate's thresholds
//! (the same relative and absolute thresholds `gate` uses for that metric) relative to the
//! median of the previous K runs' medians. It says where to look, not that a regression is
//! proven; `gate --history` gives the statistical verdict.
//!
//! The decisions on record in the dataset (`accept`/`reject`, `decisions/`) are attached to
//! the runs they name, so the chart and the table show where a change was accepted.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use crate::baseline::metrics::Metrics;
use crate::baseline::select::Selector;
use crate::baseline::Policy;
use crate::dataset::filter::{self, Filter};
use crate::dataset::layout::Prune;
use crate::dataset::read;
use crate::dataset::rows::{self, KernelPick};
use crate::dataset::store::Store;
use crate::exit::{Error, Result};
use crate::wire::baseline::MetricUnit;
use crate::wire::dataset::RunRow;
use crate::wire::decision::Decision;
use crate::wire::gate::Threshold;
use crate::wire::trend::{Change, Point, Series, Trend, TrendDecision};

/// `--metric`.
#[derive(Debug, Clone, PartialEq)]
pub enum Metric {
    /// A step metric: a row of the gate's metric table ([`Metrics::builtin`]), by name.
    Step(&'static str),
    /// Exclusive ns per step of the op whose full or short name is this (0 in steps it is
    /// absent from).
    Kernel(String),
    /// Exclusive ns per step of one category.
    Category(String),
}

impl Metric {
    pub fn parse(s: &str) -> Result<Metric> {
        let table = Metrics::builtin();
        if let Some(row) = table.get(s) {
            return Ok(Metric::Step(row.name));
        }
        Ok(match s.split_once(':') {
            Some(("kernel", n)) if !n.is_empty() => Metric::Kernel(n.to_owned()),
            Some(("category", n)) if !n.is_empty() => Metric::Category(n.to_owned()),
            _ => {
                let names: Vec<&str> = table.rows().iter().map(|r| r.name).collect();
                return Err(Error::input(format!(
                    "--metric {s:?}: use a step metric ({}), kernel:NAME or category:NAME",
                    names.join(", ")
                )));
            }
        })
    }

    pub fn name(&self) -> String {
        match self {
            Metric::Step(n) => (*n).to_owned(),
            Metric::Kernel(n) => format!("kernel:{n}"),
            Metric::Category(n) => format!("category:{n}"),
        }
    }

    /// The unit of its values: the table row's (`ns`, `count`, `fraction` for shares and
    /// utilisations); kernels and categories are `ns`.
    pub fn unit(&self) -> &'static str {
        let row = match self {
            Metric::Step(n) => Metrics::builtin().get(n).map(|r| r.unit),
            _ => None,
        };
        match row {
            Some(MetricUnit::Count) => "count",
            Some(MetricUnit::Fraction | MetricUnit::Utilisation) => "fraction",
            Some(MetricUnit::Ns) | None => "ns",
        }
    }
}

/// What to compute.
#[derive(Debug, Clone)]
pub struct TrendQuery {
    pub metric: Metric,
    pub filter: Filter,
    /// Group keys: run keys (`gpu`, `model`, `label.NAME`, …) and `kind`.
    pub by: Vec<String>,
    pub since_ns: Option<i64>,
    /// Keep the last N runs of each group.
    pub last: Option<usize>,
    /// K: previous runs a change is measured against.
    pub window: usize,
    /// How a remote dataset is reached.
    pub store: crate::store::StoreConfig,
}

/// Version of the `trend` JSON document (the rules of docs/reports.md).
pub const SCHEMA_VERSION: u32 = 1;

/// The same percentile `steps` reports (numpy's linear interpolation), so a run's median
/// here equals the one in its `steps` summary.
pub use crate::stats::percentile;

/// Mark change points in one series of run medians (in time order): point i changed when
/// |m_i − ref| crosses both the absolute and the relative threshold, ref being the median of
/// the previous (up to) `window` medians.
pub(crate) fn mark_changes(points: &mut [Point], window: usize, t: Threshold) {
    let medians: Vec<f64> = points.iter().map(|p| p.median).collect();
    for (i, p) in points.iter_mut().enumerate() {
        if i == 0 || window == 0 {
            continue;
        }
        let mut prev: Vec<f64> = medians[i.saturating_sub(window)..i].to_vec();
        prev.sort_by(f64::total_cmp);
        let reference = percentile(&prev, 0.5);
        let delta = p.median - reference;
        let relative = (reference != 0.0).then(|| delta / reference.abs());
        let crosses = delta.abs() > t.abs && relative.is_none_or(|r| r.abs() > t.rel);
        if crosses {
            p.change = Some(Change {
                reference,
                previous_runs: prev.len(),
                delta,
                relative,
                direction: if delta > 0.0 { "up" } else { "down" },
            });
        }
    }
}

/// The decision that names each run. `decisions` come oldest first, so when several name
/// one run (accepted, then rejected on second thought) the newest wins: it is the one in
/// force. A decision without a run id (a comparison that named none) marks nothing.
pub(crate) fn decisions_by_run(decisions: &[Decision]) -> HashMap<&str, &Decision> {
    decisions
        .iter()
        .filter_map(|d| d.run_id.as_deref().map(|r| (r, d)))
        .collect()
}

/// Attach to each point the decision that names its run. A decision naming no run of the
/// selection is left out: it is about a run filtered away (or vacuumed), not an error.
pub(crate) fn mark_decisions(points: &mut [Point], by_run: &HashMap<&str, &Decision>) {
    for p in points {
        p.decision = by_run
            .get(p.run_id.as_str())
            .map(|d| TrendDecision::from(*d));
    }
}

/// `(key, value)` per `--by` key, in `--by` order.
type GroupKey = Vec<(String, String)>;

/// The runs that pass the filter and `--since`, oldest first. A dataset that does not
/// exist or holds no run is an error: there is nothing to draw.
pub(crate) fn select_runs(
    store: &Store,
    filter: &Filter,
    since_ns: Option<i64>,
    warnings: &mut Vec<String>,
) -> Result<Vec<RunRow>> {
    let name = store.name();
    if let Some(d) = store.local_dir() {
        if !crate::dataset::store::local_root(d, crate::exit::Access::Read)? {
            return Err(Error::input(format!(
                "{name} does not exist: pass a dataset written by `stepgate export`"
            )));
        }
    }
    // Partitions no run of which can pass `--where gpu=`/`model=` are not listed.
    let prune = |key: &str| Prune {
        exact: None,
        contains: filter
            .clauses
            .iter()
            .filter(|(k, _)| k == key)
            .map(|(_, v)| v.clone())
            .collect(),
    };
    // Nor `runs` objects whose names lack a `--where label.K=V` digest.
    let labels = crate::dataset::layout::required_digests(&filter.clauses);
    let objs = read::list_runs(store, &prune("gpu"), &prune("model"), &labels, warnings)?;
    if objs.is_empty()
        && read::list_runs(
            store,
            &Prune::default(),
            &Prune::default(),
            &[],
            &mut Vec::new(),
        )?
        .is_empty()
    {
        return Err(Error::input(format!(
            "{name} holds no runs: add one with `stepgate export REPORT -o {name}`"
        )));
    }
    let rows = read::read_rows(store, &objs, warnings)?;
    let all = read::in_order(rows, store, warnings);
    Ok(all
        .into_iter()
        .filter(|r| filter.matches(r) && since_ns.is_none_or(|s| r.exported_at_ns >= s))
        .collect())
}

/// Compute the trend.
pub fn trend(dataset: &Path, q: &TrendQuery, policy: &Policy) -> Result<Trend> {
    for k in &q.by {
        filter::check_key(k, "--by")?;
    }
    let mut warnings = Vec::new();
    let store = Store::open(dataset, &q.store)?;
    let all = select_runs(&store, &q.filter, q.since_ns, &mut warnings)?;
    // Keep only the last N runs per run-level group before reading any step file.
    let run_keys: Vec<&String> = q.by.iter().filter(|k| *k != "kind").collect();
    let mut runs: Vec<RunRow> = Vec::new();
    {
        let mut per: HashMap<Vec<Option<String>>, Vec<usize>> = HashMap::new();
        for (i, r) in all.iter().enumerate() {
            per.entry(run_keys.iter().map(|k| r.key(k)).collect())
                .or_default()
                .push(i);
        }
        let mut keep: Vec<usize> = per
            .into_values()
            .flat_map(|v| {
                let skip = q.last.map_or(0, |n| v.len().saturating_sub(n));
                v.into_iter().skip(skip)
            })
            .collect();
        keep.sort_unstable();
        runs.extend(keep.into_iter().map(|i| all[i].clone()));
    }
    // A batch of runs at a time: each run's points are final once its batch is read, so
    // memory holds one batch's steps, however many runs match.
    let mut threshold: Option<Threshold> = match &q.metric {
        // The policy's threshold, as in a gate (a metric it does not gate is reported).
        Metric::Step(name) => Some(policy.metric_threshold(name)),
        Metric::Category(n) => Some(policy.category_threshold(n)),
        Metric::Kernel(_) => None,
    };
    // A kernel is named by a selector (a substring of its full or short name, or re:REGEX),
    // resolved once against every name the matching runs hold: exactly one must match.
    let kernel = match &q.metric {
        Metric::Kernel(text) => {
            let names = rows::kernel_names(&store, &runs)?;
            let sel = Selector::parse(text)?;
            if names.is_empty() {
                // No kernel rows at all: the check after the scan says so for the runs.
                Some(text.clone())
            } else {
                let one = sel.one(names.iter().map(|(f, s)| (f.as_str(), s.as_str())))?;
                Some(one.to_owned())
            }
        }
        _ => None,
    };
    let mut series: BTreeMap<GroupKey, Vec<Point>> = BTreeMap::new();
    let (mut any_steps, mut any_kernel_rows) = (false, false);
    for chunk in runs.chunks(read::BATCH) {
        let pick = match &q.metric {
            Metric::Kernel(_) => kernel.clone().map(KernelPick::Name),
            Metric::Category(n) => Some(KernelPick::Category(n.clone())),
            _ => None,
        };
        let data = rows::read_run_data(
            &store,
            chunk,
            q.filter.kind.as_deref(),
            pick.as_ref(),
            false,
            &Metrics::builtin(),
            &mut warnings,
        )?;
        let steps = &data.steps;
        any_steps |= !steps.is_empty();
        // Per step value of the metric.
        let values: Vec<Option<f64>> = match &q.metric {
            Metric::Step(name) => steps.iter().map(|s| s.sample.get(name)).collect(),
            Metric::Kernel(_) | Metric::Category(_) => {
                let ks = &data.kernels;
                any_kernel_rows |= !ks.rows.is_empty();
                if let (None, Some(r)) = (threshold, ks.rows.first()) {
                    let k = &ks.names[r.name as usize];
                    threshold = Some(policy.kernel_threshold(&k.name, &k.short_name, &k.category));
                }
                let mut per: HashMap<(usize, i64, i64), f64> =
                    HashMap::with_capacity(ks.rows.len());
                for r in &ks.rows {
                    *per.entry((r.run, r.series, r.index)).or_default() += r.exclusive_ns;
                }
                steps
                    .iter()
                    .map(|s| Some(per.get(&(s.run, s.series, s.index)).copied().unwrap_or(0.0)))
                    .collect()
            }
        };
        // Group: (group key, run) → values.
        let mut cells: BTreeMap<(GroupKey, usize), Vec<f64>> = BTreeMap::new();
        for (s, v) in steps.iter().zip(&values) {
            let Some(v) = v else { continue };
            let r = &chunk[s.run];
            let key: GroupKey =
                q.by.iter()
                    .map(|k| {
                        let val = if k == "kind" {
                            Some(s.kind.to_string())
                        } else {
                            r.key(k)
                        };
                        (k.clone(), val.unwrap_or_else(|| "–".into()))
                    })
                    .collect();
            cells.entry((key, s.run)).or_default().push(*v);
        }
        // Batches are in time order, and so are the runs of a batch within a key.
        for ((key, run), mut v) in cells {
            v.sort_by(f64::total_cmp);
            let r = &chunk[run];
            series.entry(key).or_default().push(Point {
                run_id: r.run_id.clone(),
                exported_at_ns: r.exported_at_ns,
                exported_at: crate::dataset::dates::fmt_time(r.exported_at_ns),
                labels: r.labels.clone(),
                steps: v.len(),
                median: percentile(&v, 0.5),
                p10: percentile(&v, 0.1),
                p90: percentile(&v, 0.9),
                change: None,
                decision: None,
            });
        }
    }
    if matches!(q.metric, Metric::Kernel(_) | Metric::Category(_)) && any_steps && !any_kernel_rows
    {
        let what = if matches!(q.metric, Metric::Kernel(_)) {
            "no op with this full or short name"
        } else {
            "no op of this category"
        };
        return Err(Error::input(format!(
            "--metric {}: {what} ran in the {} matching run(s) of {}: check the name with \
             `stepgate analyze`",
            q.metric.name(),
            runs.len(),
            dataset.display()
        )));
    }
    if series.is_empty()
        && q.metric == Metric::Step(crate::wire::baseline::metric::MBU)
        && any_steps
    {
        return Err(Error::input(format!(
            "no stored step of {} has an MBU: export the runs with --model (and --gpu) so \
             steps are priced",
            dataset.display()
        )));
    }
    let threshold = threshold.unwrap_or(policy.kernel);
    let decisions = crate::dataset::decisions::read(&store, &mut warnings)?;
    let mut by_run = decisions_by_run(&decisions);
    // A decision on a report (its digest) marks every run of that report, under any
    // labels, exported before or after it; the newest decision on a run wins.
    for r in &runs {
        if let Some(d) = decisions
            .iter()
            .rev()
            .find(|d| crate::dataset::reference::names_run(d, r))
        {
            by_run.insert(r.run_id.as_str(), d);
        }
    }
    let mut out = Vec::with_capacity(series.len());
    for (key, mut points) in series {
        // Runs were read in time order and cells keep that order per key.
        mark_changes(&mut points, q.window, threshold);
        mark_decisions(&mut points, &by_run);
        out.push(Series {
            group: key.into_iter().collect(),
            points,
        });
    }
    Ok(Trend {
        schema_version: SCHEMA_VERSION,
        tool: crate::wire::meta::Tool::current(),
        source: crate::wire::meta::DatasetSource {
            dataset: dataset.display().to_string(),
        },
        metric: q.metric.name(),
        label: crate::baseline::metrics::Metrics::builtin()
            .label(&q.metric.name())
            .into_owned(),
        unit: q.metric.unit(),
        window: q.window,
        threshold_rel: threshold.rel,
        threshold_abs: threshold.abs,
        runs_matched: runs.len(),
        change_rule: format!(
            "heuristic: median moved by more than {:.1}% and {} vs the median of the previous {} run(s)",
            threshold.rel * 100.0,
            match q.metric.unit() {
                "ns" => format!("{:.0} ns", threshold.abs),
                _ => format!("{:.3}", threshold.abs),
            },
            q.window
        ),
        series: out,
        warnings,
    })
}

#[cfg(test)]
mod tests;
