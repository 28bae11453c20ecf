//! `stepgate doctor`: the findings on real fixtures (each number recomputed here from the
//! file with SQL, or taken from the fixture's documented figures) and on generated captures
//! with a known cause (graph-mode tracing), and the exit codes of `--strict`.

use std::path::Path;

use serde_json::Value;
use stepgate::synth::workload::{self, LaunchMode, Scenario, StepSpec};
use stepgate::synth::Layout;

use crate::common;

fn doctor(args: &[&str]) -> (i32, Value) {
    let mut all = vec!["doctor"];
    all.extend_from_slice(args);
    all.extend(["--format", "json"]);
    let (code, out, err) = common::run(&all);
    let v: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out} {err}"));
    (code, v)
}

fn finding<'a>(d: &'a Value, check: &str) -> &'a Value {
    d["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["check"] == check)
        .unwrap_or_else(|| panic!("no {check} finding: {d}"))
}

#[test]
fn the_bundled_sample_passes_strict_with_its_gpu_and_markers() {
    let p = common::root().join("examples/vllm_decode_synthetic_h100.sqlite");
    let (code, d) = doctor(&[p.to_str().unwrap(), "--strict"]);
    assert_eq!(code, 0, "{d}");
    crate::schema::assert_stamped("doctor", &d, stepgate::wire::doctor::SCHEMA_VERSION);
    assert_eq!(d["passed"], true);
    assert_eq!(d["worst"], "ok");
    let steps = finding(&d, "steps");
    assert_eq!(steps["severity"], "ok");
    // 60 execute_… NVTX ranges in the sample, one per step.
    let n: i64 = rusqlite::Connection::open(&p)
        .unwrap()
        .query_row("SELECT count(*) FROM NVTX_EVENTS", [], |r| r.get(0))
        .unwrap();
    assert_eq!(n, 60);
    assert_eq!(steps["message"], "60 steps by marker");
    assert!(
        finding(&d, "gpu")["message"]
            .as_str()
            .unwrap()
            .ends_with("→ preset h100-sxm"),
        "{d}"
    );
}

/// Launch calls whose correlation id no kernel, copy or fill of the same process carries,
/// counted with SQL of this test's own.
fn orphan_launches(p: &Path) -> (i64, i64) {
    let c = rusqlite::Connection::open(p).unwrap();
    let q = |sql: &str| -> i64 { c.query_row(sql, [], |r| r.get(0)).unwrap() };
    let launches = "FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s ON s.id = r.nameId \
                    WHERE (s.value LIKE 'cudaLaunchKernel%' OR s.value LIKE 'cuLaunchKernel%' \
                    OR s.value LIKE 'cudaGraphLaunch%' OR s.value LIKE 'cudaLaunchCooperativeKernel%')";
    let has_op = |t: &str| {
        format!(
            "EXISTS (SELECT 1 FROM {t} k WHERE k.correlationId = r.correlationId \
             AND (k.globalPid >> 24) = (r.globalTid >> 24))"
        )
    };
    let total = q(&format!("SELECT count(*) {launches}"));
    let orphans = q(&format!(
        "SELECT count(*) {launches} AND NOT {} AND NOT {} AND NOT {}",
        has_op("CUPTI_ACTIVITY_KIND_KERNEL"),
        has_op("CUPTI_ACTIVITY_KIND_MEMCPY"),
        has_op("CUPTI_ACTIVITY_KIND_MEMSET")
    ));
    (orphans, total)
}

#[test]
fn a_capture_whose_gpu_records_stop_early_is_a_window_warning_that_strict_fails() {
    let p = common::fixture("nsys/fastvideo_h100_2gpu_nsys2026.2.sqlite");
    let (orphans, total) = orphan_launches(&p);
    assert_eq!((orphans, total), (1714, 3346));
    let (code, d) = doctor(&[p.to_str().unwrap()]);
    assert_eq!(code, 0, "warnings pass without --strict: {d}");
    let w = finding(&d, "window");
    assert_eq!(w["severity"], "warning");
    assert!(
        w["message"]
            .as_str()
            .unwrap()
            .starts_with("1714 of 3346 launch calls (51.2%)"),
        "{w}"
    );
    // Graph mode is recorded, but no graph ran: nothing is hidden, so no warning.
    assert_eq!(finding(&d, "graph_mode")["severity"], "ok");
    // No NVTX ranges: steps are found by a heuristic, and that is said.
    assert_eq!(finding(&d, "ranges")["severity"], "warning");
    assert_eq!(finding(&d, "steps")["severity"], "warning");
    let (code, d) = doctor(&[p.to_str().unwrap(), "--strict"]);
    assert_eq!(code, 1, "{d}");
    assert_eq!(d["passed"], false);
}

#[test]
fn kineto_ops_without_a_launch_are_counted_as_the_fixture_documents() {
    // tests/fixtures/README.md: "968 of its 3,653 GPU ops have no launching call".
    let p = common::fixture("kineto/tracelens_mi300x_ddp_rank0_of8_actckpt_profilerstep.json.gz");
    let (_, d) = doctor(&[p.to_str().unwrap()]);
    let l = finding(&d, "launch_links");
    // Kineto does not link every op: worth knowing, not a warning.
    assert_eq!(l["severity"], "info");
    assert!(
        l["message"]
            .as_str()
            .unwrap()
            .starts_with("968 of 3653 GPU ops (26.5%)"),
        "{l}"
    );
    assert!(
        l["message"].as_str().unwrap().contains("time window"),
        "{l}"
    );
}

#[test]
fn graph_mode_replays_are_a_warning_node_mode_is_not() {
    let dir = tempfile::tempdir().unwrap();
    for (mode, replays) in [
        (LaunchMode::GraphOpaque, Some(6)),
        (LaunchMode::GraphNode, None),
    ] {
        let p = dir.path().join(format!("{mode:?}.sqlite"));
        let steps = (0..6)
            .map(|_| {
                StepSpec::new(
                    Some(&workload::vllm_execute(0, 0, 8, 8)),
                    mode,
                    workload::decode_kernels(10),
                )
            })
            .collect();
        workload::build(&Scenario::new(Layout::Nsys2026_2, 1, steps), &p).unwrap();
        let (code, d) = doctor(&[p.to_str().unwrap(), "--strict"]);
        let g = d["findings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["check"] == "graph_mode" && f["severity"] == "warning");
        match replays {
            Some(n) => {
                let g = g.unwrap_or_else(|| panic!("{d}"));
                assert!(
                    g["message"]
                        .as_str()
                        .unwrap()
                        .contains(&format!("({n} opaque replays")),
                    "{g}"
                );
                assert!(g["action"]
                    .as_str()
                    .unwrap()
                    .contains("--cuda-graph-trace=node"));
                assert_eq!(code, 1, "strict fails on the graph-mode warning");
            }
            None => assert!(g.is_none(), "node mode hides nothing: {d}"),
        }
    }
}

#[test]
fn an_unreadable_report_is_one_line_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("x.sqlite");
    std::fs::write(&p, b"not a database").unwrap();
    let (code, out, err) = common::run(&["doctor", p.to_str().unwrap()]);
    assert_eq!(code, 2, "{out}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
}

/// GPU kernels and copies per device, and the first device name, read from a Kineto file
/// here (both layouts: `kernel`/`gpu_memcpy` and 2021's `Kernel`/`Memcpy`).
fn kineto_facts(p: &Path) -> (std::collections::BTreeMap<i64, (u64, u64)>, Option<String>) {
    use std::io::Read;
    let mut text = String::new();
    flate2::read::GzDecoder::new(std::fs::File::open(p).unwrap())
        .read_to_string(&mut text)
        .unwrap();
    let j: Value = serde_json::from_str(&text).unwrap();
    let mut per = std::collections::BTreeMap::new();
    for e in j["traceEvents"].as_array().unwrap() {
        let cat = e["cat"].as_str().unwrap_or("").to_ascii_lowercase();
        let Some(d) = e["args"]["device"].as_i64() else {
            continue;
        };
        let slot: &mut (u64, u64) = per.entry(d).or_default();
        match cat.as_str() {
            "kernel" => slot.0 += 1,
            "gpu_memcpy" | "memcpy" => slot.1 += 1,
            _ => {}
        }
    }
    per.retain(|_, v| v.0 + v.1 > 0);
    let name = j["deviceProperties"][0]["name"].as_str().map(str::to_owned);
    (per, name)
}

/// Kernels and copies per device and the GPU name of an nsys export, by SQL here.
fn nsys_facts(p: &Path) -> (std::collections::BTreeMap<i64, (u64, u64)>, Option<String>) {
    let c = rusqlite::Connection::open(p).unwrap();
    let mut per = std::collections::BTreeMap::new();
    for (table, k) in [
        ("CUPTI_ACTIVITY_KIND_KERNEL", 0),
        ("CUPTI_ACTIVITY_KIND_MEMCPY", 1),
    ] {
        let mut st = c
            .prepare(&format!(
                "SELECT deviceId, count(*) FROM {table} GROUP BY 1"
            ))
            .unwrap();
        let rows = st
            .query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?)))
            .unwrap();
        for r in rows {
            let (d, n) = r.unwrap();
            let slot: &mut (u64, u64) = per.entry(d).or_default();
            if k == 0 {
                slot.0 = n as u64;
            } else {
                slot.1 = n as u64;
            }
        }
    }
    let name = c
        .query_row("SELECT name FROM TARGET_INFO_GPU LIMIT 1", [], |r| r.get(0))
        .ok();
    (per, name)
}

#[test]
fn every_real_fixture_gets_the_gpu_work_and_gpu_findings_its_file_holds() {
    let dir = common::root().join("tests/fixtures");
    let mut seen = 0;
    for sub in ["kineto", "nsys"] {
        for e in std::fs::read_dir(dir.join(sub)).unwrap().flatten() {
            let p = e.path();
            let (per, name) = if sub == "kineto" {
                kineto_facts(&p)
            } else {
                nsys_facts(&p)
            };
            let (code, d) = doctor(&[p.to_str().unwrap()]);
            let f = p.display();
            assert_eq!(
                code, 0,
                "{f}: doctor without --strict fails only on errors: {d}"
            );
            let work = finding(&d, "gpu_work");
            assert_eq!(work["severity"], "ok", "{f}");
            let msg = work["message"].as_str().unwrap();
            for (dev, (k, c)) in &per {
                assert!(
                    msg.contains(&format!("GPU {dev}: {k} kernels, {c} copies")),
                    "{f}: {msg} vs device {dev} {k} kernels {c} copies"
                );
            }
            let gpu = finding(&d, "gpu");
            match name.as_deref() {
                // Named: read, and matched to a preset (every fixture's GPU has one).
                Some(n) if !n.is_empty() => {
                    assert_eq!(gpu["severity"], "ok", "{f}: {gpu}");
                    assert!(
                        gpu["message"]
                            .as_str()
                            .unwrap()
                            .starts_with(&format!("{n:?} → preset")),
                        "{f}: {gpu}"
                    );
                }
                // ROCm writes "name": "" with the CU count and memory: inferred, said so.
                Some(_) => {
                    assert_eq!(gpu["severity"], "info", "{f}: {gpu}");
                    assert!(
                        gpu["message"].as_str().unwrap().contains("(inferred)"),
                        "{f}: {gpu}"
                    );
                }
                None => assert_eq!(gpu["severity"], "warning", "{f}: {gpu}"),
            }
            seen += 1;
        }
    }
    assert!(seen >= 15, "{seen} fixtures");
}
