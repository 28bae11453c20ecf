//! Charts for the HTML reports, drawn with plotters' SVG backend into strings that the page
//! inlines: no script and no network needed to see them. Every chart takes plain numbers
//! (already computed elsewhere) and only decides how they look.
//!
//! Text is SVG `<text>` (plotters without its font feature estimates text extents), so the
//! browser renders it with the page's sans-serif font.

use plotters::coord::Shift;
use plotters::prelude::*;

pub mod axis;
pub mod palette;

pub use axis::{fmt_axis, TickAxis, Ticks};
pub use palette::{distinct, BETTER, BUSY, FLOOR, GAP, NEUTRAL, OTHER, PALETTE, WORSE};

/// Chart width in px: fits a 1280 px window with the page's margins.
pub const WIDTH: u32 = 1100;

const FONT: &str = "sans-serif";
/// Font size of legend entries and tick labels (plotters units; the SVG says 0.8 of it).
const LABEL_FONT: u32 = 16;
/// A generous width per character of [`LABEL_FONT`] text in the browser's sans-serif, so
/// that a legend laid out with it is never wider than the chart.
const LABEL_CHAR_PX: f64 = 7.4;
/// Height of one legend line.
const LEGEND_LINE_PX: i32 = 22;

/// Cut a label for a chart axis (the page's table carries the full text).
pub fn short_label(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_owned()
    } else {
        s.chars().take(max - 1).collect::<String>() + "…"
    }
}

/// plotters' errors carry the backend's error type; a chart that fails to draw is a bug in
/// this module, reported as one line instead of a panic.
fn err<E: std::fmt::Debug>(e: E) -> String {
    format!("chart could not be drawn: {e:?}")
}

fn finish(root: &DrawingArea<SVGBackend<'_>, Shift>) -> Result<(), String> {
    root.present().map_err(err)
}

/// Where each legend entry goes: (x, line) with entries wrapped onto a new line before
/// they would run past the chart's right edge.
fn legend_layout(legend: &[(&str, RGBColor)]) -> Vec<(i32, i32)> {
    let right = WIDTH as i32 - 12;
    let (mut x, mut line) = (12, 0);
    let mut out = Vec::with_capacity(legend.len());
    for (name, _) in legend {
        let w = 20 + (name.chars().count() as f64 * LABEL_CHAR_PX).ceil() as i32;
        if x > 12 && x + w > right {
            x = 12;
            line += 1;
        }
        out.push((x, line));
        x += w + 18;
    }
    out
}

/// Height the legend takes (0 without entries).
fn legend_height(legend: &[(&str, RGBColor)]) -> u32 {
    legend_layout(legend)
        .last()
        .map_or(0, |(_, line)| ((line + 1) * LEGEND_LINE_PX + 4) as u32)
}

fn draw_legend(
    area: &DrawingArea<SVGBackend<'_>, Shift>,
    legend: &[(&str, RGBColor)],
    y: i32,
) -> Result<(), String> {
    for ((name, c), (x, line)) in legend.iter().zip(legend_layout(legend)) {
        let y = y + line * LEGEND_LINE_PX;
        area.draw(&Rectangle::new([(x, y + 2), (x + 14, y + 16)], c.filled()))
            .map_err(err)?;
        area.draw(&Text::new(
            name.to_string(),
            (x + 20, y + 2),
            (FONT, LABEL_FONT).into_font().color(&BLACK),
        ))
        .map_err(err)?;
    }
    Ok(())
}

/// The title and legend strip of a chart: its height, then the body below it.
fn header<'b>(
    root: &DrawingArea<SVGBackend<'b>, Shift>,
    title: &str,
    legend: &[(&str, RGBColor)],
) -> Result<DrawingArea<SVGBackend<'b>, Shift>, String> {
    let (top, body) = root.split_vertically(32 + legend_height(legend));
    top.titled(title, (FONT, 20).into_font().color(&BLACK))
        .map_err(err)?;
    draw_legend(&top, legend, 30)?;
    Ok(body)
}

/// One segment of a horizontal bar: `[from, to]` on the value axis.
#[derive(Debug, Clone)]
pub struct Segment {
    pub from: f64,
    pub to: f64,
    pub color: RGBColor,
}

/// One labelled row of horizontal bars.
#[derive(Debug, Clone)]
pub struct BarRow {
    pub label: String,
    pub segments: Vec<Segment>,
    /// Text drawn just right of the row's last segment (e.g. `+12.3 µs`).
    pub note: Option<String>,
}

/// Horizontal bars, one row per label, each made of segments: stacked bars, rankings and
/// waterfalls are all this. `legend`: (name, colour) entries drawn under the title.
pub fn hbars(
    title: &str,
    x_desc: &str,
    rows: &[BarRow],
    legend: &[(&str, RGBColor)],
    x_range: Option<(f64, f64)>,
) -> Result<String, String> {
    let n = rows.len().max(1);
    let label_chars = rows
        .iter()
        .map(|r| r.label.chars().count())
        .max()
        .unwrap_or(8);
    let label_px = (label_chars as f64 * 7.6 + 18.0).clamp(60.0, 420.0) as u32;
    let height = (n as u32 * 26 + 96 + legend_height(legend)).max(160);
    let (lo, hi) = x_range.unwrap_or_else(|| {
        let lo = rows
            .iter()
            .flat_map(|r| r.segments.iter().flat_map(|s| [s.from, s.to]))
            .fold(0.0f64, f64::min);
        let hi = rows
            .iter()
            .flat_map(|r| r.segments.iter().flat_map(|s| [s.from, s.to]))
            .fold(0.0f64, f64::max);
        (lo, if hi > lo { hi } else { lo + 1.0 })
    });
    // Room on the right for the notes.
    let span = hi - lo;
    let hi_pad = hi
        + span
            * if rows.iter().any(|r| r.note.is_some()) {
                0.16
            } else {
                0.03
            };
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, height)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let body = header(&root, title, legend)?;
        let labels: Vec<String> = rows.iter().map(|r| r.label.clone()).collect();
        let mut chart = row_axes(&body, 20, lo..hi_pad, &labels, label_px, x_desc)?;
        for (i, r) in rows.iter().enumerate() {
            let y = (n - 1 - i) as f64;
            for s in &r.segments {
                let (a, b) = (s.from.min(s.to).max(lo), s.from.max(s.to).min(hi_pad));
                chart
                    .draw_series(std::iter::once(Rectangle::new(
                        [(a, y + 0.18), (b, y + 0.82)],
                        s.color.filled(),
                    )))
                    .map_err(err)?;
            }
            if let Some(note) = &r.note {
                let x = r
                    .segments
                    .iter()
                    .map(|s| s.from.max(s.to))
                    .fold(lo, f64::max);
                chart
                    .draw_series(std::iter::once(Text::new(
                        note.clone(),
                        (x + span * 0.01, y + 0.62),
                        (FONT, 15).into_font().color(&BLACK),
                    )))
                    .map_err(err)?;
            }
        }
        finish(&root)?;
    }
    Ok(svg)
}

/// A line series of a step panel.
pub struct Line<'a> {
    pub name: &'a str,
    pub color: RGBColor,
    pub points: Vec<(f64, f64)>,
    pub dashed: bool,
}

/// What a panel's x axis counts.
pub enum XAxis {
    /// Numbers (`integer`: step indices, never a fractional tick).
    Numbers { integer: bool },
    /// One position per label at x = 1, 2, … (runs in export order): ticks on the
    /// positions only, labelled with the labels (thinned to what fits), and half a
    /// position of room on each side so no point sits on an axis.
    Labels(Vec<String>),
}

/// Per-step panel: lines against step index, a shaded band (`band`: x, low, high — the
/// gap between busy and wall) and points coloured by class (`points`: x, y, colour index
/// into `classes`).
pub struct Panel<'a> {
    pub title: &'a str,
    pub x_desc: &'a str,
    pub x_axis: XAxis,
    pub y_desc: &'a str,
    pub lines: Vec<Line<'a>>,
    pub band: Vec<(f64, f64, f64)>,
    pub band_name: &'a str,
    pub points: Vec<(f64, f64, usize)>,
    pub classes: Vec<(&'a str, RGBColor)>,
}

/// Plot width of a panel's body (the chart less its label areas and margins).
const PANEL_PLOT_PX: f64 = (WIDTH - 8 - 24 - 72) as f64;

impl Panel<'_> {
    /// The x range and its ticks, each tick with its label.
    fn x_ticks(&self) -> ((f64, f64), Vec<(f64, String)>) {
        match &self.x_axis {
            XAxis::Labels(labels) => {
                let n = labels.len().max(1);
                let widest = labels.iter().map(|l| l.chars().count()).max().unwrap_or(1);
                let fits = (PANEL_PLOT_PX / (widest as f64 * LABEL_CHAR_PX + 12.0)).max(1.0);
                let every = (n as f64 / fits).ceil().max(1.0) as usize;
                let ticks = labels
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| i % every == 0)
                    .map(|(i, l)| ((i + 1) as f64, l.clone()))
                    .collect();
                ((0.5, n as f64 + 0.5), ticks)
            }
            XAxis::Numbers { integer } => {
                let xs = self
                    .lines
                    .iter()
                    .flat_map(|l| l.points.iter().map(|q| q.0))
                    .chain(self.points.iter().map(|q| q.0));
                let (x0, x1) = xs.fold((f64::MAX, f64::MIN), |(a, b), x| (a.min(x), b.max(x)));
                // Whole numbers get half a step of room on each side below; other ranges
                // without width get one.
                let (x0, x1) = match (x0 <= x1, *integer) {
                    (false, _) => (0.0, 1.0),
                    (true, true) => (x0, x1),
                    (true, false) => (x0, x1.max(x0 + 1.0)),
                };
                let t = Ticks::new(x0, x1, 10, *integer);
                let ticks = t.values.iter().map(|v| (*v, t.label(*v))).collect();
                // Room on both sides, so the first and last points sit off the axes.
                let pad = if *integer { 0.5 } else { (x1 - x0) * 0.01 };
                ((x0 - pad, x1 + pad), ticks)
            }
        }
    }
}

/// Draw a [`Panel`].
pub fn panel(p: &Panel<'_>) -> Result<String, String> {
    let ((x0, x1), x_ticks) = p.x_ticks();
    let y1 = p
        .lines
        .iter()
        .flat_map(|l| l.points.iter().map(|q| q.1))
        .chain(p.points.iter().map(|q| q.1))
        .chain(p.band.iter().map(|b| b.2))
        .fold(0.0f64, f64::max)
        * 1.08;
    let y1 = if y1 > 0.0 { y1 } else { 1.0 };
    let y_ticks = Ticks::new(0.0, y1, 6, false);
    let mut legend: Vec<(&str, RGBColor)> = p.lines.iter().map(|l| (l.name, l.color)).collect();
    if !p.band.is_empty() {
        legend.push((p.band_name, GAP));
    }
    legend.extend(p.classes.iter().copied());
    let mut svg = String::new();
    {
        let height = 330 + legend_height(&legend);
        let root = SVGBackend::with_string(&mut svg, (WIDTH, height)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let body = header(&root, p.title, &legend)?;
        let x_labels = x_ticks.clone();
        let x_label = move |v: &f64| {
            x_labels
                .iter()
                .find(|(x, _)| (x - v).abs() < 1e-9)
                .map(|(_, l)| l.clone())
                .unwrap_or_default()
        };
        let mut chart = ChartBuilder::on(&body)
            .margin_right(24)
            .margin_left(8)
            .x_label_area_size(42)
            .y_label_area_size(72)
            .build_cartesian_2d(
                TickAxis::new(x0..x1, x_ticks.iter().map(|t| t.0).collect()),
                TickAxis::new(0.0..y1, y_ticks.values.clone()),
            )
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc(p.x_desc)
            .y_desc(p.y_desc)
            .x_label_formatter(&x_label)
            .y_label_formatter(&|v: &f64| y_ticks.label(*v))
            .axis_desc_style((FONT, 17))
            .label_style((FONT, LABEL_FONT))
            .light_line_style(TRANSPARENT)
            .draw()
            .map_err(err)?;
        if !p.band.is_empty() {
            // The band as one polygon: lows left to right, highs back.
            let mut poly: Vec<(f64, f64)> = p.band.iter().map(|b| (b.0, b.1)).collect();
            poly.extend(p.band.iter().rev().map(|b| (b.0, b.2)));
            chart
                .draw_series(std::iter::once(Polygon::new(poly, GAP.mix(0.7).filled())))
                .map_err(err)?;
        }
        for l in &p.lines {
            let style = l.color.stroke_width(2);
            if l.dashed {
                chart
                    .draw_series(DashedLineSeries::new(l.points.iter().copied(), 6, 4, style))
                    .map_err(err)?;
            } else {
                chart
                    .draw_series(LineSeries::new(l.points.iter().copied(), style))
                    .map_err(err)?;
            }
        }
        chart
            .draw_series(p.points.iter().map(|&(x, y, c)| {
                let color = p.classes.get(c).map_or(NEUTRAL, |k| k.1);
                Circle::new((x, y), 3, color.filled())
            }))
            .map_err(err)?;
        finish(&root)?;
    }
    Ok(svg)
}

/// Five-number summary for a box plot (linear-interpolated quartiles).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Five {
    pub min: f64,
    pub q1: f64,
    pub median: f64,
    pub q3: f64,
    pub max: f64,
}

impl Five {
    /// None for no samples.
    pub fn of(samples: &[f64]) -> Option<Five> {
        if samples.is_empty() {
            return None;
        }
        let mut v = samples.to_vec();
        v.sort_by(f64::total_cmp);
        let q = |p: f64| {
            let pos = p * (v.len() - 1) as f64;
            let (i, f) = (pos.floor() as usize, pos - pos.floor());
            v[i] + (v[(i + 1).min(v.len() - 1)] - v[i]) * f
        };
        Some(Five {
            min: v[0],
            q1: q(0.25),
            median: q(0.5),
            q3: q(0.75),
            max: v[v.len() - 1],
        })
    }
}

/// Horizontal box plots, one row per (label, summary, colour).
pub fn boxes(
    title: &str,
    x_desc: &str,
    rows: &[(String, Five, RGBColor)],
) -> Result<String, String> {
    let n = rows.len().max(1);
    let lo = rows.iter().map(|r| r.1.min).fold(f64::MAX, f64::min);
    let hi = rows.iter().map(|r| r.1.max).fold(f64::MIN, f64::max);
    let (lo, hi) = if lo < hi {
        (lo, hi)
    } else {
        (lo - 1.0, lo + 1.0)
    };
    let pad = (hi - lo) * 0.06;
    let label_chars = rows.iter().map(|r| r.0.chars().count()).max().unwrap_or(8);
    let label_px = (label_chars as f64 * 7.6 + 18.0).clamp(60.0, 420.0) as u32;
    let height = (n as u32 * 40 + 110).max(170);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, height)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let body = header(&root, title, &[])?;
        let labels: Vec<String> = rows.iter().map(|r| r.0.clone()).collect();
        let mut chart = row_axes(&body, 24, (lo - pad)..(hi + pad), &labels, label_px, x_desc)?;
        for (i, (_, f, c)) in rows.iter().enumerate() {
            let y = (n - 1 - i) as f64;
            let (a, b, m) = (y + 0.25, y + 0.75, y + 0.5);
            let stroke = c.stroke_width(2);
            chart
                .draw_series([
                    PathElement::new(vec![(f.min, m), (f.q1, m)], stroke),
                    PathElement::new(vec![(f.q3, m), (f.max, m)], stroke),
                    PathElement::new(vec![(f.min, a + 0.1), (f.min, b - 0.1)], stroke),
                    PathElement::new(vec![(f.max, a + 0.1), (f.max, b - 0.1)], stroke),
                ])
                .map_err(err)?;
            chart
                .draw_series(std::iter::once(Rectangle::new(
                    [(f.q1, a), (f.q3, b)],
                    c.mix(0.35).filled(),
                )))
                .map_err(err)?;
            chart
                .draw_series([Rectangle::new([(f.q1, a), (f.q3, b)], stroke)])
                .map_err(err)?;
            chart
                .draw_series(std::iter::once(PathElement::new(
                    vec![(f.median, a), (f.median, b)],
                    BLACK.stroke_width(3),
                )))
                .map_err(err)?;
        }
        finish(&root)?;
    }
    Ok(svg)
}

/// A roofline plot: log-log arithmetic intensity (FLOP/byte) against achieved FLOP/s, under
/// the memory roof (β·x) and the compute roof (π). `points`: (x, y, class index).
pub struct Roofline<'a> {
    pub title: &'a str,
    pub bandwidth_bytes_per_s: f64,
    pub peak_flops_per_s: f64,
    pub roof_names: (&'a str, &'a str),
    pub points: Vec<(f64, f64, usize)>,
    pub classes: Vec<(&'a str, RGBColor)>,
}

/// Draw a [`Roofline`].
pub fn roofline(r: &Roofline<'_>) -> Result<String, String> {
    let (beta, pi) = (r.bandwidth_bytes_per_s, r.peak_flops_per_s);
    if !(beta > 0.0 && pi > 0.0) {
        return Err("roofline: no peak bandwidth or compute for this GPU".to_owned());
    }
    let ridge = pi / beta;
    let finite = r
        .points
        .iter()
        .filter(|p| p.0 > 0.0 && p.1 > 0.0 && p.0.is_finite() && p.1.is_finite());
    let (mut x0, mut x1, mut y0) = (ridge / 100.0, ridge * 10.0, pi / 1e4);
    for p in finite {
        x0 = x0.min(p.0 / 2.0);
        x1 = x1.max(p.0 * 2.0);
        y0 = y0.min(p.1 / 2.0);
    }
    let y1 = pi * 2.0;
    let mut svg = String::new();
    {
        let mut legend: Vec<(&str, RGBColor)> =
            vec![(r.roof_names.0, NEUTRAL), (r.roof_names.1, WORSE)];
        legend.extend(r.classes.iter().copied());
        let height = 410 + legend_height(&legend);
        let root = SVGBackend::with_string(&mut svg, (WIDTH, height)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let body = header(&root, r.title, &legend)?;
        let mut chart = ChartBuilder::on(&body)
            .margin_right(24)
            .margin_left(8)
            .x_label_area_size(44)
            .y_label_area_size(80)
            .build_cartesian_2d((x0..x1).log_scale(), (y0..y1).log_scale())
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc("arithmetic intensity (FLOP per byte, derived from the model)")
            .y_desc("achieved TFLOP/s (derived)")
            .x_label_formatter(&|v: &f64| fmt_axis(*v))
            .y_label_formatter(&|v: &f64| fmt_axis(*v / 1e12))
            .axis_desc_style((FONT, 17))
            .label_style((FONT, LABEL_FONT))
            .light_line_style(TRANSPARENT)
            .draw()
            .map_err(err)?;
        chart
            .draw_series(LineSeries::new(
                [(x0, beta * x0), (ridge, pi)],
                NEUTRAL.stroke_width(2),
            ))
            .map_err(err)?;
        chart
            .draw_series(LineSeries::new(
                [(ridge, pi), (x1, pi)],
                WORSE.stroke_width(2),
            ))
            .map_err(err)?;
        chart
            .draw_series(
                r.points
                    .iter()
                    .filter(|p| p.0 > 0.0 && p.1 > 0.0)
                    .map(|&(x, y, c)| {
                        let color = r.classes.get(c).map_or(NEUTRAL, |k| k.1);
                        Circle::new((x, y), 4, color.filled())
                    }),
            )
            .map_err(err)?;
        finish(&root)?;
    }
    Ok(svg)
}

/// Axes for a chart of labelled horizontal rows (top row first): x over `x` with
/// [`Ticks`], one row per label, labels on the y axis at the rows' centres, no horizontal
/// grid. Both row charts share it.
fn row_axes<'a, 'b>(
    body: &'a DrawingArea<SVGBackend<'b>, Shift>,
    margin_right: u32,
    x: std::ops::Range<f64>,
    labels: &[String],
    label_px: u32,
    x_desc: &str,
) -> Result<ChartContext<'a, SVGBackend<'b>, Cartesian2d<TickAxis, TickAxis>>, String> {
    let n = labels.len();
    let ticks = Ticks::new(x.start, x.end, 8, false);
    let centres: Vec<f64> = (0..n).map(|i| i as f64 + 0.5).collect();
    let mut chart = ChartBuilder::on(body)
        .margin_right(margin_right)
        .margin_left(8)
        .x_label_area_size(42)
        .y_label_area_size(label_px)
        .build_cartesian_2d(
            TickAxis::new(x, ticks.values.clone()),
            TickAxis::new(0.0..n.max(1) as f64, centres),
        )
        .map_err(err)?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .y_label_formatter(&|v: &f64| row_label(labels, *v))
        .x_desc(x_desc)
        .x_label_formatter(&|v: &f64| ticks.label(*v))
        .axis_desc_style((FONT, 17))
        .label_style((FONT, LABEL_FONT))
        .light_line_style(TRANSPARENT)
        .draw()
        .map_err(err)?;
    Ok(chart)
}

/// The label of the horizontal-bar row drawn at `v` (a row's centre): row i (top row
/// first) sits at height n − 1 − i + 0.5.
fn row_label(labels: &[String], v: f64) -> String {
    let i = labels.len() as isize - 1 - v.floor() as isize;
    labels
        .get(usize::try_from(i).unwrap_or(usize::MAX))
        .cloned()
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quartiles_interpolate() {
        let f = Five::of(&[4.0, 1.0, 3.0, 2.0, 5.0]).unwrap();
        assert_eq!(
            (f.min, f.q1, f.median, f.q3, f.max),
            (1.0, 2.0, 3.0, 4.0, 5.0)
        );
        let g = Five::of(&[1.0, 2.0]).unwrap();
        assert_eq!((g.q1, g.median, g.q3), (1.25, 1.5, 1.75));
        assert!(Five::of(&[]).is_none());
    }

    #[test]
    fn bars_are_svg_with_text_and_rects() {
        let rows = vec![BarRow {
            label: "gemm".into(),
            segments: vec![Segment {
                from: 0.0,
                to: 10.0,
                color: PALETTE[0],
            }],
            note: Some("10 µs".into()),
        }];
        let svg = hbars("t", "µs per step", &rows, &[("busy", BUSY)], None).unwrap();
        assert!(svg.starts_with("<svg"));
        assert!(svg.contains("<rect"));
        assert!(svg.contains("\ngemm\n"));
        assert!(svg.contains("µs per step"));
    }

    #[test]
    fn a_long_legend_wraps_inside_the_chart() {
        let names: Vec<String> = (0..9)
            .map(|i| format!("category number {i} with a long name"))
            .collect();
        let legend: Vec<(&str, RGBColor)> = names
            .iter()
            .zip(distinct(9, &[]))
            .map(|(n, c)| (n.as_str(), c))
            .collect();
        let layout = legend_layout(&legend);
        let lines = layout.iter().map(|p| p.1).max().unwrap() + 1;
        assert!(lines >= 3, "{layout:?}");
        for ((name, _), (x, _)) in legend.iter().zip(&layout) {
            let right = x + 20 + (name.chars().count() as f64 * LABEL_CHAR_PX) as i32;
            assert!(right <= WIDTH as i32, "{name} ends at {right}");
        }
        assert_eq!(legend_height(&legend), (lines * LEGEND_LINE_PX + 4) as u32);
        assert_eq!(legend_height(&[]), 0);
    }

    #[test]
    fn run_axes_tick_whole_runs_with_their_labels_and_room_on_both_sides() {
        let labels: Vec<String> = (1..=5).map(|i| format!("r{i}")).collect();
        let p = Panel {
            title: "t",
            x_desc: "run",
            x_axis: XAxis::Labels(labels),
            y_desc: "µs",
            lines: vec![],
            band: vec![],
            band_name: "",
            points: vec![(1.0, 3.0, 0)],
            classes: vec![("run", NEUTRAL)],
        };
        let (range, ticks) = p.x_ticks();
        assert_eq!(range, (0.5, 5.5), "the first run is not on the y axis");
        let want: Vec<(f64, String)> = (1..=5).map(|i| (f64::from(i), format!("r{i}"))).collect();
        assert_eq!(ticks, want);
        // 400 runs cannot all be labelled: every k-th, still whole runs.
        let many: Vec<String> = (1..=400).map(|i| format!("run{i:04}")).collect();
        let p = Panel {
            x_axis: XAxis::Labels(many),
            ..p
        };
        let (_, ticks) = p.x_ticks();
        assert!(ticks.len() < 100 && ticks.len() > 5, "{}", ticks.len());
        assert!(ticks.iter().all(|t| t.0.fract() == 0.0));
        let svg = panel(&p).unwrap();
        assert!(svg.contains("run0001"));
    }
}
