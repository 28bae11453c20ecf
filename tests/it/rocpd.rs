//! AMD rocpd databases: a generated rocprofv3 database (rocprofiler-sdk's own DDL) and the
//! real rocmProfileData RPD fixture, read by `analyze`, `steps` and `gate`, checked against
//! the generator's truth and against a union computed here with sqlite directly.

use std::path::{Path, PathBuf};

use serde_json::Value;
use stepgate::synth::rocpd::{self, Spec, Truth};

use crate::common;

const RPD: &str = "tests/fixtures/rocpd/rpd2_rocmprofiledata_matmul_gfx90a.rpd";

fn generated(dir: &Path, name: &str, spec: &Spec) -> (PathBuf, Truth) {
    let p = dir.join(name);
    let truth = rocpd::write(&p, spec).unwrap();
    (p, truth)
}

fn json(args: &[&str]) -> Value {
    let out = std::process::Command::new(common::bin())
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "stepgate {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn analyze_on_a_generated_rocpd_database_equals_the_generators_truth() {
    let dir = tempfile::tempdir().unwrap();
    let spec = Spec {
        processes: 2,
        ..Spec::default()
    };
    let (db, truth) = generated(dir.path(), "two_ranks.db", &spec);
    let a = json(&["analyze", db.to_str().unwrap(), "--format", "json"]);
    assert_eq!(a["source"]["format"], "rocpd");
    let devices = a["devices"].as_array().unwrap();
    assert_eq!(devices.len(), 2, "{a}");
    for (gpu, busy) in &truth.busy_ns {
        let d = devices.iter().find(|d| d["device"] == *gpu).unwrap();
        assert_eq!(d["busy_ns"].as_i64(), Some(*busy), "GPU {gpu}: {d}");
        assert_eq!(d["name"], "AMD Instinct MI300X");
    }
    // The overlap is real: the union is less than the sum of durations.
    let sum: i64 = truth.kernel_total_ns.iter().map(|k| k.1).sum::<i64>() / 2 + 20 * 4_000;
    assert!(truth.busy_ns[0].1 < sum, "{truth:?}");
}

#[test]
fn steps_on_a_generated_rocpd_database_are_its_roctx_ranges() {
    let dir = tempfile::tempdir().unwrap();
    let (db, truth) = generated(dir.path(), "one_rank.db", &Spec::default());
    let s = json(&["steps", db.to_str().unwrap(), "--format", "json"]);
    let steps = s["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 20, "{}", s["method"]);
    assert_eq!(s["method"], "engine");
    for (st, busy) in steps.iter().zip(&truth.step_busy_ns) {
        assert_eq!(st["busy_ns"].as_i64(), Some(*busy), "{st}");
        // 8 launches + 1 copy per step, every one linked to its HIP call by stack_id.
        assert_eq!(st["kernels"].as_u64(), Some(8), "{st}");
    }
}

#[test]
fn a_gate_runs_between_two_rocpd_captures() {
    let dir = tempfile::tempdir().unwrap();
    let (base, _) = generated(
        dir.path(),
        "base.db",
        &Spec {
            steps: 30,
            ..Spec::default()
        },
    );
    let (same, _) = generated(
        dir.path(),
        "same.db",
        &Spec {
            steps: 30,
            ..Spec::default()
        },
    );
    let bl = dir.path().join("bl.json");
    let st = std::process::Command::new(common::bin())
        .args([
            "baseline",
            "record",
            base.to_str().unwrap(),
            "-o",
            bl.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(
        st.status.success(),
        "{}",
        String::from_utf8_lossy(&st.stderr)
    );
    let g = std::process::Command::new(common::bin())
        .args([
            "gate",
            same.to_str().unwrap(),
            "--baseline",
            bl.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    // The same workload twice: identical durations, so the gate must not find a regression.
    assert_eq!(
        g.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&g.stdout)
    );
    // The generator's gaps widened by 20 µs per dispatch: a regression of the step wall.
    let (slow, _) = generated(
        dir.path(),
        "slow.db",
        &Spec {
            steps: 30,
            gap_ns: 23_000,
            ..Spec::default()
        },
    );
    let g = std::process::Command::new(common::bin())
        .args([
            "gate",
            slow.to_str().unwrap(),
            "--baseline",
            bl.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(
        g.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&g.stdout)
    );
}

/// The union of every op's interval, per GPU, computed with SQL of our own over RPD's
/// `rocpd_op`.
fn rpd_union(path: &Path) -> Vec<(i64, i64)> {
    let c = rusqlite::Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
        .unwrap();
    let mut st = c
        .prepare(
            "SELECT gpuId, start, \"end\" FROM rocpd_op O JOIN rocpd_string T ON T.id = O.opType_id \
             WHERE T.string IN ('KernelExecution', 'FillBuffer') OR T.string LIKE 'Copy%' \
             ORDER BY gpuId, start",
        )
        .unwrap();
    let rows: Vec<(i64, i64, i64)> = st
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let mut out: Vec<(i64, i64)> = Vec::new();
    let mut cur: Option<(i64, i64, i64)> = None;
    let mut total = 0;
    for (g, s, e) in rows {
        match cur {
            Some((cg, cs, ce)) if cg == g && s <= ce => cur = Some((cg, cs, ce.max(e))),
            Some((cg, cs, ce)) => {
                total += ce - cs;
                if cg != g {
                    out.push((cg, total));
                    total = 0;
                }
                cur = Some((g, s, e));
            }
            None => cur = Some((g, s, e)),
        }
    }
    if let Some((g, s, e)) = cur {
        out.push((g, total + e - s));
    }
    out
}

#[test]
fn analyze_on_the_real_rpd_fixture_equals_an_independent_union() {
    let path = common::root().join(RPD);
    let want = rpd_union(&path);
    // The fixture's README: one GPU (gpuId 2), union = Σ durations = 183,918,056 ns.
    assert_eq!(want, vec![(2, 183_918_056)]);
    let a = json(&["analyze", path.to_str().unwrap(), "--format", "json"]);
    let d = &a["devices"][0];
    assert_eq!(d["device"], 2);
    assert_eq!(d["busy_ns"].as_i64(), Some(183_918_056), "{d}");
    assert_eq!(d["kernels"].as_u64(), Some(29), "{d}");
    assert_eq!(a["source"]["schema_version"], "2");
}

#[test]
fn a_file_that_is_not_rocpd_nor_nsys_is_refused_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("v9.db");
    let c = rusqlite::Connection::open(&p).unwrap();
    c.execute_batch(
        "CREATE TABLE rocpd_metadata (id INTEGER PRIMARY KEY, tag TEXT, value TEXT);
         INSERT INTO rocpd_metadata (tag, value) VALUES ('schema_version', '1');",
    )
    .unwrap();
    drop(c);
    let out = std::process::Command::new(common::bin())
        .args(["analyze", p.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("schema_version 1"), "{err}");
}

/// Every string of a report (actions, verdict, held-back advice), to search for a name.
fn all_strings(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::String(s) => out.push(s.clone()),
        Value::Array(a) => a.iter().for_each(|x| all_strings(x, out)),
        Value::Object(o) => o.values().for_each(|x| all_strings(x, out)),
        _ => {}
    }
}

#[test]
fn an_amd_kernel_is_sent_to_rocprof_compute_never_to_nsight_compute() {
    let dir = tempfile::tempdir().unwrap();
    // One GEMM a step, so it dominates: its share is its total over the GPU's union.
    let spec = Spec {
        steps: 6,
        kernels_per_step: 1,
        overlap: false,
        ..Spec::default()
    };
    let (db, truth) = generated(dir.path(), "one_gemm.db", &spec);
    let gemm = rocpd::KERNELS[0].0;
    let gemm_ns = truth
        .kernel_total_ns
        .iter()
        .find(|(n, _)| n == gemm)
        .unwrap()
        .1;
    let share = gemm_ns as f64 / truth.busy_ns[0].1 as f64;
    let j = json(&["steps", db.to_str().unwrap(), "--format", "json"]);
    assert_eq!(
        j["verdict"]["rule"], "one-kernel-dominant",
        "{}",
        j["verdict"]
    );
    assert_eq!(
        j["verdict"]["line"].as_str().unwrap(),
        format!(
            "{gemm} is {:.0}% of busy time over 6 steps (measured): take it to rocprof-compute",
            share * 100.0
        )
    );
    let mut s = Vec::new();
    all_strings(&j, &mut s);
    assert!(!s.iter().any(|x| x.contains("Nsight Compute")), "{s:?}");
}

#[test]
fn a_copy_that_holds_the_busy_time_is_not_sent_to_a_kernel_profiler() {
    // The real RPD's heuristic steps are mostly host-to-device copies.
    let j = json(&["steps", RPD, "--format", "json"]);
    let steps = j["steps"].as_array().unwrap();
    // The copies' share of the summed busy time, from the steps' own top kernels (the copy
    // is the largest op of every step that has one).
    let (mut copy, mut busy) = (0i64, 0i64);
    for s in steps.iter().filter(|s| !s["wall_ns"].is_null()) {
        busy += s["busy_ns"].as_i64().unwrap();
        for k in s["top_kernels"].as_array().unwrap() {
            if k["name"] == "[memcpy HtoD]" {
                copy += k["exclusive_ns"].as_i64().unwrap();
            }
        }
    }
    let share = copy as f64 / busy as f64;
    assert!(share > 0.5, "{share}");
    let v = &j["verdict"];
    assert_eq!(v["rule"], "one-kernel-dominant", "{v}");
    let line = v["line"].as_str().unwrap();
    assert!(
        line.starts_with(&format!(
            "[memcpy HtoD] is {:.0}% of busy time over {} steps (measured): a copy, not a kernel (rocprof-compute has nothing to find in it)",
            share * 100.0,
            steps.iter().filter(|s| !s["wall_ns"].is_null()).count()
        )),
        "{line}"
    );
    assert!(line.contains("pinned host memory"), "{line}");
    assert_eq!(
        v["held_back"][0],
        "rocprof-compute for [memcpy HtoD] (a copy, not a kernel)"
    );
    // Each step whose top op is a copy says so; a step whose GEMM dominates still goes to
    // AMD's kernel profiler.
    let mut copies = 0;
    for s in steps {
        let (Some(a), Some(top)) = (
            s["attribution"]["action"].as_str(),
            s["top_kernels"][0]["name"].as_str(),
        ) else {
            continue;
        };
        if a.contains("of busy time") && top.starts_with("[mem") {
            copies += 1;
            assert!(
                a.contains("a copy, not a kernel") && !a.contains("take it to"),
                "{a}"
            );
        } else if a.contains("of busy time") {
            assert!(a.ends_with("take it to rocprof-compute"), "{a}");
        }
    }
    assert!(copies > 0);
}
