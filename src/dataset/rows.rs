//! The per-step tables of the chosen runs (`steps`, `step_kernels`): only those runs' own
//! files, only the columns asked for (projection pushdown), the kernel filter pushed into
//! the Parquet scan, so a year of history is never loaded; and every row held to
//! [`bounds`], the same a baseline file is: a run with a measured sample out of them is
//! left out of both tables, with a warning naming its file; a derived one is dropped.

use std::collections::HashMap;
use std::sync::Arc;

use polars::prelude::*;

use crate::baseline::metrics::{Metrics, StepSample};
use crate::baseline::model::bounds::{self, OutOfRange};
use crate::dataset::read::{ints, scan_files, str_col, TAG};
use crate::dataset::schema::Ty;
use crate::dataset::store::Store;
use crate::exit::Result;
use crate::wire::dataset::RunRow;

/// One step of a stored run, with what grouping and gating need.
#[derive(Debug, Clone, Default)]
pub struct StepRow {
    pub run: usize,
    pub series: i64,
    pub index: i64,
    /// Interned: a handful of distinct kinds over any number of steps.
    pub kind: Arc<str>,
    pub batch: Option<u32>,
    pub sample: StepSample,
    /// Each priced class's (key, floor ns, excess ns), derived, from the step's
    /// `attribution_classes` (empty where the run was exported without a model).
    pub classes: Vec<(String, f64, f64)>,
}

/// (class, floor_ns, excess_ns) of every class with both in a step's `attribution_classes`
/// JSON text; a cell that is not that JSON gives none (the step keeps its other samples).
fn class_cells(text: Option<&str>) -> Vec<(String, f64, f64)> {
    let Some(v) = text.and_then(|t| serde_json::from_str::<serde_json::Value>(t).ok()) else {
        return Vec::new();
    };
    v.as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| {
            let ok = |x: f64| (x.is_finite() && x.abs() <= 1e15).then_some(x);
            Some((
                c.get("class")?.as_str()?.to_owned(),
                ok(c.get("floor_ns")?.as_f64()?)?,
                ok(c.get("excess_ns")?.as_f64()?)?,
            ))
        })
        .collect()
}

/// One (step, op name) row of a stored run; names index into [`StepKernels::names`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct StepKernelRow {
    pub run: usize,
    pub series: i64,
    pub index: i64,
    pub name: u32,
    pub exclusive_ns: f64,
    pub instances: f64,
}

/// An op's identity: full name, short name, category.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct KernelName {
    pub name: String,
    pub short_name: String,
    pub category: String,
}

/// `step_kernels` rows with their names interned (a few hundred names over millions of rows).
#[derive(Debug, Clone, Default)]
pub(crate) struct StepKernels {
    pub names: Vec<KernelName>,
    pub rows: Vec<StepKernelRow>,
}

/// Which `step_kernels` rows to read.
#[derive(Debug, Clone)]
pub(crate) enum KernelPick {
    All,
    /// Rows whose full or short name is this.
    Name(String),
    /// Rows of this category.
    Category(String),
}

/// The stored steps (with GPU work) and step kernels of some runs, every row held to
/// [`bounds`].
#[derive(Debug, Default)]
pub(crate) struct RunData {
    pub steps: Vec<StepRow>,
    pub kernels: StepKernels,
    /// Runs (indices into the runs read) left out for a sample out of bounds, in order.
    pub left_out: Vec<usize>,
}

/// Per run of a read: the first measured sample out of range (the run is left out) and
/// the derived samples dropped.
#[derive(Default)]
struct Verdicts {
    bad: HashMap<usize, (&'static str, OutOfRange)>,
    dropped: HashMap<usize, (usize, OutOfRange)>,
}

impl Verdicts {
    fn bad(&mut self, run: usize, table: &'static str, why: OutOfRange) {
        self.bad.entry(run).or_insert((table, why));
    }

    /// The warnings, naming each run's file.
    fn warn(&self, store: &Store, runs: &[RunRow], warnings: &mut Vec<String>) {
        let mut bad: Vec<_> = self.bad.iter().collect();
        bad.sort_by_key(|(r, _)| **r);
        for (&r, (table, why)) in bad {
            warnings.push(format!(
                "{}: a sample is outside what a baseline holds ({why}): run {} is left out; \
                 re-export it from its report with --replace, or remove its files",
                store.name_of(&runs[r].table_file(table)),
                runs[r].run_id
            ));
        }
        let mut dropped: Vec<_> = self.dropped.iter().collect();
        dropped.sort_by_key(|(r, _)| **r);
        for (&r, (n, first)) in dropped {
            if self.bad.contains_key(&r) {
                continue;
            }
            warnings.push(format!(
                "{}: {n} derived sample(s) (MBU, mean context) outside what a baseline holds \
                 were dropped (first: {first})",
                store.name_of(&runs[r].table_file("steps"))
            ));
        }
    }
}

/// Read the steps with GPU work of `runs` (optionally of one kind), their step metrics
/// through `table`, and, when `pick` is given, their step kernels. A run with a measured
/// sample out of [`bounds`] in either table is left out of both, with a warning naming the
/// file.
pub(crate) fn read_run_data(
    store: &Store,
    runs: &[RunRow],
    kind: Option<&str>,
    pick: Option<&KernelPick>,
    classes: bool,
    table: &Metrics,
    warnings: &mut Vec<String>,
) -> Result<RunData> {
    let mut v = Verdicts::default();
    let mut out = RunData {
        steps: read_steps(store, runs, kind, classes, table, &mut v)?,
        ..RunData::default()
    };
    if let Some(p) = pick {
        out.kernels = read_step_kernels(store, runs, p, &mut v)?;
    }
    v.warn(store, runs, warnings);
    if !v.bad.is_empty() {
        out.steps.retain(|s| !v.bad.contains_key(&s.run));
        out.kernels.rows.retain(|k| !v.bad.contains_key(&k.run));
        out.left_out = v.bad.keys().copied().collect();
        out.left_out.sort_unstable();
    }
    Ok(out)
}

/// The distinct (full, short) kernel names the `kernels` tables of `runs` hold, sorted: what
/// a kernel selector (`trend --metric kernel:…`) is resolved against.
pub(crate) fn kernel_names(store: &Store, runs: &[RunRow]) -> Result<Vec<(String, String)>> {
    let want: &[(&str, Ty)] = &[("name", Ty::Str), ("short_name", Ty::Str)];
    let build = |lf: LazyFrame| lf.select([col("name"), col("short_name")]);
    let mut names = std::collections::BTreeSet::new();
    scan_table(store, runs, "kernels", &build, want, &mut |df| {
        let name = str_col(&df, "name")?;
        let short = str_col(&df, "short_name")?;
        for i in 0..df.height() {
            if let Some(n) = name.get(i) {
                names.insert((n.to_owned(), short.get(i).unwrap_or_default().to_owned()));
            }
        }
        Ok(())
    })?;
    Ok(names.into_iter().collect())
}

/// Scan one table of `runs` batch by batch: `build` makes each run's lazy frame (projection
/// and filters pushed into the scan) and `each` gets every collected batch, whose [`TAG`]
/// column is the index into `runs`.
fn scan_table(
    store: &Store,
    runs: &[RunRow],
    table: &str,
    build: &dyn Fn(LazyFrame) -> LazyFrame,
    want: &[(&str, Ty)],
    each: &mut dyn FnMut(DataFrame) -> Result<()>,
) -> Result<()> {
    let keys: Vec<String> = runs.iter().map(|r| r.table_file(table)).collect();
    scan_files(store, &keys, build, want, each)
}

/// A step metric's column as read: integers or floats, as f64.
enum MetricColumn {
    Int(Int64Chunked),
    Float(Float64Chunked),
}

impl MetricColumn {
    fn get(&self, i: usize) -> Option<f64> {
        match self {
            MetricColumn::Int(c) => c.get(i).map(|x| x as f64),
            MetricColumn::Float(c) => c.get(i),
        }
    }
}

/// The steps of `runs`, their step metrics read from the columns `table` names; with
/// `classes`, each step's class floors and excess too (a JSON cell of a few KB per step,
/// so read only where a gate judges a class excess).
fn read_steps(
    store: &Store,
    runs: &[RunRow],
    kind: Option<&str>,
    classes: bool,
    table: &Metrics,
    v: &mut Verdicts,
) -> Result<Vec<StepRow>> {
    let mut want: Vec<(&str, Ty)> = vec![
        ("series", Ty::Int),
        ("index", Ty::Int),
        ("kind", Ty::Str),
        ("composition_requests", Ty::Int),
        ("mean_context", Ty::Float),
    ];
    for (c, float) in table.columns() {
        if !want.iter().any(|(w, _)| *w == c) {
            want.push((c, if float { Ty::Float } else { Ty::Int }));
        }
    }
    if classes {
        want.push(("attribution_classes", Ty::Str));
    }
    let want = want.as_slice();
    let kind = kind.map(str::to_owned);
    let build = |lf: LazyFrame| {
        let mut lf = lf
            .select(want.iter().map(|(c, _)| col(*c)).collect::<Vec<_>>())
            .filter(col("wall_ns").is_not_null());
        if let Some(k) = &kind {
            lf = lf.filter(col("kind").eq(lit(k.clone())));
        }
        lf
    };
    let mut kinds: HashMap<String, Arc<str>> = HashMap::new();
    let mut out = Vec::new();
    scan_table(store, runs, "steps", &build, want, &mut |df| {
        let run = df.column(TAG)?.u32()?;
        let series = ints(&df, "series")?;
        let index = ints(&df, "index")?;
        let kcol = str_col(&df, "kind")?;
        let req = ints(&df, "composition_requests")?;
        let ctx = df.column("mean_context")?.f64()?;
        let mut metric_cols: Vec<(&str, MetricColumn)> = Vec::new();
        for (c, float) in table.columns() {
            let col = if float {
                MetricColumn::Float(df.column(c)?.f64()?.clone())
            } else {
                MetricColumn::Int(ints(&df, c)?)
            };
            metric_cols.push((c, col));
        }
        let cells = if classes {
            Some(str_col(&df, "attribution_classes")?)
        } else {
            None
        };
        out.reserve(df.height());
        for i in 0..df.height() {
            let r = run.get(i).unwrap_or(0) as usize;
            // A missing busy, gap or launch count (a required metric) is no measurement:
            // it reads NaN, which fails bounds.
            let mut sample: StepSample = table.sample_from_columns(
                |c| {
                    metric_cols
                        .iter()
                        .find(|(n, _)| *n == c)
                        .and_then(|(_, col)| col.get(i))
                },
                ctx.get(i),
            );
            if let Some(why) = sample.bad_measurement(table) {
                v.bad(r, "steps", why);
                continue;
            }
            for why in sample.drop_bad_derived(table) {
                let e = v.dropped.entry(r).or_insert((0, why));
                e.0 += 1;
            }
            let k = kcol.get(i).unwrap_or("unknown");
            let kind = match kinds.get(k) {
                Some(a) => a.clone(),
                None => {
                    let a: Arc<str> = Arc::from(k);
                    kinds.insert(k.to_owned(), a.clone());
                    a
                }
            };
            out.push(StepRow {
                run: r,
                series: series.get(i).unwrap_or(0),
                index: index.get(i).unwrap_or(0),
                kind,
                batch: req.get(i).and_then(|r| u32::try_from(r).ok()),
                sample,
                classes: cells.map_or_else(Vec::new, |c| class_cells(c.get(i))),
            });
        }
        Ok(())
    })?;
    Ok(out)
}

/// The `step_kernels` rows of the given runs; the name/category filter is pushed into the
/// Parquet scan.
fn read_step_kernels(
    store: &Store,
    runs: &[RunRow],
    pick: &KernelPick,
    v: &mut Verdicts,
) -> Result<StepKernels> {
    let want: &[(&str, Ty)] = &[
        ("series", Ty::Int),
        ("step_index", Ty::Int),
        ("name", Ty::Str),
        ("short_name", Ty::Str),
        ("category", Ty::Str),
        ("exclusive_ns", Ty::Int),
        ("instances", Ty::Int),
    ];
    let build = |lf: LazyFrame| {
        let lf = lf.select(want.iter().map(|(c, _)| col(*c)).collect::<Vec<_>>());
        match pick {
            KernelPick::All => lf,
            KernelPick::Name(n) => lf.filter(
                col("name")
                    .eq(lit(n.clone()))
                    .or(col("short_name").eq(lit(n.clone()))),
            ),
            KernelPick::Category(c) => lf.filter(col("category").eq(lit(c.clone()))),
        }
    };
    let mut out = StepKernels::default();
    let mut ids: HashMap<String, u32> = HashMap::new();
    scan_table(store, runs, "step_kernels", &build, want, &mut |df| {
        let run = df.column(TAG)?.u32()?;
        let series = ints(&df, "series")?;
        let index = ints(&df, "step_index")?;
        let name = str_col(&df, "name")?;
        let short = str_col(&df, "short_name")?;
        let cat = str_col(&df, "category")?;
        let excl = ints(&df, "exclusive_ns")?;
        let inst = ints(&df, "instances")?;
        out.rows.reserve(df.height());
        for i in 0..df.height() {
            let r = run.get(i).unwrap_or(0) as usize;
            let n = name.get(i).unwrap_or_default();
            let x = excl.get(i).map_or(f64::NAN, |x| x as f64);
            let count = inst.get(i).map_or(f64::NAN, |x| x as f64);
            for (field, value, range) in [
                ("exclusive_ns", x, bounds::TIME),
                ("instances", count, bounds::COUNT),
            ] {
                if !range.holds(value) {
                    v.bad(
                        r,
                        "step_kernels",
                        OutOfRange {
                            field: format!("kernel {n} {field}"),
                            value,
                            range,
                        },
                    );
                }
            }
            let id = match ids.get(n) {
                Some(&id) => id,
                None => {
                    let id = out.names.len() as u32;
                    out.names.push(KernelName {
                        name: n.to_owned(),
                        short_name: short.get(i).unwrap_or_default().to_owned(),
                        category: cat.get(i).unwrap_or_default().to_owned(),
                    });
                    ids.insert(n.to_owned(), id);
                    id
                }
            };
            out.rows.push(StepKernelRow {
                run: r,
                series: series.get(i).unwrap_or(0),
                index: index.get(i).unwrap_or(0),
                name: id,
                exclusive_ns: x,
                instances: count,
            });
        }
        Ok(())
    })?;
    Ok(out)
}
