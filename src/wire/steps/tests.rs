//! Test helpers other modules build steps and reports with, and the `method` word test.

use super::{method, FoundBy, Step, StepKind, StepsReport};
use crate::wire::attribution::{LaunchAttribution, Shape, StepAttribution};

#[test]
fn method_serializes_to_the_strings_reports_always_carried() {
    // The strings `method` had while it was a String, then an enum of its own: the
    // JSON must not change, and a found_by word that is not a method word is refused.
    let cases = [
        (FoundBy::Marker, "engine"),
        (FoundBy::Scheduler, "scheduler"),
        (FoundBy::Python, "python"),
        (FoundBy::Recurring, "recurring"),
        (FoundBy::Sync, "sync"),
        (FoundBy::Regex, "regex"),
        (FoundBy::Graphs, "graphs"),
        (FoundBy::Gaps, "gaps"),
    ];
    #[derive(serde::Serialize, serde::Deserialize)]
    struct M(#[serde(with = "method")] FoundBy);
    for (m, s) in cases {
        assert_eq!(serde_json::to_string(&M(m)).unwrap(), format!("\"{s}\""));
        assert_eq!(m.method_str(), s);
        assert_eq!(serde_json::from_str::<M>(&format!("\"{s}\"")).unwrap().0, m);
    }
    let e = serde_json::from_str::<M>("\"marker\"").err().unwrap();
    assert!(
        e.to_string()
            .starts_with("unknown variant `marker`, expected one of `engine`"),
        "{e}"
    );
    // Every way of finding steps has one method row.
    let rows: Vec<FoundBy> = method::METHODS.iter().map(|m| m.0).collect();
    for (f, _) in cases {
        assert_eq!(rows.iter().filter(|r| **r == f).count(), 1, "{f:?}");
    }
    assert_eq!(rows.len(), cases.len());
}

/// A decode step of wall 10 ns, busy 10, no gap (for tests elsewhere in the crate).
pub(crate) fn step(index: usize, launches: u64) -> Step {
    Step {
        index,
        series: 0,
        pid: 1,
        tid: Some(1),
        device: Some(0),
        name: format!("s{index}"),
        domain: None,
        found_by: FoundBy::Marker,
        kind: StepKind::Decode,
        kind_guess: None,
        kind_evidence: None,
        batch_guess: None,
        batch_evidence: None,
        tokens_guess: None,
        tokens_evidence: None,
        composition: None,
        cpu_start_ns: None,
        cpu_end_ns: None,
        cpu_ns: None,
        gpu_start_ns: Some(0),
        gpu_end_ns: Some(10),
        wall_ns: Some(10),
        period_ns: None,
        idle_before_ns: None,
        busy_ns: 10,
        gap_ns: Some(0),
        kernels: 1,
        ops: 1,
        tail_busy_ns: 0,
        tail_kernels: 0,
        tail_ops: 0,
        graph_replays: 0,
        launches,
        launch_host_ns: 0,
        exposed_comm_ns: None,
        longest_host_call: None,
        annotation_gpu_start_ns: None,
        annotation_gpu_end_ns: None,
        top_kernels: Vec::new(),
        categories: Vec::new(),
        attribution: None,
        all_kernels: Vec::new(),
    }
}

/// An attribution without a floor (for tests elsewhere in the crate).
pub(crate) fn attribution(launches: u64, shape: Shape) -> StepAttribution {
    StepAttribution {
        floor: None,
        launch: LaunchAttribution {
            launches,
            host_ns: 0,
            driver_floor_ns: 0.0,
            framework_ns: 0.0,
            host_to_gap_ratio: None,
        },
        shape,
        action: String::new(),
        classes: Vec::new(),
        waterfall: None,
        plausible_with: Vec::new(),
        measured_dram_of_peak: None,
    }
}

/// A report of `steps` with every other field empty (for tests elsewhere in the crate).
pub(crate) fn report(steps: Vec<Step>) -> StepsReport {
    StepsReport {
        schema_version: super::SCHEMA_VERSION,
        tool: None,
        source: None,
        method: FoundBy::Marker,
        found_by: FoundBy::Marker,
        exact_steps_hint: None,
        found_by_engine: None,
        launch_cost: None,
        shapes: Vec::new(),
        notes: Vec::new(),
        warnings: Vec::new(),
        series: Vec::new(),
        outside_steps: Vec::new(),
        steps_without_gpu_work: 0,
        summary: Vec::new(),
        ranks: Vec::new(),
        operating_point: None,
        groups: Vec::new(),
        class_spread: Vec::new(),
        median_step: None,
        medians: None,
        verdict: None,
        tally: super::StepTally::default(),
        steps,
    }
}
