//! The roofline plot: steps at their arithmetic intensity and achieved FLOP/s under the
//! GPU's memory and compute roofs, on log-log axes.

use plotters::prelude::*;

use super::{
    err, finish, fmt_axis, header, legend_height, FONT, LABEL_FONT, NEUTRAL, WIDTH, WORSE,
};

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
