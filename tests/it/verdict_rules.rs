//! The run verdict's rules (docs/verdict-rules.md), each on a generated capture where it
//! must fire with its words and numbers and one where it must not. Every expected number
//! is worked out here from the planted schedule, not read from the tool's output.

mod kernels;

use std::path::{Path, PathBuf};

use serde_json::Value;
use stepgate::synth::planted::{self, Cause};
use stepgate::synth::workload::{self, KernelSpec, LaunchMode, Scenario, StepSpec};
use stepgate::synth::Layout;

use crate::common::run;

pub(crate) const ELEMENTWISE: &str = "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<c10::BFloat16>, std::array<char*, 1ul> >(int, at::native::FillFunctor<c10::BFloat16>, std::array<char*, 1ul>)";

pub(crate) fn build(dir: &Path, name: &str, scn: &Scenario) -> PathBuf {
    let p = dir.join(format!("{name}.sqlite"));
    workload::build(scn, &p).unwrap();
    p
}

pub(crate) fn steps(path: &Path, extra: &[&str], format: &str) -> String {
    let mut a = vec!["steps", path.to_str().unwrap()];
    a.extend_from_slice(extra);
    a.extend_from_slice(&["--format", format]);
    // The diagnosis these tests read is behind --detail in text (the answer comes first).
    if format == "table" {
        a.push("--detail");
    }
    let (code, out, err) = run(&a);
    assert_eq!(code, 0, "{a:?}: {err}");
    out
}

pub(crate) fn verdict(path: &Path, extra: &[&str]) -> (String, String, Vec<String>) {
    let j: Value = serde_json::from_str(&steps(path, extra, "json")).unwrap();
    let v = &j["verdict"];
    let held = v["held_back"]
        .as_array()
        .map(|a| a.iter().map(|x| x.as_str().unwrap().to_owned()).collect())
        .unwrap_or_default();
    (
        v["rule"].as_str().unwrap().to_owned(),
        v["line"].as_str().unwrap().to_owned(),
        held,
    )
}

/// `n` decode steps (vLLM markers) of `kernels` 10 µs kernels `gap_ns` apart.
pub(crate) fn many_gaps(n: usize, kernels: usize, gap_ns: i64, mode: LaunchMode) -> Scenario {
    // One decode request at 1,024 keys, so the steps have a floor.
    let name = workload::vllm_execute_detailed(1, [0; 5], [1, 1, 1024, 1, 1024]);
    let steps = (0..n)
        .map(|_| {
            StepSpec::new(
                Some(&name),
                mode,
                vec![KernelSpec::new(ELEMENTWISE, 10_000); kernels],
            )
        })
        .collect();
    let mut scn = Scenario::new(Layout::Nsys2026_2, 1, steps);
    scn.kernel_gap_ns = gap_ns;
    scn
}

#[test]
fn many_short_gaps_are_dispatch_not_a_synchronize() {
    let dir = tempfile::tempdir().unwrap();
    // 3 steps of 300 kernels of 10 µs, 60 µs apart: 299 gaps a step, 897 in all; each
    // step's wall is 300 × 10 + 299 × 60 = 20,940 µs of which 17,940 µs idle: 85.7%.
    let p = build(
        dir.path(),
        "eager",
        &many_gaps(3, 300, 60_000, LaunchMode::Eager),
    );
    let (rule, line, held) = verdict(&p, &[]);
    assert_eq!(rule, "dispatch-bound");
    assert_eq!(
        line,
        "the host cannot keep up with dispatch: 897 gaps between kernels over 3 steps, median 60.0 µs, 86% of wall (measured) — capture the step in CUDA graphs or use torch.compile"
    );
    assert!(held.is_empty());
    assert!(!line.contains("synchronize"));
    let text = steps(&p, &[], "table");
    assert!(
        text.contains("the host cannot keep up with dispatch"),
        "{text}"
    );
}

#[test]
fn dispatch_gaps_under_cuda_graphs_do_not_recommend_cuda_graphs() {
    let dir = tempfile::tempdir().unwrap();
    let p = build(
        dir.path(),
        "graphs",
        &many_gaps(3, 300, 60_000, LaunchMode::GraphNode),
    );
    let (rule, line, held) = verdict(&p, &[]);
    assert_eq!(rule, "dispatch-bound");
    // One graph launch per step: 3 replays.
    assert!(
        line.contains("CUDA graphs already run (3 replays)"),
        "{line}"
    );
    assert!(!line.contains("capture the step in CUDA graphs"), "{line}");
    assert_eq!(held, ["CUDA graphs (already replayed in the trace)"]);
}

#[test]
fn a_few_long_gaps_are_not_dispatch() {
    let dir = tempfile::tempdir().unwrap();
    // 3 kernels 5 ms apart: 2 gaps a step, too few to be dispatch, and two equal gaps are
    // not one sync per step either.
    let p = build(
        dir.path(),
        "few",
        &many_gaps(3, 3, 5_000_000, LaunchMode::Eager),
    );
    let (rule, line, _) = verdict(&p, &[]);
    assert_eq!(rule, "gappy", "{line}");
    assert!(!line.contains("dispatch"), "{line}");
}

/// Llama-3-8B's GEMMs stream every linear weight and lm_head: 7,504,924,672 streamed
/// parameters minus the 266,240 norm weights, at 2 bytes; over the H100 SXM's 3.35 TB/s.
pub(crate) const LLAMA_8B_GEMM_BYTES: f64 = ((7_504_924_672u64 - 266_240) * 2) as f64;
pub(crate) const H100: f64 = 3.35e12;

/// 3 decode steps (B = 1, s = 1,024) where one GEMM streams all of Llama-3-8B's weights
/// at `of_roof` of β, beside 50 µs of attention, a 5 µs KV write and a 20 µs norm.
fn one_gemm(of_roof: f64) -> (Scenario, i64) {
    let gemm_ns = (LLAMA_8B_GEMM_BYTES / H100 * 1e9 / of_roof).round() as i64;
    let name = workload::vllm_execute_detailed(1, [0; 5], [1, 1, 1024, 1, 1024]);
    let ks = vec![
        KernelSpec::new(planted::GEMM_QKV, gemm_ns),
        KernelSpec::new(planted::ATTENTION, 50_000),
        KernelSpec::new(planted::KV_WRITE, 5_000),
        KernelSpec::new(planted::NORM, 20_000),
    ];
    let steps = (0..3)
        .map(|_| StepSpec::new(Some(&name), LaunchMode::Eager, ks.clone()))
        .collect();
    (Scenario::new(Layout::Nsys2026_2, 1, steps), gemm_ns)
}

#[test]
fn a_dominant_kernel_at_the_roof_is_not_sent_to_nsight_compute() {
    let dir = tempfile::tempdir().unwrap();
    let (scn, gemm) = one_gemm(0.9);
    let p = build(dir.path(), "roof", &scn);
    let (rule, line, held) = verdict(&p, &["--model", "llama-3-8b"]);
    assert_eq!(rule, "one-kernel-at-roof");
    let share = gemm as f64 / (gemm + 75_000) as f64;
    assert_eq!(format!("{:.0}", share * 100.0), "99");
    assert!(
        line.ends_with(
            " is 99% of busy time over 3 steps (measured) and its class runs at 90% of its roof (derived): at the roof — only fewer bytes help (quantize, or batch more per step)"
        ),
        "{line}"
    );
    assert!(line.starts_with("nvjet_tst_64x16"), "{line}");
    assert!(!line.contains("Nsight Compute"));
    assert_eq!(held.len(), 1);
    assert!(
        held[0].starts_with("Nsight Compute for nvjet_tst_64x16"),
        "{held:?}"
    );
    // No step's own action sends it there either.
    let j: Value = serde_json::from_str(&steps(&p, &["--model", "llama-3-8b"], "json")).unwrap();
    for s in j["steps"].as_array().unwrap() {
        let a = s["attribution"]["action"].as_str().unwrap();
        assert!(!a.contains("Nsight Compute"), "{a}");
        assert!(
            a.contains("weight GEMMs run at 90% of their roof (derived): at the roof"),
            "{a}"
        );
    }
}

#[test]
fn a_dominant_kernel_below_the_roof_goes_to_nsight_compute() {
    let dir = tempfile::tempdir().unwrap();
    let (scn, _) = one_gemm(0.4);
    let p = build(dir.path(), "slow", &scn);
    let (rule, line, held) = verdict(&p, &["--model", "llama-3-8b"]);
    assert_eq!(rule, "one-kernel-dominant");
    assert!(
        line.ends_with(
            " over 3 steps (measured), its class runs at 40% of its roof (derived): take it to Nsight Compute"
        ),
        "{line}"
    );
    assert!(held.is_empty());
}

/// 4 steps, each with one 1 ms GEMM and a 20 µs norm: the same GEMM in every step, or a
/// different one in each.
fn dominated(same: bool) -> Scenario {
    let gemms = [
        planted::GEMM_QKV,
        planted::GEMM_O,
        planted::GEMM_GATE_UP,
        planted::GEMM_DOWN,
    ];
    let name = workload::vllm_execute(0, 0, 1, 1);
    let steps = (0..4)
        .map(|i| {
            let g = if same { gemms[0] } else { gemms[i] };
            StepSpec::new(
                Some(&name),
                LaunchMode::Eager,
                vec![
                    KernelSpec::new(g, 1_000_000),
                    KernelSpec::new(planted::NORM, 20_000),
                ],
            )
        })
        .collect();
    Scenario::new(Layout::Nsys2026_2, 1, steps)
}

#[test]
fn the_run_line_names_the_runs_top_kernel_not_the_median_steps() {
    let dir = tempfile::tempdir().unwrap();
    let p = build(dir.path(), "mixed", &dominated(false));
    let (rule, line, _) = verdict(&p, &[]);
    assert_eq!(rule, "median-step");
    // Each GEMM is 1,000 of the run's 4 × 1,020 µs busy: 24.5%, printed 25%.
    assert!(
        line.starts_with(
            "single kernels dominate single steps, but no kernel is more than half of the run's busy time: the run's top kernel nvjet_tst_128x16"
        ),
        "{line}"
    );
    assert!(
        line.ends_with(" is 25% of it over 4 steps (measured)"),
        "{line}"
    );
    assert!(!line.contains("Nsight Compute"));
}

#[test]
fn a_kernel_dominant_over_the_whole_run_is_named_with_its_run_share() {
    let dir = tempfile::tempdir().unwrap();
    let p = build(dir.path(), "same", &dominated(true));
    let (rule, line, _) = verdict(&p, &[]);
    assert_eq!(rule, "one-kernel-dominant");
    // 1,000 of 1,020 µs in every step: 98%.
    assert!(line.starts_with("nvjet_tst_64x16"), "{line}");
    assert!(
        line.ends_with(" is 98% of busy time over 4 steps (measured): take it to Nsight Compute"),
        "{line}"
    );
}

#[test]
fn a_mostly_idle_step_leads_with_idle_and_prints_floor_over_busy() {
    let dir = tempfile::tempdir().unwrap();
    let p = build(
        dir.path(),
        "idle",
        &many_gaps(3, 300, 60_000, LaunchMode::Eager),
    );
    let text = steps(&p, &["--model", "llama-3-8b"], "table");
    let floor = text
        .lines()
        .find(|l| l.starts_with("floor (derived per step"))
        .unwrap_or_else(|| panic!("{text}"));
    // 17,940 of 20,940 µs idle: 85.7% of the wall.
    assert!(
        floor.contains("the GPU is idle 85.7% of the median step's wall (measured), so MBU measures the host, not the kernels; median MBU (floor/wall, derived)"),
        "{floor}"
    );
    assert!(floor.contains("floor/busy (derived)"), "{floor}");
    // The run line (the idle cause) comes before the floor line.
    let run_at = text.find("run: ").unwrap();
    assert!(run_at < text.find("floor (derived per step").unwrap());
}

#[test]
fn a_busy_step_prints_mbu_and_floor_over_busy_without_the_idle_lead() {
    let dir = tempfile::tempdir().unwrap();
    let (scn, gemm) = one_gemm(0.9);
    let p = build(dir.path(), "busy", &scn);
    let text = steps(&p, &["--model", "llama-3-8b"], "table");
    let floor = text
        .lines()
        .find(|l| l.starts_with("floor (derived per step"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(!floor.contains("MBU measures the host"), "{floor}");
    // floor/busy: the step floor over its busy time, ≥ the weights' 90% (the other
    // classes add floor and time alike); printed in whole percent.
    assert!(floor.contains("floor/busy (derived)"), "{floor}");
    let _ = gemm;
}

fn comm_actions(j: &Value) -> Vec<String> {
    j["steps"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|s| {
            s["attribution"]["classes"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .filter(|c| c["class"] == "communication")
        .filter_map(|c| c["action"].as_str().map(str::to_owned))
        .collect()
}

#[test]
fn a_running_custom_all_reduce_is_not_recommended() {
    let dir = tempfile::tempdir().unwrap();
    let scn = planted::scenario(Cause::Tp4, 3);
    let p = build(dir.path(), "tp4", &scn);
    let j: Value =
        serde_json::from_str(&steps(&p, &["--model", "llama-3-70b", "--tp", "4"], "json")).unwrap();
    let acts = comm_actions(&j);
    assert!(!acts.is_empty());
    for a in &acts {
        assert!(!a.contains("one-shot custom all-reduce"), "{a}");
    }
    // The same capture with NCCL's all-reduce in place of vLLM's: now it is advice.
    let mut nccl = scn;
    for st in &mut nccl.steps {
        for k in &mut st.kernels {
            if k.name.contains("cross_device_reduce") {
                k.name =
                    "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
                        .to_owned();
            }
        }
    }
    let p = build(dir.path(), "nccl", &nccl);
    let j: Value =
        serde_json::from_str(&steps(&p, &["--model", "llama-3-70b", "--tp", "4"], "json")).unwrap();
    let acts = comm_actions(&j);
    assert!(
        acts.iter()
            .any(|a| a.contains("one-shot custom all-reduce")),
        "{acts:?}"
    );
}

/// Every all-reduce of the planted straggler's step `i`, summed over the step, in ns:
/// Llama-3-70B has 80 layers and two all-reduces per layer, each 8 µs × the step's factor.
fn straggler_comm_ns(i: usize) -> f64 {
    (80 * 2 * 8_000 * planted::straggler_factor(i)) as f64
}

#[test]
fn the_steps_page_draws_the_class_spread_too() {
    let dir = tempfile::tempdir().unwrap();
    let p = build(
        dir.path(),
        "straggler",
        &planted::scenario(Cause::StragglingAllReduce, 8),
    );
    let html = dir.path().join("steps.html");
    let (code, _, err) = run(&[
        "steps",
        p.to_str().unwrap(),
        "--model",
        "llama-3-70b",
        "--tp",
        "4",
        "--html",
        html.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let page = std::fs::read_to_string(&html).unwrap();
    let at = page
        .find("<h2>Kernel classes across like steps</h2>")
        .unwrap();
    let section = &page[at..];
    let row = section
        .split("<tr>")
        .find(|r| r.contains("communication"))
        .unwrap();
    // The same p10 / p90 as the JSON: 1.28 and 8.96 ms per step (worked out above from
    // the straggler schedule), and the class varies.
    assert!(row.contains("1,280.0") && row.contains("8,960.0"), "{row}");
    assert!(row.contains(">yes<"), "{row}");
}
