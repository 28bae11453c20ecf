//! The `gate --html` / `diff --html` page: the same document the markdown and the terminal
//! show (one walk, `report::gate::document`), and per group two charts — both sides'
//! step-wall distributions with the verdict and the interval in the title, and the
//! waterfall from the baseline's mean step wall to the candidate's.

use maud::{html, Markup as Fragment, PreEscaped};

use crate::report::charts::{self, BarRow, Five, Segment, BETTER, NEUTRAL, PALETTE, WORSE};
use crate::report::gate::document::{one_sided_items, walk, Markup, Titled};
use crate::report::gate::tables::fmt_signed_us;
use crate::report::gate::{Names, RenderOptions, Style};
use crate::report::html::{figure, full_names, marks, page, table};
use crate::report::table::{Align, Table};
use crate::report::{fmt_us, group_thousands};
use crate::wire::baseline::{metric, Group};
use crate::wire::gate::{Comparison, GroupComparison, OneSided, Verdict};

/// The page as the document's markup, with the samples behind each compared group for
/// the distribution charts.
struct Html<'a> {
    out: String,
    command: &'static str,
    verdict_class: &'static str,
    show_verdict: bool,
    waterfall_top: usize,
    /// The compared groups' samples, in the comparison's group order.
    pairs: Vec<(&'a Group, &'a Group)>,
}

impl Html<'_> {
    fn push(&mut self, m: Fragment) {
        self.out.push_str(&m.into_string());
        self.out.push('\n');
    }
}

impl Markup for Html<'_> {
    const STYLE: Style = Style::Html;
    fn title(&mut self, s: &str) {
        let verdict = format!("verdict {}", self.verdict_class);
        self.push(html! {
            h1 { "stepgate " (self.command) } "\n"
            p class=(verdict) { (marks(s)) }
        });
    }
    fn line(&mut self, s: &str) {
        self.push(html! { p.muted { (marks(s)) } });
    }
    fn reasons(&mut self, reasons: &[String], show_verdict: bool) {
        if show_verdict && reasons.len() > 1 {
            self.push(html! {
                details {
                    summary { "All " (reasons.len()) " reasons" }
                    ul { @for r in reasons { "\n" li { (marks(r)) } } "\n" }
                }
            });
        }
    }
    fn warning(&mut self, s: &str) {
        self.note(s);
    }
    fn heading(&mut self, s: &str) {
        self.push(html! { h2 { (marks(s)) } });
    }
    fn note(&mut self, s: &str) {
        self.push(html! { p.note { (marks(&format!("⚠️ {s}"))) } });
    }
    fn paragraph(&mut self, s: &str) {
        self.push(html! { p { (marks(s)) } });
    }
    fn remark(&mut self, s: &str) {
        self.paragraph(s);
    }
    fn table(&mut self, t: &Table) {
        self.out.push_str(&table(t, None).into_string());
    }
    fn titled_table(&mut self, title: &Titled, t: &Table) {
        self.push(html! { p.table-title { b { (title.title) } " (" (title.long) ")" } });
        self.table(t);
    }
    fn folded_table(&mut self, title: &str, t: &Table) {
        self.push(html! { details { summary { (title) } "\n" (table(t, None)) } });
    }
    fn not_compared(&mut self, groups: &[OneSided]) {
        if let Some(items) = one_sided_items(groups) {
            self.push(html! { p { b { "Not compared" } " (present on one side only):" (items) } });
        }
    }
    fn full_names(&mut self, names: &[(&str, &str)]) {
        self.out
            .push_str(&full_names("Full kernel names", names).into_string());
    }
    fn footnote(&mut self, s: &str) {
        self.push(html! { p.muted { small { (s) } } });
    }
    fn open_fold(&mut self, summary: &str) {
        // A page has room: the detail is open, its summary a handle to fold it. Opened
        // here, closed by `close_fold`: the walk puts the detail between.
        self.out.push_str("<details open>");
        self.push(html! { summary { (summary) } });
    }
    fn close_fold(&mut self) {
        self.out.push_str("</details>\n");
    }
    fn group_charts(&mut self, i: usize, g: &GroupComparison) {
        // The pairs are the comparison's groups in order; a label that differs means the
        // samples are not the ones compared (never drawn then).
        if let Some((b, c)) = self.pairs.get(i).filter(|(b, _)| b.label() == g.label) {
            if let Some(d) = distribution(g, b, c, self.show_verdict) {
                self.out.push_str(&d.into_string());
            }
        }
    }
    fn waterfall_chart(&mut self, g: &GroupComparison, names: Names<'_>) {
        if let Some(w) = waterfall_chart(g, self.waterfall_top, names) {
            self.out.push_str(&w.into_string());
        }
    }
}

fn waterfall_chart(g: &GroupComparison, top: usize, names: Names<'_>) -> Option<Fragment> {
    let check = g.explain.waterfall_check.as_ref()?;
    let s = crate::report::gate::tables::cut(&g.explain, top);
    let us = |ns: f64| ns / 1e3;
    let mut rows = Vec::new();
    let mut cum = check.baseline_mean_wall_ns;
    let mut lo = cum.min(check.candidate_mean_wall_ns);
    let mut hi = cum.max(check.candidate_mean_wall_ns);
    let mut step = |label: String, d: f64, rows: &mut Vec<BarRow>| {
        let next = cum + d;
        lo = lo.min(next);
        hi = hi.max(next);
        rows.push(BarRow {
            label,
            segments: vec![Segment {
                from: us(cum),
                to: us(next),
                color: if d > 0.0 { WORSE } else { BETTER },
            }],
            note: Some(fmt_signed_us(d)),
        });
        cum = next;
    };
    rows.push(BarRow {
        label: "baseline mean wall".into(),
        segments: vec![],
        note: None,
    });
    for r in &s.top {
        step(
            charts::short_label(&names.cell(&r.name, &r.short_name), 48),
            r.delta_ns,
            &mut rows,
        );
    }
    if let Some(o) = s.others {
        step(format!("{} others", o.rows), o.delta_ns, &mut rows);
    }
    if let Some(gap) = s.gap {
        step("gap (wall − busy)".into(), gap.delta_ns, &mut rows);
    }
    rows.push(BarRow {
        label: "candidate mean wall".into(),
        segments: vec![],
        note: None,
    });
    // The axis starts near the smaller total, not at 0, so small changes stay visible;
    // the two totals are bars from the axis start, labelled with their values.
    let pad = ((hi - lo) * 0.25).max(1.0);
    let (x0, x1) = (us(lo - pad), us(hi + pad));
    let n = rows.len();
    rows[0].segments.push(Segment {
        from: x0,
        to: us(check.baseline_mean_wall_ns),
        color: NEUTRAL,
    });
    rows[0].note = Some(format!("{} µs", fmt_us(check.baseline_mean_wall_ns)));
    rows[n - 1].segments.push(Segment {
        from: x0,
        to: us(check.candidate_mean_wall_ns),
        color: NEUTRAL,
    });
    rows[n - 1].note = Some(format!(
        "{} µs ({})",
        fmt_us(check.candidate_mean_wall_ns),
        fmt_signed_us(check.delta_mean_wall_ns)
    ));
    let title = format!(
        "{}: waterfall of the mean step wall ({} → {} µs)",
        g.label,
        fmt_us(check.baseline_mean_wall_ns),
        fmt_us(check.candidate_mean_wall_ns)
    );
    Some(figure(
        charts::hbars(
            &title,
            "mean step wall (µs; the axis does not start at 0)",
            &rows,
            &[("slower", WORSE), ("faster", BETTER), ("total", NEUTRAL)],
            Some((x0, x1)),
        ),
        "Each bar moves the mean step wall by one kernel's change of mean exclusive time per \
         step (the gap last); the bars add up exactly to the change. Numbers: the waterfall \
         table below.",
    ))
}

fn distribution(g: &GroupComparison, b: &Group, c: &Group, show_verdict: bool) -> Option<Fragment> {
    let walls = |x: &Group| {
        x.metrics
            .get(metric::WALL_NS)
            .map(|v| v.iter().map(|ns| ns / 1e3).collect::<Vec<f64>>())
    };
    let (vb, vc) = (walls(b)?, walls(c)?);
    let (fb, fc) = (Five::of(&vb)?, Five::of(&vc)?);
    let wall = g.metrics.iter().find(|m| m.metric == metric::WALL_NS);
    let interval = wall
        .and_then(|m| m.change.interval_rel)
        .map(|[a, b]| {
            format!(
                ", median change 95% interval {} … {}",
                crate::report::words::fmt_rel(Some(a)),
                crate::report::words::fmt_rel(Some(b))
            )
        })
        .unwrap_or_default();
    let verdict = if show_verdict {
        format!(" — {}", verdict_word(g.verdict))
    } else {
        String::new()
    };
    let title = format!("{}{verdict}: step wall per side{interval}", g.label);
    let svg = charts::boxes(
        &title,
        "step wall (µs)",
        &[
            (format!("baseline ({} steps)", vb.len()), fb, PALETTE[0]),
            (format!("candidate ({} steps)", vc.len()), fc, PALETTE[1]),
        ],
    );
    let mut t = Table::new(&[
        ("side", Align::Left),
        ("steps", Align::Right),
        ("min µs", Align::Right),
        ("q1 µs", Align::Right),
        ("median µs", Align::Right),
        ("q3 µs", Align::Right),
        ("max µs", Align::Right),
    ]);
    for (name, n, f) in [("baseline", vb.len(), fb), ("candidate", vc.len(), fc)] {
        t.row(vec![
            name.into(),
            group_thousands(&n.to_string()),
            fmt_us(f.min * 1e3),
            fmt_us(f.q1 * 1e3),
            fmt_us(f.median * 1e3),
            fmt_us(f.q3 * 1e3),
            fmt_us(f.max * 1e3),
        ]);
    }
    Some(html! {
        (figure(
            svg,
            "Box: quartiles; line: median; whiskers: min and max. Numbers: the table below.",
        ))
        (table(
            &t,
            Some("Step wall per side: five-number summary of the measured walls"),
        ))
    })
}

fn verdict_word(v: Verdict) -> &'static str {
    match v {
        Verdict::Pass => "pass",
        Verdict::Regression => "regression",
        Verdict::Inconclusive => "inconclusive",
        Verdict::Incomparable => "incomparable",
    }
}

/// The whole page. `pairs` are the compared groups with both sides' samples, in the order
/// of the comparison's groups (for the distributions; `pipeline::gate::Compared::pairs`).
pub fn render<'a>(c: &Comparison, o: &RenderOptions, pairs: Vec<(&'a Group, &'a Group)>) -> String {
    let mut m = Html {
        out: String::new(),
        command: o.command,
        verdict_class: match (o.show_verdict, c.verdict) {
            (false, _) => "",
            (true, Verdict::Pass) => "pass",
            (true, Verdict::Regression) => "fail",
            (true, Verdict::Inconclusive) => "warn",
            (true, Verdict::Incomparable) => "fail",
        },
        show_verdict: o.show_verdict,
        waterfall_top: o.waterfall_top,
        pairs,
    };
    walk(c, o, &mut m);
    // The walk's parts, each a template above: escaped when they were made.
    page(&format!("stepgate {}", o.command), PreEscaped(m.out))
}
