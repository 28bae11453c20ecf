//! Reading a dataset back, as data from outside. The `runs` table (small, one row per run)
//! is scanned whole; per-step tables are scanned only for the chosen runs' own files, with
//! only the columns asked for (projection pushdown) and the kernel filter pushed into the
//! Parquet scan, so a year of history is never loaded.
//!
//! Nothing is trusted blindly: a file that cannot be read (zero bytes, truncated, not
//! Parquet, another schema) is named in a one-line error that says what to do; a run
//! whose rows break the rules — a schema from the future, no run id, labels that are not
//! JSON, a sample outside [`bounds`] — is left out with a warning naming its file; the
//! same run id in two partitions is counted once, with a warning.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use polars::prelude::*;

use crate::baseline::model::bounds::{self, OutOfRange, StepSample};
use crate::dataset::layout;
use crate::dataset::schema::{Ty, SCHEMA_VERSION};
use crate::exit::{Error, Result};

pub use crate::dataset::dates::{fmt_time, parse_date};
pub use crate::dataset::filter::{check_key, Filter, RUN_KEYS};

/// One row of the `runs` table, with the file it came from.
#[derive(Debug, Clone, serde::Serialize)]
pub struct RunRow {
    pub run_id: String,
    pub exported_at_ns: i64,
    pub gpu_name: Option<String>,
    pub model: Option<String>,
    pub engine: Option<String>,
    pub source_format: Option<String>,
    #[serde(skip)]
    pub report_sha256: Option<String>,
    pub labels: BTreeMap<String, String>,
    #[serde(skip)]
    pub runs_file: PathBuf,
}

impl RunRow {
    /// The file of another table of this run (same partition).
    pub fn table_file(&self, table: &str) -> PathBuf {
        // runs_file = DATASET/runs/gpu=…/model=…/run-….parquet
        let name = self
            .runs_file
            .file_name()
            .map(PathBuf::from)
            .unwrap_or_default();
        let model = self.runs_file.parent();
        let gpu = model.and_then(Path::parent);
        let root = gpu.and_then(Path::parent).and_then(Path::parent);
        match (root, gpu, model) {
            (Some(r), Some(g), Some(m)) => r
                .join(table)
                .join(g.file_name().unwrap_or_default())
                .join(m.file_name().unwrap_or_default())
                .join(name),
            _ => PathBuf::new(),
        }
    }

    /// The value of a `--where`/`--by` key for this run: `gpu`, `model`, `engine`,
    /// `source_format`, `run_id` or `label.NAME`.
    pub fn key(&self, key: &str) -> Option<String> {
        match key {
            "gpu" => self.gpu_name.clone(),
            "model" => self.model.clone(),
            "engine" => self.engine.clone(),
            "source_format" => self.source_format.clone(),
            "run_id" => Some(self.run_id.clone()),
            k => k
                .strip_prefix("label.")
                .and_then(|l| self.labels.get(l).cloned()),
        }
    }
}

fn scan_args() -> ScanArgsParquet {
    ScanArgsParquet {
        // Partition values are in the files too (full names, not path slugs).
        hive_options: HiveOptions {
            enabled: Some(false),
            ..Default::default()
        },
        ..Default::default()
    }
}

/// What to do about a damaged file, said once.
const MOVE_ASIDE: &str = "move it aside and re-export that run \
     (`stepgate export REPORT -o DATASET --replace`)";

/// A polars message cut to one short line (its first line, without the list of valid
/// columns some messages append).
fn reason(e: &dyn std::fmt::Display) -> String {
    let full = e.to_string();
    let line = full.lines().next().unwrap_or("").trim();
    let line = line.split("; valid columns").next().unwrap_or(line);
    let mut out: String = line.chars().filter(|c| !c.is_control()).take(160).collect();
    if out.len() < line.len() {
        out.push('…');
    }
    out
}

/// The one-line error for a file that cannot be read as the table it should be.
fn damaged(file: &Path, why: &str) -> Error {
    if std::fs::symlink_metadata(file).is_err() {
        return Error::input(format!(
            "dataset file {} is missing (its run's `runs` file names it): re-export that run \
             (`stepgate export REPORT -o DATASET --replace`), or remove the run's `runs` file",
            file.display()
        ));
    }
    Error::input(format!(
        "dataset file {} cannot be read ({why}): {MOVE_ASIDE}",
        file.display()
    ))
}

/// Scan one Parquet file lazily.
pub fn scan(path: &Path) -> Result<LazyFrame> {
    let s = path.to_str().ok_or_else(|| {
        Error::input(format!("{}: the dataset path is not UTF-8", path.display()))
    })?;
    LazyFrame::scan_parquet(PlRefPath::new(s), scan_args()).map_err(|e| damaged(path, &reason(&e)))
}

/// The column that tells each row's file (its index in the batch's list) after a concat.
const TAG: &str = "__file";

/// Whether a column of a collected frame has the type the table's schema gives it.
fn type_error(df: &DataFrame, want: &[(&str, Ty)]) -> Option<String> {
    want.iter().find_map(|(name, ty)| {
        let c = df.column(name).ok()?;
        let ok = match ty {
            Ty::Int => matches!(c.dtype(), DataType::Int64 | DataType::Int32),
            Ty::Float => matches!(c.dtype(), DataType::Float64),
            Ty::Bool => matches!(c.dtype(), DataType::Boolean),
            Ty::Str => matches!(c.dtype(), DataType::String),
        };
        (!ok).then(|| format!("column {name} is {}, not {ty:?}", c.dtype()))
    })
}

/// Collect `build(scan(file))` for a batch of files, concatenated, with a [`TAG`] column
/// holding each row's index into `files`, and hand the frame to `each`. The fast path is one
/// concatenated collect (polars scans the files in parallel); when it fails, or a column
/// has the wrong type, the files are collected one at a time so the error names the file.
fn collect_batch(
    files: &[(u32, &Path)],
    build: &dyn Fn(LazyFrame) -> LazyFrame,
    want: &[(&str, Ty)],
    each: &mut dyn FnMut(DataFrame) -> Result<()>,
) -> Result<()> {
    let one = |i: u32, f: &Path| -> Result<LazyFrame> {
        Ok(build(scan(f)?).with_column(lit(i).cast(DataType::UInt32).alias(TAG)))
    };
    if files.len() > 1 {
        let lfs = files
            .iter()
            .map(|&(i, f)| one(i, f))
            .collect::<Result<Vec<_>>>()?;
        if let Ok(df) = concat(lfs, UnionArgs::default()).and_then(LazyFrame::collect) {
            if type_error(&df, want).is_none() {
                return each(df);
            }
        }
    }
    for &(i, f) in files {
        let df = one(i, f)?.collect().map_err(|e| damaged(f, &reason(&e)))?;
        if let Some(why) = type_error(&df, want) {
            return Err(damaged(f, &why));
        }
        each(df)?;
    }
    Ok(())
}

fn str_col<'a>(df: &'a DataFrame, name: &str) -> Result<&'a StringChunked> {
    Ok(df.column(name)?.str()?)
}

/// Integers of an Int64 or Int32 column (the types [`type_error`] lets through).
fn ints(df: &DataFrame, name: &str) -> Result<Int64Chunked> {
    let c = df.column(name)?;
    Ok(match c.dtype() {
        DataType::Int32 => c.cast(&DataType::Int64)?.i64()?.clone(),
        _ => c.i64()?.clone(),
    })
}

/// Runs per collected batch: bounds memory (a batch's projected, filtered columns) while
/// letting polars scan a batch's files in parallel.
pub const BATCH: usize = 64;

/// The latest export time a run may carry (2^62 ns after the epoch, the year 2116).
const MAX_EPOCH_NS: i64 = 1 << 62;

/// Why a `runs` row is not a run this build can use, or `None`.
fn refuse_row(
    file: &Path,
    version: Option<i64>,
    run_id: Option<&str>,
    at: Option<i64>,
) -> Option<String> {
    let named = layout::run_id_of(file);
    Some(match (version, run_id, at) {
        (None, ..) => "has no schema_version: not a file `stepgate export` wrote".to_owned(),
        (Some(v), ..) if v > i64::from(SCHEMA_VERSION) => format!(
            "was written by a newer stepgate (schema_version {v}; this build reads up to \
             {SCHEMA_VERSION}): upgrade stepgate to read it"
        ),
        (Some(v), ..) if v < 1 => format!("has schema_version {v}, which no stepgate writes"),
        (_, None | Some(""), _) => "has no run_id".to_owned(),
        (_, Some(id), _) if Some(id) != named => format!(
            "holds run {id:?} but is named {}: renamed or copied by hand?",
            file.file_name().unwrap_or_default().to_string_lossy()
        ),
        (_, _, None) => "has no exported_at_ns".to_owned(),
        (_, _, Some(t)) if !(0..=MAX_EPOCH_NS).contains(&t) => {
            format!("has exported_at_ns {t}, which is not a time after 1970 and before 2116")
        }
        _ => return None,
    })
}

/// Every usable run in the dataset, oldest first (export time, then run id), and the
/// warnings about rows left out. A dataset that does not exist or holds no runs gives an
/// empty list (the caller says what that means for it).
pub fn read_runs(dataset: &Path, warnings: &mut Vec<String>) -> Result<Vec<RunRow>> {
    if std::fs::metadata(dataset).is_ok_and(|m| !m.is_dir()) {
        return Err(Error::input(format!(
            "{} is not a directory: pass a dataset written by `stepgate export`",
            dataset.display()
        )));
    }
    let files = layout::table_files(dataset, "runs");
    let want: &[(&str, Ty)] = &[
        ("schema_version", Ty::Int),
        ("run_id", Ty::Str),
        ("exported_at_ns", Ty::Int),
        ("gpu_name", Ty::Str),
        ("model_name", Ty::Str),
        ("engine", Ty::Str),
        ("source_format", Ty::Str),
        ("labels", Ty::Str),
        ("report_sha256", Ty::Str),
    ];
    let build = |lf: LazyFrame| lf.select(want.iter().map(|(c, _)| col(*c)).collect::<Vec<_>>());
    let mut out: Vec<RunRow> = Vec::with_capacity(files.len());
    for (b, chunk) in files.chunks(BATCH).enumerate() {
        let tagged: Vec<(u32, &Path)> = chunk
            .iter()
            .enumerate()
            .map(|(j, f)| ((b * BATCH + j) as u32, f.as_path()))
            .collect();
        collect_batch(&tagged, &build, want, &mut |df| {
            let version = ints(&df, "schema_version")?;
            let id = str_col(&df, "run_id")?;
            let at = ints(&df, "exported_at_ns")?;
            let gpu = str_col(&df, "gpu_name")?;
            let model = str_col(&df, "model_name")?;
            let engine = str_col(&df, "engine")?;
            let fmt = str_col(&df, "source_format")?;
            let labels = str_col(&df, "labels")?;
            let sha = str_col(&df, "report_sha256")?;
            let file = df.column(TAG)?.u32()?;
            for i in 0..df.height() {
                let f = &files[file.get(i).unwrap_or(0) as usize];
                let skip = |why: String| {
                    format!(
                        "{}: {why}; the run is left out (remove the file, or re-export the \
                         run with --replace)",
                        f.display()
                    )
                };
                if let Some(why) = refuse_row(f, version.get(i), id.get(i), at.get(i)) {
                    warnings.push(skip(why));
                    continue;
                }
                let l: Option<BTreeMap<String, String>> = match labels.get(i) {
                    None => Some(BTreeMap::new()),
                    Some(s) => serde_json::from_str(s).ok(),
                };
                let Some(l) = l else {
                    warnings.push(skip(
                        "its labels are not a JSON object of strings".to_owned(),
                    ));
                    continue;
                };
                out.push(RunRow {
                    run_id: id.get(i).unwrap_or_default().to_owned(),
                    exported_at_ns: at.get(i).unwrap_or(0),
                    gpu_name: gpu.get(i).map(str::to_owned),
                    model: model.get(i).map(str::to_owned),
                    engine: engine.get(i).map(str::to_owned),
                    source_format: fmt.get(i).map(str::to_owned),
                    report_sha256: sha.get(i).map(str::to_owned),
                    labels: l,
                    runs_file: f.clone(),
                });
            }
            Ok(())
        })?;
    }
    out.sort_by(|a, b| (a.exported_at_ns, &a.run_id).cmp(&(b.exported_at_ns, &b.run_id)));
    Ok(once_each(out, warnings))
}

/// One row per run id: the same run in two partitions (a replace that was interrupted, a
/// copy by hand) keeps its newest export, with a warning naming both files.
fn once_each(runs: Vec<RunRow>, warnings: &mut Vec<String>) -> Vec<RunRow> {
    let mut last: HashMap<&str, usize> = HashMap::with_capacity(runs.len());
    for (i, r) in runs.iter().enumerate() {
        // Sorted oldest first, so the last one seen is the newest.
        last.insert(&r.run_id, i);
    }
    if last.len() == runs.len() {
        return runs;
    }
    let keep: Vec<bool> = (0..runs.len())
        .map(|i| last.get(runs[i].run_id.as_str()) == Some(&i))
        .collect();
    for (i, r) in runs.iter().enumerate() {
        if !keep[i] {
            let kept = &runs[last[r.run_id.as_str()]];
            warnings.push(format!(
                "run {} is in the dataset twice ({} and {}): counted once, as its newer \
                 export; remove the other file (re-exporting the run with --replace repairs it)",
                r.run_id,
                r.runs_file.display(),
                kept.runs_file.display()
            ));
        }
    }
    runs.into_iter()
        .zip(keep)
        .filter_map(|(r, k)| k.then_some(r))
        .collect()
}

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
}

/// One (step, op name) row of a stored run; names index into [`StepKernels::names`].
#[derive(Debug, Clone, Copy)]
pub struct StepKernelRow {
    pub run: usize,
    pub series: i64,
    pub index: i64,
    pub name: u32,
    pub exclusive_ns: f64,
    pub instances: f64,
}

/// An op's identity: full name, short name, category.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct KernelName {
    pub name: String,
    pub short_name: String,
    pub category: String,
}

/// `step_kernels` rows with their names interned (a few hundred names over millions of rows).
#[derive(Debug, Clone, Default)]
pub struct StepKernels {
    pub names: Vec<KernelName>,
    pub rows: Vec<StepKernelRow>,
}

/// Which `step_kernels` rows to read.
#[derive(Debug, Clone)]
pub enum KernelPick {
    All,
    /// Rows whose full or short name is this.
    Name(String),
    /// Rows of this category.
    Category(String),
}

/// The stored steps (with GPU work) and step kernels of some runs, every row held to
/// [`bounds`].
#[derive(Debug, Default)]
pub struct RunData {
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
    fn warn(&self, runs: &[RunRow], warnings: &mut Vec<String>) {
        let mut bad: Vec<_> = self.bad.iter().collect();
        bad.sort_by_key(|(r, _)| **r);
        for (&r, (table, why)) in bad {
            warnings.push(format!(
                "{}: a sample is outside what a baseline holds ({why}): run {} is left out; \
                 re-export it from its report with --replace, or remove its files",
                runs[r].table_file(table).display(),
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
                runs[r].table_file("steps").display()
            ));
        }
    }
}

/// Read the steps with GPU work of `runs` (optionally of one kind) and, when `pick` is
/// given, their step kernels. A run with a measured sample out of [`bounds`] in either
/// table is left out of both, with a warning naming the file.
pub fn read_run_data(
    runs: &[RunRow],
    kind: Option<&str>,
    pick: Option<&KernelPick>,
    warnings: &mut Vec<String>,
) -> Result<RunData> {
    let mut v = Verdicts::default();
    let mut out = RunData {
        steps: read_steps(runs, kind, &mut v)?,
        ..RunData::default()
    };
    if let Some(p) = pick {
        out.kernels = read_step_kernels(runs, p, &mut v)?;
    }
    v.warn(runs, warnings);
    if !v.bad.is_empty() {
        out.steps.retain(|s| !v.bad.contains_key(&s.run));
        out.kernels.rows.retain(|k| !v.bad.contains_key(&k.run));
        out.left_out = v.bad.keys().copied().collect();
        out.left_out.sort_unstable();
    }
    Ok(out)
}

/// Scan one table of `runs` batch by batch: `build` makes each run's lazy frame (projection
/// and filters pushed into the scan) and `each` gets every collected batch, whose [`TAG`]
/// column is the index into `runs`.
fn scan_table(
    runs: &[RunRow],
    table: &str,
    build: &dyn Fn(LazyFrame) -> LazyFrame,
    want: &[(&str, Ty)],
    each: &mut dyn FnMut(DataFrame) -> Result<()>,
) -> Result<()> {
    let files: Vec<PathBuf> = runs.iter().map(|r| r.table_file(table)).collect();
    for (b, chunk) in files.chunks(BATCH).enumerate() {
        let tagged: Vec<(u32, &Path)> = chunk
            .iter()
            .enumerate()
            .map(|(j, f)| ((b * BATCH + j) as u32, f.as_path()))
            .collect();
        collect_batch(&tagged, build, want, each)?;
    }
    Ok(())
}

fn read_steps(runs: &[RunRow], kind: Option<&str>, v: &mut Verdicts) -> Result<Vec<StepRow>> {
    let want: &[(&str, Ty)] = &[
        ("series", Ty::Int),
        ("index", Ty::Int),
        ("kind", Ty::Str),
        ("composition_requests", Ty::Int),
        ("mean_context", Ty::Float),
        ("wall_ns", Ty::Int),
        ("period_ns", Ty::Int),
        ("busy_ns", Ty::Int),
        ("gap_ns", Ty::Int),
        ("launches", Ty::Int),
        ("attribution_floor_mbu", Ty::Float),
    ];
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
    scan_table(runs, "steps", &build, want, &mut |df| {
        let run = df.column(TAG)?.u32()?;
        let series = ints(&df, "series")?;
        let index = ints(&df, "index")?;
        let kcol = str_col(&df, "kind")?;
        let req = ints(&df, "composition_requests")?;
        let ctx = df.column("mean_context")?.f64()?;
        let wall = ints(&df, "wall_ns")?;
        let period = ints(&df, "period_ns")?;
        let busy = ints(&df, "busy_ns")?;
        let gap = ints(&df, "gap_ns")?;
        let launches = ints(&df, "launches")?;
        let mbu = df.column("attribution_floor_mbu")?.f64()?;
        out.reserve(df.height());
        for i in 0..df.height() {
            let r = run.get(i).unwrap_or(0) as usize;
            let mut sample = StepSample {
                wall_ns: wall.get(i).unwrap_or(0) as f64,
                period_ns: period.get(i).map(|p| p as f64),
                // A missing busy, gap or launch count is no measurement: NaN fails bounds.
                busy_ns: busy.get(i).map_or(f64::NAN, |x| x as f64),
                gap_ns: gap.get(i).map_or(f64::NAN, |x| x as f64),
                launches: launches.get(i).map_or(f64::NAN, |x| x as f64),
                mbu: mbu.get(i),
                mean_context: ctx.get(i),
            };
            if let Some(why) = sample.bad_measurement() {
                v.bad(r, "steps", why);
                continue;
            }
            for why in sample.drop_bad_derived() {
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
            });
        }
        Ok(())
    })?;
    Ok(out)
}

/// The `step_kernels` rows of the given runs; the name/category filter is pushed into the
/// Parquet scan.
fn read_step_kernels(runs: &[RunRow], pick: &KernelPick, v: &mut Verdicts) -> Result<StepKernels> {
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
    scan_table(runs, "step_kernels", &build, want, &mut |df| {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn row(id: &str, at: i64, file: &str) -> RunRow {
        RunRow {
            run_id: id.into(),
            exported_at_ns: at,
            gpu_name: None,
            model: None,
            engine: None,
            source_format: None,
            report_sha256: None,
            labels: BTreeMap::new(),
            runs_file: PathBuf::from(file),
        }
    }

    #[test]
    fn table_files_are_in_the_same_partition() {
        assert_eq!(
            row("x", 0, "/d/runs/gpu=a/model=b/run-x.parquet").table_file("steps"),
            PathBuf::from("/d/steps/gpu=a/model=b/run-x.parquet")
        );
    }

    #[test]
    fn rows_that_are_not_runs_are_named() {
        let f = Path::new("/d/runs/gpu=a/model=b/run-abc.parquet");
        let why = |v, id, at| refuse_row(f, v, id, at);
        assert_eq!(why(Some(1), Some("abc"), Some(5)), None);
        assert!(why(Some(2), Some("abc"), Some(5))
            .unwrap()
            .contains("newer stepgate"));
        assert!(why(None, Some("abc"), Some(5))
            .unwrap()
            .contains("no schema_version"));
        assert!(why(Some(0), Some("abc"), Some(5))
            .unwrap()
            .contains("schema_version 0"));
        assert!(why(Some(1), None, Some(5)).unwrap().contains("no run_id"));
        assert!(why(Some(1), Some(""), Some(5))
            .unwrap()
            .contains("no run_id"));
        assert!(why(Some(1), Some("abd"), Some(5))
            .unwrap()
            .contains("holds run \"abd\""));
        assert!(why(Some(1), Some("abc"), Some(-1))
            .unwrap()
            .contains("not a time"));
        assert!(why(Some(1), Some("abc"), None)
            .unwrap()
            .contains("no exported_at_ns"));
    }

    #[test]
    fn a_run_in_two_partitions_counts_once_as_its_newest_export() {
        let mut w = Vec::new();
        let runs = vec![
            row("a", 1, "/d/runs/gpu=x/model=m/run-a.parquet"),
            row("b", 2, "/d/runs/gpu=x/model=m/run-b.parquet"),
            row("a", 3, "/d/runs/gpu=y/model=m/run-a.parquet"),
        ];
        let kept = once_each(runs, &mut w);
        let ids: Vec<(&str, i64)> = kept
            .iter()
            .map(|r| (r.run_id.as_str(), r.exported_at_ns))
            .collect();
        assert_eq!(ids, vec![("b", 2), ("a", 3)]);
        assert_eq!(w.len(), 1);
        assert!(w[0].contains("gpu=x") && w[0].contains("gpu=y"), "{}", w[0]);
    }

    #[test]
    fn polars_messages_become_one_short_line() {
        let long = format!(
            "unable to find column \"x\"; valid columns: [{}]\n\nResolved plan",
            "\"c\", ".repeat(200)
        );
        let r = reason(&long);
        assert_eq!(r, "unable to find column \"x\"");
        let r = reason(&"y".repeat(500));
        assert_eq!(r.chars().count(), 161);
    }
}
