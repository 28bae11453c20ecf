//! Fitting text to the reader's terminal: the width to fit (`COLUMNS`, else the tty,
//! else 120 when piped), display widths of Unicode text, prose wrapped at spaces, and
//! kernel names shortened in the middle so the family (front) and the tile shape and
//! dtype (end) both stay. Tables fit through [`crate::report::table::Table::to_text_fit`].

use unicode_width::UnicodeWidthStr;

/// The width when stdout is not a terminal and `COLUMNS` is not set (a log, a pipe).
pub(crate) const PIPED_WIDTH: usize = 120;
/// Narrower than this, nothing useful fits: a smaller `COLUMNS` is read as this.
pub(crate) const MIN_WIDTH: usize = 40;
/// A name is never shortened below this many columns (shorter reads as noise).
pub(crate) const MIN_NAME: usize = 16;

/// How a text rendering fits the terminal: `None` prints everything whole (`--wide`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fit {
    pub width: Option<usize>,
}

impl Default for Fit {
    /// The width a pipe gets: renderers called without a terminal (tests, libraries)
    /// still fit a log.
    fn default() -> Self {
        Fit {
            width: Some(PIPED_WIDTH),
        }
    }
}

impl Fit {
    /// The terminal's width, or whole lines with `wide`; `tty` asks stdout's terminal
    /// for its columns (the commands do: only they touch stdout).
    pub fn terminal(wide: bool, tty: impl FnOnce() -> Option<usize>) -> Self {
        Fit {
            width: (!wide).then(|| terminal_width(tty)),
        }
    }

    /// A fixed width (tests, snapshots).
    pub fn columns(width: usize) -> Self {
        Fit {
            width: Some(width.max(MIN_WIDTH)),
        }
    }

    /// Whole lines: names in full, nothing wrapped.
    pub fn wide() -> Self {
        Fit { width: None }
    }

    /// Prose wrapped to the width, continuation lines indented by `indent` spaces; a
    /// word wider than a line (a path or a frame from the capture) shortened in the
    /// middle to fit (`--wide` prints it whole).
    pub(crate) fn wrap(&self, s: &str, indent: usize) -> String {
        match self.width {
            Some(w) => {
                let room = w.saturating_sub(indent).max(MIN_NAME);
                let words: Vec<String> = s
                    .split(' ')
                    .map(|x| {
                        if width(x) > room {
                            shorten_middle(x, room)
                        } else {
                            x.to_owned()
                        }
                    })
                    .collect();
                wrap(&words.join(" "), w, indent)
            }
            None => s.to_owned(),
        }
    }

    /// Like [`Fit::wrap`] but long words stay whole: a line that holds the input path the
    /// user typed.
    pub(crate) fn wrap_keeping_words(&self, s: &str, indent: usize) -> String {
        match self.width {
            Some(w) => wrap(s, w, indent),
            None => s.to_owned(),
        }
    }

    /// A name shortened in the middle to `max` columns (whole with `--wide`).
    pub fn name(&self, s: &str, max: usize) -> String {
        match self.width {
            Some(_) => shorten_middle(s, max),
            None => s.to_owned(),
        }
    }
}

/// `COLUMNS` when set to a number, else stdout's terminal size, else [`PIPED_WIDTH`].
/// Only stdout's tty counts: a report piped to a file keeps 120 even when stderr is a
/// terminal.
pub(crate) fn terminal_width(tty: impl FnOnce() -> Option<usize>) -> usize {
    let env = std::env::var("COLUMNS").ok();
    width_from(env.as_deref(), tty)
}

fn width_from(columns: Option<&str>, tty: impl FnOnce() -> Option<usize>) -> usize {
    let w = columns
        .and_then(|c| c.trim().parse::<usize>().ok())
        .filter(|&n| n > 0)
        .or_else(tty)
        .unwrap_or(PIPED_WIDTH);
    w.max(MIN_WIDTH)
}

/// Columns a string takes in a terminal (wide CJK characters count two, combining marks
/// none).
pub fn width(s: &str) -> usize {
    UnicodeWidthStr::width(s)
}

/// Characters that end a token of a kernel name: cutting just after one keeps whole
/// tokens (`_128x128_`, `bf16`) on both sides of the ellipsis.
fn is_break(c: char) -> bool {
    matches!(c, '_' | ':' | '<' | '>' | ',' | ' ' | '(' | ')' | '.' | '-')
}

/// `s` in at most `max` columns, its middle replaced by `…`: about 40% of the room for the
/// front (the family: `cutlass::gemm…`, `flash_fwd…`) and 60% for the end, where kernel
/// names carry the tile shape and the dtype. Each side snaps to a token boundary when one
/// is within a few characters, so a number is never cut in two when it can be helped.
pub(crate) fn shorten_middle(s: &str, max: usize) -> String {
    let max = max.max(2);
    if width(s) <= max {
        return s.to_owned();
    }
    let room = max - 1;
    let head_room = room * 2 / 5;
    let tail_room = room - head_room;
    let chars: Vec<char> = s.chars().collect();
    let cw = |c: &char| unicode_width::UnicodeWidthChar::width(*c).unwrap_or(0);
    // Longest prefix within head_room columns.
    let mut head = 0;
    let mut used = 0;
    while head < chars.len() && used + cw(&chars[head]) <= head_room {
        used += cw(&chars[head]);
        head += 1;
    }
    // Back off to just after a break, if one is near (never more than a quarter).
    if let Some(b) = (head.saturating_sub(head_room / 4).max(1)..head)
        .rev()
        .find(|&i| is_break(chars[i - 1]))
    {
        head = b;
    }
    let mut tail = chars.len();
    let mut used = 0;
    while tail > head && used + cw(&chars[tail - 1]) <= tail_room {
        used += cw(&chars[tail - 1]);
        tail -= 1;
    }
    if let Some(b) =
        (tail + 1..=(tail + tail_room / 4).min(chars.len() - 1)).find(|&i| is_break(chars[i]))
    {
        tail = b;
    }
    let mut out: String = chars[..head].iter().collect();
    out.push('…');
    out.extend(&chars[tail..]);
    out
}

/// `s` wrapped at spaces to `w` columns, continuation lines indented by `indent`. A word
/// longer than the line (a path, a URL) stays whole on a line of its own: cutting it would
/// make it unusable.
pub(crate) fn wrap(s: &str, w: usize, indent: usize) -> String {
    if width(s) <= w {
        return s.to_owned();
    }
    let pad = " ".repeat(indent);
    let mut out = String::with_capacity(s.len() + 16);
    let mut line_w = 0;
    let mut first_word = true;
    for word in s.split(' ') {
        let ww = width(word);
        if !first_word && line_w + 1 + ww > w {
            out.push('\n');
            out.push_str(&pad);
            line_w = indent;
        } else if !first_word {
            out.push(' ');
            line_w += 1;
        }
        out.push_str(word);
        line_w += ww;
        first_word = false;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn width_comes_from_columns_then_the_tty_then_120() {
        assert_eq!(width_from(Some("80"), || Some(200)), 80);
        assert_eq!(width_from(Some(" 132 "), || None), 132);
        assert_eq!(width_from(Some("wide"), || Some(200)), 200);
        assert_eq!(width_from(Some("0"), || None), PIPED_WIDTH);
        assert_eq!(width_from(None, || None), PIPED_WIDTH);
        assert_eq!(width_from(Some("10"), || None), MIN_WIDTH);
    }

    #[test]
    fn names_keep_their_family_and_their_tile() {
        let n = "void cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_128x1_tn_align8>(Params)";
        let s = shorten_middle(n, 48);
        assert!(width(&s) <= 48, "{s}");
        assert!(s.starts_with("void cutlass::"), "{s}");
        assert!(s.ends_with("_128x1_tn_align8>(Params)"), "{s}");
        assert_eq!(s.matches('…').count(), 1);
        // Short names are returned as they are.
        assert_eq!(shorten_middle("gemm", 48), "gemm");
        // Exactly at the limit: unchanged.
        assert_eq!(shorten_middle("abcdef", 6), "abcdef");
        assert_eq!(shorten_middle("abcdefg", 6), "ab…efg");
    }

    #[test]
    fn wide_characters_count_two_columns() {
        assert_eq!(width("µs"), 2);
        assert_eq!(width("核函数"), 6);
        let s = shorten_middle("核函数核函数核函数", 9);
        assert!(width(&s) <= 9, "{s}");
    }

    #[test]
    fn prose_wraps_at_spaces_and_keeps_long_words_whole() {
        assert_eq!(wrap("aa bb cc dd", 5, 2), "aa bb\n  cc\n  dd");
        assert_eq!(wrap("short", 80, 2), "short");
        let p = "see /a/very/long/path/that/does/not/fit/anywhere here";
        let w = wrap(p, 20, 0);
        assert!(w
            .lines()
            .any(|l| l == "/a/very/long/path/that/does/not/fit/anywhere"));
    }
}
