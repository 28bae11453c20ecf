//! Datasets under hostile conditions built here: runs and steps files rewritten with a
//! schema from the future, a null run id, labels that are not JSON, sign-flipped and
//! absurd samples, a NaN context; zero-byte, truncated, random and foreign Parquet files;
//! one run in two partitions and an export killed between its renames; label values with
//! commas, names longer than a file name, an export into the report directory it reads, a
//! URL scheme this build does not reach; the candidate's own run in its history; a history that does not
//! exist yet; a baseline recorded from absurd step names. Expected values come from the generator and from `steps --format json`
//! of the same reports, never from what trend or gate printed before.

mod exports;
use exports::{run_within, walk, Mounted};

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use polars::prelude::*;

use crate::common::{bin, copy_dir, jittered_decode_report, run};

const H100: &str = "NVIDIA H100 80GB HBM3";

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn report(path: &Path, steps: usize, seed: u64) {
    jittered_decode_report(path, 8, steps, seed, H100, &|_| 1.0);
}

fn one_line_error(err: &str) {
    assert_eq!(err.lines().count(), 1, "not one line: {err:?}");
    assert!(err.starts_with("stepgate: error: "), "{err:?}");
}

fn json(out: &str) -> serde_json::Value {
    serde_json::from_str(out).unwrap_or_else(|e| panic!("{e}: {out}"))
}

/// The one file of a run in one table.
fn file_of(ds: &Path, table: &str, run_id: &str) -> PathBuf {
    let files = stepgate::dataset::layout::files_of_run(ds, run_id);
    files
        .into_iter()
        .find(|(t, _)| *t == table)
        .map(|(_, p)| p)
        .unwrap_or_else(|| panic!("no {table} file for {run_id}"))
}

/// Export `r` into `ds` with labels; returns the run id.
fn export(r: &Path, ds: &Path, labels: &[&str]) -> String {
    let mut a = vec!["export", s(r), "-o", s(ds)];
    for l in labels {
        a.extend(["--label", l]);
    }
    let (code, out, err) = run(&a);
    assert_eq!(code, 0, "{err}");
    out.split_whitespace().nth(2).unwrap().to_owned()
}

/// Rewrite one Parquet file through polars (what a corrupting or hand-editing tool does).
fn rewrite(path: &Path, edit: impl FnOnce(&mut DataFrame)) {
    let mut df = ParquetReader::new(std::fs::File::open(path).unwrap())
        .finish()
        .unwrap();
    edit(&mut df);
    let f = std::fs::File::create(path).unwrap();
    ParquetWriter::new(f).finish(&mut df).unwrap();
}

fn set_i64(df: &mut DataFrame, name: &str, f: impl Fn(Option<i64>) -> Option<i64>) {
    let ca = df.column(name).unwrap().i64().unwrap().clone();
    let v: Vec<Option<i64>> = (0..ca.len()).map(|i| f(ca.get(i))).collect();
    df.with_column(Column::new(name.into(), v)).unwrap();
}

fn set_col(df: &mut DataFrame, c: Column) {
    df.with_column(c).unwrap();
}

/// Wall-time medians per run id from `trend --format json` (one ungrouped series).
fn trend_medians(ds: &Path) -> (Vec<(String, f64)>, String) {
    let (code, out, err) = run(&["trend", s(ds), "--metric", "wall_ns", "--format", "json"]);
    assert_eq!(code, 0, "{err}");
    let t = json(&out);
    let pts = t["series"][0]["points"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    (
        pts.iter()
            .map(|p| {
                (
                    p["run_id"].as_str().unwrap().to_owned(),
                    p["median"].as_f64().unwrap(),
                )
            })
            .collect(),
        err,
    )
}

/// The median step wall time of a report by a second route: its `steps --format json`.
fn steps_median(r: &Path) -> f64 {
    let (code, out, err) = run(&["steps", s(r), "--format", "json"]);
    assert_eq!(code, 0, "{err}");
    let mut w: Vec<f64> = json(&out)["steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["wall_ns"].as_f64())
        .collect();
    w.sort_by(f64::total_cmp);
    let n = w.len();
    if n % 2 == 1 {
        w[n / 2]
    } else {
        (w[n / 2 - 1] + w[n / 2]) / 2.0
    }
}

#[test]
fn runs_rows_that_are_not_runs_are_left_out_with_a_warning_naming_the_file() {
    let d = tempfile::tempdir().unwrap();
    let ds = d.path().join("ds");
    let r = d.path().join("r.sqlite");
    report(&r, 12, 1);
    let ids: Vec<String> = (0..4)
        .map(|i| export(&r, &ds, &[&format!("n={i}")]))
        .collect();
    // Run 1 from a future stepgate, run 2 without a run id, run 3 with labels that are
    // not JSON; run 0 is untouched.
    let future = file_of(&ds, "runs", &ids[1]);
    rewrite(&future, |df| {
        set_col(df, Column::new("schema_version".into(), [99i32]));
    });
    let no_id = file_of(&ds, "runs", &ids[2]);
    rewrite(&no_id, |df| {
        set_col(df, Column::new("run_id".into(), [None::<&str>]));
    });
    let bad_labels = file_of(&ds, "runs", &ids[3]);
    rewrite(&bad_labels, |df| {
        set_col(df, Column::new("labels".into(), ["{not json"]));
    });
    let (pts, err) = trend_medians(&ds);
    assert_eq!(pts.len(), 1, "only the untouched run: {pts:?}");
    assert_eq!(pts[0].0, ids[0]);
    for (f, why) in [
        (&future, "newer stepgate (schema_version 99"),
        (&no_id, "has no run_id"),
        (&bad_labels, "labels are not a JSON object"),
    ] {
        let line = err
            .lines()
            .find(|l| l.contains(s(f)))
            .unwrap_or_else(|| panic!("no warning names {}: {err}", f.display()));
        assert!(
            line.starts_with("warning: ") && line.contains(why),
            "{line}"
        );
    }
    // gate --history reads the same runs: one usable run, fewer than --min-runs 2 (the
    // candidate is another report: its own export would be left out).
    let cand = d.path().join("c.sqlite");
    report(&cand, 12, 2);
    let (code, out, _) = run(&["gate", s(&cand), "--history", s(&ds), "--min-runs", "2"]);
    assert_eq!(code, 3, "{out}");
    assert!(out.contains("1 matching run(s)"), "{out}");
}

#[test]
fn sign_flipped_and_absurd_samples_never_reach_a_median_or_a_gate() {
    let d = tempfile::tempdir().unwrap();
    let ds = d.path().join("ds");
    let reports: Vec<PathBuf> = (0..4)
        .map(|i| {
            let r = d.path().join(format!("r{i}.sqlite"));
            report(&r, 20, 10 + i);
            r
        })
        .collect();
    let ids: Vec<String> = reports.iter().map(|r| export(r, &ds, &[])).collect();
    // Run 1: every wall time sign-flipped. Run 2: busy times ×10^12. Run 3: a NaN mean
    // context on one step (a derived value: dropped, the step kept).
    let flipped = file_of(&ds, "steps", &ids[1]);
    rewrite(&flipped, |df| set_i64(df, "wall_ns", |v| v.map(|x| -x)));
    let absurd = file_of(&ds, "steps", &ids[2]);
    rewrite(&absurd, |df| {
        set_i64(df, "busy_ns", |v| v.map(|x| x * 1_000_000_000_000));
    });
    let nan = file_of(&ds, "steps", &ids[3]);
    rewrite(&nan, |df| {
        let n = df.height();
        let v: Vec<Option<f64>> = (0..n).map(|i| (i == 0).then_some(f64::NAN)).collect();
        set_col(df, Column::new("mean_context".into(), v));
    });
    let (pts, err) = trend_medians(&ds);
    let got: Vec<&str> = pts.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(got, vec![ids[0].as_str(), ids[3].as_str()], "{err}");
    // The kept runs' medians are the reports' own (steps --format json, a second route).
    for (i, (_, m)) in [0, 3].iter().zip(&pts) {
        let want = steps_median(&reports[*i]);
        assert!((m - want).abs() < 0.5, "run {i}: {m} vs {want}");
    }
    assert!(
        err.contains(&format!("{}: a sample is outside", flipped.display())),
        "{err}"
    );
    assert!(err.contains("wall_ns is -"), "{err}");
    assert!(
        err.contains(&format!("{}: a sample is outside", absurd.display())),
        "{err}"
    );
    // 47.8 µs × 10^12.
    assert!(
        err.contains("busy_ns is 4.7") && err.contains("e16 (must be"),
        "{err}"
    );
    assert!(
        err.contains(&format!("{}: 1 derived sample", nan.display())),
        "{err}"
    );
    // No change point from a flipped column: the one change the table can show is the
    // kept runs' jitter, well under the 3% threshold.
    let (code, out, _) = run(&["trend", s(&ds), "--metric", "wall_ns"]);
    assert_eq!(code, 0);
    assert!(!out.contains('▲') && !out.contains('▼'), "{out}");
    // gate --history pools only the sane runs: 2 × 20 steps.
    let (code, out, err) = run(&[
        "gate",
        s(&reports[0]),
        "--history",
        s(&ds),
        "--min-runs",
        "1",
        "--format",
        "json",
    ]);
    assert_eq!(code, 0, "{out}{err}");
    let j = json(&out);
    // Run 0 is the candidate's own export (left out), runs 1 and 2 are refused: run 3.
    assert_eq!(j["baseline"]["steps"], 20, "{out}");
}

#[test]
fn damaged_and_foreign_files_are_named_in_one_line_with_what_to_do() {
    let d = tempfile::tempdir().unwrap();
    let r = d.path().join("r.sqlite");
    report(&r, 12, 1);
    // The gate's candidate is another report (its own run would be left out unread).
    let cand = d.path().join("c.sqlite");
    report(&cand, 12, 2);
    let pristine = d.path().join("pristine");
    let id = export(&r, &pristine, &[]);
    let foreign = d.path().join("foreign.parquet");
    let mut other = df!("colour" => ["red", "blue"], "n" => [1i64, 2]).unwrap();
    ParquetWriter::new(std::fs::File::create(&foreign).unwrap())
        .finish(&mut other)
        .unwrap();
    let foreign_bytes = std::fs::read(&foreign).unwrap();
    type Damage<'a> = Box<dyn Fn(&[u8]) -> Vec<u8> + 'a>;
    let damage: Vec<(&str, Damage)> = vec![
        ("zero bytes", Box::new(|_| Vec::new())),
        ("truncated", Box::new(|b| b[..b.len() / 2].to_vec())),
        (
            "random bytes",
            Box::new(|b| (0..b.len()).map(|i| (i * 7919 % 251) as u8).collect()),
        ),
        ("foreign schema", Box::new(|_: &[u8]| foreign_bytes.clone())),
    ];
    for table in ["runs", "steps"] {
        for (what, f) in &damage {
            let ds = d.path().join(format!("{table}-{}", what.replace(' ', "-")));
            copy_dir(&pristine, &ds);
            let target = file_of(&ds, table, &id);
            let bytes = std::fs::read(&target).unwrap();
            std::fs::write(&target, f(&bytes)).unwrap();
            for cmd in [
                vec!["trend", s(&ds)],
                vec!["gate", s(&cand), "--history", s(&ds), "--min-runs", "1"],
            ] {
                let (code, out, err) = run(&cmd);
                assert_eq!(code, 2, "{table} {what} {cmd:?}: {out}{err}");
                one_line_error(&err);
                assert!(err.contains(s(&target)), "{table} {what}: {err}");
                assert!(err.contains("move it aside"), "{table} {what}: {err}");
                assert!(
                    err.len() < 600,
                    "{table} {what}: {} chars: {err}",
                    err.len()
                );
            }
        }
    }
}

#[test]
fn one_run_is_one_run_and_an_interrupted_export_can_be_redone() {
    let d = tempfile::tempdir().unwrap();
    let ds = d.path().join("ds");
    let r = d.path().join("r.sqlite");
    report(&r, 12, 1);
    let id = export(&r, &ds, &[]);
    // The same run copied by hand into a second partition: counted once, with a warning.
    let copy = d.path().join("copy");
    copy_dir(&ds, &copy);
    for (t, f) in stepgate::dataset::layout::files_of_run(&copy, &id) {
        let moved = copy
            .join(t)
            .join("gpu=elsewhere")
            .join("model=unknown")
            .join(f.file_name().unwrap());
        std::fs::create_dir_all(moved.parent().unwrap()).unwrap();
        std::fs::copy(&f, &moved).unwrap();
    }
    let (pts, err) = trend_medians(&copy);
    assert_eq!(pts.len(), 1, "{pts:?}");
    assert!(err.contains("is in the dataset twice"), "{err}");
    assert!(err.contains("gpu=elsewhere"), "{err}");
    // An export killed after writing steps, step_kernels and kernels, before its commit:
    // no runs row names its files. The runs table decides: the run is not there, and
    // exporting it again commits a new export beside the leftovers.
    std::fs::remove_file(file_of(&ds, "runs", &id)).unwrap();
    std::fs::remove_file(file_of(&ds, "devices", &id)).unwrap();
    let leftovers: Vec<PathBuf> = stepgate::dataset::layout::files_of_run(&ds, &id)
        .into_iter()
        .map(|(_, p)| p)
        .collect();
    assert_eq!(leftovers.len(), 3, "{leftovers:?}");
    let (code, out, err) = run(&["export", s(&r), "-o", s(&ds)]);
    assert_eq!(code, 0, "{out}{err}");
    let files = stepgate::dataset::layout::files_of_run(&ds, &id);
    assert_eq!(files.len(), 8, "five committed, three left over: {files:?}");
    // vacuum leaves young leftovers alone (an export may still be writing them), and
    // removes exactly the three once they are older than the limit.
    let (code, out, err) = run(&["dataset", "vacuum", s(&ds), "--older-than", "1h"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("removed 0 object(s)") && out.contains("3 unnamed object(s) younger"),
        "{out}"
    );
    for f in &leftovers {
        assert!(Command::new("touch")
            .args(["-d", "2 hours ago"])
            .arg(f)
            .status()
            .unwrap()
            .success());
    }
    let (code, out, err) = run(&["dataset", "vacuum", s(&ds), "--older-than", "1h"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("removed 3 object(s)"), "{out}");
    for f in &leftovers {
        assert!(
            !f.exists() && out.contains(&f.display().to_string()),
            "{out}"
        );
    }
    let files = stepgate::dataset::layout::files_of_run(&ds, &id);
    assert_eq!(files.len(), 5, "{files:?}");
    let (pts, _) = trend_medians(&ds);
    assert_eq!(pts.len(), 1);
    assert!((pts[0].1 - steps_median(&r)).abs() < 0.5, "{pts:?}");
}

#[test]
fn label_values_with_commas_are_selectable_and_an_empty_value_is_an_error() {
    let d = tempfile::tempdir().unwrap();
    let ds = d.path().join("ds");
    let r = d.path().join("r.sqlite");
    report(&r, 12, 1);
    let a = export(&r, &ds, &["workload=sharegpt,c32"]);
    export(&r, &ds, &["workload=sharegpt"]);
    let (code, out, err) = run(&[
        "trend",
        s(&ds),
        "--where",
        r"label.workload=sharegpt\,c32",
        "--format",
        "json",
    ]);
    assert_eq!(code, 0, "{err}");
    let t = json(&out);
    assert_eq!(t["runs_matched"], 1);
    assert_eq!(t["series"][0]["points"][0]["run_id"], a.as_str());
    for cmd in [
        vec!["trend", s(&ds), "--where", "label.workload="],
        vec!["gate", s(&r), "--history", s(&ds), "--where", "gpu="],
    ] {
        let (code, _, err) = run(&cmd);
        assert_eq!(code, 2, "{cmd:?}");
        one_line_error(&err);
        assert!(err.contains("has no value"), "{err}");
    }
}

#[test]
fn a_full_disk_during_export_is_one_line_and_commits_nothing() {
    // A 96 KiB tmpfs holds one small export and not a second, larger one. Mounting needs
    // root with CAP_SYS_ADMIN: elsewhere the test says so and checks nothing.
    let d = tempfile::tempdir().unwrap();
    let mnt = d.path().join("small");
    std::fs::create_dir(&mnt).unwrap();
    let ok = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=96k", "tmpfs"])
        .arg(&mnt)
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        eprintln!("skipped: cannot mount a tmpfs here (needs root and CAP_SYS_ADMIN)");
        return;
    }
    let _m = Mounted(mnt.clone());
    let ds = mnt.join("ds");
    let small = d.path().join("small.sqlite");
    report(&small, 4, 1);
    let (code, err) = run_within(
        &["export", s(&small), "-o", s(&ds)],
        Duration::from_secs(60),
    );
    assert_eq!(code, 0, "{err}");
    let before = walk(&ds);
    let big = d.path().join("big.sqlite");
    report(&big, 400, 2);
    let (code, err) = run_within(&["export", s(&big), "-o", s(&ds)], Duration::from_secs(60));
    // A full local disk is an output error, as for every other output (io_faults.rs).
    assert_eq!(code, 5, "{err}");
    one_line_error(&err);
    assert!(err.contains("no space left"), "{err}");
    assert!(err.contains("nothing was committed"), "{err}");
    // The first run is all the dataset holds: no runs row, data object or temporary file of
    // the second.
    assert_eq!(walk(&ds), before);
}
