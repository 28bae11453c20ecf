//! Pricing steps against the floor: GEMMs at the roof, TP from the capture, prefills among decodes, the capture sidecar, the class waterfall, GPU flags and DRAM counters.

use super::*;

#[test]
fn gemms_at_the_roof_are_shape_2_and_slow_gemms_shape_4() {
    let dir = tempfile::tempdir().unwrap();
    let (path, scn) = planted_report(dir.path(), Cause::GemmsAtRoof, 3);
    let j = steps_json(&[path.to_str().unwrap(), "--model", "llama-3-8b"]);
    // Llama-3-8B's GEMMs stream every linear weight and lm_head: 7,504,924,672 streamed
    // parameters minus the 266,240 norm weights, at 2 bytes.
    let gemm_bytes = (7_504_924_672u64 - 266_240) * 2;
    let gemm_ns: i64 = [
        planted::GEMM_QKV,
        planted::GEMM_O,
        planted::GEMM_GATE_UP,
        planted::GEMM_DOWN,
        planted::GEMM_LM_HEAD,
    ]
    .iter()
    .map(|n| planted_ns(&scn, 0, n))
    .sum();
    for s in j["steps"].as_array().unwrap() {
        let w = class(s, "weights").unwrap();
        assert_eq!(w["bytes"].as_f64().unwrap(), gemm_bytes as f64);
        assert_eq!(w["time_ns"].as_i64().unwrap(), gemm_ns);
        assert_eq!(w["shape"], "at-roof");
        assert!(w["action"]
            .as_str()
            .unwrap()
            .contains("only fewer bytes help"));
        let floor = (gemm_bytes as f64 / H100_BYTES_PER_S * 1e9).round() as i64;
        assert_eq!(w["floor_ns"].as_i64().unwrap(), floor);
    }
    // The same GEMMs at 40% of the roof: shape 4.
    let mut scn = scn;
    let sp = Speeds {
        gemm_of_roof: 0.4,
        ..Speeds::default()
    };
    for st in &mut scn.steps {
        st.kernels = planted::step_kernels(&Dense::LLAMA_3_8B, 1, 32, 1, 2048, &sp);
    }
    let p = dir.path().join("slow.sqlite");
    workload::build(&scn, &p).unwrap();
    let j = steps_json(&[p.to_str().unwrap(), "--model", "llama-3-8b"]);
    let w = class(&j["steps"][0], "weights").unwrap();
    assert_eq!(w["shape"], "under-utilized");
    assert!((w["roof_fraction"].as_f64().unwrap() - 0.4).abs() < 1e-3);
}

/// Llama-3-70B decode floor on one of 4 H100s at B = 32, s = 1,010, by hand from
/// meta-llama/Meta-Llama-3-70B `config.json` (hidden 8192, 80 layers, 64 heads, 8 KV
/// heads of 128, intermediate 28672, vocab 128256, untied): linear layers and lm_head
/// split 4 ways, the norms whole on every GPU, 2 of the 8 KV heads per GPU.
fn llama70b_tp4_floor_ns(batch: u64, context: u64) -> f64 {
    let (l, d, h, kv, dh, ffn, v) = (80u64, 8192u64, 64u64, 8u64, 128u64, 28672u64, 128_256u64);
    let linear = l * (d * (h + 2 * kv) * dh + h * dh * d + 3 * d * ffn);
    let norms = l * 2 * d + d;
    let weights = (linear + v * d) as f64 * 2.0 / 4.0 + norms as f64 * 2.0;
    let cell = (2 * l * (kv / 4) * dh * 2) as f64;
    let kv_bytes = cell * (batch * context + batch) as f64;
    (weights + kv_bytes) / H100_BYTES_PER_S * 1e9
}

#[test]
fn a_tp4_capture_is_priced_at_tp_4_without_the_flag() {
    let dir = tempfile::tempdir().unwrap();
    let (path, _) = planted_report(dir.path(), Cause::Tp4, 3);
    let p = path.to_str().unwrap();
    let j = steps_json(&[p, "--model", "llama-3-70b"]);
    let tp = &j["operating_point"]["tp"];
    assert_eq!(
        (tp["value"].as_u64(), tp["basis"].as_str()),
        (Some(4), Some("inferred"))
    );
    assert!(tp["evidence"]
        .as_str()
        .unwrap()
        .contains("cross_device_reduce_1stage"));
    let want = llama70b_tp4_floor_ns(32, 1010);
    let steps = j["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 12);
    for s in steps {
        let f = &s["attribution"]["floor"];
        let got = f["floor_ns"].as_f64().unwrap();
        assert!((got - want).abs() <= 1e-9 * want, "{got} vs {want}");
        assert_eq!(f["below_floor"], false);
        assert!(f["mbu"].as_f64().unwrap() <= 1.0);
        // Two all-reduces per layer of 32 tokens × 8192 × 2 B, 2·3/4 of each on the wire,
        // over NVLink's 450 GB/s each way.
        let c = class(s, "communication").unwrap();
        let bytes = 2.0 * 80.0 * 32.0 * 8192.0 * 2.0 * 1.5;
        assert_eq!(c["bytes"].as_f64().unwrap(), bytes);
        assert_eq!(
            c["floor_ns"].as_i64().unwrap(),
            (bytes / 450e9 * 1e9).round() as i64
        );
    }
    // The flag wins, with a warning naming both values; the undercut floor names the TP
    // that would make it plausible.
    let j = steps_json(&[p, "--model", "llama-3-70b", "--tp", "1"]);
    let warnings = j["warnings"].to_string();
    assert!(
        warnings.contains("--tp 1 contradicts the capture (4 inferred"),
        "{warnings}"
    );
    for s in j["steps"].as_array().unwrap() {
        let a = &s["attribution"];
        assert_eq!(a["floor"]["below_floor"], true);
        let with: Vec<&str> = a["plausible_with"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        assert!(with.contains(&"--tp 4"), "{with:?}");
        assert!(!with.contains(&"--tp 2"), "TP 2 still undercut: {with:?}");
    }
    let (_, text, _) = run(&["steps", p, "--model", "llama-3-70b", "--tp", "1"]);
    assert!(
        !text.contains("MBU) 3"),
        "an MBU above 100% printed:\n{text}"
    );
    // Nor does a baseline keep it, so a gate never compares MBUs above 100%.
    let b = dir.path().join("b.json");
    let (code, _, err) = run(&[
        "baseline",
        "record",
        p,
        "-o",
        b.to_str().unwrap(),
        "--model",
        "llama-3-70b",
        "--tp",
        "1",
    ]);
    assert_eq!(code, 0, "{err}");
    let b: Value = serde_json::from_str(&std::fs::read_to_string(&b).unwrap()).unwrap();
    for g in b["samples"]["groups"].as_array().unwrap() {
        assert!(g["metrics"].get("mbu").is_none(), "{g:.300}");
    }
}

#[test]
fn a_prefill_among_unmarked_decodes_is_its_own_inferred_group() {
    let dir = tempfile::tempdir().unwrap();
    let (path, _) = planted_report(dir.path(), Cause::PrefillAmongDecodes, 12);
    let p = path.to_str().unwrap();
    let j = steps_json(&[
        p,
        "--model",
        "llama-3-8b",
        "--batch",
        "32",
        "--context",
        "1010",
    ]);
    let steps = j["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 12);
    for s in steps {
        let i = s["index"].as_u64().unwrap();
        let want = if i == 0 || i == 6 {
            "prefill"
        } else {
            "decode"
        };
        assert_eq!(
            s["kind"], "unknown",
            "step {i}: the guess stays beside the kind"
        );
        assert_eq!(s["kind_guess"], want, "step {i}");
        assert!(s["kind_evidence"]
            .as_str()
            .unwrap()
            .contains("duration cluster"));
        // A prefill is never priced as the decode --batch/--context describe: it is
        // priced as a prefill of the tokens its KV-cache writes count, which FLOPs bind.
        let f = &s["attribution"]["floor"];
        assert!(!f.is_null(), "step {i}");
        if want == "prefill" {
            assert!(
                s["tokens_guess"].as_u64().is_some_and(|t| t > 32),
                "step {i}"
            );
            assert_eq!(f["bound"], "compute", "step {i}: {f}");
        } else {
            assert_eq!(f["bound"], "memory", "step {i}: {f}");
        }
    }
    let groups: Vec<(&str, u64)> = j["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| (g["group"].as_str().unwrap(), g["steps"].as_u64().unwrap()))
        .collect();
    // The prefills are priced from their tokens: a group of their own.
    assert_eq!(
        groups,
        vec![("decode (inferred)", 10), ("prefill (inferred)", 2)]
    );
    let notes = j["notes"].to_string();
    assert!(!notes.contains("have no floor"), "{notes}");
    let summary: Vec<(&str, &str, u64)> = j["summary"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| {
            (
                k["kind"].as_str().unwrap(),
                k["kind_guess"].as_str().unwrap(),
                k["count"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        vec![("unknown", "decode", 10), ("unknown", "prefill", 2)]
    );
    for (kind, n) in [("decode", 10), ("prefill", 2), ("unknown", 0)] {
        let j = steps_json(&[p, "--kind", kind]);
        assert_eq!(j["steps"].as_array().unwrap().len(), n, "--kind {kind}");
    }
    // The baseline keeps the two apart and marks both as inferred.
    let base = dir.path().join("base.json");
    let (code, _, err) = run(&["baseline", "record", p, "-o", base.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let b: Value = serde_json::from_str(&std::fs::read_to_string(&base).unwrap()).unwrap();
    let text = b.to_string();
    assert!(text.contains("\"decode (inferred)\""), "{text:.400}");
    assert!(text.contains("\"prefill (inferred)\""), "{text:.400}");
}

#[test]
fn the_capture_sidecar_gives_unnamed_decodes_their_batch_and_context() {
    use stepgate::operating_point::sidecar::write_beside;
    use stepgate::wire::capture::{CaptureSidecar, Drive};
    let dir = tempfile::tempdir().unwrap();
    let (path, _) = planted_report(dir.path(), Cause::PrefillAmongDecodes, 12);
    let p = path.to_str().unwrap();
    let flags = steps_json(&[
        p,
        "--model",
        "llama-3-8b",
        "--batch",
        "32",
        "--context",
        "1010",
    ]);
    let side = CaptureSidecar {
        engine: Some("vllm".to_owned()),
        drive: Some(Drive {
            concurrency: 32,
            prompt_tokens: Some(1000),
            output_tokens: Some(20),
        }),
        ..CaptureSidecar::new()
    };
    write_beside(&path, &side).unwrap();
    let j = steps_json(&[p, "--model", "llama-3-8b"]);
    let op = &j["operating_point"];
    assert_eq!(op["batch"]["value"], 32);
    assert_eq!(op["batch"]["basis"], "inferred");
    assert!(op["batch"]["evidence"]
        .as_str()
        .unwrap()
        .contains("drive.concurrency"));
    // Mean resident context: prompt 1,000 + output 20 / 2.
    assert_eq!(op["context"]["value"], 1010);
    for (a, b) in j["steps"]
        .as_array()
        .unwrap()
        .iter()
        .zip(flags["steps"].as_array().unwrap())
    {
        assert_eq!(a["attribution"]["floor"], b["attribution"]["floor"]);
    }
    // A flag still wins over the sidecar.
    let j = steps_json(&[p, "--model", "llama-3-8b", "--batch", "8"]);
    assert_eq!(j["operating_point"]["batch"]["basis"], "input");
}

#[test]
fn the_class_waterfall_is_exact_on_every_fixture() {
    let mut checked = 0;
    for rel in [
        "kineto/hf_qwen1.5-0.5b_h100_profilerstep.json.gz",
        "kineto/hta_v100_ns_resolution_rank-0.pt.trace.json.gz",
        "kineto/sglang_mi300x_qwen3-8b_decode_step.json.gz",
        "kineto/vllm_b200_eager_prefill_rank0.json.gz",
        "kineto/vllm_mi300x_decode_fullgraph_step.json.gz",
        "nsys/fastvideo_h100_2gpu_nsys2026.2.sqlite",
        "nsys/fastvideo_train_2gpu_nsys2026.2.sqlite",
        "nsys/saxpy_mpi_a100_nsys2022.2.sqlite",
        "nsys/sglang_decode_mi300x_converted_nsys2026.2.sqlite",
    ] {
        let path = fixture(rel);
        // A decode composition for every unnamed step, so every step with GPU work that
        // is not an inferred prefill is priced.
        let j = steps_json(&[
            path.to_str().unwrap(),
            "--model",
            "qwen3-8b",
            "--gpu",
            "h100-sxm",
            "--batch",
            "1",
            "--context",
            "1",
        ]);
        for s in j["steps"].as_array().unwrap() {
            let a = &s["attribution"];
            let Some(w) = a.get("waterfall").filter(|w| !w.is_null()) else {
                continue;
            };
            let f = |k: &str| w[k].as_i64().unwrap();
            assert_eq!(f("wall_ns"), s["wall_ns"].as_i64().unwrap(), "{rel}");
            assert_eq!(f("gap_ns"), s["gap_ns"].as_i64().unwrap(), "{rel}");
            assert_eq!(
                f("floor_ns")
                    + f("excess_ns")
                    + f("unpriced_ns")
                    + f("unclassified_ns")
                    + f("gap_ns"),
                f("wall_ns"),
                "{rel}"
            );
            let class_time: i64 = a["classes"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| c["time_ns"].as_i64().unwrap())
                .sum();
            assert_eq!(
                class_time + f("unclassified_ns"),
                s["busy_ns"].as_i64().unwrap(),
                "{rel}: the classes tile busy"
            );
            checked += 1;
        }
    }
    assert!(checked >= 9, "{checked} steps checked");
}

#[test]
fn a_gpu_flag_against_the_report_warns_and_an_unknown_gpu_is_refused() {
    let path = fixture("nsys/saxpy_mpi_a100_nsys2022.2.sqlite");
    let p = path.to_str().unwrap();
    let j = steps_json(&[p, "--gpu", "b200"]);
    let w = j["warnings"].to_string();
    assert!(
        w.contains("--gpu b200 (NVIDIA B200 180GB) contradicts the report, which names \\\"NVIDIA A100-SXM4-40GB\\\" (a100-40gb)"),
        "{w}"
    );
    // Without --model too: an unknown GPU is an error, not a silent no-op.
    let (code, _, err) = run(&["steps", p, "--gpu", "h1000"]);
    assert_eq!(code, 2);
    assert!(err.contains("unknown GPU `h1000`"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
}

#[test]
fn dram_counters_decide_the_shape_where_a_report_has_them() {
    // GEMMs timed at 97% of the byte model's roof, but the counters (written by the
    // generator from the documented GPU_METRICS schema: no bundled capture has them) say
    // DRAM ran at 45% while they ran: the counter decides, and says both numbers.
    let dir = tempfile::tempdir().unwrap();
    let mut scn = planted::scenario(Cause::GemmsAtRoof, 2);
    scn.counters = Some(workload::Counters {
        interval_ns: 1_000,
        dram_read_pct: vec![
            ("nvjet".to_owned(), 45.0),
            ("FlashAttnFwdSm90".to_owned(), 85.0),
        ],
    });
    let path = dir.path().join("counters.sqlite");
    workload::build(&scn, &path).unwrap();
    let j = steps_json(&[path.to_str().unwrap(), "--model", "llama-3-8b"]);
    let g = &j["groups"][0];
    let by = |k: &str| {
        g["classes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["class"] == k)
            .unwrap()
    };
    let w = by("weights");
    let m = w["measured_dram_of_peak"].as_f64().unwrap();
    assert!((m - 0.45).abs() < 0.02, "weights measured {m}");
    assert!((w["roof_fraction"].as_f64().unwrap() - 0.97).abs() < 1e-3);
    assert_eq!(
        w["shape"], "under-utilized",
        "the counter, not the byte model"
    );
    let act = w["action"].as_str().unwrap();
    let says = format!(
        "measured {:.0}% of peak (the byte model says 97%)",
        m * 100.0
    );
    assert!(act.contains(&says), "{act}");
    assert_eq!(
        w["measured_dram_bytes_per_s"].as_f64().unwrap(),
        m * H100_BYTES_PER_S
    );
    let a = by("attention");
    assert!((a["measured_dram_of_peak"].as_f64().unwrap() - 0.85).abs() < 0.02);
    assert_eq!(a["shape"], "at-roof");
    // Per step: the span's mean, idle gaps at 0%: Σ duration × % over the wall, by hand
    // from the planted schedule.
    let s = &j["steps"][0];
    let wall = s["wall_ns"].as_f64().unwrap();
    let planted_sum: f64 = scn.steps[0]
        .kernels
        .iter()
        .map(|k| {
            let pct = if k.name.contains("nvjet") {
                0.45
            } else if k.name.contains("FlashAttnFwdSm90") {
                0.85
            } else {
                0.0
            };
            k.duration_ns as f64 * pct
        })
        .sum();
    let step_m = s["attribution"]["measured_dram_of_peak"].as_f64().unwrap();
    assert!(
        (step_m - planted_sum / wall).abs() < 0.02,
        "{step_m} vs {}",
        planted_sum / wall
    );
    // Without counters there is no measured field at all (never a made-up one).
    let (p2, _) = planted_report(dir.path(), Cause::GemmsAtRoof, 1);
    let j = steps_json(&[p2.to_str().unwrap(), "--model", "llama-3-8b"]);
    assert!(j["groups"][0]["classes"][0]
        .get("measured_dram_of_peak")
        .is_none());
    assert!(j["steps"][0]["attribution"]
        .get("measured_dram_of_peak")
        .is_none());
}
