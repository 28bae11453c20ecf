//! Step metrics beyond times and counts: exposed communication (measured, checked against
//! a second computation from the raw trace) and a kernel class's excess over its floor
//! (derived), each gated when the policy names it.

use serde_json::Value;

use crate::common::{fixture, run};
use crate::diagnosis::slower_attention;

fn steps_json(path: &str) -> Value {
    let (code, out, err) = run(&["steps", path, "--format", "json"]);
    assert_eq!(code, 0, "{err}");
    serde_json::from_str(&out).unwrap()
}

fn exposed(j: &Value) -> Vec<Option<i64>> {
    j["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["exposed_comm_ns"].as_i64())
        .collect()
}

#[test]
fn exposed_communication_equals_the_raw_traces_comm_time_no_other_op_hides() {
    // Printed by scripts/exposed_comm_reference.py, which reads the GPU ops of each step's
    // window straight from the JSON and takes union(all) − union(not NCCL/RCCL). DDP
    // buckets overlap backward on another stream, so these are well below the collectives'
    // own time (about 12.0, 12.3 and 22.6 ms on the A100 rank).
    let cases = [
        (
            "kineto/hta_a100_ddp_rank0_of2_profilerstep.json.gz",
            [10_046_927, 10_432_089, 18_711_653],
        ),
        (
            "kineto/tracelens_mi300x_ddp_rank0_of8_actckpt_profilerstep.json.gz",
            [11_803_258, 11_874_606, 11_360_846],
        ),
    ];
    for (f, want) in cases {
        let j = steps_json(fixture(f).to_str().unwrap());
        let want: Vec<Option<i64>> = want.iter().map(|&x| Some(x)).collect();
        assert_eq!(exposed(&j), want, "{f}");
        for s in j["steps"].as_array().unwrap() {
            let comm: i64 = s["categories"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|c| c["category"] == "communication")
                .map(|c| c["exclusive_ns"].as_i64().unwrap())
                .sum();
            let x = s["exposed_comm_ns"].as_i64().unwrap();
            assert!(x > 0 && x < comm, "{f}: exposed {x} vs comm {comm}");
        }
    }
    // The steps table says the median (10,432.1 µs) and the median share of busy
    // (10,432,089 / 49,728,926 = 21.0% on the middle step).
    let f = fixture("kineto/hta_a100_ddp_rank0_of2_profilerstep.json.gz");
    // The diagnosis lines are behind --detail (the answer comes first).
    let (_, out, _) = run(&["steps", f.to_str().unwrap(), "--detail"]);
    assert!(
        out.contains("exposed communication (median of 3 step(s) that communicate, measured): 10,432.1 µs per step, 21% of busy"),
        "{out}"
    );
    // A decode without collectives has no such field, so no such metric.
    let j = steps_json(
        fixture("kineto/sglang_mi300x_qwen3-8b_decode_step.json.gz")
            .to_str()
            .unwrap(),
    );
    assert_eq!(exposed(&j), vec![None]);
}

#[test]
fn exposed_communication_is_a_step_metric_of_a_baseline() {
    let dir = tempfile::tempdir().unwrap();
    let f = fixture("kineto/hta_a100_ddp_rank0_of2_profilerstep.json.gz");
    let out = dir.path().join("b.json");
    // Three steps: below the gate's minimum, so recorded only with the policy's consent.
    let p = dir.path().join("p.toml");
    std::fs::write(&p, "small_baseline = \"warn\"\n").unwrap();
    let (code, _, err) = run(&[
        "baseline",
        "record",
        f.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "--policy",
        p.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let b: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let m = &b["samples"]["groups"][0]["metrics"]["exposed_comm_ns"];
    let got: Vec<f64> = m
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect();
    assert_eq!(got, vec![10_046_927.0, 10_432_089.0, 18_711_653.0]);
}

#[test]
fn exposed_communication_survives_the_dataset_and_trends() {
    let dir = tempfile::tempdir().unwrap();
    let ds = dir.path().join("history");
    let ds = ds.to_str().unwrap();
    let f = fixture("kineto/hta_a100_ddp_rank0_of2_profilerstep.json.gz");
    let (code, _, err) = run(&["export", f.to_str().unwrap(), "-o", ds]);
    assert_eq!(code, 0, "{err}");
    let (code, out, err) = run(&[
        "trend",
        ds,
        "--metric",
        "exposed_comm_ns",
        "--format",
        "json",
    ]);
    assert_eq!(code, 0, "{err}");
    let t: Value = serde_json::from_str(&out).unwrap();
    let p = &t["series"][0]["points"][0];
    // The median of the three reference values above.
    assert_eq!(p["median"].as_f64(), Some(10_432_089.0), "{t}");
    assert_eq!(p["steps"], 3);
}

/// `gate CAND AGAINST… --model llama-3-8b [--policy P] --format json` with `policy` written
/// to a file in `dir`: the exit code and the document.
fn gate_json(
    dir: &std::path::Path,
    cand: &str,
    against: &[&str],
    policy: Option<&str>,
) -> (i32, Value) {
    let mut args = vec!["gate", cand];
    args.extend_from_slice(against);
    args.extend(["--model", "llama-3-8b"]);
    let p = dir.join("policy.toml");
    if let Some(text) = policy {
        std::fs::write(&p, text).unwrap();
        args.extend(["--policy", p.to_str().unwrap()]);
    }
    args.extend(["--format", "json"]);
    let (code, out, err) = run(&args);
    let j: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {err}"));
    (code, j)
}

fn metric<'a>(j: &'a Value, name: &str) -> Option<&'a Value> {
    j["groups"][0]["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["metric"] == name)
}

#[test]
fn a_class_excess_named_by_the_policy_is_judged_and_gated() {
    let dir = tempfile::tempdir().unwrap();
    let (base, cand, want) = slower_attention(dir.path());
    assert!(want > 20_000.0, "above the 20 µs default floor: {want}");
    let bj = dir.path().join("base.json");
    let bj = bj.to_str().unwrap();
    let (code, _, err) = run(&[
        "baseline",
        "record",
        &base,
        "-o",
        bj,
        "--model",
        "llama-3-8b",
    ]);
    assert_eq!(code, 0, "{err}");
    let gate = |policy: Option<&str>| gate_json(dir.path(), &cand, &["--baseline", bj], policy);
    // Without the policy naming it, no class-excess row: the class table shows it.
    let (_, j) = gate(None);
    assert!(metric(&j, "excess_ns.attention").is_none());
    // Named: judged over the per-step samples, gated, a regression by the planted time.
    let (code, j) = gate(Some("[metrics.\"excess_ns.attention\"]\nrel = 0.05\n"));
    let m = metric(&j, "excess_ns.attention").expect("the class excess row");
    assert_eq!(m["verdict"], "regression", "{m}");
    assert_eq!(m["gated"], true);
    let change = m["change"].as_f64().unwrap();
    assert!((change - want).abs() < 1.0, "{change} vs {want}");
    assert_eq!(code, 1);
    // A class that did not move is ok under the same policy shape.
    let (_, j) = gate(Some("[metrics.\"excess_ns.weights\"]\nrel = 0.05\n"));
    let m = metric(&j, "excess_ns.weights").expect("the weights excess row");
    assert_eq!(m["verdict"], "ok", "{m}");
    // Named, but the baseline was recorded without a model: said, not silently passed.
    let plain = dir.path().join("plain.json");
    let (code, _, err) = run(&["baseline", "record", &base, "-o", plain.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let (_, j) = gate_json(
        dir.path(),
        &cand,
        &["--baseline", plain.to_str().unwrap()],
        Some("[metrics.\"excess_ns.attention\"]\nrel = 0.05\n"),
    );
    assert!(metric(&j, "excess_ns.attention").is_none());
    let notes = j["groups"][0]["notes"].to_string();
    assert!(
        notes.contains(
            "attention excess (derived) is gated by the policy but the baseline has no samples"
        ),
        "{notes}"
    );
}

#[test]
fn a_class_excess_is_gated_against_a_history_exported_with_a_model() {
    let dir = tempfile::tempdir().unwrap();
    let (base, cand, want) = slower_attention(dir.path());
    let ds = dir.path().join("history");
    let ds = ds.to_str().unwrap();
    // Three runs of the fast capture, priced (labels make them three runs).
    for i in 1..=3 {
        let (code, _, err) = run(&[
            "export",
            &base,
            "-o",
            ds,
            "--model",
            "llama-3-8b",
            "--label",
            &format!("i={i}"),
        ]);
        assert_eq!(code, 0, "{err}");
    }
    let policy = "[metrics.\"excess_ns.attention\"]\nrel = 0.05\n";
    let history = |mode: &'static str| ["--history", ds, "--history-mode", mode, "--min-runs", "1"];
    let gate = |mode: &'static str| gate_json(dir.path(), &cand, &history(mode), Some(policy)).1;
    // Steps pooled: 36 baseline samples, a regression by the planted time. One median per
    // run: the same change from 3 samples, which are too few to call it.
    for (mode, samples, verdict) in [("steps", 36, "regression"), ("runs", 3, "inconclusive")] {
        let j = gate(mode);
        let m = metric(&j, "excess_ns.attention").unwrap_or_else(|| panic!("{mode}: {j}"));
        assert_eq!(m["verdict"], verdict, "{mode}: {m}");
        assert_eq!(m["baseline_samples"], samples, "{mode}: {m}");
        let change = m["change"].as_f64().unwrap();
        assert!((change - want).abs() < 1.0, "{mode}: {change} vs {want}");
    }
    // The class waterfall is there too, from the history's classes (read because the
    // policy names a class excess).
    let j = gate("steps");
    let rows = j["groups"][0]["class_excess"]
        .as_array()
        .expect("class rows");
    let att = rows.iter().find(|r| r["class"] == "attention").unwrap();
    assert!(
        (att["delta_excess_ns"].as_f64().unwrap() - want).abs() < 1.0,
        "{att}"
    );
    // Without a class metric in the policy the history's class cells are not read at all:
    // no class rows (the field is left out when empty).
    let (_, j) = gate_json(dir.path(), &cand, &history("steps"), None);
    let rows = &j["groups"][0]["class_excess"];
    assert_eq!(rows.as_array().map_or(0, Vec::len), 0, "{rows}");
}

#[test]
fn policy_check_knows_class_excess_and_exposed_communication() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("p.toml");
    std::fs::write(
        &p,
        "[metrics.\"excess_ns.attention\"]\nrel = 0.05\n[metrics.exposed_comm_ns]\nrel = 0.05\n",
    )
    .unwrap();
    let f = fixture("kineto/hta_a100_ddp_rank0_of2_profilerstep.json.gz");
    let (_, out, err) = run(&[
        "policy",
        "check",
        p.to_str().unwrap(),
        f.to_str().unwrap(),
        "--format",
        "json",
    ]);
    let j: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {err}"));
    let rule = |name: &str| {
        j["rules"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["rule"] == name)
            .unwrap()
            .clone()
    };
    // The DDP trace communicates in every step: the rule selects its group.
    assert_eq!(rule("exposed_comm_ns")["selects"], 1, "{j}");
    // No model given: the class excess has no samples, and the check says why.
    let r = rule("excess_ns.attention");
    assert_eq!(r["selects"], 0);
    assert!(
        r["detail"].as_str().unwrap().contains("needs a model"),
        "{r}"
    );
}
