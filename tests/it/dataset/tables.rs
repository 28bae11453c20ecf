//! The dataset's tables: counts and sums, the same run twice, concurrent exports.

use super::*;

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
