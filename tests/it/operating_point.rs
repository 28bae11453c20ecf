//! The operating point cross-checked against the capture: the tokens a step wrote (the
//! KV-cache write's launch grid) against the sequences it attended, on generated captures
//! whose truth the generator states (`synth::planted_point`) and on real fixtures. Each
//! rule is tested where it fires (a `--batch` the grids contradict, a prefill that
//! launches a decode-attention kernel, graph replays without an LLM) and where it must not
//! (a consistent flag, real decodes, the same replays with a model given).

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::batch_inference::{close, llama3_8b_floor_ns};
use crate::common::{fixture, run, steps_json};
use stepgate::synth::planted_point::{self, PointCase};
use stepgate::synth::workload;

fn write(dir: &Path, case: PointCase, steps: usize) -> PathBuf {
    let path = dir.join("point.sqlite");
    workload::build(&planted_point::scenario(case, steps), &path).unwrap();
    path
}

fn warnings(j: &Value) -> Vec<String> {
    j["warnings"]
        .as_array()
        .map(|w| w.iter().map(|s| s.as_str().unwrap().to_owned()).collect())
        .unwrap_or_default()
}

#[test]
fn a_batch_flag_the_kv_writes_contradict_gets_the_tp_warning_with_both_values() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), PointCase::Batch1Decodes, 6);
    let p = path.to_str().unwrap();

    let j = steps_json(&[p, "--batch", "32"]);
    let steps = j["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 6);
    for s in steps {
        // One token written per step, so a decode (FlashAttention 3's name says neither).
        assert_eq!(s["kind_guess"], "decode", "{s}");
        let why = s["kind_evidence"].as_str().unwrap();
        assert!(
            why.starts_with("one token written: a decode of one request"),
            "{why}"
        );
    }
    // Llama-3-8B has 32 layers: 32 KV-cache writes per step, each of grid (1).
    let w = warnings(&j);
    let batch: Vec<&String> = w.iter().filter(|w| w.starts_with("--batch")).collect();
    assert_eq!(batch.len(), 1, "{w:?}");
    assert_eq!(
        batch[0],
        "--batch 32 contradicts the capture (1 inferred: 1 request(s) in 6 of 6 unnamed decode steps; \
         e.g. 1 token(s) written by reshape_and_cache_flash_kernel (grid x = tokens; 32 of 32 launches)): \
         pricing at --batch 32"
    );
    // The flag still wins.
    assert_eq!(j["operating_point"]["batch"]["value"], 32);
    assert_eq!(j["operating_point"]["batch"]["basis"], "input");

    // The consistent flag: no warning.
    let j = steps_json(&[p, "--batch", "1"]);
    assert!(
        !warnings(&j).iter().any(|w| w.starts_with("--batch")),
        "{:?}",
        warnings(&j)
    );

    // No flag: the capture's batch, inferred, prices each step at batch 1.
    let j = steps_json(&[p, "--model", "llama-3-8b", "--context", "1010"]);
    assert_eq!(j["operating_point"]["batch"]["value"], 1);
    assert_eq!(j["operating_point"]["batch"]["basis"], "inferred");
    for s in j["steps"].as_array().unwrap() {
        assert_eq!(s["batch_guess"], 1, "{s}");
        let f = s["attribution"]["floor"]["floor_ns"].as_f64().unwrap();
        let want = llama3_8b_floor_ns(1, 1010);
        assert!(close(f, want), "{f} vs {want}");
    }
}

/// Llama-3-8B decode floor on one MI300X (5.3 TB/s, cited in the GPU table): the H100
/// floor's bytes over the other bandwidth.
fn llama3_8b_mi300x_floor_ns(batch: u64, context: u64) -> f64 {
    llama3_8b_floor_ns(batch, context) * 3.35e12 / 5.3e12
}

#[test]
fn a_prefill_that_launches_decode_attention_is_a_prefill_priced_as_a_prefill_not_a_decode() {
    let dir = tempfile::tempdir().unwrap();
    let n = 8;
    let path = write(dir.path(), PointCase::PrefillWithDecodeAttention, n);
    let p = path.to_str().unwrap();
    let j = steps_json(&[p, "--model", "llama-3-8b", "--context", "1010"]);
    let steps = j["steps"].as_array().unwrap();
    assert_eq!(steps.len(), n);
    for (i, s) in steps.iter().enumerate() {
        let why = s["kind_evidence"].as_str().unwrap();
        let f = &s["attribution"]["floor"];
        if planted_point::tokens_of(PointCase::PrefillWithDecodeAttention, i) > 1 {
            assert_eq!(s["kind_guess"], "prefill", "step {i}: {why}");
            assert!(
                why.starts_with("2048 tokens for 1 sequence(s) (2048 token(s) written by reshape_and_cache_flash_kernel"),
                "{why}"
            );
            assert!(
                why.contains(
                    "1 sequences in the launch grid of paged_attention_ll4mi_QKV_mfma16_kernel"
                ),
                "{why}"
            );
            // The kernel family is named as the evidence it overrode.
            assert!(
                why.contains("the attention family alone would say decode"),
                "{why}"
            );
            // Priced as what it is, a prefill of 2,048 tokens in the 1 sequence its grid
            // counts, not as a decode: 2 FLOPs per parameter per token, lm_head once,
            // causal attention over 2048·2049/2 pairs at 4·32·128·32 FLOPs each, over the
            // MI300X's 1,307.4 TFLOP/s (the weights' 16 GB over 5.3 TB/s take 3 ms: FLOPs
            // bind).
            assert_eq!(s["batch_guess"], 1, "step {i}");
            assert_eq!(f["bound"], "compute", "step {i}: {f}");
            let (dense, lm_head) = crate::kinds::llama3_8b_params();
            let pairs = (2048.0 * 2048.0 + 2048.0) / 2.0;
            let flops = 2.0 * dense * 2048.0 + 2.0 * lm_head + 4.0 * 32.0 * 128.0 * 32.0 * pairs;
            let want = flops / 1307.4e12 * 1e9;
            let got = f["floor_ns"].as_f64().unwrap();
            assert!(
                (got - want).abs() <= 1e-9 * want,
                "step {i}: {got} vs {want}"
            );
        } else {
            assert_eq!(s["kind_guess"], "decode", "step {i}: {why}");
            assert!(
                why.starts_with("one token per request: 1 token(s) written"),
                "{why}"
            );
            let got = f["floor_ns"].as_f64().unwrap();
            let want = llama3_8b_mi300x_floor_ns(1, 1010);
            assert!(close(got, want), "step {i}: {got} vs {want}");
        }
    }
}

#[test]
fn graph_replays_of_a_capture_without_an_llm_get_no_llm_kind() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), PointCase::GraphSmokeNoLlm, 5);
    let p = path.to_str().unwrap();
    let j = steps_json(&[p]);
    let steps = j["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 5);
    for s in steps {
        assert_eq!(s["found_by"], "graphs", "{s}");
        assert_eq!(s["kind"], "unknown");
        assert!(s["kind_guess"].is_null(), "{s}");
        assert!(s["kind_evidence"]
            .as_str()
            .unwrap()
            .contains("nothing in the capture is an LLM"));
    }
    let (code, out, err) = run(&["steps", p]);
    assert_eq!(code, 0, "{err}");
    assert!(!out.contains("decode (inferred)"), "{out}");

    // A model given is LLM evidence: the full-graph reading stands.
    let j = steps_json(&[p, "--model", "llama-3-8b"]);
    for s in j["steps"].as_array().unwrap() {
        assert_eq!(s["kind_guess"], "decode", "{s}");
    }
}

#[test]
fn the_b200_prefill_fixture_writes_the_tokens_its_step_name_states() {
    // The step name `execute_context_1(888_…)` states one request of 888 context tokens;
    // the KV-cache write grids are read apart from it and say the same.
    let f = fixture("kineto/vllm_b200_eager_prefill_rank0.json.gz");
    let j = steps_json(&[f.to_str().unwrap(), "--model", "llama-3-8b"]);
    let steps = j["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 1);
    let s = &steps[0];
    assert!(s["name"]
        .as_str()
        .unwrap()
        .starts_with("execute_context_1(888_"));
    assert_eq!(s["kind"], "prefill");
    assert_eq!(s["tokens_guess"], 888, "{s}");
    let why = s["tokens_evidence"].as_str().unwrap();
    // 36 KV-cache writes in the step, counted in the raw JSON: one per layer.
    assert!(
        why.starts_with("888 token(s) written by reshape_and_cache_flash_kernel (grid x = tokens; 36 of 36 launches)"),
        "{why}"
    );
    // A named prefill is no unnamed decode: --batch has nothing to contradict.
    let j = steps_json(&[f.to_str().unwrap(), "--batch", "32"]);
    assert!(
        !warnings(&j).iter().any(|w| w.starts_with("--batch")),
        "{:?}",
        warnings(&j)
    );
}

#[test]
fn a_trace_without_kv_write_grids_gets_no_token_count() {
    // The MI300X fixture launches reshape_and_cache_flash, but its Kineto events carry no
    // grid: nothing is read, nothing guessed.
    let f = fixture("kineto/vllm_mi300x_decode_fullgraph_step.json.gz");
    let j = steps_json(&[f.to_str().unwrap(), "--batch", "32"]);
    for s in j["steps"].as_array().unwrap() {
        assert!(s.get("tokens_guess").is_none(), "{s}");
    }
    assert!(
        !warnings(&j).iter().any(|w| w.starts_with("--batch")),
        "{:?}",
        warnings(&j)
    );
}

#[test]
fn a_ddp_world_is_data_parallel_not_tp() {
    // DDP rank 0 of 2 (`distributedInfo.world_size = 2`); its all-reduces (15 in the file,
    // counted in the raw JSON) all start after the first backward kernel of their step.
    let f = fixture("kineto/hta_a100_ddp_rank0_of2_profilerstep.json.gz");
    let j = steps_json(&[f.to_str().unwrap()]);
    let tp = &j["operating_point"]["tp"];
    assert_eq!(tp["value"], 1, "{tp}");
    assert_eq!(tp["basis"], "inferred");
    let why = tp["evidence"].as_str().unwrap();
    assert!(
        why.starts_with("distributedInfo.world_size = 2, but the ranks are data parallel, not tensor parallel: DP 2 (DDP): 15 all-reduce(s) in 3 training step(s)"),
        "{why}"
    );
    assert!(
        why.ends_with("per-GPU bytes are not divided by the 2 ranks"),
        "{why}"
    );
    // The operating point's lines are behind --detail in text.
    let (code, out, err) = run(&[
        "steps",
        f.to_str().unwrap(),
        "--model",
        "llama-3-8b",
        "--gpu",
        "a100-80gb",
        "--detail",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("operating point: TP 1 (inferred: distributedInfo.world_size = 2, but the ranks are data parallel"), "{out}");
}

#[test]
fn a_single_rank_world_is_read_as_tp_1_as_before() {
    // world_size 1: nothing data parallel to say.
    let f = fixture("kineto/hta_v100_ns_resolution_rank-0.pt.trace.json.gz");
    let j = steps_json(&[f.to_str().unwrap()]);
    let tp = &j["operating_point"]["tp"];
    assert_eq!(tp["value"], 1, "{tp}");
    assert_eq!(tp["basis"], "read");
    assert_eq!(tp["evidence"], "distributedInfo.world_size = 1");
}

#[test]
fn the_gpu_is_read_from_the_capture_even_without_a_preset() {
    // deviceProperties[0].name of each fixture, read from the raw JSON / TARGET_INFO_GPU.
    let v100 = fixture("kineto/hta_v100_ns_resolution_rank-0.pt.trace.json.gz");
    let j = steps_json(&[v100.to_str().unwrap()]);
    let g = &j["operating_point"]["gpu"];
    assert_eq!(g["value"], "Tesla V100-SXM2-32GB", "{g}");
    assert_eq!(g["basis"], "read");
    assert!(g["evidence"]
        .as_str()
        .unwrap()
        .contains("which no GPU preset matches"));

    let h100 = fixture("kineto/hf_qwen1.5-0.5b_h100_profilerstep.json.gz");
    let j = steps_json(&[h100.to_str().unwrap()]);
    let g = &j["operating_point"]["gpu"];
    assert_eq!(g["value"], "h100-sxm", "{g}");
    assert_eq!(g["basis"], "read");
    assert_eq!(
        g["evidence"],
        "the report names the GPU \"NVIDIA H100 80GB HBM3\""
    );

    // nsys: TARGET_INFO_GPU.name; a flag that contradicts it warns with both.
    let a100 = fixture("nsys/saxpy_mpi_a100_nsys2022.2.sqlite");
    let j = steps_json(&[a100.to_str().unwrap()]);
    assert_eq!(j["operating_point"]["gpu"]["value"], "a100-40gb");
    let j = steps_json(&[a100.to_str().unwrap(), "--gpu", "h100-sxm"]);
    assert!(
        warnings(&j).iter().any(|w| w.starts_with(
            "--gpu h100-sxm (NVIDIA H100 SXM5 80GB) contradicts the report, which names \"NVIDIA A100-SXM4-40GB\" (a100-40gb)"
        )),
        "{:?}",
        warnings(&j)
    );
}

#[test]
fn a_context_flag_above_what_the_attention_grid_allows_gets_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    // Unmarked decodes at 1,010 keys per request through vLLM's paged attention v2:
    // max_num_partitions = ⌈1010 / 512⌉ = 2, so no request holds more than 2 × 512 = 1,024.
    let p = dir.path().join("v2.sqlite");
    workload::build(
        &stepgate::synth::planted::scenario(stepgate::synth::planted::Cause::BatchInGrid, 6),
        &p,
    )
    .unwrap();
    let path = p.to_str().unwrap();
    let j = steps_json(&[path, "--model", "llama-3-8b", "--context", "4096"]);
    let w = warnings(&j);
    let line = w.iter().find(|l| l.starts_with("--context 4096")).unwrap();
    assert_eq!(
        line,
        "--context 4096 contradicts the capture (at most 1024 keys per request in all 6 steps with a read grid: paged_attention_v2_kernel launches 2 partition(s) of 512 keys (grid z)): pricing at --context 4096"
    );
    // The flag still wins (the warning says what is priced).
    assert_eq!(j["operating_point"]["context"]["value"], 4096);
    // A context the grid allows (the true 1,010, or 1,024 itself) is not contradicted.
    for ok in ["1010", "1024"] {
        let j = steps_json(&[path, "--model", "llama-3-8b", "--context", ok]);
        assert!(
            !warnings(&j).iter().any(|l| l.starts_with("--context")),
            "{ok}"
        );
    }
}

#[test]
fn an_unnamed_rocm_device_is_inferred_from_its_cus_and_memory_and_a_flag_overrides_it() {
    // vLLM's ROCm trace: deviceProperties[*].name is "", numSms 304, totalGlobalMem
    // 206,141,652,992 (192 GiB): MI300X is the one preset with 304 CUs and that memory
    // (MI325X has 256 GiB).
    let f = fixture("kineto/vllm_mi300x_decode_fullgraph_step.json.gz");
    let f = f.to_str().unwrap();
    let j = steps_json(&[f]);
    let g = &j["operating_point"]["gpu"];
    assert_eq!(
        (g["value"].as_str(), g["basis"].as_str()),
        (Some("mi300x"), Some("inferred"))
    );
    assert!(
        g["evidence"]
            .as_str()
            .unwrap()
            .contains("304 SMs/CUs, 192.0 GiB"),
        "{g}"
    );
    // Priced on it, and the floor note says how the GPU was chosen.
    let (code, out, err) = run(&["steps", f, "--model", "llama-3-8b"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains(
            "on AMD Instinct MI300X 192GB (inferred from the device's SM count and memory;"
        ),
        "{out}"
    );
    // --gpu is an input, and wins.
    let j = steps_json(&[f, "--gpu", "mi325x"]);
    let g = &j["operating_point"]["gpu"];
    assert_eq!(
        (g["value"].as_str(), g["basis"].as_str()),
        (Some("mi325x"), Some("input"))
    );
}
