//! Kineto numbers as text: `ts`/`dur` decimal microseconds → integer nanoseconds, exactly.
//!
//! Kineto writes times as `"{ns/1000}.{ns%1000:03}"` (docs/kineto-format.md §8, `fmtTs` in
//! libkineto/src/output_json.cpp), so the three fractional digits ARE the nanoseconds.
//! Old traces hold absolute epoch µs (1.7e15): an f64 has a 0.25 µs step there, so the
//! text is read digit by digit instead of through a float.

/// Decimal microseconds (`1712195495505582.988`, `4.928`, `1683564901540885`) → ns.
/// More than three fractional digits round half away from zero at the nanosecond; an
/// exponent form (`1e-3`, never written by Kineto) goes through f64. `None` if not a number.
pub(crate) fn us_text_to_ns(text: &[u8]) -> Option<i64> {
    let (neg, body) = match text.first()? {
        b'-' => (true, &text[1..]),
        _ => (false, text),
    };
    let mut i = 0;
    let mut int: i64 = 0;
    let mut digits = 0usize;
    while i < body.len() && body[i].is_ascii_digit() {
        int = int
            .checked_mul(10)?
            .checked_add(i64::from(body[i] - b'0'))?;
        i += 1;
        digits += 1;
    }
    let mut frac: i64 = 0;
    let mut frac_digits = 0usize;
    let mut round_up = false;
    if i < body.len() && body[i] == b'.' {
        i += 1;
        while i < body.len() && body[i].is_ascii_digit() {
            let d = i64::from(body[i] - b'0');
            if frac_digits < 3 {
                frac = frac * 10 + d;
            } else if frac_digits == 3 {
                round_up = d >= 5;
            }
            frac_digits += 1;
            i += 1;
        }
    }
    if i < body.len() {
        if matches!(body[i], b'e' | b'E') {
            return float_fallback(text);
        }
        return None;
    }
    if digits + frac_digits == 0 {
        return None;
    }
    for _ in frac_digits.min(3)..3 {
        frac *= 10;
    }
    let mag = int
        .checked_mul(1000)?
        .checked_add(frac)?
        .checked_add(i64::from(round_up))?;
    Some(if neg { -mag } else { mag })
}

fn float_fallback(text: &[u8]) -> Option<i64> {
    let v: f64 = std::str::from_utf8(text).ok()?.parse().ok()?;
    let ns = (v * 1000.0).round();
    (ns.is_finite() && ns.abs() < 9.0e18).then_some(ns as i64)
}

/// An integer id or count (`pid`, `stream`, `correlation`, `bytes`). A fraction of zeros
/// (`7.0`, as a Python re-serialisation may write) is accepted; anything else is `None`.
pub(crate) fn int_text(text: &[u8]) -> Option<i64> {
    let (neg, body) = match text.first()? {
        b'-' => (true, &text[1..]),
        _ => (false, text),
    };
    let mut i = 0;
    let mut v: i64 = 0;
    while i < body.len() && body[i].is_ascii_digit() {
        v = v.checked_mul(10)?.checked_add(i64::from(body[i] - b'0'))?;
        i += 1;
    }
    if i == 0 {
        return None;
    }
    if i < body.len() && (body[i] != b'.' || !body[i + 1..].iter().all(|&b| b == b'0')) {
        return None;
    }
    Some(if neg { -v } else { v })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absolute_epoch_keeps_nanoseconds() {
        // An f64 cannot hold this: 1712195495505582.988 µs rounds to ...583.0 as a float.
        assert_eq!(
            us_text_to_ns(b"1712195495505582.988"),
            Some(1_712_195_495_505_582_988)
        );
        assert_eq!(
            us_text_to_ns(b"1683564901540885"),
            Some(1_683_564_901_540_885_000)
        );
    }

    #[test]
    fn short_fractions_and_rounding() {
        assert_eq!(us_text_to_ns(b"4.928"), Some(4928));
        assert_eq!(us_text_to_ns(b"2.08"), Some(2080));
        assert_eq!(us_text_to_ns(b"7"), Some(7000));
        assert_eq!(us_text_to_ns(b"0.0004"), Some(0));
        assert_eq!(us_text_to_ns(b"0.0005"), Some(1));
        assert_eq!(us_text_to_ns(b"-1.5"), Some(-1500));
        assert_eq!(us_text_to_ns(b"1.5e3"), Some(1_500_000));
        assert_eq!(us_text_to_ns(b"abc"), None);
        assert_eq!(us_text_to_ns(b"."), None);
        assert_eq!(us_text_to_ns(b""), None);
    }

    #[test]
    fn integers() {
        assert_eq!(int_text(b"92160"), Some(92160));
        assert_eq!(int_text(b"-1"), Some(-1));
        assert_eq!(int_text(b"7.0"), Some(7));
        assert_eq!(int_text(b"7.5"), None);
        assert_eq!(int_text(b"\"x\""), None);
    }
}
