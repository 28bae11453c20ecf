//! The run verdict's rules (docs/verdict-rules.md), each on a generated capture where it
//! must fire with its words and numbers and one where it must not. Every expected number
//! is worked out here from the planted schedule, not read from the tool's output.

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
fn many_gaps(n: usize, kernels: usize, gap_ns: i64, mode: LaunchMode) -> Scenario {
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
fn a_collective_that_waits_in_some_steps_is_named_with_its_spread() {
    let dir = tempfile::tempdir().unwrap();
    let n = 8;
    let scn = planted::scenario(Cause::StragglingAllReduce, n);
    let p = build(dir.path(), "straggler", &scn);
    let j: Value =
        serde_json::from_str(&steps(&p, &["--model", "llama-3-70b", "--tp", "4"], "json")).unwrap();
    // 4 ranks × 8 steps, factors 1, 3, 5, 7 twice per rank: sorted, 8 values of each.
    let mut v: Vec<f64> = (0..4).flat_map(|_| (0..n).map(straggler_comm_ns)).collect();
    v.sort_by(f64::total_cmp);
    assert_eq!(v.len(), 32);
    // Linear interpolation at q × (len − 1): p10 at 3.1 (both 1×), p50 at 15.5 (between
    // 3× and 5×), p90 at 27.9 (both 7×).
    let (p10, p50, p90) = (1_280_000.0, 5_120_000.0, 8_960_000.0);
    assert_eq!((v[3], v[4]), (p10, p10));
    assert_eq!((v[15] + v[16]) / 2.0, p50);
    assert_eq!((v[27], v[28]), (p90, p90));

    let groups = j["class_spread"].as_array().unwrap();
    assert_eq!(groups.len(), 1, "{groups:?}");
    assert_eq!(groups[0]["group"], "decode");
    assert_eq!(groups[0]["steps"], 32);
    let comm = groups[0]["classes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["class"] == "communication")
        .unwrap();
    assert_eq!(comm["steps_with"], 32);
    assert_eq!(comm["p10_ns"].as_f64().unwrap(), p10);
    assert_eq!(comm["p50_ns"].as_f64().unwrap(), p50);
    assert_eq!(comm["p90_ns"].as_f64().unwrap(), p90);
    assert_eq!(comm["varies"], true);
    // The first step of the least (factor 1: step 0) and of the most (factor 7: step 3).
    assert_eq!(comm["min"]["index"], 0);
    assert_eq!(comm["min"]["ns"].as_f64().unwrap(), p10);
    assert_eq!(comm["max"]["index"], 3);
    assert_eq!(comm["max"]["ns"].as_f64().unwrap(), p90);
    // The other classes run the same every step: none varies.
    for c in groups[0]["classes"].as_array().unwrap() {
        if c["class"] != "communication" {
            assert_eq!(c["varies"], false, "{c}");
            assert_eq!(c["p10_ns"], c["p90_ns"], "{c}");
        }
    }

    let (rule, line, _) = verdict(&p, &["--model", "llama-3-70b", "--tp", "4"]);
    assert_eq!(rule, "class-varies", "{line}");
    assert!(
        line.contains("communication takes 1.3 ms–9.0 ms per step (p10–p90, measured) across 32 decode steps, median 5.1 ms"),
        "{line}"
    );
    assert!(line.contains("most 9.0 ms in series 0 step 3"), "{line}");
    assert!(line.contains("wait on other ranks"), "{line}");
    // The text report prints the spread table under the class table.
    for format in ["table", "markdown"] {
        let text = steps(&p, &["--model", "llama-3-70b", "--tp", "4"], format);
        assert!(
            text.contains("per kernel class across the 32 decode steps"),
            "{format}: {text}"
        );
        let row = text
            .lines()
            .rfind(|l| l.contains("communication") && l.contains("8,960.0"))
            .unwrap_or_else(|| panic!("{format}: {text}"));
        assert!(row.contains("1,280.0") && row.contains("5,120.0"), "{row}");
    }
}

#[test]
fn collectives_that_take_the_same_every_step_do_not_vary() {
    let dir = tempfile::tempdir().unwrap();
    let p = build(dir.path(), "tp4", &planted::scenario(Cause::Tp4, 6));
    let j: Value =
        serde_json::from_str(&steps(&p, &["--model", "llama-3-70b", "--tp", "4"], "json")).unwrap();
    let g = &j["class_spread"][0];
    assert_eq!(g["steps"], 24);
    for c in g["classes"].as_array().unwrap() {
        assert_eq!(c["varies"], false, "{c}");
    }
    let (rule, line, _) = verdict(&p, &["--model", "llama-3-70b", "--tp", "4"]);
    assert_ne!(rule, "class-varies", "{line}");
    // The link the communication class is priced against is printed with its citation:
    // NVLink 4 through NVSwitch, 900 GB/s bidirectional per GPU, 450 GB/s each way.
    let text = steps(&p, &["--model", "llama-3-70b", "--tp", "4"], "table");
    let roof = text
        .lines()
        .find(|l| l.starts_with("communication roof: "))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        roof.starts_with("communication roof: 450.0 GB/s (derived: "),
        "{roof}"
    );
    assert!(roof.contains("cited: NVLink 4 through NVSwitch"), "{roof}");
}

#[test]
fn fewer_than_five_like_steps_have_no_spread() {
    let dir = tempfile::tempdir().unwrap();
    // One rank's worth is not what the planted scenario writes (4 ranks), so use 1 step:
    // 4 steps in the group, one short of the minimum.
    let p = build(
        dir.path(),
        "few",
        &planted::scenario(Cause::StragglingAllReduce, 1),
    );
    let j: Value =
        serde_json::from_str(&steps(&p, &["--model", "llama-3-70b", "--tp", "4"], "json")).unwrap();
    assert!(j.get("class_spread").is_none(), "{}", j["class_spread"]);
    let (rule, line, _) = verdict(&p, &["--model", "llama-3-70b", "--tp", "4"]);
    assert_ne!(rule, "class-varies", "{line}");
}

/// Nanoseconds to move `bytes` at `fraction` of the H100's 3.35 TB/s, as the planted
/// schedule rounds them.
fn h100_ns(bytes: f64, fraction: f64) -> f64 {
    (bytes / (3.35e12 * fraction) * 1e9).round()
}

#[test]
fn a_split_k_gemm_is_folded_into_its_gemm_and_the_gemms_are_ranked_by_excess() {
    let dir = tempfile::tempdir().unwrap();
    let p = build(
        dir.path(),
        "splitk",
        &planted::scenario(Cause::SplitKGemms, 12),
    );
    let j: Value = serde_json::from_str(&steps(&p, &["--model", "llama-3-8b"], "json")).unwrap();
    let map = &j["groups"][0]["layers"];
    // Folded, the layer has qkv, o, gate_up and down again (4 GEMMs, not 5).
    assert!(map["ambiguous"].is_null(), "{map}");
    let gemms = map["gemms"].as_array().unwrap();
    let role = |r: &str| gemms.iter().find(|g| g["role"] == r).unwrap();
    // Llama-3-8B at TP 1, bf16: qkv 4096 × (32 + 2·8) × 128 × 2 B = 50,331,648 B, o
    // 32 × 128 × 4096 × 2 = 33,554,432 B, gate_up 4096 × 2 × 14336 × 2 = 234,881,024 B.
    let (qkv_b, o_b, gu_b) = (50_331_648.0, 33_554_432.0, 234_881_024.0);
    let floor = |b: f64| b / 3.35e12 * 1e9;
    let qkv = role("qkv");
    // The split GEMM at 70% of β plus its 3 µs reduction.
    let qkv_ns = h100_ns(qkv_b, 0.7) + 3_000.0;
    assert!(qkv["kernel"]
        .as_str()
        .unwrap()
        .starts_with("sm90_xmma_gemm"));
    assert!(qkv["split_k_reduction"]
        .as_str()
        .unwrap()
        .contains("splitKreduce_kernel"));
    assert!(
        (qkv["time_ns"].as_f64().unwrap() - qkv_ns).abs() < 0.5,
        "{qkv}"
    );
    let qkv_excess = qkv_ns - floor(qkv_b);
    assert!((qkv["excess_ns"].as_f64().unwrap() - qkv_excess).abs() < 0.5);
    assert!((qkv["roof_fraction"].as_f64().unwrap() - floor(qkv_b) / qkv_ns).abs() < 1e-9);
    assert_eq!(qkv["launches_per_step"], 32);
    let o_excess = h100_ns(o_b, 0.5) - floor(o_b);
    assert!((role("o")["excess_ns"].as_f64().unwrap() - o_excess).abs() < 0.5);
    assert!(role("o")["split_k_reduction"].is_null());
    assert_eq!(role("lm_head")["launches_per_step"], 1);
    // By time gate_up leads (77.9 µs a layer); by excess per step o (32 × 10.0 µs) and
    // qkv (32 × 9.4 µs) do, and the run line names them in that order.
    let gu_ns = h100_ns(gu_b, 0.9);
    assert!(gu_ns > qkv_ns && gu_ns > h100_ns(o_b, 0.5));
    let (rule, line, held) = verdict(&p, &["--model", "llama-3-8b"]);
    assert_eq!(rule, "gemms-below-roof");
    let us = |ns: f64| format!("{:.1} µs", ns / 1e3);
    let total = 32.0 * (o_excess + qkv_excess);
    assert!(
        line.starts_with(&format!(
            "but GEMMs below 80% of β hold {} per step of the median decode step",
            us(total.round())
        )),
        "{line}"
    );
    let o_at = line.find("(o) ").unwrap();
    let qkv_at = line.find("(qkv) with its split-K reduction").unwrap();
    assert!(o_at < qkv_at, "{line}");
    assert!(line.contains(&format!(
        "(o) {} per step (32 × {}) at 50% of β",
        us((32.0 * o_excess).round()),
        us(o_excess.round())
    )));
    assert!(line.contains("try its shape without split-K"), "{line}");
    assert!(!line.contains("gate_up"), "{line}");
    assert!(held.is_empty());
    // The text table ranks them the same way: o, then qkv with its reduction.
    let text = steps(&p, &["--model", "llama-3-8b"], "table");
    let rows: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("layer GEMM"))
        .skip(2)
        .take(2)
        .collect();
    assert!(rows[0].starts_with("o "), "{text}");
    assert!(rows[1].starts_with("qkv ") && rows[1].contains("+ cublasLt::splitKreduce"));
}

#[test]
fn gemms_at_the_roof_are_not_named_below_it() {
    let dir = tempfile::tempdir().unwrap();
    // Every GEMM at 97% of β: nothing below the roof to name.
    let p = build(
        dir.path(),
        "roof",
        &planted::scenario(Cause::GemmsAtRoof, 12),
    );
    let (rule, line, _) = verdict(&p, &["--model", "llama-3-8b"]);
    assert_ne!(rule, "gemms-below-roof", "{line}");
    assert!(!line.contains("GEMMs below"), "{line}");
    let j: Value = serde_json::from_str(&steps(&p, &["--model", "llama-3-8b"], "json")).unwrap();
    let gemms = j["groups"][0]["layers"]["gemms"].as_array().unwrap();
    assert_eq!(gemms.len(), 5);
    assert!(gemms.iter().all(|g| g["split_k_reduction"].is_null()));
}

/// The attention class's action in the first group of a `steps --format json` run.
fn attention_action(path: &Path, extra: &[&str]) -> String {
    let j: Value = serde_json::from_str(&steps(path, extra, "json")).unwrap();
    j["groups"][0]["classes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["class"] == "attention")
        .and_then(|c| c["action"].as_str())
        .unwrap()
        .to_owned()
}

#[test]
fn the_attention_advice_is_the_grid_of_the_family_that_runs() {
    // The real SGLang MI300X decode runs ROCm's ll4mi paged attention, whose launcher
    // sets grid(num_seqs, max_num_partitions, num_kv_heads) with 256-key partitions:
    // Qwen3-8B has 8 KV heads, the step says B = 32.
    let real = crate::common::fixture("kineto/sglang_mi300x_qwen3-8b_decode_step.json.gz");
    let a = attention_action(&real, &["--model", "qwen3-8b"]);
    assert!(
        a.contains("(ll4mi, 256-key partitions cited from vLLM's launcher: B × ⌈mean context/256⌉ × KV heads/GPU = 32 × "),
        "{a}"
    );
    assert!(a.contains(" × 8, derived = "), "{a}");
    assert!(!a.contains("FA2"), "{a}");
    // The planted small-batch decode runs FlashAttention 3 (a persistent scheduler):
    // no B × heads reading, and no "under-filled" at B = 4 × 32 heads = 128 < 132 SMs.
    let dir = tempfile::tempdir().unwrap();
    let p = build(
        dir.path(),
        "fa3",
        &planted::scenario(Cause::SlowAttentionSmallBatch, 6),
    );
    let a = attention_action(&p, &["--model", "llama-3-8b"]);
    assert!(
        a.starts_with("attention at 50% of β (FA3): its persistent scheduler"),
        "{a}"
    );
    assert!(
        !a.contains("under-filled") && !a.contains("B × heads"),
        "{a}"
    );
    // vLLM's paged attention v2, grid(num_heads, num_seqs, ⌈context/512⌉): the median
    // step (index 4) has B = 8 at 1,010 keys (unmarked: the context is the flag's), so
    // 32 × 8 × 2 = 512 blocks fill the H100's 132 SMs.
    let p = build(dir.path(), "v2", &planted::scenario(Cause::BatchInGrid, 6));
    let a = attention_action(&p, &["--model", "llama-3-8b", "--context", "1010"]);
    assert!(
        a.contains("(vLLM paged v2, 512-key partitions cited from its launcher: heads/GPU × B × ⌈mean context/512⌉ = 32 × 8 × 2, derived = 512 blocks) fills the 132 SMs"),
        "{a}"
    );
}

#[test]
fn an_amd_trace_is_advised_hip_graphs_never_cuda_graphs() {
    // The real SGLang MI300X decode (ROCm: its device is an AMD Instinct MI300X).
    let real = crate::common::fixture("kineto/sglang_mi300x_qwen3-8b_decode_step.json.gz");
    let text = steps(&real, &["--model", "qwen3-8b"], "table");
    assert!(text.contains("keep them inside HIP graphs"), "{text}");
    assert!(!text.contains("CUDA graphs"), "{text}");
    // An NVIDIA capture keeps CUDA's word.
    let dir = tempfile::tempdir().unwrap();
    let p = build(
        dir.path(),
        "nv",
        &planted::scenario(Cause::SlowAttentionSmallBatch, 6),
    );
    let text = steps(&p, &["--model", "llama-3-8b"], "table");
    assert!(text.contains("keep them inside CUDA graphs"), "{text}");
    assert!(!text.contains("HIP graphs"));
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
