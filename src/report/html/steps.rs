//! The `steps --html` page: per-step wall, busy and floor per series, and where the median
//! step's time goes next to its floor.

use maud::{html, Markup, PreEscaped};

use crate::report::charts::{
    self, distinct, BarRow, Line, Panel, Segment, XAxis, BUSY, FLOOR, GAP, NEUTRAL, OTHER,
};
use crate::report::html::{figure, page, table};
use crate::report::table::{Align, Table};
use crate::report::{fmt_int, fmt_us};
use crate::wire::steps::KindLabel;
use crate::wire::steps::{Step, StepsReport};

/// Steps per series drawn and listed; beyond this the page says how many were left out
/// (the JSON output has them all).
pub(crate) const MAX_STEPS_SHOWN: usize = 5_000;

/// The kinds present (an inferred kind apart from a marked one, and named so), each with
/// a colour, in a fixed order: colours none of the lines they are drawn beside (wall,
/// busy, floor, gap) has.
struct Kinds(Vec<(KindLabel, String, plotters::style::RGBColor)>);

impl Kinds {
    fn of(steps: &[&Step]) -> Kinds {
        let mut kinds: Vec<KindLabel> = steps.iter().map(|s| s.kind_label()).collect();
        kinds.sort_unstable();
        kinds.dedup();
        let colors = distinct(kinds.len(), &[NEUTRAL, BUSY, FLOOR, GAP]);
        Kinds(
            kinds
                .into_iter()
                .zip(colors)
                .map(|(k, c)| (k, k.to_string(), c))
                .collect(),
        )
    }

    /// The colour class of a step.
    fn index(&self, s: &Step) -> usize {
        let k = s.kind_label();
        self.0.iter().position(|c| c.0 == k).unwrap_or(0)
    }

    /// (name, colour) for a chart's legend.
    fn legend(&self) -> Vec<(&str, plotters::style::RGBColor)> {
        self.0.iter().map(|(_, n, c)| (n.as_str(), *c)).collect()
    }
}

fn series_panel(r: &StepsReport, series: usize, steps: &[&Step]) -> Markup {
    let kinds = Kinds::of(steps);
    let us = |ns: f64| ns / 1e3;
    let with_wall: Vec<&&Step> = steps.iter().filter(|s| s.wall_ns.is_some()).collect();
    let points: Vec<(f64, f64, usize)> = with_wall
        .iter()
        .map(|s| {
            (
                s.index as f64,
                us(s.wall_ns.unwrap_or(0) as f64),
                kinds.index(s),
            )
        })
        .collect();
    let wall: Vec<(f64, f64)> = points.iter().map(|p| (p.0, p.1)).collect();
    let busy: Vec<(f64, f64)> = with_wall
        .iter()
        .map(|s| (s.index as f64, us(s.busy_ns as f64)))
        .collect();
    let band: Vec<(f64, f64, f64)> = with_wall
        .iter()
        .map(|s| {
            (
                s.index as f64,
                us(s.busy_ns as f64),
                us(s.wall_ns.unwrap_or(0) as f64),
            )
        })
        .collect();
    let floor: Vec<(f64, f64)> = with_wall
        .iter()
        .filter_map(|s| {
            let f = s.attribution.as_ref()?.floor.as_ref()?;
            Some((s.index as f64, us(f.floor_ns)))
        })
        .collect();
    let mut lines = vec![
        Line {
            name: "wall",
            color: NEUTRAL,
            points: wall,
            dashed: false,
        },
        Line {
            name: "busy",
            color: BUSY,
            points: busy,
            dashed: false,
        },
    ];
    if !floor.is_empty() {
        lines.push(Line {
            name: "floor (derived)",
            color: FLOOR,
            points: floor,
            dashed: true,
        });
    }
    let s = &r.series[series];
    let title = format!(
        "Series {series} (pid {}{}): per-step time",
        s.pid,
        s.device.map(|d| format!(", GPU {d}")).unwrap_or_default()
    );
    let p = Panel {
        title: &title,
        x_desc: "step index",
        x_axis: XAxis::Numbers { integer: true },
        y_desc: "time per step (µs)",
        lines,
        band,
        band_name: "gap (GPU idle in the step)",
        points,
        classes: kinds.legend(),
        markers: vec![],
    };
    figure(
        charts::panel(&p),
        "Wall (points coloured by step kind), busy and — with a model — the floor per step; \
         the shaded band between busy and wall is the gap. Numbers: the per-step table below.",
    )
}

/// The step with the median wall among the most common kind.
/// Categories drawn one by one in the median step's bar; the rest are "other categories".
const TOP: usize = 6;

fn composition(s: &Step) -> Markup {
    let mut segs: Vec<(String, f64)> = s
        .categories
        .iter()
        .take(TOP)
        .map(|c| (c.category.clone(), c.exclusive_ns as f64))
        .collect();
    let rest: f64 = s
        .categories
        .iter()
        .skip(TOP)
        .map(|c| c.exclusive_ns as f64)
        .sum();
    if rest > 0.0 {
        segs.push(("other categories".into(), rest));
    }
    let gap = s.gap_ns.unwrap_or(0) as f64;
    let mut legend_owned: Vec<(String, plotters::style::RGBColor)> = Vec::new();
    let mut x = 0.0;
    let mut stacked = Vec::new();
    // Categories never take the colours of the floor, the gap, the host bar or "other".
    let colors = distinct(TOP, &[FLOOR, GAP, NEUTRAL, OTHER]);
    for (i, (name, v)) in segs.iter().enumerate() {
        let c = if i < TOP { colors[i] } else { OTHER };
        stacked.push(Segment {
            from: x / 1e3,
            to: (x + v) / 1e3,
            color: c,
        });
        legend_owned.push((name.clone(), c));
        x += v;
    }
    stacked.push(Segment {
        from: x / 1e3,
        to: (x + gap) / 1e3,
        color: GAP,
    });
    legend_owned.push(("gap".into(), GAP));
    let wall = s.wall_ns.unwrap_or(0) as f64;
    let mut rows = vec![BarRow {
        label: format!("step {} ({})", s.index, s.kind_label()),
        segments: stacked,
        note: Some(format!("{} µs wall", fmt_us(wall))),
    }];
    let mut t = Table::new(&[
        ("part", Align::Left),
        ("µs", Align::Right),
        ("share of wall", Align::Right),
    ]);
    for (name, v) in &segs {
        t.row(vec![
            name.clone(),
            fmt_us(*v),
            crate::report::fmt_pct(v / wall.max(1.0)),
        ]);
    }
    t.row(vec![
        "gap (GPU idle)".into(),
        fmt_us(gap),
        crate::report::fmt_pct(gap / wall.max(1.0)),
    ]);
    t.row(vec!["= wall".into(), fmt_us(wall), "100.0%".into()]);
    if let Some(f) = s.attribution.as_ref().and_then(|a| a.floor.as_ref()) {
        rows.push(BarRow {
            label: "floor (derived)".into(),
            segments: vec![Segment {
                from: 0.0,
                to: f.floor_ns / 1e3,
                color: FLOOR,
            }],
            note: Some(format!("{} µs", fmt_us(f.floor_ns))),
        });
        legend_owned.push(("floor (derived)".into(), FLOOR));
        t.row(vec![
            "floor (derived)".into(),
            fmt_us(f.floor_ns),
            crate::report::fmt_pct(f.floor_ns / wall.max(1.0)),
        ]);
    }
    rows.push(BarRow {
        label: "host launch calls".into(),
        segments: vec![Segment {
            from: 0.0,
            to: s.launch_host_ns as f64 / 1e3,
            color: NEUTRAL,
        }],
        note: Some(format!(
            "{} launch{}",
            fmt_int(s.launches as i64),
            if s.launches == 1 { "" } else { "es" }
        )),
    });
    legend_owned.push(("host launch time (CPU, overlaps the GPU)".into(), NEUTRAL));
    t.row(vec![
        format!(
            "host launch calls ({} launches)",
            fmt_int(s.launches as i64)
        ),
        fmt_us(s.launch_host_ns as f64),
        crate::report::fmt_pct(s.launch_host_ns as f64 / wall.max(1.0)),
    ]);
    let legend: Vec<(&str, plotters::style::RGBColor)> =
        legend_owned.iter().map(|(n, c)| (n.as_str(), *c)).collect();
    html! {
        (figure(
            charts::hbars(
                "Where the median step's time goes",
                "time (µs)",
                &rows,
                &legend,
                None,
            ),
            "GPU exclusive time per kernel category and the gap add up to the step's wall; \
             the floor and the host's launch time are drawn beside it.",
        ))
        (table(
            &t,
            Some("The median step, in numbers (measured; the floor derived)"),
        ))
    }
}

/// What the roofline plot needs from a model: the GPU's cited peaks (each step's FLOPs
/// and compulsory bytes come with its floor attribution).
pub struct Roofs<'a> {
    pub gpu_name: &'a str,
    pub bandwidth_bytes_per_s: f64,
    pub peak_flops_per_s: f64,
}

/// (FLOPs, bytes) a step's floor was priced from (derived), where it was priced.
fn work(s: &Step) -> Option<(f64, f64)> {
    let f = s.attribution.as_ref()?.floor.as_ref()?;
    Some((f.flops, f.total_bytes))
}

/// The steps against the GPU's roofs.
fn roofline(r: &StepsReport, p: &Roofs<'_>) -> Markup {
    let steps: Vec<&Step> = r
        .steps
        .iter()
        .filter(|s| s.busy_ns > 0)
        .take(MAX_STEPS_SHOWN)
        .collect();
    let kinds = Kinds::of(&steps);
    let mut t = Table::new(&[
        ("series", Align::Right),
        ("index", Align::Right),
        ("kind", Align::Left),
        ("FLOP / byte", Align::Right),
        ("achieved TFLOP/s", Align::Right),
        ("achieved TB/s", Align::Right),
    ]);
    let mut points = Vec::new();
    for s in &steps {
        let Some((fl, by)) = work(s) else {
            continue;
        };
        if by <= 0.0 {
            continue;
        }
        let secs = s.busy_ns as f64 / 1e9;
        let (ai, flops, bytes) = (fl / by, fl / secs, by / secs);
        points.push((ai, flops, kinds.index(s)));
        t.row(vec![
            s.series.to_string(),
            s.index.to_string(),
            s.kind_label().to_string(),
            format!("{ai:.2}"),
            format!("{:.2}", flops / 1e12),
            format!("{:.3}", bytes / 1e12),
        ]);
    }
    if points.is_empty() {
        return html! {};
    }
    let beta = p.bandwidth_bytes_per_s;
    let pi = p.peak_flops_per_s;
    let mem = format!("memory roof {:.2} TB/s (cited)", beta / 1e12);
    let comp = format!("bf16 tensor roof {:.0} TFLOP/s (cited)", pi / 1e12);
    let title = format!("Steps under the {} roofline", p.gpu_name);
    let chart = charts::roofline(&charts::Roofline {
        title: &title,
        bandwidth_bytes_per_s: beta,
        peak_flops_per_s: pi,
        roof_names: (&mem, &comp),
        points,
        classes: kinds.legend(),
    });
    html! {
        h2 { "Roofline" } "\n"
        (figure(
            chart,
            "One point per step: the model's FLOPs and compulsory bytes for the step's batch \
             (derived), over the step's busy time (measured). Numbers: the table below.",
        ))
        details { summary { "Roofline points per step" } "\n" (table(&t, None)) } "\n"
    }
}

/// The whole `steps --html` page; `roofs` (with `--model`) adds the roofline plot.
pub fn render(path: &str, r: &StepsReport, roofs: Option<&Roofs<'_>>) -> String {
    // The answer first, by the same walk as the terminal's: the verdict, its next action,
    // where the median step's wall goes, the other actions ranked by what each can win.
    let answer = {
        use crate::report::markup::Markup as _;
        let mut h = crate::report::markup::Html::default();
        crate::report::answer::walk(&mut h, r, true);
        // Made of the markup's templates: escaped when they were made.
        PreEscaped(h.finish())
    };
    // Then the terminal's lines under its headline, folded: the heuristic-steps hint, the
    // warnings, the notes, and the operating point with what each inferred kind and batch
    // rests on.
    let notes: Vec<String> = crate::report::steps::hint_and_warnings(r)
        .into_iter()
        .chain(r.notes.iter().cloned())
        .chain(crate::report::classes::point_lines(r))
        .collect();
    // The pipeline picked it (`median_step`); the page only draws it.
    let median = r.median_step.and_then(|at| {
        r.steps
            .iter()
            .find(|s| s.series == at.series && s.index == at.index)
    });
    let body = html! {
        h1 { "stepgate steps" } "\n"
        p.muted { (crate::report::steps::headline(path, r)) } "\n"
        (answer)
        @if !notes.is_empty() {
            details {
                summary { "Notes and caveats (" (notes.len()) ")" } "\n"
                @for n in &notes { p.note { (n) } "\n" }
            }
            "\n"
        }
        h2 { "Summary by kind" } "\n"
        (table(
            &crate::report::steps::summary_table(r),
            Some("measured, µs: median · p10 · p90 per step"),
        ))
        @if let Some(m) = median {
            h2 { "The median step" } "\n"
            (composition(m))
        }
        // Built by the classes module's templates.
        (PreEscaped(crate::report::html::classes::section(&r.groups)))
        (PreEscaped(crate::report::html::classes::spread_section(&r.class_spread)))
        @if let Some(p) = roofs { (roofline(r, p)) }
        @for i in 0..r.series.len() { (series_section(r, i)) }
    };
    page(&format!("stepgate steps — {path}"), body)
}

/// One series: its per-step chart and table (the first [`MAX_STEPS_SHOWN`] steps).
fn series_section(r: &StepsReport, i: usize) -> Markup {
    let steps: Vec<&Step> = r
        .steps
        .iter()
        .filter(|s| s.series == i)
        .take(MAX_STEPS_SHOWN)
        .collect();
    if steps.is_empty() {
        return html! {};
    }
    let total = r.steps.iter().filter(|s| s.series == i).count();
    let owned: Vec<Step> = steps.iter().map(|s| (*s).clone()).collect();
    html! {
        h2 { "Series " (i) } "\n"
        @if total > steps.len() {
            p.note {
                "The first " (fmt_int(steps.len() as i64)) " of " (fmt_int(total as i64))
                " steps are drawn and listed; the JSON output has all."
            }
            "\n"
        }
        (series_panel(r, i, &steps))
        details {
            summary { "Per-step table" } "\n"
            // The series and its device are in the heading above.
            (table(
                &crate::report::steps::steps_table(&owned, false, true)
                    .without(&["series", "device"]),
                None,
            ))
        }
        "\n"
    }
}
