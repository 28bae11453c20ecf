//! Step kinds from the tokens a step wrote, and what they change: the prefill of a vLLM V1
//! capture with no step marker (its KV-cache writes' grid of 1,049 tokens, cross-checked
//! with FlashAttention 2's query blocks) is a prefill with its token count, priced at the
//! compute roof, and its advice names no decode-only cause; with FlashAttention 3 (no
//! grid that counts) it is inferred from the decode after it, and said so, or where no
//! decode runs beside it stays unknown with the reason and is not priced as a decode. The
//! expected values are the generator's truth (`synth::planted_kinds`) and hand formulas.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::{run, steps_json};
use stepgate::synth::planted_kinds::{self, KindCase, FA2_BLOCK_M, PREFILL_TOKENS};
use stepgate::synth::workload;

fn write(dir: &Path, case: KindCase, steps: usize) -> PathBuf {
    let path = dir.join("kinds.sqlite");
    workload::build(&planted_kinds::scenario(case, steps), &path).unwrap();
    path
}

/// Llama-3-8B's parameters that run per token besides lm_head, and lm_head's, from
/// `stepgate floor` (its count is a golden case: `llama3_8b.*` in tests/golden).
pub(crate) fn llama3_8b_params() -> (f64, f64) {
    let (code, out, err) = run(&["floor", "--model", "llama-3-8b", "--format", "json"]);
    assert_eq!(code, 0, "{err}");
    let j: Value = serde_json::from_str(&out).unwrap();
    let m = &j["model"];
    let lm_head = (m["vocab"].as_u64().unwrap() * m["hidden"].as_u64().unwrap()) as f64;
    (m["params_streamed"].as_f64().unwrap() - lm_head, lm_head)
}

/// The least compute floor of a prefill of `t` tokens in an uncounted number of prompts
/// (1, 2, 4, … up to `t`), by hand: 2 FLOPs per parameter per token, lm_head once per
/// prompt, and causal attention 4·heads·head_dim·layers per query-key pair, with the
/// pairs of R equal prompts of ⌊t²/R⌋ squared tokens, (⌊t²/R⌋ + t)/2; over an H100's
/// 989.4 TFLOP/s.
fn least_prefill_floor_ns(t: u64) -> f64 {
    let (dense, lm_head) = llama3_8b_params();
    let per_pair = 4.0 * 32.0 * 128.0 * 32.0;
    let mut best = f64::INFINITY;
    let mut r = 1u64;
    loop {
        let r_eff = r.min(t);
        let pairs = ((t * t / r_eff) as f64 + t as f64) / 2.0;
        let flops = 2.0 * dense * t as f64 + 2.0 * lm_head * r_eff as f64 + per_pair * pairs;
        best = best.min(flops / 989.4e12 * 1e9);
        if r >= t {
            break;
        }
        r *= 2;
    }
    best
}

#[test]
fn an_unmarked_fa2_prefill_is_a_prefill_of_its_tokens_priced_at_the_compute_roof() {
    let dir = tempfile::tempdir().unwrap();
    let n = 5;
    let path = write(dir.path(), KindCase::Fa2PrefillThenDecodes, n);
    let p = path.to_str().unwrap();
    let j = steps_json(&[p, "--model", "llama-3-8b", "--context", "1010"]);
    let steps = j["steps"].as_array().unwrap();
    assert_eq!(steps.len(), n);
    let pre = &steps[0];
    let why = pre["kind_evidence"].as_str().unwrap();
    assert_eq!(pre["kind_guess"], "prefill", "{why}");
    assert_eq!(pre["tokens_guess"], PREFILL_TOKENS);
    // ⌈1,049 / 64⌉ = 17 query blocks in FA2's grid: a sequence longer than a block.
    let blocks = PREFILL_TOKENS.div_ceil(FA2_BLOCK_M);
    assert_eq!(blocks, 17);
    assert!(
        why.starts_with(
            "1049 tokens written (1049 token(s) written by reshape_and_cache_flash_kernel"
        ),
        "{why}"
    );
    assert!(
        why.contains("17 query blocks in the launch grid of flash_fwd_splitkv_kernel"),
        "{why}"
    );
    let f = &pre["attribution"]["floor"];
    assert_eq!(f["bound"], "compute", "{f}");
    let got = f["floor_ns"].as_f64().unwrap();
    let want = least_prefill_floor_ns(PREFILL_TOKENS);
    assert!((got - want).abs() <= 1e-9 * want, "{got} vs {want}");
    // Its advice names no decode-only cause, in the step or in any class.
    let a = &pre["attribution"];
    let mut said = vec![a["action"].as_str().unwrap().to_owned()];
    for c in a["classes"].as_array().unwrap() {
        said.extend(c["action"].as_str().map(str::to_owned));
    }
    for line in &said {
        assert!(!line.contains("small-M"), "{line}");
        assert!(!line.contains("latency-bound"), "{line}");
    }
    // The decodes are decodes of one request (their grids write 1 token).
    for (i, s) in steps.iter().enumerate().skip(1) {
        assert_eq!(
            planted_kinds::tokens_of(KindCase::Fa2PrefillThenDecodes, i),
            1
        );
        assert_eq!(
            s["kind_guess"], "decode",
            "step {i}: {}",
            s["kind_evidence"]
        );
        assert_eq!(s["attribution"]["floor"]["bound"], "memory", "step {i}");
    }
}

#[test]
fn an_fa3_prefill_before_decodes_is_inferred_a_prefill_from_the_decode_after_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), KindCase::Fa3PrefillThenDecodes, 4);
    let p = path.to_str().unwrap();
    let j = steps_json(&[p, "--model", "llama-3-8b", "--context", "1010"]);
    let pre = &j["steps"][0];
    let why = pre["kind_evidence"].as_str().unwrap();
    assert_eq!(pre["kind_guess"], "prefill", "{why}");
    assert_eq!(pre["tokens_guess"], PREFILL_TOKENS);
    // Said to be inferred, with the evidence: step 1 writes 1 token (a decode of one
    // request), so a decode of 1,049 would have 1,049 − 1 requests finish at once.
    assert!(
        why.starts_with("inferred from the neighbouring steps, not read: 1049 tokens written (1049 token(s) written by reshape_and_cache_flash_kernel"),
        "{why}"
    );
    assert_eq!(
        planted_kinds::tokens_of(KindCase::Fa3PrefillThenDecodes, 1),
        1
    );
    assert!(why.contains("the step after decodes 1 request(s)"), "{why}");
    assert!(why.contains("1048 requests finish at once"), "{why}");
    // Priced as the prefill of its tokens, as the FA2 prefill read from its grid is.
    let f = &pre["attribution"]["floor"];
    assert_eq!(f["bound"], "compute", "{f}");
    let got = f["floor_ns"].as_f64().unwrap();
    let want = least_prefill_floor_ns(PREFILL_TOKENS);
    assert!((got - want).abs() <= 1e-9 * want, "{got} vs {want}");
    // A decode between decodes of as many requests as its tokens is not touched.
    for s in &j["steps"].as_array().unwrap()[1..] {
        assert_eq!(s["kind_guess"], "decode", "{}", s["kind_evidence"]);
    }
}

#[test]
fn an_fa3_prefill_with_no_decode_beside_it_stays_unknown_with_the_reason_and_unpriced() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), KindCase::Fa3PrefillsOnly, 4);
    let p = path.to_str().unwrap();
    // --batch 1 would price a step of no kind as a decode of one request.
    let j = steps_json(&[
        p,
        "--model",
        "llama-3-8b",
        "--context",
        "1010",
        "--batch",
        "1",
    ]);
    let steps = j["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 4);
    for pre in steps {
        let why = pre["kind_evidence"].as_str().unwrap();
        assert!(pre["kind_guess"].is_null(), "{why}");
        assert_eq!(pre["tokens_guess"], PREFILL_TOKENS);
        assert!(
            why.contains(
                "a prefill of 1049 tokens and a decode of 1049 requests cannot be told apart"
            ),
            "{why}"
        );
        assert!(
            pre["attribution"]["floor"].is_null(),
            "1,049 tokens are not a decode of --batch 1: {}",
            pre["attribution"]["floor"]
        );
    }
}

#[test]
fn an_opaque_graph_replay_is_sent_to_node_tracing_not_to_a_kernel_profiler() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), KindCase::OpaqueGraphDecodes, 4);
    let p = path.to_str().unwrap();
    let j = steps_json(&[p]);
    for s in j["steps"].as_array().unwrap() {
        let a = &s["attribution"];
        let action = a["action"].as_str().unwrap();
        assert_eq!(a["shape"], "one-graph-dominant", "{action}");
        assert!(action.starts_with("[cuda graph "), "{action}");
        assert!(
            action.contains("nsys profile --cuda-graph-trace=node"),
            "{action}"
        );
        assert!(!action.contains("Nsight Compute"), "{action}");
    }
}
