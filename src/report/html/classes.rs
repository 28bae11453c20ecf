//! The steps page's per-class view: per group of like steps, its median step's floor and
//! measurement stacked by kernel class (one bar each, on one axis), and the class table
//! with each class's achieved bandwidth against the roof — the terminal's class table,
//! drawn.

use maud::html;
use plotters::style::RGBColor;

use crate::report::charts::{self, distinct, BarRow, Segment, FLOOR, GAP, NEUTRAL, OTHER};
use crate::report::classes::{class_table, group_heading, group_lines, layer_table};
use crate::report::fmt_us;
use crate::report::html::{figure, table};
use crate::wire::attribution::{GroupAttribution, GroupSpread, KernelClass};

/// The colour of each class, the same in every group's bars: none of the floor's, the
/// gap's, the neutral or the "no class" grey.
pub(crate) fn class_colors() -> Vec<(KernelClass, RGBColor)> {
    let c = distinct(KernelClass::ALL.len(), &[FLOOR, GAP, NEUTRAL, OTHER]);
    KernelClass::ALL.into_iter().zip(c).collect()
}

/// Segments laid end to end from 0 µs.
fn stack(parts: impl Iterator<Item = (i64, RGBColor)>) -> Vec<Segment> {
    let mut x = 0i64;
    parts
        .filter(|(ns, _)| *ns > 0)
        .map(|(ns, color)| {
            let s = Segment {
                from: x as f64 / 1e3,
                to: (x + ns) as f64 / 1e3,
                color,
            };
            x += ns;
            s
        })
        .collect()
}

/// Two bars per group: Σ class floors (derived) and the measured wall as class times,
/// kernels in no class and the gap (which add up to the wall exactly).
fn bars(groups: &[GroupAttribution], colors: &[(KernelClass, RGBColor)]) -> Vec<BarRow> {
    let color = |k: KernelClass| colors.iter().find(|c| c.0 == k).map_or(OTHER, |c| c.1);
    let mut rows = Vec::with_capacity(groups.len() * 2);
    for g in groups {
        let w = &g.waterfall;
        rows.push(BarRow {
            label: format!("{}: floor (derived)", g.group),
            segments: stack(
                g.classes
                    .iter()
                    .filter_map(|c| Some((c.floor_ns?, color(c.class)))),
            ),
            note: Some(format!("{} µs", fmt_us(w.floor_ns as f64))),
        });
        rows.push(BarRow {
            label: format!("{}: measured", g.group),
            segments: stack(
                g.classes
                    .iter()
                    .map(|c| (c.time_ns, color(c.class)))
                    .chain([(w.unclassified_ns, OTHER), (w.gap_ns, GAP)]),
            ),
            note: Some(format!("{} µs wall", fmt_us(w.wall_ns as f64))),
        });
    }
    rows
}

/// The section, or nothing when no group was priced.
pub fn section(groups: &[GroupAttribution]) -> String {
    if groups.is_empty() {
        return String::new();
    }
    let colors = class_colors();
    let mut legend: Vec<(&str, RGBColor)> = colors.iter().map(|(k, c)| (k.as_str(), *c)).collect();
    legend.push(("no class", OTHER));
    legend.push(("gap (GPU idle)", GAP));
    let chart = figure(
        charts::hbars(
            "Each group's median step: class floors against class times",
            "time (µs)",
            &bars(groups, &colors),
            &legend,
            None,
        ),
        "Per group of like steps, its median step: the upper bar stacks each class's floor \
         (derived from the same byte model as the step floor), the lower its measured \
         exclusive time, the kernels in no class and the gap, which add up to the wall. \
         Numbers: the tables below.",
    );
    html! {
        h2 { "Floor and measurement per kernel class" } "\n"
        (chart)
        @for g in groups {
            (table(&class_table(&g.classes), Some(&group_heading(g))))
            @for l in group_lines(g) { p.note { (l) } "\n" }
            @if let Some(l) = g.layers.as_ref().filter(|l| l.ambiguous.is_none()) {
                (table(&layer_table(l, Some(48)), None))
            }
        }
    }
    .into_string()
}

/// Each group's class times across its like steps (p10 / median / p90, measured): the
/// median step's section above shows one step only.
pub(crate) fn spread_section(spreads: &[GroupSpread]) -> String {
    if spreads.is_empty() {
        return String::new();
    }
    html! {
        h2 { "Kernel classes across like steps" } "\n"
        @for g in spreads {
            (table(
                &crate::report::spread::table(g),
                Some(&crate::report::spread::heading(g)),
            ))
        }
    }
    .into_string()
}
