//! The gate/diff document, walked once: what is said and in which order lives in
//! [`walk`]; how it looks lives in the [`Markup`] implementations — markdown for a PR
//! comment, aligned text for the terminal (here), and the HTML page
//! (`report::html::gate`), which adds charts and drops nothing.

use crate::report::escape::{md_inline, md_text};
use crate::report::table::Table;
use crate::report::{escape_control, fmt_int};
use crate::wire::gate::{Comparison, GroupComparison, OneSided, RowVerdict, Side};

use super::tables::{
    categories_table, class_excess_table, code, improvements, kernel_table, mbu_line,
    metrics_table, presence_table, regressions, threshold_notes, waterfall_floor_line,
    waterfall_table, waterfall_table_rows, Names,
};
use super::{
    comparability_line, group_heading, policy_rules_line, sides_line, titles, verdict_line,
    RenderOptions, Style,
};

/// A titled table: the long form (markdown, HTML) says more in its parenthesis than the
/// terminal.
pub(crate) struct Titled<'a> {
    pub title: &'a str,
    /// The parenthesis in markdown and HTML.
    pub long: &'a str,
    /// The parenthesis in text.
    pub short: &'a str,
}

/// How the document's parts look. Text is terse: it drops the remarks, the footnote and
/// the full-names list (its names are cut, not labelled); markdown and HTML say it all.
pub(crate) trait Markup {
    const STYLE: Style;
    /// The opening line.
    fn title(&mut self, s: &str);
    /// A line of its own.
    fn line(&mut self, s: &str);
    /// The reasons behind the verdict, after the first (which the title shows).
    fn reasons(&mut self, reasons: &[String], show_verdict: bool);
    fn warning(&mut self, s: &str);
    fn heading(&mut self, s: &str);
    fn note(&mut self, s: &str);
    /// A paragraph that closes a block.
    fn paragraph(&mut self, s: &str);
    /// A sentence the long form says and the terminal leaves out.
    fn remark(&mut self, s: &str);
    fn table(&mut self, t: &Table);
    fn titled_table(&mut self, title: &Titled, t: &Table);
    /// A table that is a detail unless something in it moved.
    fn folded_table(&mut self, title: &str, t: &Table);
    fn not_compared(&mut self, groups: &[OneSided]);
    fn full_names(&mut self, names: &[(&str, &str)]);
    fn footnote(&mut self, s: &str);
    /// Charts of the `i`-th compared group, before its step metrics (a page draws them).
    fn group_charts(&mut self, _i: usize, _g: &GroupComparison) {}
    /// The waterfall chart, before the waterfall's table (a page draws it).
    fn waterfall_chart(&mut self, _g: &GroupComparison, _names: Names<'_>) {}
    /// The start and end of the per-group detail: a PR comment folds it under
    /// `<details>` so the verdict and its largest contributor are what a reviewer sees.
    fn open_fold(&mut self, _summary: &str) {}
    fn close_fold(&mut self) {}
}

struct Markdown(String);

impl Markup for Markdown {
    const STYLE: Style = Style::Markdown;
    fn title(&mut self, s: &str) {
        // The verdict line quotes the reasons, which quote kernel names: plain text.
        // No blank line: the largest contributor is the comment's second line.
        self.0.push_str(&format!("### {}\n", md_text(s)));
    }
    fn line(&mut self, s: &str) {
        // Sides and policy lines: names in code spans, file and GPU names as text.
        self.0.push_str(&md_inline(s));
        self.0.push('\n');
    }
    fn reasons(&mut self, reasons: &[String], show_verdict: bool) {
        if show_verdict && reasons.len() > 1 {
            self.0.push('\n');
            for r in reasons {
                self.0.push_str(&format!("- {}\n", md_text(r)));
            }
        }
    }
    fn warning(&mut self, s: &str) {
        self.0.push_str(&format!("\n> ⚠️ {}\n", md_text(s)));
    }
    fn heading(&mut self, s: &str) {
        self.0.push_str(&format!("\n#### {}\n\n", md_text(s)));
    }
    fn note(&mut self, s: &str) {
        self.0.push_str(&format!("> ⚠️ {}\n\n", md_inline(s)));
    }
    fn paragraph(&mut self, s: &str) {
        self.0.push_str(s);
        self.0.push_str("\n\n");
    }
    fn remark(&mut self, s: &str) {
        self.paragraph(s);
    }
    fn table(&mut self, t: &Table) {
        self.0.push_str(&t.to_markdown());
        self.0.push('\n');
    }
    fn titled_table(&mut self, title: &Titled, t: &Table) {
        self.0
            .push_str(&format!("**{}** ({})\n\n", title.title, title.long));
        self.table(t);
    }
    fn folded_table(&mut self, title: &str, t: &Table) {
        self.0
            .push_str(&format!("<details><summary>{title}</summary>\n\n"));
        self.0.push_str(&t.to_markdown());
        self.0.push_str("\n</details>\n");
    }
    fn not_compared(&mut self, groups: &[OneSided]) {
        if let Some(items) = one_sided_items(groups) {
            self.0.push_str(&format!(
                "\n**Not compared** (present on one side only):{}\n",
                md_text(&items)
            ));
        }
    }
    fn full_names(&mut self, names: &[(&str, &str)]) {
        if names.is_empty() {
            return;
        }
        self.0
            .push_str("\n<details><summary>Full kernel names</summary>\n\n");
        for (s, f) in names {
            self.0.push_str(&format!("- {}: {}\n", code(s), code(f)));
        }
        self.0.push_str("\n</details>\n");
    }
    fn footnote(&mut self, s: &str) {
        self.0.push_str(&format!("\n<sub>{s}</sub>\n"));
    }
    fn open_fold(&mut self, summary: &str) {
        self.0
            .push_str(&format!("\n<details><summary>{summary}</summary>\n"));
    }
    fn close_fold(&mut self) {
        self.0.push_str("\n</details>\n");
    }
}

/// The one-sided groups as the long form lists them after "Not compared … :", or None.
pub(crate) fn one_sided_items(groups: &[OneSided]) -> Option<String> {
    if groups.is_empty() {
        return None;
    }
    let items: Vec<String> = groups
        .iter()
        .map(|s| {
            format!(
                " {} ({} only, {} steps)",
                s.label,
                side_word(s.side),
                fmt_int(s.steps as i64)
            )
        })
        .collect();
    Some(items.join(";"))
}

struct Text(String, crate::report::fit::Fit);

impl Markup for Text {
    const STYLE: Style = Style::Text;
    fn title(&mut self, s: &str) {
        self.line(s);
    }
    fn line(&mut self, s: &str) {
        self.0.push_str(&self.1.wrap_keeping_words(s, 2));
        self.0.push('\n');
    }
    fn reasons(&mut self, reasons: &[String], _show_verdict: bool) {
        for r in reasons.iter().skip(1) {
            let l = self.1.wrap(&format!("  also: {}", escape_control(r)), 4);
            self.0.push_str(&format!("{l}\n"));
        }
    }
    fn warning(&mut self, s: &str) {
        self.line(&format!("warning: {s}"));
    }
    fn heading(&mut self, s: &str) {
        self.0.push('\n');
        self.line(&format!("== {s}"));
    }
    fn note(&mut self, s: &str) {
        self.line(&format!("note: {s}"));
    }
    fn paragraph(&mut self, s: &str) {
        self.line(s);
    }
    fn remark(&mut self, _s: &str) {}
    fn table(&mut self, t: &Table) {
        self.0.push_str(&t.to_text_fit(self.1));
    }
    fn titled_table(&mut self, title: &Titled, t: &Table) {
        self.0.push('\n');
        self.line(&format!("{} ({})", title.title.to_lowercase(), title.short));
        self.table(t);
    }
    fn folded_table(&mut self, title: &str, t: &Table) {
        // No folding in a terminal: the table as it is.
        self.0.push('\n');
        self.line(&title.to_lowercase());
        self.table(t);
    }
    fn not_compared(&mut self, groups: &[OneSided]) {
        for s in groups {
            self.0.push_str(&format!(
                "not compared: {} is in the {} only ({} steps)\n",
                s.label,
                side_word(s.side),
                s.steps
            ));
        }
    }
    fn full_names(&mut self, _names: &[(&str, &str)]) {}
    fn footnote(&mut self, _s: &str) {}
}

fn side_word(side: Side) -> &'static str {
    match side {
        Side::Baseline => "baseline",
        Side::Candidate => "candidate",
    }
}

/// Markdown for a PR comment or `$GITHUB_STEP_SUMMARY`.
pub fn markdown(c: &Comparison, o: &RenderOptions) -> String {
    let mut m = Markdown(String::new());
    walk(c, o, &mut m);
    m.0
}

/// Aligned text for the terminal.
pub fn text(c: &Comparison, o: &RenderOptions) -> String {
    let fit = if o.wide {
        crate::report::fit::Fit::wide()
    } else {
        o.fit
    };
    let mut m = Text(String::new(), fit);
    walk(c, o, &mut m);
    // CI logs run a line that starts with `::` as a workflow command.
    crate::report::escape::terminal_block(&m.0)
}

/// What the kernel lists show: the change is of the medians; each side is median · mean.
const PER_STEP: &str = "exclusive time per step; change of the median";

/// The document: verdict, sides, policy rules, reasons and warnings, then per group its
/// step metrics, MBU, waterfall, kernel lists and categories, then what was not compared.
pub(crate) fn walk<M: Markup>(c: &Comparison, o: &RenderOptions, m: &mut M) {
    let style = M::STYLE;
    let long = style != Style::Text;
    let labels = &c.name_labels;
    let names = Names {
        labels,
        style,
        wide: o.wide,
    };
    m.title(&verdict_line(c, o));
    if let Some(l) = super::headline::largest_contributor(c, names) {
        m.paragraph(&l);
    }
    m.line(&sides_line(c, o, style));
    if let Some(l) = comparability_line(c) {
        m.line(&l);
    }
    if let Some(l) = policy_rules_line(c, style) {
        m.line(&l);
    }
    m.reasons(&c.reasons, o.show_verdict);
    for w in &c.warnings {
        m.warning(&escape_control(w));
    }
    let mut full_names: Vec<(&str, &str)> = Vec::new();
    if !c.groups.is_empty() {
        m.open_fold("Step metrics, waterfall and kernel tables per step group");
    }
    for (i, g) in c.groups.iter().enumerate() {
        m.heading(&group_heading(g, o.show_verdict));
        for n in &g.notes {
            m.note(&escape_control(n));
        }
        m.group_charts(i, g);
        m.table(&metrics_table(g, "step metric", o.show_verdict));
        m.paragraph(&mbu_line(g, style, o.show_verdict));
        if let Some(t) = waterfall_table(&g.explain, o.waterfall_top, names) {
            m.waterfall_chart(g, names);
            let title = Titled {
                title: "Waterfall",
                long: "mean per step, derived: exclusive time per kernel plus the gap; the \
                       rows add up to the change of the mean wall",
                short: "mean per step, derived; rows add up to the mean wall change",
            };
            m.titled_table(&title, &t);
            if let Some(l) = waterfall_floor_line(&g.explain) {
                m.paragraph(&l);
            }
        }
        if let Some(t) = class_excess_table(&g.explain) {
            let title = Titled {
                title: "Excess per class",
                long: "mean per step, derived: each kernel class's exclusive time beyond its \
                       floor (the same byte model as the step floor), so a change reads as \
                       fewer bytes or a fuller machine",
                short: "mean per step, derived: time beyond each class's floor",
            };
            m.titled_table(&title, &t);
        }
        if let Some(n) = &g.explain.waterfall_note {
            m.note(n);
        }
        let reg = regressions(g, o.top);
        let imp = improvements(g, o.top);
        let judged = g
            .kernels
            .iter()
            .all(|k| k.change.verdict != RowVerdict::Inconclusive);
        let (reg_title, imp_title) = titles(o);
        // The long form puts the remark in place of the list when some kernel could not be
        // judged; the terminal lists what did regress.
        if !judged && long {
            m.remark("Kernels not judged: too few steps.");
        } else if reg.is_empty() {
            m.remark("No kernel regressed beyond its threshold.");
        } else {
            let title = Titled {
                title: reg_title,
                long: PER_STEP,
                short: PER_STEP,
            };
            m.titled_table(&title, &kernel_table(&reg, o.show_verdict, names));
        }
        if !imp.is_empty() {
            let title = Titled {
                title: imp_title,
                long: PER_STEP,
                short: PER_STEP,
            };
            m.titled_table(&title, &kernel_table(&imp, o.show_verdict, names));
        }
        if !g.new_kernels.is_empty() {
            let title = Titled {
                title: "New kernels",
                long: "in the candidate only; mean per step, derived",
                short: "candidate only",
            };
            m.titled_table(&title, &presence_table(&g.new_kernels, true, names));
        }
        if !g.vanished_kernels.is_empty() {
            let title = Titled {
                title: "Vanished kernels",
                long: "in the baseline only; mean per step, derived",
                short: "baseline only",
            };
            m.titled_table(&title, &presence_table(&g.vanished_kernels, false, names));
        }
        if g.categories
            .iter()
            .any(|c| c.change.verdict != RowVerdict::Ok)
        {
            // Something moved: the table is part of the story, not a detail.
            let title = Titled {
                title: "Time per category",
                long: "per step; change of the median",
                short: "per step; change of the median",
            };
            m.titled_table(&title, &categories_table(g, o.show_verdict));
        } else if !g.categories.is_empty() {
            m.folded_table("Time per category", &categories_table(g, o.show_verdict));
        }
        if o.show_verdict {
            for n in threshold_notes(g, names) {
                m.note(&escape_control(&n));
            }
        }
        // Wide tables already show the full names.
        if !o.wide {
            let shown = reg
                .iter()
                .chain(imp.iter())
                .map(|k| (k.name.as_str(), k.short_name.as_str()))
                .chain(
                    g.new_kernels
                        .iter()
                        .chain(&g.vanished_kernels)
                        .map(|k| (k.name.as_str(), k.short_name.as_str())),
                )
                .chain(
                    waterfall_table_rows(&g.explain, o.waterfall_top)
                        .map(|r| (r.name.as_str(), r.short_name.as_str())),
                );
            for (f, short) in shown {
                let s = labels.get(f, short);
                if s != f && !full_names.contains(&(s, f)) {
                    full_names.push((s, f));
                }
            }
        }
    }
    if !c.groups.is_empty() {
        m.close_fold();
    }
    m.not_compared(&c.one_sided);
    m.full_names(&full_names);
    m.footnote(&format!(
        "Each side reads median · mean of its per-step samples (derived): the thresholds \
         judge the change of the medians, the waterfall adds up the means. Change interval: {:.0}% percentile \
         bootstrap, {} resamples, seed {:#x}. A regression needs the whole interval beyond \
         the relative threshold and the change beyond the absolute one; fewer than {} steps \
         per side is inconclusive, and so is a step metric whose smallest visible change \
         (half the interval's width, derived) exceeds its threshold.",
        c.method.confidence * 100.0,
        fmt_int(c.method.resamples as i64),
        c.method.seed,
        c.method.min_samples
    ));
}
