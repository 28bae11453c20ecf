//! Where a run's objects live — `runs/gpu=<slug>/model=<slug>/run-<run_id>.l<digests>.parquet`
//! (the commit; the digests name its labels, so a listing can skip runs a `--where label.K=V`
//! cannot match) and `TABLE/gpu=…/model=…/run-<run_id>-<export_id>.parquet` — with partition
//! values that are safe in any path and any engine and fit in a file name, and which
//! partitions and `runs` objects a read may skip.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::dataset::schema::TABLES;

/// The longest file name (one path component) the common file systems take, in bytes
/// (ext4, XFS, btrfs, APFS, NTFS: 255).
pub(crate) const NAME_MAX: usize = 255;

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

/// At most this many label digests in a `runs` object's name (94 bytes at most): a run
/// with more labels carries none, and is read by every `--where label.K=V`.
pub(crate) const MAX_LABEL_DIGESTS: usize = 8;

/// Hex digits of one label digest.
const DIGEST_HEX: usize = 8;

/// The digest of one label in a `runs` object's name: 8 hex digits of sha256(`key=value`)
/// (a key never holds `=`, so the pair is unambiguous). 32 bits: a reader that finds a
/// digest still reads the row and applies the real filter, so a collision costs one read.
pub(crate) fn label_digest(key: &str, value: &str) -> String {
    let mut h = Sha256::new();
    h.update(key.as_bytes());
    h.update(b"=");
    h.update(value.as_bytes());
    hex(&h.finalize()[..DIGEST_HEX / 2])
}

/// The digests a run's `runs` name carries, in label-key order: `None` when it has more
/// than [`MAX_LABEL_DIGESTS`] labels (its name carries none).
pub(crate) fn label_digests(labels: &BTreeMap<String, String>) -> Option<String> {
    (labels.len() <= MAX_LABEL_DIGESTS).then(|| {
        labels
            .iter()
            .map(|(k, v)| label_digest(k, v))
            .collect::<String>()
    })
}

/// The key of the `runs` row of a run: `run-<run_id>.l<digests>.parquet`, one 8-hex digest
/// per label (none for a run with more than [`MAX_LABEL_DIGESTS`]: `run-<run_id>.parquet`,
/// the name every run had before). The labels are part of the run id, so the name still
/// depends on the run id alone: two writers of one run race for the same object and the
/// create-only put lets one win.
pub(crate) fn runs_key(
    gpu: &str,
    model: &str,
    run_id: &str,
    labels: &BTreeMap<String, String>,
) -> String {
    match label_digests(labels) {
        Some(d) => format!("runs/gpu={gpu}/model={model}/run-{run_id}.l{d}.parquet"),
        None => runs_key_plain(gpu, model, run_id),
    }
}

/// The `runs` key without label digests: datasets written before the digests, and runs
/// with more labels than [`MAX_LABEL_DIGESTS`].
pub(crate) fn runs_key_plain(gpu: &str, model: &str, run_id: &str) -> String {
    format!("runs/gpu={gpu}/model={model}/run-{run_id}.parquet")
}

/// The key of another table's file of one export of a run: the export id makes it a name
/// no other export uses, so it is written without a condition and never overwritten.
/// Datasets written before export ids (`export_id` null) named it `run-<id>.parquet`.
pub(crate) fn table_key(
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
pub(crate) struct KeyParts<'a> {
    pub table: &'a str,
    pub gpu: &'a str,
    pub model: &'a str,
    pub run_id: &'a str,
    pub export_id: Option<&'a str>,
    /// A `runs` name's label digests (8 hex digits each, `Some("")` for a run without
    /// labels); `None` when the name carries none (it may hold any labels).
    pub labels: Option<&'a str>,
}

impl KeyParts<'_> {
    /// Whether a run named so may carry every one of these label digests: a name without
    /// digests may carry any.
    pub(crate) fn may_carry(&self, digests: &[String]) -> bool {
        let Some(have) = self.labels else {
            return true;
        };
        digests.iter().all(|d| {
            (0..have.len() / DIGEST_HEX).any(|i| &have[i * DIGEST_HEX..(i + 1) * DIGEST_HEX] == d)
        })
    }
}

/// Split `TABLE/gpu=…/model=…/run-<id>[-<export id>|.l<digests>].parquet`; `None` for
/// anything else.
pub(crate) fn parse_key(key: &str) -> Option<KeyParts<'_>> {
    let mut it = key.split('/');
    let table = it.next()?;
    let gpu = it.next()?.strip_prefix("gpu=")?;
    let model = it.next()?.strip_prefix("model=")?;
    let name = it.next()?;
    if it.next().is_some() {
        return None;
    }
    let stem = name.strip_prefix("run-")?.strip_suffix(".parquet")?;
    // Label digests: `.l` and whole 8-hex digests, at most MAX_LABEL_DIGESTS of them, on a
    // `runs` name only (data files carry an export id instead).
    let (stem, labels) = match stem.split_once('.') {
        Some((s, tag)) => {
            let d = tag.strip_prefix('l')?;
            let ok = d.len() % DIGEST_HEX == 0
                && d.len() <= MAX_LABEL_DIGESTS * DIGEST_HEX
                && d.bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
            (ok && table == "runs").then_some((s, Some(d)))?
        }
        None => (stem, None),
    };
    let (run_id, export_id) = match stem.split_once('-') {
        Some((r, e)) => (r, Some(e)),
        None => (stem, None),
    };
    if labels.is_some() && export_id.is_some() {
        return None;
    }
    (!run_id.is_empty()).then_some(KeyParts {
        table,
        gpu,
        model,
        run_id,
        export_id,
        labels,
    })
}

/// The label digests a `--where` filter's `label.K=V` clauses require of a run's name
/// (other clauses prune nothing here).
pub(crate) fn required_digests(clauses: &[(String, String)]) -> Vec<String> {
    clauses
        .iter()
        .filter_map(|(k, v)| Some(label_digest(k.strip_prefix("label.")?, v)))
        .collect()
}

/// Which partitions a read lists: a partition value (slug) is skipped only when no run
/// in it can match, so pruning never changes an answer.
#[derive(Debug, Clone, Default)]
pub(crate) struct Prune {
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
    // A local directory: no remote configuration applies.
    let local = crate::dataset::store::StoreConfig::default();
    let Ok(store) = crate::dataset::store::Store::open(dataset, &local) else {
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

/// The run id a `run-<id>[-<export id>|.l<digests>].parquet` file name carries.
pub(crate) fn run_id_of(path: &Path) -> Option<&str> {
    let stem = path
        .file_name()?
        .to_str()?
        .strip_prefix("run-")?
        .strip_suffix(".parquet")?;
    stem.split(['-', '.']).next()
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
            parse_key(&runs_key_plain("a", "b", "0123"))
                .unwrap()
                .export_id,
            None
        );
        assert_eq!(parse_key("steps/gpu=a/run-x.parquet"), None);
        assert_eq!(parse_key("steps/gpu=a/model=b/.stepgate-probe"), None);
    }

    #[test]
    fn runs_names_carry_one_digest_per_label_up_to_the_cap() {
        let labels = |n: usize| -> BTreeMap<String, String> {
            (0..n).map(|i| (format!("k{i}"), format!("v{i}"))).collect()
        };
        // sha256("branch=main"), computed by `printf 'branch=main' | sha256sum`: its first 8
        // hex digits.
        assert_eq!(label_digest("branch", "main"), "ad27740f");
        let mut l = BTreeMap::new();
        l.insert("branch".to_owned(), "main".to_owned());
        let k = runs_key("g", "m", "0123456789abcdef", &l);
        assert_eq!(
            k,
            "runs/gpu=g/model=m/run-0123456789abcdef.lad27740f.parquet"
        );
        let p = parse_key(&k).unwrap();
        assert_eq!(
            (p.run_id, p.export_id, p.labels),
            ("0123456789abcdef", None, Some("ad27740f"))
        );
        assert!(p.may_carry(&["ad27740f".to_owned()]));
        assert!(!p.may_carry(&[label_digest("branch", "feature")]));
        assert_eq!(run_id_of(Path::new(&k)), Some("0123456789abcdef"));
        // No labels: an empty digest list, which no label clause matches.
        let k = runs_key("g", "m", "ab", &labels(0));
        assert_eq!(k, "runs/gpu=g/model=m/run-ab.l.parquet");
        assert!(!parse_key(&k).unwrap().may_carry(&[label_digest("a", "b")]));
        // At the cap: every digest, in key order; the longest name stays short.
        let k = runs_key("g", "m", "0123456789abcdef", &labels(MAX_LABEL_DIGESTS));
        let name = k.rsplit('/').next().unwrap();
        assert_eq!(name.len(), 4 + 16 + 2 + 8 * MAX_LABEL_DIGESTS + 8);
        let p = parse_key(&k).unwrap();
        assert_eq!(&p.labels.unwrap()[8..16], label_digest("k1", "v1"));
        assert!(p.may_carry(&[label_digest("k7", "v7"), label_digest("k0", "v0")]));
        // Over the cap: no digests, the old name, read by every label clause.
        let k = runs_key("g", "m", "ab", &labels(MAX_LABEL_DIGESTS + 1));
        assert_eq!(k, runs_key_plain("g", "m", "ab"));
        let p = parse_key(&k).unwrap();
        assert_eq!(p.labels, None);
        assert!(p.may_carry(&[label_digest("x", "y")]));
        // Names that are not stepgate's: a partial digest, upper case, a digest on a data
        // file, too many digests.
        for bad in [
            "runs/gpu=g/model=m/run-ab.lad27.parquet",
            "runs/gpu=g/model=m/run-ab.lAD27740F.parquet",
            "steps/gpu=g/model=m/run-ab.lad27740f.parquet",
            "runs/gpu=g/model=m/run-ab-beef.lad27740f.parquet",
            "runs/gpu=g/model=m/run-ab.xad27740f.parquet",
        ] {
            assert_eq!(parse_key(bad), None, "{bad}");
        }
        let nine = format!("runs/gpu=g/model=m/run-ab.l{}.parquet", "0".repeat(72));
        assert_eq!(parse_key(&nine), None);
        // The --where clauses that require a digest: label equalities only.
        let c = |k: &str, v: &str| (k.to_owned(), v.to_owned());
        assert_eq!(
            required_digests(&[
                c("gpu", "h100"),
                c("label.branch", "main"),
                c("run_id", "x")
            ]),
            vec!["ad27740f".to_owned()]
        );
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
