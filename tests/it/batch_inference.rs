//! The batch of unnamed decode steps read from the capture: from the Kineto input shapes
//! of a real SGLang trace whose step annotation (which states the batch) is removed, and
//! from the paged-attention launch grid of generated nsys captures, each checked against
//! the value the removed annotation or the generator states, and each priced floor
//! against a floor computed here by hand.

use std::io::Read;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::{fixture, run, steps_json};
use stepgate::synth::planted::{self, Cause};
use stepgate::synth::workload;

const SGLANG: &str = "kineto/sglang_mi300x_qwen3-8b_decode_step.json.gz";

/// The SGLang fixture without its two step annotations (`step[DECODE bs=N]` and vLLM's
/// `execute_…`), written into `dir`; returns the path and the N the annotation stated.
fn unannotated_sglang(dir: &Path) -> (PathBuf, u64) {
    let mut text = String::new();
    flate2::read::GzDecoder::new(std::fs::File::open(fixture(SGLANG)).unwrap())
        .read_to_string(&mut text)
        .unwrap();
    let mut j: Value = serde_json::from_str(&text).unwrap();
    let events = j["traceEvents"].as_array_mut().unwrap();
    let is_step = |e: &Value| {
        let name = e["name"].as_str().unwrap_or("");
        e["cat"].as_str().unwrap_or("").contains("annotation")
            && (name.starts_with("step[") || name.starts_with("execute_"))
    };
    let bs: u64 = events
        .iter()
        .filter(|e| is_step(e))
        .find_map(|e| {
            let n = e["name"].as_str()?;
            n.split("bs=").nth(1)?.trim_end_matches(']').parse().ok()
        })
        .expect("the fixture's step[DECODE bs=N] annotation");
    let before = events.len();
    events.retain(|e| !is_step(e));
    assert!(before - events.len() >= 2, "both annotations removed");
    let path = dir.join("sglang_unannotated.json");
    std::fs::write(&path, serde_json::to_vec(&j).unwrap()).unwrap();
    (path, bs)
}

/// Qwen3-8B decode floor on one MI300X (5.3 TB/s, cited), by hand from Qwen/Qwen3-8B
/// `config.json` (hidden 4096, 36 layers, 32 heads, 8 KV heads of 128, intermediate
/// 12288, vocab 151936, untied, q/k norms of head_dim): every linear weight and lm_head
/// once, the norms, and the KV cache read (B·s rows) and written (B rows).
fn qwen3_8b_floor_ns(batch: u64, context: u64) -> f64 {
    let (l, d, h, kv, dh, ffn, v) = (36u64, 4096u64, 32u64, 8u64, 128u64, 12288u64, 151_936u64);
    let linear = l * (d * (h + 2 * kv) * dh + h * dh * d + 3 * d * ffn);
    let norms = l * (2 * d + 2 * dh) + d;
    let weights = (linear + v * d + norms) as f64 * 2.0;
    let cell = (2 * l * kv * dh * 2) as f64;
    (weights + cell * (batch * context + batch) as f64) / 5.3e12 * 1e9
}

/// Llama-3-8B decode floor on one H100 SXM (3.35 TB/s, cited), by hand from
/// meta-llama/Meta-Llama-3-8B `config.json` (hidden 4096, 32 layers, 32 heads, 8 KV heads
/// of 128, intermediate 14336, vocab 128256, untied).
pub(crate) fn llama3_8b_floor_ns(batch: u64, context: u64) -> f64 {
    let (l, d, h, kv, dh, ffn, v) = (32u64, 4096u64, 32u64, 8u64, 128u64, 14336u64, 128_256u64);
    let linear = l * (d * (h + 2 * kv) * dh + h * dh * d + 3 * d * ffn);
    let norms = l * 2 * d + d;
    let weights = (linear + v * d + norms) as f64 * 2.0;
    let cell = (2 * l * kv * dh * 2) as f64;
    (weights + cell * (batch * context + batch) as f64) / 3.35e12 * 1e9
}

pub(crate) fn close(got: f64, want: f64) -> bool {
    (got - want).abs() <= 1e-9 * want
}

#[test]
fn an_unannotated_sglang_decode_gets_its_batch_from_the_input_shapes() {
    let dir = tempfile::tempdir().unwrap();
    let (path, bs) = unannotated_sglang(dir.path());
    assert_eq!(bs, 32);
    let p = path.to_str().unwrap();
    let j = steps_json(&[p, "--model", "qwen3-8b", "--context", "1025"]);
    let steps = j["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 1, "one step, now found without its marker");
    let s = &steps[0];
    assert!(s["composition"].is_null(), "the step's name states nothing");
    assert_eq!(s["kind"], "unknown");
    assert_eq!(s["kind_guess"], "decode");
    assert_eq!(s["batch_guess"].as_u64(), Some(bs));
    let why = s["batch_evidence"].as_str().unwrap();
    // The greedy sampler's argmax over the [32, vocab] logits is the evidence.
    assert!(
        why.contains("aten::argmax") && why.contains("[32,151936]"),
        "{why}"
    );
    let floor = s["attribution"]["floor"]["floor_ns"].as_f64().unwrap();
    let want = qwen3_8b_floor_ns(32, 1025);
    assert!(close(floor, want), "{floor} vs {want}");

    // The text says the batch is inferred, and from what.
    // What each inferred value rests on is part of the --detail diagnosis.
    let (code, out, err) = run(&[
        "steps",
        p,
        "--model",
        "qwen3-8b",
        "--context",
        "1025",
        "--detail",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("batch: 32 (inferred) for 1 step(s), e.g. 32 "),
        "{out}"
    );

    // A flag wins: no guess is made, and the floor is the flag's.
    let j = steps_json(&[
        p,
        "--model",
        "qwen3-8b",
        "--context",
        "1025",
        "--batch",
        "16",
    ]);
    let s = &j["steps"][0];
    assert!(s.get("batch_guess").is_none(), "{s}");
    let floor = s["attribution"]["floor"]["floor_ns"].as_f64().unwrap();
    assert!(close(floor, qwen3_8b_floor_ns(16, 1025)));
}

#[test]
fn the_annotated_fixture_keeps_its_named_batch_and_makes_no_guess() {
    let j = steps_json(&[fixture(SGLANG).to_str().unwrap(), "--model", "qwen3-8b"]);
    let s = &j["steps"][0];
    assert_eq!(s["composition"]["requests"].as_u64(), Some(32));
    assert!(s.get("batch_guess").is_none(), "{s}");
}

#[test]
fn unmarked_decodes_get_their_batch_from_the_paged_attention_grid() {
    let dir = tempfile::tempdir().unwrap();
    let scn = planted::scenario(Cause::BatchInGrid, 6);
    let path = dir.path().join("grid.sqlite");
    workload::build(&scn, &path).unwrap();
    let p = path.to_str().unwrap();
    let j = steps_json(&[p, "--model", "llama-3-8b", "--context", "1010"]);
    let steps = j["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 6);
    let mut seen = Vec::new();
    for (i, s) in steps.iter().enumerate() {
        let b = planted::grid_batch(i);
        assert_eq!(s["kind_guess"], "decode");
        assert_eq!(s["batch_guess"].as_u64(), Some(b), "step {i}");
        let why = s["batch_evidence"].as_str().unwrap();
        assert!(
            why.starts_with(&format!(
                "{b} sequences in the launch grid of paged_attention_v2"
            )),
            "{why}"
        );
        let floor = s["attribution"]["floor"]["floor_ns"].as_f64().unwrap();
        let want = llama3_8b_floor_ns(b, 1010);
        assert!(close(floor, want), "step {i}: {floor} vs {want}");
        seen.push(b);
    }
    assert!(seen.contains(&8) && seen.contains(&24));

    // The page carries the same labelled lines as the terminal.
    let html = dir.path().join("steps.html");
    let (code, out, err) = run(&[
        "steps",
        p,
        "--model",
        "llama-3-8b",
        "--context",
        "1010",
        "--detail",
        "--html",
        html.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("batch: 8 (inferred) for 3 step(s)"), "{out}");
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("batch: 8 (inferred) for 3 step(s)"));
    assert!(page.contains("batch: 24 (inferred) for 3 step(s)"));

    // Without --context the steps still lack a floor, and the note asks for the context
    // only (the batch is known).
    let j = steps_json(&[p, "--model", "llama-3-8b"]);
    let notes = j["notes"].to_string();
    assert!(
        notes.contains("nothing states their context: pass --context"),
        "{notes}"
    );
    // --batch wins over the grid.
    let j = steps_json(&[
        p,
        "--model",
        "llama-3-8b",
        "--context",
        "1010",
        "--batch",
        "16",
    ]);
    for s in j["steps"].as_array().unwrap() {
        assert!(s.get("batch_guess").is_none());
        let f = s["attribution"]["floor"]["floor_ns"].as_f64().unwrap();
        assert!(close(f, llama3_8b_floor_ns(16, 1010)));
    }
}

#[test]
fn steps_without_a_model_read_no_grid_and_guess_no_batch() {
    let dir = tempfile::tempdir().unwrap();
    let scn = planted::scenario(Cause::BatchInGrid, 2);
    let path = dir.path().join("grid.sqlite");
    workload::build(&scn, &path).unwrap();
    let j = steps_json(&[path.to_str().unwrap()]);
    for s in j["steps"].as_array().unwrap() {
        assert!(s.get("batch_guess").is_none(), "{s}");
    }
}

/// A capture's shapes get `--batch`'s bounds: a first dimension of 10^15 (written as the
/// float `1000000000000000.0`) or 2^40 is refused as a count, and the refusal is a warning
/// naming the value and where it came from, not a silent drop.
#[test]
fn shapes_out_of_bounds_are_ignored_with_a_warning_naming_them() {
    let dir = tempfile::tempdir().unwrap();
    let (path, _) = unannotated_sglang(dir.path());
    let mut j: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let mut changed = 0;
    for (i, e) in j["traceEvents"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .enumerate()
    {
        let name = e["name"].as_str().unwrap_or("").to_owned();
        let token_major =
            ["aten::linear", "aten::mm", "aten::matmul", "aten::argmax"].contains(&name.as_str());
        let Some(first) = e
            .get_mut("args")
            .and_then(|a| a.get_mut("Input Dims"))
            .and_then(|d| d.get_mut(0))
            .and_then(Value::as_array_mut)
        else {
            continue;
        };
        if token_major && !first.is_empty() {
            first[0] = if i % 2 == 0 {
                serde_json::json!(1e15)
            } else {
                serde_json::json!(1u64 << 40)
            };
            changed += 1;
        }
    }
    assert!(changed >= 1, "{changed} shapes rewritten");
    std::fs::write(&path, serde_json::to_vec(&j).unwrap()).unwrap();
    let j = steps_json(&[
        path.to_str().unwrap(),
        "--model",
        "qwen3-8b",
        "--context",
        "1025",
    ]);
    let s = &j["steps"][0];
    let guess = s["batch_guess"].as_u64();
    assert!(guess.is_none_or(|b| b <= 1 << 20), "{s}");
    assert!(
        !s["batch_evidence"]
            .as_str()
            .unwrap_or_default()
            .contains("Input Dims"),
        "{s}"
    );
    let warnings = j["warnings"].to_string();
    assert!(
        warnings.contains(&format!(
            "{changed} input shape(s) of token-major operators ignored"
        )),
        "{warnings}"
    );
    assert!(
        warnings.contains("1e15")
            || warnings.contains("1000000000000000")
            || warnings.contains("1099511627776"),
        "{warnings}"
    );
}
