//! `stepgate launch-probe`: exit 4 with the cited figure's message where there is no CUDA
//! driver (CI), a measured file whose figures are recomputed here from its own raw bursts
//! where there is one, the JSON file `steps --launch-cost` reads, and its reader.

use std::path::Path;

use stepgate::probe::MeasuredLaunchCost;
use stepgate::wire::probe::{EndToEnd, GraphCost, ProbeReport};

use crate::common;

/// Whether libcuda can be loaded here, asked of the loader directly (not of stepgate).
fn driver_loads() -> bool {
    // Safety: only dlopen attempts.
    unsafe { cudarc::driver::sys::is_culib_present() }
}

/// Whether a device is usable: the driver loads and sees one. A CI runner with the NVIDIA
/// libraries installed (nsys brings them) but no GPU loads the driver and sees none.
fn driver_present() -> bool {
    matches!(
        stepgate::probe::cuda::device_status(),
        stepgate::probe::cuda::DeviceStatus::Usable(_)
    )
}

/// The exit-4 message names which of the two cases this machine is.
fn assert_says_why(stderr: &str) {
    assert!(stderr.contains("the cited 2.374 µs stands"), "{stderr}");
    if driver_loads() {
        assert!(
            stderr.contains("CUDA driver found (") && stderr.contains("but no usable device"),
            "{stderr}"
        );
    } else {
        assert!(stderr.contains("no CUDA driver found"), "{stderr}");
    }
}

#[test]
fn without_a_driver_the_cited_figure_stands_exit_4() {
    let t = tempfile::tempdir().unwrap();
    let out = t.path().join("h.json");
    let (code, stdout, stderr) = common::run(&[
        "launch-probe",
        "--format",
        "json",
        "-o",
        out.to_str().unwrap(),
    ]);
    if driver_present() {
        assert_eq!(code, 0, "{stderr}");
        check_measured_file(&out);
        return;
    }
    assert_eq!(code, 4, "{stderr}");
    assert_says_why(&stderr);
    assert!(stdout.is_empty());
    assert!(
        !out.exists(),
        "nothing may be written when nothing was measured"
    );
}

/// A GPU host: the file is a measured probe result whose derived figures follow from its
/// own raw burst times (recomputed here), within physical bounds, naming the GPU the
/// driver tool names.
fn check_measured_file(path: &Path) {
    let text = std::fs::read_to_string(path).unwrap();
    crate::schema::assert_stamped("launch-probe", &serde_json::from_str(&text).unwrap(), 1);
    let r: ProbeReport = serde_json::from_str(&text).unwrap();
    assert_eq!(r.schema_version, 1);
    assert!(r.measured);
    let e = &r.end_to_end_per_launch_ns;
    assert_eq!(e.bursts_ns.len(), r.repeats as usize);
    let fastest = *e.bursts_ns.iter().min().unwrap() as f64;
    assert_eq!(e.min, fastest / f64::from(r.iters_per_burst));
    assert!(e.min <= e.median, "{} > {}", e.min, e.median);
    // A kernel launch costs microseconds on any CUDA GPU: not 0, not milliseconds.
    assert!(
        (300.0..100_000.0).contains(&e.min),
        "{} ns per launch",
        e.min
    );
    assert!(r.submit_only_per_launch_ns > 0.0 && r.submit_only_per_launch_ns <= e.median);
    let g = &r.graph;
    let gfast = *g.bursts_ns.iter().min().unwrap() as f64;
    assert_eq!(
        g.per_graph_launch_ns,
        gfast / f64::from(g.launches_per_burst)
    );
    assert_eq!(g.per_node_ns, g.per_graph_launch_ns / f64::from(g.nodes));
    // The reader `steps --launch-cost` uses takes the same minimum.
    let lc = MeasuredLaunchCost::from_file(path).unwrap();
    assert_eq!(lc.per_launch_ns, e.min);
    assert_eq!(lc.device_name, r.device_name);
    // The device name, as nvidia-smi reports device 0 (where it is installed).
    if let Ok(o) = std::process::Command::new("nvidia-smi")
        .args(["--query-gpu=name", "--format=csv,noheader", "-i", "0"])
        .output()
    {
        if o.status.success() {
            let smi = String::from_utf8_lossy(&o.stdout).trim().to_owned();
            assert_eq!(r.device_name, smi);
        }
    }
}

#[test]
fn table_mode_exit_4_without_a_driver_else_a_measured_table() {
    let (code, stdout, stderr) = common::run(&["launch-probe"]);
    if driver_present() {
        assert_eq!(code, 0, "{stderr}");
        assert!(stdout.contains("measured"), "{stdout}");
        return;
    }
    assert_eq!(code, 4);
    assert!(stdout.is_empty());
    assert_says_why(&stderr);
}

/// A probe file written by hand (not by stepgate's serializer): the reader must take the
/// min end-to-end figure from it.
pub(crate) const HAND_WRITTEN: &str = r#"{
  "schema_version": 1, "measured": true, "device_ordinal": 0,
  "device_name": "NVIDIA H200", "compute_capability": "9.0",
  "driver_version": "570.124.06", "cuda_version": "12.8",
  "iters_per_burst": 4, "repeats": 2,
  "end_to_end_per_launch_ns": {"min": 2500.0, "median": 2750.0, "bursts_ns": [10000, 11000]},
  "submit_only_per_launch_ns": 1800.0,
  "graph": {"nodes": 10, "launches_per_burst": 2, "per_graph_launch_ns": 9000.0,
            "per_node_ns": 900.0, "bursts_ns": [18000, 19000]},
  "cited_driver_only_ns": 2374.0, "cited_source": "arXiv:2504.11750 Table V"
}"#;

fn write(dir: &Path, name: &str, text: &str) -> std::path::PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn launch_cost_reads_the_min_end_to_end_figure() {
    let t = tempfile::tempdir().unwrap();
    let p = write(t.path(), "ok.json", HAND_WRITTEN);
    let lc = MeasuredLaunchCost::from_file(&p).unwrap();
    // 10,000 ns / 4 launches = 2,500 ns: the fastest burst.
    assert_eq!(lc.per_launch_ns, 10_000.0 / 4.0);
    assert_eq!(lc.device_name, "NVIDIA H200");
    assert_eq!(lc.label(), "measured by launch-probe on NVIDIA H200");
}

#[test]
fn bad_launch_cost_files_are_input_errors() {
    let t = tempfile::tempdir().unwrap();
    let cases = [
        (
            "v2.json",
            HAND_WRITTEN.replace("\"schema_version\": 1", "\"schema_version\": 2"),
            "schema_version 2",
        ),
        (
            "cited.json",
            HAND_WRITTEN.replace("\"measured\": true", "\"measured\": false"),
            "no measured",
        ),
        (
            "zero.json",
            HAND_WRITTEN.replace("\"min\": 2500.0", "\"min\": 0.0"),
            "no measured",
        ),
        (
            "junk.json",
            "not json".to_owned(),
            "not a launch-probe JSON file",
        ),
    ];
    for (name, text, says) in cases {
        let p = write(t.path(), name, &text);
        let e = MeasuredLaunchCost::from_file(&p).unwrap_err();
        assert_eq!(e.exit_code(), stepgate::exit::INPUT, "{name}");
        assert!(e.message.contains(says), "{name}: {}", e.message);
    }
    let e = MeasuredLaunchCost::from_file(&t.path().join("missing.json")).unwrap_err();
    assert_eq!(e.exit_code(), stepgate::exit::INPUT);
}

fn report() -> ProbeReport {
    serde_json::from_str(HAND_WRITTEN).unwrap()
}

#[test]
fn json_schema_is_stable() {
    // The keys `steps --launch-cost` and other readers rely on, at the documented paths.
    let v: serde_json::Value = serde_json::from_str(&stepgate::report::probe::render(
        &report(),
        stepgate::report::Format::Json,
    ))
    .unwrap();
    for key in [
        "/schema_version",
        "/measured",
        "/device_name",
        "/driver_version",
        "/cuda_version",
        "/end_to_end_per_launch_ns/min",
        "/end_to_end_per_launch_ns/median",
        "/submit_only_per_launch_ns",
        "/graph/nodes",
        "/graph/per_graph_launch_ns",
        "/graph/per_node_ns",
    ] {
        assert!(v.pointer(key).is_some(), "missing {key}");
    }
    assert_eq!(v["measured"], true);
    // A file written before `tool` was recorded is still a valid launch-probe document.
    crate::schema::assert_valid("launch-probe", &v);
    let back: ProbeReport = serde_json::from_value(v).unwrap();
    assert_eq!(back, report());
    let _: (EndToEnd, GraphCost) = (back.end_to_end_per_launch_ns, back.graph);
}

#[test]
fn table_labels_measured_derived_cited() {
    let text = stepgate::report::probe::render(&report(), stepgate::report::Format::Table);
    insta::assert_snapshot!(text);
}
