//! One table layout shared by every command: aligned text, markdown and CSV from the same
//! headers and rows, so the three never drift apart.

use crate::report::escape_control;

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

    fn widths(&self) -> Vec<usize> {
        let mut w: Vec<usize> = self.headers.iter().map(|h| h.chars().count()).collect();
        for r in &self.rows {
            for (i, c) in r.iter().enumerate() {
                w[i] = w[i].max(escape_control(c).chars().count());
            }
        }
        w
    }

    /// Space-aligned text with a dashed rule under the header.
    pub fn to_text(&self) -> String {
        let w = self.widths();
        let mut out = String::new();
        let line = |cells: &[String], out: &mut String| {
            let mut parts = Vec::with_capacity(cells.len());
            for (i, c) in cells.iter().enumerate() {
                let c = escape_control(c);
                let pad = w[i].saturating_sub(c.chars().count());
                let cell = match self.align[i] {
                    Align::Left | Align::Wrap => format!("{c}{}", " ".repeat(pad)),
                    Align::Right => format!("{}{c}", " ".repeat(pad)),
                };
                parts.push(cell);
            }
            // A row that starts with a name must not read as a CI workflow command.
            out.push_str(&crate::report::escape::terminal_line(
                parts.join("  ").trim_end(),
            ));
            out.push('\n');
        };
        line(&self.headers, &mut out);
        let rule: Vec<String> = w.iter().map(|n| "-".repeat(*n)).collect();
        out.push_str(&rule.join("  "));
        out.push('\n');
        for r in &self.rows {
            line(r, &mut out);
        }
        out
    }

    /// A GitHub-flavoured markdown table: pipes in cells escaped, control characters
    /// written as visible escapes (a CR or LF in a name would otherwise end the row), and
    /// every cell that is not a code span escaped as markdown text.
    pub fn to_markdown(&self) -> String {
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
    pub fn to_csv(&self) -> String {
        let mut w = csv::Writer::from_writer(Vec::new());
        w.write_record(&self.headers).expect("in-memory write");
        for r in &self.rows {
            w.write_record(r).expect("in-memory write");
        }
        String::from_utf8(w.into_inner().expect("in-memory flush")).expect("utf-8 cells")
    }
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
}
