//! Wall-clock phase marks for profiling stepgate itself on big reports: with
//! `STEPGATE_PHASES=1` each mark records `phase <seconds since the first mark> <peak RSS
//! so far, MiB (Linux)> <name>`, which the command layer prints on stderr when the run
//! ends ([`take`]; how docs/performance.md splits a run); otherwise a mark costs one load
//! of a cached flag. The library never prints them itself.

use std::sync::{Mutex, OnceLock};
use std::time::Instant;

/// The first mark's time, when marks are printed.
fn origin() -> Option<Instant> {
    static ORIGIN: OnceLock<Option<Instant>> = OnceLock::new();
    *ORIGIN.get_or_init(|| {
        std::env::var_os("STEPGATE_PHASES")
            .filter(|v| !v.is_empty() && v != "0")
            .map(|_| Instant::now())
    })
}

/// The marks recorded and not yet taken.
static MARKS: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Mark the end of a phase: its time and peak memory now, recorded for [`take`].
pub fn mark(name: &str) {
    if let Some(t0) = origin() {
        let peak = peak_rss_mib().map_or_else(|| "-".to_owned(), |m| m.to_string());
        let line = format!(
            "phase {:8.3} s {peak:>6} MiB  {name}",
            t0.elapsed().as_secs_f64()
        );
        if let Ok(mut m) = MARKS.lock() {
            m.push(line);
        }
    }
}

/// The marks recorded so far, oldest first, removed from the record.
pub fn take() -> Vec<String> {
    MARKS
        .lock()
        .map(|mut m| std::mem::take(&mut *m))
        .unwrap_or_default()
}

/// The process's peak resident set so far (`VmHWM`), where the kernel reports it.
fn peak_rss_mib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024)
}
