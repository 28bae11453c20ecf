//! The command line as a whole: clap's own consistency checks over every subcommand, and
//! every model preset the help text names resolves to a plausible model.

use clap::CommandFactory;
use stepgate::cli::Cli;
use stepgate::roofline::model;

use crate::common;

#[test]
fn clap_definition_is_consistent() {
    // Panics on duplicate flags, conflicting ids, bad defaults or value parsers, in every
    // subcommand.
    Cli::command().debug_assert();
}

/// Published total parameter counts (billions) of each preset's checkpoint, from its model
/// card, and how closely they pin the count: the cards print 3-4 significant digits, except
/// Qwen3-0.6B ("0.6B") and Kimi-K2 ("1T"), which print one. An independent check on the
/// geometry each preset resolves to.
const PUBLISHED_PARAMS_B: &[(&str, f64, f64)] = &[
    ("llama-3-8b", 8.03, 0.005),
    ("llama-3.1-8b", 8.03, 0.005),
    ("llama-3-70b", 70.6, 0.005),
    ("llama-2-7b", 6.74, 0.005),
    ("mistral-7b", 7.25, 0.005),
    ("mixtral-8x7b", 46.7, 0.005),
    ("qwen2.5-7b", 7.61, 0.005),
    ("qwen3-0.6b", 0.6, 0.05),
    ("qwen3-8b", 8.2, 0.005),
    ("qwen3-30b-a3b", 30.5, 0.005),
    ("gemma-2-9b", 9.24, 0.005),
    ("gemma-3-12b", 11.8, 0.005),
    ("deepseek-v2-lite", 15.7, 0.005),
    ("deepseek-v3", 671.0, 0.005),
    ("kimi-k2", 1000.0, 0.05),
];

#[test]
fn every_model_preset_resolves_to_its_published_size() {
    let keys: Vec<&str> = model::preset_keys().iter().map(|(k, _)| *k).collect();
    let published: Vec<&str> = PUBLISHED_PARAMS_B.iter().map(|(k, _, _)| *k).collect();
    assert_eq!(
        keys, published,
        "a preset without a published size to check"
    );
    for (key, billions, tol) in PUBLISHED_PARAMS_B {
        let m = model::preset(key).unwrap_or_else(|| panic!("preset {key} does not resolve"));
        let total = m.params().total as f64 / 1e9;
        assert!(
            (total / billions - 1.0).abs() < *tol,
            "{key}: {total:.3} B parameters, model card says {billions} B"
        );
        assert!(
            m.params().streamed > 0 && m.kv_cell_bytes(1, 1) > 0.0,
            "{key}"
        );
    }
}

#[test]
fn every_model_preset_runs_through_floor_and_the_help_lists_them_all() {
    let (code, help, _) = common::run(&["floor", "--help"]);
    assert_eq!(code, 0);
    for (key, _) in model::preset_keys() {
        assert!(
            help.split_whitespace()
                .any(|w| w.trim_end_matches('.') == key),
            "floor --help does not list {key}"
        );
        let (code, out, err) = common::run(&["floor", "--model", key, "--format", "json"]);
        assert_eq!(code, 0, "floor --model {key}: {err}");
        let j: serde_json::Value = serde_json::from_str(&out).unwrap();
        let floor_ns = j["floor_ns"].as_f64().unwrap();
        assert!(floor_ns.is_finite() && floor_ns > 0.0, "{key}: {floor_ns}");
    }
    let (code, _, err) = common::run(&["floor", "--model", "no-such-model"]);
    assert_eq!(code, 2);
    assert!(err.contains("unknown model `no-such-model`"), "{err}");
}

#[test]
fn readme_first_command_prints_what_the_readme_shows() {
    // The README's first console block is the output of its first command, verbatim.
    let readme = std::fs::read_to_string(common::root().join("README.md")).unwrap();
    let block = readme
        .split("```console\n$ stepgate ")
        .nth(1)
        .expect("a console block");
    let (cmd, rest) = block.split_once('\n').unwrap();
    let shown = &rest[..rest.find("```").unwrap()];
    assert!(
        cmd.starts_with("steps "),
        "the first example is `steps`: {cmd}"
    );
    let args: Vec<&str> = cmd.split_whitespace().collect();
    let out = std::process::Command::new(common::bin())
        .args(&args)
        .current_dir(common::root())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let printed = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    assert_eq!(printed, shown);
}

#[test]
fn disable_sliding_window_prices_every_layer_at_full_context() {
    // Gemma-2-9B: 42 layers, 8 KV heads of 256, bf16 → k = 2·42·8·256·2 = 344,064 B per
    // token; every other layer slides over a 4,096-token window. At batch 1, s = 8,192 the
    // KV read is 21 full layers × 8,192 + 21 sliding layers × 4,096 tokens; with the window
    // disabled, all 42 layers × 8,192.
    let half_cell = 344_064.0 / 2.0;
    let read = |extra: &[&str]| -> (f64, serde_json::Value) {
        let mut args = vec![
            "floor",
            "--model",
            "gemma-2-9b",
            "--batch",
            "1",
            "--context",
            "8192",
            "--format",
            "json",
        ];
        args.extend_from_slice(extra);
        let (code, out, err) = common::run(&args);
        assert_eq!(code, 0, "{err}");
        let j: serde_json::Value = serde_json::from_str(&out).unwrap();
        (j["kv_read_bytes"].as_f64().unwrap(), j["model"].clone())
    };
    let (windowed, m) = read(&[]);
    assert_eq!(windowed, half_cell * 8192.0 + half_cell * 4096.0);
    assert_eq!(
        (m["sliding_window"].as_u64(), m["sliding_layers"].as_u64()),
        (Some(4096), Some(21))
    );
    assert_eq!(m["source"], "preset");
    let (full, m) = read(&["--disable-sliding-window"]);
    assert_eq!(full, 2.0 * half_cell * 8192.0);
    assert!(m["sliding_window"].is_null());
    assert_eq!(m["sliding_layers"], 0);
    assert_eq!(m["source"], "preset + overrides");
}
