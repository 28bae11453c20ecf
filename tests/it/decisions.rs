//! Decisions on record: `accept` / `reject` a gate's comparison into the history dataset,
//! and the next `gate --history` starts from the accepted run (or leaves the rejected one
//! out), saying so. Reports come from the shared jittered decode generator.

use serde_json::Value;

use crate::common::{self, run as stepgate};

const H100: &str = "NVIDIA H100 80GB HBM3";

pub(crate) fn report(path: &std::path::Path, seed: u64, scale: f64) {
    common::jittered_decode_report(path, 24, 60, seed, H100, &move |_| scale);
}

/// A history of `runs` main-branch runs at the reference speed, in `dir/history`.
pub(crate) fn main_history(dir: &std::path::Path, runs: u64) -> String {
    let ds = dir.join("history").display().to_string();
    for seed in 1..=runs {
        let r = dir.join(format!("main{seed}.sqlite"));
        report(&r, seed, 1.0);
        let r = r.display().to_string();
        let (code, _, err) = stepgate(&["export", &r, "-o", &ds, "--label", "branch=main"]);
        assert_eq!(code, 0, "{err}");
    }
    ds
}

/// `gate CAND --history DS --where label.branch=main --min-runs 1` and `extra`.
/// A main history of two runs and a candidate `name` (seed `seed`) 25% slower, gated
/// against it and exported into it: the dataset and the comparison JSON (a regression).
fn regressed_on_main(dir: &std::path::Path, name: &str, seed: u64) -> (String, String) {
    let ds = main_history(dir, 2);
    let cand = dir.join(format!("{name}.sqlite"));
    report(&cand, seed, 1.25);
    let cmp = dir.join(format!("{name}.json")).display().to_string();
    let (code, _, _) = gate_main(
        &ds,
        &cand.display().to_string(),
        &["--export", &ds, "--label", "branch=main", "--json", &cmp],
    );
    assert_eq!(code, 1);
    (ds, cmp)
}

/// `accept CMP --history DS --reason REASON --by BY`, which must succeed; its stdout.
fn accept(cmp: &str, ds: &str, reason: &str, by: &str) -> String {
    let (code, out, err) = stepgate(&[
        "accept",
        cmp,
        "--history",
        ds,
        "--reason",
        reason,
        "--by",
        by,
    ]);
    assert_eq!(code, 0, "{err}");
    out
}

pub(crate) fn gate_main(ds: &str, cand: &str, extra: &[&str]) -> (i32, String, String) {
    let mut a = vec![
        "gate",
        cand,
        "--history",
        ds,
        "--where",
        "label.branch=main",
        "--min-runs",
        "1",
    ];
    a.extend_from_slice(extra);
    stepgate(&a)
}

#[test]
fn an_accepted_regression_becomes_the_reference_of_the_next_history_gate() {
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n).display().to_string();
    let ds = main_history(dir.path(), 3);
    // An intended change: every kernel 25% slower (e.g. a cheaper KV cache format).
    report(&dir.path().join("fp8.sqlite"), 10, 1.25);
    report(&dir.path().join("next.sqlite"), 11, 1.25);
    let gate = |cand: &str, extra: &[&str]| gate_main(&ds, cand, extra);
    let cmp = p("cmp.json");
    let (code, out, err) = gate(
        &p("fp8.sqlite"),
        &["--export", &ds, "--label", "branch=main", "--json", &cmp],
    );
    assert_eq!(code, 1, "a 25% slower step is a regression: {out}{err}");
    let c: Value = serde_json::from_str(&std::fs::read_to_string(&cmp).unwrap()).unwrap();
    let run_id = c["source"]["candidate"]["run_id"]
        .as_str()
        .unwrap()
        .to_owned();
    // Before any decision the next slow run fails against main's history too.
    let (code, out, _) = gate(&p("next.sqlite"), &[]);
    assert_eq!(code, 1, "{out}");

    // A reason is mandatory.
    let (code, _, err) = stepgate(&["accept", &cmp, "--history", &ds, "--reason", "  "]);
    assert_eq!(code, 2);
    assert!(err.contains("--reason"), "{err}");
    let reason = "fp8 KV cache costs 25% step time, trades for 2x capacity";
    let out = accept(&cmp, &ds, reason, "alice");
    assert!(out.contains(&run_id), "{out}");
    // The record is in the dataset, create-only, with the comparison's hash.
    let files: Vec<_> = std::fs::read_dir(dir.path().join("history/decisions"))
        .unwrap()
        .flatten()
        .collect();
    assert_eq!(files.len(), 1);
    let d: Value =
        serde_json::from_str(&std::fs::read_to_string(files[0].path()).unwrap()).unwrap();
    assert_eq!(d["outcome"], "accepted");
    assert_eq!(d["by"], "alice");
    assert_eq!(d["run_id"], run_id.as_str());
    assert_eq!(d["verdict"], c["verdict"]);
    use sha2::Digest;
    let want = sha2::Sha256::digest(std::fs::read(&cmp).unwrap());
    let hex: String = want.iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(d["comparison_sha256"], hex.as_str());

    // Now the history starts at the accepted run: the next run at the same speed passes,
    // and the report says why.
    let (code, out, err) = gate(&p("next.sqlite"), &[]);
    assert_eq!(code, 0, "{out}{err}");
    let today = &d["at"].as_str().unwrap()[..10];
    assert!(
        out.contains(&format!(
            "run {run_id} was accepted on {today} by alice: '{reason}'"
        )),
        "{out}"
    );
    // The decision covers the comparison's regressed rows, wall among them, so the step
    // times and their kernel breakdown are measured from the accepted run on.
    let covered: Vec<&str> = d["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m.as_str().unwrap())
        .collect();
    assert!(covered.contains(&"wall_ns"), "{covered:?}");
    assert!(
        out.contains(&format!(
            "the reference of wall_ns, period_ns, busy_ns, {} kernel(s), 1 category(ies) \
             (with the step times and kernel breakdown they add up to) is that run",
            covered.iter().filter(|m| m.starts_with("kernel:")).count()
        )),
        "{out}"
    );
    assert!(!out.contains("MISMATCH"), "{out}");
}

/// A decision record written before decisions named their metrics (no `metrics` field)
/// covers every metric: the history starts at the accepted run.
#[test]
fn a_decision_without_metrics_moves_every_metric() {
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n).display().to_string();
    let (ds, cmp) = regressed_on_main(dir.path(), "fp8", 10);
    accept(&cmp, &ds, "old", "eve");
    // Rewrite the record as an older stepgate wrote it: without `metrics`.
    let file = std::fs::read_dir(dir.path().join("history/decisions"))
        .unwrap()
        .flatten()
        .next()
        .unwrap()
        .path();
    let mut d: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert!(d["metrics"].is_array(), "{d}");
    d.as_object_mut().unwrap().remove("metrics");
    std::fs::write(&file, d.to_string()).unwrap();
    let run_id = d["run_id"].as_str().unwrap().to_owned();
    report(&dir.path().join("next.sqlite"), 11, 1.25);
    let (code, out, err) = gate_main(&ds, &p("next.sqlite"), &["--format", "json"]);
    assert_eq!(code, 0, "{out}{err}");
    let g: Value = serde_json::from_str(&out).unwrap();
    // Only the accepted run's 60 steps are the reference, for every metric.
    assert_eq!(g["baseline"]["steps"], 60, "{}", g["baseline"]);
    let note = g["warnings"][0].as_str().unwrap();
    assert!(
        note.contains(&format!(
            "by eve: 'old' — the history starts at that run, {run_id}"
        )),
        "{note}"
    );
}

/// Two kernels slowed by 30%; the reviewer accepts one of them (`--metric kernel:A`): a
/// later run with both slowdowns is judged against the accepted run for that kernel only,
/// and against every main run for the other kernel and the step times.
#[test]
fn a_decision_on_one_metric_moves_only_that_metric() {
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n).display().to_string();
    let ds = main_history(dir.path(), 3);
    // The generated step cycles 8 kernels: slot 3 is the flash attention kernel, slot 6
    // the largest GEMM (7.4 and 15.2 µs, three launches each per step).
    let slow = |k: usize| if k % 8 == 3 || k % 8 == 6 { 1.3 } else { 1.0 };
    common::jittered_decode_report(&dir.path().join("two.sqlite"), 24, 60, 10, H100, &slow);
    common::jittered_decode_report(&dir.path().join("next.sqlite"), 24, 60, 11, H100, &slow);
    let cmp = p("cmp.json");
    let (code, out, err) = gate_main(
        &ds,
        &p("two.sqlite"),
        &["--export", &ds, "--label", "branch=main", "--json", &cmp],
    );
    assert_eq!(code, 1, "{out}{err}");
    let c: Value = serde_json::from_str(&std::fs::read_to_string(&cmp).unwrap()).unwrap();
    let kernels = c["groups"][0]["kernels"].as_array().unwrap();
    let regressed: Vec<&Value> = kernels
        .iter()
        .filter(|k| k["verdict"] == "regression")
        .collect();
    assert_eq!(regressed.len(), 2, "{kernels:?}");
    let (a, b) = (regressed[0], regressed[1]);
    let (a_name, b_name) = (a["name"].as_str().unwrap(), b["name"].as_str().unwrap());

    // A name the comparison has no row for is refused in one line, naming the step metrics.
    let (code, _, err) = stepgate(&[
        "accept",
        &cmp,
        "--history",
        &ds,
        "--reason",
        "x",
        "--metric",
        "tpot_ns",
    ]);
    assert_eq!(code, 2, "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains("\"tpot_ns\"") && err.contains("wall_ns"),
        "{err}"
    );

    let key = format!("kernel:{a_name}");
    let reason = "the wider GEMM tile trades 30% for half the workspace";
    let (code, _, err) = stepgate(&[
        "accept",
        &cmp,
        "--history",
        &ds,
        "--reason",
        reason,
        "--by",
        "dana",
        "--metric",
        &key,
    ]);
    assert_eq!(code, 0, "{err}");
    let file = std::fs::read_dir(dir.path().join("history/decisions"))
        .unwrap()
        .flatten()
        .next()
        .unwrap()
        .path();
    let d: Value = serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
    assert_eq!(d["metrics"], serde_json::json!([key]));

    let (code, out, err) = gate_main(&ds, &p("next.sqlite"), &["--format", "json"]);
    assert_eq!(code, 1, "the other kernel still regressed: {out}{err}");
    let g: Value = serde_json::from_str(&out).unwrap();
    let row = |name: &str| -> Value {
        g["groups"][0]["kernels"]
            .as_array()
            .unwrap()
            .iter()
            .find(|k| k["name"] == name)
            .unwrap()
            .clone()
    };
    let (na, nb) = (row(a_name), row(b_name));
    // Kernel A: the accepted run's own 60 steps are its reference (its median is the one
    // the first comparison measured on the candidate side), and the same slowdown is ok.
    assert_eq!(na["baseline_samples"], 60, "{na}");
    assert_eq!(na["baseline_median"], a["candidate_median"], "{na}");
    assert_eq!(na["verdict"], "ok", "{na}");
    // Kernel B and the step wall keep every main run, the accepted one included: 4 × 60.
    assert_eq!(nb["baseline_samples"], 240, "{nb}");
    assert_eq!(nb["verdict"], "regression", "{nb}");
    let wall = g["groups"][0]["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["metric"] == "wall_ns")
        .unwrap()
        .clone();
    assert_eq!(wall["baseline_samples"], 240, "{wall}");
    let reasons = g["reasons"].to_string();
    assert!(
        reasons.contains(&b["short_name"].as_str().unwrap()[..20]),
        "{reasons}"
    );
    let today = &d["at"].as_str().unwrap()[..10];
    let note = g["warnings"][0].as_str().unwrap();
    assert!(
        note.contains(&format!(
            "accepted on {today} by dana: '{reason}' — the reference of {key} is that run"
        )),
        "{note}"
    );
    assert!(
        note.contains("the other metrics keep all 4 run(s)"),
        "{note}"
    );
}

#[test]
fn a_rejected_run_is_left_out_of_later_histories() {
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n).display().to_string();
    let (ds, cmp) = regressed_on_main(dir.path(), "bad", 7);
    let (code, _, err) = stepgate(&[
        "reject",
        &cmp,
        "--history",
        &ds,
        "--reason",
        "scheduler regression, reverted",
    ]);
    assert_eq!(code, 0, "{err}");
    report(&dir.path().join("ok.sqlite"), 8, 1.0);
    let (code, out, err) = gate_main(&ds, &p("ok.sqlite"), &["--format", "json"]);
    assert_eq!(code, 0, "{out}{err}");
    let g: Value = serde_json::from_str(&out).unwrap();
    // Two main runs of 60 steps: the rejected third run's steps are not in the reference.
    assert_eq!(g["baseline"]["steps"], 120, "{}", g["baseline"]);
    let (_, text, _) = gate_main(&ds, &p("ok.sqlite"), &[]);
    assert!(text.contains("1 rejected run(s) left out"), "{text}");
}

#[test]
fn a_decision_without_a_history_is_written_beside_the_comparison() {
    let dir = tempfile::tempdir().unwrap();
    let cmp = dir.path().join("c.json");
    std::fs::write(&cmp, br#"{"verdict":"regression","reasons":["wall +5%"]}"#).unwrap();
    let (code, out, err) = stepgate(&[
        "accept",
        cmp.to_str().unwrap(),
        "--reason",
        "known",
        "--by",
        "bob",
    ]);
    assert_eq!(code, 0, "{err}");
    let d: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("c.decision.json")).unwrap())
            .unwrap();
    assert_eq!(d["covers"], serde_json::json!(["wall +5%"]));
    assert!(d["run_id"].is_null());
    assert!(out.contains("run not named"), "{out}");
    // A history needs the run id the comparison lacks: refused in one line.
    let (code, _, err) = stepgate(&[
        "accept",
        cmp.to_str().unwrap(),
        "--reason",
        "x",
        "--history",
        dir.path().join("h").to_str().unwrap(),
    ]);
    assert_eq!(code, 2);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
}

/// The accepted run gated again where too few other runs match (a stricter `--min-runs`):
/// the decision is said, and why it cannot apply — not a silent inconclusive.
#[test]
fn an_accepted_run_against_too_short_a_history_says_its_decision() {
    let dir = tempfile::tempdir().unwrap();
    let (ds, cmp) = regressed_on_main(dir.path(), "fp8", 10);
    let reason = "fp8 KV cache";
    accept(&cmp, &ds, reason, "carol");
    let cand = dir.path().join("fp8.sqlite").display().to_string();
    let (code, out, err) = stepgate(&[
        "gate",
        &cand,
        "--history",
        &ds,
        "--where",
        "label.branch=main",
        "--min-runs",
        "5",
    ]);
    assert_eq!(code, 3, "{out}{err}");
    assert!(
        out.contains("this run was accepted on")
            && out.contains(&format!("by carol: '{reason}' — too few other runs match")),
        "{out}"
    );
    assert!(
        out.contains("2 matching run(s)") && out.contains("(at least 5 needed)"),
        "{out}"
    );
}
