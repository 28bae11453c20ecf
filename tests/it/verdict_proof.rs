//! The run verdict's proof (the one number each rule rests on) and its ranked actions, as
//! the JSON states them: every expected number worked out here from the planted schedule
//! or from the capture's own events, not read from the tool.

use std::io::Read;

use serde_json::Value;
use stepgate::synth::planted::{self, Cause};
use stepgate::synth::workload::{self, LaunchMode};

use crate::verdict_excess::{slow_attention_excess_ns, slow_gemms, KV_BYTES_PER_TOKEN};
use crate::verdict_rules::{build, many_gaps, steps, H100, LLAMA_8B_GEMM_BYTES};

fn report(p: &std::path::Path, extra: &[&str]) -> Value {
    serde_json::from_str(&steps(p, extra, "json")).unwrap()
}

fn close(a: &Value, want: f64, tol: f64) {
    let got = a.as_f64().unwrap_or_else(|| panic!("not a number: {a}"));
    assert!((got - want).abs() <= tol, "{got} vs {want}");
}

/// The ranked actions: largest win first, no wording twice.
fn assert_ranked(ranked: &[Value]) {
    let wins: Vec<i64> = ranked
        .iter()
        .map(|r| r["win_ns"].as_i64().unwrap())
        .collect();
    assert!(wins.windows(2).all(|w| w[0] >= w[1]), "{wins:?}");
    let mut actions: Vec<&str> = ranked
        .iter()
        .map(|r| r["action"].as_str().unwrap())
        .collect();
    actions.sort_unstable();
    let n = actions.len();
    actions.dedup();
    assert_eq!(actions.len(), n, "an action twice");
}

#[test]
fn dispatch_is_proved_by_the_idle_time_and_its_share_of_wall() {
    let dir = tempfile::tempdir().unwrap();
    // 3 steps of 300 kernels of 10 µs, 60 µs apart: 897 gaps, 53,820 µs idle of a
    // 3 × 20,940 µs wall.
    let p = build(
        dir.path(),
        "eager",
        &many_gaps(3, 300, 60_000, LaunchMode::Eager),
    );
    let v = &report(&p, &[])["verdict"];
    assert_eq!(v["rule"], "dispatch-bound");
    let proof = &v["proof"];
    assert_eq!(proof["unit"], "ns");
    assert_eq!(proof["basis"], "measured");
    close(&proof["value"], 897.0 * 60_000.0, 0.0);
    assert_eq!(proof["share"]["of"], "wall");
    close(&proof["share"]["fraction"], 17_940.0 / 20_940.0, 1e-12);
    let text = steps(&p, &[], "table");
    assert!(
        text.contains("proof: 53,820.0 µs (85.7% of wall) — idle time in 897 gaps between kernels over 3 steps, measured"),
        "{text}"
    );
}

#[test]
fn the_largest_excess_is_proved_by_its_excess_and_the_other_actions_rank_by_theirs() {
    let dir = tempfile::tempdir().unwrap();
    let (scn, gemms) = slow_gemms();
    let p = build(dir.path(), "slow", &scn);
    let j = report(&p, &["--model", "llama-3-8b"]);
    let v = &j["verdict"];
    assert_eq!(v["rule"], "largest-excess");
    let gemm_excess = gemms as f64 - LLAMA_8B_GEMM_BYTES / H100 * 1e9;
    let attention_excess = 50_000.0 - 1024.0 * KV_BYTES_PER_TOKEN / H100 * 1e9;
    let proof = &v["proof"];
    assert_eq!(proof["basis"], "derived");
    // The classes' excess is whole ns.
    close(&proof["value"], gemm_excess, 1.0);
    assert_eq!(proof["share"]["of"], "excess");
    // The verdict's own action is "start there": the weight GEMMs' class action ranks
    // first, by its excess; attention's by its own.
    let ranked = v["ranked"].as_array().unwrap();
    assert_ranked(ranked);
    assert_eq!(ranked[0]["class"], "weights", "{ranked:?}");
    close(&ranked[0]["win_ns"], gemm_excess, 1.0);
    let att = ranked.iter().find(|r| r["class"] == "attention").unwrap();
    close(&att["win_ns"], attention_excess, 1.0);
    assert!(v["held_back"].as_array().is_none(), "{v}");
}

#[test]
fn a_class_below_its_roof_is_proved_by_its_excess_and_its_action_is_not_ranked_again() {
    let dir = tempfile::tempdir().unwrap();
    let scn = planted::scenario(Cause::SlowAttentionSmallBatch, 5);
    let p = dir.path().join("slow.sqlite");
    let exp = workload::build(&scn, &p).unwrap();
    let j = report(&p, &["--model", "llama-3-8b"]);
    let v = &j["verdict"];
    assert_eq!(v["rule"], "class-below-roof");
    let excess = slow_attention_excess_ns();
    let s = &exp.steps[0];
    let wall = (s.gpu_end_ns.unwrap() - s.gpu_start_ns.unwrap()) as f64;
    let proof = &v["proof"];
    close(&proof["value"], excess, 1.0);
    assert_eq!(proof["share"]["of"], "wall");
    close(&proof["share"]["fraction"], excess / wall, 1e-5);
    // Attention's action is the verdict's own: left out by its class, whatever its words.
    let ranked = v["ranked"].as_array().unwrap();
    assert_ranked(ranked);
    assert!(!ranked.is_empty());
    assert!(
        ranked.iter().all(|r| r["class"] != "attention"),
        "{ranked:?}"
    );
}

#[test]
fn a_class_that_varies_is_proved_by_its_spread_with_its_interval() {
    let dir = tempfile::tempdir().unwrap();
    let p = build(
        dir.path(),
        "straggler",
        &planted::scenario(Cause::StragglingAllReduce, 8),
    );
    let v = &report(&p, &["--model", "llama-3-70b", "--tp", "4"])["verdict"];
    assert_eq!(v["rule"], "class-varies");
    // 80 layers × 2 all-reduces × 8 µs × the step's factor: 1× at p10, 7× at p90.
    let (p10, p90) = (1_280_000.0, 8_960_000.0);
    let proof = &v["proof"];
    close(&proof["value"], p90 - p10, 0.0);
    close(&proof["interval"][0], p10, 0.0);
    close(&proof["interval"][1], p90, 0.0);
    assert_eq!(proof["basis"], "measured");
}

#[test]
fn the_real_sglang_stall_holds_back_the_kernel_actions_that_win_less_than_it() {
    // The README's first command: one SGLang MI300X decode step, 463 ms of it one gap.
    // The gap, the idle time and the wall worked out from the JSON's GPU events.
    let path = crate::common::fixture("kineto/sglang_mi300x_qwen3-8b_decode_step.json.gz");
    let mut text = String::new();
    flate2::read::GzDecoder::new(std::fs::File::open(&path).unwrap())
        .read_to_string(&mut text)
        .unwrap();
    let raw: Value = serde_json::from_str(&text).unwrap();
    let gpu = crate::common::kineto_gpu_intervals(&raw);
    let (mut end, mut longest, mut idle) = (gpu[0].1, 0, 0);
    for &(s, e) in &gpu[1..] {
        if s > end {
            idle += s - end;
            longest = longest.max(s - end);
        }
        end = end.max(e);
    }
    let wall = end - gpu[0].0;

    let args = ["--model", "qwen3-8b", "--gpu", "mi300x"];
    let j = report(&path, &args);
    let v = &j["verdict"];
    assert_eq!(v["rule"], "one-long-stall");
    let proof = &v["proof"];
    close(&proof["value"], longest as f64, 0.0);
    close(
        &proof["share"]["fraction"],
        longest as f64 / wall as f64,
        1e-12,
    );
    // Every class action can win at most its excess, each far below the idle time: none is
    // ranked after a host-stall verdict, and the held-back line says how many and why.
    let classes = j["groups"][0]["classes"].as_array().unwrap();
    let priced: Vec<i64> = classes
        .iter()
        .filter(|c| c["action"].is_string())
        .filter_map(|c| c["excess_ns"].as_i64())
        .collect();
    assert!(priced.len() >= 3, "{classes:?}");
    assert!(priced.iter().all(|&x| x < idle));
    assert!(v["ranked"].as_array().is_none(), "{v}");
    let held: Vec<&str> = v["held_back"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_str().unwrap())
        .collect();
    let sum: i64 = priced.iter().map(|&x| x.max(0)).sum();
    let want = format!(
        "{} kernel-class action(s) of the decode group: at most {:.1} µs per step in all (excess, derived), less than the {:.1} µs gap of its median step (measured)",
        priced.len(),
        sum as f64 / 1e3,
        idle as f64 / 1e3
    );
    assert!(held.contains(&want.as_str()), "{held:?}\n{want}");
    // The text answer: verdict, proof, next, the waterfall; no kernel action after it.
    let mut a = vec!["steps", path.to_str().unwrap()];
    a.extend_from_slice(&args);
    let (code, out, err) = crate::common::run(&a);
    assert_eq!(code, 0, "{err}");
    let lines: Vec<&str> = out.lines().collect();
    let at = |p: &str| lines.iter().position(|l| l.starts_with(p));
    let (verdict, proof, next) = (at("verdict:"), at("proof:"), at("next:"));
    assert!(
        verdict < proof && proof < next && verdict.is_some(),
        "{out}"
    );
    assert!(!out.contains("by what each can win per step"), "{out}");
}
