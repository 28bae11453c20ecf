//! Reading a dataset back, as data from outside: the `runs` table (one small object per
//! committed run) and the object-by-object read every table's reader shares
//! (`dataset::rows` reads the per-step tables with it), through the dataset's store.
//!
//! Nothing is trusted blindly: an object that cannot be read (zero bytes, truncated, not
//! Parquet, another schema) is named in a one-line error that says what to do; a `runs` row
//! that breaks the rules — a schema from the future, no run id, labels that are not JSON —
//! is left out with a warning naming its object, and so is an object in a `runs` partition
//! that stepgate does not name that way; the same run id in two partitions is counted
//! once, with a warning.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use polars::prelude::*;

use crate::dataset::layout::{self, Prune};
use crate::dataset::schema::{Ty, SCHEMA_VERSION};
use crate::dataset::store::{Obj, Store};
use crate::exit::{Error, Result};
use crate::wire::dataset::RunRow;

impl RunRow {
    /// The key of another table's object of this run (same partition, same export).
    pub fn table_file(&self, table: &str) -> String {
        let key = self.runs_file.to_string_lossy();
        match layout::parse_key(&key) {
            Some(p) => {
                layout::table_key(table, p.gpu, p.model, p.run_id, self.export_id.as_deref())
            }
            None => String::new(),
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

/// The one-line error for an object that cannot be read as the table it should be.
fn damaged(name: &str, why: &str) -> Error {
    Error::input(format!(
        "dataset file {name} cannot be read ({why}): {MOVE_ASIDE}"
    ))
}

fn missing(name: &str) -> Error {
    Error::input(format!(
        "dataset file {name} is missing (its run's `runs` file names it): re-export that run \
         (`stepgate export REPORT -o DATASET --replace`), or remove the run's `runs` file"
    ))
}

/// Decode one Parquet object, only the `columns` given (all when empty).
pub fn decode(name: &str, bytes: Vec<u8>, columns: &[&str]) -> Result<DataFrame> {
    let mut r = ParquetReader::new(std::io::Cursor::new(bytes));
    if columns.is_empty() {
        return r.finish().map_err(|e| damaged(name, &reason(&e)));
    }
    // A column an object may lack (added later, or written only with a model) is null.
    let mut absent: Vec<(&str, Ty)> = Vec::new();
    if columns.iter().any(|c| null_when_absent(c).is_some()) {
        let schema = r.schema().map_err(|e| damaged(name, &reason(&e)))?;
        absent = columns
            .iter()
            .filter_map(|c| null_when_absent(c).map(|ty| (*c, ty)))
            .filter(|(c, _)| !schema.contains(c))
            .collect();
    }
    let read: Vec<String> = columns
        .iter()
        .filter(|c| !absent.iter().any(|(a, _)| a == *c))
        .map(|c| (*c).to_owned())
        .collect();
    let mut df = r
        .with_columns(Some(read))
        .finish()
        .map_err(|e| damaged(name, &reason(&e)))?;
    for (c, ty) in absent {
        let dtype = match ty {
            Ty::Int => DataType::Int64,
            Ty::Float => DataType::Float64,
            Ty::Bool => DataType::Boolean,
            Ty::Str => DataType::String,
        };
        let nulls = Column::full_null(c.into(), df.height(), &dtype);
        df.with_column(nulls)
            .map_err(|e| damaged(name, &reason(&e)))?;
    }
    Ok(df)
}

/// Columns an object may lack without being damaged ([`crate::dataset::schema::NULL_WHEN_ABSENT`]),
/// with their type: an object that lacks one reads it as nulls.
fn null_when_absent(column: &str) -> Option<Ty> {
    if column == "schema_version" {
        // Checked where present ([`scan_files`]); the `runs` row's is required.
        return Some(Ty::Int);
    }
    crate::dataset::schema::NULL_WHEN_ABSENT
        .iter()
        .find(|(c, _)| *c == column)
        .map(|(_, ty)| *ty)
}

/// The column that tells each row's object (its index in the batch's list) after a concat.
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

/// Read `keys` [`BATCH`] at a time (the requests of a batch in parallel): each object is
/// decoded with the `want` columns, `build` filters it (a lazy frame over the decoded
/// columns), and `each` gets every batch concatenated, whose [`TAG`] column is the index
/// into `keys`. A type that is not the schema's is named with its object.
pub(crate) fn scan_files(
    store: &Store,
    keys: &[String],
    build: &dyn Fn(LazyFrame) -> LazyFrame,
    want: &[(&str, Ty)],
    each: &mut dyn FnMut(DataFrame) -> Result<()>,
) -> Result<()> {
    let mut cols: Vec<&str> = want.iter().map(|(c, _)| *c).collect();
    let versioned = !cols.contains(&"schema_version");
    if versioned {
        cols.push("schema_version");
    }
    for (b, chunk) in keys.chunks(BATCH).enumerate() {
        let got = store.get_many(chunk)?;
        let mut frames = Vec::with_capacity(chunk.len());
        for (j, (key, bytes)) in chunk.iter().zip(got).enumerate() {
            let name = store.name_of(key);
            let bytes = bytes.ok_or_else(|| missing(&name))?;
            let mut df = decode(&name, bytes, &cols)?;
            if let Some(why) = type_error(&df, want) {
                return Err(damaged(&name, &why));
            }
            if versioned {
                crate::dataset::schema::newer_refused(&name, &df)?;
                df = df.drop("schema_version")?;
            }
            let i = (b * BATCH + j) as u32;
            let df = build(df.lazy())
                .with_column(lit(i).cast(DataType::UInt32).alias(TAG))
                .collect()
                .map_err(|e| damaged(&name, &reason(&e)))?;
            frames.push(df.lazy());
        }
        if frames.is_empty() {
            continue;
        }
        let df = concat(frames, UnionArgs::default())
            .and_then(LazyFrame::collect)
            .map_err(|e| {
                Error::input(format!(
                    "cannot combine the dataset's files: {}",
                    reason(&e)
                ))
            })?;
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

/// Objects read per batch: bounds memory while keeping many requests in flight.
pub(crate) const BATCH: usize = 64;

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

/// The `runs` objects of the partitions `gpu` and `model` may hold a match in, whose names
/// may carry every one of the label digests `labels` ([`layout::required_digests`]; a
/// name without digests always may), with the store's last-modified time (when the commit
/// landed). Objects there that stepgate does not name that way are left out with a
/// warning.
pub(crate) fn list_runs(
    store: &Store,
    gpu: &Prune,
    model: &Prune,
    labels: &[String],
    warnings: &mut Vec<String>,
) -> Result<Vec<Obj>> {
    let mut out = Vec::new();
    for g in store.list_dirs("runs")? {
        let Some(gs) = g.strip_prefix("gpu=") else {
            continue;
        };
        if !gpu.keeps("gpu", gs) {
            continue;
        }
        for m in store.list_dirs(&format!("runs/{g}"))? {
            let Some(ms) = m.strip_prefix("model=") else {
                continue;
            };
            if !model.keeps("model", ms) {
                continue;
            }
            for o in store.list(&format!("runs/{g}/{m}"))? {
                match layout::parse_key(&o.key) {
                    Some(p) if p.export_id.is_none() => {
                        if p.may_carry(labels) {
                            out.push(o);
                        }
                        continue;
                    }
                    _ => {}
                }
                if !o.key.rsplit('/').next().unwrap_or("").starts_with('.') {
                    warnings.push(format!(
                        "{}: not a `runs` file stepgate writes (run-<run id>[.l<label digests>].parquet): \
                         skipped",
                        store.name_of(&o.key)
                    ));
                }
            }
        }
    }
    Ok(out)
}

/// The columns of a `runs` row this build reads (`export_id`, the last, may be absent:
/// datasets written before export ids).
const RUNS_COLUMNS: &[(&str, Ty)] = &[
    ("schema_version", Ty::Int),
    ("run_id", Ty::Str),
    ("exported_at_ns", Ty::Int),
    ("gpu_name", Ty::Str),
    ("model_name", Ty::Str),
    ("engine", Ty::Str),
    ("source_format", Ty::Str),
    ("labels", Ty::Str),
    ("report_sha256", Ty::Str),
    ("export_id", Ty::Str),
];

/// Read the `runs` rows of these objects (in the order given; rows that break the rules
/// are left out with a warning).
pub(crate) fn read_rows(
    store: &Store,
    objs: &[Obj],
    warnings: &mut Vec<String>,
) -> Result<Vec<RunRow>> {
    let keys: Vec<String> = objs.iter().map(|o| o.key.clone()).collect();
    let mut out: Vec<RunRow> = Vec::with_capacity(keys.len());
    for chunk in keys.chunks(BATCH) {
        let got = store.get_many(chunk)?;
        for (key, bytes) in chunk.iter().zip(got) {
            // Removed between the listing and the read (a replace that moved it).
            let Some(bytes) = bytes else { continue };
            rows_of(store, key, bytes, &mut out, warnings)?;
        }
    }
    Ok(out)
}

/// The rows of one `runs` object.
fn rows_of(
    store: &Store,
    key: &str,
    bytes: Vec<u8>,
    out: &mut Vec<RunRow>,
    warnings: &mut Vec<String>,
) -> Result<()> {
    let name = store.name_of(key);
    let df = decode(&name, bytes, &[])?;
    let required = &RUNS_COLUMNS[..RUNS_COLUMNS.len() - 1];
    if let Some((c, _)) = required.iter().find(|(c, _)| df.column(c).is_err()) {
        return Err(damaged(&name, &format!("it has no column {c}")));
    }
    if let Some(why) = type_error(&df, RUNS_COLUMNS) {
        return Err(damaged(&name, &why));
    }
    let version = ints(&df, "schema_version")?;
    let id = str_col(&df, "run_id")?;
    let at = ints(&df, "exported_at_ns")?;
    let gpu = str_col(&df, "gpu_name")?;
    let model = str_col(&df, "model_name")?;
    let engine = str_col(&df, "engine")?;
    let fmt = str_col(&df, "source_format")?;
    let labels = str_col(&df, "labels")?;
    let sha = str_col(&df, "report_sha256")?;
    let eid = df.column("export_id").ok().and_then(|c| c.str().ok());
    let file = PathBuf::from(key);
    for i in 0..df.height() {
        let skip = |why: String| {
            format!(
                "{name}: {why}; the run is left out (remove the file, or re-export the run \
                 with --replace)"
            )
        };
        if let Some(why) = refuse_row(&file, version.get(i), id.get(i), at.get(i)) {
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
        // A name whose digests are not its labels' would be skipped or read by a listing
        // for the wrong labels: left out always, so pruning never changes an answer.
        let named = layout::parse_key(key).and_then(|p| p.labels);
        if named.is_some_and(|d| Some(d) != layout::label_digests(&l).as_deref()) {
            warnings.push(skip(
                "the label digests in its name are not those of its labels (renamed or \
                 copied by hand?)"
                    .to_owned(),
            ));
            continue;
        }
        out.push(RunRow {
            run_id: id.get(i).unwrap_or_default().to_owned(),
            exported_at_ns: at.get(i).unwrap_or(0),
            gpu_name: gpu.get(i).map(str::to_owned),
            model: model.get(i).map(str::to_owned),
            engine: engine.get(i).map(str::to_owned),
            source_format: fmt.get(i).map(str::to_owned),
            report_sha256: sha.get(i).map(str::to_owned),
            labels: l,
            runs_file: file.clone(),
            export_id: eid.and_then(|c| c.get(i)).map(str::to_owned),
        });
    }
    Ok(())
}

/// Oldest first (export time, then run id), one row per run id.
pub(crate) fn in_order(
    mut runs: Vec<RunRow>,
    store: &Store,
    warnings: &mut Vec<String>,
) -> Vec<RunRow> {
    runs.sort_by(|a, b| (a.exported_at_ns, &a.run_id).cmp(&(b.exported_at_ns, &b.run_id)));
    once_each(runs, store, warnings)
}

/// Every usable run in the dataset, oldest first (export time, then run id), and the
/// warnings about rows left out. A dataset that does not exist or holds no runs gives an
/// empty list (the caller says what that means for it).
pub fn read_runs(store: &Store, warnings: &mut Vec<String>) -> Result<Vec<RunRow>> {
    if let Some(d) = store.local_dir() {
        crate::dataset::store::local_root(d, crate::exit::Access::Read)?;
    }
    let objs = list_runs(store, &Prune::default(), &Prune::default(), &[], warnings)?;
    let rows = read_rows(store, &objs, warnings)?;
    Ok(in_order(rows, store, warnings))
}

/// One row per run id: the same run in two partitions (a replace that was interrupted, a
/// copy by hand) keeps its newest export, with a warning naming both files.
fn once_each(runs: Vec<RunRow>, store: &Store, warnings: &mut Vec<String>) -> Vec<RunRow> {
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
                store.name_of(&r.runs_file.to_string_lossy()),
                store.name_of(&kept.runs_file.to_string_lossy())
            ));
        }
    }
    runs.into_iter()
        .zip(keep)
        .filter_map(|(r, k)| k.then_some(r))
        .collect()
}

#[cfg(test)]
mod tests;
