//! Charts of labelled horizontal rows: bars made of segments (stacked bars, rankings,
//! waterfalls) and box plots, on one axis layout.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::{err, finish, header, legend_height, TickAxis, Ticks, FONT, LABEL_FONT, WIDTH};

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
    use crate::report::charts::{BUSY, PALETTE};

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
}
