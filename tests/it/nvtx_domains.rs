//! `--steps REGEX` on ranges in a named NVTX domain, without nsys: the generator's
//! TensorRT-LLM capture (its `[Executor] _forward_step …` ranges in domain
//! `TensorRT-LLM`, named by a domain-create row as nsys writes it) selected by the name
//! nsys shows (`TensorRT-LLM:[Executor] …`) and by the bare name gives the generator's own
//! steps, each carrying its domain; a domain the ranges are not in selects nothing.
//! Against nsys' own answer: tests/it/nvtx_projection.rs.

use serde_json::Value;
use stepgate::synth::steps::{build, Scenario};
use stepgate::wire::synth::Format;

use crate::common;

fn steps(path: &str, re: &str) -> (i32, Value, String) {
    let (code, out, err) = common::run(&["steps", path, "--steps", re, "--format", "json"]);
    (code, serde_json::from_str(&out).unwrap_or(Value::Null), err)
}

#[test]
fn a_domain_range_is_selected_by_domain_and_name_or_by_its_bare_name() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trtllm.sqlite");
    let truth = build(Scenario::Trtllm, Format::Nsys, &path).unwrap();
    let path = path.to_str().unwrap();
    // The generator's steps, in time order per rank: name and GPU window.
    let mut want: Vec<(i64, String, Option<i64>, Option<i64>)> = truth
        .series
        .iter()
        .flat_map(|s| {
            s.steps
                .iter()
                .map(move |t| (s.pid, t.name.clone().unwrap(), t.gpu_start_ns, t.gpu_end_ns))
        })
        .collect();
    want.sort();
    assert!(want.len() > 4, "{want:?}");
    for re in [
        r"^TensorRT-LLM:\[Executor\] _forward_step",
        r"^\[Executor\] _forward_step",
        "_forward_step",
    ] {
        let (code, j, err) = steps(path, re);
        assert_eq!(code, 0, "{re}: {err}");
        let mut got: Vec<(i64, String, Option<i64>, Option<i64>)> = j["steps"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| {
                assert_eq!(s["domain"], "TensorRT-LLM", "{re}: {s}");
                (
                    s["pid"].as_i64().unwrap(),
                    s["name"].as_str().unwrap().to_owned(),
                    s["gpu_start_ns"].as_i64(),
                    s["gpu_end_ns"].as_i64(),
                )
            })
            .collect();
        got.sort();
        assert_eq!(got, want, "{re}");
    }
    // The markers found on their own carry the domain too.
    let (code, out, err) = common::run(&["steps", path, "--format", "json"]);
    assert_eq!(code, 0, "{err}");
    let j: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(j["found_by"], "marker");
    assert!(j["steps"]
        .as_array()
        .unwrap()
        .iter()
        .all(|s| s["domain"] == "TensorRT-LLM"));
    // Another domain's prefix matches no range: the one-line input error.
    let (code, _, err) = steps(path, r"^TensorRT:\[Executor\]");
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("no host range matches --steps"), "{err}");
}
