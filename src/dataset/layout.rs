//! Where a run's files live — `TABLE/gpu=<slug>/model=<slug>/run-<run_id>.parquet` — with
//! partition values that are safe in any path and any engine and fit in a file name, and
//! the listing of what a dataset holds.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::dataset::schema::TABLES;

/// The longest file name (one path component) the common file systems take, in bytes
/// (ext4, XFS, btrfs, APFS, NTFS: 255).
pub const NAME_MAX: usize = 255;

/// A partition value safe in any path and any engine: lower case, `[a-z0-9._-]`, other
/// characters folded to `-`; `unknown` when absent. A value that would make `key=value`
/// longer than [`NAME_MAX`] bytes is cut and ends in `-` and 16 hex digits of the sha256
/// of the whole slug, so long names stay distinct and the same name always lands in the
/// same partition.
pub fn partition(key: &str, v: Option<&str>) -> String {
    let mut out = String::new();
    for c in v.unwrap_or("").trim().chars() {
        let c = c.to_ascii_lowercase();
        if c.is_ascii_alphanumeric() || c == '.' || c == '_' {
            out.push(c);
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    let out = out.trim_matches('-');
    if out.is_empty() {
        return "unknown".to_owned();
    }
    // `key=` comes before the value in the directory name.
    let room = NAME_MAX - key.len() - 1;
    if out.len() <= room {
        return out.to_owned();
    }
    let hex = hex(&Sha256::digest(out.as_bytes())[..8]);
    // The slug is ASCII, so any byte index is a character boundary.
    let head = out[..room - hex.len() - 1].trim_end_matches('-');
    format!("{head}-{hex}")
}

/// Lower-case hex of bytes.
pub(crate) fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}

/// The file name of a run in every table.
pub fn run_file_name(run_id: &str) -> String {
    format!("run-{run_id}.parquet")
}

/// The file of one table of one run.
pub fn run_file(dataset: &Path, table: &str, gpu: &str, model: &str, run_id: &str) -> PathBuf {
    dataset
        .join(table)
        .join(format!("gpu={gpu}"))
        .join(format!("model={model}"))
        .join(run_file_name(run_id))
}

/// The partition directories (`TABLE/gpu=…/model=…`) of one table.
fn partitions(dataset: &Path, table: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for g in std::fs::read_dir(dataset.join(table))
        .into_iter()
        .flatten()
        .flatten()
    {
        for m in std::fs::read_dir(g.path()).into_iter().flatten().flatten() {
            if m.file_type().is_ok_and(|t| t.is_dir()) {
                out.push(m.path());
            }
        }
    }
    out
}

/// Every `run-*.parquet` file of one table, in path order.
pub fn table_files(dataset: &Path, table: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for d in partitions(dataset, table) {
        for f in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let name = f.file_name();
            let name = name.to_string_lossy();
            if name.starts_with("run-") && name.ends_with(".parquet") {
                out.push(f.path());
            }
        }
    }
    out.sort();
    out
}

/// The files of one run, per table, in any partition (a replaced run may have moved, and
/// an interrupted export leaves some tables' files without a `runs` file).
pub fn files_of_run(dataset: &Path, run_id: &str) -> Vec<(&'static str, PathBuf)> {
    let want = run_file_name(run_id);
    let mut out = Vec::new();
    for t in TABLES {
        for d in partitions(dataset, t) {
            let f = d.join(&want);
            if std::fs::symlink_metadata(&f).is_ok() {
                out.push((t, f));
            }
        }
    }
    out
}

/// The run id a `run-<id>.parquet` file name carries.
pub fn run_id_of(path: &Path) -> Option<&str> {
    path.file_name()?
        .to_str()?
        .strip_prefix("run-")?
        .strip_suffix(".parquet")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partition_values_are_path_safe() {
        assert_eq!(
            partition("gpu", Some("NVIDIA H100 80GB HBM3")),
            "nvidia-h100-80gb-hbm3"
        );
        assert_eq!(
            partition("model", Some("meta-llama/Llama-3.1-8B")),
            "meta-llama-llama-3.1-8b"
        );
        assert_eq!(partition("gpu", None), "unknown");
        assert_eq!(partition("gpu", Some(" / ")), "unknown");
    }

    #[test]
    fn long_values_are_cut_to_a_file_name_with_a_stable_hash() {
        let long = "x".repeat(300);
        let a = partition("model", Some(&long));
        assert_eq!(format!("model={a}").len(), NAME_MAX);
        assert_eq!(a, partition("model", Some(&long)), "stable");
        // The suffix is the sha256 of the whole slug, computed here a second way.
        let want: String = Sha256::digest(long.as_bytes())[..8]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<Vec<_>>()
            .concat();
        assert!(a.ends_with(&format!("-{want}")), "{a}");
        // Two names that differ only past the cut land in different partitions.
        let other = format!("{}y", "x".repeat(299));
        assert_ne!(a, partition("model", Some(&other)));
        // Exactly at the limit: kept whole.
        let fits = "a".repeat(NAME_MAX - "gpu=".len());
        assert_eq!(partition("gpu", Some(&fits)), fits);
        let over = "a".repeat(NAME_MAX - "gpu=".len() + 1);
        assert_eq!(
            format!("gpu={}", partition("gpu", Some(&over))).len(),
            NAME_MAX
        );
    }

    #[test]
    fn run_ids_come_back_from_file_names() {
        assert_eq!(
            run_id_of(Path::new("/d/runs/gpu=a/model=b/run-0123abcd.parquet")),
            Some("0123abcd")
        );
        assert_eq!(run_id_of(Path::new("/d/x.parquet")), None);
    }
}
