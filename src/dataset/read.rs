//! Reading a dataset back, as data from outside: the `runs` table (small, one row per run,
//! scanned whole) and the file-by-file scan every table's reader shares (`dataset::rows`
//! reads the per-step tables with it).
//!
//! Nothing is trusted blindly: a file that cannot be read (zero bytes, truncated, not
//! Parquet, another schema) is named in a one-line error that says what to do; a `runs` row
//! that breaks the rules — a schema from the future, no run id, labels that are not JSON —
//! is left out with a warning naming its file; the same run id in two partitions is counted
//! once, with a warning.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use polars::prelude::*;

use crate::dataset::layout;
use crate::dataset::schema::{Ty, SCHEMA_VERSION};
use crate::exit::{Error, Result};
use crate::wire::dataset::RunRow;

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

/// Scan one Parquet file lazily. What is not a regular file (a FIFO would block the read
/// forever, a device never ends) is refused before it is opened.
pub fn scan(path: &Path) -> Result<LazyFrame> {
    if !std::fs::metadata(path).is_ok_and(|m| m.is_file()) {
        return Err(damaged(path, "not a regular file"));
    }
    let s = path.to_str().ok_or_else(|| {
        Error::input(format!("{}: the dataset path is not UTF-8", path.display()))
    })?;
    LazyFrame::scan_parquet(PlRefPath::new(s), scan_args()).map_err(|e| damaged(path, &reason(&e)))
}

/// The column that tells each row's file (its index in the batch's list) after a concat.
pub(crate) const TAG: &str = "__file";

/// Whether a column of a collected frame has the type the table's schema gives it.
pub(crate) fn type_error(df: &DataFrame, want: &[(&str, Ty)]) -> Option<String> {
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

/// Scan `files` [`BATCH`] at a time: `build` makes each file's lazy frame (projection and
/// filters pushed into the scan) and `each` gets every collected batch, whose [`TAG`]
/// column is the index into `files`.
pub(crate) fn scan_files(
    files: &[PathBuf],
    build: &dyn Fn(LazyFrame) -> LazyFrame,
    want: &[(&str, Ty)],
    each: &mut dyn FnMut(DataFrame) -> Result<()>,
) -> Result<()> {
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

pub(crate) fn str_col<'a>(df: &'a DataFrame, name: &str) -> Result<&'a StringChunked> {
    Ok(df.column(name)?.str()?)
}

/// Integers of an Int64 or Int32 column (the types [`type_error`] lets through).
pub(crate) fn ints(df: &DataFrame, name: &str) -> Result<Int64Chunked> {
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
    scan_files(&files, &build, want, &mut |df| {
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
