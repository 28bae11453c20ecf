//! Rendering finished values: only this module knows how output looks. It never computes.

pub mod analyze;
pub mod answer;
pub mod capacity;
pub mod capture;
pub mod charts;
pub mod classes;
pub mod doctor;
pub mod escape;
pub mod fit;
pub mod floor;
pub mod gate;
pub mod html;
pub mod markup;
pub mod policy;
pub mod presets;
pub mod probe;
pub mod spread;
pub mod steps;
pub mod table;

pub use crate::text::{fmt_int, group_thousands, one_line, to_json, truncate};
pub mod trend;
pub use crate::words;

/// Output format shared by every subcommand that renders a report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Format {
    /// Aligned plain-text tables for the terminal.
    #[default]
    Table,
    /// GitHub-flavoured markdown (PR comments, `$GITHUB_STEP_SUMMARY`).
    Markdown,
    /// The versioned JSON wire type.
    Json,
    /// Comma-separated rows (one table per command).
    Csv,
}

/// Widest kernel name a terminal table shows (markdown and JSON keep full names).
pub(crate) const NAME_WIDTH: usize = 60;

/// A name as it may appear in a terminal table or a markdown cell: control characters
/// (CR and LF would split a row, ESC would drive the terminal, NUL truncates in C tools)
/// are written as visible escapes (`\r`, `\n`, `\t`, `\0`, `\x1b`, `\u{85}`). Names
/// without any are returned as they are, without a copy.
pub(crate) fn escape_control(s: &str) -> std::borrow::Cow<'_, str> {
    if !s.chars().any(char::is_control) {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '\r' => out.push_str("\\r"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\0' => out.push_str("\\0"),
            c if c.is_control() && (c as u32) < 0x80 => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c if c.is_control() => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
        }
    }
    std::borrow::Cow::Owned(out)
}

/// Nanoseconds as microseconds with one decimal, thousands separated: `12,345.6`.
pub fn fmt_us(ns: f64) -> String {
    group_thousands(&format!("{:.1}", ns / 1e3))
}

/// A fraction as a percentage with one decimal: `12.3%`.
pub(crate) fn fmt_pct(frac: f64) -> String {
    format!("{:.1}%", frac * 100.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousands() {
        assert_eq!(group_thousands("1234567.25"), "1,234,567.25");
        assert_eq!(group_thousands("-1234"), "-1,234");
        assert_eq!(group_thousands("12"), "12");
        assert_eq!(fmt_us(7_046_008.6), "7,046.0");
        assert_eq!(fmt_pct(0.1234), "12.3%");
    }

    #[test]
    fn control_characters_are_escaped_and_plain_names_borrowed() {
        assert!(matches!(
            escape_control("gemm_kernel"),
            std::borrow::Cow::Borrowed(_)
        ));
        assert_eq!(
            escape_control("a\r\nb\u{1b}[31mc\0d\te\u{85}"),
            "a\\r\\nb\\x1b[31mc\\0d\\te\\u{85}"
        );
    }

    #[test]
    fn multi_line_messages_become_one() {
        let m = "--steps \"(\": regex parse error:\n    (\n    ^\nerror: unclosed group";
        assert_eq!(
            one_line(m),
            "--steps \"(\": regex parse error: ( error: unclosed group"
        );
        assert_eq!(one_line("plain"), "plain");
    }
}
