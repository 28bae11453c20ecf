//! Under the real Nsight Systems, with no GPU needed: a stand-in engine (tests/standin/
//! engine.py) emits the engines' own NVTX step ranges and logs what it emitted; nsys
//! profiles it (`-t nvtx,osrt`), stepgate exports the report (importing the `.qdstrm` nsys
//! 2022.4 leaves), the generator adds kernels inside the real ranges (`synth::augment`),
//! and the steps stepgate finds are checked against the stand-in's log and the export's
//! raw rows. `capture` drives the stand-in as a server under nsys: readiness, arming,
//! shutdown, the process group gone, and — on a machine without a usable GPU — the
//! "capture range never opened" error. Without nsys, or without an `nvtx` Python package
//! that records ranges under it (a probe proves it once), each test prints why it skipped
//! and passes; `.ci/run` installs both and sets `STEPGATE_REQUIRE_NSYS=1`, which turns a
//! skip into a failure.

use std::collections::HashSet;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;
use stepgate::probe::cuda::{device_status, DeviceStatus};
use stepgate::source::nsys::export::{ensure_sqlite, ExportOptions};
use stepgate::synth::augment::{augment, Spec};
use stepgate::synth::writer::GpuRec;
use stepgate::synth::Layout;

use crate::common;
use crate::nsys_env::{
    gated_on_domain_enabled, need, profile_emit, python, read_log, standin, Needs,
};

/// Steps each stand-in run emits.
const STEPS: usize = 6;
/// Kernels added inside each step range, and each one's duration.
const KERNELS: u32 = 3;
const KERNEL_NS: i64 = 200_000;
/// The stand-in's host time per step range (tests/standin/engine.py, STEP_SECONDS).
const STEP_NS: i64 = 4_000_000;

#[test]
fn nvtx_versions_from_0_2_12_are_the_ones_gated_on_domain_enabled() {
    for v in ["0.2.12", "0.2.17", "0.3.0", "1.0"] {
        assert!(gated_on_domain_enabled(v), "{v}");
    }
    for v in ["0.2.11", "0.2.8", "0.2.10", "0.1.9"] {
        assert!(!gated_on_domain_enabled(v), "{v}");
    }
}

/// Whether any live process is in process group `pgid` (zombies count as gone).
fn group_alive(pgid: i64) -> bool {
    std::fs::read_dir("/proc").unwrap().flatten().any(|e| {
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
            return false;
        };
        let Some(rest) = stat.rsplit(')').next() else {
            return false;
        };
        let f: Vec<&str> = rest.split_whitespace().collect();
        f.len() > 3 && f[0] != "Z" && f[2].parse::<i64>().ok() == Some(pgid)
    })
}

/// One engine's NVTX step ranges, through the real nsys, found as steps.
fn steps_match_what_the_standin_emitted(nsys: &Path, engine: &str, found_by: &str) {
    let t = tempfile::tempdir().unwrap();
    let (rep, log) = profile_emit(nsys, t.path(), engine, STEPS);
    let emitted: Vec<&Value> = log
        .iter()
        .filter(|r| r["event"] == "range" && r["step"] == true)
        .collect();
    assert_eq!(emitted.len(), STEPS, "{engine}: the stand-in's own log");
    // stepgate's export path: the .qdstrm imported, then `nsys export --type sqlite`.
    let sqlite = ensure_sqlite(&rep, &ExportOptions::from_env()).unwrap();
    let names: HashSet<String> = emitted
        .iter()
        .map(|r| r["name"].as_str().unwrap().to_owned())
        .collect();
    let is_step = |n: &str| names.contains(n);
    let added = augment(
        &sqlite,
        &Spec {
            ranges: &is_step,
            kernels_per_range: KERNELS,
            kernel_ns: KERNEL_NS,
            gpu: GpuRec {
                id: 0,
                name: "NVIDIA H100 80GB HBM3".into(),
                memory_bandwidth_bytes_per_s: 3_352_000_000_000,
                sm_count: 132,
                total_memory_bytes: 85_520_809_984,
            },
            layout: Layout::Nsys2022_2,
            crossing_end: &|_| false,
        },
    )
    .unwrap();
    // The export's own NVTX rows are the ranges the stand-in logged, on its thread.
    assert_eq!(added.len(), STEPS, "{engine}: {added:?}");
    for (a, e) in added.iter().zip(&emitted) {
        assert_eq!(a.name, e["name"].as_str().unwrap(), "{engine}");
        assert_eq!(a.pid, e["pid"].as_i64().unwrap(), "{engine}: pid");
        assert_eq!(
            a.tid,
            e["tid"].as_i64().unwrap(),
            "{engine}: tid (the kernel's)"
        );
        // nsys times the range inside the stand-in's own bracket around push/pop.
        let nvtx = a.end_ns - a.start_ns;
        assert!(
            (STEP_NS..=e["dur_ns"].as_i64().unwrap()).contains(&nvtx),
            "{engine}: NVTX {nvtx} ns vs logged {}",
            e["dur_ns"]
        );
    }
    let (code, out, err) = common::run(&["steps", sqlite.to_str().unwrap(), "--format", "json"]);
    assert_eq!(code, 0, "{engine}: {err}");
    let j: Value = serde_json::from_str(&out).unwrap();
    let steps = j["steps"].as_array().unwrap();
    assert_eq!(steps.len(), STEPS, "{engine}: {err}");
    assert_eq!(j["found_by"], found_by, "{engine}");
    for (s, (a, e)) in steps.iter().zip(added.iter().zip(&emitted)) {
        assert_eq!(s["pid"], e["pid"], "{engine}");
        assert_eq!(s["tid"], e["tid"], "{engine}");
        assert_eq!(
            s["cpu_ns"].as_i64(),
            Some(a.end_ns - a.start_ns),
            "{engine}"
        );
        assert_eq!(s["kernels"].as_u64(), Some(u64::from(KERNELS)), "{engine}");
        // Kernels 0.2 ms apart-or-more never overlap: busy is their sum.
        assert_eq!(
            s["busy_ns"].as_i64(),
            Some(i64::from(KERNELS) * KERNEL_NS),
            "{engine}"
        );
        if let Some(kind) = e["kind"].as_str() {
            assert_eq!(s["kind"], kind, "{engine}: {}", e["name"]);
        }
    }
}

#[test]
fn vllm_detailed_step_ranges_under_real_nsys() {
    let Some((_one, nsys)) = need(
        "real_nsys::vllm_detailed_step_ranges_under_real_nsys",
        Needs::Ranges,
    ) else {
        return;
    };
    steps_match_what_the_standin_emitted(&nsys, "vllm", "marker");
}

#[test]
fn sglang_scheduler_ranges_under_real_nsys() {
    let Some((_one, nsys)) = need(
        "real_nsys::sglang_scheduler_ranges_under_real_nsys",
        Needs::Ranges,
    ) else {
        return;
    };
    // SGLang's scheduler stages are a family of their own: run_batch is the step.
    steps_match_what_the_standin_emitted(&nsys, "sglang", "scheduler");
}

#[test]
fn trtllm_executor_ranges_in_their_domain_under_real_nsys() {
    let Some((_one, nsys)) = need(
        "real_nsys::trtllm_executor_ranges_in_their_domain_under_real_nsys",
        Needs::Ranges,
    ) else {
        return;
    };
    steps_match_what_the_standin_emitted(&nsys, "trtllm", "marker");
}

/// A loopback port free a moment ago.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `capture --engine ENGINE --drive --nsys-out` with the stand-in as the server: ready,
/// armed, driven, stopped, shut down, its process group gone; without a usable GPU the
/// range never opens (exit 4, one line saying why), with one the export is written.
fn capture_under_real_nsys(engine: &str, ready: &str, generate: &str, server_flags: &[&str]) {
    let t = tempfile::tempdir().unwrap();
    let port = free_port().to_string();
    let log = t.path().join("server.log");
    let base = t.path().join("run");
    let url = format!("http://127.0.0.1:{port}");
    let t0 = Instant::now();
    let out = Command::new(common::bin())
        .args(["capture", "--engine", engine, "--url", &url, "--hold", "1"])
        .args(["--num-steps", "0", "--drive", "--concurrency", "2"])
        .args(["--max-tokens", "4", "--warmup", "0.5"])
        .args([
            "--ready-timeout",
            "60",
            "--shutdown-grace",
            "60",
            "--nsys-out",
        ])
        .arg(&base)
        .arg("--")
        .arg(python())
        .arg(standin())
        .args(["serve", "--engine", engine, "--port", &port, "--log"])
        .arg(&log)
        .args(server_flags)
        .output()
        .unwrap();
    assert!(t0.elapsed() < Duration::from_secs(120));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let code = out.status.code().unwrap_or(-1);
    let log = read_log(&log);
    let up = log
        .iter()
        .find(|r| r["event"] == "up")
        .unwrap_or_else(|| panic!("{engine}: the server never came up: {stderr}"));
    // Ready, armed, driven, stopped, shut down by the SIGINT stepgate sent its group.
    let paths: Vec<&str> = log
        .iter()
        .filter(|r| r["event"] == "request")
        .map(|r| r["path"].as_str().unwrap())
        .collect();
    let at = |p: &str| paths.iter().position(|q| *q == p);
    for p in [ready, generate, "/start_profile", "/stop_profile"] {
        assert!(at(p).is_some(), "{engine}: no {p} in {paths:?}");
    }
    assert!(at(ready) < at("/start_profile"), "{engine}: {paths:?}");
    assert!(
        at("/start_profile") < at("/stop_profile"),
        "{engine}: {paths:?}"
    );
    assert!(
        at(generate) < at("/start_profile"),
        "{engine}: load before arming"
    );
    assert!(
        log.iter().any(|r| r["event"] == "down"),
        "{engine}: {stderr}"
    );
    assert!(
        !group_alive(up["pgid"].as_i64().unwrap()),
        "{engine}: the server's process group outlived the capture"
    );
    match device_status() {
        DeviceStatus::Usable(_) => {
            assert_eq!(code, 0, "{engine}: {stderr}");
            assert!(
                base.with_extension("sqlite").is_file(),
                "{engine}: {stderr}"
            );
        }
        other => {
            // cuProfilerStart fails without a device, so nsys never opens the range and
            // writes no report; the error says both, in one line, exit 4.
            let calls: Vec<&Value> = log.iter().filter(|r| r["event"] == "profiler").collect();
            assert_eq!(calls.len(), 2, "{engine}: {log:?}");
            assert!(
                calls.iter().all(|r| r["returned"] != 0),
                "{engine}: {log:?}"
            );
            assert_eq!(code, 4, "{engine}: {stderr}");
            let last = stderr.lines().last().unwrap_or("");
            assert!(last.starts_with("stepgate: error: "), "{stderr}");
            assert!(last.contains("capture range never opened"), "{last}");
            assert!(last.contains(&other.to_string()), "{last}");
            assert!(!base.with_extension("nsys-rep").exists());
            assert!(!base.with_extension("qdstrm").exists());
        }
    }
}

#[test]
fn vllm_capture_under_real_nsys_leaves_no_process() {
    let Some((_one, _nsys)) = need(
        "real_nsys::vllm_capture_under_real_nsys_leaves_no_process",
        Needs::Import,
    ) else {
        return;
    };
    capture_under_real_nsys(
        "vllm",
        "/health",
        "/v1/completions",
        &["--profiler-config.profiler=cuda"],
    );
}

#[test]
fn sglang_capture_under_real_nsys_leaves_no_process() {
    let Some((_one, _nsys)) = need(
        "real_nsys::sglang_capture_under_real_nsys_leaves_no_process",
        Needs::Import,
    ) else {
        return;
    };
    capture_under_real_nsys("sglang", "/ready", "/generate", &[]);
}
