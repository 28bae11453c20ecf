//! The run verdict's idle rules (docs/verdict-rules.md) on generated captures where the
//! host stalls inside a step: one long stall once, or one sync in every step. Every gap
//! and share is worked out here from the generator's schedule (kernels 10 µs, 500 ns
//! apart; a launch call 4 µs, 1 µs after the last; 3 µs from a call's end to its kernel).

use stepgate::synth::workload::{self, HostStall, KernelSpec, LaunchMode, Scenario, StepSpec};
use stepgate::synth::Layout;

use crate::verdict_rules::{build, verdict, ELEMENTWISE};

const KERNELS: usize = 20;
const KERNEL_NS: i64 = 10_000;
const KERNEL_GAP_NS: i64 = 500;
/// From the GPU draining to the next kernel: the sync's return, the launch gap (1 µs),
/// the launch call (4 µs) and its latency (3 µs), past the stall itself.
const AFTER_STALL_NS: i64 = 1_000 + 4_000 + 3_000;

/// 6 decode steps of 20 kernels; `stall(i)` is step i's host stall after its 10th launch.
fn stalls(stall: impl Fn(usize) -> Option<i64>) -> Scenario {
    let name = workload::vllm_execute_detailed(1, [0; 5], [1, 1, 1024, 1, 1024]);
    let steps = (0..6)
        .map(|i| {
            let mut s = StepSpec::new(
                Some(&name),
                LaunchMode::Eager,
                vec![KernelSpec::new(ELEMENTWISE, KERNEL_NS); KERNELS],
            );
            // The GPU drains between steps, so each step's first kernel waits on its launch.
            s.host_gap_before_ns = 500_000;
            s.host_stall = stall(i).map(|ns| HostStall { after_group: 9, ns });
            s
        })
        .collect();
    let mut scn = Scenario::new(Layout::Nsys2026_2, 1, steps);
    scn.kernel_gap_ns = KERNEL_GAP_NS;
    scn
}

fn us(ns: i64) -> String {
    format!("{:.1} µs", ns as f64 / 1e3)
}

fn pct(x: f64) -> String {
    format!("{:.0}%", x * 100.0)
}

#[test]
fn one_long_stall_is_named_with_its_gap_and_host_call() {
    let dir = tempfile::tempdir().unwrap();
    let stall = 5_000_000;
    let p = build(dir.path(), "stall", &stalls(|i| (i == 3).then_some(stall)));
    let (rule, line, held) = verdict(&p, &[]);
    assert_eq!(rule, "one-long-stall", "{line}");
    let gap = stall + AFTER_STALL_NS;
    let plain = (KERNELS as i64 - 1) * KERNEL_GAP_NS;
    let idle = 5 * plain + (plain - KERNEL_GAP_NS) + gap;
    let wall = 6 * KERNELS as i64 * KERNEL_NS + idle;
    // The sync starts after the host's 10th launch (range open 200 ns, a launch every
    // 5 µs) and returns `stall` after the 10th kernel ends (first kernel at 7.2 µs, one
    // every 10.5 µs).
    let sync = (7_200 + 9 * 10_500 + KERNEL_NS) + stall - (200 + 10 * 5_000);
    assert_eq!(sync, 5_061_500);
    let want = format!(
        "one long stall: a {} gap is {} of the idle time and {} of wall (measured); the longest host call of its step: cudaStreamSynchronize {} — find what the host waits on there",
        us(gap),
        pct(gap as f64 / idle as f64),
        pct(gap as f64 / wall as f64),
        us(sync)
    );
    assert_eq!(line, want);
    assert_eq!(
        (pct(gap as f64 / idle as f64), pct(gap as f64 / wall as f64)),
        ("99%".to_owned(), "80%".to_owned())
    );
    assert!(held.is_empty(), "{held:?}");
}

#[test]
fn a_sync_in_every_step_is_not_one_long_stall() {
    let dir = tempfile::tempdir().unwrap();
    let stall = 1_000_000;
    let p = build(dir.path(), "sync", &stalls(|_| Some(stall)));
    let (rule, line, _) = verdict(&p, &[]);
    // Each stall is a sixth of the idle time: no one gap holds half of it, but in every
    // step one gap holds most of that step's idle.
    assert_eq!(rule, "host-sync-per-step", "{line}");
    let plain = (KERNELS as i64 - 1) * KERNEL_GAP_NS;
    let step_idle = plain - KERNEL_GAP_NS + stall + AFTER_STALL_NS;
    let wall = 6 * (KERNELS as i64 * KERNEL_NS + step_idle);
    assert_eq!(
        line,
        format!(
            "a host sync each step: in all 6 steps one gap holds more than half of the step's idle time ({} of wall idle, measured) — look for a .item(), .cpu() or synchronize between the step's launches",
            pct((6 * step_idle) as f64 / wall as f64)
        )
    );
    assert!(!line.contains("one long stall"), "{line}");
}

#[test]
fn back_to_back_steps_have_no_idle_rule() {
    let dir = tempfile::tempdir().unwrap();
    let p = build(dir.path(), "dense", &stalls(|_| None));
    let (rule, line, _) = verdict(&p, &[]);
    // 19 gaps of 500 ns in 200 µs of kernels: 5% idle, under the 20% every idle rule needs.
    for idle_rule in [
        "one-long-stall",
        "host-sync-per-step",
        "gappy",
        "dispatch-bound",
    ] {
        assert_ne!(rule, idle_rule, "{line}");
    }
}
