//! The readers on crafted captures: the capture sidecar (`BASE.capture.json`) that is a
//! FIFO, a link to `/dev/zero` or megabytes long is refused in one line without hanging
//! or reading it all; an nsys export whose NVTX table is `NVTX_EVENTS_V3` keeps its step
//! markers.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common;

const H100: &str = "NVIDIA H100 80GB HBM3";

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// `stepgate steps REPORT --format json`, killed after 60 s: (exit code, stdout, stderr,
/// whether it had to be killed).
fn steps_bounded(report: &Path) -> (Option<i32>, String, String, bool) {
    let mut child = Command::new(common::bin())
        .args(["steps", s(report), "--format", "json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    let mut killed = false;
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(60) {
            child.kill().unwrap();
            killed = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        killed,
    )
}

#[test]
fn a_sidecar_that_is_a_fifo_a_device_or_huge_is_refused_in_one_line() {
    let d = tempfile::tempdir().unwrap();
    let report = d.path().join("run.sqlite");
    common::jittered_decode_report(&report, 8, 12, 1, H100, &|_| 1.0);
    let sidecar = d.path().join("run.capture.json");

    std::os::unix::fs::symlink("/dev/zero", &sidecar).unwrap();
    let (code, _, err, killed) = steps_bounded(&report);
    assert!(!killed, "reading a /dev/zero sidecar did not stop");
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("is not a regular file"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    std::fs::remove_file(&sidecar).unwrap();

    let made = Command::new("mkfifo").arg(&sidecar).status().unwrap();
    assert!(made.success());
    let (code, _, err, killed) = steps_bounded(&report);
    assert!(!killed, "a FIFO sidecar hung the read");
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("is not a regular file"), "{err}");
    std::fs::remove_file(&sidecar).unwrap();

    // Two megabytes of JSON whitespace: refused by its size, not parsed.
    let big = 2 << 20;
    std::fs::write(&sidecar, " ".repeat(big)).unwrap();
    let (code, _, err, _) = steps_bounded(&report);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains(&format!("is {big} bytes")), "{err}");
    std::fs::remove_file(&sidecar).unwrap();

    // Without a sidecar the same report reads.
    let (code, _, err, _) = steps_bounded(&report);
    assert_eq!(code, Some(0), "{err}");
}

/// The steps `steps --format json` finds: (count, found_by of the first).
fn steps_found(report: &Path) -> (usize, String) {
    let (code, out, err) = common::run(&["steps", s(report), "--format", "json"]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let steps = v["steps"].as_array().unwrap();
    (
        steps.len(),
        steps[0]["found_by"].as_str().unwrap().to_owned(),
    )
}

#[test]
fn nvtx_tables_renamed_with_a_version_suffix_keep_the_step_markers() {
    let d = tempfile::tempdir().unwrap();
    let report = d.path().join("run.sqlite");
    // 12 vLLM execute_… marker steps, as the generator writes them.
    common::jittered_decode_report(&report, 8, 12, 1, H100, &|_| 1.0);
    assert_eq!(steps_found(&report), (12, "marker".to_owned()));
    for table in ["NVTX_EVENTS_V2", "NVTX_EVENTS_V3"] {
        let renamed = d.path().join(format!("{table}.sqlite"));
        std::fs::copy(&report, &renamed).unwrap();
        let conn = rusqlite::Connection::open(&renamed).unwrap();
        conn.execute_batch(&format!("ALTER TABLE NVTX_EVENTS RENAME TO {table}"))
            .unwrap();
        drop(conn);
        assert_eq!(steps_found(&renamed), (12, "marker".to_owned()), "{table}");
    }
}

/// A Kineto fixture as a JSON value.
fn kineto_doc(rel: &str) -> serde_json::Value {
    use std::io::Read;
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(std::fs::File::open(common::fixture(rel)).unwrap())
        .read_to_end(&mut out)
        .unwrap();
    serde_json::from_slice(&out).unwrap()
}

const DDP: &str = "kineto/hta_a100_ddp_rank0_of2_profilerstep.json.gz";

#[test]
fn a_world_size_beyond_the_tp_bound_is_ignored_with_a_warning() {
    use stepgate::source::{self, LoadOptions};
    let d = tempfile::tempdir().unwrap();
    let mut doc = kineto_doc(DDP);
    // The fixture says 2 (rank 0 of 2).
    assert_eq!(doc["distributedInfo"]["world_size"], 2);
    let t = source::load_with(&common::fixture(DDP), &LoadOptions::all()).unwrap();
    assert_eq!(t.meta.distributed.unwrap().world_size, Some(2));
    for bad in [65_536, 0, -2] {
        doc["distributedInfo"]["world_size"] = bad.into();
        let p = d.path().join("rank0.json");
        std::fs::write(&p, doc.to_string()).unwrap();
        let t = source::load_with(&p, &LoadOptions::all()).unwrap();
        assert_eq!(t.meta.distributed.unwrap().world_size, None, "{bad}");
        let w = format!("distributedInfo.world_size {bad} is outside 1..=4096; ignored");
        assert!(
            t.meta.warnings.iter().any(|x| x.contains(&w)),
            "{:?}",
            t.meta.warnings
        );
    }
}

#[test]
fn a_duplicated_trace_events_key_is_refused() {
    let d = tempfile::tempdir().unwrap();
    let text = kineto_doc(DDP).to_string();
    // A second `traceEvents`, empty, before the file's own: read naively, the two would
    // be concatenated (or one of them silently dropped).
    let dup = format!("{{\"traceEvents\": [],{}", &text[1..]);
    let p = d.path().join("dup.json");
    std::fs::write(&p, dup).unwrap();
    let (code, _, err) = common::run(&["analyze", s(&p)]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("the top-level key \"traceEvents\" appears twice"),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "{err}");
}

/// A directory of rank traces holding the `capture.json` the docs name: the sidecar is read
/// as the sidecar (its TP reaches the operating point) and never taken for a rank.
#[test]
fn a_rank_directory_with_its_capture_sidecar_reads_both() {
    use stepgate::wire::capture::CaptureSidecar;
    let d = tempfile::tempdir().unwrap();
    std::fs::copy(
        common::fixture("kineto/sglang_mi300x_qwen3-8b_decode_step.json.gz"),
        d.path().join("q-TP-0.trace.json.gz"),
    )
    .unwrap();
    let side = CaptureSidecar {
        engine: Some("sglang".to_owned()),
        tp: Some(1),
        ..CaptureSidecar::new()
    };
    let path = stepgate::operating_point::sidecar::write_beside(d.path(), &side).unwrap();
    assert_eq!(path, d.path().join("capture.json"));
    let (code, out, err, killed) = steps_bounded(d.path());
    assert!(!killed);
    assert_eq!(code, Some(0), "{err}");
    let j: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert!(!j["steps"].as_array().unwrap().is_empty(), "{out:.300}");
    assert!(
        j["operating_point"]["tp"]["evidence"]
            .as_str()
            .unwrap_or_default()
            .contains("capture"),
        "{}",
        j["operating_point"]
    );
}
