//! Every key of the golden model configs is mapped, and the value each resolves to per dtype, with the dispatch of cases by kind.

use super::*;

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
pub(super) fn dispatch(case: &Value) -> Result<Computed, String> {
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

pub(super) fn matches(exp: &Value, got: &Value, tol: f64) -> bool {
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
