//! stepgate's NVTX projection against NVIDIA's own: `nsys stats -r nvtxgpuproj` (nsys
//! 2022.4, installed by `.ci/install_nsys.sh`) on the nsys fixtures and on an export of
//! the stand-in engine under nsys with ranges in a named domain (`TensorRT:layer_k`), a
//! launch call crossing its range's end and a start/end range ended on another thread:
//! per range, the name nsys shows, the projected start and end and the launch count
//! agree, and where the two rules differ (docs/nvtx.md) each side's answer is the one
//! derived from the export's own rows. Skips like tests/it/real_nsys.rs without nsys
//! (`STEPGATE_REQUIRE_NSYS=1` makes that a failure).

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use serde_json::Value;
use stepgate::source::nsys::export::{ensure_sqlite, ExportOptions};
use stepgate::source::{load_with, LoadOptions};
use stepgate::synth::augment::{augment, Spec};
use stepgate::synth::writer::GpuRec;
use stepgate::synth::Layout;
use stepgate::timing::steps::project_ranges;

use crate::common;
use crate::nsys_env::{need, profile_emit, Needs};

/// One projected range: name as nsys shows it, pid, tid, range start, range duration,
/// launches with GPU work, projected start, projected duration.
type Row = (String, i64, i64, i64, i64, u64, i64, i64);

/// `nsys stats -r nvtxgpuproj` on a copy of `sqlite` (nsys may write beside its input),
/// leaving out the ranges still open at the end of the capture (nsys extends them to the
/// last NVTX timestamp; stepgate has no extent for them, docs/nvtx.md).
fn nsys_rows(nsys: &Path, sqlite: &Path) -> Vec<Row> {
    let t = tempfile::tempdir().unwrap();
    let copy = t.path().join("r.sqlite");
    std::fs::copy(sqlite, &copy).unwrap();
    let out = Command::new(nsys)
        .args(["stats", "-r", "nvtxgpuproj", "-f", "csv", "-o", "-"])
        .arg(&copy)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "nsys stats: {text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let db = rusqlite::Connection::open(&copy).unwrap();
    let open: BTreeSet<i64> = db
        .prepare(
            "SELECT rowid FROM NVTX_EVENTS WHERE end IS NULL AND eventType IN (59, 60, 70, 71)",
        )
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    // nsys prints a "Processing [...]" line before the table.
    let csv_at = text
        .find("Name,Projected Start")
        .unwrap_or_else(|| panic!("no nvtxgpuproj table in: {text}"));
    let mut rd = csv::Reader::from_reader(&text.as_bytes()[csv_at..]);
    let mut rows = Vec::new();
    for rec in rd.records() {
        let r = rec.unwrap();
        let n = |i: usize| -> i64 { r[i].parse().unwrap() };
        if open.contains(&n(11)) {
            continue;
        }
        rows.push((
            r[0].to_owned(),
            n(6),
            n(7),
            n(3),
            n(4),
            n(8) as u64,
            n(1),
            n(2),
        ));
    }
    rows.sort();
    rows
}

/// stepgate's projection of every range with GPU work (the ranges nsys lists).
fn stepgate_rows(sqlite: &Path) -> (Vec<Row>, Vec<String>) {
    let trace = load_with(sqlite, &LoadOptions::all()).unwrap();
    let mut rows: Vec<Row> = project_ranges(&trace, stepgate::source::default_threads())
        .unwrap()
        .into_iter()
        .filter(|p| p.launches_with_ops > 0)
        .map(|p| {
            let (s, e) = (p.gpu_start_ns.unwrap(), p.gpu_end_ns.unwrap());
            let dur = p.end_ns - p.start_ns;
            (
                p.name,
                p.pid,
                p.tid,
                p.start_ns,
                dur,
                p.launches_with_ops,
                s,
                e - s,
            )
        })
        .collect();
    rows.sort();
    (rows, trace.meta.warnings)
}

/// Equal row lists, or the first rows each side has that the other lacks.
fn assert_same(what: &str, nsys: &[Row], ours: &[Row]) {
    if nsys == ours {
        return;
    }
    let a: BTreeSet<&Row> = nsys.iter().collect();
    let b: BTreeSet<&Row> = ours.iter().collect();
    let only_nsys: Vec<_> = a.difference(&b).take(5).collect();
    let only_ours: Vec<_> = b.difference(&a).take(5).collect();
    panic!(
        "{what}: {} nsys rows, {} stepgate rows; nsys only: {only_nsys:?}; stepgate only: {only_ours:?}",
        nsys.len(),
        ours.len()
    );
}

#[test]
fn nvtxgpuproj_agrees_on_every_range_of_the_nsys_fixtures() {
    let Some((_one, nsys)) = need(
        "nvtx_projection::nvtxgpuproj_agrees_on_every_range_of_the_nsys_fixtures",
        Needs::Import,
    ) else {
        return;
    };
    let dir = common::root().join("tests/fixtures/nsys");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "sqlite"))
        .collect();
    files.sort();
    assert!(files.len() >= 4, "{files:?}");
    let mut compared = 0;
    for f in &files {
        let want = nsys_rows(&nsys, f);
        let (got, _) = stepgate_rows(f);
        assert_same(&f.display().to_string(), &want, &got);
        compared += want.len();
    }
    // 5 saxpy ranges, 2 SGLang ones, and the FastVideo aten/NCCL ranges with GPU work.
    assert!(compared > 10_000, "{compared} ranges compared");
}

/// Per-layer ranges in domain TensorRT, start/end ranges ended here and elsewhere, and
/// one launch crossing the end of every `layer_1`, under the real nsys.
#[test]
fn named_domains_and_the_edge_cases_against_nvtxgpuproj() {
    let Some((_one, nsys)) = need(
        "nvtx_projection::named_domains_and_the_edge_cases_against_nvtxgpuproj",
        Needs::Ranges,
    ) else {
        return;
    };
    let t = tempfile::tempdir().unwrap();
    let (rep, log) = profile_emit(&nsys, t.path(), "tensorrt", 2);
    let sqlite = ensure_sqlite(&rep, &ExportOptions::from_env()).unwrap();
    let steps = log.iter().filter(|r| r["step"] == true).count();
    assert!(steps > 0, "{log:?}");
    let added = augment(
        &sqlite,
        &Spec {
            ranges: &|n| n == "enqueue" || n.starts_with("layer_") || n.starts_with("request_"),
            kernels_per_range: 2,
            kernel_ns: 100_000,
            gpu: GpuRec {
                id: 0,
                name: "NVIDIA H100 80GB HBM3".into(),
                memory_bandwidth_bytes_per_s: 3_352_000_000_000,
                sm_count: 132,
                total_memory_bytes: 85_520_809_984,
            },
            layout: Layout::Nsys2022_2,
            crossing_end: &|n| n == "layer_1",
        },
    )
    .unwrap();
    // Work was added inside the range another thread ended, too.
    assert!(added.iter().any(|a| a.name == "request_ended_elsewhere"));
    let want = nsys_rows(&nsys, &sqlite);
    let (got, warnings) = stepgate_rows(&sqlite);
    // nsys names the layers `TensorRT:layer_k`; so does stepgate.
    let names: BTreeSet<&str> = want.iter().map(|r| r.0.as_str()).collect();
    for n in [
        "TensorRT:layer_0",
        "TensorRT:layer_1",
        "TensorRT:layer_2",
        "enqueue",
    ] {
        assert!(names.contains(n), "{n} not in nsys' names {names:?}");
    }
    // A range ended on another thread: neither lists it, and stepgate says why.
    assert!(!names.contains("request_ended_elsewhere"), "{names:?}");
    assert!(names.contains("request_ended_here"), "{names:?}");
    assert!(got.iter().all(|r| r.0 != "request_ended_elsewhere"));
    assert!(
        warnings
            .iter()
            .any(|w| w.starts_with("1 NVTX start/end range(s) were ended on another thread")),
        "{warnings:?}"
    );
    // Every range but layer_1 agrees whole.
    let crossed = |r: &&Row| r.0 == "TensorRT:layer_1";
    let keep = |v: &[Row]| -> Vec<Row> { v.iter().filter(|r| !crossed(r)).cloned().collect() };
    assert_same("tensorrt stand-in", &keep(&want), &keep(&got));
    // layer_1: nsys counts the calls wholly inside, stepgate those that start inside:
    // both as the export's own rows say.
    let db = rusqlite::Connection::open(&sqlite).unwrap();
    let calls = |r: &Row, whole: bool| -> u64 {
        let gtid = (r.1 << 24) | r.2;
        let end = if whole {
            "AND c.end <= ?3"
        } else {
            "AND c.start <= ?3"
        };
        db.query_row(
            &format!(
                "SELECT count(DISTINCT c.correlationId) FROM CUPTI_ACTIVITY_KIND_RUNTIME c \
                 JOIN CUPTI_ACTIVITY_KIND_KERNEL k ON k.correlationId = c.correlationId \
                 WHERE c.globalTid & 0xFFFFFFFFFFFF = ?1 AND c.start >= ?2 {end}"
            ),
            rusqlite::params![gtid, r.3, r.3 + r.4],
            |x| x.get::<_, i64>(0),
        )
        .unwrap() as u64
    };
    let theirs: Vec<&Row> = want.iter().filter(crossed).collect();
    let ours: Vec<&Row> = got.iter().filter(crossed).collect();
    assert_eq!(theirs.len(), steps, "{theirs:?}");
    assert_eq!(ours.len(), steps, "{ours:?}");
    for (n, s) in theirs.iter().zip(&ours) {
        assert_eq!((&n.0, n.1, n.2, n.3, n.4), (&s.0, s.1, s.2, s.3, s.4));
        assert_eq!(n.5, calls(n, true), "nsys: {n:?}");
        assert_eq!(s.5, calls(s, false), "stepgate: {s:?}");
        assert_eq!(s.5, n.5 + 1, "the crossing launch: {n:?} vs {s:?}");
    }
    // Through the command line: the layer ranges are steps by either name, with their
    // domain, each projected as nsys projects it.
    for re in ["^TensorRT:layer_2$", "^layer_2$"] {
        let (code, out, err) = common::run(&[
            "steps",
            sqlite.to_str().unwrap(),
            "--steps",
            re,
            "--format",
            "json",
        ]);
        assert_eq!(code, 0, "{re}: {err}");
        let j: Value = serde_json::from_str(&out).unwrap();
        let s = j["steps"].as_array().unwrap();
        assert_eq!(s.len(), steps, "{re}");
        for s in s {
            assert_eq!(s["name"], "layer_2", "{re}");
            assert_eq!(s["domain"], "TensorRT", "{re}");
            let start = s["cpu_start_ns"].as_i64().unwrap();
            let n = want
                .iter()
                .find(|r| r.0 == "TensorRT:layer_2" && r.3 == start)
                .unwrap_or_else(|| panic!("{re}: no nsys row at {start}"));
            assert_eq!(s["ops"].as_u64(), Some(n.5), "{re}");
            assert_eq!(s["gpu_start_ns"].as_i64(), Some(n.6), "{re}");
            assert_eq!(s["gpu_end_ns"].as_i64(), Some(n.6 + n.7), "{re}");
        }
    }
}
