//! Colours: the Okabe–Ito colour-blind-safe hues, the fixed colours of series that mean the
//! same on every chart (floor, gap, totals), and [`distinct`], which hands the other series
//! of one chart colours that differ from each other and from the fixed ones.

use plotters::style::RGBColor;

/// The Okabe–Ito hues, in the order series get them.
pub const PALETTE: [RGBColor; 7] = [
    RGBColor(0, 114, 178),   // blue
    RGBColor(230, 159, 0),   // orange
    RGBColor(0, 158, 115),   // bluish green
    RGBColor(204, 121, 167), // reddish purple
    RGBColor(86, 180, 233),  // sky blue
    RGBColor(213, 94, 0),    // vermillion
    RGBColor(240, 228, 66),  // yellow
];
/// Worse (slower) in a waterfall; the compute roof.
pub const WORSE: RGBColor = PALETTE[5];
/// Better (faster) in a waterfall.
pub const BETTER: RGBColor = PALETTE[2];
/// The roofline floor (derived) wherever it is drawn.
pub const FLOOR: RGBColor = PALETTE[5];
/// Busy time (union of the GPU's ops).
pub const BUSY: RGBColor = PALETTE[0];
/// Totals, walls and the host's launch time.
pub const NEUTRAL: RGBColor = RGBColor(64, 64, 64);
/// The rest folded into one series ("other categories").
pub const OTHER: RGBColor = RGBColor(150, 150, 150);
/// GPU idle inside a step.
pub const GAP: RGBColor = RGBColor(208, 208, 208);

/// `n` colours for the series of one chart, none equal to another or to a `reserved`
/// colour (the fixed series drawn beside them): the palette's hues first, then lighter
/// tints and darker shades of them, then greys. Only beyond some 290 series (no chart
/// draws that many) do colours repeat.
pub fn distinct(n: usize, reserved: &[RGBColor]) -> Vec<RGBColor> {
    let tint = |t: f64| {
        move |c: &RGBColor| {
            let mix = |x: u8| (f64::from(x) + (255.0 - f64::from(x)) * t).round() as u8;
            RGBColor(mix(c.0), mix(c.1), mix(c.2))
        }
    };
    let shade = |t: f64| {
        move |c: &RGBColor| {
            let mix = |x: u8| (f64::from(x) * (1.0 - t)).round() as u8;
            RGBColor(mix(c.0), mix(c.1), mix(c.2))
        }
    };
    let candidates = PALETTE
        .iter()
        .copied()
        .chain(PALETTE.iter().map(tint(0.5)))
        .chain(PALETTE.iter().map(shade(0.45)))
        .chain(PALETTE.iter().map(tint(0.25)))
        .chain(PALETTE.iter().map(shade(0.25)))
        .chain(PALETTE.iter().map(tint(0.7)))
        .chain((1..=254u8).map(|g| RGBColor(g, g, g)));
    let mut out: Vec<RGBColor> = Vec::with_capacity(n);
    for c in candidates {
        if out.len() == n {
            break;
        }
        if !reserved.contains(&c) && !out.contains(&c) {
            out.push(c);
        }
    }
    let unique = out.len().max(1);
    while out.len() < n {
        out.push(out.get(out.len() % unique).copied().unwrap_or(PALETTE[0]));
    }
    out
}

/// `#RRGGBB`, as the SVG writes it.
pub fn hex(c: RGBColor) -> String {
    format!("#{:02X}{:02X}{:02X}", c.0, c.1, c.2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn series_colours_differ_from_each_other_and_the_fixed_ones() {
        let fixed = [FLOOR, GAP, NEUTRAL, OTHER, BUSY];
        for n in [0, 1, 6, 7, 14, 40] {
            let c = distinct(n, &fixed);
            assert_eq!(c.len(), n);
            for (i, a) in c.iter().enumerate() {
                assert!(!fixed.contains(a), "{n}: {} is reserved", hex(*a));
                assert!(!c[..i].contains(a), "{n}: {} twice", hex(*a));
            }
        }
        // The steps chart: six categories beside the floor never take its vermillion.
        let cats = distinct(6, &[FLOOR, GAP, NEUTRAL, OTHER]);
        assert_eq!(cats[..5], PALETTE[..5]);
        assert_eq!(cats[5], PALETTE[6]);
    }

    #[test]
    fn fixed_colours_are_distinct() {
        let fixed = [BUSY, FLOOR, BETTER, NEUTRAL, OTHER, GAP];
        for (i, a) in fixed.iter().enumerate() {
            assert!(!fixed[..i].contains(a), "{}", hex(*a));
        }
        assert_eq!(hex(PALETTE[0]), "#0072B2");
    }
}
