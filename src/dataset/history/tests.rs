//! Unit tests of the history's grouping and selection.
use super::*;
use crate::wire::baseline::metric;

fn step(run: usize, index: i64, wall: f64) -> StepRow {
    StepRow {
        run,
        index,
        kind: std::sync::Arc::from("decode"),
        batch: Some(8),
        sample: Metrics::builtin().sample_from_columns(
            |c| match c {
                "wall_ns" => Some(wall),
                "busy_ns" => Some(wall - 10.0),
                "gap_ns" => Some(10.0),
                "launches" => Some(1.0),
                _ => None,
            },
            None,
        ),
        ..StepRow::default()
    }
}

fn kern(run: usize, index: i64, name: u32, ns: f64) -> StepKernelRow {
    StepKernelRow {
        run,
        series: 0,
        index,
        name,
        exclusive_ns: ns,
        instances: 1.0,
    }
}

fn names() -> Vec<KernelName> {
    ["a", "b"]
        .iter()
        .map(|n| KernelName {
            name: (*n).into(),
            short_name: (*n).into(),
            category: "gemm".into(),
        })
        .collect()
}

#[test]
fn pooled_steps_and_run_medians() {
    // Run 0: walls 100, 110, 300; run 1: walls 200, 210. Kernel "a" in run 0 step 0
    // (5 ns) and run 1 step 1 (7 ns); "b" only in run 1 step 0 (3 ns).
    let steps = vec![
        step(0, 0, 100.0),
        step(0, 1, 110.0),
        step(0, 2, 300.0),
        step(1, 0, 200.0),
        step(1, 1, 210.0),
    ];
    let ks = vec![kern(0, 0, 0, 5.0), kern(1, 1, 0, 7.0), kern(1, 0, 1, 3.0)];
    let g = groups_of(&steps, &ks, &names(), &Metrics::builtin());
    assert_eq!(g.len(), 1);
    assert_eq!(
        g[0].metrics[metric::WALL_NS],
        vec![100.0, 110.0, 300.0, 200.0, 210.0]
    );
    assert_eq!(
        g[0].kernels["a"].exclusive_ns,
        vec![5.0, 0.0, 0.0, 0.0, 7.0]
    );
    assert_eq!(
        g[0].kernels["b"].exclusive_ns,
        vec![0.0, 0.0, 0.0, 3.0, 0.0]
    );
    assert_eq!(g[0].categories["gemm"], vec![5.0, 0.0, 0.0, 3.0, 7.0]);

    let r = run_medians(&steps, &ks, &names(), 2, &Metrics::builtin());
    // Medians: run 0 walls → 110; run 1 → 205. Kernel a: run 0 (5,0,0) → 0; run 1
    // (0,7) → 3.5. Kernel b: absent from run 0 → 0; run 1 (3,0) → 1.5.
    assert_eq!(r[0].metrics[metric::WALL_NS], vec![110.0, 205.0]);
    assert_eq!(r[0].kernels["a"].exclusive_ns, vec![0.0, 3.5]);
    assert_eq!(r[0].kernels["b"].exclusive_ns, vec![0.0, 1.5]);
    assert_eq!(r[0].steps(), 2);
}
