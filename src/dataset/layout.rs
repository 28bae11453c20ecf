//! Where a run's objects live — `runs/gpu=<slug>/model=<slug>/run-<run_id>.parquet` (the
//! commit) and `TABLE/gpu=…/model=…/run-<run_id>-<export_id>.parquet` — with partition
//! values that are safe in any path and any engine and fit in a file name, and which
//! partitions a read may skip.

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

/// The key of the `runs` row of a run: its name depends on the run id alone, so two
/// writers of one run race for the same object and the create-only put lets one win.
pub fn runs_key(gpu: &str, model: &str, run_id: &str) -> String {
    format!("runs/gpu={gpu}/model={model}/run-{run_id}.parquet")
}

/// The key of another table's file of one export of a run: the export id makes it a name
/// no other export uses, so it is written without a condition and never overwritten.
/// Datasets written before export ids (`export_id` null) named it `run-<id>.parquet`.
pub fn table_key(
    table: &str,
    gpu: &str,
    model: &str,
    run_id: &str,
    export_id: Option<&str>,
) -> String {
    match export_id {
        Some(e) => format!("{table}/gpu={gpu}/model={model}/run-{run_id}-{e}.parquet"),
        None => format!("{table}/gpu={gpu}/model={model}/run-{run_id}.parquet"),
    }
}

/// The parts of a table file's key: table, gpu slug, model slug, run id, export id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyParts<'a> {
    pub table: &'a str,
    pub gpu: &'a str,
    pub model: &'a str,
    pub run_id: &'a str,
    pub export_id: Option<&'a str>,
}

/// Split `TABLE/gpu=…/model=…/run-<id>[-<export id>].parquet`; `None` for anything else.
pub fn parse_key(key: &str) -> Option<KeyParts<'_>> {
    let mut it = key.split('/');
    let table = it.next()?;
    let gpu = it.next()?.strip_prefix("gpu=")?;
    let model = it.next()?.strip_prefix("model=")?;
    let name = it.next()?;
    if it.next().is_some() {
        return None;
    }
    let stem = name.strip_prefix("run-")?.strip_suffix(".parquet")?;
    let (run_id, export_id) = match stem.split_once('-') {
        Some((r, e)) => (r, Some(e)),
        None => (stem, None),
    };
    (!run_id.is_empty()).then_some(KeyParts {
        table,
        gpu,
        model,
        run_id,
        export_id,
    })
}

/// Which partitions a read lists: a partition value (slug) is skipped only when no run
/// in it can match, so pruning never changes an answer.
#[derive(Debug, Clone, Default)]
pub struct Prune {
    /// The run's full name must equal one of these (the gate's candidate GPU or model);
    /// `or_unknown`: runs without a name pass too.
    pub exact: Option<(String, bool)>,
    /// `--where` substrings (case-insensitive) the full name must contain.
    pub contains: Vec<String>,
}

/// The slug core of a `--where` substring: folded like a partition value, without the
/// `unknown` of an empty one.
fn core(v: &str) -> Option<String> {
    if !v.is_ascii() {
        return None;
    }
    let mut out = String::new();
    for c in v.trim().chars() {
        let c = c.to_ascii_lowercase();
        if c.is_ascii_alphanumeric() || c == '.' || c == '_' {
            out.push(c);
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    let out = out.trim_matches('-');
    (!out.is_empty()).then(|| out.to_owned())
}

impl Prune {
    /// Whether the partition `key=slug` may hold a matching run.
    pub fn keeps(&self, key: &str, slug: &str) -> bool {
        // A value cut to fit a file name cannot be compared: always read.
        if format!("{key}={slug}").len() >= NAME_MAX {
            return true;
        }
        if let Some((want, or_unknown)) = &self.exact {
            let ok = slug == partition(key, Some(want)) || (*or_unknown && slug == "unknown");
            if !ok {
                return false;
            }
        }
        // The slug of a name that contains `v` contains the slug core of `v` (both fold
        // the same characters the same way, and runs of them collapse).
        self.contains
            .iter()
            .all(|v| core(v).is_none_or(|c| slug.contains(&c)))
    }
}

/// Every `run-*.parquet` file of one table of a local dataset, in path order (a listing
/// through the dataset's store; tests and tools that look at a directory use it).
pub fn table_files(dataset: &Path, table: &str) -> Vec<PathBuf> {
    let Ok(store) = crate::dataset::store::Store::open(dataset) else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = store
        .list(table)
        .unwrap_or_default()
        .into_iter()
        .filter(|o| parse_key(&o.key).is_some())
        .map(|o| dataset.join(o.key))
        .collect();
    out.sort();
    out
}

/// The files of one run of a local dataset, per table, in any partition and of any export
/// (committed or not).
pub fn files_of_run(dataset: &Path, run_id: &str) -> Vec<(&'static str, PathBuf)> {
    let mut out = Vec::new();
    for t in TABLES {
        for f in table_files(dataset, t) {
            let key = f
                .strip_prefix(dataset)
                .map(|k| k.to_string_lossy().into_owned());
            if key
                .as_deref()
                .ok()
                .and_then(parse_key)
                .is_some_and(|p| p.run_id == run_id)
            {
                out.push((t, f));
            }
        }
    }
    out
}

/// The run id a `run-<id>[-<export id>].parquet` file name carries.
pub fn run_id_of(path: &Path) -> Option<&str> {
    let stem = path
        .file_name()?
        .to_str()?
        .strip_prefix("run-")?
        .strip_suffix(".parquet")?;
    Some(stem.split_once('-').map_or(stem, |(r, _)| r))
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
        assert_eq!(
            run_id_of(Path::new("steps/gpu=a/model=b/run-0123abcd-ffee.parquet")),
            Some("0123abcd")
        );
    }

    #[test]
    fn keys_round_trip() {
        let k = table_key("steps", "a", "b", "0123", Some("beef"));
        assert_eq!(k, "steps/gpu=a/model=b/run-0123-beef.parquet");
        let p = parse_key(&k).unwrap();
        assert_eq!(
            (p.table, p.gpu, p.model, p.run_id, p.export_id),
            ("steps", "a", "b", "0123", Some("beef"))
        );
        assert_eq!(
            parse_key(&runs_key("a", "b", "0123")).unwrap().export_id,
            None
        );
        assert_eq!(parse_key("steps/gpu=a/run-x.parquet"), None);
        assert_eq!(parse_key("steps/gpu=a/model=b/.stepgate-probe"), None);
    }

    #[test]
    fn pruning_keeps_every_partition_that_can_match() {
        let gpu = "NVIDIA H100 80GB HBM3";
        let slug = partition("gpu", Some(gpu));
        // Each substring of the full name that --where could give keeps its partition.
        for a in 0..gpu.len() {
            for b in a + 1..=gpu.len() {
                let v = &gpu[a..b];
                if v.trim().is_empty() {
                    continue;
                }
                let p = Prune {
                    exact: None,
                    contains: vec![v.to_owned()],
                };
                assert!(p.keeps("gpu", &slug), "{v:?} must keep {slug}");
            }
        }
        let p = Prune {
            exact: None,
            contains: vec!["a100".into()],
        };
        assert!(!p.keeps("gpu", &slug));
        let p = Prune {
            exact: Some((gpu.into(), true)),
            contains: vec![],
        };
        assert!(p.keeps("gpu", &slug) && p.keeps("gpu", "unknown"));
        assert!(!p.keeps("gpu", "nvidia-a100-sxm4-80gb"));
        let p = Prune {
            exact: Some((gpu.into(), false)),
            contains: vec![],
        };
        assert!(!p.keeps("gpu", "unknown"));
    }
}
