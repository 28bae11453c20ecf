//! Appending one run to a dataset: the run id, the five Parquet files, and the lock and
//! rename order that keep concurrent exports and readers safe.
//!
//! Why this order: every file is written to a temporary name beside its target and renamed
//! into place (POSIX rename is atomic), `runs` last. Readers start from `runs`, so they see
//! a run whole or not at all, and the `runs` file alone decides whether a run exists: an
//! export killed between renames leaves other tables' files without one, and the next
//! export of that run replaces them. The duplicate check and the renames happen under an
//! exclusive `flock` on `DATASET/.lock` (`dataset::lock`), so two exports of the same run
//! cannot both pass the check; the kernel drops the lock if an export dies.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use polars::prelude::*;
use sha2::{Digest, Sha256};

use crate::dataset::layout::{self, hex};
use crate::dataset::schema::{self, DeviceRow, RunMeta, TABLES};
use crate::dataset::{columns, lock};
use crate::exit::{Error, Result};
use crate::output::{Fill, Staged};
use crate::wire::steps::StepsReport;

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
    /// What the export repaired on the way (leftovers of an interrupted export, stale
    /// temporary files), one line each, for stderr.
    pub notes: Vec<String>,
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
    // Never opened when it is a FIFO or a device: the open would block this thread (and
    // the command joining it) forever, while the loader refuses the path at once.
    let m = std::fs::metadata(path)
        .map_err(|e| Error::input(format!("cannot read {}: {e}", path.display())))?;
    if !m.is_file() && !m.is_dir() {
        return Err(Error::input(format!(
            "{} is not a regular file or a directory: save it to a file first",
            path.display()
        )));
    }
    let mut h = Sha256::new();
    let mut files = Vec::new();
    if m.is_dir() {
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
        // Symlinks are not followed into directories: a link to its own parent would
        // recurse forever. A link to a file is hashed as the file it names.
        let Ok(t) = e.file_type() else { continue };
        if t.is_dir() {
            collect_files(root, &p, out)?;
        } else if t.is_file() || (t.is_symlink() && p.is_file()) {
            if let Ok(rel) = p.strip_prefix(root) {
                out.push(rel.to_path_buf());
            }
        }
    }
    Ok(())
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

/// Nanoseconds since the Unix epoch, now.
pub fn now_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as i64)
        .unwrap_or(0)
}

/// How an export behaves when the run or the lock is already taken.
#[derive(Debug, Clone, Copy)]
pub struct ExportOptions {
    /// Replace the run if it is already in the dataset (default: refuse, exit 2).
    pub replace: bool,
    /// How long to wait for another export's lock before giving up (exit 4).
    pub lock_timeout: Duration,
}

impl Default for ExportOptions {
    fn default() -> Self {
        ExportOptions {
            replace: false,
            lock_timeout: lock::DEFAULT_TIMEOUT,
        }
    }
}

/// Whether the dataset holds this run: the `runs` table decides (a run is there once its
/// `runs` file is; files of other tables without one are leftovers of an interrupted
/// export, which the next export of that run replaces).
/// Whether `dataset` can be exported to, asked before any work (so a command that writes
/// other outputs first writes none of them when the export would fail): a directory or
/// nothing yet, and a lock path that is a regular file or absent.
pub fn check_target(dataset: &Path) -> Result<()> {
    if std::fs::metadata(dataset).is_ok_and(|m| !m.is_dir()) {
        return Err(Error::usage(format!(
            "{} exists and is not a directory: give a dataset directory",
            dataset.display()
        )));
    }
    super::lock::check(dataset)
}

pub fn run_exists(dataset: &Path, run_id: &str) -> bool {
    layout::files_of_run(dataset, run_id)
        .iter()
        .any(|(t, _)| *t == "runs")
}

fn already_there(id: &str, dataset: &Path) -> Error {
    Error::input(format!(
        "run {id} (this report with these labels) is already in {}: pass --replace to \
         replace it, or change a --label",
        dataset.display()
    ))
}

/// zstd, the one codec the dataset uses (every engine reads it).
fn zstd() -> ParquetCompression {
    ParquetCompression::Zstd(None)
}

/// A fill that writes one whole frame.
fn frame_fill<'a>(mut df: DataFrame) -> Fill<'a> {
    Box::new(move |w: &mut dyn std::io::Write| {
        ParquetWriter::new(w)
            .with_compression(zstd())
            .finish(&mut df)?;
        Ok(())
    })
}

/// Append one run. A run already in the dataset is refused (exit 2) unless
/// `opts.replace`. The tables are encoded straight into temporary files beside their
/// targets before the lock is taken (so the lock is held only for the check and the
/// renames), and renamed into place with `runs` last.
pub fn export_run(
    dataset: &Path,
    report_path: &Path,
    report_sha256: &str,
    labels: &Labels,
    src: &RunSource,
    report: &StepsReport,
    opts: &ExportOptions,
) -> Result<ExportOutcome> {
    let id = run_id(report_sha256, labels);
    check_target(dataset)?;
    // Checked again under the lock; this saves encoding a run that is refused anyway.
    if !opts.replace && run_exists(dataset, &id) {
        return Err(already_there(&id, dataset));
    }
    let found_by = match serde_json::to_value(report.found_by) {
        Ok(serde_json::Value::String(f)) => Some(f),
        Ok(serde_json::Value::Null) | Err(_) => None,
        // A structured value is kept whole, as JSON text.
        Ok(other) => Some(other.to_string()),
    };
    let devices = schema::devices_frame(&id, &src.devices, report)?;
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
        engine: report
            .steps
            .iter()
            .find_map(|s| s.composition.as_ref().map(|c| c.engine.clone())),
        labels_json: serde_json::to_string(labels).unwrap_or_else(|_| "{}".into()),
        method: report.method.as_str().to_owned(),
        found_by,
        steps: report.steps.len() as i64,
        steps_with_gpu_work: (report.steps.len() - report.steps_without_gpu_work) as i64,
        devices: devices.height() as i64,
    };
    let kernels = schema::kernels_frame(&id, report)?;
    let rows = vec![
        ("steps", report.steps.len()),
        (
            "step_kernels",
            report.steps.iter().map(|s| s.all_kernels.len()).sum(),
        ),
        ("kernels", kernels.height()),
        ("devices", devices.height()),
        ("runs", 1),
    ];
    let gpu = layout::partition("gpu", src.gpu_name.as_deref());
    let model = layout::partition("model", src.model.as_deref());
    let targets: Vec<PathBuf> = TABLES
        .iter()
        .map(|t| layout::run_file(dataset, t, &gpu, &model, &id))
        .collect();
    for t in &targets {
        if let Some(dir) = t.parent() {
            std::fs::create_dir_all(dir)
                .map_err(|e| Error::input(format!("cannot create {}: {e}", dir.display())))?;
        }
    }
    let steps_id = id.clone();
    let kernels_id = id.clone();
    let fills: Vec<Fill<'_>> = vec![
        Box::new(move |w: &mut dyn std::io::Write| {
            let mut df = columns::steps_frame(&steps_id, report)?;
            crate::phases::mark("export: steps table built");
            ParquetWriter::new(w)
                .with_compression(zstd())
                .finish(&mut df)?;
            crate::phases::mark("export: steps table written");
            Ok(())
        }),
        Box::new(move |w: &mut dyn std::io::Write| {
            columns::write_step_kernels(&kernels_id, report, w, zstd())?;
            crate::phases::mark("export: step_kernels table written");
            Ok(())
        }),
        frame_fill(kernels),
        frame_fill(devices),
        frame_fill(schema::runs_frame(&meta)?),
    ];
    let staged = Staged::stage(targets.iter().map(PathBuf::as_path).zip(fills).collect())?;
    crate::phases::mark("export: every table staged");
    let _lock = lock::acquire(dataset, opts.lock_timeout, staged.guard(), &mut |line| {
        // Said while it waits, not after: the user sees why the export is not done yet.
        let _ = writeln!(std::io::stderr(), "{line}");
    })?;
    let old = layout::files_of_run(dataset, &id);
    let replaced = old.iter().any(|(t, _)| *t == "runs");
    if replaced && !opts.replace {
        return Err(already_there(&id, dataset));
    }
    let mut notes = Vec::new();
    let leftovers = old.iter().filter(|(t, _)| *t != "runs").count();
    if !replaced && leftovers > 0 {
        notes.push(format!(
            "repaired: {leftovers} file(s) of run {id} left by an interrupted export were \
             replaced"
        ));
    }
    // Old files in another partition go first, the runs file first of all, so no reader
    // sees the run twice; files at the same path are replaced by the rename itself.
    let mut old: Vec<PathBuf> = old.into_iter().map(|(_, p)| p).collect();
    old.sort_by_key(|p| !p.components().any(|c| c.as_os_str() == "runs"));
    for p in old.iter().filter(|p| !targets.contains(p)) {
        std::fs::remove_file(p)
            .map_err(|e| Error::input(format!("cannot remove {}: {e}", p.display())))?;
    }
    // Temporary files a SIGKILLed export left beside the targets (older than a minute;
    // this export's own are fresh).
    let stale: usize = targets
        .iter()
        .filter_map(|t| t.parent())
        .map(crate::output::clean_stale)
        .sum();
    if stale > 0 {
        notes.push(format!(
            "removed {stale} stale temporary file(s) ({}*{}) left by a killed export",
            crate::output::TMP_PREFIX,
            crate::output::TMP_SUFFIX
        ));
    }
    staged.commit()?;
    crate::phases::mark("export: renamed into place");
    Ok(ExportOutcome {
        run_id: id,
        rows,
        replaced,
        notes,
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
