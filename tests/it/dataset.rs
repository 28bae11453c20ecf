//! Run history: `export` into a Parquet dataset, `trend` over it, `gate --history`, and the
//! dataset's integrity under duplicate and concurrent exports. Reports are generated with
//! `stepgate::synth`, so expected values come from the generator's own schedule.

use std::path::{Path, PathBuf};

use polars::prelude::*;
use stepgate::synth::workload::*;
use stepgate::wire::synth::Expected;

use crate::common::run as stepgate;

const KERNELS: usize = 24;
const STEPS: usize = 60;
const H100: &str = "NVIDIA H100 80GB HBM3";

/// The 128×128 GEMM (15.2 µs in the mix), kernels 6, 14 and 22 of each step.
fn gemm() -> String {
    decode_kernels(KERNELS)[6].name.clone()
}

/// The shared jittered decode report with this module's kernel mix, on an H100.
fn report(path: &Path, steps: usize, seed: u64, scale: &dyn Fn(usize) -> f64) -> Expected {
    crate::common::jittered_decode_report(path, KERNELS, steps, seed, H100, scale)
}

struct Case {
    dir: tempfile::TempDir,
}

impl Case {
    fn new() -> Case {
        Case {
            dir: tempfile::tempdir().unwrap(),
        }
    }
    fn p(&self, name: &str) -> String {
        self.dir.path().join(name).to_str().unwrap().to_owned()
    }
    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }
}

fn json(out: &str) -> serde_json::Value {
    serde_json::from_str(out).unwrap_or_else(|e| panic!("{e}: {out}"))
}

/// Every Parquet file of one table.
fn table_files(dataset: &Path, table: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dataset.join(table)];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "parquet") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// One table read whole with polars (a second reader, independent of stepgate's own).
fn read_table(dataset: &Path, table: &str) -> DataFrame {
    let mut frames = Vec::new();
    for f in table_files(dataset, table) {
        let file = std::fs::File::open(&f).unwrap();
        frames.push(ParquetReader::new(file).finish().unwrap());
    }
    let mut df = frames.remove(0);
    for f in frames {
        df.vstack_mut(&f).unwrap();
    }
    df
}

fn i64_sum(df: &DataFrame, c: &str) -> i64 {
    let ca = df.column(c).unwrap().i64().unwrap();
    (0..ca.len()).filter_map(|i| ca.get(i)).sum()
}

#[test]
fn three_exports_then_trend_marks_the_slower_kernel_and_gate_history_fails_it() {
    let c = Case::new();
    let ds = c.p("history");
    report(&c.path("base.sqlite"), STEPS, 1, &|_| 1.0);
    report(&c.path("same.sqlite"), STEPS, 2, &|_| 1.0);
    report(&c.path("slow.sqlite"), STEPS, 3, &|k| {
        if k % 8 == 6 {
            1.2
        } else {
            1.0
        }
    });
    report(&c.path("noise.sqlite"), STEPS, 4, &|_| 1.01);
    for (f, branch) in [("base", "main"), ("same", "main"), ("slow", "pr")] {
        let (code, out, err) = stepgate(&[
            "export",
            &c.p(&format!("{f}.sqlite")),
            "-o",
            &ds,
            "--label",
            &format!("branch={branch}"),
        ]);
        assert_eq!(code, 0, "{err}");
        assert!(out.contains("steps 60"), "{out}");
    }

    let (code, out, err) = stepgate(&[
        "trend",
        &ds,
        "--metric",
        &format!("kernel:{}", gemm()),
        "--format",
        "json",
    ]);
    assert_eq!(code, 0, "{err}");
    let t = json(&out);
    crate::schema::assert_stamped("trend", &t, stepgate::dataset::trend::SCHEMA_VERSION);
    assert_eq!(t["source"]["dataset"], ds.as_str());
    let pts = t["series"][0]["points"].as_array().unwrap();
    assert_eq!(pts.len(), 3);
    // Three instances per step of 15.2 µs; the slow run 1.2×; jitter ±0.5% per instance.
    let base_ns = 3.0 * 15_200.0;
    for (i, want) in [base_ns, base_ns, base_ns * 1.2].into_iter().enumerate() {
        let m = pts[i]["median"].as_f64().unwrap();
        assert!(
            (m / want - 1.0).abs() < 0.005,
            "run {i}: median {m} vs {want}"
        );
        assert_eq!(pts[i]["steps"], 60);
    }
    assert!(pts[0]["change"].is_null());
    assert!(
        pts[1]["change"].is_null(),
        "same workload, other jitter: no change"
    );
    let ch = &pts[2]["change"];
    assert_eq!(ch["direction"], "up", "{t}");
    let rel = ch["relative"].as_f64().unwrap();
    assert!((rel - 0.2).abs() < 0.01, "{rel}");
    assert_eq!(pts[2]["labels"]["branch"], "pr");

    // A kernel no run ran: an error, not a series of zeros.
    // Every distinct name the generator gave the runs is searched.
    let mut names: Vec<String> = decode_kernels(KERNELS)
        .into_iter()
        .map(|k| k.name)
        .collect();
    names.sort();
    names.dedup();
    let (code, _, err) = stepgate(&["trend", &ds, "--metric", "kernel:no_such_kernel"]);
    assert_eq!(code, 2);
    assert!(
        err.contains(&format!(
            "\"no_such_kernel\" matches none of the {} kernel name(s) searched",
            names.len()
        )),
        "{err}"
    );

    // A few characters of the name select the same kernel: the same medians as the full
    // template. A selector that several kernels match lists them instead of guessing.
    let full = gemm();
    let part = (0..full.len())
        .flat_map(|a| (a + 8..=full.len().min(a + 24)).map(move |b| (a, b)))
        .map(|(a, b)| &full[a..b])
        .find(|p| names.iter().filter(|n| n.contains(p)).count() == 1)
        .expect("a unique substring of the GEMM's name");
    let (code, out, err) = stepgate(&[
        "trend",
        &ds,
        "--metric",
        &format!("kernel:{part}"),
        "--format",
        "json",
    ]);
    assert_eq!(code, 0, "{err}");
    let by_part = json(&out);
    for (a, b) in by_part["series"][0]["points"]
        .as_array()
        .unwrap()
        .iter()
        .zip(pts)
    {
        assert_eq!(a["median"], b["median"]);
    }
    let (code, _, err) = stepgate(&["trend", &ds, "--metric", "kernel:re:."]);
    assert_eq!(code, 2);
    assert!(
        err.contains(&format!("matches {} kernels", names.len())),
        "{err}"
    );

    // The text table marks the same run.
    let (code, out, _) = stepgate(&["trend", &ds, "--metric", &format!("kernel:{}", gemm())]);
    assert_eq!(code, 0);
    let marked: Vec<&str> = out.lines().filter(|l| l.contains('▲')).collect();
    assert_eq!(marked.len(), 1, "{out}");
    assert!(marked[0].contains("branch=pr"), "{out}");

    // The HTML page: one chart for the one group, three runs drawn, the change point in
    // its own class, and every charted median in the page's table.
    let page_path = std::path::Path::new(&ds).with_extension("html");
    let (code, _, err) = stepgate(&[
        "trend",
        &ds,
        "--metric",
        &format!("kernel:{}", gemm()),
        "--html",
        page_path.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let page = std::fs::read_to_string(&page_path).unwrap();
    assert_eq!(page.matches("<svg").count(), 1, "one group, one chart");
    assert!(page.contains("change point up (heuristic)"));
    for p in pts {
        let us = format!("{:.1}", p["median"].as_f64().unwrap() / 1e3);
        assert!(page.contains(&us), "median {us} µs not in the page's table");
        assert!(page.contains(p["run_id"].as_str().unwrap()));
    }
    assert_eq!(page.matches("▲").count(), 1, "one change point row");

    // Step wall time: by kind, filtered to main → two runs, no change.
    let (code, out, err) = stepgate(&[
        "trend",
        &ds,
        "--metric",
        "wall_ns",
        "--where",
        "label.branch=main",
        "--by",
        "kind",
        "--format",
        "json",
    ]);
    assert_eq!(code, 0, "{err}");
    let t = json(&out);
    assert_eq!(t["runs_matched"], 2);
    assert_eq!(t["series"][0]["group"]["kind"], "decode");
    assert_eq!(t["series"][0]["points"].as_array().unwrap().len(), 2);

    // Gate against the main-branch history: the slow run fails, a 1% rerun passes.
    let gate = |cand: &str, extra: &[&str]| {
        let mut a = vec![
            "gate",
            cand,
            "--history",
            &ds,
            "--where",
            "label.branch=main",
            "--min-runs",
            "2",
        ];
        a.extend_from_slice(extra);
        stepgate(&a)
    };
    let (code, out, err) = gate(&c.p("slow.sqlite"), &["--format", "json"]);
    assert_eq!(code, 1, "{out}{err}");
    let j = json(&out);
    crate::schema::assert_valid("comparison", &j);
    assert_eq!(j["source"]["baseline"]["kind"], "history");
    assert_eq!(j["verdict"], "regression");
    assert!(out.contains(&gemm()[..40]), "the slow kernel is named");
    assert_eq!(j["baseline"]["steps"], 120, "two runs × 60 steps pooled");
    let (code, out, err) = gate(&c.p("noise.sqlite"), &[]);
    assert_eq!(code, 0, "{out}{err}");
    // Runs mode: two run medians are fewer than the policy's 10 samples: inconclusive.
    let (code, out, err) = gate(
        &c.p("noise.sqlite"),
        &["--history-mode", "runs", "--format", "json"],
    );
    assert_eq!(code, 3, "{out}{err}");
    assert_eq!(json(&out)["baseline"]["steps"], 2);
    // Too few matching runs: inconclusive, saying why.
    let (code, out, _) = stepgate(&[
        "gate",
        &c.p("noise.sqlite"),
        "--history",
        &ds,
        "--where",
        "label.branch=main",
        "--min-runs",
        "5",
    ]);
    assert_eq!(code, 3, "{out}");
    assert!(out.contains("2 matching run(s)"), "{out}");
    // No run on another branch.
    let (code, out, _) = stepgate(&[
        "gate",
        &c.p("noise.sqlite"),
        "--history",
        &ds,
        "--where",
        "label.branch=nope",
    ]);
    assert_eq!(code, 3, "{out}");
}

#[test]
fn tables_hold_the_report_counts_and_sums() {
    let c = Case::new();
    let ds = c.path("d");
    let exp = report(&c.path("r.sqlite"), 30, 7, &|_| 1.0);
    let (code, _, err) = stepgate(&["export", &c.p("r.sqlite"), "-o", ds.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let (code, out, err) = stepgate(&["steps", &c.p("r.sqlite"), "--format", "json"]);
    assert_eq!(code, 0, "{err}");
    let sj = json(&out);
    let js = sj["steps"].as_array().unwrap();

    let steps = read_table(&ds, "steps");
    assert_eq!(steps.height(), 30);
    assert_eq!(steps.height(), js.len());
    // Busy time: the generator's ground truth and the JSON agree with the table.
    let truth: i64 = exp.steps.iter().map(|s| s.busy_ns).sum();
    let json_busy: i64 = js.iter().map(|s| s["busy_ns"].as_i64().unwrap()).sum();
    assert_eq!(i64_sum(&steps, "busy_ns"), truth);
    assert_eq!(json_busy, truth);
    let json_wall: i64 = js.iter().map(|s| s["wall_ns"].as_i64().unwrap()).sum();
    assert_eq!(i64_sum(&steps, "wall_ns"), json_wall);
    // Every per-step JSON field with a value in some step is a column: scalars and arrays
    // under their own name, objects flattened with `_`.
    let names: Vec<String> = steps
        .get_column_names()
        .iter()
        .map(|n| n.to_string())
        .collect();
    for (k, _) in js[0].as_object().unwrap() {
        let vals: Vec<&serde_json::Value> = js.iter().map(|s| &s[k]).collect();
        if vals.iter().all(|v| v.is_null()) {
            continue;
        }
        let hit = if vals.iter().any(|v| v.is_object()) {
            names.iter().any(|n| n.starts_with(&format!("{k}_")))
        } else {
            names.contains(k)
        };
        assert!(hit, "step field {k} has no column in {names:?}");
    }
    // Per-step names keep the JSON's, integers stay integers.
    for c in [
        "wall_ns",
        "busy_ns",
        "gap_ns",
        "launches",
        "kernels",
        "period_ns",
    ] {
        assert_eq!(steps.column(c).unwrap().dtype(), &DataType::Int64, "{c}");
    }
    assert_eq!(
        steps.column("kind").unwrap().str().unwrap().get(0),
        Some("decode")
    );
    assert_eq!(
        steps
            .column("composition_requests")
            .unwrap()
            .i64()
            .unwrap()
            .get(0),
        Some(32)
    );

    // step_kernels: every op of every step; 24 kernel rows per step, 8 distinct names.
    let sk = read_table(&ds, "step_kernels");
    assert_eq!(sk.height(), 30 * 8);
    assert_eq!(i64_sum(&sk, "instances"), 30 * KERNELS as i64);
    let json_cat: i64 = js
        .iter()
        .flat_map(|s| s["categories"].as_array().unwrap())
        .map(|c| c["exclusive_ns"].as_i64().unwrap())
        .sum();
    assert_eq!(i64_sum(&sk, "exclusive_ns"), json_cat);
    let kernels = read_table(&ds, "kernels");
    assert_eq!(kernels.height(), 8);
    assert_eq!(i64_sum(&kernels, "exclusive_ns"), json_cat);
    let devices = read_table(&ds, "devices");
    assert_eq!(devices.height(), 1);
    assert_eq!(i64_sum(&devices, "step_busy_ns"), truth);
    let runs = read_table(&ds, "runs");
    assert_eq!(runs.height(), 1);
    assert_eq!(
        runs.column("gpu_name").unwrap().str().unwrap().get(0),
        Some(H100)
    );
    assert_eq!(
        runs.column("steps").unwrap().i64().unwrap().get(0),
        Some(30)
    );
    assert_eq!(
        runs.column("engine").unwrap().str().unwrap().get(0),
        Some("vllm")
    );
    assert!(runs.column("found_by").is_ok());
    // Every table carries run_id and schema_version, and the same run id.
    let id = runs
        .column("run_id")
        .unwrap()
        .str()
        .unwrap()
        .get(0)
        .unwrap()
        .to_owned();
    for t in ["steps", "step_kernels", "kernels", "devices", "runs"] {
        let df = read_table(&ds, t);
        let ids = df.column("run_id").unwrap().str().unwrap();
        assert!(
            (0..ids.len()).all(|i| ids.get(i) == Some(id.as_str())),
            "{t}"
        );
        assert_eq!(
            df.column("schema_version").unwrap().i32().unwrap().get(0),
            Some(1),
            "{t}"
        );
    }
    // Hive layout.
    let f = &table_files(&ds, "steps")[0];
    assert!(
        f.to_str()
            .unwrap()
            .contains("/steps/gpu=nvidia-h100-80gb-hbm3/model=unknown/run-"),
        "{}",
        f.display()
    );
}

#[test]
fn the_same_run_twice_is_refused_or_replaced_never_doubled() {
    let c = Case::new();
    let ds = c.p("d");
    report(&c.path("r.sqlite"), 12, 1, &|_| 1.0);
    let export = |extra: &[&str]| {
        let r = c.p("r.sqlite");
        let mut a = vec!["export", r.as_str(), "-o", &ds];
        a.extend_from_slice(extra);
        stepgate(&a)
    };
    assert_eq!(export(&[]).0, 0);
    let (code, _, err) = export(&[]);
    assert_eq!(code, 2);
    assert!(
        err.contains("already in") && err.contains("--replace"),
        "{err}"
    );
    assert_eq!(table_files(&c.path("d"), "runs").len(), 1);
    let (code, out, _) = export(&["--replace"]);
    assert_eq!(code, 0);
    assert!(out.starts_with("replaced run"), "{out}");
    assert_eq!(
        read_table(&c.path("d"), "steps").height(),
        12,
        "not doubled"
    );
    // Another label is another run.
    assert_eq!(export(&["--label", "branch=main"]).0, 0);
    assert_eq!(table_files(&c.path("d"), "runs").len(), 2);
    assert_eq!(read_table(&c.path("d"), "steps").height(), 24);

    // gate/baseline --export: a run already there is a note, not an error.
    let (code, _, err) = stepgate(&[
        "baseline",
        "record",
        &c.p("r.sqlite"),
        "-o",
        &c.p("b.json"),
        "--export",
        &ds,
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("not added again"), "{err}");
    let (code, _, err) = stepgate(&[
        "gate",
        &c.p("r.sqlite"),
        "--baseline",
        &c.p("b.json"),
        "--export",
        &ds,
        "--label",
        "branch=pr",
    ]);
    assert_eq!(code, 0, "the same report passes; {err}");
    assert!(err.contains("exported run"), "{err}");
    assert_eq!(table_files(&c.path("d"), "runs").len(), 3);
}

#[test]
fn concurrent_exports_into_one_dataset_both_land_intact() {
    let c = Case::new();
    let ds = c.p("d");
    report(&c.path("a.sqlite"), 20, 1, &|_| 1.0);
    report(&c.path("b.sqlite"), 25, 2, &|_| 1.0);
    let spawn = |f: &str, label: &str| {
        std::process::Command::new(crate::common::bin())
            .args(["export", &c.p(f), "-o", &ds, "--label", label])
            .output()
            .unwrap()
    };
    // Two different runs at once, twice over (fresh dataset, then an existing one).
    for round in 0..2 {
        let label = format!("round={round}");
        let (a, b) = std::thread::scope(|s| {
            let a = s.spawn(|| spawn("a.sqlite", &label));
            let b = s.spawn(|| spawn("b.sqlite", &label));
            (a.join().unwrap(), b.join().unwrap())
        });
        assert!(a.status.success(), "{}", String::from_utf8_lossy(&a.stderr));
        assert!(b.status.success(), "{}", String::from_utf8_lossy(&b.stderr));
    }
    assert_eq!(table_files(&c.path("d"), "runs").len(), 4);
    assert_eq!(read_table(&c.path("d"), "steps").height(), 2 * (20 + 25));
    // The same run from two processes at once: exactly one lands.
    let (a, b) = std::thread::scope(|s| {
        let a = s.spawn(|| spawn("a.sqlite", "round=same"));
        let b = s.spawn(|| spawn("a.sqlite", "round=same"));
        (a.join().unwrap(), b.join().unwrap())
    });
    let codes = [a.status.code().unwrap(), b.status.code().unwrap()];
    assert!(codes.contains(&0) && codes.contains(&2), "{codes:?}");
    assert_eq!(table_files(&c.path("d"), "runs").len(), 5);
    assert_eq!(read_table(&c.path("d"), "steps").height(), 2 * 45 + 20);
    // No temporary file is left behind.
    let mut stack = vec![c.path("d")];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            assert!(!name.ends_with(".tmp") && !name.contains('#'), "{name}");
            if e.path().is_dir() {
                stack.push(e.path());
            }
        }
    }
}

#[test]
fn bad_inputs_get_one_line_errors() {
    let c = Case::new();
    std::fs::create_dir(c.path("empty")).unwrap();
    let (code, _, err) = stepgate(&["trend", &c.p("empty")]);
    assert_eq!(code, 2);
    assert!(err.contains("holds no runs"), "{err}");
    let (code, _, err) = stepgate(&["trend", &c.p("missing")]);
    assert_eq!(code, 2, "{err}");
    let (code, _, err) = stepgate(&["trend", &c.p("empty"), "--metric", "latency"]);
    assert_eq!(code, 2);
    assert!(err.contains("--metric"), "{err}");
    let (code, _, err) = stepgate(&["trend", &c.p("empty"), "--where", "colour=red"]);
    assert_eq!(code, 2);
    assert!(err.contains("unknown key"), "{err}");
    let (code, _, err) = stepgate(&["trend", &c.p("empty"), "--since", "last week"]);
    assert_eq!(code, 2);
    assert!(err.contains("--since"), "{err}");
    report(&c.path("r.sqlite"), 5, 1, &|_| 1.0);
    let (code, _, err) = stepgate(&["export", &c.p("r.sqlite"), "-o", &c.p("d"), "--label", "x"]);
    assert_eq!(code, 2);
    assert!(err.contains("key=value"), "{err}");
    let (code, _, _) = stepgate(&["gate", &c.p("r.sqlite")]);
    assert_eq!(code, 2, "neither --baseline nor --history");
    // A history that does not exist yet is inconclusive, not an error (docs/dataset.md).
    let (code, out, _) = stepgate(&["gate", &c.p("r.sqlite"), "--history", &c.p("missing")]);
    assert_eq!(code, 3, "{out}");
    assert!(out.contains("does not exist yet"), "{out}");
    let (code, _, err) = stepgate(&[
        "gate",
        &c.p("r.sqlite"),
        "--history",
        &c.p("empty"),
        "--where",
        "branch=main",
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("unknown key"), "{err}");
}
