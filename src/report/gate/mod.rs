//! Rendering a baseline comparison: markdown for a PR comment or `$GITHUB_STEP_SUMMARY`
//! (verdict line first), aligned text for the terminal, the HTML page (`report::html::gate`,
//! the same document with charts), CSV rows and the full JSON.

use crate::report::table::{Align, Table};
use crate::report::{fmt_int, to_json, Format};
use crate::wire::gate::{Comparison, GroupComparison, SideInfo, Verdict};

pub(crate) mod document;
pub(crate) mod headline;
pub(crate) mod tables;

pub use document::{markdown, text};
pub(crate) use tables::{code, verdict_word, Names};

/// What the renderer needs besides the comparison.
#[derive(Debug, Clone)]
pub struct RenderOptions {
    /// `gate` shows a verdict; a plain `diff` does not.
    pub show_verdict: bool,
    /// How to name the sides (file names).
    pub baseline_name: String,
    pub candidate_name: String,
    /// Kernel rows per list (regressions, improvements).
    pub top: usize,
    /// The command name for the title (`gate`, `diff`).
    pub command: &'static str,
    /// Waterfall rows shown before the rest fold into "N others".
    pub waterfall_top: usize,
    /// Tables name kernels by their full demangled names instead of their labels (and the
    /// terminal does not cut them to its column).
    pub wide: bool,
    /// The terminal's width (text only).
    pub fit: crate::report::fit::Fit,
}

impl Default for RenderOptions {
    fn default() -> Self {
        RenderOptions {
            show_verdict: true,
            baseline_name: "baseline".to_owned(),
            candidate_name: "candidate".to_owned(),
            top: 10,
            command: "gate",
            waterfall_top: 8,
            wide: false,
            // Whole lines for a library caller; the commands fit the terminal.
            fit: crate::report::fit::Fit::wide(),
        }
    }
}

/// How one rendering of the document writes names and emphasis.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Style {
    /// Aligned text: names cut to the terminal's column.
    Text,
    /// Markdown: names in code spans, bold lead words.
    Markdown,
    /// An HTML page: the page escapes and styles the text itself.
    Html,
}

/// How a report file is named in a rendering: its file name, never the directory it
/// sits in (on a CI runner that is an absolute path nobody reading a PR comment needs);
/// a URL or a name without a file part as it was given.
pub(crate) fn input_label(p: &std::path::Path) -> String {
    let s = p.display().to_string();
    if s.contains("://") {
        return s;
    }
    p.file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or(s)
}

/// Render in one of the shared formats.
pub fn render(c: &Comparison, format: Format, o: &RenderOptions) -> String {
    match format {
        Format::Markdown => markdown(c, o),
        Format::Json => to_json(c),
        Format::Csv => csv(c),
        Format::Table => text(c, o),
    }
}

/// The one line that opens every rendering.
pub(crate) fn verdict_line(c: &Comparison, o: &RenderOptions) -> String {
    let compared = c.groups.len();
    let steps: (usize, usize) = c.groups.iter().fold((0, 0), |acc, g| {
        (acc.0 + g.baseline_steps, acc.1 + g.candidate_steps)
    });
    let scope = format!(
        "{compared} step group{} compared ({} vs {} steps)",
        if compared == 1 { "" } else { "s" },
        fmt_int(steps.0 as i64),
        fmt_int(steps.1 as i64)
    );
    // The change that proves the verdict, with its interval, on the same line.
    let change = headline::headline_change(c)
        .map(|ch| format!(" · {ch}"))
        .unwrap_or_default();
    if !o.show_verdict {
        return format!("stepgate {}: {scope}{change}", o.command);
    }
    let (icon, word) = verdict_word(c.verdict);
    let why = match c.reasons.as_slice() {
        [] => format!("no regression beyond thresholds; {scope}"),
        [one] => one.clone(),
        [first, rest @ ..] => format!(
            "{first} (and {} more reason{}, below)",
            rest.len(),
            if rest.len() == 1 { "" } else { "s" }
        ),
    };
    // How many gated step metrics the samples could resolve: a pass over metrics too
    // noisy to have seen their thresholds is no pass (they are inconclusive).
    let resolved = if c.gated_metrics > 0 {
        format!(
            " · {} of {} gated metric{} resolved",
            c.resolved_metrics,
            c.gated_metrics,
            if c.gated_metrics == 1 { "" } else { "s" }
        )
    } else {
        String::new()
    };
    let fails = if c.verdict == Verdict::Inconclusive && c.inconclusive_fails {
        " (counts as a failure)"
    } else {
        ""
    };
    // Reasons quote kernel names from the reports: one line, whatever the names hold.
    format!(
        "{icon} {word}{fails} — {}{change}{resolved}",
        crate::report::escape_control(&why)
    )
}

fn side_desc(s: &SideInfo) -> String {
    let mut parts = vec![s
        .gpu_name
        .clone()
        .unwrap_or_else(|| "GPU not named".to_owned())];
    if let Some(m) = &s.model {
        parts.push(format!("model {m}"));
    }
    if let Some(e) = &s.engine {
        parts.push(e.clone());
    }
    if let Some(v) = &s.nsys_version {
        parts.push(format!("nsys {v}"));
    }
    parts.push(s.source_format.clone());
    parts.join(" · ")
}

/// Who was compared with whom; the description once when both sides agree.
pub(crate) fn sides_line(c: &Comparison, o: &RenderOptions, style: Style) -> String {
    let name = |n: &str| {
        if style == Style::Markdown {
            code(n)
        } else {
            n.to_owned()
        }
    };
    let (b, k) = (side_desc(&c.baseline), side_desc(&c.candidate));
    if let Some(why) = &c.baseline_unavailable {
        return format!(
            "Baseline {}: unavailable ({}); candidate {} ({k}). Nothing was compared.",
            name(&o.baseline_name),
            crate::report::escape_control(why),
            name(&o.candidate_name)
        );
    }
    if b == k {
        format!(
            "Baseline {} → candidate {}, both {b}.",
            name(&o.baseline_name),
            name(&o.candidate_name)
        )
    } else {
        format!(
            "Baseline {} ({b}) → candidate {} ({k}).",
            name(&o.baseline_name),
            name(&o.candidate_name)
        )
    }
}

/// How alike the two sides' operating points are, when any field differs: the score
/// and each difference (those that change meaning say so).
pub(crate) fn comparability_line(c: &Comparison) -> Option<String> {
    let k = &c.comparability;
    if k.differences.is_empty() {
        return None;
    }
    let n = k.checked.len();
    let diffs: Vec<String> = k
        .differences
        .iter()
        .map(|d| {
            format!(
                "{} {} → {}{}",
                d.field,
                d.baseline,
                d.candidate,
                if d.changes_meaning {
                    " (changes meaning)"
                } else {
                    ""
                }
            )
        })
        .collect();
    let line = format!(
        "Comparability {} (derived: {} of {n} operating-point fields both sides state agree); \
         differs in {}.",
        k.score
            .map_or_else(|| "–".to_owned(), |s| format!("{s:.2}")),
        n - k.differences.len(),
        diffs.join("; ")
    );
    Some(crate::report::escape_control(&line).into_owned())
}

/// How many kernels each policy `[[kernel]]` rule selected.
pub(crate) fn policy_rules_line(c: &Comparison, style: Style) -> Option<String> {
    if c.policy_rules.is_empty() {
        return None;
    }
    let rules: Vec<String> = c
        .policy_rules
        .iter()
        .map(|r| {
            let sel = match style {
                Style::Markdown => code(&r.selector),
                Style::Text => format!("{:?}", r.selector),
                Style::Html => r.selector.clone(),
            };
            format!(
                "{sel} selects {} kernel{}{}",
                r.kernels,
                if r.kernels == 1 { "" } else { "s" },
                if r.optional { " (optional)" } else { "" }
            )
        })
        .collect();
    Some(format!("Policy [[kernel]] rules: {}.", rules.join("; ")))
}

pub(crate) fn group_heading(g: &GroupComparison, show_verdict: bool) -> String {
    let mut s = g.label.clone();
    if show_verdict {
        let (icon, word) = verdict_word(g.verdict);
        s.push_str(&format!(" — {icon} {}", word.to_lowercase()));
    }
    s.push_str(&format!(
        " · {} vs {} steps",
        fmt_int(g.baseline_steps as i64),
        fmt_int(g.candidate_steps as i64)
    ));
    if let (Some(a), Some(b)) = (g.baseline_mean_context, g.candidate_mean_context) {
        s.push_str(&format!(
            " · mean context {} → {} tokens",
            fmt_int(a.round() as i64),
            fmt_int(b.round() as i64)
        ));
    }
    s
}

/// Headings of the two kernel lists: a plain diff says slower/faster, not regression.
pub(crate) fn titles(o: &RenderOptions) -> (&'static str, &'static str) {
    if o.show_verdict {
        ("Kernel regressions", "Kernel improvements")
    } else {
        ("Slower kernels", "Faster kernels")
    }
}

/// One CSV table: every judged row of every group.
pub fn csv(c: &Comparison) -> String {
    let mut t = Table::new(&[
        ("group", Align::Left),
        ("kind", Align::Left),
        ("name", Align::Left),
        ("baseline_median", Align::Right),
        ("candidate_median", Align::Right),
        ("change", Align::Right),
        ("change_rel", Align::Right),
        ("interval_rel_lo", Align::Right),
        ("interval_rel_hi", Align::Right),
        ("verdict", Align::Left),
        ("gated", Align::Left),
    ]);
    let num = |v: Option<f64>| v.map(|x| x.to_string()).unwrap_or_default();
    for g in &c.groups {
        let rows = g
            .metrics
            .iter()
            .map(|m| ("metric", m.metric.as_str(), &m.change))
            .chain(
                g.kernels
                    .iter()
                    .map(|k| ("kernel", k.name.as_str(), &k.change)),
            )
            .chain(
                g.categories
                    .iter()
                    .map(|k| ("category", k.category.as_str(), &k.change)),
            );
        for (kind, name, ch) in rows {
            t.row(vec![
                g.label.clone(),
                kind.to_owned(),
                name.to_owned(),
                num(ch.baseline_median),
                num(ch.candidate_median),
                num(ch.change),
                num(ch.change_rel),
                num(ch.interval_rel.map(|i| i[0])),
                num(ch.interval_rel.map(|i| i[1])),
                format!("{:?}", ch.verdict).to_lowercase(),
                ch.gated.to_string(),
            ]);
        }
    }
    t.to_csv()
}
