//! A decision follows its comparison, whatever order gate, export and accept run in
//! (docs/gate.md, "Decisions on record"): `accept cmp.json` with no flag records into the
//! history the comparison was read from, on the report's content, so a noisy rerun of the
//! accepted change passes the next gate whether the accepted report was exported with
//! the gate, before it, or after the decision under other labels; an order that cannot
//! work is refused in one line that says what to run. And a run's identity is its report
//! and labels: the same report exported again with another `--model` is refused, not a
//! second copy in another partition.

use serde_json::Value;
use sha2::Digest;

use crate::common::run as stepgate;
use crate::decisions::{gate_main, main_history, report};

/// sha256 of a file's bytes, in hex (computed apart from stepgate).
fn sha256(p: &std::path::Path) -> String {
    sha2::Sha256::digest(std::fs::read(p).unwrap())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// `accept CMP --reason R --by BY` with no dataset named: its exit code and stdout.
fn accept_plain(cmp: &str) -> (i32, String, String) {
    stepgate(&[
        "accept",
        cmp,
        "--reason",
        "fp8 KV cache, 2x capacity",
        "--by",
        "ann",
    ])
}

/// The one decision record in `ds`.
fn the_decision(ds: &str) -> Value {
    let files: Vec<_> = std::fs::read_dir(std::path::Path::new(ds).join("decisions"))
        .unwrap()
        .flatten()
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    serde_json::from_str(&std::fs::read_to_string(files[0].path()).unwrap()).unwrap()
}

/// The gate order under test, from a fresh main history to an accepted change.
#[derive(Debug, Clone, Copy)]
enum Order {
    /// gate --history DS --export DS --json; accept (the documented order).
    GateExportingThenAccept,
    /// gate --history DS --json; accept; export afterwards under other labels.
    AcceptThenExportUnderOtherLabels,
    /// export first; gate --history DS --json (its own export left out); accept.
    ExportThenGateThenAccept,
}

fn accepted_change_is_the_reference(order: Order) {
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n).display().to_string();
    let ds = main_history(dir.path(), 3);
    // The intended change (every kernel 25% slower) and a noisy rerun of it.
    report(&dir.path().join("fp8.sqlite"), 10, 1.25);
    report(&dir.path().join("rerun.sqlite"), 11, 1.25);
    let cmp = p("cmp.json");
    let export = |labels: &[&str]| {
        let fp8 = p("fp8.sqlite");
        let mut a = vec!["export", &*fp8, "-o", &ds];
        for l in labels {
            a.extend(["--label", l]);
        }
        let (code, _, err) = stepgate(&a);
        assert_eq!(code, 0, "{order:?}: {err}");
    };
    let mut extra = vec!["--json", &*cmp];
    if let Order::GateExportingThenAccept = order {
        extra.extend(["--export", &*ds, "--label", "branch=main"]);
    }
    if let Order::ExportThenGateThenAccept = order {
        export(&["branch=main"]);
    }
    let (code, out, err) = gate_main(&ds, &p("fp8.sqlite"), &extra);
    assert_eq!(
        code, 1,
        "{order:?}: a 25% slower step is a regression: {out}{err}"
    );
    let c: Value = serde_json::from_str(&std::fs::read_to_string(&cmp).unwrap()).unwrap();
    let want_ds = std::path::absolute(&ds).unwrap().display().to_string();
    // The comparison says which history it read and which report it judged.
    assert_eq!(c["source"]["history"], want_ds.as_str(), "{order:?}");
    let sha = sha256(&dir.path().join("fp8.sqlite"));
    assert_eq!(c["source"]["candidate"]["report_sha256"], sha.as_str());

    // No --history: the decision goes into the comparison's history, on the report.
    let (code, out, err) = accept_plain(&cmp);
    assert_eq!(code, 0, "{order:?}: {err}");
    assert!(
        out.contains(&format!("→ {want_ds}/decisions/")),
        "{order:?}: {out}"
    );
    assert!(!out.contains("no `gate --history` reads it"), "{out}");
    let d = the_decision(&ds);
    assert_eq!(d["outcome"], "accepted");
    assert_eq!(d["report_sha256"], sha.as_str(), "{order:?}");
    assert!(!dir.path().join("cmp.decision.json").exists());

    if let Order::AcceptThenExportUnderOtherLabels = order {
        // Accepted but not in the dataset yet: there is no run to measure against, so the
        // rerun still fails against main.
        let (code, out, _) = gate_main(&ds, &p("rerun.sqlite"), &[]);
        assert_eq!(code, 1, "{out}");
        // Exported now, under labels the comparison never saw (another run id).
        export(&["branch=main", "pr=42"]);
        // trend marks that run with the decision, as it marks a run decided by id.
        let (code, out, err) = stepgate(&["trend", &ds, "--format", "json"]);
        assert_eq!(code, 0, "{err}");
        let t: Value = serde_json::from_str(&out).unwrap();
        let points = t["series"][0]["points"].as_array().unwrap();
        let decided: Vec<&Value> = points.iter().filter(|p| !p["decision"].is_null()).collect();
        assert_eq!(decided.len(), 1, "{points:?}");
        assert_eq!(decided[0]["labels"]["pr"], "42", "{:?}", decided[0]);
        assert_eq!(decided[0]["decision"]["outcome"], "accepted");
    }
    let (code, out, err) = gate_main(&ds, &p("rerun.sqlite"), &["--format", "json"]);
    assert_eq!(
        code, 0,
        "{order:?}: the accepted change is the reference: {out}{err}"
    );
    let g: Value = serde_json::from_str(&out).unwrap();
    let note = g["warnings"][0].as_str().unwrap();
    assert!(
        note.contains("was accepted on") && note.contains("by ann: 'fp8 KV cache, 2x capacity'"),
        "{order:?}: {note}"
    );
    // Every main run is still there for the metrics the decision does not cover.
    assert!(
        note.contains("the other metrics keep all 4 run(s)"),
        "{order:?}: {note}"
    );
}

#[test]
fn gate_exporting_then_accept_moves_the_reference() {
    accepted_change_is_the_reference(Order::GateExportingThenAccept);
}

#[test]
fn accept_then_export_under_other_labels_moves_the_reference() {
    accepted_change_is_the_reference(Order::AcceptThenExportUnderOtherLabels);
}

#[test]
fn export_then_gate_then_accept_moves_the_reference() {
    accepted_change_is_the_reference(Order::ExportThenGateThenAccept);
}

/// Gated against a baseline file, a comparison names no run and no history: `accept`
/// writes beside it and says no gate reads it there; asked for a history, it refuses in
/// one line that says which gate to run.
#[test]
fn a_comparison_against_a_baseline_file_is_decided_beside_it_or_refused() {
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n).display().to_string();
    let ds = main_history(dir.path(), 1);
    report(&dir.path().join("fp8.sqlite"), 10, 1.25);
    let (code, _, err) = stepgate(&["baseline", "record", &p("main1.sqlite"), "-o", &p("b.json")]);
    assert_eq!(code, 0, "{err}");
    let cmp = p("cmp.json");
    let (code, _, _) = stepgate(&[
        "gate",
        &p("fp8.sqlite"),
        "--baseline",
        &p("b.json"),
        "--json",
        &cmp,
    ]);
    assert_eq!(code, 1);
    let (code, out, err) = accept_plain(&cmp);
    assert_eq!(code, 0, "{err}");
    assert!(dir.path().join("cmp.decision.json").is_file());
    assert!(
        out.contains("no `gate --history` reads it; pass --history DS"),
        "{out}"
    );
    let (code, _, err) = stepgate(&["accept", &cmp, "--history", &ds, "--reason", "x"]);
    assert_eq!(code, 2, "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains(&format!(
            "run `stepgate gate {} --history {ds}",
            p("fp8.sqlite")
        )),
        "{err}"
    );
    assert!(!std::path::Path::new(&ds).join("decisions").exists());
}

/// Issue 52: the same report exported again with another `--model` is the same run (its
/// identity is the report and its labels), refused with where it is; `--replace` moves
/// it; `trend` never sees it twice.
#[test]
fn the_same_report_with_another_model_is_the_same_run() {
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n).display().to_string();
    report(&dir.path().join("r.sqlite"), 3, 1.0);
    let ds = p("ds");
    let (code, _, err) = stepgate(&["export", &p("r.sqlite"), "-o", &ds, "--label", "k=v"]);
    assert_eq!(code, 0, "{err}");
    let again = |extra: &[&str]| {
        let r = p("r.sqlite");
        let mut a = vec!["export", &*r, "-o", &*ds, "--label", "k=v"];
        a.extend_from_slice(&["--model", "llama-3-8b"]);
        a.extend_from_slice(extra);
        stepgate(&a)
    };
    let (code, _, err) = again(&[]);
    assert_eq!(code, 2, "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains("is already in") && err.contains("model=") && err.contains("--replace"),
        "{err}"
    );
    let runs = |ds: &str| -> usize {
        let (code, out, err) = stepgate(&["trend", ds, "--format", "json"]);
        assert_eq!(code, 0, "{err}");
        assert!(
            !err.contains("twice") && !out.contains("twice"),
            "{out}{err}"
        );
        let t: Value = serde_json::from_str(&out).unwrap();
        t["runs_matched"].as_u64().unwrap() as usize
    };
    assert_eq!(runs(&ds), 1);
    let (code, _, err) = again(&["--replace"]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("moved"), "{err}");
    assert_eq!(runs(&ds), 1);
}
