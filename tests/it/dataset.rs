//! Run history: `export` into a Parquet dataset, `trend` over it, `gate --history`, and the
//! dataset's integrity under duplicate and concurrent exports. Reports are generated with
//! `stepgate::synth`, so expected values come from the generator's own schedule.

mod tables;

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
