//! The `gate --html` / `diff --html` page: per group, the waterfall from the baseline's
//! mean step wall to the candidate's, and both sides' step-wall distributions with the
//! verdict and the interval in the title.

use crate::baseline::compare::{Comparison, GroupComparison, Verdict};
use crate::baseline::model::{metric, Baseline};
use crate::baseline::waterfall::summarize;
use crate::report::charts::{self, BarRow, Five, Segment, BETTER, NEUTRAL, PALETTE, WORSE};
use crate::report::gate::{
    categories_table, group_heading, improvements, kernel_table, metrics_table, name_labels,
    presence_table, regressions, sides_line, titles, verdict_line, waterfall_table, RenderOptions,
};
use crate::report::html::{esc, figure, page, table};
use crate::report::table::{Align, Table};
use crate::report::{fmt_us, group_thousands};
use crate::timing::labels::NameLabels;

fn signed_us(d: f64) -> String {
    let s = if d >= 0.0 { "+" } else { "−" };
    format!("{s}{} µs", fmt_us(d.abs()))
}

fn waterfall_chart(g: &GroupComparison, top: usize, labels: &NameLabels) -> Option<String> {
    let check = g.explain.waterfall_check.as_ref()?;
    let s = summarize(&g.explain, top);
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
            note: Some(signed_us(d)),
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
            charts::short_label(labels.get(&r.name, &r.short_name), 48),
            r.delta_ns,
            &mut rows,
        );
    }
    if let Some((n, d, _, _)) = s.others {
        step(format!("{n} others"), d, &mut rows);
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
        signed_us(check.delta_mean_wall_ns)
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
         step (the gap last); the bars add up exactly to the change. Numbers: the table below.",
    ))
}

fn distribution(
    g: &GroupComparison,
    base: &Baseline,
    cand: &Baseline,
    show_verdict: bool,
) -> Option<String> {
    let find = |b: &Baseline| {
        b.samples
            .groups
            .iter()
            .find(|x| x.step_kind == g.step_kind && x.batch_size == g.batch_size)
            .and_then(|x| x.metrics.get(metric::WALL_NS))
            .map(|v| v.iter().map(|ns| ns / 1e3).collect::<Vec<f64>>())
    };
    let (vb, vc) = (find(base)?, find(cand)?);
    let (fb, fc) = (Five::of(&vb)?, Five::of(&vc)?);
    let wall = g.metrics.iter().find(|m| m.metric == metric::WALL_NS);
    let interval = wall
        .and_then(|m| m.change.interval_rel)
        .map(|[a, b]| {
            format!(
                ", median change 95% interval {:+.1}% … {:+.1}%",
                a * 100.0,
                b * 100.0
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
    let mut out = figure(
        svg,
        "Box: quartiles; line: median; whiskers: min and max. Numbers: the table below.",
    );
    out.push_str(&table(&t, Some("Step wall distribution (derived)")));
    Some(out)
}

fn verdict_word(v: Verdict) -> &'static str {
    match v {
        Verdict::Pass => "pass",
        Verdict::Regression => "regression",
        Verdict::Inconclusive => "inconclusive",
    }
}

/// The whole page. `base`/`cand` are the two sides' samples (for the distributions).
pub fn render(c: &Comparison, o: &RenderOptions, base: &Baseline, cand: &Baseline) -> String {
    let labels = name_labels(c);
    let mut b = String::new();
    b.push_str(&format!("<h1>stepgate {}</h1>\n", o.command));
    let cls = match (o.show_verdict, c.verdict) {
        (false, _) => "",
        (true, Verdict::Pass) => "pass",
        (true, Verdict::Regression) => "fail",
        (true, Verdict::Inconclusive) => "warn",
    };
    b.push_str(&format!(
        "<p class=\"verdict {cls}\">{}</p>\n<p class=\"muted\">{}</p>\n",
        esc(&crate::report::html::plain(&verdict_line(c, o))),
        esc(&sides_line(c, o, false))
    ));
    if o.show_verdict && c.reasons.len() > 1 {
        b.push_str(&format!(
            "<details><summary>All {} reasons</summary><ul>\n",
            c.reasons.len()
        ));
        for r in &c.reasons {
            b.push_str(&format!("<li>{}</li>\n", esc(r)));
        }
        b.push_str("</ul></details>\n");
    }
    for w in &c.warnings {
        b.push_str(&format!("<p class=\"note\">{}</p>\n", esc(w)));
    }
    for g in &c.groups {
        b.push_str(&format!(
            "<h2>{}</h2>\n",
            esc(&crate::report::html::plain(&group_heading(
                g,
                o.show_verdict
            )))
        ));
        for n in &g.notes {
            b.push_str(&format!("<p class=\"note\">{}</p>\n", esc(n)));
        }
        if let Some(d) = distribution(g, base, cand, o.show_verdict) {
            b.push_str(&d);
        }
        if let Some(w) = waterfall_chart(g, o.waterfall_top, &labels) {
            b.push_str(&w);
        }
        if let Some(t) = waterfall_table(&g.explain, o.waterfall_top, false, &labels) {
            b.push_str(&table(&t, Some("Waterfall (mean per step, derived)")));
        }
        if let Some(l) = crate::report::gate::waterfall_floor_line(&g.explain) {
            b.push_str(&format!("<p>{}</p>\n", esc(&l)));
        }
        if let Some(n) = &g.explain.waterfall_note {
            b.push_str(&format!("<p class=\"note\">{}</p>\n", esc(n)));
        }
        b.push_str(&table(
            &metrics_table(g, "step metric (median)", o.show_verdict),
            Some("Step metrics (medians of per-step samples, derived)"),
        ));
        let (reg_title, imp_title) = titles(o);
        let reg = regressions(g, o.top);
        if !reg.is_empty() {
            b.push_str(&table(
                &kernel_table(&reg, false, o.show_verdict, &labels),
                Some(&format!("{reg_title} (median exclusive time per step)")),
            ));
        }
        let imp = improvements(g, o.top);
        if !imp.is_empty() {
            b.push_str(&table(
                &kernel_table(&imp, false, o.show_verdict, &labels),
                Some(&format!("{imp_title} (median exclusive time per step)")),
            ));
        }
        if !g.new_kernels.is_empty() {
            b.push_str(&table(
                &presence_table(&g.new_kernels, false, true, &labels),
                Some("New kernels (candidate only; mean per step, derived)"),
            ));
        }
        if !g.vanished_kernels.is_empty() {
            b.push_str(&table(
                &presence_table(&g.vanished_kernels, false, false, &labels),
                Some("Vanished kernels (baseline only; mean per step, derived)"),
            ));
        }
        if !g.categories.is_empty() {
            b.push_str(&table(
                &categories_table(g, o.show_verdict),
                Some("Time per category (median per step)"),
            ));
        }
        let mut shown: Vec<(&str, &str)> = Vec::new();
        let rows = g
            .explain
            .waterfall
            .iter()
            .filter(|r| r.name != crate::baseline::waterfall::GAP_ROW)
            .take(o.waterfall_top)
            .map(|r| (r.name.as_str(), r.short_name.as_str()))
            .chain(
                reg.iter()
                    .chain(&imp)
                    .map(|k| (k.name.as_str(), k.short_name.as_str())),
            )
            .chain(
                g.new_kernels
                    .iter()
                    .chain(&g.vanished_kernels)
                    .map(|k| (k.name.as_str(), k.short_name.as_str())),
            );
        for (full, short) in rows {
            let l = labels.get(full, short);
            if l != full && !shown.contains(&(l, full)) {
                shown.push((l, full));
            }
        }
        if !shown.is_empty() {
            b.push_str("<details><summary>Full kernel names</summary><ul>\n");
            for (s, f) in shown {
                b.push_str(&format!(
                    "<li><code>{}</code>: <code>{}</code></li>\n",
                    esc(s),
                    esc(f)
                ));
            }
            b.push_str("</ul></details>\n");
        }
    }
    page(&format!("stepgate {}", o.command), &b)
}
