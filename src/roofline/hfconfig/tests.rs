//! Tests of reading Hugging Face configs into the roofline model.

use super::*;
use serde_json::json;

#[test]
fn class_defaults() {
    let q = json!({"model_type":"qwen3","vocab_size":10,"hidden_size":2048,"num_hidden_layers":2,"num_attention_heads":16});
    let m = from_value(&q).unwrap();
    assert_eq!((m.kv_heads, m.head_dim), (32, 128));
    let g = json!({"model_type":"gemma2","vocab_size":10,"hidden_size":2304,"num_hidden_layers":26,"num_attention_heads":8,"sliding_window":4096});
    let m = from_value(&g).unwrap();
    assert_eq!((m.head_dim, m.swa_layers), (256, 13));
    let mi = json!({"model_type":"mistral","vocab_size":10,"hidden_size":4096,"num_hidden_layers":2,"num_attention_heads":32});
    assert_eq!(from_value(&mi).unwrap().head_dim, 128);
}

#[test]
fn deepseek_moe_layers_differ_from_vllm_without_freq() {
    let c = json!({"model_type":"deepseek_v3","vocab_size":10,"hidden_size":64,"num_hidden_layers":61,"num_attention_heads":4,
        "n_routed_experts":8,"num_experts_per_tok":2,"moe_intermediate_size":8,"first_k_dense_replace":3,
        "kv_lora_rank":8,"qk_nope_head_dim":4,"qk_rope_head_dim":2,"v_head_dim":4});
    assert_eq!(from_value(&c).unwrap().moe.unwrap().moe_layers, 58);
    assert_eq!(vllm::resolve(&c, false).unwrap().num_moe_layers, 61);
}

#[test]
fn missing_key_is_input_error() {
    let e = from_value(&json!({"hidden_size": 8})).unwrap_err();
    assert_eq!(e.exit_code(), crate::exit::INPUT);
}

#[test]
fn impossible_geometry_and_dtypes_are_refused_naming_the_field() {
    let base = json!({"model_type":"llama","vocab_size":1000,"hidden_size":1024,
        "num_hidden_layers":2,"num_attention_heads":8});
    assert!(from_value(&base).is_ok());
    let with = |k: &str, v: Value| {
        let mut c = base.clone();
        c[k] = v;
        from_value(&c).unwrap_err().message
    };
    for key in [
        "num_hidden_layers",
        "num_attention_heads",
        "head_dim",
        "num_key_value_heads",
        "hidden_size",
        "vocab_size",
    ] {
        let m = with(key, json!(0));
        assert!(m.contains(&format!("`{key}` is 0")), "{key}: {m}");
        let m = with(key, json!(1u64 << 40));
        assert!(
            m.contains(&format!("`{key}` is 1099511627776")),
            "{key}: {m}"
        );
    }
    let m = with("torch_dtype", json!("float128"));
    assert!(m.contains("`torch_dtype` is \"float128\""), "{m}");
    assert!(with("torch_dtype", json!(16)).contains("`torch_dtype` is 16"));
    // hidden_size below the head count and no head_dim: a derived head_dim of 0.
    let mut c = base.clone();
    c["hidden_size"] = json!(4);
    assert!(from_value(&c).unwrap_err().message.contains("head_dim"));
    // Real dtype spellings still resolve.
    let mut c = base.clone();
    c["torch_dtype"] = json!("float16");
    assert_eq!(from_value(&c).unwrap().weight_dtype, WeightDtype::Fp16);
    // A group size of 0 in the quantization config.
    let mut c = base.clone();
    c["quantization_config"] = json!({"quant_method":"gptq","bits":4,"group_size":0});
    assert!(from_value(&c)
        .unwrap_err()
        .message
        .contains("quantization_config.group_size"));
    c["quantization_config"] = json!({"quant_method":"gptq","bits":4,"group_size":-1});
    assert_eq!(
        from_value(&c).unwrap().weight_dtype,
        WeightDtype::Int4 { group: 128 }
    );
}
