//! Wall-clock phase marks for profiling stepgate itself on big reports: with
//! `STEPGATE_PHASES=1` each mark prints `phase <seconds since the first mark> <peak RSS
//! so far, MiB (Linux)> <name>` to stderr (how the README's performance section splits a
//! run); otherwise a mark costs one load of a cached flag.

use std::sync::OnceLock;
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

/// Mark the end of a phase (a failed stderr write is ignored: a timing line must never
/// turn a result into an error).
pub fn mark(name: &str) {
    if let Some(t0) = origin() {
        use std::io::Write;
        let peak = peak_rss_mib().map_or_else(|| "-".to_owned(), |m| m.to_string());
        let _ = writeln!(
            std::io::stderr().lock(),
            "phase {:8.3} s {peak:>6} MiB  {name}",
            t0.elapsed().as_secs_f64()
        );
    }
}

/// The process's peak resident set so far (`VmHWM`), where the kernel reports it.
fn peak_rss_mib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024)
}
