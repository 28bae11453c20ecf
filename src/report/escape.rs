//! Untrusted text into output, one function per context: markdown prose, a markdown code
//! span, HTML text or attribute, and a line of terminal or CI-log text. Every string a
//! capture, a config, a baseline or a flag can set (kernel names, NVTX ranges, file names,
//! model/GPU/engine names, policy selectors) goes through one of these before it is
//! written, because a gate runs on pull requests whose author chooses those strings.

use crate::report::escape_control;

/// A zero-width space as an HTML entity: between `@` and a name (or `#` and a number) it
/// stops GitHub from turning the text into a mention or an issue link, and it renders as
/// nothing.
const ZWSP: &str = "&#8203;";

/// Text inside markdown prose, a heading, a list item or a table cell: it renders as the
/// same characters and never as markup. Control characters become visible escapes (a
/// newline would end the line it sits in); a `<` that could open HTML, and an `&` that
/// could open an entity, become entities (no raw HTML, so no `<!--` that hides the rest,
/// no `</details>` that closes a fold); every other character markdown gives a meaning to
/// where it stands is backslash-escaped; `@name` and `#123` get a zero-width space so
/// GitHub neither pings a team nor links an issue. Characters that mean nothing where
/// they stand (`3% & 20 µs`, `<1`, `[memcpy HtoD]`'s `]`) are left as they are, so the
/// source stays readable.
pub fn md_text(s: &str) -> String {
    let s = escape_control(s);
    let chars: Vec<char> = s.chars().collect();
    let mut out = String::with_capacity(s.len() + 8);
    for (i, &c) in chars.iter().enumerate() {
        let prev = i.checked_sub(1).map(|j| chars[j]);
        let next = chars.get(i + 1).copied();
        match c {
            // `&` starts an entity only before a name or `#`: `3% & 20 µs` stays as it is.
            '&' if next.is_some_and(|n| n.is_ascii_alphanumeric() || n == '#') => {
                out.push_str("&amp;");
            }
            // `<` opens raw HTML, a comment or an autolink only before a letter, `/`, `!`
            // or `?`; `>` opens a quote only at the start of a line.
            '<' if next.is_none_or(|n| n.is_ascii_alphabetic() || "/!?".contains(n)) => {
                out.push_str("&lt;");
            }
            '>' if i == 0 => out.push_str("&gt;"),
            // No `[`, no link or image (a `]` alone is only text).
            '\\' | '`' | '*' | '[' | '|' | '~' => {
                out.push('\\');
                out.push(c);
            }
            // An underscore between two letters or digits can neither open nor close
            // emphasis (CommonMark's flanking rules), so `flash_fwd` stays readable.
            '_' if prev.is_some_and(char::is_alphanumeric)
                && next.is_some_and(char::is_alphanumeric) =>
            {
                out.push('_');
            }
            '_' => out.push_str("\\_"),
            // A heading at the start of a line; `#123` (or `GH-1#2`) an issue link anywhere.
            '#' if i == 0 && next.is_none_or(|n| n == '#' || n.is_whitespace()) => {
                out.push_str("\\#");
            }
            '#' if next.is_some_and(|n| n.is_ascii_alphanumeric()) => {
                out.push('#');
                out.push_str(ZWSP);
            }
            '@' => {
                out.push('@');
                if next.is_some_and(|n| n.is_alphanumeric() || n == '-' || n == '_') {
                    out.push_str(ZWSP);
                }
            }
            // What opens a block at the start of a line: a list item (`- `, `+ `), a rule
            // (`---`), a setext underline (a line of `=`).
            '-' | '+' if i == 0 && next.is_none_or(|n| n == c || n.is_whitespace()) => {
                out.push('\\');
                out.push(c);
            }
            '=' if i == 0 && chars.iter().all(|&x| x == '=' || x.is_whitespace()) => {
                out.push_str("\\=");
            }
            // `1.` or `1)` then a space at the start of a line opens an ordered list.
            '.' | ')'
                if i > 0
                    && chars[..i].iter().all(char::is_ascii_digit)
                    && next.is_none_or(char::is_whitespace) =>
            {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out
}

/// A line of markdown whose only markup is code spans (names written with [`md_code`]):
/// the spans are kept, everything between them escaped as [`md_text`]. The scan finds
/// spans as CommonMark does (a run of n backticks up to the next run of exactly n), and
/// every backslash outside them is doubled, so the renderer sees the same spans; a span's
/// content renders literally whoever wrote it.
pub fn md_inline(s: &str) -> String {
    let s = escape_control(s);
    let mut out = String::with_capacity(s.len() + 8);
    let mut text_start = 0;
    let mut i = 0;
    let b = s.as_bytes();
    while i < b.len() {
        if b[i] != b'`' {
            i += 1;
            continue;
        }
        let n = b[i..].iter().take_while(|&&c| c == b'`').count();
        match closing_run(&s[i + n..], n) {
            Some(end) => {
                out.push_str(&md_text(&s[text_start..i]));
                let close = i + n + end + n;
                out.push_str(&s[i..close]);
                i = close;
                text_start = close;
            }
            None => i += n,
        }
    }
    out.push_str(&md_text(&s[text_start..]));
    out
}

/// Where the first run of exactly `n` backticks in `s` starts.
fn closing_run(s: &str, n: usize) -> Option<usize> {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'`' {
            let run = b[i..].iter().take_while(|&&c| c == b'`').count();
            if run == n {
                return Some(i);
            }
            i += run;
        } else {
            i += 1;
        }
    }
    None
}

/// A markdown code span that shows `s` exactly: the fence is one backtick longer than the
/// longest run of backticks inside, and padded with a space on both sides when the text
/// starts or ends with a backtick or a space (CommonMark strips one space from each side
/// of a padded span). Control characters become visible escapes: a newline would end the
/// line the span sits in.
pub fn md_code(s: &str) -> String {
    let s = escape_control(s);
    if s.is_empty() {
        return "` `".to_owned();
    }
    let fence = "`".repeat(longest_backtick_run(&s) + 1);
    let pad = s.starts_with(['`', ' ']) || s.ends_with(['`', ' ']);
    if pad {
        format!("{fence} {s} {fence}")
    } else {
        format!("{fence}{s}{fence}")
    }
}

fn longest_backtick_run(s: &str) -> usize {
    let (mut best, mut run) = (0, 0);
    for c in s.chars() {
        run = if c == '`' { run + 1 } else { 0 };
        best = best.max(run);
    }
    best
}

/// Whether `s` is exactly one complete markdown code span (what [`md_code`] writes): a
/// fence of n backticks, then text with no run of exactly n backticks, then the same
/// fence. Such a cell renders literally and needs no further escaping.
pub(crate) fn is_code_span(s: &str) -> bool {
    let n = s.chars().take_while(|&c| c == '`').count();
    if n == 0 || s.len() < 2 * n + 1 {
        return false;
    }
    let inner = &s[n..s.len() - n];
    if !s.ends_with(&"`".repeat(n)) || inner.ends_with('`') || inner.starts_with('`') {
        return false;
    }
    let mut run = 0;
    for c in inner.chars().chain(std::iter::once(' ')) {
        if c == '`' {
            run += 1;
        } else {
            if run == n {
                return false;
            }
            run = 0;
        }
    }
    !inner.chars().any(char::is_control)
}

/// Text for HTML element content or a double-quoted attribute value: maud's escaping
/// (`& < > "`), the one the page templates apply to every spliced string, for what is
/// still written as a string (the charts' SVG markers).
pub fn html(s: &str) -> String {
    maud::html! { (s) }.into_string()
}

/// A line of terminal text that is also safe in a CI log: no control characters (visible
/// escapes instead), and never a GitHub workflow command — the runner executes a line that
/// starts with `::` after leading whitespace, and `##[` anywhere (the old syntax), so
/// those get a backslash.
pub(crate) fn terminal_line(s: &str) -> String {
    let s = escape_control(s);
    let mut out = s.replace("##[", "#\\#[");
    let lead = out.len() - out.trim_start().len();
    if out[lead..].starts_with("::") {
        out.insert(lead, '\\');
    }
    out
}

/// Every line of a block of terminal text through [`terminal_line`].
pub(crate) fn terminal_block(s: &str) -> String {
    if !s.contains("::") && !s.contains("##[") {
        return s.to_owned();
    }
    let mut out = String::with_capacity(s.len() + 8);
    for (i, l) in s.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str(&terminal_line(l));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn md_text_neutralises_markup() {
        let s = md_text("<!-- @org/team #4242 </details> a_b _c_ *d* `e` | #x");
        assert_eq!(
            s,
            "&lt;!-- @&#8203;org/team #&#8203;4242 &lt;/details> a_b \\_c\\_ \\*d\\* \
             \\`e\\` \\| #&#8203;x"
        );
        assert_eq!(md_text("- x"), "\\- x");
        assert_eq!(md_text("# x"), "\\# x");
        assert_eq!(md_text("> x <1 [y]"), "&gt; x <1 \\[y]");
        assert_eq!(md_text("12. x"), "12\\. x");
        assert_eq!(md_text("a\nb"), "a\\\\nb");
    }

    #[test]
    fn md_inline_keeps_code_spans_only() {
        assert_eq!(
            md_inline("kernel `a<b>` is *slow*"),
            "kernel `a<b>` is \\*slow\\*"
        );
        assert_eq!(md_inline("x ``a`b`` <y>"), "x ``a`b`` &lt;y>");
        assert_eq!(md_inline("`open <z>"), "\\`open &lt;z>");
    }

    #[test]
    fn code_spans_survive_backticks() {
        assert_eq!(md_code("a"), "`a`");
        assert_eq!(md_code("a``b"), "```a``b```");
        assert_eq!(md_code("`x"), "`` `x ``");
        for s in ["a", "a``b", "`x", "x`", " a ", "a`b``c"] {
            assert!(is_code_span(&md_code(s)), "{s}");
        }
        assert!(!is_code_span("`a` <img>"));
        assert!(!is_code_span("`a`b`"));
        assert!(!is_code_span("plain"));
    }

    #[test]
    fn terminal_lines_cannot_be_workflow_commands() {
        assert_eq!(terminal_line("::error::x"), "\\::error::x");
        assert_eq!(terminal_line("  ::warning::x"), "  \\::warning::x");
        assert_eq!(terminal_line("a ##[error]b"), "a #\\#[error]b");
        assert_eq!(terminal_line("a\nb"), "a\\nb");
        assert_eq!(terminal_block("ok\n ::x\n"), "ok\n \\::x\n");
    }
}
