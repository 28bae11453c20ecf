//! Unit tests of the trend: step-ups against noise, the newest decision on a run, metric names.

use super::*;
use crate::wire::decision::Outcome;

fn pt(m: f64) -> Point {
    Point {
        run_id: String::new(),
        exported_at_ns: 0,
        exported_at: String::new(),
        labels: BTreeMap::new(),
        steps: 1,
        median: m,
        p10: m,
        p90: m,
        change: None,
        decision: None,
    }
}

#[test]
fn a_step_up_is_marked_and_noise_is_not() {
    // 3% / 20 µs thresholds; medians in ns.
    let t = Threshold {
        rel: 0.03,
        abs: 20_000.0,
        gate: true,
    };
    let mut p: Vec<Point> = [
        1_000_000.0,
        1_010_000.0,
        990_000.0,
        1_200_000.0,
        1_205_000.0,
    ]
    .into_iter()
    .map(pt)
    .collect();
    mark_changes(&mut p, 3, t);
    let marked: Vec<usize> = p
        .iter()
        .enumerate()
        .filter_map(|(i, x)| x.change.as_ref().map(|_| i))
        .collect();
    // Run 3: reference median(1.0, 1.01, 0.99 ms) = 1.0 ms, +20% → marked. Run 4:
    // reference median(1.01, 0.99, 1.2 ms) = 1.01 ms, +19.3% → marked too (the window
    // still holds mostly old runs).
    assert_eq!(marked, vec![3, 4]);
    let c = p[3].change.as_ref().unwrap();
    assert_eq!(c.reference, 1_000_000.0);
    assert_eq!(c.direction, "up");
    assert!((c.relative.unwrap() - 0.2).abs() < 1e-12);
}

fn decision(run: Option<&str>, at_ns: i64, outcome: Outcome, reason: &str) -> Decision {
    Decision {
        schema_version: crate::wire::decision::SCHEMA_VERSION,
        outcome,
        by: "alice".into(),
        at: crate::dataset::dates::fmt_time(at_ns),
        at_ns,
        commit: None,
        reason: reason.into(),
        comparison_sha256: String::new(),
        run_id: run.map(str::to_owned),
        report_sha256: None,
        verdict: "regression".into(),
        covers: vec![],
        metrics: None,
        tool: crate::wire::meta::Tool::current(),
    }
}

#[test]
fn the_newest_decision_on_a_run_marks_it_and_others_are_left_out() {
    let mut points: Vec<Point> = ["r1", "r2", "r3"]
        .into_iter()
        .map(|id| Point {
            run_id: id.into(),
            ..pt(1.0)
        })
        .collect();
    // Oldest first, as `decisions::read` returns them.
    let ds = vec![
        decision(Some("r2"), 1, Outcome::Accepted, "first thought"),
        decision(Some("gone"), 2, Outcome::Accepted, "a run not selected"),
        decision(None, 3, Outcome::Rejected, "names no run"),
        decision(Some("r2"), 4, Outcome::Rejected, "second thought"),
    ];
    mark_decisions(&mut points, &decisions_by_run(&ds));
    assert!(points[0].decision.is_none() && points[2].decision.is_none());
    let d = points[1].decision.as_ref().unwrap();
    assert_eq!(d.outcome, Outcome::Rejected);
    assert_eq!(d.reason, "second thought");
    assert_eq!(d.by, "alice");
}

#[test]
fn metrics_parse() {
    assert_eq!(Metric::parse("wall_ns").unwrap(), Metric::Step("wall_ns"));
    assert_eq!(
        Metric::parse("kernel:fused_moe").unwrap(),
        Metric::Kernel("fused_moe".into())
    );
    assert!(Metric::parse("kernel:").is_err());
    assert!(Metric::parse("latency").is_err());
}

/// Every step metric of the gate's table is a trend metric, named and unitised by its row;
/// a wrong name's error lists them. The units are the docs' (docs/dataset.md: MBU and the
/// gap share are fractions, launches a count), not read from the code.
#[test]
fn every_gated_step_metric_is_a_trend_metric() {
    let expected = [
        ("wall_ns", "ns"),
        ("period_ns", "ns"),
        ("busy_ns", "ns"),
        ("gap_ns", "ns"),
        ("gap_fraction", "fraction"),
        ("launches", "count"),
        ("exposed_comm_ns", "ns"),
        ("mbu", "fraction"),
    ];
    let table = crate::baseline::metrics::Metrics::builtin();
    assert_eq!(table.rows().len(), expected.len());
    for (name, unit) in expected {
        let m = Metric::parse(name).unwrap();
        assert_eq!(m.name(), name);
        assert_eq!(m.unit(), unit, "{name}");
    }
    let e = Metric::parse("latency").unwrap_err().message;
    for (name, _) in expected {
        assert!(e.contains(name), "{e}");
    }
}
