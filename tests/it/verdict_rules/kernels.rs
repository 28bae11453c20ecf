//! Verdict rules on kernels: collectives that wait, split-K GEMMs, GEMMs at the roof, attention grids and AMD traces.

use super::*;

#[test]
fn a_collective_that_waits_in_some_steps_is_named_with_its_spread() {
    let dir = tempfile::tempdir().unwrap();
    let n = 8;
    let scn = planted::scenario(Cause::StragglingAllReduce, n);
    let p = build(dir.path(), "straggler", &scn);
    let j: Value =
        serde_json::from_str(&steps(&p, &["--model", "llama-3-70b", "--tp", "4"], "json")).unwrap();
    // 4 ranks × 8 steps, factors 1, 3, 5, 7 twice per rank: sorted, 8 values of each.
    let mut v: Vec<f64> = (0..4).flat_map(|_| (0..n).map(straggler_comm_ns)).collect();
    v.sort_by(f64::total_cmp);
    assert_eq!(v.len(), 32);
    // Linear interpolation at q × (len − 1): p10 at 3.1 (both 1×), p50 at 15.5 (between
    // 3× and 5×), p90 at 27.9 (both 7×).
    let (p10, p50, p90) = (1_280_000.0, 5_120_000.0, 8_960_000.0);
    assert_eq!((v[3], v[4]), (p10, p10));
    assert_eq!((v[15] + v[16]) / 2.0, p50);
    assert_eq!((v[27], v[28]), (p90, p90));

    let groups = j["class_spread"].as_array().unwrap();
    assert_eq!(groups.len(), 1, "{groups:?}");
    assert_eq!(groups[0]["group"], "decode");
    assert_eq!(groups[0]["steps"], 32);
    let comm = groups[0]["classes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["class"] == "communication")
        .unwrap();
    assert_eq!(comm["steps_with"], 32);
    assert_eq!(comm["p10_ns"].as_f64().unwrap(), p10);
    assert_eq!(comm["p50_ns"].as_f64().unwrap(), p50);
    assert_eq!(comm["p90_ns"].as_f64().unwrap(), p90);
    assert_eq!(comm["varies"], true);
    // The first step of the least (factor 1: step 0) and of the most (factor 7: step 3).
    assert_eq!(comm["min"]["index"], 0);
    assert_eq!(comm["min"]["ns"].as_f64().unwrap(), p10);
    assert_eq!(comm["max"]["index"], 3);
    assert_eq!(comm["max"]["ns"].as_f64().unwrap(), p90);
    // The other classes run the same every step: none varies.
    for c in groups[0]["classes"].as_array().unwrap() {
        if c["class"] != "communication" {
            assert_eq!(c["varies"], false, "{c}");
            assert_eq!(c["p10_ns"], c["p90_ns"], "{c}");
        }
    }

    let (rule, line, _) = verdict(&p, &["--model", "llama-3-70b", "--tp", "4"]);
    assert_eq!(rule, "class-varies", "{line}");
    assert!(
        line.contains("communication takes 1.3 ms–9.0 ms per step (p10–p90, measured) across 32 decode steps, median 5.1 ms"),
        "{line}"
    );
    assert!(line.contains("most 9.0 ms in series 0 step 3"), "{line}");
    assert!(line.contains("wait on other ranks"), "{line}");
    // The text report prints the spread table under the class table.
    for format in ["table", "markdown"] {
        let text = steps(&p, &["--model", "llama-3-70b", "--tp", "4"], format);
        assert!(
            text.contains("per kernel class across the 32 decode steps"),
            "{format}: {text}"
        );
        let row = text
            .lines()
            .rfind(|l| l.contains("communication") && l.contains("8,960.0"))
            .unwrap_or_else(|| panic!("{format}: {text}"));
        assert!(row.contains("1,280.0") && row.contains("5,120.0"), "{row}");
    }
}

#[test]
fn collectives_that_take_the_same_every_step_do_not_vary() {
    let dir = tempfile::tempdir().unwrap();
    let p = build(dir.path(), "tp4", &planted::scenario(Cause::Tp4, 6));
    let j: Value =
        serde_json::from_str(&steps(&p, &["--model", "llama-3-70b", "--tp", "4"], "json")).unwrap();
    let g = &j["class_spread"][0];
    assert_eq!(g["steps"], 24);
    for c in g["classes"].as_array().unwrap() {
        assert_eq!(c["varies"], false, "{c}");
    }
    let (rule, line, _) = verdict(&p, &["--model", "llama-3-70b", "--tp", "4"]);
    assert_ne!(rule, "class-varies", "{line}");
    // The link the communication class is priced against is printed with its citation:
    // NVLink 4 through NVSwitch, 900 GB/s bidirectional per GPU, 450 GB/s each way.
    let text = steps(&p, &["--model", "llama-3-70b", "--tp", "4"], "table");
    let roof = text
        .lines()
        .find(|l| l.starts_with("communication roof: "))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        roof.starts_with("communication roof: 450.0 GB/s (derived: "),
        "{roof}"
    );
    assert!(roof.contains("cited: NVLink 4 through NVSwitch"), "{roof}");
}

#[test]
fn fewer_than_five_like_steps_have_no_spread() {
    let dir = tempfile::tempdir().unwrap();
    // One rank's worth is not what the planted scenario writes (4 ranks), so use 1 step:
    // 4 steps in the group, one short of the minimum.
    let p = build(
        dir.path(),
        "few",
        &planted::scenario(Cause::StragglingAllReduce, 1),
    );
    let j: Value =
        serde_json::from_str(&steps(&p, &["--model", "llama-3-70b", "--tp", "4"], "json")).unwrap();
    assert!(j.get("class_spread").is_none(), "{}", j["class_spread"]);
    let (rule, line, _) = verdict(&p, &["--model", "llama-3-70b", "--tp", "4"]);
    assert_ne!(rule, "class-varies", "{line}");
}

/// Nanoseconds to move `bytes` at `fraction` of the H100's 3.35 TB/s, as the planted
/// schedule rounds them.
fn h100_ns(bytes: f64, fraction: f64) -> f64 {
    (bytes / (3.35e12 * fraction) * 1e9).round()
}

#[test]
fn a_split_k_gemm_is_folded_into_its_gemm_and_the_gemms_are_ranked_by_excess() {
    let dir = tempfile::tempdir().unwrap();
    let p = build(
        dir.path(),
        "splitk",
        &planted::scenario(Cause::SplitKGemms, 12),
    );
    let j: Value = serde_json::from_str(&steps(&p, &["--model", "llama-3-8b"], "json")).unwrap();
    let map = &j["groups"][0]["layers"];
    // Folded, the layer has qkv, o, gate_up and down again (4 GEMMs, not 5).
    assert!(map["ambiguous"].is_null(), "{map}");
    let gemms = map["gemms"].as_array().unwrap();
    let role = |r: &str| gemms.iter().find(|g| g["role"] == r).unwrap();
    // Llama-3-8B at TP 1, bf16: qkv 4096 × (32 + 2·8) × 128 × 2 B = 50,331,648 B, o
    // 32 × 128 × 4096 × 2 = 33,554,432 B, gate_up 4096 × 2 × 14336 × 2 = 234,881,024 B.
    let (qkv_b, o_b, gu_b) = (50_331_648.0, 33_554_432.0, 234_881_024.0);
    let floor = |b: f64| b / 3.35e12 * 1e9;
    let qkv = role("qkv");
    // The split GEMM at 70% of β plus its 3 µs reduction.
    let qkv_ns = h100_ns(qkv_b, 0.7) + 3_000.0;
    assert!(qkv["kernel"]
        .as_str()
        .unwrap()
        .starts_with("sm90_xmma_gemm"));
    assert!(qkv["split_k_reduction"]
        .as_str()
        .unwrap()
        .contains("splitKreduce_kernel"));
    assert!(
        (qkv["time_ns"].as_f64().unwrap() - qkv_ns).abs() < 0.5,
        "{qkv}"
    );
    let qkv_excess = qkv_ns - floor(qkv_b);
    assert!((qkv["excess_ns"].as_f64().unwrap() - qkv_excess).abs() < 0.5);
    assert!((qkv["roof_fraction"].as_f64().unwrap() - floor(qkv_b) / qkv_ns).abs() < 1e-9);
    assert_eq!(qkv["launches_per_step"], 32);
    let o_excess = h100_ns(o_b, 0.5) - floor(o_b);
    assert!((role("o")["excess_ns"].as_f64().unwrap() - o_excess).abs() < 0.5);
    assert!(role("o")["split_k_reduction"].is_null());
    assert_eq!(role("lm_head")["launches_per_step"], 1);
    // By time gate_up leads (77.9 µs a layer); by excess per step o (32 × 10.0 µs) and
    // qkv (32 × 9.4 µs) do, and the run line names them in that order.
    let gu_ns = h100_ns(gu_b, 0.9);
    assert!(gu_ns > qkv_ns && gu_ns > h100_ns(o_b, 0.5));
    let (rule, line, held) = verdict(&p, &["--model", "llama-3-8b"]);
    assert_eq!(rule, "gemms-below-roof");
    let us = |ns: f64| format!("{:.1} µs", ns / 1e3);
    let total = 32.0 * (o_excess + qkv_excess);
    assert!(
        line.starts_with(&format!(
            "but GEMMs below 80% of β hold {} per step of the median decode step",
            us(total.round())
        )),
        "{line}"
    );
    let o_at = line.find("(o) ").unwrap();
    let qkv_at = line.find("(qkv) with its split-K reduction").unwrap();
    assert!(o_at < qkv_at, "{line}");
    assert!(line.contains(&format!(
        "(o) {} per step (32 × {}) at 50% of β",
        us((32.0 * o_excess).round()),
        us(o_excess.round())
    )));
    assert!(line.contains("try its shape without split-K"), "{line}");
    assert!(!line.contains("gate_up"), "{line}");
    assert!(held.is_empty());
    // The text table ranks them the same way: o, then qkv with its reduction.
    let text = steps(&p, &["--model", "llama-3-8b"], "table");
    let rows: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("layer GEMM"))
        .skip(2)
        .take(2)
        .collect();
    assert!(rows[0].starts_with("o "), "{text}");
    assert!(rows[1].starts_with("qkv ") && rows[1].contains("+ cublasLt::splitKreduce"));
}

#[test]
fn gemms_at_the_roof_are_not_named_below_it() {
    let dir = tempfile::tempdir().unwrap();
    // Every GEMM at 97% of β: nothing below the roof to name.
    let p = build(
        dir.path(),
        "roof",
        &planted::scenario(Cause::GemmsAtRoof, 12),
    );
    let (rule, line, _) = verdict(&p, &["--model", "llama-3-8b"]);
    assert_ne!(rule, "gemms-below-roof", "{line}");
    assert!(!line.contains("GEMMs below"), "{line}");
    let j: Value = serde_json::from_str(&steps(&p, &["--model", "llama-3-8b"], "json")).unwrap();
    let gemms = j["groups"][0]["layers"]["gemms"].as_array().unwrap();
    assert_eq!(gemms.len(), 5);
    assert!(gemms.iter().all(|g| g["split_k_reduction"].is_null()));
}

/// The attention class's action in the first group of a `steps --format json` run.
fn attention_action(path: &Path, extra: &[&str]) -> String {
    let j: Value = serde_json::from_str(&steps(path, extra, "json")).unwrap();
    j["groups"][0]["classes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["class"] == "attention")
        .and_then(|c| c["action"].as_str())
        .unwrap()
        .to_owned()
}

#[test]
fn the_attention_advice_is_the_grid_of_the_family_that_runs() {
    // The real SGLang MI300X decode runs ROCm's ll4mi paged attention, whose launcher
    // sets grid(num_seqs, max_num_partitions, num_kv_heads) with 256-key partitions:
    // Qwen3-8B has 8 KV heads, the step says B = 32.
    let real = crate::common::fixture("kineto/sglang_mi300x_qwen3-8b_decode_step.json.gz");
    let a = attention_action(&real, &["--model", "qwen3-8b"]);
    assert!(
        a.contains("(ll4mi, 256-key partitions cited from vLLM's launcher: B × ⌈mean context/256⌉ × KV heads/GPU = 32 × "),
        "{a}"
    );
    assert!(a.contains(" × 8, derived = "), "{a}");
    assert!(!a.contains("FA2"), "{a}");
    // The planted small-batch decode runs FlashAttention 3 (a persistent scheduler):
    // no B × heads reading, and no "under-filled" at B = 4 × 32 heads = 128 < 132 SMs.
    let dir = tempfile::tempdir().unwrap();
    let p = build(
        dir.path(),
        "fa3",
        &planted::scenario(Cause::SlowAttentionSmallBatch, 6),
    );
    let a = attention_action(&p, &["--model", "llama-3-8b"]);
    assert!(
        a.starts_with("attention at 50% of β (FA3): its persistent scheduler"),
        "{a}"
    );
    assert!(
        !a.contains("under-filled") && !a.contains("B × heads"),
        "{a}"
    );
    // vLLM's paged attention v2, grid(num_heads, num_seqs, ⌈context/512⌉): the median
    // step (index 4) has B = 8 at 1,010 keys (unmarked: the context is the flag's), so
    // 32 × 8 × 2 = 512 blocks fill the H100's 132 SMs.
    let p = build(dir.path(), "v2", &planted::scenario(Cause::BatchInGrid, 6));
    let a = attention_action(&p, &["--model", "llama-3-8b", "--context", "1010"]);
    assert!(
        a.contains("(vLLM paged v2, 512-key partitions cited from its launcher: heads/GPU × B × ⌈mean context/512⌉ = 32 × 8 × 2, derived = 512 blocks) fills the 132 SMs"),
        "{a}"
    );
}

#[test]
fn an_amd_trace_is_advised_hip_graphs_never_cuda_graphs() {
    // The real SGLang MI300X decode (ROCm: its device is an AMD Instinct MI300X).
    let real = crate::common::fixture("kineto/sglang_mi300x_qwen3-8b_decode_step.json.gz");
    let text = steps(&real, &["--model", "qwen3-8b"], "table");
    assert!(text.contains("keep them inside HIP graphs"), "{text}");
    assert!(!text.contains("CUDA graphs"), "{text}");
    // An NVIDIA capture keeps CUDA's word.
    let dir = tempfile::tempdir().unwrap();
    let p = build(
        dir.path(),
        "nv",
        &planted::scenario(Cause::SlowAttentionSmallBatch, 6),
    );
    let text = steps(&p, &["--model", "llama-3-8b"], "table");
    assert!(text.contains("keep them inside CUDA graphs"), "{text}");
    assert!(!text.contains("HIP graphs"));
}
