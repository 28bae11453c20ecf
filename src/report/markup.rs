//! One walk, several looks: a command's renderer says what comes in which order through
//! [`Markup`] (the answer, the compact table, the detail), and [`Text`] (fitted to the
//! terminal) and [`Markdown`] say how it looks. The gate's own walk
//! (`report::gate::document`) follows the same pattern with its richer vocabulary.

use maud::{html, Markup as Fragment};

use crate::report::escape::{md_inline, md_text, terminal_block};
use crate::report::escape_control;
use crate::report::fit::Fit;
use crate::report::table::Table;

/// The parts a report is made of, in the order a walk calls them.
pub trait Markup {
    /// The opening line: what was read and what was found.
    fn title(&mut self, s: &str);
    /// A labelled line of the answer: `verdict`, `proof`, `next`.
    fn answer(&mut self, label: &str, s: &str);
    /// One item of a ranked list, its figure first (`2,926.4 µs`) then what to do.
    fn ranked(&mut self, figure: &str, s: &str);
    /// A line of prose.
    fn line(&mut self, s: &str);
    fn note(&mut self, s: &str);
    fn warning(&mut self, s: &str);
    /// A heading over a table or a block.
    fn heading(&mut self, s: &str);
    fn table(&mut self, t: &Table);
    /// The start of what is a detail (shown only when asked in text; folded in markdown).
    fn open_detail(&mut self, summary: &str);
    fn close_detail(&mut self);
    /// A hint on how to see more (text only: markdown shows it all).
    fn hint(&mut self, s: &str);
    /// An empty line between blocks (text; markdown spaces its blocks itself).
    fn blank(&mut self) {}
    /// The finished output.
    fn finish(self) -> String;
}

/// Aligned text fitted to the terminal: prose wrapped with a two-space hanging indent,
/// tables shortened in their name columns, then banded.
pub struct Text {
    out: String,
    fit: Fit,
}

impl Text {
    pub fn new(fit: Fit) -> Self {
        Text {
            out: String::new(),
            fit,
        }
    }

    fn push(&mut self, s: &str, indent: usize) {
        self.out
            .push_str(&self.fit.wrap(&escape_control(s), indent));
        self.out.push('\n');
    }
}

impl Markup for Text {
    fn title(&mut self, s: &str) {
        // The title holds the input path as the user typed it: never shortened.
        self.out
            .push_str(&self.fit.wrap_keeping_words(&escape_control(s), 2));
        self.out.push('\n');
    }
    fn answer(&mut self, label: &str, s: &str) {
        self.push(&format!("{label}: {s}"), 2);
    }
    fn ranked(&mut self, figure: &str, s: &str) {
        // The figures right-aligned in one column, the action wrapped beside them.
        let head = format!("  {figure:>12}  ");
        let indent = head.chars().count();
        self.push(&format!("{head}{s}"), indent);
    }
    fn line(&mut self, s: &str) {
        self.push(s, 2);
    }
    fn note(&mut self, s: &str) {
        self.push(&format!("note: {s}"), 2);
    }
    fn warning(&mut self, s: &str) {
        self.push(&format!("warning: {s}"), 2);
    }
    fn heading(&mut self, s: &str) {
        self.out.push('\n');
        self.push(s, 2);
    }
    fn table(&mut self, t: &Table) {
        self.out.push_str(&t.to_text_fit(self.fit));
    }
    fn open_detail(&mut self, summary: &str) {
        self.out.push('\n');
        self.push(&format!("== {summary}"), 2);
    }
    fn close_detail(&mut self) {}
    fn hint(&mut self, s: &str) {
        self.push(s, 1);
    }
    fn blank(&mut self) {
        self.out.push('\n');
    }
    fn finish(self) -> String {
        // CI logs run a line that starts with `::` as a workflow command.
        terminal_block(&self.out)
    }
}

/// GitHub-flavoured markdown: the answer in bold labels, ranked actions as a list, the
/// detail folded under `<details>`. Strings from the capture are escaped as text.
#[derive(Default)]
pub struct Markdown {
    out: String,
}

impl Markdown {
    /// A document under a `##` heading (a fixed title, not the capture's text).
    pub(crate) fn with_heading(title: &str) -> Self {
        Markdown {
            out: format!("## {title}\n\n"),
        }
    }
}

impl Markup for Markdown {
    fn title(&mut self, s: &str) {
        self.out.push_str(&format!("{}\n\n", md_inline(s)));
    }
    fn answer(&mut self, label: &str, s: &str) {
        self.out
            .push_str(&format!("**{label}:** {}\n\n", md_inline(s)));
    }
    fn ranked(&mut self, figure: &str, s: &str) {
        self.out
            .push_str(&format!("- **{}** {}\n", md_text(figure), md_inline(s)));
    }
    fn line(&mut self, s: &str) {
        self.out.push_str(&format!("{}\n\n", md_inline(s)));
    }
    fn note(&mut self, s: &str) {
        self.out.push_str(&format!("> note: {}\n\n", md_inline(s)));
    }
    fn warning(&mut self, s: &str) {
        self.out.push_str(&format!("> ⚠️ {}\n\n", md_inline(s)));
    }
    fn heading(&mut self, s: &str) {
        self.out.push_str(&format!("\n### {}\n\n", md_text(s)));
    }
    fn table(&mut self, t: &Table) {
        self.out.push_str(&t.to_markdown());
        self.out.push('\n');
    }
    fn open_detail(&mut self, summary: &str) {
        self.out.push_str(&format!(
            "\n<details><summary>{}</summary>\n\n",
            md_text(summary)
        ));
    }
    fn close_detail(&mut self) {
        self.out.push_str("\n</details>\n");
    }
    fn hint(&mut self, _s: &str) {}
    fn finish(self) -> String {
        self.out
    }
}

/// An HTML page's body: the same walk as the terminal's, each part a maud template (every
/// string escaped by construction), tables through the page's sortable table, detail in
/// an open `<details>` (a page has room for it).
#[derive(Default)]
pub struct Html {
    out: String,
}

impl Html {
    fn push(&mut self, m: Fragment) {
        self.out.push_str(&m.into_string());
        self.out.push('\n');
    }
}

impl Markup for Html {
    fn title(&mut self, s: &str) {
        self.push(html! { p.muted { (s) } });
    }
    fn answer(&mut self, label: &str, s: &str) {
        self.push(html! { p.answer { strong { (label) ":" } " " (s) } });
    }
    fn ranked(&mut self, figure: &str, s: &str) {
        self.push(html! { p.ranked { strong { (figure) } " " (s) } });
    }
    fn line(&mut self, s: &str) {
        self.push(html! { p { (s) } });
    }
    fn note(&mut self, s: &str) {
        self.push(html! { p.note { (s) } });
    }
    fn warning(&mut self, s: &str) {
        self.note(&format!("warning: {s}"));
    }
    fn heading(&mut self, s: &str) {
        self.push(html! { h2 { (s) } });
    }
    fn table(&mut self, t: &Table) {
        self.out
            .push_str(&crate::report::html::table(t, None).into_string());
    }
    fn open_detail(&mut self, summary: &str) {
        // Opened here, closed by `close_detail`: the walk puts the detail between.
        self.out.push_str("<details open>");
        self.push(html! { summary { (summary) } });
    }
    fn close_detail(&mut self) {
        self.out.push_str("</details>\n");
    }
    fn hint(&mut self, _s: &str) {}
    fn finish(self) -> String {
        self.out
    }
}
