//! Numbers given on the command line, in model configs and in baselines: negative, zero,
//! NaN, infinite, huge or overflowing values are refused at the flag or field, in one line
//! naming it (in the flag's own unit), with exit 2; valid values still work.

use std::path::Path;

use stepgate::synth::workload::{build, decode_kernels, LaunchMode, Scenario, StepSpec};
use stepgate::synth::Layout;

use crate::common::run;

fn refused(args: &[&str]) -> String {
    let (code, out, err) = run(args);
    assert_eq!(code, 2, "{args:?} exited {code}: {out}{err}");
    assert_eq!(err.lines().count(), 1, "{args:?}: not one line: {err:?}");
    assert!(err.starts_with("stepgate: error: "), "{args:?}: {err}");
    assert!(out.is_empty(), "{args:?} printed {out}");
    err
}

fn accepted(args: &[&str]) -> String {
    let (code, out, err) = run(args);
    assert_eq!(code, 0, "{args:?}: {err}");
    out
}

#[test]
fn the_issue_examples_say_what_is_wrong_in_the_flags_unit() {
    let e = refused(&["floor", "--context", "-1"]);
    assert!(
        e.contains("--context must be a positive number of tokens"),
        "{e}"
    );
    let e = refused(&["floor", "--batch", "0"]);
    assert!(e.contains("--batch must be ≥ 1"), "{e}");
    // 2^32 · 2^32 wrapped to a KV read of 0 bytes.
    let e = refused(&["floor", "--batch", "4294967296", "--context", "4294967296"]);
    assert!(e.contains("--batch is 4294967296 requests"), "{e}");
    let e = refused(&["capacity", "--ttft-ms=-900"]);
    assert!(e.contains("--ttft-ms must be positive, got -900 ms"), "{e}");
    for v in ["-5", "nan", "1e300", "inf", "0"] {
        let e = refused(&["capacity", &format!("--fleet-rps={v}")]);
        assert!(e.contains("--fleet-rps"), "{v}: {e}");
    }
    // The same flags spelled with a space before a negative value reach our check too.
    let e = refused(&["capacity", "--fleet-rps", "-5"]);
    assert!(
        e.contains("--fleet-rps must be positive, got -5 req/s"),
        "{e}"
    );
    let e = refused(&["floor", "--weight-dtype", "int4-g0"]);
    assert!(e.contains("int4-g0") && e.contains("at least 8"), "{e}");
    let e = refused(&["floor", "--kv-heads", "0"]);
    assert!(e.contains("--kv-heads must be ≥ 1"), "{e}");
    // A valid plan still sizes replicas: 240 req/s needs at least one.
    let out = accepted(&["capacity", "--fleet-rps", "240", "--format", "json"]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let n = v
        .pointer("/plan/fixed_batch/replicas")
        .or_else(|| v.pointer("/fixed_batch/replicas"));
    assert!(
        n.and_then(serde_json::Value::as_u64)
            .is_some_and(|n| n >= 1),
        "{out}"
    );
}

#[test]
fn every_real_flag_of_floor_and_capacity_refuses_nan_inf_negative_zero_and_huge() {
    // The old spellings (`--kv-dtype-bytes`, `--launch-cost-us`) warn first, so they
    // are checked with the step flags below.
    let floor_flags = [
        "--kv-dtype",
        "--weights-gb",
        "--params-b",
        "--hbm-tb-s",
        "--peak-tflops",
        "--launch-cost",
    ];
    let capacity_flags = [
        "--input-tokens",
        "--output-tokens",
        "--kv-pool-tokens",
        "--kv-pool-gib",
        "--gpu-mem-util",
        "--batch",
        "--prefill-mfu",
        "--ttft-ms",
        "--itl-ms",
        "--fleet-rps",
        "--usd-per-gpu-hour",
    ];
    let cases = floor_flags
        .iter()
        .map(|f| ("floor", *f))
        .chain(capacity_flags.iter().map(|f| ("capacity", *f)));
    for (cmd, flag) in cases {
        for v in ["nan", "inf", "-inf", "-1", "0", "1e300"] {
            let e = refused(&[cmd, &format!("{flag}={v}")]);
            assert!(e.contains(flag), "{cmd} {flag}={v}: {e}");
        }
    }
}

#[test]
fn every_count_flag_refuses_negative_fractional_nan_and_huge() {
    // (flag, zero allowed)
    let floor = [
        ("--batch", false),
        ("--context", true),
        ("--launches", true),
        ("--tp", false),
        ("--pp", false),
        ("--layers", false),
        ("--kv-heads", false),
        ("--head-dim", false),
    ];
    for (flag, zero_ok) in floor {
        for v in ["-1", "1.5", "nan", "1e30", "18446744073709551616"] {
            let e = refused(&["floor", flag, v]);
            assert!(e.contains(flag), "{flag} {v}: {e}");
        }
        let (code, _, err) = run(&["floor", flag, "0"]);
        assert_eq!(code == 0, zero_ok, "{flag} 0: {err}");
    }
    // The step commands' --batch/--context/--tp, before any report is read.
    for flag in ["--batch", "--context", "--tp"] {
        let e = refused(&["steps", "no-such-report.sqlite", flag, "-3"]);
        assert!(e.contains(flag), "{e}");
    }
    let e = refused(&["steps", "no-such-report.sqlite", "--batch", "0"]);
    assert!(e.contains("--batch must be ≥ 1"), "{e}");
    // Row counts of every report command, and baseline thinning.
    for cmd in [
        vec!["steps", "r.sqlite", "--top"],
        vec!["analyze", "r.sqlite", "--top"],
        vec!["gate", "r.sqlite", "--baseline", "b.json", "--top"],
        vec!["diff", "a.json", "b.json", "--top"],
    ] {
        for v in ["-1", "2.5", "1e300"] {
            let mut args = cmd.clone();
            args.push(v);
            let e = refused(&args);
            assert!(e.contains("--top"), "{args:?}: {e}");
        }
    }
    let e = refused(&[
        "baseline",
        "record",
        "r.sqlite",
        "-o",
        "b.json",
        "--max-steps",
        "-1",
    ]);
    assert!(
        e.contains("--max-steps must be a positive number of steps"),
        "{e}"
    );
}

/// A small decode-step report with the GPU named, for flags checked after loading.
fn report(path: &Path) {
    let specs = (0..12)
        .map(|_| {
            let mut s = StepSpec::new(None, LaunchMode::Eager, decode_kernels(8));
            s.host_gap_before_ns = 200_000;
            s
        })
        .collect();
    build(&Scenario::new(Layout::Nsys2026_2, 1, specs), path).unwrap();
}

#[test]
fn step_finding_numbers_are_bounded() {
    let d = tempfile::tempdir().unwrap();
    let r = d.path().join("r.sqlite");
    report(&r);
    let r = r.to_str().unwrap();
    // 1e13 µs = 1e16 ns: `gap start + threshold` overflowed the i64 clock.
    for v in ["1e13", "-5", "nan", "inf"] {
        let e = refused(&["steps", r, "--steps", "gaps", &format!("--gap-us={v}")]);
        assert!(e.contains("--gap-us"), "{v}: {e}");
    }
    for v in ["0", "-2", "nan", "1e300"] {
        let e = refused(&["steps", r, &format!("--launch-cost={v}")]);
        assert!(e.contains("--launch-cost"), "{v}: {e}");
        // The old spellings: the warning, then the refusal naming the flag given.
        for old in ["--launch-cost-us", "--kv-dtype-bytes"] {
            let (code, _, err) = run(&["floor", &format!("{old}={v}")]);
            assert_eq!(code, 2, "{old}={v}: {err}");
            let refusal = err.lines().nth(1);
            assert!(refusal.is_some_and(|l| l.contains(old)), "{old}={v}: {err}");
        }
    }
    let e = refused(&[
        "steps",
        r,
        "--model",
        "llama-3-8b",
        "--gpu",
        "h100-sxm",
        "--hbm-tb-s=-3",
    ]);
    assert!(
        e.contains("--hbm-tb-s must be positive, got -3 TB/s"),
        "{e}"
    );
    // A negative device id is a value (not an unknown flag) that names no device.
    let e = refused(&["analyze", r, "--device", "-1"]);
    assert!(e.contains("device -1 has no GPU activity"), "{e}");
    // The 12 steps are 8 eager kernels each, 200 µs apart: found with a sane gap.
    let out = accepted(&[
        "steps", r, "--steps", "gaps", "--gap-us", "100", "--format", "json",
    ]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["steps"].as_array().map(Vec::len), Some(12), "{out}");
}

#[test]
fn model_configs_with_impossible_fields_are_refused_naming_the_field() {
    let d = tempfile::tempdir().unwrap();
    let good = serde_json::json!({
        "model_type": "llama", "vocab_size": 128256, "hidden_size": 4096,
        "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
        "intermediate_size": 14336, "torch_dtype": "bfloat16"
    });
    let p = d.path().join("config.json");
    std::fs::write(&p, good.to_string()).unwrap();
    let cfg = p.to_str().unwrap();
    accepted(&["floor", "--model-config", cfg]);
    let cases = [
        (
            "num_hidden_layers",
            serde_json::json!(0),
            "`num_hidden_layers` is 0",
        ),
        (
            "num_attention_heads",
            serde_json::json!(0),
            "`num_attention_heads` is 0",
        ),
        ("head_dim", serde_json::json!(0), "`head_dim` is 0"),
        (
            "num_key_value_heads",
            serde_json::json!(0),
            "`num_key_value_heads` is 0",
        ),
        (
            "torch_dtype",
            serde_json::json!("float128"),
            "`torch_dtype` is \"float128\"",
        ),
        (
            "hidden_size",
            serde_json::json!(1u64 << 40),
            "`hidden_size` is 1099511627776",
        ),
        (
            "num_hidden_layers",
            serde_json::json!(-2),
            "`num_hidden_layers`",
        ),
    ];
    for (key, v, want) in cases {
        let mut c = good.clone();
        c[key] = v;
        std::fs::write(&p, c.to_string()).unwrap();
        let e = refused(&["floor", "--model-config", cfg]);
        assert!(e.contains(want), "{key}: {e}");
    }
}

/// A valid baseline JSON (one decode group, 12 steps) to corrupt field by field.
fn baseline_json() -> serde_json::Value {
    let n = 12;
    serde_json::json!({
        "format": "stepgate-baseline",
        "schema_version": 1,
        "meta": {
            "gpu_name": "NVIDIA H100 80GB HBM3", "nsys_version": null,
            "source_format": "nsys-sqlite", "engine": null, "step_kinds": [],
            "batch_compositions": [], "model": null, "floor_inputs": null,
            "created_by": "test"
        },
        "samples": { "groups": [ {
            "step_kind": "decode", "batch_size": 32, "mean_context": 2048.0,
            "metrics": {
                "wall_ns": vec![100_000.0; n],
                "busy_ns": vec![90_000.0; n],
                "gap_fraction": vec![0.1; n]
            },
            "kernels": { "gemm": {
                "short_name": "gemm", "category": "gemm",
                "exclusive_ns": vec![80_000.0; n], "instances": vec![1.0; n]
            } },
            "categories": { "gemm": vec![80_000.0; n] }
        } ] }
    })
}

#[test]
fn baselines_with_empty_groups_or_absurd_samples_never_pass() {
    let d = tempfile::tempdir().unwrap();
    let good = d.path().join("good.json");
    std::fs::write(&good, baseline_json().to_string()).unwrap();
    let g = good.to_str().unwrap();
    // The untouched file compares with itself: a pass.
    let (code, out, err) = run(&["gate", g, "--baseline", g]);
    assert_eq!(code, 0, "{out}{err}");
    let bad = d.path().join("bad.json");
    let b = bad.to_str().unwrap();
    let grp = "/samples/groups/0";
    let cases: [(&str, serde_json::Value, &str); 6] = [
        ("/metrics", serde_json::json!({}), "has no step metrics"),
        (
            "/metrics/wall_ns/3",
            1e308.into(),
            "metric wall_ns sample 3 is 1e308",
        ),
        (
            "/metrics/busy_ns/0",
            (-90_000.0).into(),
            "metric busy_ns sample 0 is -90000",
        ),
        ("/mean_context", (-1e300).into(), "mean_context is -1e300"),
        (
            "/kernels/gemm/exclusive_ns/5",
            1e20.into(),
            "kernel gemm exclusive_ns sample 5 is 1e20",
        ),
        (
            "/categories/gemm/1",
            (-1.0).into(),
            "category gemm sample 1 is -1",
        ),
    ];
    for (ptr, v, want) in cases {
        let mut j = baseline_json();
        *j.pointer_mut(&format!("{grp}{ptr}")).unwrap() = v;
        std::fs::write(&bad, j.to_string()).unwrap();
        // As the stored baseline, as the candidate, and shown.
        for args in [
            vec!["gate", g, "--baseline", b],
            vec!["gate", b, "--baseline", g],
            vec!["diff", g, b],
            vec!["baseline", "show", b],
        ] {
            let e = refused(&args);
            assert!(e.contains(want), "{ptr} {args:?}: {e}");
        }
    }
}

#[test]
fn usage_errors_are_one_line_too() {
    let e = refused(&["floor", "--nope"]);
    assert!(e.contains("unexpected argument '--nope'"), "{e}");
    let e = refused(&["gate"]);
    assert!(
        e.contains("--baseline <FILE>") && e.contains("<REPORT>"),
        "{e}"
    );
    let e = refused(&["floor", "--kv-dtype", "fp4"]);
    // The value refused, and the choices.
    assert!(e.contains("\"fp4\"") && e.contains("'fp8'"), "{e}");
    let e = refused(&["launch-probe", "--iters", "0"]);
    assert!(e.contains("--iters"), "{e}");
    // Help is not an error.
    let (code, out, _) = run(&["floor", "--help"]);
    assert_eq!(code, 0);
    assert!(out.contains("--context"));
}
