//! `--threads`: every reader's output is byte-identical at every thread count, with the
//! big tables forced into small slices so the parallel read really splits them.
//!
//! Two halves: every fixture through the binary (`analyze` and `steps` JSON at 1, 2 and 8
//! threads, slices of one row via the test-only `STEPGATE_TEST_MIN_SLICE_ROWS`), and
//! generated reports of random sizes loaded in-process with random slice sizes, which
//! must also put slice edges where a merge in the wrong order would show: inside a graph
//! replay's kernels and inside a step's NVTX range.

mod slices;

use std::path::{Path, PathBuf};

use rand::{Rng, SeedableRng};
use rusqlite::Connection;
use stepgate::source::{nsys, LoadOptions};
use stepgate::synth::workload::{build, KernelSpec, LaunchMode, NvtxStyle, Scenario, StepSpec};
use stepgate::synth::Layout;
use stepgate::trace::Trace;

use crate::common;

/// The test hooks' names, as the loaders read them: rows per nsys rowid slice, bytes per
/// range of a plain Kineto file.
const MIN_ROWS_VAR: &str = nsys::load::MIN_ROWS_VAR;
const MIN_RANGE_VAR: &str = "STEPGATE_TEST_MIN_RANGE_BYTES";
/// The test hook of the stages after loading: the fewest steps (or ops) per chunk.
const MIN_CHUNK_VAR: &str = stepgate::timing::par::MIN_CHUNK_VAR;

/// The reports under tests/fixtures/`dir` (licences and notes left out).
fn fixtures(dir: &str) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(common::fixture(dir))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            let n = p.file_name().unwrap().to_string_lossy().into_owned();
            [".sqlite", ".json.gz", ".json", ".rpd", ".db"]
                .iter()
                .any(|x| n.ends_with(x))
        })
        .collect();
    out.sort();
    out
}

/// `stepgate CMD --format json --threads N FILE` with one-row slices, Kineto ranges of
/// 64 KiB or more, and the stages after loading cut into chunks of one step (or op):
/// (code, stdout, stderr).
fn run_at(cmd: &str, file: &Path, threads: usize) -> (i32, String, String) {
    let out = std::process::Command::new(common::bin())
        .args([cmd, "--format", "json", "--threads", &threads.to_string()])
        .arg(file)
        .env(MIN_ROWS_VAR, "1")
        .env(MIN_RANGE_VAR, "65536")
        .env(MIN_CHUNK_VAR, "1")
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `stepgate analyze --format json --threads N FILE` with Kineto ranges of `range` bytes.
fn analyze_in_ranges(file: &Path, threads: usize, range: usize) -> std::process::Output {
    std::process::Command::new(common::bin())
        .args([
            "analyze",
            "--format",
            "json",
            "--threads",
            &threads.to_string(),
        ])
        .arg(file)
        .env(MIN_RANGE_VAR, range.to_string())
        .output()
        .unwrap()
}

/// Every fixture in `dir` (at least `min` of them) prints the same `analyze` and `steps`
/// JSON, the same stderr and the same exit code at 2 and 8 threads as at 1.
fn same_at_every_thread_count(dir: &str, min: usize) {
    let files = fixtures(dir);
    assert!(files.len() >= min, "{dir}: {files:?}");
    for f in &files {
        for cmd in ["analyze", "steps"] {
            let one = run_at(cmd, f, 1);
            let name = format!("{cmd} {}", f.display());
            assert_eq!(one.0, 0, "{name}: {}", one.2);
            let json: serde_json::Value =
                serde_json::from_str(&one.1).unwrap_or_else(|e| panic!("{name}: not JSON ({e})"));
            assert!(json.is_object(), "{name}");
            for n in [2, 8] {
                let many = run_at(cmd, f, n);
                assert_eq!(many.0, one.0, "{name} at {n} threads: exit code");
                assert!(many.1 == one.1, "{name} at {n} threads: stdout differs");
                assert_eq!(many.2, one.2, "{name} at {n} threads: stderr");
            }
        }
    }
}

#[test]
fn nsys_fixtures_print_the_same_at_every_thread_count() {
    same_at_every_thread_count("nsys", 4);
}

#[test]
fn rocpd_fixtures_print_the_same_at_every_thread_count() {
    same_at_every_thread_count("rocpd", 1);
}

/// A generated rocpd (schema 3) database, two processes with ROCTx ranges and HIP calls,
/// prints the same at 2 and 8 threads as at 1 (its regions are read on a second, memory-
/// mapped connection from 2), and its per-GPU busy time is the generator's.
#[test]
fn generated_rocpd_prints_the_same_at_every_thread_count() {
    use stepgate::synth::rocpd::{write, Spec};
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("decode.db");
    let spec = Spec {
        processes: 2,
        steps: 40,
        ..Spec::default()
    };
    let truth = write(&db, &spec).unwrap();
    for cmd in ["analyze", "steps"] {
        let one = run_at(cmd, &db, 1);
        assert_eq!(one.0, 0, "{cmd}: {}", one.2);
        if cmd == "analyze" {
            let json: serde_json::Value = serde_json::from_str(&one.1).unwrap();
            for (device, busy) in &truth.busy_ns {
                let devices = json["devices"].as_array().unwrap();
                let d = devices.iter().find(|d| d["device"] == *device).unwrap();
                assert_eq!(d["busy_ns"].as_i64(), Some(*busy), "GPU {device}: {json}");
            }
        }
        for n in [2, 8] {
            assert!(run_at(cmd, &db, n) == one, "{cmd} at {n} threads");
        }
    }
}

#[test]
fn kineto_fixtures_print_the_same_at_every_thread_count() {
    same_at_every_thread_count("kineto", 11);
}

/// `--threads` is refused in one line with the usage exit code (2) when it is not a
/// positive whole number, wherever it is given, and accepted before the subcommand too.
#[test]
fn bad_thread_counts_are_one_line_usage_errors() {
    let f = common::fixture("nsys/saxpy_mpi_a100_nsys2022.2.sqlite");
    let f = f.to_str().unwrap();
    for (args, msg) in [
        (
            &["analyze", f, "--threads", "0"][..],
            "--threads must be ≥ 1, got 0",
        ),
        (
            &["--threads", "abc", "analyze", f],
            "--threads must be a whole number of threads, got abc",
        ),
        (
            &["steps", f, "--threads", "-2"],
            "--threads must be a positive number of threads, got -2",
        ),
        (
            &["analyze", f, "--threads", "1.5"],
            "--threads must be a whole number of threads, got 1.5",
        ),
        (
            &["analyze", f, "--threads", "100000"],
            "--threads is 100000 threads, beyond the 1024 stepgate accepts",
        ),
    ] {
        let (code, out, err) = common::run(args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(out.is_empty(), "{args:?}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(msg), "{args:?}: {err}");
    }
    let (code, out, err) = common::run(&["--threads", "3", "analyze", f, "--format", "json"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, common::run(&["analyze", f, "--format", "json"]).1);
}

/// The stages after loading (index, discovery, projection, evidence, detail, assembly) run
/// in chunks of steps and ops on every thread: a generated decode report of three ranks
/// and 600 steps, and generated reports of every launch mode, print the same `steps` and
/// `analyze` JSON at 2 and 8 threads, in chunks of one item and of the stages' own
/// length, as at 1; and the decode report's steps are the generator's, step by step.
#[test]
fn stages_after_loading_print_the_same_at_every_thread_count() {
    use stepgate::synth::workload::decode_benchmark;
    let dir = tempfile::tempdir().unwrap();
    let decode = dir.path().join("decode.sqlite");
    let truth = build(&decode_benchmark(Layout::Nsys2026_2, 3, 200, 12), &decode).unwrap();
    let mut files = vec![decode.clone()];
    for seed in 0..6u64 {
        let mut rng = rand::rngs::SmallRng::seed_from_u64(0x57a6_0000 + seed);
        let path = dir.path().join(format!("case{seed}.sqlite"));
        build(&scenario(&mut rng), &path).unwrap();
        files.push(path);
    }
    let run = |cmd: &str, f: &Path, threads: usize, chunk: Option<&str>| {
        let mut c = std::process::Command::new(common::bin());
        c.args([cmd, "--format", "json", "--threads", &threads.to_string()])
            .arg(f);
        if let Some(n) = chunk {
            c.env(MIN_CHUNK_VAR, n);
        }
        let out = c.output().unwrap();
        (out.status.code(), out.stdout, out.stderr)
    };
    for f in &files {
        for cmd in ["steps", "analyze"] {
            let one = run(cmd, f, 1, None);
            let what = format!("{cmd} {}", f.display());
            assert_eq!(
                one.0,
                Some(0),
                "{what}: {}",
                String::from_utf8_lossy(&one.2)
            );
            for n in [2, 8] {
                for chunk in [None, Some("1"), Some("7")] {
                    let many = run(cmd, f, n, chunk);
                    assert!(many == one, "{what} at {n} threads, chunks {chunk:?}");
                }
            }
        }
    }
    // The decode report, step by step: one series per rank, each step's busy time and
    // kernels the generator's (its ops never overlap: busy is their summed durations).
    let (code, out, err) = run_at("steps", &decode, 8);
    assert_eq!(code, 0, "{err}");
    let json: serde_json::Value = serde_json::from_str(&out).unwrap();
    let steps = json["steps"].as_array().unwrap();
    assert_eq!(steps.len(), truth.steps.len(), "step count");
    assert_eq!(truth.steps.len(), 600);
    for t in &truth.steps {
        let got = steps
            .iter()
            .find(|s| s["device"] == t.device && s["index"] == t.step)
            .unwrap_or_else(|| panic!("rank {} step {}", t.rank, t.step));
        let at = format!("rank {} step {}", t.rank, t.step);
        assert_eq!(got["busy_ns"].as_i64(), Some(t.busy_ns), "{at}");
        assert_eq!(got["kernels"].as_u64(), Some(t.kernels), "{at}");
        assert_eq!(got["gpu_start_ns"].as_i64(), t.gpu_start_ns, "{at}");
    }
}

/// One generated report: 1–2 ranks, 2–9 steps of random launch modes (eager, graph
/// replays traced per node or opaque, piecewise graphs), 1–14 kernels each, nested NVTX
/// ranges of the three recordings, in one of the schema layouts.
fn scenario(rng: &mut rand::rngs::SmallRng) -> Scenario {
    let modes = [
        LaunchMode::Eager,
        LaunchMode::GraphNode,
        LaunchMode::Piecewise,
        LaunchMode::GraphOpaque,
    ];
    let styles = [
        NvtxStyle::PushPop,
        NvtxStyle::StartEnd,
        NvtxStyle::Registered,
    ];
    let layouts = [
        Layout::Nsys2026_2,
        Layout::Nsys2022_2,
        Layout::Nsys2022_1,
        Layout::Nsys2020_5,
    ];
    let layout = layouts[rng.random_range(0..layouts.len())];
    // Opaque graph replays (GRAPH_TRACE) exist only in the 2026 layout.
    let modes = if layout == Layout::Nsys2026_2 {
        &modes[..]
    } else {
        &modes[..3]
    };
    let steps = (0..rng.random_range(2..10))
        .map(|s| {
            let kernels = (0..rng.random_range(1..15))
                .map(|k| {
                    let name = format!("kernel_{}", rng.random_range(0..6));
                    let d = rng.random_range(1_000..50_000);
                    if k % 3 == 1 {
                        KernelSpec::eager(&name, d)
                    } else {
                        KernelSpec::new(&name, d)
                    }
                })
                .collect();
            let mode = modes[rng.random_range(0..modes.len())];
            let mut spec = StepSpec::new(None, mode, kernels);
            spec.names = (0..rng.random_range(0..3))
                .map(|depth| format!("step_{s}_level_{depth}"))
                .collect();
            spec.nvtx = styles[rng.random_range(0..styles.len())];
            spec.launches_without_kernels = rng.random_range(0..2);
            spec.kernels_without_launch_after = rng.random_range(0..2);
            spec
        })
        .collect();
    let mut scn = Scenario::new(layout, rng.random_range(1..3), steps);
    scn.backtrace_duplicates = rng.random_bool(0.3);
    scn
}

/// The rowids where slices 1.. of a table start, as the loader cuts `[lo, hi]` into up
/// to `parts` slices of at least `min_rows` rows (split.rs; the coverage checks below
/// need the edges, which the loader does not report).
fn slice_starts(conn: &Connection, table: &str, min_rows: i64, parts: i64) -> Vec<i64> {
    let (lo, hi): (Option<i64>, Option<i64>) = conn
        .query_row(
            &format!("SELECT min(rowid), max(rowid) FROM {table}"),
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    let (Some(lo), Some(hi)) = (lo, hi) else {
        return Vec::new();
    };
    let span = hi - lo + 1;
    let n = (span / min_rows).clamp(1, parts);
    (1..n).map(|k| lo + k * (span / n)).collect()
}

/// What edges fall where a merge would break: (graph replays whose kernels straddle a
/// kernel-slice edge, NVTX ranges whose launched kernels straddle one, NVTX slices).
fn edges(path: &Path, min_rows: i64, parts: i64) -> (i64, i64, usize) {
    let conn = Connection::open(path).unwrap();
    let has_nvtx: bool = conn
        .query_row(
            "SELECT count(*) > 0 FROM sqlite_master WHERE name = 'NVTX_EVENTS'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    let (mut graphs, mut ranges) = (0, 0);
    for b in slice_starts(&conn, "CUPTI_ACTIVITY_KIND_KERNEL", min_rows, parts) {
        graphs += conn
            .query_row(
                "SELECT count(*) FROM (SELECT correlationId FROM CUPTI_ACTIVITY_KIND_KERNEL \
                 GROUP BY correlationId HAVING min(rowid) < ?1 AND max(rowid) >= ?1 \
                 AND count(*) > 1)",
                [b],
                |r| r.get::<_, i64>(0),
            )
            .unwrap();
        let side = |op: &str| {
            format!(
                "EXISTS (SELECT 1 FROM CUPTI_ACTIVITY_KIND_RUNTIME r \
                 JOIN CUPTI_ACTIVITY_KIND_KERNEL k ON k.correlationId = r.correlationId \
                 WHERE r.globalTid = n.globalTid AND r.start >= n.start AND r.end <= n.end \
                 AND k.rowid {op} ?1)"
            )
        };
        if !has_nvtx {
            continue;
        }
        ranges += conn
            .query_row(
                &format!(
                    "SELECT count(*) FROM NVTX_EVENTS n WHERE n.end IS NOT NULL AND {} AND {}",
                    side("<"),
                    side(">=")
                ),
                [b],
                |r| r.get::<_, i64>(0),
            )
            .unwrap();
    }
    let nvtx = if has_nvtx {
        slice_starts(&conn, "NVTX_EVENTS", min_rows, parts).len() + 1
    } else {
        0
    };
    (graphs, ranges, nvtx)
}

/// Cuts that only look like event boundaries: every event's `args` holds a list of objects
/// (`[{"i": 0}, {"i": 1}, …]`, the `}, {` a cut looks for), so most byte ranges start
/// inside an event. The range before each such cut scans past it to the next real event,
/// the mismatch is seen, and the range after it is read on the calling thread: the output is the serial
/// read's at every count, with ranges down to 4 KiB.
#[test]
fn kineto_ranges_cut_inside_an_event_are_caught() {
    use stepgate::synth::kineto::{DeviceProps, JId, KinetoWriter};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nested.json");
    let mut w = KinetoWriter::new(1_767_189_312_000_000_000);
    w.device(DeviceProps::h100(0));
    let list: Vec<String> = (0..12).map(|i| format!("{{\"i\": {i}}}")).collect();
    let list = list.join(", ");
    for k in 0..2000i64 {
        let s = 1_000_000 + k * 50_000;
        let c = format!("\"correlation\": {}, \"list\": [{list}]", k + 1);
        w.complete(
            "cuda_runtime",
            "cudaLaunchKernel",
            JId::Num(11),
            JId::Num(11),
            s,
            4_000,
            &c,
        );
        w.complete(
            "kernel",
            if k % 3 == 0 {
                "gemm_kernel"
            } else {
                "elementwise_kernel"
            },
            JId::Num(0),
            JId::Num(7),
            s + 10_000,
            20_000 + (k % 7) * 1_000,
            &format!("\"device\": 0, \"stream\": 7, {c}"),
        );
    }
    w.finish(&path).unwrap();
    let run = |path: &Path, threads: usize| {
        let out = analyze_in_ranges(path, threads, 4096);
        (out.status.code(), out.stdout, out.stderr)
    };
    let one = run(&path, 1);
    assert_eq!(one.0, Some(0), "{}", String::from_utf8_lossy(&one.2));
    let json: serde_json::Value = serde_json::from_slice(&one.1).unwrap();
    // 2000 kernels, read whole: the per-device busy time is their summed durations (none
    // overlap: each starts 50 us after the last and lasts at most 26 us).
    let busy: i64 = (0..2000i64).map(|k| 20_000 + (k % 7) * 1_000).sum();
    assert_eq!(json["devices"][0]["kernels"].as_u64(), Some(2000), "{json}");
    assert_eq!(json["devices"][0]["busy_ns"].as_i64(), Some(busy), "{json}");
    for n in [2, 3, 8] {
        assert!(run(&path, n) == one, "at {n} threads");
    }
    // The same trace gzipped: its ranges are cut in the inflated bytes as they arrive
    // (blocks of 4 KiB here), and the look-alike cuts are caught the same way.
    let gz = dir.path().join("nested.json.gz");
    common::write_gzip(&gz, &std::fs::read(&path).unwrap());
    let one = run(&gz, 1);
    let json: serde_json::Value = serde_json::from_slice(&one.1).unwrap();
    assert_eq!(json["devices"][0]["kernels"].as_u64(), Some(2000), "{json}");
    assert_eq!(json["devices"][0]["busy_ns"].as_i64(), Some(busy), "{json}");
    for n in [3, 4, 8] {
        assert!(run(&gz, n) == one, "gzipped at {n} threads");
    }
}

/// `--threads` is one global flag, before or after the subcommand; the plan of a command
/// that reads a report carries it (the loads and every stage after them take it from
/// there, no process-wide setting), and without it the cores this process may use.
#[test]
fn the_thread_count_travels_in_the_plan() {
    use clap::Parser;
    use stepgate::cli::{Cli, Command};
    let workers = |argv: &[&str]| -> usize {
        let cli = Cli::try_parse_from(argv).unwrap();
        let flags = match cli.command {
            Command::Steps(a) => a.step,
            Command::Analyze(a) => a.step,
            other => panic!("not a report command: {other:?}"),
        };
        flags.plan(5).unwrap().find.workers
    };
    assert_eq!(
        workers(&["stepgate", "--threads", "3", "steps", "r.sqlite"]),
        3
    );
    assert_eq!(
        workers(&["stepgate", "steps", "r.sqlite", "--threads", "3"]),
        3
    );
    assert_eq!(
        workers(&["stepgate", "analyze", "--threads", "1", "r.sqlite"]),
        1
    );
    assert_eq!(
        workers(&["stepgate", "steps", "r.sqlite"]),
        stepgate::source::default_threads()
    );
}
