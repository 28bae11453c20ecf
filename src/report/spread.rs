//! Rendering of each class's time across a group's steps (p10 / median / p90, measured):
//! printed under the median step's class table, which shows one step only.

use super::fmt_us;
use super::table::{Align, Table};
use crate::wire::attribution::{GroupSpread, VARIES_OF_WALL, VARIES_RATIO};

/// "9,012.0 (series 0 step 3)".
fn at(t: &crate::wire::attribution::StepTime) -> String {
    format!(
        "{} (series {} step {})",
        fmt_us(t.ns as f64),
        t.series,
        t.index
    )
}

/// One row per class of the group.
pub fn table(g: &GroupSpread) -> Table {
    let mut t = Table::new(&[
        ("class", Align::Left),
        ("steps with it", Align::Right),
        ("p10 µs", Align::Right),
        ("median µs", Align::Right),
        ("p90 µs", Align::Right),
        ("least µs", Align::Left),
        ("most µs", Align::Left),
        ("varies", Align::Left),
    ]);
    for c in &g.classes {
        t.row(vec![
            c.class.as_str().to_owned(),
            c.steps_with.to_string(),
            fmt_us(c.p10_ns),
            fmt_us(c.p50_ns),
            fmt_us(c.p90_ns),
            at(&c.min),
            at(&c.max),
            if c.varies { "yes" } else { "" }.to_owned(),
        ]);
    }
    t
}

/// The heading of one group's table: what its numbers are and when a class "varies".
pub fn heading(g: &GroupSpread) -> String {
    format!(
        "per kernel class across the {} {} steps (measured, exclusive µs per step; varies: p90 ≥ {} × p10 and p90 − p10 ≥ {:.0}% of the median wall {}):",
        g.steps,
        g.group,
        VARIES_RATIO,
        VARIES_OF_WALL * 100.0,
        fmt_us(g.median_wall_ns) + " µs"
    )
}

/// Every group's table with its heading, through a [`Markup`](super::markup::Markup).
pub(crate) fn walk_groups<M: super::markup::Markup>(m: &mut M, groups: &[GroupSpread]) {
    for g in groups {
        m.heading(&heading(g));
        m.table(&table(g));
    }
}
