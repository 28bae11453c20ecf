//! Dates for `trend`: `--since YYYY-MM-DD` to Unix-epoch ns and back, UTC, without a
//! calendar dependency.

use crate::exit::{Error, Result};

/// Parse `--since YYYY-MM-DD` (UTC midnight) to Unix-epoch ns.
pub(crate) fn parse_date(s: &str) -> Result<i64> {
    let bad = || Error::input(format!("--since {s:?} is not a date like 2026-01-31"));
    let mut it = s.trim().splitn(3, '-');
    let y: i64 = it.next().and_then(|x| x.parse().ok()).ok_or_else(bad)?;
    let m: i64 = it.next().and_then(|x| x.parse().ok()).ok_or_else(bad)?;
    let d: i64 = it.next().and_then(|x| x.parse().ok()).ok_or_else(bad)?;
    // Years outside 1970..=2200 are no export time (and past 2262 overflow i64 ns).
    if !(1..=12).contains(&m) || !(1..=31).contains(&d) || !(1970..=2200).contains(&y) {
        return Err(bad());
    }
    Ok(days_from_civil(y, m, d) * 86_400 * 1_000_000_000)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// `YYYY-MM-DD HH:MM:SS` (UTC) of Unix-epoch ns.
pub(crate) fn fmt_time(ns: i64) -> String {
    let secs = ns.div_euclid(1_000_000_000);
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    // Inverse of days_from_civil (H. Hinnant).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_round_trip() {
        // 2000-03-01 is day 11,017 since the epoch (30 years × 365 + 7 leap days + Jan + Feb).
        assert_eq!(days_from_civil(2000, 3, 1), 30 * 365 + 7 + 31 + 29);
        assert_eq!(parse_date("1970-01-02").unwrap(), 86_400_000_000_000);
        assert_eq!(
            fmt_time(parse_date("2026-11-30").unwrap() + 3_661_000_000_000),
            "2026-11-30 01:01:01"
        );
        assert!(parse_date("2026-13-01").is_err());
        assert!(parse_date("yesterday").is_err());
        assert!(parse_date("99999999999-01-01").is_err(), "would overflow");
    }
}
