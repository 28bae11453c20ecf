//! Reading a dataset back: the `runs` table (small, one row per run) is scanned whole and
//! filtered here; per-step tables are scanned only for the chosen runs' own files, with
//! only the columns asked for (projection pushdown) and the kernel filter pushed into the
//! Parquet scan, so a year of history is never loaded.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use polars::prelude::*;

use crate::exit::{Error, Result};

/// One row of the `runs` table, with the file it came from.
#[derive(Debug, Clone, serde::Serialize)]
pub struct RunRow {
    pub run_id: String,
    pub exported_at_ns: i64,
    pub gpu_name: Option<String>,
    pub model: Option<String>,
    pub engine: Option<String>,
    pub source_format: Option<String>,
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

/// The run-level keys `--where` and `--by` accept (plus `kind`, a step-level key).
pub const RUN_KEYS: &[&str] = &["gpu", "model", "engine", "source_format", "run_id"];

/// `--where key=value,…`: every clause must hold. `gpu` and `model` match a
/// case-insensitive substring (`gpu=h100` matches `NVIDIA H100 80GB HBM3`); other keys
/// match exactly. `kind=…` filters steps, not runs.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    pub clauses: Vec<(String, String)>,
    pub kind: Option<String>,
}

impl Filter {
    /// Parse `--where` values (each may hold several comma-separated clauses).
    pub fn parse(items: &[String]) -> Result<Filter> {
        let mut f = Filter::default();
        for item in items {
            for clause in item.split(',').map(str::trim).filter(|c| !c.is_empty()) {
                let Some((k, v)) = clause.split_once('=') else {
                    return Err(Error::input(format!(
                        "--where {clause:?} is not key=value (e.g. --where gpu=h100,label.branch=main)"
                    )));
                };
                let (k, v) = (k.trim(), v.trim());
                check_key(k, "--where")?;
                if k == "kind" {
                    f.kind = Some(v.to_owned());
                } else {
                    f.clauses.push((k.to_owned(), v.to_owned()));
                }
            }
        }
        Ok(f)
    }

    /// Whether a run passes every run-level clause.
    pub fn matches(&self, r: &RunRow) -> bool {
        self.clauses.iter().all(|(k, v)| match r.key(k) {
            None => false,
            Some(x) if k == "gpu" || k == "model" => x.to_lowercase().contains(&v.to_lowercase()),
            Some(x) => x == *v,
        })
    }
}

/// Refuse a key that names nothing, saying which keys exist.
pub fn check_key(k: &str, flag: &str) -> Result<()> {
    let label = k.strip_prefix("label.").is_some_and(|l| !l.is_empty());
    if label || k == "kind" || RUN_KEYS.contains(&k) {
        Ok(())
    } else {
        Err(Error::input(format!(
            "{flag}: unknown key {k:?}: use gpu, model, engine, source_format, run_id, kind or label.NAME"
        )))
    }
}

fn scan_args() -> ScanArgsParquet {
    ScanArgsParquet {
        // Partition values are in the files too (full names, not path slugs).
        hive_options: HiveOptions {
            enabled: Some(false),
            ..Default::default()
        },
        // Files of older writers may lack columns added later.
        allow_missing_columns: true,
        ..Default::default()
    }
}

/// Scan one Parquet file lazily.
pub fn scan(path: &Path) -> Result<LazyFrame> {
    let s = path.to_str().ok_or_else(|| {
        Error::input(format!("{}: the dataset path is not UTF-8", path.display()))
    })?;
    Ok(LazyFrame::scan_parquet(PlRefPath::new(s), scan_args())?)
}

/// Every `runs/**/run-*.parquet` file under the dataset.
fn runs_files(dataset: &Path) -> Result<Vec<PathBuf>> {
    let root = dataset.join("runs");
    if !dataset.is_dir() {
        return Err(Error::input(format!(
            "{} is not a directory: pass a dataset written by `stepgate export`",
            dataset.display()
        )));
    }
    let mut out = Vec::new();
    for g in std::fs::read_dir(&root).into_iter().flatten().flatten() {
        for m in std::fs::read_dir(g.path()).into_iter().flatten().flatten() {
            for f in std::fs::read_dir(m.path()).into_iter().flatten().flatten() {
                let p = f.path();
                let name = f.file_name();
                let name = name.to_string_lossy();
                if name.starts_with("run-") && name.ends_with(".parquet") {
                    out.push(p);
                }
            }
        }
    }
    if out.is_empty() {
        return Err(Error::input(format!(
            "{} holds no runs: add one with `stepgate export REPORT -o {}`",
            dataset.display(),
            dataset.display()
        )));
    }
    out.sort();
    Ok(out)
}

fn str_col<'a>(df: &'a DataFrame, name: &str) -> Result<&'a StringChunked> {
    Ok(df.column(name)?.str()?)
}

/// Every run in the dataset, oldest first (export time, then run id).
pub fn read_runs(dataset: &Path) -> Result<Vec<RunRow>> {
    let files = runs_files(dataset)?;
    let cols = [
        "run_id",
        "exported_at_ns",
        "gpu_name",
        "model_name",
        "engine",
        "source_format",
        "labels",
    ];
    let mut out = Vec::with_capacity(files.len());
    // Lazy scans concatenated and collected a batch at a time (polars scans a batch's
    // files in parallel); the file index tells each row's partition.
    for (b, chunk) in files.chunks(BATCH).enumerate() {
        let lfs = chunk
            .iter()
            .enumerate()
            .map(|(j, f)| {
                Ok(scan(f)?
                    .select(cols.iter().map(|c| col(*c)).collect::<Vec<_>>())
                    .with_column(
                        lit((b * BATCH + j) as u32)
                            .cast(DataType::UInt32)
                            .alias("file"),
                    ))
            })
            .collect::<Result<Vec<_>>>()?;
        let df = concat(lfs, UnionArgs::default())?.collect().map_err(|e| {
            Error::input(format!(
                "{}: cannot read the runs table: {e}",
                dataset.display()
            ))
        })?;
        let id = str_col(&df, "run_id")?;
        let at = df.column("exported_at_ns")?.i64()?;
        let gpu = str_col(&df, "gpu_name")?;
        let model = str_col(&df, "model_name")?;
        let engine = str_col(&df, "engine")?;
        let fmt = str_col(&df, "source_format")?;
        let labels = str_col(&df, "labels")?;
        let file = df.column("file")?.u32()?;
        for i in 0..df.height() {
            let l: BTreeMap<String, String> = labels
                .get(i)
                .and_then(|s| serde_json::from_str(s).ok())
                .unwrap_or_default();
            out.push(RunRow {
                run_id: id.get(i).unwrap_or_default().to_owned(),
                exported_at_ns: at.get(i).unwrap_or(0),
                gpu_name: gpu.get(i).map(str::to_owned),
                model: model.get(i).map(str::to_owned),
                engine: engine.get(i).map(str::to_owned),
                source_format: fmt.get(i).map(str::to_owned),
                labels: l,
                runs_file: files[file.get(i).unwrap_or(0) as usize].clone(),
            });
        }
    }
    out.sort_by(|a, b| (a.exported_at_ns, &a.run_id).cmp(&(b.exported_at_ns, &b.run_id)));
    Ok(out)
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
    pub mean_context: Option<f64>,
    pub wall_ns: f64,
    pub period_ns: Option<f64>,
    pub busy_ns: f64,
    pub gap_ns: f64,
    pub launches: f64,
    pub mbu: Option<f64>,
}

/// Runs per collected batch: bounds memory (a batch's projected, filtered columns) while
/// letting polars scan a batch's files in parallel.
pub const BATCH: usize = 64;

/// Scan one table of `runs` batch by batch: `build` makes each run's lazy frame (projection
/// and filters pushed into the scan), a `run` column (index into `runs`) is added, and
/// `each` gets every collected batch.
fn scan_batches(
    runs: &[RunRow],
    table: &str,
    build: &dyn Fn(LazyFrame) -> LazyFrame,
    each: &mut dyn FnMut(DataFrame) -> Result<()>,
) -> Result<()> {
    for (b, chunk) in runs.chunks(BATCH).enumerate() {
        let mut lfs = Vec::with_capacity(chunk.len());
        for (j, r) in chunk.iter().enumerate() {
            let i = (b * BATCH + j) as u32;
            lfs.push(
                build(scan(&r.table_file(table))?)
                    .with_column(lit(i).cast(DataType::UInt32).alias("run")),
            );
        }
        let df = concat(lfs, UnionArgs::default())?
            .collect()
            .map_err(|e| Error::input(format!("cannot read the {table} table: {e}")))?;
        each(df)?;
    }
    Ok(())
}

/// The steps with GPU work of the given runs (index into `runs` kept in [`StepRow::run`]).
pub fn read_steps(runs: &[RunRow], kind: Option<&str>) -> Result<Vec<StepRow>> {
    let cols = [
        "series",
        "index",
        "kind",
        "composition_requests",
        "mean_context",
        "wall_ns",
        "period_ns",
        "busy_ns",
        "gap_ns",
        "launches",
        "attribution_floor_mbu",
    ];
    let kind = kind.map(str::to_owned);
    let build = |lf: LazyFrame| {
        let mut lf = lf
            .select(cols.iter().map(|c| col(*c)).collect::<Vec<_>>())
            .filter(col("wall_ns").is_not_null());
        if let Some(k) = &kind {
            lf = lf.filter(col("kind").eq(lit(k.clone())));
        }
        lf
    };
    let mut kinds: HashMap<String, Arc<str>> = HashMap::new();
    let mut out = Vec::new();
    scan_batches(runs, "steps", &build, &mut |df| {
        let run = df.column("run")?.u32()?;
        let series = df.column("series")?.i64()?;
        let index = df.column("index")?.i64()?;
        let kcol = str_col(&df, "kind")?;
        let req = df.column("composition_requests")?.i64()?;
        let ctx = df.column("mean_context")?.f64()?;
        let wall = df.column("wall_ns")?.i64()?;
        let period = df.column("period_ns")?.i64()?;
        let busy = df.column("busy_ns")?.i64()?;
        let gap = df.column("gap_ns")?.i64()?;
        let launches = df.column("launches")?.i64()?;
        let mbu = df.column("attribution_floor_mbu")?.f64()?;
        out.reserve(df.height());
        for i in 0..df.height() {
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
                run: run.get(i).unwrap_or(0) as usize,
                series: series.get(i).unwrap_or(0),
                index: index.get(i).unwrap_or(0),
                kind,
                batch: req.get(i).and_then(|r| u32::try_from(r).ok()),
                mean_context: ctx.get(i),
                wall_ns: wall.get(i).unwrap_or(0) as f64,
                period_ns: period.get(i).map(|p| p as f64),
                busy_ns: busy.get(i).unwrap_or(0) as f64,
                gap_ns: gap.get(i).unwrap_or(0) as f64,
                launches: launches.get(i).unwrap_or(0) as f64,
                mbu: mbu.get(i),
            });
        }
        Ok(())
    })?;
    Ok(out)
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

/// The `step_kernels` rows of the given runs; the name/category filter is pushed into the
/// Parquet scan.
pub fn read_step_kernels(runs: &[RunRow], pick: &KernelPick) -> Result<StepKernels> {
    let cols = [
        "series",
        "step_index",
        "name",
        "short_name",
        "category",
        "exclusive_ns",
        "instances",
    ];
    let build = |lf: LazyFrame| {
        let lf = lf.select(cols.iter().map(|c| col(*c)).collect::<Vec<_>>());
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
    scan_batches(runs, "step_kernels", &build, &mut |df| {
        let run = df.column("run")?.u32()?;
        let series = df.column("series")?.i64()?;
        let index = df.column("step_index")?.i64()?;
        let name = str_col(&df, "name")?;
        let short = str_col(&df, "short_name")?;
        let cat = str_col(&df, "category")?;
        let excl = df.column("exclusive_ns")?.i64()?;
        let inst = df.column("instances")?.i64()?;
        out.rows.reserve(df.height());
        for i in 0..df.height() {
            let n = name.get(i).unwrap_or_default();
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
                run: run.get(i).unwrap_or(0) as usize,
                series: series.get(i).unwrap_or(0),
                index: index.get(i).unwrap_or(0),
                name: id,
                exclusive_ns: excl.get(i).unwrap_or(0) as f64,
                instances: inst.get(i).unwrap_or(0) as f64,
            });
        }
        Ok(())
    })?;
    Ok(out)
}

/// Parse `--since YYYY-MM-DD` (UTC midnight) to Unix-epoch ns.
pub fn parse_date(s: &str) -> Result<i64> {
    let bad = || Error::input(format!("--since {s:?} is not a date like 2026-01-31"));
    let mut it = s.trim().splitn(3, '-');
    let y: i64 = it.next().and_then(|x| x.parse().ok()).ok_or_else(bad)?;
    let m: i64 = it.next().and_then(|x| x.parse().ok()).ok_or_else(bad)?;
    let d: i64 = it.next().and_then(|x| x.parse().ok()).ok_or_else(bad)?;
    if !(1..=12).contains(&m) || !(1..=31).contains(&d) {
        return Err(bad());
    }
    Ok(days_from_civil(y, m, d) * 86_400 * 1_000_000_000)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// `YYYY-MM-DD HH:MM:SS` (UTC) of Unix-epoch ns.
pub fn fmt_time(ns: i64) -> String {
    let secs = ns.div_euclid(1_000_000_000);
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    // Inverse of days_from_civil (H. Hinnant).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_round_trip() {
        // 2000-03-01 is day 11,017 since the epoch (30 years × 365 + 7 leap days + Jan + Feb).
        assert_eq!(days_from_civil(2000, 3, 1), 30 * 365 + 7 + 31 + 29);
        assert_eq!(parse_date("1970-01-02").unwrap(), 86_400_000_000_000);
        assert_eq!(
            fmt_time(parse_date("2026-11-30").unwrap() + 3_661_000_000_000),
            "2026-11-30 01:01:01"
        );
        assert!(parse_date("2026-13-01").is_err());
        assert!(parse_date("yesterday").is_err());
    }

    #[test]
    fn where_clauses() {
        let f =
            Filter::parse(&["gpu=h100, label.branch=main".into(), "kind=decode".into()]).unwrap();
        assert_eq!(f.kind.as_deref(), Some("decode"));
        let mut r = RunRow {
            run_id: "x".into(),
            exported_at_ns: 0,
            gpu_name: Some("NVIDIA H100 80GB HBM3".into()),
            model: None,
            engine: None,
            source_format: None,
            labels: BTreeMap::new(),
            runs_file: PathBuf::from("/d/runs/gpu=a/model=b/run-x.parquet"),
        };
        assert!(!f.matches(&r), "no branch label");
        r.labels.insert("branch".into(), "main".into());
        assert!(f.matches(&r));
        r.labels.insert("branch".into(), "mainline".into());
        assert!(!f.matches(&r), "labels match exactly");
        assert!(Filter::parse(&["colour=red".into()]).is_err());
        assert_eq!(
            r.table_file("steps"),
            PathBuf::from("/d/steps/gpu=a/model=b/run-x.parquet")
        );
    }
}
