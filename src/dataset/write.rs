//! Appending one run to a dataset: the run id, the five Parquet objects, and the commit
//! that keeps concurrent exports and readers safe without a lock.
//!
//! Why this order: the four data tables are written first, under names no other export
//! uses (`run-<run_id>-<export_id>.parquet`, the export id unique per attempt), so they
//! never collide and are never overwritten. The run's `runs` row is written last, under a
//! name that depends on the run id alone, with a create-only put (`If-None-Match: *` on
//! S3, an atomic hard link on a local disk): that put is the commit. Two writers of one
//! run cannot both win (the loser removes its own files and is refused), and a reader
//! that starts from `runs` and joins on (`run_id`, `export_id`) sees a run whole or not at
//! all. An export that dies before its commit leaves only objects no `runs` row names;
//! `stepgate dataset vacuum` removes them.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use polars::prelude::*;
use sha2::{Digest, Sha256};

use crate::dataset::columns;
use crate::dataset::layout::{self, hex};
use crate::dataset::schema::{self, DeviceRow, Ids, RunMeta};
use crate::dataset::store::{Put, Store, StoreConfig};
use crate::exit::{Error, Result};
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
    /// Rows written per table, in [`crate::dataset::schema::TABLES`] order.
    pub rows: Vec<(&'static str, usize)>,
    /// The run was already there and was replaced (`--replace`).
    pub replaced: bool,
    /// What the export repaired on the way (leftovers of an interrupted export, stale
    /// temporary files), one line each, for stderr.
    pub notes: Vec<String>,
}

/// Parse `key=value` labels: keys are `[A-Za-z0-9_.-]+`, each at most once.
pub(crate) fn parse_labels(items: &[String]) -> Result<Labels> {
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
pub(crate) fn now_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as i64)
        .unwrap_or(0)
}

/// How an export reaches its dataset and behaves when the run is already there.
#[derive(Debug, Clone, Default)]
pub struct ExportOptions {
    /// Replace the run if it is already in the dataset (default: refuse, exit 2).
    pub replace: bool,
    /// How a remote dataset is reached.
    pub store: StoreConfig,
}

/// Whether `dataset` can be exported to, asked before any work (so a command that writes
/// other outputs first writes none of them when the export would fail): a directory (or
/// nothing yet) that takes a write, a bucket prefix the credentials may write to.
pub(crate) fn check_target(dataset: &Path, store: &StoreConfig) -> Result<()> {
    check_not_a_report_dir(dataset)?;
    Store::open(dataset, store)?.check_writable()
}

/// Files a profiler writes, by name: Kineto traces, nsys exports and reports, rocpd/RPD
/// databases. The sidecar (`capture.json`) is not one.
fn is_report_file(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    [".json", ".json.gz", ".sqlite", ".nsys-rep", ".rpd", ".db"]
        .iter()
        .any(|e| n.ends_with(e))
        && n != "capture.json"
}

/// Refuse a local directory that holds profiler reports and no dataset (a Kineto directory
/// of ranks, a folder of captures): the export's tables would become files of that report
/// (one more rank, another run id), and the directory would be neither.
fn check_not_a_report_dir(dataset: &Path) -> Result<()> {
    let Ok(crate::dataset::store::Location::Local(d)) =
        crate::dataset::store::Location::parse(dataset)
    else {
        return Ok(());
    };
    if !d.is_dir() || d.join("runs").is_dir() {
        return Ok(());
    }
    let Ok(entries) = std::fs::read_dir(&d) else {
        return Ok(());
    };
    let report = entries.flatten().find(|e| {
        e.file_type().is_ok_and(|t| t.is_file()) && is_report_file(&e.file_name().to_string_lossy())
    });
    match report {
        Some(e) => Err(Error::usage(format!(
            "{} holds profiler reports ({} among them), not a run history: export to an empty \
             or a dataset directory, e.g. -o history/",
            dataset.display(),
            e.file_name().to_string_lossy()
        ))),
        None => Ok(()),
    }
}

/// Refuse a dataset inside the report directory being exported: its files would be read
/// as one more rank next time (and change the report's hash, so its run id).
pub(crate) fn check_not_in_report(dataset: &Path, report: &Path) -> Result<()> {
    let Ok(crate::dataset::store::Location::Local(d)) =
        crate::dataset::store::Location::parse(dataset)
    else {
        return Ok(());
    };
    if !report.is_dir() {
        return Ok(());
    }
    let abs = |p: &Path| {
        std::fs::canonicalize(p)
            .or_else(|_| std::path::absolute(p))
            .unwrap_or_else(|_| p.to_path_buf())
    };
    // The dataset may not exist yet: resolve its nearest existing ancestor.
    let mut probe = d.clone();
    let mut rest = Vec::new();
    while !probe.exists() {
        let Some(name) = probe.file_name().map(ToOwned::to_owned) else {
            break;
        };
        rest.push(name);
        if !probe.pop() {
            break;
        }
    }
    let mut full = abs(if probe.as_os_str().is_empty() {
        Path::new(".")
    } else {
        &probe
    });
    full.extend(rest.iter().rev());
    if full.starts_with(abs(report)) {
        return Err(Error::usage(format!(
            "{} is inside the report directory {}: its files would be read as one more rank \
             (and change the report's run id); export to a directory outside it",
            dataset.display(),
            report.display()
        )));
    }
    Ok(())
}

/// The committed `runs` rows of a run, wherever they are: in every partition, under its
/// name with label digests and without (datasets written before the digests).
fn committed(store: &Store, id: &str) -> Result<Vec<String>> {
    Ok(store
        .list("runs")?
        .into_iter()
        .filter(|o| {
            layout::parse_key(&o.key)
                .is_some_and(|p| p.table == "runs" && p.run_id == id && p.export_id.is_none())
        })
        .map(|o| o.key)
        .collect())
}

/// Whether the dataset holds this run (its `runs` row is committed, in any partition).
pub(crate) fn run_exists(dataset: &Path, store: &StoreConfig, run_id: &str) -> bool {
    Store::open(dataset, store)
        .and_then(|s| committed(&s, run_id))
        .is_ok_and(|v| !v.is_empty())
}

/// The refusal of a run already committed (`keys`: its runs objects, when known): where
/// it is, when another partition (another --model or GPU: not part of a run's identity).
fn already_there(id: &str, dataset: &str, keys: &[String]) -> Error {
    let at = keys
        .iter()
        .filter_map(|k| layout::parse_key(k))
        .map(|p| format!(" (partition gpu={}/model={})", p.gpu, p.model))
        .next()
        .unwrap_or_default();
    Error::input(format!(
        "run {id} (this report with these labels) is already in {dataset}{at}: a run is \
         the report and its labels, whatever --model or GPU it was priced for; pass \
         --replace to replace it, or change a --label"
    ))
}

/// zstd, the one codec the dataset uses (every engine reads it).
fn zstd() -> ParquetCompression {
    ParquetCompression::Zstd(None)
}

fn encode(mut df: DataFrame) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    ParquetWriter::new(&mut out)
        .with_compression(zstd())
        .finish(&mut df)?;
    Ok(out)
}

/// An id no other export attempt has: the run id, the time, the process and a counter.
fn export_id(run_id: &str) -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    let mut h = Sha256::new();
    h.update(run_id.as_bytes());
    h.update(now_ns().to_le_bytes());
    h.update(std::process::id().to_le_bytes());
    h.update(N.fetch_add(1, Ordering::Relaxed).to_le_bytes());
    h.update(format!("{:?}", std::thread::current().id()).as_bytes());
    hex(&h.finalize())[..16].to_owned()
}

/// Append one run. A run already in the dataset is refused (exit 2) unless
/// `opts.replace`.
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
    check_not_in_report(dataset, report_path)?;
    let store = Store::open(dataset, &opts.store)?;
    let gpu = layout::partition("gpu", src.gpu_name.as_deref());
    let model = layout::partition("model", src.model.as_deref());
    let runs_key = layout::runs_key(&gpu, &model, &id, labels);
    // The commit below decides within this partition; this saves encoding a run that is
    // refused anyway, and it alone sees the run in another partition: the partition
    // follows `--model` and the GPU, which are not labels, so the same report with the
    // same labels exported with another --model is the same run, refused (or moved by
    // --replace), never a second copy. A run committed under the name without digests (an
    // older stepgate) is the same run.
    let before = committed(&store, &id)?;
    if !opts.replace && !before.is_empty() {
        return Err(already_there(&id, store.name(), &before));
    }
    let eid = export_id(&id);
    let ids = Ids {
        run: &id,
        export: &eid,
    };
    let found_by = match serde_json::to_value(report.found_by) {
        Ok(serde_json::Value::String(f)) => Some(f),
        Ok(serde_json::Value::Null) | Err(_) => None,
        // A structured value is kept whole, as JSON text.
        Ok(other) => Some(other.to_string()),
    };
    let devices = schema::devices_frame(ids, &src.devices, report)?;
    let meta = RunMeta {
        run_id: id.clone(),
        export_id: eid.clone(),
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
        method: report.method.method_str().to_owned(),
        found_by,
        steps: report.steps.len() as i64,
        steps_with_gpu_work: (report.steps.len() - report.steps_without_gpu_work) as i64,
        devices: devices.height() as i64,
    };
    let kernels = schema::kernels_frame(ids, report)?;
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
    let steps = encode(columns::steps_frame(ids, report)?)?;
    crate::phases::mark("export: steps table written");
    let mut step_kernels = Vec::new();
    columns::write_step_kernels(ids, report, &mut step_kernels, zstd())?;
    crate::phases::mark("export: step_kernels table written");
    let data = [
        ("steps", steps),
        ("step_kernels", step_kernels),
        ("kernels", encode(kernels)?),
        ("devices", encode(devices)?),
    ];
    let runs = encode(schema::runs_frame(&meta)?)?;
    let mut written: Vec<String> = Vec::new();
    let undo = |written: &[String]| {
        for k in written {
            let _ = store.delete(k);
        }
    };
    for (t, bytes) in data {
        let key = layout::table_key(t, &gpu, &model, &id, Some(&eid));
        if let Err(e) = store.put(&key, bytes, false) {
            undo(&written);
            return Err(e);
        }
        written.push(key);
    }
    crate::phases::mark("export: every table written");
    // The commit.
    let put = match store.put(&runs_key, runs, !opts.replace) {
        Ok(p) => p,
        Err(e) => {
            undo(&written);
            return Err(e);
        }
    };
    if put == Put::AlreadyExists {
        // Another export of this run committed first: ours never becomes visible.
        undo(&written);
        return Err(already_there(&id, store.name(), &[]));
    }
    crate::phases::mark("export: committed");
    let mut notes = Vec::new();
    let replaced = !before.is_empty();
    // What the replaced export wrote is no longer named by any runs row: remove it (a
    // reader that raced the replace and still holds the old row reads the old files, so
    // failure here is only untidy; vacuum finishes it).
    for old in &before {
        let Some(p) = layout::parse_key(old) else {
            continue;
        };
        let (og, om) = (p.gpu.to_owned(), p.model.to_owned());
        if old != &runs_key {
            // Another partition, or this one's name without label digests.
            let _ = store.delete(old);
            if (og.as_str(), om.as_str()) != (gpu.as_str(), model.as_str()) {
                notes.push(format!(
                    "the replaced run was in partition gpu={og}/model={om}: moved"
                ));
            }
        }
        for t in ["steps", "step_kernels", "kernels", "devices"] {
            let part = format!("{t}/gpu={og}/model={om}");
            for o in store.list(&part).unwrap_or_default() {
                let named = layout::parse_key(&o.key);
                if named.is_some_and(|k| k.run_id == id && k.export_id != Some(eid.as_str())) {
                    let _ = store.delete(&o.key);
                }
            }
        }
    }
    Ok(ExportOutcome {
        run_id: id,
        rows,
        replaced,
        notes,
    })
}

#[cfg(test)]
mod tests;
