//! Comparable or not: before anything is judged, the two sides' operating points are
//! compared field by field. A GPU, model, TP or a step-kind set with nothing in common
//! makes the gate `incomparable` (exit 6) naming the fields; an engine, capture mode or
//! step-discovery difference lowers the comparability score (the share of fields both
//! sides state that agree) and is listed in the report.

use std::path::{Path, PathBuf};

use stepgate::baseline::write_baseline;
use stepgate::wire::baseline::Baseline;
use stepgate::wire::meta::SourceInfo;
use stepgate::wire::trace::SourceFormat;

use crate::common;
use crate::gate::{generate, Spec};

/// The reference side: the generated decode run, with TP 1, steps found by marker and a
/// node-mode nsys capture.
fn reference(spec: &Spec) -> Baseline {
    let mut b = generate(spec);
    b.meta.tp = Some(1);
    b.meta.found_by = Some("marker".into());
    b.source = Some(SourceInfo {
        format: SourceFormat::Nsys,
        path: "run.sqlite".into(),
        tool_version: Some("2026.2.1.210".into()),
        schema_version: None,
        cuda_graph_trace_mode: Some("node".into()),
        origin_epoch_ns: None,
    });
    b
}

fn write(dir: &Path, name: &str, b: &Baseline) -> PathBuf {
    let p = dir.join(name);
    write_baseline(&p, &stepgate::store::StoreConfig::default(), b).unwrap();
    p
}

fn gate(base: &Path, cand: &Path, extra: &[&str]) -> (i32, String, String) {
    let mut args = vec![
        "gate",
        cand.to_str().unwrap(),
        "--baseline",
        base.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    common::run(&args)
}

fn json(base: &Path, cand: &Path) -> (i32, serde_json::Value) {
    let (code, out, err) = gate(base, cand, &["--format", "json"]);
    let v = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}{err}"));
    (code, v)
}

#[test]
fn another_gpu_is_incomparable_with_its_own_exit_code() {
    let dir = tempfile::tempdir().unwrap();
    let base = write(dir.path(), "base.json", &reference(&Spec::default()));
    let h200 = reference(&Spec {
        gpu: Some("NVIDIA H200"),
        ..Spec::default()
    });
    let cand = write(dir.path(), "h200.json", &h200);
    let (code, v) = json(&base, &cand);
    assert_eq!(code, 6, "{v}");
    assert_eq!(
        (v["verdict"].as_str(), v["exit_code"].as_u64()),
        (Some("incomparable"), Some(6))
    );
    let d = &v["comparability"]["differences"];
    assert_eq!(d.as_array().unwrap().len(), 1, "{d}");
    assert_eq!(d[0]["field"], "GPU");
    assert_eq!(d[0]["candidate"], "NVIDIA H200");
    assert_eq!(d[0]["changes_meaning"], true);
    assert!(v["groups"].as_array().unwrap().is_empty(), "nothing judged");
    let (_, md, _) = gate(&base, &cand, &["--format", "markdown"]);
    let first = md.lines().next().unwrap();
    assert!(
        first.starts_with(
            "### ⛔ Incomparable — GPU mismatch: baseline ran on \"NVIDIA H100 80GB HBM3\", \
             candidate on \"NVIDIA H200\""
        ),
        "{first}"
    );
    assert!(
        md.contains("GPU NVIDIA H100 80GB HBM3 → NVIDIA H200 (changes meaning)"),
        "{md}"
    );
    // Asked for, the gate compares anyway and says so first.
    let (code, out, _) = gate(&base, &cand, &["--allow-incomparable"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("warning: GPU mismatch"), "{out}");
}

#[test]
fn tp_model_and_disjoint_step_kinds_are_incomparable_naming_each_field() {
    let dir = tempfile::tempdir().unwrap();
    let base = write(dir.path(), "base.json", &reference(&Spec::default()));
    // TP 1 → 2.
    let mut tp2 = reference(&Spec::default());
    tp2.meta.tp = Some(2);
    let (code, v) = json(&base, &write(dir.path(), "tp2.json", &tp2));
    assert_eq!(code, 6, "{v}");
    assert!(
        v["reasons"][0]
            .as_str()
            .unwrap()
            .starts_with("TP mismatch: baseline 1, candidate 2"),
        "{v}"
    );
    // Another model (both priced).
    let priced = write(
        dir.path(),
        "priced.json",
        &reference(&Spec {
            mbu: true,
            ..Spec::default()
        }),
    );
    let mut other = reference(&Spec {
        mbu: true,
        ..Spec::default()
    });
    other.meta.model = Some("qwen3-8b".into());
    let (code, v) = json(&priced, &write(dir.path(), "qwen.json", &other));
    assert_eq!(code, 6, "{v}");
    assert!(
        v["reasons"][0].as_str().unwrap().contains("model mismatch"),
        "{v}"
    );
    // Only prefill steps against only decode steps: no step kind on both sides.
    let mut prefill = reference(&Spec::default());
    prefill.samples.groups[0].step_kind = "prefill".into();
    let (code, v) = json(&base, &write(dir.path(), "prefill.json", &prefill));
    assert_eq!(code, 6, "{v}");
    assert_eq!(
        v["reasons"][0],
        "no step kind on both sides: baseline has decode, candidate prefill"
    );
}

#[test]
fn smaller_differences_lower_the_score_and_are_listed() {
    let dir = tempfile::tempdir().unwrap();
    let base = write(dir.path(), "base.json", &reference(&Spec::default()));
    let mut cand = reference(&Spec {
        seed: 2,
        ..Spec::default()
    });
    cand.meta.engine = Some("sglang".into());
    cand.meta.found_by = Some("gaps".into());
    cand.source.as_mut().unwrap().cuda_graph_trace_mode = Some("graph".into());
    let cand = write(dir.path(), "cand.json", &cand);
    let (code, v) = json(&base, &cand);
    assert_eq!(code, 0, "{v}");
    let k = &v["comparability"];
    // Stated by both: GPU, TP, step kinds, engine, capture mode, step discovery, source
    // format, profiler version, batch mix (9; no model on either side). Three differ.
    let checked: Vec<&str> = k["checked"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_str().unwrap())
        .collect();
    assert_eq!(
        checked,
        [
            "GPU",
            "TP",
            "step kinds",
            "engine",
            "capture mode",
            "step discovery",
            "source format",
            "profiler version",
            "batch mix"
        ]
    );
    assert_eq!(k["unknown"], serde_json::json!(["model", "engine version"]));
    assert!(
        (k["score"].as_f64().unwrap() - 6.0 / 9.0).abs() < 1e-12,
        "{k}"
    );
    let (_, md, _) = gate(&base, &cand, &["--format", "markdown"]);
    assert!(
        md.contains(
            "Comparability 0.67 (derived: 6 of 9 operating-point fields both sides state \
             agree); differs in engine vllm → sglang; capture mode node → graph; step \
             discovery marker → gaps."
        ),
        "{md}"
    );
    // Identical operating points: score 1, and no line.
    let same = write(dir.path(), "same.json", &reference(&Spec::default()));
    let (_, v) = json(&base, &same);
    assert_eq!(v["comparability"]["score"], 1.0);
    let (_, md, _) = gate(&base, &same, &["--format", "markdown"]);
    assert!(!md.contains("Comparability"), "{md}");
}

#[test]
fn a_plain_diff_across_gpus_warns_and_compares() {
    let dir = tempfile::tempdir().unwrap();
    let base = write(dir.path(), "base.json", &reference(&Spec::default()));
    let cand = write(
        dir.path(),
        "h200.json",
        &reference(&Spec {
            gpu: Some("NVIDIA H200"),
            ..Spec::default()
        }),
    );
    let (code, out, _) = common::run(&["diff", base.to_str().unwrap(), cand.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.starts_with("stepgate diff: 1 step group compared"),
        "{out}"
    );
    assert!(out.contains("GPU mismatch"), "{out}");
    // With --verdict a diff is a gate: incomparable.
    let (code, _, _) = common::run(&[
        "diff",
        base.to_str().unwrap(),
        cand.to_str().unwrap(),
        "--verdict",
    ]);
    assert_eq!(code, 6);
}

/// The real vLLM decode capture (one full-graph step on an MI300X), as vLLM 0.6.3 and
/// vLLM 0.7.0 would have written it (`vllm_version` at the top level, where the profiler
/// puts it, docs/kineto-format.md §1).
fn vllm_capture(dir: &Path, version: &str) -> PathBuf {
    use std::io::Read;
    let mut text = String::new();
    flate2::read::GzDecoder::new(
        std::fs::File::open(common::fixture(
            "kineto/vllm_mi300x_decode_fullgraph_step.json.gz",
        ))
        .unwrap(),
    )
    .read_to_string(&mut text)
    .unwrap();
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert!(v.get("vllm_version").is_none());
    v["vllm_version"] = version.into();
    let p = dir.join(format!("vllm-{version}.json"));
    std::fs::write(&p, v.to_string()).unwrap();
    p
}

#[test]
fn an_engine_version_difference_lowers_the_score_and_is_listed() {
    let dir = tempfile::tempdir().unwrap();
    let old = vllm_capture(dir.path(), "0.6.3");
    // One step: recorded anyway (the policy says warn); every gate is then inconclusive
    // for want of steps, and the operating points are still compared.
    let warn = dir.path().join("warn.toml");
    std::fs::write(&warn, "small_baseline = \"warn\"\n").unwrap();
    let base = dir.path().join("base.json");
    let (code, _, err) = common::run(&[
        "baseline",
        "record",
        old.to_str().unwrap(),
        "-o",
        base.to_str().unwrap(),
        "--policy",
        warn.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let b: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&base).unwrap()).unwrap();
    assert_eq!(b["meta"]["engine_version"], "vllm 0.6.3");

    let new = vllm_capture(dir.path(), "0.7.0");
    let (code, v) = json(&base, &new);
    assert_eq!(code, 3, "{v}");
    let k = &v["comparability"];
    assert_eq!(
        k["differences"],
        serde_json::json!([{
            "field": "engine version",
            "baseline": "vllm 0.6.3",
            "candidate": "vllm 0.7.0",
            "changes_meaning": false,
        }])
    );
    let checked = k["checked"].as_array().unwrap();
    assert!(checked.iter().any(|f| f == "engine version"), "{k}");
    let n = checked.len() as f64;
    assert!(
        (k["score"].as_f64().unwrap() - (n - 1.0) / n).abs() < 1e-12,
        "{k}"
    );
    // Not a meaning change: the verdict is the step count's (inconclusive), not exit 6.
    assert_ne!(v["verdict"], "incomparable");
    let (_, md, _) = gate(&base, &new, &["--format", "markdown"]);
    assert!(
        md.contains("differs in engine version vllm 0.6.3 → vllm 0.7.0."),
        "{md}"
    );
    // The same version: compared, no difference.
    let (_, v) = json(&base, &old);
    assert_eq!(v["comparability"]["differences"], serde_json::json!([]));
    assert_eq!(v["comparability"]["score"], 1.0);
}
