//! `stepgate dataset vacuum --older-than D`: remove what exports that never committed
//! left — table objects no `runs` row names, the writability probes, and on a local disk
//! the staging files of a killed write — once they are older than D, so an export still
//! in flight (whose files are not named yet) is never touched.

use std::collections::HashSet;
use std::path::Path;
use std::time::Duration;

use crate::dataset::layout;
use crate::dataset::read;
use crate::dataset::store::Store;
use crate::exit::{Error, Result};

/// The shortest `--older-than`: an export in flight writes its tables before its commit,
/// and removing them under it would commit a run with missing files.
pub(crate) const MIN_AGE: Duration = Duration::from_secs(60);

/// What a vacuum found and did.
#[derive(Debug, Clone, Default)]
pub struct Vacuumed {
    /// Objects removed (or, with `dry_run`, that would be), named.
    pub removed: Vec<String>,
    pub bytes: u64,
    /// Unreferenced objects younger than the limit, left alone.
    pub young: usize,
    /// Committed runs whose files were all kept.
    pub runs: usize,
    pub warnings: Vec<String>,
}

/// Parse `--older-than`: a whole number and a unit, `s`, `m`, `h` or `d` (`7d`, `12h`).
pub(crate) fn parse_age(s: &str) -> std::result::Result<Duration, String> {
    let t = s.trim();
    let (n, unit) = t.split_at(t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len()));
    let mult = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        _ => {
            return Err(format!(
                "--older-than {s:?}: give a number and s, m, h or d (e.g. 7d)"
            ))
        }
    };
    let n: u64 = n
        .parse()
        .map_err(|_| format!("--older-than {s:?}: give a number and s, m, h or d (e.g. 7d)"))?;
    let d = Duration::from_secs(n.saturating_mul(mult));
    if d < MIN_AGE {
        return Err(format!(
            "--older-than {s}: at least 1m (an export in flight has written files it has not \
             committed yet)"
        ));
    }
    Ok(d)
}

/// Remove (or list, with `dry_run`) the objects no committed run names, older than `age`.
pub fn vacuum(
    dataset: &Path,
    store: &crate::store::StoreConfig,
    age: Duration,
    dry_run: bool,
) -> Result<Vacuumed> {
    let store = Store::open(dataset, store)?;
    if !store.exists()? {
        return Err(Error::input(format!(
            "{} does not exist: nothing to vacuum",
            store.name()
        )));
    }
    let now = crate::dataset::write::now_ns();
    let limit = now - i64::try_from(age.as_nanos()).unwrap_or(i64::MAX);
    let all = store.list("")?;
    let mut out = Vacuumed::default();
    // What committed runs name; a runs object that cannot be read protects every file of
    // its run id (it may be repaired by hand).
    let runs: Vec<_> = all
        .iter()
        .filter(|o| {
            layout::parse_key(&o.key).is_some_and(|p| p.table == "runs" && p.export_id.is_none())
        })
        .cloned()
        .collect();
    let mut named: HashSet<String> = HashSet::new();
    let mut protected: HashSet<String> = HashSet::new();
    for o in &runs {
        match read::read_rows(&store, std::slice::from_ref(o), &mut out.warnings) {
            Ok(rows) if !rows.is_empty() => {
                for r in rows {
                    out.runs += 1;
                    for t in ["steps", "step_kernels", "kernels", "devices"] {
                        named.insert(r.table_file(t));
                    }
                }
            }
            _ => {
                if let Some(p) = layout::parse_key(&o.key) {
                    protected.insert(p.run_id.to_owned());
                }
                out.warnings.push(format!(
                    "{}: cannot be read as a runs row: every file of its run is kept",
                    store.name_of(&o.key)
                ));
            }
        }
    }
    for o in &all {
        let name = o.key.rsplit('/').next().unwrap_or("");
        let stale = match layout::parse_key(&o.key) {
            Some(p) if p.table == "runs" => false,
            Some(p) => !named.contains(&o.key) && !protected.contains(p.run_id),
            // The writability probe at the root.
            None => !o.key.contains('/') && name.starts_with(".stepgate-probe-"),
        };
        if !stale {
            continue;
        }
        if o.modified_ns > limit {
            out.young += 1;
            continue;
        }
        if !dry_run {
            store.delete(&o.key)?;
        }
        out.bytes += o.size;
        out.removed.push(store.name_of(&o.key));
    }
    if let Some(dir) = store.local_dir() {
        local_staging(dir, limit, dry_run, &mut out)?;
    }
    out.removed.sort();
    Ok(out)
}

/// Staging files of a write killed on a local disk (object_store's `NAME#N`, and the
/// `.stepgate-*.tmp` files of older stepgate versions): never listed as objects.
fn local_staging(dir: &Path, limit: i64, dry_run: bool, out: &mut Vacuumed) -> Result<()> {
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let Ok(t) = e.file_type() else { continue };
            let p = e.path();
            if t.is_dir() {
                stack.push(p);
                continue;
            }
            let name = e.file_name().to_string_lossy().into_owned();
            let staging = name
                .rsplit_once('#')
                .is_some_and(|(_, n)| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()))
                || (name.starts_with(crate::output::TMP_PREFIX)
                    && name.ends_with(crate::output::TMP_SUFFIX));
            if !staging || !t.is_file() {
                continue;
            }
            let Ok(m) = e.metadata() else { continue };
            let modified = m
                .modified()
                .ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map_or(0, |d| d.as_nanos() as i64);
            if modified > limit {
                out.young += 1;
                continue;
            }
            if !dry_run {
                std::fs::remove_file(&p).map_err(|e| {
                    Error::environment(format!("cannot remove {}: {e}", p.display()))
                })?;
            }
            out.bytes += m.len();
            out.removed.push(p.display().to_string());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_parse_with_a_unit_and_a_floor() {
        assert_eq!(parse_age("7d").unwrap(), Duration::from_secs(7 * 86_400));
        assert_eq!(parse_age("12h").unwrap(), Duration::from_secs(12 * 3600));
        assert_eq!(parse_age("2m").unwrap(), Duration::from_secs(120));
        assert!(parse_age("30s").unwrap_err().contains("at least 1m"));
        assert!(parse_age("7").is_err());
        assert!(parse_age("d").is_err());
        assert!(parse_age("1.5h").is_err());
    }
}
