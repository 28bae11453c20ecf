//! A mixed step (a prefill chunk beside decodes, no step marker): its kind from the tokens
//! its KV-cache writes count against the sequences paged attention's grid counts, priced
//! with the compute term for its tokens and the bandwidth term for the weights and the
//! decodes' KV, and advised without decode-only causes. The expected floor is by hand.

use crate::common::steps_json;
use crate::kinds::llama3_8b_params;
use stepgate::synth::planted_mixed::{self, MIXED_SEQUENCES, MIXED_TOKENS};
use stepgate::synth::workload;

#[test]
fn a_mixed_step_is_mixed_with_its_tokens_and_priced_at_the_compute_roof() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mixed.sqlite");
    let context = 1010;
    workload::build(&planted_mixed::scenario(4, context), &path).unwrap();
    let j = steps_json(&[
        path.to_str().unwrap(),
        "--model",
        "llama-3-8b",
        "--context",
        "1010",
    ]);
    let s = &j["steps"][0];
    let why = s["kind_evidence"].as_str().unwrap();
    assert_eq!(s["kind_guess"], "mixed", "{why}");
    assert_eq!(s["tokens_guess"], MIXED_TOKENS);
    assert_eq!(s["batch_guess"], MIXED_SEQUENCES, "{}", s["batch_evidence"]);
    assert!(why.starts_with("1049 tokens for 2 sequence(s)"), "{why}");
    // Two sequences over 1,049 tokens: one decode (1 query, 1,010 keys) beside a chunk of
    // 1,048 tokens (1,048·1,049/2 causal pairs). FLOPs: 2 per parameter per token, lm_head
    // for 2 logits rows, 4·heads·head_dim·layers per pair; over an H100's 989.4 TFLOP/s.
    let (dense, lm_head) = llama3_8b_params();
    let pairs = 1010.0 + 1048.0 * 1049.0 / 2.0;
    let flops = 2.0 * dense * 1049.0 + 2.0 * lm_head * 2.0 + 4.0 * 32.0 * 128.0 * 32.0 * pairs;
    let want = flops / 989.4e12 * 1e9;
    let f = &s["attribution"]["floor"];
    assert_eq!(f["bound"], "compute", "{f}");
    let got = f["floor_ns"].as_f64().unwrap();
    assert!((got - want).abs() <= 1e-9 * want, "{got} vs {want}");
    let a = &s["attribution"];
    let mut said = vec![a["action"].as_str().unwrap().to_owned()];
    for c in a["classes"].as_array().unwrap() {
        said.extend(c["action"].as_str().map(str::to_owned));
    }
    for line in &said {
        assert!(!line.contains("small-M"), "{line}");
        assert!(!line.contains("latency-bound"), "{line}");
    }
    for (i, d) in j["steps"].as_array().unwrap().iter().enumerate().skip(1) {
        assert_eq!(
            d["kind_guess"], "decode",
            "step {i}: {}",
            d["kind_evidence"]
        );
    }
}
