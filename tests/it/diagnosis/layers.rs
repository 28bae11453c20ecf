//! Decode layers mapped to the model, distributed info read as TP, and the class excess in the gate.

use super::*;

#[test]
fn the_decode_layer_maps_its_gemms_to_the_model_layers() {
    // SGLang Qwen3-8B decode: 36 layers; per layer by hand from config.json, bf16:
    // o 32·128·4096, gate_up 2·4096·12288, down 12288·4096, qkv 4096·48·128 weights;
    // lm_head 151936·4096.
    let path = fixture("kineto/sglang_mi300x_qwen3-8b_decode_step.json.gz");
    let j = steps_json(&[
        path.to_str().unwrap(),
        "--model",
        "qwen3-8b",
        "--gpu",
        "mi300x",
    ]);
    let l = &j["groups"][0]["layers"];
    assert!(l["ambiguous"].is_null(), "{}", l["ambiguous"]);
    assert_eq!(
        (l["repeats"].as_u64(), l["layers"].as_u64()),
        (Some(36), Some(36))
    );
    let want: [(&str, u64, &str); 5] = [
        ("o", 32 * 128 * 4096 * 2, "MT16x32x512"),
        ("gate_up", 2 * 4096 * 12288 * 2, "MT256x32x64"),
        ("down", 12288 * 4096 * 2, "MT32x32x256"),
        ("qkv", 4096 * 48 * 128 * 2, "MT64x32x256"),
        ("lm_head", 151_936 * 4096 * 2, "MT256x48x64"),
    ];
    let (ops, _) = kineto_ops(&path);
    let rows = l["gemms"].as_array().unwrap();
    assert_eq!(rows.len(), want.len());
    for (r, (role, bytes, tile)) in rows.iter().zip(want) {
        assert_eq!(r["role"], role);
        assert!(
            r["kernel"].as_str().unwrap().contains(tile),
            "{role}: {}",
            r["kernel"]
        );
        assert_eq!(r["bytes"].as_f64().unwrap(), bytes as f64, "{role}");
        // Per layer: that kernel's summed raw durations over its instances (no two of
        // these GEMMs overlap anything in this trace).
        let (n, sum) = ops
            .iter()
            .filter(|o| o.0.contains(tile))
            .fold((0, 0), |(n, s), o| (n + 1, s + o.2 - o.1));
        let per = sum as f64 / n as f64;
        let got = r["time_ns"].as_f64().unwrap();
        // The mean over the 35 full layer periods, against the mean over all instances.
        assert!((got - per).abs() < 0.05 * per, "{role}: {got} vs {per}");
        let achieved = r["achieved_bytes_per_s"].as_f64().unwrap();
        assert!((achieved - bytes as f64 / (got / 1e9)).abs() < 1e-6 * achieved);
    }
    // The planted TP-4 capture: the same roles at 1/4 of Llama-3-70B's matrices, all at
    // the planted 90% of the roof.
    let dir = tempfile::tempdir().unwrap();
    let (p, _) = planted_report(dir.path(), Cause::Tp4, 1);
    let j = steps_json(&[p.to_str().unwrap(), "--model", "llama-3-70b"]);
    let l = &j["groups"][0]["layers"];
    assert!(l["ambiguous"].is_null(), "{}", l["ambiguous"]);
    for (r, (role, bytes)) in l["gemms"].as_array().unwrap().iter().zip([
        ("o", 64u64 * 128 * 8192 * 2 / 4),
        ("gate_up", 2 * 8192 * 28672 * 2 / 4),
        ("down", 28672 * 8192 * 2 / 4),
        ("qkv", 8192 * 80 * 128 * 2 / 4),
        ("lm_head", 128_256 * 8192 * 2 / 4),
    ]) {
        assert_eq!(r["role"], role);
        assert_eq!(r["bytes"].as_f64().unwrap(), bytes as f64, "{role}");
        assert!(
            (r["roof_fraction"].as_f64().unwrap() - 0.9).abs() < 1e-3,
            "{role}"
        );
    }
    // A model whose layers do not fit the trace: said, not guessed.
    let j = steps_json(&[p.to_str().unwrap(), "--model", "llama-3-8b", "--tp", "4"]);
    let why = j["groups"][0]["layers"]["ambiguous"].as_str().unwrap();
    assert!(why.contains("once per layer"), "{why}");
}

#[test]
fn distributed_info_is_read_as_tp_only_for_tp_like_steps() {
    // vLLM on 8 B200s: distributedInfo.world_size = 8, every NCCL group spans all 8, and
    // every layer all-reduces: TP 8, read.
    let j = steps_json(&[fixture("kineto/vllm_b200_eager_prefill_rank0.json.gz")
        .to_str()
        .unwrap()]);
    let tp = &j["operating_point"]["tp"];
    assert_eq!(
        (tp["value"].as_u64(), tp["basis"].as_str()),
        (Some(8), Some("read"))
    );
    assert!(tp["evidence"].as_str().unwrap().contains("world_size = 8"));
    // DDP training on 2 A100s states world_size = 2 too, but its steps hold a few bucket
    // all-reduces, not two per layer: data parallel, so TP is not taken from it (TP 1,
    // inferred, the evidence saying DP).
    let j = steps_json(&[
        fixture("kineto/hta_a100_ddp_rank0_of2_profilerstep.json.gz")
            .to_str()
            .unwrap(),
    ]);
    let tp = &j["operating_point"]["tp"];
    assert_eq!(
        (tp["value"].as_u64(), tp["basis"].as_str()),
        (Some(1), Some("inferred"))
    );
    assert!(tp["evidence"].as_str().unwrap().contains("data parallel"));
}

/// Baseline (attention at 80% of the roof) recorded with a model, and a candidate whose
/// attention runs at the planted 50%: the attention excess grows by exactly the planted
/// time, as the class waterfall test derives.
pub(crate) fn slower_attention(dir: &std::path::Path) -> (String, String, f64) {
    let (cand, slow) = planted_report(dir, Cause::SlowAttentionSmallBatch, 12);
    let mut fast = slow.clone();
    let sp = Speeds {
        gemm_of_roof: 0.95,
        ..Speeds::default()
    };
    for st in &mut fast.steps {
        st.kernels = planted::step_kernels(&Dense::LLAMA_3_8B, 1, 4, 1, 4096, &sp);
    }
    let base = dir.join("base.sqlite");
    workload::build(&fast, &base).unwrap();
    let want = (planted_ns(&slow, 0, planted::ATTENTION) - planted_ns(&fast, 0, planted::ATTENTION))
        as f64;
    (
        base.to_str().unwrap().to_owned(),
        cand.to_str().unwrap().to_owned(),
        want,
    )
}

#[test]
fn the_gate_shows_the_change_of_each_class_excess_beside_the_kernel_waterfall() {
    // Baseline: attention at its default 80% of the roof; candidate: the planted 50%.
    // Same model, batch and context, so every class floor is the same on both sides and
    // the change of the attention excess is the change of its planted time.
    let dir = tempfile::tempdir().unwrap();
    let (base, cand, want) = slower_attention(dir.path());
    // The gate reads the classes from a recorded baseline file; diff from two reports.
    let (b, c) = (base.as_str(), cand.as_str());
    let bj = dir.path().join("base.json");
    let bj = bj.to_str().unwrap();
    let (code, _, err) = run(&["baseline", "record", b, "-o", bj, "--model", "llama-3-8b"]);
    assert_eq!(code, 0, "{err}");
    let (_, out, err) = run(&[
        "gate",
        c,
        "--baseline",
        bj,
        "--model",
        "llama-3-8b",
        "--format",
        "json",
    ]);
    let j: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {err}"));
    let g = &j["groups"][0];
    let rows = g["class_excess"].as_array().expect("class rows");
    let row = |k: &str| rows.iter().find(|r| r["class"] == k).unwrap();
    let att = row("attention");
    assert!(want > 0.0);
    let got = att["delta_excess_ns"].as_f64().unwrap();
    assert!((got - want).abs() < 1.0, "{got} vs {want}");
    assert_eq!(att["baseline_floor_ns"], att["candidate_floor_ns"]);
    // The GEMMs did not move.
    assert!(row("weights")["delta_excess_ns"].as_f64().unwrap().abs() < 1.0);
    // The text and markdown documents carry the same rows.
    for f in ["table", "markdown"] {
        let (_, out, _) = run(&["diff", b, c, "--model", "llama-3-8b", "--format", f]);
        assert!(out.to_lowercase().contains("excess per class"), "{out}");
        assert!(
            out.contains(&format!("+{}", stepgate::report::fmt_us(want))),
            "{f}:\n{out}"
        );
    }
}
