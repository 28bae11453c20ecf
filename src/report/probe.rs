//! Rendering a launch-probe result: which figure is measured, which derived, which cited.

use crate::report::table::{Align, Table};
use crate::report::{to_json, Format};
use crate::wire::probe::ProbeReport;

/// Nanoseconds as microseconds with three decimals (launch costs are a few µs).
fn us3(ns: f64) -> String {
    format!("{:.3} µs", ns / 1e3)
}

/// The result as one table: quantity, value, source.
pub fn table(r: &ProbeReport) -> Table {
    let mut t = Table::new(&[
        ("quantity", Align::Left),
        ("value", Align::Right),
        ("source", Align::Left),
    ]);
    let e = &r.end_to_end_per_launch_ns;
    let g = &r.graph;
    let iters = crate::report::fmt_int(r.iters_per_burst as i64);
    let rows: Vec<[String; 3]> = vec![
        [
            "device".into(),
            r.device_name.clone(),
            format!(
                "sm {} · driver {} · CUDA {}",
                r.compute_capability,
                r.driver_version.as_deref().unwrap_or("unknown"),
                r.cuda_version
            ),
        ],
        [
            format!("end-to-end per launch (min of {})", r.repeats),
            us3(e.min),
            format!("measured: {iters} null-kernel launches per synchronized burst"),
        ],
        [
            format!("end-to-end per launch (median of {})", r.repeats),
            us3(e.median),
            "measured".into(),
        ],
        [
            "host submit only, per launch".into(),
            us3(r.submit_only_per_launch_ns),
            format!("measured: {iters} launches timed before the synchronize"),
        ],
        [
            format!("CUDA graph of {} null kernels, per launch", g.nodes),
            us3(g.per_graph_launch_ns),
            format!(
                "measured: min of {} bursts of {} graph launches",
                r.repeats, g.launches_per_burst
            ),
        ],
        [
            "per graph node".into(),
            us3(g.per_node_ns),
            format!("derived: graph launch / {} nodes", g.nodes),
        ],
        [
            "driver-only cudaLaunchKernel".into(),
            us3(r.cited_driver_only_ns),
            format!("cited: {}", r.cited_source),
        ],
    ];
    for row in rows {
        t.row(row.to_vec());
    }
    t
}

/// Render in the requested format.
pub fn render(r: &ProbeReport, format: Format) -> String {
    match format {
        Format::Json => to_json(r),
        Format::Table => {
            let mut s = format!(
                "launch-probe: {} (device {})\n\n",
                r.device_name, r.device_ordinal
            );
            s.push_str(&table(r).to_text());
            s.push_str(&format!(
                "\nFeed it to steps: stepgate launch-probe --format json -o launch.json, then \
                 steps --launch-cost launch.json (uses the min end-to-end figure, {}).\n",
                us3(r.end_to_end_per_launch_ns.min)
            ));
            s
        }
        Format::Markdown => table(r).to_markdown(),
        Format::Csv => table(r).to_csv(),
    }
}
