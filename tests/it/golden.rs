//! Golden cases: every `*.json` in `$STEPGATE_GOLDEN_DIR` (default tests/golden) is loaded,
//! each case dispatched by the prefix of its `id`, and every `expected` key (and every
//! `reference_values` key of vLLM's own numbers) checked against `tolerance_rel`. The
//! expected values were derived independently (golden README); nothing here is copied
//! from stepgate's output. Failures are collected and reported together, naming case and key.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use stepgate::attribution;
use stepgate::roofline::capacity::{self, CapacityInputs, FluidInputs};
use stepgate::roofline::floor;
use stepgate::roofline::gpu;
use stepgate::roofline::hfconfig;
use stepgate::roofline::presets;
use stepgate::roofline::vllm::{
    AttnCfg, Batch, Breakdown, FfnCfg, MlaCfg, ModelComponents, Request, UnembedCfg,
};
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

fn capacity_case(id: &str, i: &Value) -> Result<Computed, String> {
    let mut c = Computed::new();
    let price = i.get("price_usd_per_gpu_hour").and_then(Value::as_f64);
    if i.get("kv_pool_tokens").is_some() {
        let m = raw_model(i)?;
        let inp = CapacityInputs {
            kv_pool_tokens: num(i, "kv_pool_tokens")?,
            kv_cell_bytes: num(i, "kv_cell_bytes")?,
            input_tokens: num(i, "input_tokens")?,
            output_tokens: num(i, "output_tokens")?,
            weights_bytes: num(i, "weights_bytes")?,
            params_streamed: num(i, "params_streamed")?,
            prefill_attention_coeff: capacity::prefill_attention_coeff(&m, 1),
            hbm_bytes_per_s: num(i, "hbm_bytes_per_s")?,
            peak_flops_per_s: num(i, "peak_flops_per_s")?,
            prefill_mfu: num(i, "prefill_mfu")?,
            ttft_p99_target_s: num(i, "ttft_p99_target_s")?,
            itl_target_s: None,
            fleet_rps: None,
            price_usd_per_gpu_hour: price.unwrap_or(3.0),
            gpus_per_replica: num(i, "gpus_per_replica")?,
            batch: None,
        };
        let p = stepgate::roofline::capacity_plan::plan(&inp).map_err(|e| e.to_string())?;
        put(&mut c, "mean_context", p.mean_context);
        put(&mut c, "B_max", p.b_max);
        put(&mut c, "step_bytes", p.step_bytes);
        put(&mut c, "step_ms", p.step_ns / 1e6);
        put(&mut c, "decode_tok_s", p.decode_tokens_per_s);
        put(&mut c, "prefill_flops", p.prefill_flops);
        put(&mut c, "prefill_ms", p.prefill_ns / 1e6);
        put(&mut c, "decode_share_ms", p.decode_share_ns / 1e6);
        put(&mut c, "service_ms", p.service_ns / 1e6);
        put(&mut c, "saturation_rps", p.saturation_rps);
        put(&mut c, "prefill_fraction", p.prefill_fraction);
        put(&mut c, "decode_fraction", p.decode_fraction);
        let fb = p.fixed_batch.ok_or("the plan has no fixed-batch screen")?;
        put(&mut c, "rho", fb.rho);
        put(&mut c, "lambda_rps", fb.lambda_rps);
        put(
            &mut c,
            "cost_usd_per_m_out",
            fb.usd_per_million_output_tokens,
        );
    } else if i.get("itl_target_s").is_some() {
        let f = capacity::fluid(&FluidInputs {
            weights_bytes: num(i, "weights_bytes")?,
            mean_context: num(i, "mean_context")?,
            kv_cell_bytes: num(i, "kv_cell_bytes")?,
            hbm_bytes_per_s: num(i, "hbm_bytes_per_s")?,
            prefill_s: num(i, "prefill_s")?,
            output_tokens: num(i, "output_tokens")?,
            itl_target_s: num(i, "itl_target_s")?,
            ttft_p99_target_s: num(i, "ttft_p99_target_s")?,
            b_cap: num(i, "B_cap")?,
            fleet_rps: i.get("fleet_rps").and_then(Value::as_f64),
            price_usd_per_gpu_hour: price.unwrap_or(3.0),
            gpus_per_replica: 1.0,
        })
        .map_err(|e| e.to_string())?;
        put(&mut c, "lambda_rps", f.lambda_rps);
        put(&mut c, "B", f.batch);
        put(&mut c, "service_s", f.service_ns / 1e9);
        put(&mut c, "rho", f.rho);
        if let Some(r) = f.replicas {
            put(&mut c, "replicas", r);
        }
        put(
            &mut c,
            "cost_usd_per_m_out",
            f.usd_per_million_output_tokens,
        );
        if let (Some(l), Some(b)) = (f.lower_root_lambda_rps, f.lower_root_batch) {
            put(&mut c, "lambda_rps.lower_root", l);
            put(&mut c, "B.lower_root", b);
        }
    } else if i.get("prefill_offset_s").is_some() {
        let (s, off) = (num(i, "service_s")?, num(i, "prefill_offset_s")?);
        // The plan's own step-5 screen (one GPU per replica, no fleet rate).
        let out = i.get("output_tokens").and_then(Value::as_f64);
        let screen = capacity::fixed_batch_screen(&capacity::ScreenInputs {
            service_s: s,
            prefill_s: off,
            ttft_p99_target_s: num(i, "ttft_p99_target_s")?,
            output_tokens: out.unwrap_or(1.0),
            fleet_rps: None,
            price_usd_per_gpu_hour: price.unwrap_or(1.0),
            gpus_per_replica: 1.0,
        })
        .map_err(|e| e.to_string())?;
        put(&mut c, "rho", screen.rho);
        put(&mut c, "lambda_rps", screen.lambda_rps);
        let ttft = capacity::ttft_p99_s(s, off, 0.9).map_err(|e| e.to_string())?;
        put(&mut c, "ttft_ms_at_rho_0.9", ttft * 1e3);
        if price.is_some() && out.is_some() {
            put(
                &mut c,
                "cost_usd_per_m_out",
                screen.usd_per_million_output_tokens,
            );
        }
    } else if let Some(rhos) = i.get("rhos").and_then(Value::as_array) {
        let s = num(i, "service_s")?;
        for r in rhos {
            let r = r.as_f64().ok_or("rho not a number")?;
            let w = capacity::wq99_s(s, r).map_err(|e| e.to_string())?;
            put(&mut c, format!("wq99_s.rho_{r}"), w);
        }
    } else if let Some(g) = i.get("goodput_tok_s").and_then(Value::as_array) {
        // The case labels its goodputs; the expected keys name them in the same order.
        let names = match id {
            "capacity.cost_formula" => ["fluid", "fixed_1800_220", "500_2000_rounded_rate"],
            _ => return Err("unknown cost-formula case".into()),
        };
        let n = num(i, "gpus_per_replica")?;
        for (name, gp) in names.iter().zip(g) {
            let gp = gp.as_f64().ok_or("goodput not a number")?;
            put(
                &mut c,
                format!("cost_usd_per_m.{name}"),
                capacity::usd_per_million(price.unwrap_or(3.0), n, gp),
            );
        }
    } else {
        return Err("capacity case with inputs of an unknown shape".into());
    }
    Ok(c)
}

fn requests(v: &Value) -> Result<Vec<Request>, String> {
    if let Some(s) = v.as_str() {
        // "32 x {num_tokens 1, context_len 2048, decode}"
        let re =
            regex::Regex::new(r"(\d+) x \{num_tokens (\d+), context_len (\d+), (decode|prefill)\}")
                .expect("static regex");
        let c = re
            .captures(s)
            .ok_or_else(|| format!("cannot read requests `{s}`"))?;
        let n: usize = c[1].parse().map_err(|_| "count")?;
        let r = Request {
            num_tokens: c[2].parse().map_err(|_| "tokens")?,
            context_len: c[3].parse().map_err(|_| "context")?,
            is_prefill: &c[4] == "prefill",
        };
        return Ok(vec![r; n]);
    }
    serde_json::from_value(v.clone()).map_err(|e| format!("requests: {e}"))
}

fn components(i: &Value) -> Result<ModelComponents, String> {
    let de = |k: &str| i.get(k).cloned();
    let parse = |e: serde_json::Error| format!("component config: {e}");
    Ok(ModelComponents {
        attn: de("attn")
            .map(serde_json::from_value::<AttnCfg>)
            .transpose()
            .map_err(parse)?,
        mla_attn: de("mla_attn")
            .map(serde_json::from_value::<MlaCfg>)
            .transpose()
            .map_err(parse)?,
        ffn: de("ffn")
            .map(serde_json::from_value::<FfnCfg>)
            .transpose()
            .map_err(parse)?,
        unembed: de("unembed")
            .map(serde_json::from_value::<UnembedCfg>)
            .transpose()
            .map_err(parse)?,
    })
}

fn put_breakdown(c: &mut Computed, prefix: &str, b: &Breakdown) {
    for kind in ["flops", "read", "write"] {
        let terms = b.kind(kind).expect("known kind");
        for (k, v) in terms {
            put(c, format!("{prefix}{kind}.{k}"), *v);
        }
        put(c, format!("{prefix}{kind}.total"), Breakdown::total(terms));
    }
}

/// The whole model of an upstream test whose cases each carry one component plus the
/// model's total (`model.flops.total`): its HF constructor with the config-class defaults
/// resolved (DeepseekV3Config: vocab 129,280, intermediate 18,432, 256 experts of 2,048,
/// top-8, one shared, no moe_layer_freq so every layer is MoE for vLLM).
fn group_model(id: &str) -> Option<Value> {
    if id.starts_with("vllm.test_model_metrics_aggregation.") {
        return Some(json!({
            "attn": {"D":2048,"q":16,"kv":32,"d":128,"L":12,"L_swa":0,"sw":null,"act":2,"w":2,"cache":2,"tp":1,"pp":1},
            "ffn": {"D":2048,"DI":8192,"L":12,"Lm":0,"E":0,"MI":0,"S":0,"num_experts":0,"act":2,"w":2,"pp":1,"ffn_tp":1,"ffn_ep":1},
            "unembed": {"D":2048,"V":32000,"act":2,"w":2,"tp":1}}));
    }
    if id.starts_with("vllm.test_mla_model_metrics_excludes_standard_attention.") {
        return Some(json!({
            "mla_attn": {"L":4,"D":7168,"q":128,"c":512,"nope":128,"rope":64,"v":128,"q_lora":1536,"act":2,"w":2,"cache":2,"tp":1,"pp":1},
            "ffn": {"D":7168,"DI":18432,"L":4,"Lm":4,"E":8,"MI":2048,"S":1,"num_experts":256,"act":2,"w":2,"pp":1,"ffn_tp":1,"ffn_ep":1},
            "unembed": {"D":7168,"V":129280,"act":2,"w":2,"tp":1}}));
    }
    None
}

/// vLLM-style component cases (`vllm.*`, `mla.dsv3_full.*`, `mla.mixed_batch.*`):
/// stepgate's own numbers (absorbed MLA decode) for `expected`, vLLM's (un-absorbed) for
/// `reference_values` under `vllm_reported.`.
fn component_case(id: &str, i: &Value) -> Result<Computed, String> {
    let reqs = requests(&i["requests"])?;
    let batch = Batch::new(&reqs);
    let modes: Vec<String> =
        serde_json::from_value(i["modes"].clone()).map_err(|e| e.to_string())?;
    let mut c = Computed::new();
    let comps = if let Some(name) = i.get("component").and_then(Value::as_str) {
        let mut one = serde_json::Map::new();
        one.insert(name.to_owned(), i["config"].clone());
        components(&Value::Object(one))?
    } else {
        components(&i["components"])?
    };
    for mode in &modes {
        let per_gpu = mode == "per_gpu";
        for (absorbed, prefix) in [(true, String::new()), (false, "vllm_reported.".to_owned())] {
            let all = comps.breakdowns(&batch, per_gpu, absorbed);
            if i.get("component").is_some() {
                put_breakdown(&mut c, &format!("{prefix}{mode}."), &all[0].1);
            } else {
                let total: i64 = all.iter().map(|(_, b)| Breakdown::total(&b.flops)).sum();
                put(&mut c, format!("{prefix}model.flops.total"), total);
            }
        }
    }
    if i.get("components").is_some() {
        put(&mut c, "component_types", json!(comps.component_types()));
    }
    if let (Some(name), Some(model)) = (i.get("component").and_then(Value::as_str), group_model(id))
    {
        // The case's own component must be the whole model's, or the total means nothing.
        if model.get(name) != Some(&i["config"]) {
            return Err(format!(
                "component `{name}` differs from the test's whole-model config"
            ));
        }
        let whole = components(&model)?;
        for mode in &modes {
            let total: i64 = whole
                .breakdowns(&batch, mode == "per_gpu", true)
                .iter()
                .map(|(_, b)| Breakdown::total(&b.flops))
                .sum();
            put(&mut c, "model.flops.total", total);
        }
    }
    Ok(c)
}

fn mla_case(id: &str, i: &Value) -> Result<Computed, String> {
    if i.get("component").is_some() {
        return component_case(id, i);
    }
    let mut c = Computed::new();
    if id.ends_with("true_over_reported.vllm_formulas") {
        let k = &i["config"];
        let resolved = hfconfig::vllm::resolve(
            &json!({"hidden_size":k["D"],"num_hidden_layers":k["L"],"num_attention_heads":k["H"],"vocab_size":k["vocab"],
                "intermediate_size":k["intermediate_size"],"n_routed_experts":k["n_routed_experts"],
                "num_experts_per_tok":k["num_experts_per_tok"],"first_k_dense_replace":k["first_k_dense_replace"],
                "moe_layer_freq":k["moe_layer_freq"]}),
            false,
        )
        .map_err(|e| e.to_string())?;
        let comps = components(&json!({
            "mla_attn": {"L":k["L"],"D":k["D"],"q":k["H"],"c":k["kv_lora_rank"],"nope":k["qk_nope_head_dim"],
                "rope":k["qk_rope_head_dim"],"v":k["v_head_dim"],"q_lora":k["q_lora_rank"],"act":2,"w":2,"cache":2,"tp":1,"pp":1},
            "ffn": {"D":k["D"],"DI":k["intermediate_size"],"L":k["L"],"Lm":resolved.num_moe_layers,"E":k["num_experts_per_tok"],
                "MI":k["moe_intermediate_size"],"S":k["n_shared_experts"],"num_experts":k["n_routed_experts"],"act":2,"w":2,"pp":1,"ffn_tp":1,"ffn_ep":1},
            "unembed": {"D":k["D"],"V":k["vocab"],"act":2,"w":2,"tp":1}
        }))?;
        let total = |s: u64, absorbed: bool| -> (i64, i64) {
            let b = Batch::new(&[Request {
                num_tokens: 1,
                context_len: s,
                is_prefill: false,
            }]);
            let all = comps.breakdowns(&b, false, absorbed);
            let t = all.iter().map(|(_, x)| Breakdown::total(&x.flops)).sum();
            let core: i64 = all[0]
                .1
                .flops
                .iter()
                .filter(|(n, _)| n.starts_with("attn_"))
                .map(|(_, v)| v)
                .sum();
            (t, core)
        };
        for s in [4096u64, 16384, 131072] {
            let (rep, core) = total(s, false);
            let (cor, _) = total(s, true);
            put(&mut c, format!("vllm_reported_flops.s{s}"), rep);
            put(&mut c, format!("corrected_flops.s{s}"), cor);
            put(&mut c, format!("ratio.s{s}"), cor as f64 / rep as f64);
            put(&mut c, "nonattention_core_flops_per_token", rep - core);
        }
        return Ok(c);
    }
    if id.ends_with("true_over_reported.seed_model") {
        // The seed's model: DeepSeek-V3's attention geometry with its 37e9 active
        // parameters streamed, one decode token at context s, through stepgate's floor:
        // `flops` bills the absorbed core, `vllm_attention_flops` vLLM's un-absorbed one.
        let mut m = presets::preset("deepseek-v3").ok_or("preset")?;
        if (m.layers, m.heads) != (int(i, "L")?, int(i, "num_heads")?) {
            return Err("the case's L / heads are not the DeepSeek-V3 preset's".into());
        }
        m.overrides.params_streamed = Some(num(i, "active_params")?);
        let h100 = gpu::lookup("h100-sxm").ok_or("preset")?;
        let mla = m.mla.clone().ok_or("preset has no MLA")?;
        for s in [1024u64, 4096, 10577, 16000, 16384, 32768, 131072] {
            let f = floor::step_floor(
                &m,
                &h100,
                &StepComposition::decode(1, s),
                &FloorOptions::default(),
            );
            let dense = f.flops - f.attention_flops;
            if dense != num(i, "nonattention_flops_per_token")? {
                return Err(format!("non-attention FLOPs {dense} at s={s}"));
            }
            let reported = dense + f.vllm_attention_flops;
            put(&mut c, format!("reported_gflop.s{s}"), reported / 1e9);
            put(&mut c, format!("true_gflop.s{s}"), f.flops / 1e9);
            put(&mut c, format!("ratio.s{s}"), f.flops / reported);
        }
        let (uq, uv) = mla.unabsorbed_widths();
        let (aq, av) = mla.absorbed_widths();
        put(&mut c, "ratio.limit", (aq + av) as f64 / (uq + uv) as f64);
        return Ok(c);
    }
    if i.get("num_heads").is_some() {
        // Fold bmms of the absorbed path vs vLLM's kv_b_proj for one token, one layer.
        let (h, r, nope, v) = (
            int(i, "num_heads")?,
            int(i, "kv_lora_rank")?,
            int(i, "qk_nope_head_dim")?,
            int(i, "v_head_dim")?,
        );
        let (qf, vf) = (2 * h * nope * r, 2 * h * r * v);
        put(&mut c, "q_fold_flops", qf);
        put(&mut c, "v_fold_flops", vf);
        put(&mut c, "sum", qf + vf);
        let cfg = MlaCfg {
            layers: 1,
            hidden: 1,
            q: h,
            c: r,
            nope,
            rope: 1,
            v,
            q_lora: None,
            act: 2.0,
            w: 2.0,
            cache: 2.0,
            tp: 1,
            pp: 1,
        };
        let b = cfg.breakdown(
            &Batch::new(&[Request {
                num_tokens: 1,
                context_len: 1,
                is_prefill: false,
            }]),
            false,
            true,
        );
        let kvb = b
            .flops
            .iter()
            .find(|(n, _)| *n == "kv_b_proj")
            .map(|(_, v)| *v)
            .ok_or("no kv_b_proj")?;
        put(&mut c, "vllm_kv_b_proj_flops_per_token_layer", kvb);
        return Ok(c);
    }
    if i.get("kv_lora_rank").is_some() {
        let m = MlaSpec {
            kv_lora_rank: int(i, "kv_lora_rank")?,
            q_lora_rank: None,
            qk_nope_head_dim: int(i, "qk_nope_head_dim")?,
            qk_rope_head_dim: int(i, "qk_rope_head_dim")?,
            v_head_dim: int(i, "v_head_dim")?,
        };
        let (uq, uv) = m.unabsorbed_widths();
        let (aq, av) = m.absorbed_widths();
        put(&mut c, "flops_unabsorbed", 2 * (uq + uv));
        put(&mut c, "flops_absorbed", 2 * (aq + av));
        put(&mut c, "ratio", (aq + av) as f64 / (uq + uv) as f64);
        put(&mut c, "qk_width_unabsorbed", uq);
        put(&mut c, "qk_width_absorbed", aq);
        put(&mut c, "v_width_unabsorbed", uv);
        put(&mut c, "v_width_absorbed", av);
        return Ok(c);
    }
    Err("mla case with inputs of an unknown shape".into())
}

fn batch1_case(i: &Value) -> Result<Computed, String> {
    let beta = num(i, "hbm_bytes_per_s")?;
    let pi = i
        .get("peak_flops_per_s")
        .and_then(Value::as_f64)
        .unwrap_or(1e15);
    let mut c = Computed::new();
    if let Some(measured) = i.get("measured_tok_s").and_then(Value::as_array) {
        let m: Vec<f64> = measured.iter().filter_map(Value::as_f64).collect();
        let f = batch1_floor(num(i, "weights_bytes")?, 1.0, beta, pi);
        let ceiling = 1e9 / f.floor_ns;
        put(&mut c, "floor_ms", f.floor_ns / 1e6);
        put(&mut c, "ceiling_tok_s", ceiling);
        // MBU as `steps` computes it: floor over the wall of one token, 1e9 / tok/s ns.
        put(
            &mut c,
            "mbu.eager",
            attribution::mbu(f.floor_ns, 1e9 / m[0]),
        );
        put(
            &mut c,
            "mbu.compile",
            attribution::mbu(f.floor_ns, 1e9 / m[1]),
        );
        let w8 = num(i, "int8_weights_bytes")?;
        let f8 = batch1_floor(w8, 1.0, beta, pi);
        put(&mut c, "int8_floor_ms", f8.floor_ns / 1e6);
        put(&mut c, "int8_ceiling_tok_s", 1e9 / f8.floor_ns);
        put(
            &mut c,
            "int8_achieved_bytes_per_s",
            attribution::achieved_bytes_per_s(f8.total_bytes, 1e9 / m[2]),
        );
        put(
            &mut c,
            "int8_mbu",
            attribution::mbu(f8.floor_ns, 1e9 / m[2]),
        );
        return Ok(c);
    }
    let params = num(i, "params")?;
    let w = params * num(i, "bytes_per_param")?;
    let f = batch1_floor(w, params, beta, pi);
    put(&mut c, "weights_bytes", f.weights_bytes);
    put(&mut c, "floor_ms", f.memory_floor_ns / 1e6);
    put(&mut c, "ceiling_tok_s", 1e9 / f.memory_floor_ns);
    put(&mut c, "bandwidth_bound_tok_s", 1e9 / f.memory_floor_ns);
    put(&mut c, "flops_per_token", f.flops);
    put(&mut c, "compute_bound_tok_s", 1e9 / f.compute_floor_ns);
    put(
        &mut c,
        "memory_bound",
        f.bound == stepgate::wire::attribution::Bound::Memory,
    );
    Ok(c)
}

fn convention_case(id: &str, i: &Value) -> Result<Computed, String> {
    let mut c = Computed::new();
    if id.starts_with("convention.prefill_attention.") {
        let m = raw_model(i)?;
        let s = int(i, "prompt_tokens")?;
        let p = num(i, "params_streamed")?;
        let comps = ModelComponents::from_model(&m, 1, 1, 2.0);
        let b = Batch::new(&[Request {
            num_tokens: s,
            context_len: s,
            is_prefill: true,
        }]);
        let attn = &comps.breakdowns(&b, false, true)[0].1;
        let vllm: i64 = attn
            .flops
            .iter()
            .filter(|(n, _)| n.starts_with("attn_"))
            .map(|(_, v)| v)
            .sum();
        // "at 40 %" of the cited H100 SXM peak (docs/method.md §7 step 3).
        let peak = gpu::lookup("h100-sxm").ok_or("preset")?.bf16_flops_per_s;
        // Every figure through the capacity plan's own prefill functions: the causal
        // (seed) convention with its attention coefficient, vLLM's with its own
        // attention FLOPs added to the same 2·P·s.
        let coeff = capacity::prefill_attention_coeff(&m, 1);
        let seed = capacity::prefill_flops(p, coeff, s as f64);
        let vllm_style = capacity::prefill_flops(p, 0.0, s as f64) + vllm as f64;
        put(
            &mut c,
            "attn_flops.causal_seed",
            capacity::prefill_flops(0.0, coeff, s as f64),
        );
        put(&mut c, "attn_flops.vllm_token_context", vllm);
        put(&mut c, "prefill_flops.seed", seed);
        put(&mut c, "prefill_flops.vllm_style", vllm_style);
        put(
            &mut c,
            "prefill_ms_at_40pct.seed",
            capacity::prefill_time_s(seed, 0.4, peak) * 1e3,
        );
        put(
            &mut c,
            "prefill_ms_at_40pct.vllm_style",
            capacity::prefill_time_s(vllm_style, 0.4, peak) * 1e3,
        );
        return Ok(c);
    }
    if id.starts_with("convention.vllm_formulas.") {
        let comps = components(i)?;
        let reqs = requests(&i["requests"])?;
        let b = Batch::new(&reqs);
        let all = comps.breakdowns(&b, false, true);
        let mut read = 0;
        let mut write = 0;
        let mut flops = 0;
        let mut weights = 0;
        for (name, x) in &all {
            put(
                &mut c,
                format!("{name}.read.total"),
                Breakdown::total(&x.read),
            );
            read += Breakdown::total(&x.read);
            write += Breakdown::total(&x.write);
            flops += Breakdown::total(&x.flops);
            weights += x
                .read
                .iter()
                .filter(|(n, _)| n.contains("weight"))
                .map(|(_, v)| v)
                .sum::<i64>();
            if let Some((_, v)) = x.write.iter().find(|(n, _)| *n == "kv_cache") {
                put(&mut c, "write.kv_cache", *v);
            }
        }
        put(&mut c, "read.total", read);
        put(&mut c, "write.total", write);
        put(&mut c, "flops.total", flops);
        put(&mut c, "weight_read_bytes", weights);
        // Against stepgate's own floor for the Llama-3-8B preset at the same point.
        let m = presets::preset("llama-3-8b").ok_or("preset")?;
        let (n, ctx) = (reqs.len() as u64, reqs[0].context_len);
        let f = floor::step_floor(
            &m,
            &gpu::lookup("h100-sxm").ok_or("preset")?,
            &StepComposition::decode(n, ctx),
            &FloorOptions::default(),
        );
        put(&mut c, "kv_cache_read_bytes", f.kv_read_bytes);
        put(
            &mut c,
            "weight_bytes_minus_seed",
            weights as f64 - f.weights_bytes,
        );
        return Ok(c);
    }
    Err("unknown convention case".into())
}

/// Run `stepgate floor --model-config` on `cfg` and return its JSON `model` object, or
/// Err(stderr) when stepgate rejects the config with an input error.
fn floor_model(cfg: &Value, disable_sliding_window: bool) -> Result<Result<Value, String>, String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let path = dir.path().join("config.json");
    std::fs::write(&path, cfg.to_string()).map_err(|e| e.to_string())?;
    let p = path.to_str().ok_or("temp path")?;
    let mut args = vec!["floor", "--model-config", p, "--format", "json"];
    if disable_sliding_window {
        args.push("--disable-sliding-window");
    }
    let (code, out, err) = common::run(&args);
    match code {
        0 => {
            let j: Value = serde_json::from_str(&out).map_err(|e| format!("bad JSON: {e}"))?;
            Ok(Ok(j["model"].clone()))
        }
        2 => Ok(Err(err)),
        _ => Err(format!("stepgate floor exited {code}: {err}")),
    }
}

/// vLLM's resolved-config names → the `model` object's keys.
const VLLM_KEYS: &[(&str, &str)] = &[
    ("vocab_size", "vocab"),
    ("hidden_size", "hidden"),
    ("num_attention_heads", "heads"),
    ("num_hidden_layers", "layers"),
    ("num_key_value_heads", "kv_heads"),
    ("head_dim", "head_dim"),
    ("intermediate_size", "intermediate"),
    ("num_experts", "experts"),
    ("num_experts_per_tok", "top_k"),
    ("num_moe_layers", "moe_layers"),
    // vLLM bills one weight size for attention and FFN alike, as stepgate does.
    ("weight_byte_size", "vllm_bytes_per_weight"),
    ("attn.weight_byte_size", "vllm_bytes_per_weight"),
    ("ffn.weight_byte_size", "vllm_bytes_per_weight"),
    ("activation_byte_size", "bytes_per_activation"),
    ("sliding_window", "sliding_window"),
    ("num_swa_layers", "sliding_layers"),
];

/// Where a config-resolution case's expected key is read in `floor --format json`'s
/// `model` object.
#[derive(Debug, PartialEq)]
enum Mapped {
    /// Under another name, by [`VLLM_KEYS`].
    Model(&'static str),
    /// Under its own `config.json` name in `model.config` (`moe_intermediate_size`,
    /// `kv_lora_rank`, …).
    Config,
    /// Under its own name in `model`.
    Geometry,
}

/// The properties a definition of the committed floor schema lists.
fn schema_properties(def: &str) -> Vec<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/schema/floor.schema.json");
    let schema: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap())
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let defs = schema.get("definitions").or_else(|| schema.get("$defs"));
    defs.and_then(|d| d[def]["properties"].as_object())
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default()
}

/// Where `key` is read, or None: a key no case may carry unmapped.
fn mapped(key: &str) -> Option<Mapped> {
    if let Some((_, ours)) = VLLM_KEYS.iter().find(|(v, _)| *v == key) {
        return Some(Mapped::Model(ours));
    }
    if schema_properties("ConfigFields").iter().any(|p| p == key) {
        return Some(Mapped::Config);
    }
    schema_properties("ModelGeometry")
        .iter()
        .any(|p| p == key)
        .then_some(Mapped::Geometry)
}

/// The expected keys of every config-resolution case, with the case they come from.
fn config_case_keys() -> Vec<(String, String)> {
    let mut out = Vec::new();
    for file in std::fs::read_dir(golden_dir()).unwrap().flatten() {
        let path = file.path();
        if path.extension().is_none_or(|x| x != "json") {
            continue;
        }
        let cases: Vec<Value> =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        for c in cases.iter().filter(|c| {
            c["match"].as_str() == Some("only_if_tool_parses_hf_configs")
                && c["inputs"].get("hf_config_json").is_some()
        }) {
            for k in c["expected"]
                .as_object()
                .into_iter()
                .flatten()
                .map(|(k, _)| k)
            {
                // `raises` is the outcome of a rejected config, not a model key.
                if k != "raises" {
                    out.push((c["id"].as_str().unwrap_or("?").to_owned(), k.clone()));
                }
            }
        }
    }
    out
}

#[test]
fn every_golden_config_key_is_mapped() {
    let unmapped: Vec<String> = config_case_keys()
        .into_iter()
        .filter(|(_, k)| mapped(k).is_none())
        .map(|(id, k)| format!("{id}: `{k}`"))
        .collect();
    assert!(
        unmapped.is_empty(),
        "golden keys with no place in floor's `model` object (add them to VLLM_KEYS): {}",
        unmapped.join(", ")
    );
    // The keys the issue names are read under their config.json names.
    for k in ["moe_intermediate_size", "kv_lora_rank", "qk_rope_head_dim"] {
        assert_eq!(mapped(k), Some(Mapped::Config), "{k}");
    }
    assert_eq!(mapped("hidden_size"), Some(Mapped::Model("hidden")));
    assert_eq!(mapped("no_such_key"), None);
}

/// One `hf_config_json_by_expected_key` entry: the bytes per weight the product
/// resolves for that key's config (a quantization method's, or a dtype's when the key
/// names a dtype). The config's own quantization method, where it names one, must be
/// the one the product read.
fn by_key_value(key: &str, cfg: &Value) -> Result<Value, String> {
    let m = floor_model(cfg, false)?.map_err(|e| format!("{key}: rejected: {e}"))?;
    let stated = &cfg["quantization_config"]["quant_method"];
    if m["quantization_method"] != *stated {
        return Err(format!(
            "{key}: the config names quant_method {stated}, the product read {}",
            m["quantization_method"]
        ));
    }
    Ok(m["vllm_bytes_per_weight"].clone())
}

#[test]
fn by_key_cases_compare_the_value_resolved_for_each_dtype() {
    // Keys that are dtypes, not quantization methods: each config has no
    // quantization_config, so its value is the dtype's bytes per weight (vLLM's
    // weight_byte_size falls back to the model dtype: 4 for float32, 2 for bf16/fp16).
    let cfg = |dtype: &str| {
        json!({"model_type":"qwen3","vocab_size":1000,"num_hidden_layers":2,"hidden_size":1024,
            "num_attention_heads":8,"torch_dtype":dtype})
    };
    for (key, want) in [("float32", 4.0), ("bfloat16", 2.0), ("float16", 2.0)] {
        assert_eq!(by_key_value(key, &cfg(key)).unwrap(), json!(want), "{key}");
    }
    // A quantization method key still checks the method the product read.
    let q = json!({"model_type":"qwen3","vocab_size":1000,"num_hidden_layers":2,"hidden_size":1024,
        "num_attention_heads":8,"quantization_config":{"quant_method":"awq"}});
    assert_eq!(by_key_value("awq", &q).unwrap(), json!(0.5));
}

/// Config-resolution cases: the config each carries, read by `stepgate floor
/// --model-config`, checked through the `model` object it prints.
fn hf_config_case(i: &Value, expected: &Value) -> Result<Computed, String> {
    let mut c = Computed::new();
    if let Some(by_key) = i.get("hf_config_json_by_expected_key") {
        for (k, cfg) in by_key.as_object().ok_or("hf_config_json_by_expected_key")? {
            put(&mut c, k.clone(), by_key_value(k, cfg)?);
        }
        return Ok(c);
    }
    let cfg = i
        .get("hf_config_json")
        .ok_or("case carries no hf_config_json")?;
    let disable = i["vllm_options"]["disable_sliding_window"]
        .as_bool()
        .unwrap_or(false);
    match floor_model(cfg, disable)? {
        Err(e) if e.contains("unsupported quantization method") => {
            put(&mut c, "raises", "InvalidComponent");
        }
        Err(e) => return Err(format!("rejected: {e}")),
        Ok(m) => {
            for (k, _) in expected.as_object().ok_or("expected")? {
                let value = match mapped(k) {
                    Some(Mapped::Model(ours)) => m[ours].clone(),
                    Some(Mapped::Config) => m["config"][k.as_str()].clone(),
                    Some(Mapped::Geometry) => m[k.as_str()].clone(),
                    None => return Err(format!("unmapped golden key `{k}`")),
                };
                put(&mut c, k.clone(), value);
            }
        }
    }
    Ok(c)
}

/// The handler for a case; a case no handler takes is an error, never a skip.
fn dispatch(case: &Value) -> Result<Computed, String> {
    let id = case["id"].as_str().unwrap_or("");
    let i = &case["inputs"];
    let p = |pre: &str| id.starts_with(pre);
    if case["match"].as_str() == Some("only_if_tool_parses_hf_configs") {
        return hf_config_case(i, &case["expected"]);
    }
    Ok(if p("llama3_8b.") {
        llama3_8b_param_count(i)?
    } else if p("roofline.") {
        roofline_case(i)?
    } else if p("fa2_decode_grid") {
        fa2_grid(i)?
    } else if p("floor_mode.") {
        floor_mode(i)?
    } else if p("launch_budget") {
        launch_budget(i)?
    } else if p("capacity.") {
        capacity_case(id, i)?
    } else if p("mla.") {
        mla_case(id, i)?
    } else if p("batch1.") {
        batch1_case(i)?
    } else if p("convention.") {
        convention_case(id, i)?
    } else if p("vllm.") {
        component_case(id, i)?
    } else {
        return Err("no handler for this id prefix".into());
    })
}

fn matches(exp: &Value, got: &Value, tol: f64) -> bool {
    match (exp.as_f64(), got.as_f64()) {
        (Some(e), Some(g)) => {
            if tol == 0.0 {
                e == g
            } else {
                (g - e).abs() <= tol * e.abs()
            }
        }
        _ => exp == got,
    }
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
