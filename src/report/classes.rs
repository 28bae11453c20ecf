//! Rendering of the class attribution (docs/method.md §4.1): one compact table per group
//! of like steps, its exact waterfall line, and the per-class next actions. Plain
//! functions of finished values, so `steps`, the HTML page and `gate`/`diff` print the
//! same rows.

use super::table::{Align, Table};
use super::{fmt_int, fmt_pct, fmt_us, group_thousands};
use crate::wire::attribution::{
    Basis, ClassAttribution, ClassShape, ClassWaterfall, GroupAttribution, KernelClass, LayerGemm,
    LayerMap, OperatingPoint, Sourced,
};
use crate::wire::steps::{Step, StepKind, StepsReport};

/// Bytes/s as TB/s or GB/s with three significant figures.
pub(crate) fn fmt_bandwidth(b: f64) -> String {
    if b >= 1e12 {
        format!("{:.2} TB/s", b / 1e12)
    } else if b >= 1e9 {
        format!("{:.1} GB/s", b / 1e9)
    } else {
        format!("{:.2} MB/s", b / 1e6)
    }
}

fn opt_us(v: Option<i64>) -> String {
    v.map(|x| fmt_us(x as f64)).unwrap_or_else(|| "–".into())
}

/// One row per class: kernels and time (measured), floor, excess, bytes, achieved
/// bandwidth and its share of the roof (derived), the class's shape.
pub fn class_table(classes: &[ClassAttribution]) -> Table {
    let mut t = Table::new(&[
        ("class", Align::Left),
        ("kernels", Align::Right),
        ("time µs (measured)", Align::Right),
        ("floor µs (derived)", Align::Right),
        ("excess µs", Align::Right),
        ("bytes GB", Align::Right),
        ("achieved", Align::Right),
        ("of roof", Align::Right),
        ("shape", Align::Left),
    ]);
    for c in classes {
        // Faster than the roof is not a result: the shape says the floor is wrong.
        let (achieved, of_roof) = if c.shape == ClassShape::BelowFloor {
            (None, None)
        } else {
            (c.achieved_bytes_per_s, c.roof_fraction)
        };
        t.row(vec![
            c.class.as_str().to_owned(),
            fmt_int(c.kernels as i64),
            fmt_us(c.time_ns as f64),
            opt_us(c.floor_ns),
            opt_us(c.excess_ns),
            c.bytes
                .map(|b| group_thousands(&format!("{:.3}", b / 1e9)))
                .unwrap_or_else(|| "–".into()),
            achieved.map(fmt_bandwidth).unwrap_or_else(|| "–".into()),
            of_roof.map(fmt_pct).unwrap_or_else(|| "–".into()),
            c.shape.as_str().to_owned(),
        ]);
    }
    t
}

/// `floors 3,769.0 + excess 5,986.5 + no class 17.4 + gap 463,977.0 = wall 473,749.9`
/// (µs), the term of classes without a floor only where there is one.
pub(crate) fn waterfall_line(w: &ClassWaterfall) -> String {
    let us = |ns: i64| fmt_us(ns as f64);
    let mut parts = vec![
        format!("floors {}", us(w.floor_ns)),
        format!("excess {}", us(w.excess_ns)),
    ];
    if w.unpriced_ns != 0 {
        parts.push(format!("no floor {}", us(w.unpriced_ns)));
    }
    parts.push(format!("no class {}", us(w.unclassified_ns)));
    parts.push(format!("gap {}", us(w.gap_ns)));
    format!(
        "{} = wall {} µs (exact in ns)",
        parts.join(" + "),
        us(w.wall_ns)
    )
}

/// The heading of one group's table.
pub(crate) fn group_heading(g: &GroupAttribution) -> String {
    format!(
        "per kernel class, {} group ({} priced step(s)), its median step (series {}, index {}):",
        g.group, g.steps, g.series, g.index
    )
}

/// The per-layer GEMM table, where the decode layer could be mapped: largest excess per
/// step first (what a faster GEMM could win), a folded split-K reduction named with its GEMM.
/// `name_max`: kernel names shortened in the middle to this many characters (the page's
/// fixed-width cell; the family and the tile shape stay), or whole (the terminal's table
/// shortens them to its width itself).
pub(crate) fn layer_table(l: &LayerMap, name_max: Option<usize>) -> Table {
    let mut t = Table::new(&[
        ("layer GEMM", Align::Left),
        ("kernel", Align::Wrap),
        ("µs per layer (measured)", Align::Right),
        ("bytes MB (derived)", Align::Right),
        ("achieved (derived)", Align::Right),
        ("of β (derived)", Align::Right),
        ("× per step", Align::Right),
        ("excess µs per step (derived)", Align::Right),
    ]);
    let mut rows: Vec<&LayerGemm> = l.gemms.iter().collect();
    rows.sort_by(|a, b| {
        let x = |g: &LayerGemm| g.excess_per_step_ns.unwrap_or(f64::MIN);
        x(b).total_cmp(&x(a))
    });
    for g in rows {
        // Whole names: the terminal's table shortens them in the middle to fit.
        // A split-K pair shares the cell: five eighths for the GEMM, the rest its reduction.
        let cut = |n: &str, eighths: usize| match name_max {
            Some(max) => crate::report::fit::shorten_middle(n, max * eighths / 8),
            None => n.to_owned(),
        };
        let kernel = match &g.split_k_reduction {
            Some(r) => format!("{} + {}", cut(&g.kernel, 5), cut(r, 3)),
            None => cut(&g.kernel, 8),
        };
        t.row(vec![
            g.role.clone().unwrap_or_else(|| "?".into()),
            kernel,
            fmt_us(g.time_ns),
            g.bytes
                .map(|b| group_thousands(&format!("{:.2}", b / 1e6)))
                .unwrap_or_else(|| "–".into()),
            g.achieved_bytes_per_s
                .map(fmt_bandwidth)
                .unwrap_or_else(|| "–".into()),
            g.roof_fraction.map(fmt_pct).unwrap_or_else(|| "–".into()),
            g.launches_per_step.to_string(),
            g.excess_per_step_ns
                .map(fmt_us)
                .unwrap_or_else(|| "–".into()),
        ]);
    }
    t
}

fn sourced<T: std::fmt::Display>(what: &str, s: &Sourced<T>) -> String {
    format!("{what} {} ({}: {})", s.value, s.basis.as_str(), s.evidence)
}

/// The operating point in one line per value, each with its label.
pub(crate) fn operating_point_lines(p: &OperatingPoint) -> Vec<String> {
    let mut out = vec![sourced("TP", &p.tp)];
    if let Some(pp) = &p.pp {
        out.push(sourced("PP", pp));
    }
    if let Some(g) = &p.gpu {
        out.push(sourced("GPU", g));
    }
    if let Some(b) = &p.batch {
        out.push(sourced("batch", b));
    }
    if let Some(c) = &p.context {
        out.push(sourced("context", c));
    }
    out
}

/// The lines `steps` prints under its notes: the operating point, and what each inferred
/// kind rests on (from its first step), and steps whose evidence disagreed.
pub(crate) fn point_lines(r: &StepsReport) -> Vec<String> {
    // TP matters only to a floor: a defaulted TP is said only when something was priced.
    let priced = r
        .steps
        .iter()
        .any(|s| s.attribution.as_ref().is_some_and(|a| a.floor.is_some()));
    let mut out: Vec<String> = r
        .operating_point
        .iter()
        .flat_map(|p| {
            let mut l = operating_point_lines(p);
            if !priced && p.tp.basis == Basis::Default {
                l.remove(0);
            }
            l
        })
        .map(|l| format!("operating point: {l}"))
        .collect();
    let mut kinds: Vec<(String, usize, &str)> = Vec::new();
    for s in r.steps.iter().filter(|s| s.kind == StepKind::Unknown) {
        let Some(why) = s.kind_evidence.as_deref() else {
            continue;
        };
        let label = match s.kind_guess {
            Some(g) => format!("{} (inferred)", g.as_str()),
            None => "unknown".to_owned(),
        };
        match kinds.iter_mut().find(|k| k.0 == label) {
            Some(k) => k.1 += 1,
            None => kinds.push((label, 1, why)),
        }
    }
    for (label, n, why) in kinds {
        out.push(format!("kind: {label} for {n} step(s), e.g. {why}"));
    }
    // Batch guesses by value, each with its first step's evidence.
    let mut batches: Vec<(u64, usize, &str)> = Vec::new();
    for s in &r.steps {
        let (Some(b), Some(why)) = (s.batch_guess, s.batch_evidence.as_deref()) else {
            continue;
        };
        match batches.iter_mut().find(|x| x.0 == b) {
            Some(x) => x.1 += 1,
            None => batches.push((b, 1, why)),
        }
    }
    batches.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let shown = batches.len().min(3);
    for &(b, n, why) in &batches[..shown] {
        out.push(format!("batch: {b} (inferred) for {n} step(s), e.g. {why}"));
    }
    if batches.len() > shown {
        let rest: usize = batches[shown..].iter().map(|x| x.1).sum();
        out.push(format!(
            "batch: {} other inferred values for {rest} step(s) (JSON: batch_guess per step)",
            batches.len() - shown
        ));
    }
    out
}

/// What a group's class table is followed by: its exact waterfall, each class's next
/// action, and what the per-layer view found.
pub(crate) fn group_lines(g: &GroupAttribution) -> Vec<String> {
    let mut lines = vec![format!("waterfall: {}", waterfall_line(&g.waterfall))];
    // The link's figure is a citation, not HBM's β: print it with its source, so "of
    // roof" for communication can be checked.
    if let Some(c) = g
        .classes
        .iter()
        .find(|c| c.class == KernelClass::Communication && c.roof_bytes_per_s.is_some())
    {
        lines.push(format!(
            "communication roof: {} ({})",
            fmt_bandwidth(c.roof_bytes_per_s.unwrap_or_default()),
            c.basis
        ));
    }
    lines.extend(g.actions.iter().map(|a| format!("next: {a}")));
    if let Some(l) = &g.layers {
        lines.push(match &l.ambiguous {
            Some(why) => format!("layers: {why}"),
            None => format!(
                "layers: {} kernels repeat {} times ({} layers in the model); the GEMMs of one layer, largest excess per step first:",
                l.period_kernels, l.repeats, l.layers
            ),
        });
    }
    lines
}

/// Every group's class table, waterfall, actions and layer view, as text or markdown.
#[cfg(test)]
pub(crate) fn groups_text(groups: &[GroupAttribution], markdown: bool) -> String {
    let mut out = String::new();
    for g in groups {
        out.push('\n');
        out.push_str(&group_heading(g));
        out.push_str("\n\n");
        let t = class_table(&g.classes);
        out.push_str(&if markdown {
            t.to_markdown()
        } else {
            t.to_text()
        });
        let lines = group_lines(g);
        for l in lines {
            if markdown {
                out.push_str(&format!("\n- {l}"));
            } else {
                out.push_str(&l);
                out.push('\n');
            }
        }
        if let Some(l) = g.layers.as_ref().filter(|l| l.ambiguous.is_none()) {
            let t = layer_table(l, None);
            out.push_str(&if markdown {
                format!("\n\n{}", t.to_markdown())
            } else {
                t.to_text()
            });
        }
        if markdown {
            out.push('\n');
        }
    }
    out
}

/// Every group's class table, waterfall, actions and layer view, through a [`Markup`](crate::report::markup::Markup).
pub(crate) fn walk_groups<M: super::markup::Markup>(m: &mut M, groups: &[GroupAttribution]) {
    for g in groups {
        m.heading(&group_heading(g));
        m.table(&class_table(&g.classes));
        for l in group_lines(g) {
            m.line(&l);
        }
        if let Some(l) = g.layers.as_ref().filter(|l| l.ambiguous.is_none()) {
            m.table(&layer_table(l, None));
        }
    }
}

/// CSV columns per class (time, floor, bytes) and the time of kernels in no class,
/// appended to the per-step table; empty cells for a step without a floor.
pub(crate) fn append_class_columns(t: &mut Table, steps: &[Step]) {
    for c in KernelClass::ALL {
        for what in ["time_ns", "floor_ns", "bytes"] {
            t.headers.push(format!("{}_{what}", c.key()));
            t.align.push(Align::Right);
        }
    }
    t.headers.push("unclassified_ns".to_owned());
    t.align.push(Align::Right);
    for (row, s) in t.rows.iter_mut().zip(steps) {
        let a = s.attribution.as_ref();
        for c in KernelClass::ALL {
            let x = a.and_then(|a| a.classes.iter().find(|x| x.class == c));
            row.push(x.map(|x| x.time_ns.to_string()).unwrap_or_default());
            row.push(
                x.and_then(|x| x.floor_ns)
                    .map(|f| f.to_string())
                    .unwrap_or_default(),
            );
            row.push(
                x.and_then(|x| x.bytes)
                    .map(|b| format!("{b:.0}"))
                    .unwrap_or_default(),
            );
        }
        row.push(
            a.and_then(|a| a.waterfall)
                .map(|w| w.unclassified_ns.to_string())
                .unwrap_or_default(),
        );
    }
}
