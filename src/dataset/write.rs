//! Appending one run to a dataset: the run id, the five Parquet files, and the lock and
//! rename order that keep concurrent exports and readers safe.
//!
//! Why this order: every file is written to a temporary name beside its target and renamed
//! into place (POSIX rename is atomic), `runs` last. Readers start from `runs`, so they see
//! a run whole or not at all. The duplicate check and the renames happen under an
//! exclusive `flock` on `DATASET/.lock`, so two exports of the same run cannot both pass
//! the check; the kernel drops the lock if an export dies.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use polars::prelude::*;
use sha2::{Digest, Sha256};

use crate::dataset::schema::{self, DeviceRow, RunMeta, TABLES};
use crate::exit::{Error, Result};
use crate::timing::steps::StepsReport;

/// `--label key=value` pairs, sorted by key.
pub type Labels = BTreeMap<String, String>;

/// What the export needs from the loaded trace besides its steps (so the trace itself can
/// be dropped before writing).
#[derive(Debug, Clone, Default)]
pub struct RunSource {
    /// `nsys-sqlite` or `kineto`.
    pub source_format: String,
    pub tool_version: Option<String>,
    pub source_schema_version: Option<String>,
    pub gpu_name: Option<String>,
    pub model: Option<String>,
    pub devices: Vec<DeviceRow>,
}

/// What one export did.
#[derive(Debug, Clone)]
pub struct ExportOutcome {
    pub run_id: String,
    /// Rows written per table, in [`TABLES`] order.
    pub rows: Vec<(&'static str, usize)>,
    /// The run was already there and was replaced (`--replace`).
    pub replaced: bool,
}

/// Parse `key=value` labels: keys are `[A-Za-z0-9_.-]+`, each at most once.
pub fn parse_labels(items: &[String]) -> Result<Labels> {
    let mut out = Labels::new();
    for it in items {
        let Some((k, v)) = it.split_once('=') else {
            return Err(Error::input(format!(
                "--label {it:?} is not key=value (e.g. --label branch=main)"
            )));
        };
        let ok = !k.is_empty()
            && k.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
        if !ok {
            return Err(Error::input(format!(
                "--label {it:?}: the key must be letters, digits, '_', '-' or '.'"
            )));
        }
        if out.insert(k.to_owned(), v.to_owned()).is_some() {
            return Err(Error::input(format!(
                "--label {k} is given twice: give each label once"
            )));
        }
    }
    Ok(out)
}

/// sha256 of the report's bytes; a directory of per-rank traces hashes each file's
/// relative path and contents in name order.
pub fn report_sha256(path: &Path) -> Result<String> {
    let mut h = Sha256::new();
    let mut files = Vec::new();
    if path.is_dir() {
        collect_files(path, path, &mut files)?;
        files.sort();
    } else {
        files.push(PathBuf::new());
    }
    let mut buf = vec![0u8; 1 << 20];
    for rel in &files {
        let full = if rel.as_os_str().is_empty() {
            path.to_path_buf()
        } else {
            h.update(rel.to_string_lossy().as_bytes());
            h.update([0u8]);
            path.join(rel)
        };
        let mut f = File::open(&full)
            .map_err(|e| Error::input(format!("cannot read {}: {e}", full.display())))?;
        loop {
            let n = f
                .read(&mut buf)
                .map_err(|e| Error::input(format!("cannot read {}: {e}", full.display())))?;
            if n == 0 {
                break;
            }
            h.update(&buf[..n]);
        }
    }
    Ok(hex(&h.finalize()))
}

fn collect_files(root: &Path, dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    let rd = std::fs::read_dir(dir)
        .map_err(|e| Error::input(format!("cannot read {}: {e}", dir.display())))?;
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            collect_files(root, &p, out)?;
        } else if let Ok(rel) = p.strip_prefix(root) {
            out.push(rel.to_path_buf());
        }
    }
    Ok(())
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}

/// The run id: the first 16 hex digits of sha256(report sha256, labels). The same report
/// with the same labels is the same run, whatever its path or export time.
pub fn run_id(report_sha256: &str, labels: &Labels) -> String {
    let mut h = Sha256::new();
    h.update(report_sha256.as_bytes());
    for (k, v) in labels {
        h.update([0u8]);
        h.update(k.as_bytes());
        h.update([b'=']);
        h.update(v.as_bytes());
    }
    hex(&h.finalize())[..16].to_owned()
}

/// The file of one table of one run.
pub fn run_file(dataset: &Path, table: &str, gpu: &str, model: &str, run_id: &str) -> PathBuf {
    dataset
        .join(table)
        .join(format!("gpu={gpu}"))
        .join(format!("model={model}"))
        .join(format!("run-{run_id}.parquet"))
}

/// Every existing file of a run, in any partition (a replaced run may have moved).
fn existing_files(dataset: &Path, run_id: &str) -> Vec<PathBuf> {
    let want = format!("run-{run_id}.parquet");
    let mut out = Vec::new();
    for t in TABLES {
        let Ok(gpus) = std::fs::read_dir(dataset.join(t)) else {
            continue;
        };
        for g in gpus.flatten() {
            let Ok(models) = std::fs::read_dir(g.path()) else {
                continue;
            };
            for m in models.flatten() {
                let f = m.path().join(&want);
                if f.is_file() {
                    out.push(f);
                }
            }
        }
    }
    out
}

/// Parquet bytes of one frame: zstd, the one codec the dataset uses (every engine reads it).
fn parquet_bytes(df: &mut DataFrame) -> Result<Vec<u8>> {
    let mut buf = Vec::new();
    ParquetWriter::new(&mut buf)
        .with_compression(ParquetCompression::Zstd(None))
        .finish(df)?;
    Ok(buf)
}

/// An exclusive lock on `DATASET/.lock`, held until dropped.
fn lock(dataset: &Path) -> Result<File> {
    let p = dataset.join(".lock");
    let f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&p)
        .map_err(|e| Error::input(format!("cannot open {}: {e}", p.display())))?;
    f.lock()
        .map_err(|e| Error::input(format!("cannot lock {}: {e}", p.display())))?;
    Ok(f)
}

/// Nanoseconds since the Unix epoch, now.
pub fn now_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as i64)
        .unwrap_or(0)
}

/// Append one run. A run already in the dataset is refused (exit 2) unless `replace`.
pub fn export_run(
    dataset: &Path,
    report_path: &Path,
    report_sha256: &str,
    labels: &Labels,
    src: &RunSource,
    report: &StepsReport,
    replace: bool,
) -> Result<ExportOutcome> {
    let id = run_id(report_sha256, labels);
    // Serialized once: the steps array becomes the steps table, and report-level fields
    // that other builds add (`found_by`) are read by name.
    let mut json = serde_json::to_value(report)
        .map_err(|e| Error::input(format!("internal: steps report to JSON: {e}")))?;
    let found_by = match json.get("found_by") {
        None | Some(serde_json::Value::Null) => None,
        Some(serde_json::Value::String(f)) => Some(f.clone()),
        // A structured value is kept whole, as JSON text.
        Some(other) => Some(other.to_string()),
    };
    let steps_json = match json.get_mut("steps").map(serde_json::Value::take) {
        Some(serde_json::Value::Array(a)) => a,
        _ => Vec::new(),
    };
    let engine = report
        .steps
        .iter()
        .find_map(|s| s.composition.as_ref().map(|c| c.engine.clone()));
    let meta = RunMeta {
        run_id: id.clone(),
        exported_at_ns: now_ns(),
        report_path: report_path.display().to_string(),
        report_sha256: report_sha256.to_owned(),
        source_format: src.source_format.clone(),
        tool_version: src.tool_version.clone(),
        source_schema_version: src.source_schema_version.clone(),
        stepgate_version: format!("stepgate {}", env!("CARGO_PKG_VERSION")),
        gpu_name: src.gpu_name.clone(),
        model: src.model.clone(),
        engine,
        labels_json: serde_json::to_string(labels).unwrap_or_else(|_| "{}".into()),
        method: report.method.as_str().to_owned(),
        found_by,
        steps: report.steps.len() as i64,
        steps_with_gpu_work: (report.steps.len() - report.steps_without_gpu_work) as i64,
        devices: 0,
    };
    let frames = build_frames(meta, src, report, steps_json)?;
    write_frames(dataset, &id, src, frames, replace)
}

/// The five frames of one run, in [`TABLES`] order.
fn build_frames(
    mut meta: RunMeta,
    src: &RunSource,
    report: &StepsReport,
    steps_json: Vec<serde_json::Value>,
) -> Result<Vec<DataFrame>> {
    let id = meta.run_id.clone();
    let devices = schema::devices_frame(&id, &src.devices, report)?;
    meta.devices = devices.height() as i64;
    Ok(vec![
        schema::steps_frame(&id, report, steps_json)?,
        schema::step_kernels_frame(&id, report)?,
        schema::kernels_frame(&id, report)?,
        devices,
        schema::runs_frame(&meta)?,
    ])
}

/// Write prepared frames as one run (used by `export_run` and by benchmarks that write
/// synthetic rows straight through the writer).
pub fn write_frames(
    dataset: &Path,
    id: &str,
    src: &RunSource,
    mut frames: Vec<DataFrame>,
    replace: bool,
) -> Result<ExportOutcome> {
    let gpu = schema::slug(src.gpu_name.as_deref());
    let model = schema::slug(src.model.as_deref());
    let mut bytes = Vec::with_capacity(frames.len());
    let mut rows = Vec::with_capacity(frames.len());
    for (t, df) in TABLES.iter().zip(frames.iter_mut()) {
        rows.push((*t, df.height()));
        bytes.push(parquet_bytes(df)?);
    }
    let targets: Vec<PathBuf> = TABLES
        .iter()
        .map(|t| run_file(dataset, t, &gpu, &model, id))
        .collect();
    std::fs::create_dir_all(dataset)
        .map_err(|e| Error::input(format!("cannot create dataset {}: {e}", dataset.display())))?;
    let _lock = lock(dataset)?;
    let old = existing_files(dataset, id);
    let replaced = !old.is_empty();
    if replaced && !replace {
        return Err(Error::input(format!(
            "run {id} (this report with these labels) is already in {}: pass --replace to \
             replace it, or change a --label",
            dataset.display()
        )));
    }
    for t in &targets {
        if let Some(dir) = t.parent() {
            std::fs::create_dir_all(dir)
                .map_err(|e| Error::input(format!("cannot create {}: {e}", dir.display())))?;
        }
    }
    // Old files in another partition go first, runs row first of all, so no reader sees
    // the run twice; files at the same path are replaced by the rename itself.
    let mut old = old;
    old.sort_by_key(|p| !p.components().any(|c| c.as_os_str() == "runs"));
    for p in old.iter().filter(|p| !targets.contains(p)) {
        std::fs::remove_file(p)
            .map_err(|e| Error::input(format!("cannot remove {}: {e}", p.display())))?;
    }
    let files: Vec<(&Path, &[u8])> = targets
        .iter()
        .zip(bytes.iter())
        .map(|(p, b)| (p.as_path(), b.as_slice()))
        .collect();
    crate::output::write_all(&files)?;
    Ok(ExportOutcome {
        run_id: id.to_owned(),
        rows,
        replaced,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_parse_and_refuse() {
        let l = parse_labels(&["branch=main".into(), "git.sha=abc=d".into()]).unwrap();
        assert_eq!(l["branch"], "main");
        assert_eq!(l["git.sha"], "abc=d");
        assert!(parse_labels(&["nokey".into()]).is_err());
        assert!(parse_labels(&["a b=c".into()]).is_err());
        assert!(parse_labels(&["a=1".into(), "a=2".into()]).is_err());
    }

    #[test]
    fn run_id_depends_on_report_and_labels_only() {
        let mut l = Labels::new();
        let a = run_id("00ff", &l);
        assert_eq!(a.len(), 16);
        assert_eq!(a, run_id("00ff", &l));
        l.insert("branch".into(), "main".into());
        assert_ne!(a, run_id("00ff", &l));
        assert_ne!(run_id("00ff", &l), run_id("00fe", &l));
    }

    #[test]
    fn sha256_of_a_known_string() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x");
        std::fs::write(&p, b"abc").unwrap();
        // FIPS 180-2 test vector for "abc".
        assert_eq!(
            report_sha256(&p).unwrap(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
