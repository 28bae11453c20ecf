//! The command line as a whole: clap's own consistency checks over every subcommand, and
//! every model preset the help text names resolves to a plausible model.

use clap::CommandFactory;
use stepgate::cli::Cli;
use stepgate::roofline::presets;

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
    // OpenAI's gpt-oss model card: 21B and 117B parameters (rounded to 1B).
    ("gpt-oss-20b", 21.0, 0.01),
    ("gpt-oss-120b", 117.0, 0.005),
    ("deepseek-v2-lite", 15.7, 0.005),
    ("deepseek-v3", 671.0, 0.005),
    ("kimi-k2", 1000.0, 0.05),
];

#[test]
fn every_model_preset_resolves_to_its_published_size() {
    let keys: Vec<&str> = presets::preset_keys().iter().map(|(k, _)| *k).collect();
    let published: Vec<&str> = PUBLISHED_PARAMS_B.iter().map(|(k, _, _)| *k).collect();
    assert_eq!(
        keys, published,
        "a preset without a published size to check"
    );
    for (key, billions, tol) in PUBLISHED_PARAMS_B {
        let m = presets::preset(key).unwrap_or_else(|| panic!("preset {key} does not resolve"));
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
    for (key, _) in presets::preset_keys() {
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

/// Run the binary with extra environment; returns (exit code, stdout, stderr).
fn run_env(args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
    let out = std::process::Command::new(common::bin())
        .args(args)
        .envs(env.iter().copied())
        .current_dir(common::root())
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_panic_is_one_line_and_exit_70_never_a_backtrace() {
    // The documented test hook panics after the flags are parsed; a backtrace is asked for
    // and must still not appear.
    let (code, out, err) = run_env(
        &["floor"],
        &[("STEPGATE_TEST_PANIC", "1"), ("RUST_BACKTRACE", "1")],
    );
    assert_eq!(code, 70, "{err}");
    assert!(out.is_empty(), "{out}");
    assert_eq!(err.lines().count(), 1, "{err}");
    let line = err.trim_end();
    assert!(
        line.starts_with("stepgate: internal error: STEPGATE_TEST_PANIC is set"),
        "{line}"
    );
    assert!(line.contains(" at src/cli/entry.rs:"), "{line}");
    assert!(
        line.ends_with("this is a bug in stepgate — please report it with the command line"),
        "{line}"
    );
    assert!(
        !err.contains("panicked at") && !err.contains("backtrace"),
        "{err}"
    );
    // Without the variable the same command is fine.
    let (code, _, err) = run_env(&["floor"], &[]);
    assert_eq!(code, 0, "{err}");
}

#[test]
fn each_error_kind_exits_with_its_code() {
    let d = tempfile::tempdir().unwrap();
    let ex = "examples/vllm_decode_synthetic_h100.sqlite";
    // Usage: a flag value refused (2); input: a report that is not there (2); baseline: a
    // file that says it is a baseline and is not one (2).
    let bad_base = d.path().join("bad.json");
    std::fs::write(
        &bad_base,
        r#"{"format":"stepgate-baseline","schema_version":1}"#,
    )
    .unwrap();
    let b = bad_base.to_str().unwrap();
    for (args, says) in [
        (vec!["steps", ex, "--gap-us", "-1"], "--gap-us"),
        (vec!["steps", "no/such.sqlite"], "cannot read it"),
        (vec!["gate", ex, "--baseline", b], "bad.json"),
    ] {
        let (code, _, err) = run_env(&args, &[]);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(
            err.starts_with("stepgate: error: ") && err.contains(says),
            "{err}"
        );
    }
    // Output: standard output on a full disk (5).
    let full = std::fs::File::create("/dev/full").unwrap();
    let out = std::process::Command::new(common::bin())
        .args(["floor"])
        .stdout(full)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(5), "{err}");
    assert!(err.contains("cannot write to standard output"), "{err}");
}

#[test]
fn a_file_that_cannot_be_written_is_exit_5_and_leaves_nothing_behind() {
    // A file-size limit of one 512-byte block (SIGXFSZ ignored, so the write fails with
    // EFBIG instead of killing the process) makes the 15 kB baseline unwritable while the
    // planning probe, an empty file, still succeeds: a write failing halfway.
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("b.json");
    let o = std::process::Command::new("sh")
        .arg("-c")
        .arg(r#"trap "" XFSZ; ulimit -f 1; exec "$0" "$@""#)
        .arg(common::bin())
        .args([
            "baseline",
            "record",
            "examples/vllm_decode_synthetic_h100.sqlite",
            "-o",
        ])
        .arg(&out)
        .current_dir(common::root())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(5), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("cannot write") && err.contains("b.json"),
        "{err}"
    );
    let left: Vec<_> = std::fs::read_dir(d.path()).unwrap().flatten().collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn json_documents_open_with_their_schema_version() {
    let ex = "examples/vllm_decode_synthetic_h100.sqlite";
    let (code, out, err) = run_env(&["steps", ex, "--format", "json"], &[]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.starts_with("{\n  \"schema_version\": 1,\n"),
        "{}",
        &out[..80]
    );
    let d = tempfile::tempdir().unwrap();
    let ds = d.path().join("ds");
    let ds = ds.to_str().unwrap();
    let (code, _, err) = run_env(&["export", ex, "-o", ds], &[]);
    assert_eq!(code, 0, "{err}");
    let (code, out, err) = run_env(&["trend", ds, "--format", "json"], &[]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.starts_with("{\n  \"schema_version\": 1,\n"),
        "{}",
        &out[..80]
    );
}

#[test]
fn a_baseline_records_the_floor_basis_the_steps_report_states() {
    // The basis travels as data; the baseline's copy must read as the steps note does.
    let ex = "examples/vllm_decode_synthetic_h100.sqlite";
    let flags = ["--model", "llama-3-8b", "--hbm-tb-s", "3.1", "--tp", "2"];
    let mut args = vec!["steps", ex, "--format", "json"];
    args.extend(flags);
    let (code, out, err) = run_env(&args, &[]);
    assert_eq!(code, 0, "{err}");
    let steps: serde_json::Value = serde_json::from_str(&out).unwrap();
    let note = steps["notes"]
        .as_array()
        .unwrap()
        .iter()
        .find_map(|n| n.as_str()?.strip_prefix("floor: "))
        .expect("a floor note")
        .to_owned();
    assert_eq!(
        note,
        "llama-3-8b on NVIDIA H100 SXM5 80GB (named by the report; 3.10 TB/s given), tp=2 (input) — derived"
    );
    let d = tempfile::tempdir().unwrap();
    let b = d.path().join("b.json");
    let mut args = vec!["baseline", "record", ex, "-o", b.to_str().unwrap()];
    args.extend(flags);
    let (code, _, err) = run_env(&args, &[]);
    assert_eq!(code, 0, "{err}");
    let base: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&b).unwrap()).unwrap();
    assert_eq!(base["meta"]["floor_inputs"]["basis"], note.as_str());
    assert_eq!(base["meta"]["floor_inputs"]["tp"], 2);
}

/// Every command's help groups its options under the shared headings, in the order a user
/// reads them; `gate --help` keeps its examples and exit codes.
#[test]
fn help_groups_the_options_under_headings() {
    let headings = |cmd: &[&str]| -> Vec<String> {
        let mut args = cmd.to_vec();
        args.push("--help");
        let (code, help, err) = common::run(&args);
        assert_eq!(code, 0, "{err}");
        help.lines()
            .filter(|l| !l.starts_with(' ') && l.ends_with(':'))
            .map(|l| l.trim_end_matches(':').to_owned())
            .collect()
    };
    let gate = headings(&["gate"]);
    for h in [
        "Input",
        "Thresholds",
        "Output",
        "Steps",
        "Floor (model and GPU)",
        "History (gate --history)",
        "Export (append this run to a dataset)",
    ] {
        assert!(
            gate.iter().any(|g| g == h),
            "gate --help lacks {h:?}: {gate:?}"
        );
    }
    let (_, help, _) = common::run(&["gate", "--help"]);
    assert!(help.contains("Examples:") && help.contains("Exit codes:"));
    // No option of gate is left in the flat list: under Options only --help.
    let options: Vec<&str> = help
        .split("\nOptions:\n")
        .nth(1)
        .unwrap()
        .split("\n\n")
        .next()
        .unwrap()
        .lines()
        .filter(|l| l.trim_start().starts_with('-'))
        .collect();
    assert_eq!(options.len(), 1, "{options:?}");
    assert!(options[0].contains("--help"));
    for cmd in [
        &["steps"][..],
        &["analyze"],
        &["diff"],
        &["trend"],
        &["export"],
    ] {
        let h = headings(cmd);
        assert!(h.iter().any(|g| g == "Output"), "{cmd:?}: {h:?}");
    }
    for cmd in [&["floor"][..], &["capacity"]] {
        let h = headings(cmd);
        assert!(
            h.iter().any(|g| g == "Floor (model and GPU)"),
            "{cmd:?}: {h:?}"
        );
    }
}

/// An unknown GPU is refused wherever `--gpu` is given, with or without `--model`.
#[test]
fn an_unknown_gpu_is_an_error_everywhere() {
    let f = common::fixture("kineto/sglang_mi300x_qwen3-8b_decode_step.json.gz");
    let f = f.to_str().unwrap();
    for args in [
        &["steps", f, "--gpu", "h1000"][..],
        &["analyze", f, "--gpu", "h1000"],
        &["steps", f, "--gpu", "h1000", "--model", "qwen3-8b"],
        &["floor", "--gpu", "h1000"],
    ] {
        let (code, out, err) = common::run(args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(out.is_empty(), "{args:?}");
        assert!(
            err.contains("unknown GPU `h1000` (did you mean `h100`?)"),
            "{args:?}: {err}"
        );
    }
}

/// `--wide` prints the full kernel names in the tables that shorten them: the longest name
/// the JSON carries appears whole on one table line with it, and not without it.
#[test]
fn wide_prints_full_kernel_names_in_the_tables() {
    let f = common::fixture("kineto/vllm_b200_eager_prefill_rank0.json.gz");
    let f = f.to_str().unwrap();
    let (code, out, err) = common::run(&["analyze", f, "--format", "json", "--no-steps"]);
    assert_eq!(code, 0, "{err}");
    let j: serde_json::Value = serde_json::from_str(&out).unwrap();
    let longest = j["devices"][0]["kernels_by_name"]
        .as_array()
        .unwrap()
        .iter()
        .take(15)
        .map(|k| k["name"].as_str().unwrap().to_owned())
        .max_by_key(|n| n.chars().count())
        .unwrap();
    assert!(longest.chars().count() > 100, "{longest}");
    let on_a_line = |text: &str| text.lines().any(|l| l.contains(&longest));
    let (_, narrow, _) = common::run(&["analyze", f, "--no-steps"]);
    let (code, wide, err) = common::run(&["analyze", f, "--no-steps", "--wide"]);
    assert_eq!(code, 0, "{err}");
    assert!(on_a_line(&wide), "{wide}");
    assert!(!on_a_line(&narrow), "{narrow}");
}
