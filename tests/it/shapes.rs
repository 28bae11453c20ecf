//! The step shapes and next actions (`stepgate::attribution`), the tool's headline advice:
//! one hand-built step per shape whose numbers put it there, one on each side of every
//! boundary, and the residual split and launch attribution checked against arithmetic done
//! here by hand.

use stepgate::attribution::{
    attribute, attribute_all, AT_ROOF_FACTOR, DENSE_HOST_FRACTION, DOMINANT_FRACTION,
    GAPPY_FRACTION,
};
use stepgate::wire::attribution::{Bound, FloorInput, LaunchCost, Shape};
use stepgate::wire::steps::{FoundBy, HostCall, Step, StepKernel, StepKind};

/// The numbers a shape depends on; everything else in the step is neutral.
#[derive(Clone, Copy)]
struct S {
    wall_ns: i64,
    busy_ns: i64,
    launches: u64,
    launch_host_ns: i64,
    /// Exclusive time of the step's top kernel.
    top_ns: i64,
}

/// Build a step from the numbers that matter. A field added to `Step` is a one-line fix
/// here.
fn step(s: S) -> Step {
    Step {
        index: 0,
        series: 0,
        pid: 1,
        tid: Some(1),
        device: Some(0),
        name: "execute_context_0(0)_generation_32(32)".to_owned(),
        domain: None,
        kind: StepKind::Decode,
        kind_guess: None,
        kind_evidence: None,
        batch_guess: None,
        batch_evidence: None,
        tokens_guess: None,
        tokens_evidence: None,
        found_by: FoundBy::Marker,
        composition: None,
        cpu_start_ns: Some(0),
        cpu_end_ns: Some(s.wall_ns),
        cpu_ns: Some(s.wall_ns),
        gpu_start_ns: Some(0),
        gpu_end_ns: Some(s.wall_ns),
        wall_ns: Some(s.wall_ns),
        period_ns: None,
        idle_before_ns: None,
        busy_ns: s.busy_ns,
        tail_busy_ns: 0,
        tail_kernels: 0,
        tail_ops: 0,
        gap_ns: Some(s.wall_ns - s.busy_ns),
        kernels: 2,
        ops: 2,
        graph_replays: 0,
        launches: s.launches,
        launch_host_ns: s.launch_host_ns,
        exposed_comm_ns: None,
        longest_host_call: None,
        annotation_gpu_start_ns: None,
        annotation_gpu_end_ns: None,
        top_kernels: vec![
            kernel("top_kernel", s.top_ns),
            kernel("rest", s.busy_ns - s.top_ns),
        ],
        categories: Vec::new(),
        attribution: None,
        all_kernels: Vec::new(),
    }
}

fn kernel(name: &str, exclusive_ns: i64) -> StepKernel {
    StepKernel {
        name: name.into(),
        short_name: name.into(),
        category: "other".into(),
        instances: 1,
        total_ns: exclusive_ns,
        exclusive_ns,
    }
}

fn floor(floor_ns: f64) -> FloorInput {
    FloorInput {
        floor_ns,
        total_bytes: 1e9,
        flops: 1e9,
        bound: Bound::Memory,
    }
}

fn cost() -> LaunchCost {
    LaunchCost {
        per_launch_ns: 2_000.0,
        source: "test".to_owned(),
    }
}

/// A dense step (no gap) with no dominant kernel: the roof decides.
fn dense(busy_ns: i64) -> S {
    S {
        wall_ns: busy_ns,
        busy_ns,
        launches: 10,
        launch_host_ns: 0,
        top_ns: busy_ns / 4,
    }
}

fn shape_of(s: S, f: Option<f64>) -> Shape {
    attribute(&step(s), f.map(floor).as_ref(), &cost()).shape
}

#[test]
fn thresholds_are_the_documented_ones() {
    // README and docs/method.md state these; a change must be a deliberate one.
    assert_eq!(GAPPY_FRACTION, 0.20);
    assert_eq!(DENSE_HOST_FRACTION, 0.5);
    assert_eq!(DOMINANT_FRACTION, 0.5);
    assert_eq!(AT_ROOF_FACTOR, 1.3);
}

#[test]
fn launch_bound_gappy_with_a_dense_host_lane() {
    // gap 50 µs of 100 µs wall (50%), host launch time 30 µs ≥ half the gap.
    let s = S {
        wall_ns: 100_000,
        busy_ns: 50_000,
        launches: 15,
        launch_host_ns: 30_000,
        top_ns: 10_000,
    };
    let a = attribute(&step(s), Some(&floor(40_000.0)), &cost());
    assert_eq!(a.shape, Shape::LaunchBound);
    assert!(a.action.starts_with("gap is 50% of wall"), "{}", a.action);
    assert!(a.action.contains("CUDA graphs"), "{}", a.action);
}

#[test]
fn launch_bound_boundary_host_time_exactly_half_the_gap() {
    // gap 50,000 ns: host 25,000 is exactly half (≥ → launch-bound), 24,999 is not.
    let at = S {
        wall_ns: 100_000,
        busy_ns: 50_000,
        launches: 5,
        launch_host_ns: 25_000,
        top_ns: 10_000,
    };
    assert_eq!(shape_of(at, None), Shape::LaunchBound);
    let below = S {
        launch_host_ns: 24_999,
        ..at
    };
    assert_eq!(shape_of(below, None), Shape::HostStall);
}

#[test]
fn host_stall_names_the_longest_host_call() {
    let mut st = step(S {
        wall_ns: 1_000_000,
        busy_ns: 100_000,
        launches: 12,
        launch_host_ns: 30_000,
        top_ns: 20_000,
    });
    st.longest_host_call = Some(HostCall {
        name: "cudaStreamSynchronize".to_owned(),
        start_ns: 10,
        dur_ns: 812_345,
    });
    let a = attribute(&st, None, &cost());
    assert_eq!(a.shape, Shape::HostStall);
    // gap 900 µs of 1000 µs = 90%; the call's 812,345 ns printed as µs to one decimal.
    assert!(a.action.starts_with("gap is 90% of wall"), "{}", a.action);
    assert!(
        a.action
            .ends_with("(longest host call: cudaStreamSynchronize 812.3 µs)"),
        "{}",
        a.action
    );
}

#[test]
fn gappy_boundary_is_strictly_above_twenty_percent() {
    // gap exactly 20% of wall is not gappy: with a dominant-free dense lane and a floor
    // the roof decides; one nanosecond more gap is gappy (and the host lane is dense).
    let at = S {
        wall_ns: 100_000,
        busy_ns: 80_000,
        launches: 10,
        launch_host_ns: 80_000,
        top_ns: 20_000,
    };
    assert_eq!(shape_of(at, Some(70_000.0)), Shape::AtMemoryRoof);
    let over = S {
        busy_ns: 79_999,
        ..at
    };
    assert_eq!(shape_of(over, Some(70_000.0)), Shape::LaunchBound);
}

#[test]
fn one_kernel_dominant_and_its_boundary() {
    let s = S {
        wall_ns: 100_000,
        busy_ns: 100_000,
        launches: 3,
        launch_host_ns: 0,
        top_ns: 62_000,
    };
    let a = attribute(&step(s), Some(&floor(90_000.0)), &cost());
    assert_eq!(a.shape, Shape::OneKernelDominant);
    assert_eq!(
        a.action,
        "top_kernel is 62% of busy time: take it to Nsight Compute"
    );
    // Exactly half of busy is not dominant (strictly more than half is).
    let half = S {
        top_ns: 50_000,
        ..s
    };
    assert_eq!(shape_of(half, Some(90_000.0)), Shape::AtMemoryRoof);
    let just_over = S {
        top_ns: 50_001,
        ..s
    };
    assert_eq!(
        shape_of(just_over, Some(90_000.0)),
        Shape::OneKernelDominant
    );
}

#[test]
fn at_the_memory_roof_and_its_boundary() {
    // floor 80,000 ns: 1.3 × 80,000 = 104,000 ns is the last busy time at the roof.
    assert_eq!(shape_of(dense(90_000), Some(80_000.0)), Shape::AtMemoryRoof);
    assert_eq!(
        shape_of(dense(104_000), Some(80_000.0)),
        Shape::AtMemoryRoof
    );
    assert_eq!(
        shape_of(dense(104_001), Some(80_000.0)),
        Shape::UnderUtilized
    );
    let a = attribute(&step(dense(90_000)), Some(&floor(80_000.0)), &cost());
    assert!(a.action.contains("only fewer bytes help"), "{}", a.action);
}

#[test]
fn under_utilized_reports_busy_over_floor() {
    let a = attribute(&step(dense(250_000)), Some(&floor(100_000.0)), &cost());
    assert_eq!(a.shape, Shape::UnderUtilized);
    assert!(
        a.action.contains("busy time is 2.5x the floor"),
        "{}",
        a.action
    );
}

#[test]
fn without_a_floor_a_dense_step_is_undetermined() {
    let a = attribute(&step(dense(250_000)), None, &cost());
    assert_eq!(a.shape, Shape::Undetermined);
    assert!(a.floor.is_none());
    assert!(a.action.contains("--model and --gpu"), "{}", a.action);
}

#[test]
fn below_floor_and_its_boundary() {
    // Wall 100 µs against a 120 µs floor: the byte model is wrong.
    let a = attribute(&step(dense(100_000)), Some(&floor(120_000.0)), &cost());
    assert_eq!(a.shape, Shape::BelowFloor);
    let f = a.floor.expect("floor attribution");
    assert!(f.below_floor);
    assert!(a.action.contains("fix the floor first"), "{}", a.action);
    // Wall equal to the floor is not below it (and is at the roof).
    let eq = attribute(&step(dense(100_000)), Some(&floor(100_000.0)), &cost());
    assert_eq!(eq.shape, Shape::AtMemoryRoof);
    assert!(!eq.floor.expect("floor").below_floor);
    // Below the floor, a floor-free shape still wins but carries the warning.
    let gappy = S {
        wall_ns: 100_000,
        busy_ns: 40_000,
        launches: 10,
        launch_host_ns: 40_000,
        top_ns: 10_000,
    };
    let g = attribute(&step(gappy), Some(&floor(150_000.0)), &cost());
    assert_eq!(g.shape, Shape::LaunchBound);
    assert!(
        g.action.contains("; and measured below its floor"),
        "{}",
        g.action
    );
}

#[test]
fn a_step_without_gpu_work_has_no_shape_to_judge() {
    let mut st = step(dense(10_000));
    st.wall_ns = None;
    st.gap_ns = None;
    let a = attribute(&st, Some(&floor(5_000.0)), &cost());
    assert_eq!(a.shape, Shape::NoGpuWork);
    assert!(a.floor.is_none());
}

#[test]
fn residual_splits_into_gap_and_kernel_excess() {
    // wall 100 µs, busy 70 µs (gap 30 µs), floor 50 µs moving 1 GB:
    // residual = 100 − 50 = 50 µs = gap 30 + kernel excess (70 − 50) 20.
    let s = S {
        wall_ns: 100_000,
        busy_ns: 70_000,
        launches: 10,
        launch_host_ns: 12_000,
        top_ns: 20_000,
    };
    let a = attribute(&step(s), Some(&floor(50_000.0)), &cost());
    let f = a.floor.expect("floor attribution");
    assert_eq!(f.residual_ns, 50_000.0);
    assert_eq!(f.gap_ns, 30_000.0);
    assert_eq!(f.kernel_excess_ns, 20_000.0);
    assert_eq!(f.gap_ns + f.kernel_excess_ns, f.residual_ns);
    assert_eq!(f.mbu, 0.5);
    // 1e9 bytes in 70 µs of busy time.
    assert!((f.achieved_bytes_per_s - 1e9 / 70e-6).abs() < 1.0);
    assert!(!f.below_floor);
    assert_eq!(f.bound, Bound::Memory);
    // 30% gap, host 12 µs < half of 30 µs: a host stall, not launch-bound.
    assert_eq!(a.shape, Shape::HostStall);
}

#[test]
fn launch_attribution_against_the_per_launch_cost() {
    // 10 launches × 2 µs = 20 µs driver floor; 30 µs measured host → 10 µs framework;
    // host / gap = 30 / 60.
    let s = S {
        wall_ns: 100_000,
        busy_ns: 40_000,
        launches: 10,
        launch_host_ns: 30_000,
        top_ns: 10_000,
    };
    let l = attribute(&step(s), None, &cost()).launch;
    assert_eq!(l.launches, 10);
    assert_eq!(l.host_ns, 30_000);
    assert_eq!(l.driver_floor_ns, 20_000.0);
    assert_eq!(l.framework_ns, 10_000.0);
    assert_eq!(l.host_to_gap_ratio, Some(0.5));
    // No gap: the ratio is undefined, not infinite.
    let l0 = attribute(&step(dense(50_000)), None, &cost()).launch;
    assert_eq!(l0.host_to_gap_ratio, None);
}

/// Two steps whose dominant kernels are distinct kernels sharing the short name `gemm`:
/// each action names its own by the label that tells them apart, not the bare short name.
#[test]
fn dominant_kernel_actions_tell_apart_kernels_that_share_a_short_name() {
    let dominant = |full: &str| {
        let mut st = step(dense(100_000));
        st.top_kernels[0] = StepKernel {
            name: full.into(),
            short_name: "gemm".into(),
            exclusive_ns: 80_000,
            total_ns: 80_000,
            ..kernel("x", 0)
        };
        st
    };
    let steps = [
        dominant("void gemm<float, 128>(float*, float const*)"),
        dominant("void gemm<__half, 128>(__half*, __half const*)"),
    ];
    let a = attribute_all(
        &steps,
        &|_| None,
        &cost(),
        stepgate::attribution::NSIGHT_COMPUTE,
    );
    assert!(a.steps.iter().all(|x| x.shape == Shape::OneKernelDominant));
    assert!(
        a.steps[0]
            .action
            .starts_with("gemm<float> is 80% of busy time"),
        "{}",
        a.steps[0].action
    );
    assert!(
        a.steps[1]
            .action
            .starts_with("gemm<__half> is 80% of busy time"),
        "{}",
        a.steps[1].action
    );
    // Alone, a step's kernel needs no telling apart: the short name it is.
    let one = attribute(&steps[0], None, &cost());
    assert!(one.action.starts_with("gemm is 80%"), "{}", one.action);
}
