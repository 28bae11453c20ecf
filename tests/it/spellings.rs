//! One spelling per option: `--launch-cost` (µs or a probe file) and `--kv-dtype` (a
//! dtype or bytes per element); the old spellings `--launch-cost-us` and
//! `--kv-dtype-bytes` still work, hidden, with a one-line warning on stderr.

use crate::common;

/// The floor JSON's field `key` as a number.
fn field(json: &str, key: &str) -> f64 {
    let v: serde_json::Value = serde_json::from_str(json).unwrap();
    v[key]
        .as_f64()
        .unwrap_or_else(|| panic!("{key} not in {json}"))
}

/// `floor --format json` with `extra`, which must succeed: stdout and stderr.
fn floor(extra: &[&str]) -> (String, String) {
    let mut args = vec!["floor", "--format", "json"];
    args.extend_from_slice(extra);
    let (code, out, err) = common::run(&args);
    assert_eq!(code, 0, "{args:?}: {err}");
    (out, err)
}

#[test]
fn the_old_launch_cost_spelling_warns_once_and_prices_the_same() {
    let (new, new_err) = floor(&["--launch-cost", "4.1"]);
    let (old, old_err) = floor(&["--launch-cost-us", "4.1"]);
    assert_eq!(new, old);
    assert!(new_err.is_empty(), "{new_err}");
    assert_eq!(old_err.lines().count(), 1, "{old_err}");
    assert!(
        old_err.starts_with("warning: --launch-cost-us is deprecated")
            && old_err.contains("--launch-cost 4.1"),
        "{old_err}"
    );
    // 4.1 µs per launch, 330 launches (the default): 4,100 ns and 1,353,000 ns.
    assert_eq!(field(&new, "launch_cost_ns"), 4100.0);
    assert_eq!(field(&new, "launch_budget_ns"), 330.0 * 4100.0);
    // The old spelling is hidden from every help.
    let (_, help, _) = common::run(&["floor", "--help"]);
    assert!(help.contains("--launch-cost <") && !help.contains("--launch-cost-us"));
}

#[test]
fn launch_cost_takes_a_probe_file_where_it_is_not_a_number() {
    // A probe file as `launch-probe --format json` writes one, by hand: its fastest burst
    // is 10,000 ns for 4 launches, 2,500 ns a launch.
    let probe = crate::launch_probe::HAND_WRITTEN;
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("probe.json");
    std::fs::write(&p, probe).unwrap();
    let (out, err) = floor(&["--launch-cost", p.to_str().unwrap()]);
    assert!(err.is_empty(), "{err}");
    assert_eq!(field(&out, "launch_cost_ns"), 10_000.0 / 4.0);
    // A path that is no file is refused as one, naming it.
    let missing = d.path().join("missing.json");
    let (code, _, err) = common::run(&["floor", "--launch-cost", missing.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("missing.json"), "{err}");
}

#[test]
fn the_old_kv_bytes_spelling_warns_once_and_prices_the_same() {
    let (named, named_err) = floor(&["--kv-dtype", "fp8"]);
    let (bytes, bytes_err) = floor(&["--kv-dtype", "1"]);
    let (old, old_err) = floor(&["--kv-dtype-bytes", "1"]);
    assert_eq!(named, bytes);
    assert_eq!(named, old);
    assert!(
        named_err.is_empty() && bytes_err.is_empty(),
        "{named_err}{bytes_err}"
    );
    assert_eq!(old_err.lines().count(), 1, "{old_err}");
    assert!(
        old_err.starts_with("warning: --kv-dtype-bytes is deprecated")
            && old_err.contains("--kv-dtype 1"),
        "{old_err}"
    );
    // Llama-3-8B: K and V × 32 layers × 8 KV heads × 128 dims × 1 byte per element.
    assert_eq!(field(&named, "kv_cell_bytes"), 2.0 * 32.0 * 8.0 * 128.0);
    // A byte count no dtype has: 1.5 bytes, three quarters of bf16's cell.
    let (odd, _) = floor(&["--kv-dtype", "1.5"]);
    assert_eq!(field(&odd, "kv_cell_bytes"), 2.0 * 32.0 * 8.0 * 128.0 * 1.5);
    // Both spellings at once is one option given twice: refused.
    let (code, _, err) = common::run(&["floor", "--kv-dtype", "fp8", "--kv-dtype-bytes", "1"]);
    assert_eq!(code, 2, "{err}");
}
