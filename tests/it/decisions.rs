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
    let (code, out, err) = stepgate(&[
        "accept",
        &cmp,
        "--history",
        &ds,
        "--reason",
        reason,
        "--by",
        "alice",
    ]);
    assert_eq!(code, 0, "{err}");
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
    assert!(
        out.contains("accepted on 20") && out.contains("by alice"),
        "{out}"
    );
    assert!(out.contains(reason), "{out}");
    assert!(
        out.contains(&format!("the history starts at that run, {run_id}")),
        "{out}"
    );
}

#[test]
fn a_rejected_run_is_left_out_of_later_histories() {
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n).display().to_string();
    let ds = main_history(dir.path(), 2);
    report(&dir.path().join("bad.sqlite"), 7, 1.25);
    let cmp = p("bad.json");
    let (code, _, _) = gate_main(
        &ds,
        &p("bad.sqlite"),
        &["--export", &ds, "--label", "branch=main", "--json", &cmp],
    );
    assert_eq!(code, 1);
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
