//! The torch-profiler traces a capture produced: trace-like files in `--trace-dir` that were
//! not there (or not in that state) before the profiler was armed.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use super::watch::Watch;
use crate::exit::Result;

/// The trace-like files of a directory: path, modification time, size.
pub(crate) type Snapshot = HashSet<(PathBuf, SystemTime, u64)>;

/// Trace-like files (`*.json`, `*.json.gz`, `*.pt.trace.json.gz`, ...) directly in `dir`.
pub fn snapshot(dir: &Path) -> Snapshot {
    let mut s = HashSet::new();
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if !name.contains(".json") {
                continue;
            }
            if let Ok(m) = e.metadata() {
                if m.is_file() {
                    let t = m.modified().unwrap_or(SystemTime::UNIX_EPOCH);
                    s.insert((e.path(), t, m.len()));
                }
            }
        }
    }
    s
}

fn changed(dir: &Path, before: &Snapshot) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = snapshot(dir)
        .difference(before)
        .map(|(p, _, _)| p.clone())
        .collect();
    found.sort();
    found.dedup();
    found
}

/// New or changed traces in `dir` since `before`, waiting up to `wait` for the first.
pub(crate) fn new_traces(
    dir: &Path,
    before: &Snapshot,
    wait: Duration,
    watch: &mut Watch,
) -> Result<Vec<PathBuf>> {
    let until = Instant::now() + wait;
    loop {
        if !changed(dir, before).is_empty() {
            // Ranks and by-stage files arrive one after another; give the rest a moment.
            watch.sleep(Duration::from_millis(300))?;
            return Ok(changed(dir, before));
        }
        if Instant::now() >= until {
            return Ok(Vec::new());
        }
        watch.sleep(Duration::from_millis(100))?;
    }
}
