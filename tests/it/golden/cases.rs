//! The golden cases of the floor model: capacity, per-component breakdowns, MLA, batch-1 and convention cases, each recomputed and compared.

use super::*;

pub(super) fn capacity_case(id: &str, i: &Value) -> Result<Computed, String> {
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

pub(super) fn requests(v: &Value) -> Result<Vec<Request>, String> {
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

pub(super) fn components(i: &Value) -> Result<ModelComponents, String> {
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
pub(super) fn component_case(id: &str, i: &Value) -> Result<Computed, String> {
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

pub(super) fn mla_case(id: &str, i: &Value) -> Result<Computed, String> {
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

pub(super) fn batch1_case(i: &Value) -> Result<Computed, String> {
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
