//! One table layout shared by every command: aligned text, markdown and CSV from the same
//! headers and rows, so the three never drift apart. The text is laid out by comfy-table;
//! what it cannot do stays here: names shortened in the middle (the tile shape at the
//! end survives), a table too wide split into bands that repeat the first column, and
//! the last column's prose wrapped at the widths planned for it.

use crate::report::escape_control;
use crate::report::fit::{self, Fit, MIN_NAME};

/// Column alignment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Align {
    Left,
    Right,
    /// Left-aligned text that may be long (kernel names): the terminal and markdown treat
    /// it as `Left`; an HTML page lets it wrap instead of widening the table.
    Wrap,
}

/// A table of already-formatted cells.
#[derive(Debug, Clone, Default)]
pub struct Table {
    pub headers: Vec<String>,
    pub align: Vec<Align>,
    pub rows: Vec<Vec<String>>,
}

impl Table {
    /// Headers with their alignment, e.g. `[("kernel", Align::Left), ("ns", Align::Right)]`.
    pub fn new(cols: &[(&str, Align)]) -> Self {
        Table {
            headers: cols.iter().map(|(h, _)| (*h).to_owned()).collect(),
            align: cols.iter().map(|(_, a)| *a).collect(),
            rows: Vec::new(),
        }
    }

    pub fn row(&mut self, cells: Vec<String>) {
        debug_assert_eq!(cells.len(), self.headers.len());
        self.rows.push(cells);
    }

    /// The table without the columns headed `names` (a page that says them once above).
    pub fn without(mut self, names: &[&str]) -> Self {
        let keep: Vec<bool> = self
            .headers
            .iter()
            .map(|h| !names.contains(&h.as_str()))
            .collect();
        let filter = |v: &mut Vec<String>| {
            let mut k = keep.iter();
            v.retain(|_| *k.next().unwrap_or(&true));
        };
        filter(&mut self.headers);
        let mut k = keep.iter();
        self.align.retain(|_| *k.next().unwrap_or(&true));
        for r in &mut self.rows {
            filter(r);
        }
        self
    }

    /// Space-aligned text with a dashed rule under the header, every cell whole.
    pub(crate) fn to_text(&self) -> String {
        self.to_text_fit(Fit::wide())
    }

    /// Space-aligned text that fits `fit`'s width: the long-name (`Wrap`) columns are
    /// shortened in the middle first (never below [`MIN_NAME`] columns); a table still
    /// too wide is printed in bands of columns, each repeating the first column, so no
    /// number is dropped. With `Fit::wide()` every cell is whole on one line.
    pub(crate) fn to_text_fit(&self, fit: Fit) -> String {
        let mut cells: Vec<Vec<String>> = std::iter::once(&self.headers)
            .chain(&self.rows)
            .map(|r| r.iter().map(|c| escape_control(c).into_owned()).collect())
            .collect();
        let mut w = widths(&cells);
        let bands = match fit.width {
            Some(limit) => {
                // Bands as if every name column had NAME_ROOM; then, in each band,
                // names shortened only as far as that band needs.
                let last = w.len().saturating_sub(1);
                let floor: Vec<usize> = (0..w.len())
                    .map(|i| match self.align[i] {
                        Align::Wrap => w[i].min(fit::width(&cells[0][i]).max(NAME_ROOM)),
                        // Prose in the last column wraps onto more lines.
                        Align::Left if i == last && i > 0 => {
                            w[i].min(fit::width(&cells[0][i]).max(PROSE_ROOM))
                        }
                        _ => w[i],
                    })
                    .collect();
                let bands = bands(&floor, limit);
                for b in &bands {
                    shrink_names(&mut cells, &mut w, &self.align, b, limit);
                    if b.last() == Some(&last) && last > 0 && self.align[last] == Align::Left {
                        let others: usize = b[..b.len() - 1].iter().map(|&i| w[i] + 2).sum();
                        w[last] = w[last].min(limit.saturating_sub(others).max(PROSE_ROOM));
                    }
                    // A band of the key column and one wide column (a value in words)
                    // still too wide: that column wraps onto more lines, whatever its
                    // alignment.
                    let others: usize = b[..b.len() - 1].iter().map(|&i| w[i] + 2).sum();
                    if let Some(&lc) = b.last().filter(|_| b.len() > 1) {
                        if others + w[lc] > limit {
                            w[lc] = w[lc].min(limit.saturating_sub(others).max(PROSE_ROOM));
                        }
                    }
                }
                bands
            }
            None => vec![(0..w.len()).collect()],
        };
        let mut out = String::new();
        for (b, cols) in bands.iter().enumerate() {
            if b > 0 {
                out.push('\n');
            }
            let band = draw_band(&cells, &w, &self.align, cols);
            for l in band.lines() {
                // A row that starts with a name must not read as a CI workflow command.
                out.push_str(&crate::report::escape::terminal_line(l));
                out.push('\n');
            }
        }
        out
    }

    /// A GitHub-flavoured markdown table: pipes in cells escaped, control characters
    /// written as visible escapes (a CR or LF in a name would otherwise end the row), and
    /// every cell that is not a code span escaped as markdown text.
    pub(crate) fn to_markdown(&self) -> String {
        // A cell that is one code span (a name) renders literally; any other text is
        // escaped so a capture's strings never become markup.
        let esc = |s: &str| {
            if crate::report::escape::is_code_span(s) {
                s.replace('|', "\\|")
            } else {
                crate::report::escape::md_text(s)
            }
        };
        let mut out = String::new();
        out.push_str(&format!(
            "| {} |\n",
            self.headers
                .iter()
                .map(|h| esc(h))
                .collect::<Vec<_>>()
                .join(" | ")
        ));
        let rule: Vec<&str> = self
            .align
            .iter()
            .map(|a| match a {
                Align::Left | Align::Wrap => "---",
                Align::Right => "---:",
            })
            .collect();
        out.push_str(&format!("| {} |\n", rule.join(" | ")));
        for r in &self.rows {
            out.push_str(&format!(
                "| {} |\n",
                r.iter().map(|c| esc(c)).collect::<Vec<_>>().join(" | ")
            ));
        }
        out
    }

    /// CSV with a header row.
    pub(crate) fn to_csv(&self) -> String {
        let mut w = csv::Writer::from_writer(Vec::new());
        w.write_record(&self.headers).expect("in-memory write");
        for r in &self.rows {
            w.write_record(r).expect("in-memory write");
        }
        String::from_utf8(w.into_inner().expect("in-memory flush")).expect("utf-8 cells")
    }
}

/// One band of columns laid out by comfy-table: no borders and no lines, columns two
/// spaces apart (a right padding), every column exactly its planned width (an absolute
/// constraint, so a right-aligned column lines up with its header even when its widest
/// cell was wrapped). What comfy-table cannot do is done before: names shortened in the
/// middle (it would cut the end: the tile shape) and the last column's prose wrapped at
/// our widths (each line a line of the cell). The dashed rule is a row of dashes, not
/// comfy-table's header separator, which would run through the gap between columns.
fn draw_band(cells: &[Vec<String>], w: &[usize], align: &[Align], cols: &[usize]) -> String {
    use comfy_table::{CellAlignment, ColumnConstraint, TableStyle, Width};
    let &lc = cols.last().unwrap_or(&0);
    let wrap_last = |row: &[String]| {
        let words: Vec<String> = row[lc]
            .split(' ')
            .map(|x| fit::shorten_middle(x, w[lc].max(2)))
            .collect();
        fit::wrap(&words.join(" "), w[lc], 0)
    };
    let pick = |row: &[String]| -> Vec<String> {
        cols.iter()
            .map(|&i| {
                if i == lc {
                    wrap_last(row)
                } else {
                    row[i].clone()
                }
            })
            .collect()
    };
    let mut t = comfy_table::Table::new();
    t.load_style(TableStyle::new());
    if let Some((header, rows)) = cells.split_first() {
        t.set_header(pick(header));
        t.add_row(cols.iter().map(|&i| "-".repeat(w[i])).collect::<Vec<_>>());
        for r in rows {
            t.add_row(pick(r));
        }
    }
    for (k, &i) in cols.iter().enumerate() {
        if let Some(c) = t.column_mut(k) {
            let cw = u16::try_from(w[i] + 2).unwrap_or(u16::MAX);
            c.set_padding((0, 2))
                .set_constraint(ColumnConstraint::Absolute(Width::Fixed(cw)))
                .set_cell_alignment(match align[i] {
                    Align::Left | Align::Wrap => CellAlignment::Left,
                    Align::Right => CellAlignment::Right,
                });
        }
    }
    t.trim_fmt()
}

/// The room a name column is planned with before the others are banded: shorter names
/// lose the middle that tells two GEMM tiles apart, so a number column moves to the next
/// band first.
const NAME_ROOM: usize = 36;
/// The room a last column of prose (a detail, a source) is planned with: it wraps.
const PROSE_ROOM: usize = 30;

/// Each column's display width over the header and every row.
fn widths(cells: &[Vec<String>]) -> Vec<usize> {
    let mut w = vec![0; cells.first().map_or(0, Vec::len)];
    for r in cells {
        for (i, c) in r.iter().enumerate() {
            w[i] = w[i].max(fit::width(c));
        }
    }
    w
}

/// Shorten the `Wrap` columns' cells of one band in the middle, widest column first,
/// until the band fits `limit` or every such column is at its floor (its header, or
/// [`MIN_NAME`]).
fn shrink_names(
    cells: &mut [Vec<String>],
    w: &mut [usize],
    align: &[Align],
    band: &[usize],
    limit: usize,
) {
    let total =
        |w: &[usize]| band.iter().map(|&i| w[i]).sum::<usize>() + 2 * band.len().saturating_sub(1);
    let mut over = total(w).saturating_sub(limit);
    while over > 0 {
        let floor = |i: usize| fit::width(&cells[0][i]).max(MIN_NAME);
        let Some(i) = band
            .iter()
            .copied()
            .filter(|&i| align[i] == Align::Wrap && w[i] > floor(i))
            .max_by_key(|&i| w[i])
        else {
            break;
        };
        let to = w[i].saturating_sub(over).max(floor(i));
        for row in cells.iter_mut().skip(1) {
            row[i] = fit::shorten_middle(&row[i], to);
        }
        over -= w[i] - to;
        w[i] = to;
    }
}

/// The columns of each band: the first column starts every band (it names the row), the
/// others follow in order while the band fits `limit`. One column always goes in, so a
/// band never comes out empty.
fn bands(w: &[usize], limit: usize) -> Vec<Vec<usize>> {
    let mut out = Vec::new();
    let mut cur = vec![0];
    let mut used = w.first().copied().unwrap_or(0);
    for (i, &cw) in w.iter().enumerate().skip(1) {
        if cur.len() > 1 && used + 2 + cw > limit {
            out.push(std::mem::replace(&mut cur, vec![0]));
            used = w[0];
        }
        cur.push(i);
        used += 2 + cw;
    }
    out.push(cur);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn three_renderings_of_one_table() {
        let mut t = Table::new(&[("name", Align::Left), ("ns", Align::Right)]);
        t.row(vec!["a|b".into(), "5".into()]);
        t.row(vec!["long name".into(), "12345".into()]);
        assert_eq!(
            t.to_text(),
            "name          ns\n---------  -----\na|b            5\nlong name  12345\n"
        );
        assert_eq!(
            t.to_markdown(),
            "| name | ns |\n| --- | ---: |\n| a\\|b | 5 |\n| long name | 12345 |\n"
        );
        assert_eq!(t.to_csv(), "name,ns\na|b,5\nlong name,12345\n");
    }

    #[test]
    fn columns_can_be_left_out() {
        let mut t = Table::new(&[("a", Align::Left), ("b", Align::Right), ("c", Align::Wrap)]);
        t.row(vec!["1".into(), "2".into(), "3".into()]);
        let t = t.without(&["b"]);
        assert_eq!(t.headers, ["a", "c"]);
        assert_eq!(t.align, [Align::Left, Align::Wrap]);
        assert_eq!(t.rows, [["1", "3"]]);
    }

    #[test]
    fn control_characters_never_split_a_row() {
        let mut t = Table::new(&[("name", Align::Left), ("ns", Align::Right)]);
        t.row(vec!["evil\r\n| x | 1 |\u{1b}[2J".into(), "5".into()]);
        let md = t.to_markdown();
        // Header, rule and exactly one data row.
        assert_eq!(md.lines().count(), 3, "{md}");
        assert_eq!(
            md.lines().nth(2).unwrap(),
            // The visible escapes' backslashes and the `[` are escaped again as markdown
            // text, so the cell renders as `evil\r\n| x | 1 |\x1b[2J`.
            "| evil\\\\r\\\\n\\| x \\| 1 \\|\\\\x1b\\[2J | 5 |"
        );
        let txt = t.to_text();
        assert_eq!(txt.lines().count(), 3, "{txt}");
        assert!(!txt.contains('\u{1b}') && !txt.contains('\r'));
        assert_eq!(
            txt.lines().nth(2).unwrap(),
            "evil\\r\\n| x | 1 |\\x1b[2J   5"
        );
    }

    #[test]
    fn a_long_name_is_shortened_in_the_middle_to_fit() {
        let mut t = Table::new(&[("kernel", Align::Wrap), ("µs", Align::Right)]);
        let name = "void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_256x128_32x3_tn_align8>";
        t.row(vec![name.into(), "12,345.6".into()]);
        let txt = t.to_text_fit(Fit::columns(60));
        for l in txt.lines() {
            assert!(fit::width(l) <= 60, "{l}");
        }
        let row = txt.lines().nth(2).unwrap();
        // The family at the front, the tile and dtype at the end, the number whole.
        assert!(row.starts_with("void cutlass::"), "{row}");
        assert!(row.contains("_tn_align8>"), "{row}");
        assert!(row.ends_with("12,345.6"), "{row}");
        // Wide: the whole name, the line as long as it takes.
        assert!(t.to_text_fit(Fit::wide()).contains(name));
    }

    #[test]
    fn a_table_too_wide_for_its_numbers_is_banded_not_cut() {
        let cols: Vec<(String, Align)> = (0..8)
            .map(|i| (format!("column {i}"), Align::Right))
            .collect();
        let refs: Vec<(&str, Align)> = cols.iter().map(|(h, a)| (h.as_str(), *a)).collect();
        let mut t = Table::new(&refs);
        t.row((0..8).map(|i| format!("{}", 1_000_000 + i)).collect());
        // 8 columns of 8 plus 7 gaps of 2 = 78 columns: one band at 80, two at 40.
        assert_eq!(t.to_text_fit(Fit::columns(80)).lines().count(), 3);
        let txt = t.to_text_fit(Fit::columns(40));
        for l in txt.lines() {
            assert!(fit::width(l) <= 40, "{l}");
        }
        // Every value is still there, and each band repeats the first column.
        for i in 0..8 {
            assert!(txt.contains(&format!("{}", 1_000_000 + i)), "{txt}");
        }
        assert_eq!(
            txt.matches("1000000").count(),
            txt.matches("column 0").count()
        );
        assert!(txt.matches("column 0").count() >= 2, "{txt}");
    }

    #[test]
    fn a_value_in_words_too_wide_beside_its_key_wraps_right_aligned() {
        let mut t = Table::new(&[
            ("quantity", Align::Left),
            ("value", Align::Right),
            ("basis", Align::Left),
        ]);
        let key = "FA2 decode grid B × heads/GPU (a long quantity)";
        t.row(vec![
            key.into(),
            "16 blocks on 132 SMs (under-filled: one partial wave)".into(),
            "derived".into(),
        ]);
        t.row(vec![
            "decode ceiling".into(),
            "457 tok/s".into(),
            "derived".into(),
        ]);
        let txt = t.to_text_fit(Fit::columns(80));
        for l in txt.lines() {
            assert!(fit::width(l) <= 80, "{l}\n{txt}");
        }
        // Every word of the value is still there, right-aligned on its lines.
        let joined: String = txt.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(joined.contains("16 blocks on 132 SMs"), "{txt}");
        assert!(joined.contains("one partial wave)"), "{txt}");
        let value_lines: Vec<&str> = txt
            .lines()
            .filter(|l| l.contains("blocks") || l.contains("wave"))
            .collect();
        let ends: Vec<usize> = value_lines.iter().map(|l| fit::width(l)).collect();
        assert!(ends.windows(2).all(|p| p[0] == p[1]), "{txt}");
        assert!(txt.contains("457 tok/s"), "{txt}");
    }
}
