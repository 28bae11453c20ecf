//! Golden cases: every `*.json` in `$STEPGATE_GOLDEN_DIR` (default tests/golden) is loaded,
//! each case dispatched by the prefix of its `id`, and every `expected` key (and every
//! `reference_values` key of vLLM's own numbers) checked against `tolerance_rel`. The
//! expected values were derived independently (golden README); nothing here is copied
//! from stepgate's output. Failures are collected and reported together, naming case and key.

mod cases;
mod config_keys;
use cases::{batch1_case, capacity_case, component_case, components, mla_case, requests};
use config_keys::{dispatch, matches};

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use stepgate::attribution;
use stepgate::roofline::capacity::{self, FluidInputs};
use stepgate::roofline::floor;
use stepgate::roofline::gpu;
use stepgate::roofline::hfconfig;
use stepgate::roofline::presets;
use stepgate::roofline::vllm::{
    AttnCfg, Batch, Breakdown, FfnCfg, MlaCfg, ModelComponents, Request, UnembedCfg,
};
use stepgate::wire::capacity::CapacityInputs;
use stepgate::wire::roofline::{
    FloorOptions, GpuSpec, MlaSpec, ModelSpec, MoeRouting, StepComposition, StepFloor,
};

use crate::common;

type Computed = BTreeMap<String, Value>;

fn golden_dir() -> PathBuf {
    std::env::var_os("STEPGATE_GOLDEN_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| common::root().join("tests").join("golden"))
}

fn num(v: &Value, key: &str) -> Result<f64, String> {
    v.get(key)
        .and_then(Value::as_f64)
        .ok_or_else(|| format!("input `{key}` missing or not a number"))
}

fn int(v: &Value, key: &str) -> Result<u64, String> {
    num(v, key).map(|x| x as u64)
}

fn put(c: &mut Computed, k: impl Into<String>, v: impl Into<Value>) {
    c.insert(k.into(), v.into());
}

/// A dense model with the golden inputs' attention geometry and raw weight/param figures.
fn raw_model(i: &Value) -> Result<ModelSpec, String> {
    let (l, h, d_h) = (int(i, "L")?, int(i, "h")?, int(i, "d_h")?);
    let cfg = json!({"model_type":"llama","vocab_size":1,"hidden_size":h*d_h,"num_hidden_layers":l,
        "num_attention_heads":h,"num_key_value_heads":i.get("h_kv").and_then(Value::as_u64).unwrap_or(h),
        "head_dim":d_h,"intermediate_size":1});
    let mut m = hfconfig::from_value(&cfg).map_err(|e| e.to_string())?;
    m.kv_dtype_bytes = i
        .get("kv_dtype_bytes")
        .and_then(Value::as_f64)
        .unwrap_or(2.0);
    m.overrides.weights_bytes = i.get("weights_bytes").and_then(Value::as_f64);
    m.overrides.params_streamed = i.get("params_streamed").and_then(Value::as_f64);
    Ok(m)
}

/// A weights-only model (batch-1 examples): W and P given, no KV.
fn weights_only(weights: f64, params: f64) -> ModelSpec {
    let mut m = raw_model(&json!({"L":1,"h":1,"d_h":1,"h_kv":1})).expect("fixed geometry");
    m.overrides.weights_bytes = Some(weights);
    m.overrides.params_streamed = Some(params);
    m
}

fn custom_gpu(beta: f64, pi: f64) -> GpuSpec {
    let mut g = gpu::lookup("h100-sxm").expect("preset");
    g.hbm_bytes_per_s = beta;
    g.bf16_flops_per_s = pi;
    g.fp8_flops_per_s = Some(pi);
    g
}

fn batch1_floor(weights: f64, params: f64, beta: f64, pi: f64) -> StepFloor {
    let opts = FloorOptions {
        include_kv_write: false,
        ..FloorOptions::default()
    };
    floor::step_floor(
        &weights_only(weights, params),
        &custom_gpu(beta, pi),
        &StepComposition::decode(1, 0),
        &opts,
    )
}

fn llama3_8b_param_count(i: &Value) -> Result<Computed, String> {
    let cfg = json!({"model_type":"llama","vocab_size":int(i,"vocab")?,"hidden_size":int(i,"d")?,
        "num_hidden_layers":int(i,"L")?,"num_attention_heads":int(i,"h")?,"num_key_value_heads":int(i,"h_kv")?,
        "head_dim":int(i,"d_h")?,"intermediate_size":int(i,"ffn")?,"tie_word_embeddings":i["tie_word_embeddings"]});
    let m = hfconfig::from_value(&cfg).map_err(|e| e.to_string())?;
    let p = m.params();
    let mut c = Computed::new();
    put(&mut c, "params_total", p.total);
    put(&mut c, "params_input_embedding", p.input_embedding);
    put(&mut c, "params_streamed", p.streamed);
    // The case prices the streamed weights at its own bytes per parameter; stepgate's
    // count is for the config's dtype (bf16, 2 bytes), so the two must agree.
    if num(i, "bytes_per_param")? != m.weight_dtype.bytes_per_param() {
        return Err("bytes_per_param differs from the config's dtype".into());
    }
    put(
        &mut c,
        "weights_streamed_bytes",
        m.streamed_weight_bytes(1.0, MoeRouting::default(), 1, 1),
    );
    Ok(c)
}

/// The roofline at one operating point through `decode_floor`, the function behind
/// `stepgate floor`: intensity, attainable throughput, MFU and ridge are its fields.
fn roofline_case(i: &Value) -> Result<Computed, String> {
    let m = raw_model(i)?;
    let g = custom_gpu(num(i, "hbm_bytes_per_s")?, num(i, "peak_flops_per_s")?);
    let (b, s) = (int(i, "batch")?, int(i, "seq")?);
    let opts = FloorOptions {
        include_kv_write: i["include_kv_write"].as_bool().unwrap_or(true),
        ..FloorOptions::default()
    };
    let point = floor::DecodePoint {
        batch: b,
        context: s,
        launches: 0,
        launch_cost_ns: 0.0,
        launch_cost_measured: false,
        hbm_overridden: true,
        peak_overridden: true,
    };
    let f = floor::decode_floor(&m, &g, &point, &opts);
    let mut c = Computed::new();
    put(&mut c, "kv_cell_bytes", f.kv_cell_bytes);
    put(&mut c, "kv_read_bytes", f.kv_read_bytes);
    put(&mut c, "total_bytes", f.total_bytes);
    put(&mut c, "floor_ms", f.floor_ns / 1e6);
    // Per token: the step's FLOPs over its B decode tokens.
    put(
        &mut c,
        "flops_per_token_gemv",
        (f.flops - f.attention_flops) / b as f64,
    );
    put(&mut c, "flops_per_token_attn", f.attention_flops / b as f64);
    put(&mut c, "flops_per_step", f.flops);
    put(&mut c, "intensity_flop_per_byte", f.intensity_flop_per_byte);
    put(&mut c, "attainable_tflops", f.attainable_flops_per_s / 1e12);
    put(&mut c, "fraction_of_peak", f.best_mfu);
    put(&mut c, "ridge_flop_per_byte", f.ridge_flop_per_byte);
    put(&mut c, "attn_share_of_flops", f.attention_flops / f.flops);
    put(&mut c, "kv_share_of_bytes", f.kv_read_share);
    Ok(c)
}

fn fa2_grid(i: &Value) -> Result<Computed, String> {
    let h = int(i, "heads")?;
    let sms = u64::from(gpu::lookup("h100-sxm").expect("preset").sm_count);
    if sms != int(i, "sms_h100")? {
        return Err(format!(
            "H100 SM count in the GPU table is {sms}, the case says {}",
            i["sms_h100"]
        ));
    }
    let mut c = Computed::new();
    for b in i["batches"].as_array().ok_or("no batches")? {
        let b = b.as_u64().ok_or("batch not an integer")?;
        let g = floor::decode_grid_blocks(b, h);
        put(&mut c, format!("grid_blocks.B{b}"), g);
        put(
            &mut c,
            format!("underfills_sms.B{b}"),
            floor::grid_underfills(g, u32::try_from(sms).map_err(|e| e.to_string())?),
        );
    }
    Ok(c)
}

/// `floor_mode.*`: run the binary with the reference flags (docs/method.md §3.1) and read its JSON.
fn floor_mode(i: &Value) -> Result<Computed, String> {
    let mut args: Vec<String> = vec!["floor".into(), "--format".into(), "json".into()];
    let mut flag = |name: &str, key: &str| {
        if let Some(v) = i.get(key).filter(|v| !v.is_null()) {
            args.push(format!("--{name}"));
            args.push(v.to_string().trim_matches('"').to_owned());
        }
    };
    flag("batch", "batch");
    flag("context", "seq");
    flag("layers", "layers");
    flag("kv-heads", "kv_heads");
    flag("head-dim", "head_dim");
    flag("kv-dtype", "kv_dtype_bytes");
    flag("weights-gb", "weights_gb");
    flag("gpu", "card");
    flag("hbm-tb-s", "hbm_tb_s");
    flag("launches", "launches");
    flag("launch-cost", "launchcost");
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let (code, out, err) = common::run(&argv);
    if code != 0 {
        return Err(format!("stepgate {} exited {code}: {err}", args.join(" ")));
    }
    let j: Value = serde_json::from_str(&out).map_err(|e| format!("bad JSON: {e}"))?;
    let mut c = Computed::new();
    for k in [
        "kv_cell_bytes",
        "kv_read_bytes",
        "kv_write_bytes",
        "weights_bytes",
        "total_bytes",
        "weights_share",
        "kv_read_share",
        "kv_write_share",
        "launch_share_of_floor",
    ] {
        put(&mut c, k, j[k].clone());
    }
    let f = |k: &str| j[k].as_f64().unwrap_or(f64::NAN);
    put(&mut c, "floor_ms", f("floor_ns") / 1e6);
    put(&mut c, "decode_ceiling_tok_s", f("decode_tokens_per_s"));
    put(&mut c, "launch_budget_ms", f("launch_budget_ns") / 1e6);
    Ok(c)
}

/// The launch budget against the steps it is compared with, every step from stepgate's
/// own floor at the worked operating point of docs/method.md §1 (W = 15.01 GB,
/// P = 7.50e9, Llama-3-8B KV geometry, H100 SXM): batch 1 weights-only and B = 32,
/// s = 2048 (chapter floors, no KV write), on one GPU and split over TP = 8.
fn launch_budget(i: &Value) -> Result<Computed, String> {
    let per = num(i, "per_launch_us")? * 1e3;
    let tp1 = floor::launch_budget_ns(int(i, "launches_tp1")?, per) / 1e6;
    let tp8 = floor::launch_budget_ns(int(i, "launches_tp8")?, per) / 1e6;
    let seed = raw_model(&json!({"L":32,"h":32,"h_kv":8,"d_h":128,
        "weights_bytes":15.01e9,"params_streamed":7.50e9}))?;
    let h100 = gpu::lookup("h100-sxm").ok_or("preset")?;
    let step_ms = |batch: u64, context: u64, tp: u32| {
        let opts = FloorOptions {
            include_kv_write: false,
            tp,
            ..FloorOptions::default()
        };
        floor::step_floor(
            &seed,
            &h100,
            &StepComposition::decode(batch, context),
            &opts,
        )
        .floor_ns
            / 1e6
    };
    let (b1, b32) = (step_ms(1, 0, 1), step_ms(32, 2048, 1));
    // The case states the steps it divides by: stepgate's floors must be those steps.
    for (name, ours) in [("step_ms_b1", b1), ("step_ms_b32", b32)] {
        let stated = num(i, name)?;
        if (ours - stated).abs() > 1e-12 * stated {
            return Err(format!(
                "stepgate's floor {ours} ms is not the case's {name} {stated}"
            ));
        }
    }
    let (w1, w32) = (step_ms(1, 0, 8), step_ms(32, 2048, 8));
    let mut c = Computed::new();
    put(&mut c, "budget_ms.tp1", tp1);
    put(&mut c, "budget_ms.tp8", tp8);
    put(&mut c, "share_of_b1_step.tp1", tp1 / b1);
    put(&mut c, "share_of_b32_step.tp1", tp1 / b32);
    put(&mut c, "tp8_work_ms.b1", w1);
    put(&mut c, "tp8_work_ms.b32", w32);
    put(&mut c, "tp8_launch_bound.b1", tp8 > w1);
    put(&mut c, "tp8_launch_bound.b32", tp8 > w32);
    Ok(c)
}

#[test]
fn every_golden_case_matches() {
    let dir = golden_dir();
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("golden dir {}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    assert!(
        !files.is_empty(),
        "no *.json golden files in {}",
        dir.display()
    );
    let (mut failures, mut checked, mut keys) = (Vec::new(), 0, 0);
    for file in &files {
        let name = file.file_name().unwrap().to_string_lossy().into_owned();
        let cases: Vec<Value> = serde_json::from_str(&std::fs::read_to_string(file).unwrap())
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        for case in &cases {
            let id = case["id"].as_str().unwrap_or("<no id>");
            let tol = case["tolerance_rel"].as_f64().unwrap_or(0.0);
            let computed = match dispatch(case) {
                Ok(c) => c,
                Err(e) => {
                    failures.push(format!("{name}: {id}: {e}"));
                    continue;
                }
            };
            checked += 1;
            let mut want: Vec<(String, &Value)> = Vec::new();
            for (k, v) in case["expected"].as_object().into_iter().flatten() {
                want.push((k.clone(), v));
            }
            for (k, v) in case
                .get("reference_values")
                .and_then(Value::as_object)
                .into_iter()
                .flatten()
            {
                want.push((k.clone(), v));
            }
            for (k, exp) in want {
                keys += 1;
                match computed.get(&k) {
                    None => failures.push(format!("{name}: {id}: {k}: not computed")),
                    Some(got) if !matches(exp, got, tol) => failures.push(format!(
                        "{name}: {id}: {k}: expected {exp}, got {got} (tolerance_rel {tol})"
                    )),
                    Some(_) => {}
                }
            }
        }
    }
    println!("golden: {checked} cases, {keys} keys checked");
    assert!(
        failures.is_empty(),
        "{} golden mismatches:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
