//! Charts for the HTML reports, drawn with plotters' SVG backend into strings that the page
//! inlines: no script and no network needed to see them. Every chart takes plain numbers
//! (already computed elsewhere) and only decides how they look.
//!
//! Text is SVG `<text>` (plotters without its font feature estimates text extents), so the
//! browser renders it with the page's sans-serif font.

use plotters::coord::Shift;
use plotters::prelude::*;

pub mod axis;
mod bars;
pub mod palette;
mod panel;
mod roofline;

pub use axis::{fmt_axis, TickAxis, Ticks};
pub use bars::{boxes, hbars, BarRow, Five, Segment};
pub use palette::{distinct, BETTER, BUSY, FLOOR, GAP, NEUTRAL, OTHER, PALETTE, WORSE};
pub use panel::{panel, Line, Marker, Panel, XAxis};
pub use roofline::{roofline, Roofline};

/// Chart width in px: fits a 1280 px window with the page's margins.
pub(crate) const WIDTH: u32 = 1100;

const FONT: &str = "sans-serif";
/// Font size of legend entries and tick labels (plotters units; the SVG says 0.8 of it).
const LABEL_FONT: u32 = 16;
/// A generous width per character of [`LABEL_FONT`] text in the browser's sans-serif, so
/// that a legend laid out with it is never wider than the chart.
const LABEL_CHAR_PX: f64 = 7.4;
/// Height of one legend line.
const LEGEND_LINE_PX: i32 = 22;

/// Cut a label for a chart axis (the page's table carries the full text).
pub(crate) fn short_label(s: &str, max: usize) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
