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
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use stepgate::probe::cuda::{device_status, DeviceStatus};
use stepgate::source::nsys::export::{ensure_sqlite, find_program, ExportOptions};
use stepgate::synth::augment::{augment, Spec};
use stepgate::synth::writer::GpuRec;
use stepgate::synth::Layout;

use crate::common;

/// Steps each stand-in run emits.
const STEPS: usize = 6;
/// Kernels added inside each step range, and each one's duration.
const KERNELS: u32 = 3;
const KERNEL_NS: i64 = 200_000;
/// The stand-in's host time per step range (tests/standin/engine.py, STEP_SECONDS).
const STEP_NS: i64 = 4_000_000;

fn standin() -> PathBuf {
    common::root()
        .join("tests")
        .join("standin")
        .join("engine.py")
}

/// The python that runs the stand-in: `STEPGATE_TEST_PYTHON` (`.ci/run` points it at the
/// virtualenv `.ci/install_nsys.sh` makes, with an nvtx that records under nsys 2022.4),
/// else `python3` on PATH.
fn python() -> String {
    std::env::var("STEPGATE_TEST_PYTHON")
        .ok()
        .filter(|p| !p.is_empty())
        .unwrap_or_else(|| "python3".to_owned())
}

/// The installed nvtx version, as the package metadata says (the module has no
/// `__version__`), or None when it does not import.
fn nvtx_version(python: &str) -> Option<String> {
    let out = Command::new(python)
        .args([
            "-c",
            "import importlib.metadata as m, nvtx; print(m.version('nvtx'))",
        ])
        .stderr(Stdio::null())
        .output()
        .ok()?;
    let v = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    (out.status.success() && !v.is_empty()).then_some(v)
}

/// Whether an nvtx version is one of those that record nothing under nsys 2022.4: from
/// 0.2.12 a domain is created only when `nvtxDomainIsEnabled` returns non-zero, and
/// 2022.4's injection library answers 0.
fn gated_on_domain_enabled(version: &str) -> bool {
    let n: Vec<u32> = version
        .split('.')
        .take(3)
        .map(|x| x.parse().unwrap_or(0))
        .collect();
    n.as_slice() >= [0, 2, 12].as_slice()
}

/// The range the probe pushes.
const PROBE_RANGE: &str = "stepgate-nvtx-probe";

/// Profile one `nvtx.push_range`/`pop_range` under nsys and count the rows of that name
/// in the export: the proof that this nsys and this nvtx record ranges at all (a version
/// check alone cannot tell for an nsys other than 2022.4). Err is the reason it could not
/// be run.
fn probe_records_a_range(nsys: &Path, python: &str) -> Result<bool, String> {
    let t = tempfile::tempdir().map_err(|e| e.to_string())?;
    let code = format!("import nvtx; nvtx.push_range('{PROBE_RANGE}'); nvtx.pop_range()");
    let out = Command::new(nsys)
        .args(["profile", "-t", "nvtx", "--sample=none", "--cpuctxsw=none"])
        .arg("-o")
        .arg(t.path().join("p"))
        .args([python, "-c", &code])
        .output()
        .map_err(|e| format!("cannot run {}: {e}", nsys.display()))?;
    if !out.status.success() {
        return Err(format!(
            "nsys profile of the nvtx probe failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let rep = ["p.nsys-rep", "p.qdstrm"]
        .iter()
        .map(|f| t.path().join(f))
        .find(|p| p.is_file())
        .ok_or("nsys wrote no report for the nvtx probe")?;
    let sqlite = ensure_sqlite(&rep, &ExportOptions::from_env()).map_err(|e| e.message)?;
    let db = rusqlite::Connection::open(&sqlite).map_err(|e| e.to_string())?;
    // No NVTX_EVENTS table at all is what an export with no NVTX row looks like.
    let n: i64 = db
        .query_row(
            "SELECT count(*) FROM NVTX_EVENTS e LEFT JOIN StringIds s ON e.textId = s.id \
             WHERE coalesce(e.text, s.value) = ?1",
            [PROBE_RANGE],
            |r| r.get(0),
        )
        .unwrap_or(0);
    Ok(n > 0)
}

/// What a test needs of nsys and the stand-in's python.
#[derive(Clone, Copy, PartialEq)]
enum Needs {
    /// nsys, and a python that imports `nvtx` (the stand-in imports it): the capture tests,
    /// whose checks are the server's lifecycle, not its ranges.
    Import,
    /// Also NVTX ranges recorded under this nsys, proved by the probe: the step tests.
    Ranges,
}

/// nsys on PATH and a python whose `nvtx` does what `needs` says (the range probe runs
/// once per test process), or why not (printed as the skip line).
fn prerequisites(needs: Needs) -> Result<PathBuf, String> {
    static FOUND: std::sync::OnceLock<Result<(PathBuf, String, String), String>> =
        std::sync::OnceLock::new();
    static RECORDS: std::sync::OnceLock<Result<(), String>> = std::sync::OnceLock::new();
    let (nsys, python, version) = FOUND
        .get_or_init(|| {
            let nsys = find_program("nsys", std::env::var_os("PATH").as_deref()).ok_or(
                "nsys is not on PATH (.ci/install_nsys.sh installs Nsight Systems 2022.4 from Debian)",
            )?;
            let python = python();
            let version = nvtx_version(&python).ok_or_else(|| {
                format!(
                    "{python} cannot import nvtx (.ci/install_nsys.sh makes a virtualenv with \
                     nvtx<0.2.12; point STEPGATE_TEST_PYTHON at its python3)"
                )
            })?;
            Ok((nsys, python, version))
        })
        .clone()?;
    if needs == Needs::Import {
        return Ok(nsys);
    }
    RECORDS
        .get_or_init(|| {
            if probe_records_a_range(&nsys, &python)? {
                return Ok(());
            }
            let why = if gated_on_domain_enabled(&version) {
                " (nvtx 0.2.12 and later create a domain only when nvtxDomainIsEnabled \
                 returns non-zero, which nsys 2022.4 answers 0)"
            } else {
                ""
            };
            Err(format!(
                "nsys recorded no NVTX range from nvtx {version} under {python}{why}: \
                 install nvtx<0.2.12 (.ci/install_nsys.sh makes a virtualenv with it; point \
                 STEPGATE_TEST_PYTHON at its python3)"
            ))
        })
        .clone()
        .map(|()| nsys)
}

/// One nsys session at a time: two `nsys profile` launched together in one process tree
/// can fail in nsys 2022.4's launcher (`sem_open ... No such file or directory`).
static NSYS: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The nsys lock (a failed test before us does not poison it for the rest) and nsys, or
/// the skip line and return; with `STEPGATE_REQUIRE_NSYS=1` (`.ci/run`) a skip is a
/// failure, so CI cannot go green without having run these tests.
macro_rules! need_nsys {
    ($test:literal, $needs:expr) => {{
        let one = NSYS.lock().unwrap_or_else(|e| e.into_inner());
        match prerequisites($needs) {
            Ok(n) => (one, n),
            Err(why) => {
                if std::env::var("STEPGATE_REQUIRE_NSYS").as_deref() == Ok("1") {
                    panic!("real_nsys::{}: STEPGATE_REQUIRE_NSYS=1, but {why}", $test);
                }
                // Straight to stderr: libtest captures eprintln! of a passing test, and
                // the skip must be seen in a plain `cargo test`.
                use std::io::Write;
                let _ = writeln!(std::io::stderr(), "real_nsys::{}: skipped: {why}", $test);
                return;
            }
        }
    }};
}

#[test]
fn nvtx_versions_from_0_2_12_are_the_ones_gated_on_domain_enabled() {
    for v in ["0.2.12", "0.2.17", "0.3.0", "1.0"] {
        assert!(gated_on_domain_enabled(v), "{v}");
    }
    for v in ["0.2.11", "0.2.8", "0.2.10", "0.1.9"] {
        assert!(!gated_on_domain_enabled(v), "{v}");
    }
}

/// The stand-in's log: one JSON object per line.
fn read_log(p: &Path) -> Vec<Value> {
    std::fs::read_to_string(p)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
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

/// Profile `engine.py emit --engine ENGINE` under nsys in `dir`; returns the report nsys
/// left (`e.nsys-rep`, or `e.qdstrm` where nsys cannot find its importer) and the log.
fn profile_emit(nsys: &Path, dir: &Path, engine: &str) -> (PathBuf, Vec<Value>) {
    let log = dir.join("e.log");
    let out = Command::new(nsys)
        .args([
            "profile",
            "-t",
            "nvtx,osrt",
            "--sample=none",
            "--cpuctxsw=none",
            "-o",
        ])
        .arg(dir.join("e"))
        .arg(python())
        .arg(standin())
        .args([
            "emit",
            "--engine",
            engine,
            "--steps",
            &STEPS.to_string(),
            "--log",
        ])
        .arg(&log)
        .output()
        .unwrap();
    let said =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "nsys profile failed: {said}");
    let rep = ["e.nsys-rep", "e.qdstrm"]
        .iter()
        .map(|f| dir.join(f))
        .find(|p| p.is_file())
        .unwrap_or_else(|| panic!("nsys wrote no report: {said}"));
    (rep, read_log(&log))
}

/// One engine's NVTX step ranges, through the real nsys, found as steps.
fn steps_match_what_the_standin_emitted(nsys: &Path, engine: &str, found_by: &str) {
    let t = tempfile::tempdir().unwrap();
    let (rep, log) = profile_emit(nsys, t.path(), engine);
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
    let (_one, nsys) = need_nsys!("vllm_detailed_step_ranges_under_real_nsys", Needs::Ranges);
    steps_match_what_the_standin_emitted(&nsys, "vllm", "marker");
}

#[test]
fn sglang_scheduler_ranges_under_real_nsys() {
    let (_one, nsys) = need_nsys!("sglang_scheduler_ranges_under_real_nsys", Needs::Ranges);
    // SGLang's scheduler stages are a family of their own: run_batch is the step.
    steps_match_what_the_standin_emitted(&nsys, "sglang", "scheduler");
}

#[test]
fn trtllm_executor_ranges_in_their_domain_under_real_nsys() {
    let (_one, nsys) = need_nsys!(
        "trtllm_executor_ranges_in_their_domain_under_real_nsys",
        Needs::Ranges
    );
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
    let (_one, _nsys) = need_nsys!(
        "vllm_capture_under_real_nsys_leaves_no_process",
        Needs::Import
    );
    capture_under_real_nsys(
        "vllm",
        "/health",
        "/v1/completions",
        &["--profiler-config.profiler=cuda"],
    );
}

#[test]
fn sglang_capture_under_real_nsys_leaves_no_process() {
    let (_one, _nsys) = need_nsys!(
        "sglang_capture_under_real_nsys_leaves_no_process",
        Needs::Import
    );
    capture_under_real_nsys("sglang", "/ready", "/generate", &[]);
}
