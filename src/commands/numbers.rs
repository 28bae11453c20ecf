//! Value parsers and range checks for every numeric flag: a number that is negative, zero
//! where zero means nothing, not finite, or so large that the arithmetic downstream would
//! overflow is refused at the flag, in one line, in the flag's own unit.
//!
//! Why at the flag: the models multiply these numbers together (B·s·cell bytes, replicas =
//! rate / per-replica rate); a `u64` product that wraps prints a KV read of 0 bytes, and a
//! NaN prints 0 replicas with exit 0. Refusing the input is the only honest answer.

use crate::exit::{Error, Result};

// The bounds live below the command layer (the sidecar and the batch guesses check the
// same ones); the flags' parsers here use them under these names.
pub use crate::limits::{
    MAX_BATCH, MAX_CONTEXT, MAX_GAP_US, MAX_HBM_TB_S, MAX_LAUNCHES, MAX_LAUNCH_COST_US,
    MAX_PARALLEL,
};

/// A whole count flag in `[min, max]`, parsed from what the user typed. `unit` is plural
/// (`tokens`, `requests`). Accepts `-1` as a token (clap would call it an unknown flag)
/// so the message can say what is wrong with it.
pub fn count(
    flag: &str,
    unit: &str,
    s: &str,
    min: u64,
    max: u64,
) -> std::result::Result<u64, String> {
    let t = s.trim();
    let Ok(v) = t.parse::<u64>() else {
        return Err(match t.parse::<f64>() {
            Ok(f) if f.is_nan() => format!("{flag} must be a whole number of {unit}, got {t}"),
            Ok(f) if f < 0.0 || (f == 0.0 && min > 0) => {
                format!("{flag} must be a positive number of {unit}, got {t}")
            }
            Ok(f) if f > max as f64 => {
                format!("{flag} is {t} {unit}, beyond the {max} stepgate accepts; check the value")
            }
            _ => format!("{flag} must be a whole number of {unit}, got {t}"),
        });
    };
    if v < min {
        return Err(format!("{flag} must be ≥ {min}, got {v}"));
    }
    if v > max {
        return Err(format!(
            "{flag} is {v} {unit}, beyond the {max} stepgate accepts; check the value"
        ));
    }
    Ok(v)
}

/// `--top`: rows to show, 0 ..= 2^32 (a negative or fractional count is a typo).
pub(crate) fn rows_flag(s: &str) -> std::result::Result<usize, String> {
    count("--top", "rows", s, 0, 1 << 32).map(|v| v as usize)
}

/// `--waterfall-top`: rows before the rest fold into "N others", 0 ..= 2^32.
pub(crate) fn waterfall_rows_flag(s: &str) -> std::result::Result<usize, String> {
    count("--waterfall-top", "rows", s, 0, 1 << 32).map(|v| v as usize)
}

/// `baseline record --max-steps`: 0 (keep all) ..= 2^32.
pub(crate) fn max_steps_flag(s: &str) -> std::result::Result<usize, String> {
    count("--max-steps", "steps", s, 0, 1 << 32).map(|v| v as usize)
}

/// `--last` (runs of a history or a trend): 1 ..= 2^32; 0 would select nothing.
pub(crate) fn last_runs_flag(s: &str) -> std::result::Result<usize, String> {
    count("--last", "runs", s, 1, 1 << 32).map(|v| v as usize)
}

/// `--min-runs`: 1 ..= 2^32.
pub(crate) fn min_runs_flag(s: &str) -> std::result::Result<usize, String> {
    count("--min-runs", "runs", s, 1, 1 << 32).map(|v| v as usize)
}

/// `trend --window`: previous runs each point is judged against, 1 ..= 2^32.
pub(crate) fn window_flag(s: &str) -> std::result::Result<usize, String> {
    count("--window", "runs", s, 1, 1 << 32).map(|v| v as usize)
}

/// Most reader threads `--threads` accepts: beyond any machine's core count, so a typo
/// (`--threads 100000`) is refused instead of spawning a thread per slice it can fill.
pub(crate) const MAX_THREADS: u64 = 1024;

/// `--threads`: reader threads, 1 (the serial read) ..= [`MAX_THREADS`]; 0 would read
/// nothing.
pub(crate) fn threads_flag(s: &str) -> std::result::Result<usize, String> {
    count("--threads", "threads", s, 1, MAX_THREADS).map(|v| v as usize)
}

/// Say on stderr, in one line, that `old` is an old spelling and what to write instead;
/// the old spelling still works.
pub fn deprecated(old: &str, instead: &str) {
    use std::io::Write;
    // A failed stderr write must not turn a result into a crash.
    let _ = writeln!(
        std::io::stderr(),
        "warning: {old} is deprecated and will be removed: write {instead}"
    );
}

/// A real flag that must be finite, above zero and at most `max`. `unit` is appended to
/// the numbers in the message (`ms`, `req/s`; empty for a plain number).
pub fn real(flag: &str, unit: &str, v: f64, max: f64) -> Result<f64> {
    let with = |x: f64| {
        if unit.is_empty() || !x.is_finite() {
            format!("{x}")
        } else {
            format!("{x} {unit}")
        }
    };
    if !(v.is_finite() && v > 0.0) {
        return Err(Error::usage(format!(
            "{flag} must be positive, got {}",
            with(v)
        )));
    }
    if v > max {
        return Err(Error::usage(format!(
            "{flag} is {} but at most {} makes sense; check the value",
            with(v),
            with(max)
        )));
    }
    Ok(v)
}

/// [`real`] for an optional flag.
pub(crate) fn real_opt(flag: &str, unit: &str, v: Option<f64>, max: f64) -> Result<Option<f64>> {
    v.map(|x| real(flag, unit, x, max)).transpose()
}

/// A fraction in (0, 1].
pub fn fraction(flag: &str, v: f64) -> Result<f64> {
    if v.is_finite() && v > 0.0 && v <= 1.0 {
        Ok(v)
    } else {
        Err(Error::usage(format!(
            "{flag} must be a fraction in (0, 1], such as 0.4; got {v}"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts() {
        let c = |s: &str| count("--context", "tokens", s, 1, 1000);
        assert_eq!(
            c("2048"),
            Err(
                "--context is 2048 tokens, beyond the 1000 stepgate accepts; check the value"
                    .into()
            )
        );
        assert_eq!(c("12"), Ok(12));
        assert_eq!(
            c("-1").unwrap_err(),
            "--context must be a positive number of tokens, got -1"
        );
        assert_eq!(c("0").unwrap_err(), "--context must be ≥ 1, got 0");
        assert_eq!(
            c("1.5").unwrap_err(),
            "--context must be a whole number of tokens, got 1.5"
        );
        assert_eq!(
            c("nan").unwrap_err(),
            "--context must be a whole number of tokens, got nan"
        );
        assert!(c("1e13").unwrap_err().contains("beyond"));
        assert!(c("18446744073709551616").unwrap_err().contains("beyond"));
        assert_eq!(count("--launches", "launches", "0", 0, 5), Ok(0));
    }

    #[test]
    fn reals() {
        assert_eq!(
            real("--ttft-ms", "ms", -900.0, 1e7).unwrap_err().message,
            "--ttft-ms must be positive, got -900 ms"
        );
        assert_eq!(
            real("--fleet-rps", "req/s", f64::NAN, 1e9)
                .unwrap_err()
                .message,
            "--fleet-rps must be positive, got NaN"
        );
        assert!(real("--fleet-rps", "req/s", 1e300, 1e9)
            .unwrap_err()
            .message
            .contains("at most 1000000000 req/s"));
        assert_eq!(real("--x", "", 2.5, 10.0).unwrap(), 2.5);
        assert!(fraction("--prefill-mfu", 1.5).is_err());
        assert!(fraction("--prefill-mfu", f64::NAN).is_err());
        assert_eq!(fraction("--prefill-mfu", 1.0).unwrap(), 1.0);
    }
}
