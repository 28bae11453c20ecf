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

/// The generated vLLM V1 Kineto server (stepgate-synth steps) with or without its stall.
fn vllm_kineto(dir: &std::path::Path, scn: stepgate::synth::steps::Scenario) -> std::path::PathBuf {
    let p = dir.join(format!("{}.pt.trace.json.gz", scn.name()));
    stepgate::synth::steps::build(scn, stepgate::wire::synth::Format::Kineto, &p).unwrap();
    p
}

#[test]
fn a_long_stall_in_a_kineto_trace_with_stacks_names_its_innermost_python_frame() {
    use stepgate::synth::steps::Scenario as Steps;
    let dir = tempfile::tempdir().unwrap();
    let p = vllm_kineto(dir.path(), Steps::VllmV1PythonStall);
    let (rule, line, _) = verdict(&p, &[]);
    assert_eq!(rule, "one-long-stall", "{line}");
    // The generator opens `_prepare_inputs` inside `execute_model` (500 ns to open), idles
    // 60 ms in it and closes it (400 ns): the frame is 60,000,900 ns, and the shortest of
    // the frames that span the gap (execute_model and the worker loop are longer).
    let frame = "vllm/v1/worker/gpu_model_runner.py(1733): _prepare_inputs";
    let want = format!(
        "; the innermost Python frame over it: {frame} {} — ",
        us(60_000_900)
    );
    assert!(line.contains(&want), "{line}");
    // The same server without the stall: no frame is read or named.
    let q = vllm_kineto(dir.path(), Steps::VllmV1Python);
    let (_, line, _) = verdict(&q, &[]);
    assert!(!line.contains("Python frame"), "{line}");
}

#[test]
fn the_real_sglang_stall_names_the_copy_and_the_engine_line_that_made_it() {
    use std::io::Read;
    // The real SGLang MI300X decode (one step): the host sits 463 ms in a blocking copy.
    // Worked out here from the JSON alone: the longest gap between the merged GPU events,
    // then the shortest python_function of the step's thread over at least half of it, and
    // the shortest frame of SGLang's own files around it.
    let path = crate::common::fixture("kineto/sglang_mi300x_qwen3-8b_decode_step.json.gz");
    let mut text = String::new();
    flate2::read::GzDecoder::new(std::fs::File::open(&path).unwrap())
        .read_to_string(&mut text)
        .unwrap();
    let j: serde_json::Value = serde_json::from_str(&text).unwrap();
    let ns = |e: &serde_json::Value, k: &str| (e[k].as_f64().unwrap() * 1e3).round() as i64;
    let events = j["traceEvents"].as_array().unwrap();
    let gpu = crate::common::kineto_gpu_intervals(&j);
    let (mut end, mut gap, mut idle) = (gpu[0].1, (0, 0), 0);
    for &(s, e) in &gpu[1..] {
        if s > end {
            idle += s - end;
            if s - end > gap.1 - gap.0 {
                gap = (end, s);
            }
        }
        end = end.max(e);
    }
    let (len, wall) = (gap.1 - gap.0, end - gpu[0].0);
    let call = events
        .iter()
        .filter(|e| e["cat"] == "cuda_runtime")
        .max_by_key(|e| ns(e, "dur"))
        .unwrap();
    let over: Vec<(i64, &str)> = events
        .iter()
        .filter(|e| e["cat"] == "python_function" && e["tid"] == 251)
        .filter(|e| {
            let (s, d) = (ns(e, "ts"), ns(e, "dur"));
            2 * ((s + d).min(gap.1) - s.max(gap.0)) >= len
        })
        .map(|e| (ns(e, "dur"), e["name"].as_str().unwrap()))
        .collect();
    let inner = over.iter().min().unwrap();
    let program = over
        .iter()
        .filter(|(_, n)| n.contains(".py(") && !n.contains("/torch/") && !n.starts_with("torch/"))
        .min()
        .unwrap();
    assert!(inner.1.starts_with("<built-in method copy_"), "{inner:?}");
    assert!(program
        .1
        .ends_with("cuda_graph_runner.py(276): populate_from_forward_batch"));
    let (rule, line, _) = verdict(&path, &[]);
    assert_eq!(rule, "one-long-stall", "{line}");
    let want = format!(
        "one long stall: a {} gap is {} of the idle time and {} of wall (measured); the longest host call of its step: {} {}; the innermost Python frame over it: {} {}, called from {} — find what the host waits on there",
        us(len),
        pct(len as f64 / idle as f64),
        pct(len as f64 / wall as f64),
        call["name"].as_str().unwrap(),
        us(ns(call, "dur")),
        inner.1,
        us(inner.0),
        program.1
    );
    assert_eq!(line, want);
}
