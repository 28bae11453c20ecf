//! Wall-clock phase marks for profiling stepgate itself on big reports: with
//! `STEPGATE_PHASES=1` each mark prints `phase <seconds since the first mark> <name>` to
//! stderr (how the README's performance section splits a run); otherwise a mark costs
//! one load of a cached flag.

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
        let _ = writeln!(
            std::io::stderr().lock(),
            "phase {:8.3} {name}",
            t0.elapsed().as_secs_f64()
        );
    }
}
