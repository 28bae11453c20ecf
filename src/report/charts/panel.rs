//! The per-step panel (and trend's per-run chart): lines, a shaded band, classed points
//! and labelled markers against step index or run.

use plotters::prelude::*;

use super::{
    err, finish, header, legend_height, TickAxis, Ticks, FONT, GAP, LABEL_CHAR_PX, LABEL_FONT,
    NEUTRAL, WIDTH,
};

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

/// A labelled mark at one x of a panel (trend: a decision on record at its run): a dashed
/// vertical line through the plot with a triangle and a short label at its top, and a
/// tooltip (an SVG `<title>`, shown on hover without script) with the details.
pub struct Marker<'a> {
    pub x: f64,
    /// The few words by the triangle (`accepted`).
    pub label: &'a str,
    /// The legend entry of markers of this kind; one entry per distinct text.
    pub legend: &'a str,
    /// Who, when, why: any text, escaped here.
    pub tooltip: String,
    pub color: RGBColor,
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
    pub markers: Vec<Marker<'a>>,
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
    for m in &p.markers {
        if !legend.iter().any(|l| l.0 == m.legend) {
            legend.push((m.legend, m.color));
        }
    }
    let mut svg = String::new();
    // plotters has no `<title>` element, so the markers are written as SVG of their own,
    // at the pixel positions the chart maps their x to, after plotters is done.
    let mut marks = String::new();
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
        for m in &p.markers {
            let (x, top) = chart.backend_coord(&(m.x, y1));
            let (_, bottom) = chart.backend_coord(&(m.x, 0.0));
            marks.push_str(&marker_svg(m, x, top, bottom));
        }
        finish(&root)?;
    }
    if !marks.is_empty() {
        let end = svg
            .rfind("</svg>")
            .ok_or_else(|| err("no </svg> in the chart"))?;
        svg.insert_str(end, &marks);
    }
    Ok(svg)
}

/// One [`Marker`] as SVG: at pixel column `x`, from the plot's `top` to its `bottom`. A
/// maud template like the pages: the tooltip and label (a decision's author and reason)
/// are escaped by construction.
fn marker_svg(m: &Marker<'_>, x: i32, top: i32, bottom: i32) -> String {
    let color = super::palette::hex(m.color);
    // The label sits right of the triangle, or left of it near the chart's right edge.
    let (tx, anchor) = if x + 90 > WIDTH as i32 {
        (x - 9, "end")
    } else {
        (x + 9, "start")
    };
    let points = format!("{},{top} {},{top} {x},{}", x - 7, x + 7, top + 12);
    maud::html! {
        g.marker {
            title { (m.tooltip) }
            line x1=(x) y1=(top) x2=(x) y2=(bottom) stroke=(color) stroke-width="1.5"
                stroke-dasharray="5 4" {}
            polygon points=(points) fill=(color) {}
            text x=(tx) y=(top + 11) text-anchor=(anchor) font-family=(FONT)
                font-size=(f64::from(LABEL_FONT) * 0.8) fill="#000000" { (m.label) }
        }
        "\n"
    }
    .into_string()
}

#[cfg(test)]
mod tests {
    use super::*;

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
            markers: vec![],
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

    #[test]
    fn a_marker_is_drawn_at_its_x_with_its_tooltip_escaped() {
        let p = Panel {
            title: "t",
            x_desc: "run",
            x_axis: XAxis::Labels(vec!["a".into(), "b".into()]),
            y_desc: "µs",
            lines: vec![],
            band: vec![],
            band_name: "",
            points: vec![(1.0, 3.0, 0), (2.0, 4.0, 0)],
            classes: vec![("run", NEUTRAL)],
            markers: vec![Marker {
                x: 2.0,
                label: "accepted",
                legend: "accepted (decision on record)",
                tooltip: "by <script>x</script> & \"y\"".into(),
                color: GAP,
            }],
        };
        let svg = panel(&p).unwrap();
        assert_eq!(svg.matches("<g class=\"marker\">").count(), 1);
        assert!(
            svg.contains("<title>by &lt;script&gt;x&lt;/script&gt; &amp; &quot;y&quot;</title>")
        );
        assert!(!svg.contains("<script"));
        assert!(svg.contains(">accepted</text>"));
        assert!(
            svg.contains("accepted (decision on record)"),
            "the legend names it"
        );
        // Inside the SVG element, right of the first run's position.
        let at = svg.find("<g class=\"marker\">").unwrap();
        assert!(at < svg.rfind("</svg>").unwrap());
        let x: i32 = svg[at..]
            .split("x1=\"")
            .nth(1)
            .unwrap()
            .split('"')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        assert!(x > (WIDTH / 2) as i32 && x < WIDTH as i32, "{x}");
    }
}
