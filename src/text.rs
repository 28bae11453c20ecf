//! Plain-text primitives every layer may use (a leaf module): one-line error text, pretty
//! JSON, thousands separators and cutting a string to a length. The report layer re-exports
//! them; modules below it (baseline, dataset, operating_point) use them from here so that
//! they never reach up into `report`.

/// An error message as one line: libraries (regex, clap) format theirs over several lines
/// with caret art under the offending text; keep the words, drop the art, join with a space.
pub fn one_line(msg: &str) -> String {
    if !msg.contains('\n') && !msg.contains('\r') {
        return msg.to_owned();
    }
    msg.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.chars().all(|c| c == '^' || c == '~' || c == ' '))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Pretty JSON with a trailing newline.
pub fn to_json<T: serde::Serialize>(value: &T) -> String {
    let mut s = serde_json::to_string_pretty(value).expect("plain data always serializes");
    s.push('\n');
    s
}

/// An integer with thousands separators.
pub fn fmt_int(v: i64) -> String {
    group_thousands(&v.to_string())
}

/// Insert `,` every three digits in the integer part of a decimal string.
pub fn group_thousands(s: &str) -> String {
    let (sign, rest) = match s.strip_prefix('-') {
        Some(r) => ("-", r),
        None => ("", s),
    };
    let (int, frac) = match rest.find('.') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    let mut out = String::with_capacity(s.len() + int.len() / 3);
    for (i, c) in int.chars().enumerate() {
        if i > 0 && (int.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    format!("{sign}{out}{frac}")
}

/// Cut a display name to `max` characters with an ellipsis.
pub fn truncate(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_owned()
    } else {
        let mut t: String = s.chars().take(max - 1).collect();
        t.push('…');
        t
    }
}
