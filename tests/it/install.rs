//! What an installed binary offers besides the analysis: `--version` with the commit,
//! shell completions and man pages generated from the clap definitions, `presets` listing
//! the built-in tables, and "did you mean" for a misspelled preset, engine or command.

use std::process::Command;

use stepgate::roofline::{gpu, presets};

use crate::common;

/// Whether a shell is installed; .ci/run installs zsh and fish and sets
/// STEPGATE_REQUIRE_SHELLS=1, so CI can never skip their checks.
fn shell(name: &str) -> bool {
    let found = Command::new(name)
        .arg("-c")
        .arg("exit 0")
        .output()
        .is_ok_and(|o| o.status.success());
    if !found && std::env::var("STEPGATE_REQUIRE_SHELLS").as_deref() == Ok("1") {
        panic!("{name} is not installed and STEPGATE_REQUIRE_SHELLS=1");
    }
    found
}

/// Run `program args…` with `script` as a file argument; (success, stderr).
fn check_script(program: &str, args: &[&str], script: &str) -> (bool, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("completion");
    std::fs::write(&path, script).unwrap();
    let out = Command::new(program)
        .args(args)
        .arg(&path)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn version_names_the_commit() {
    for flag in ["--version", "-V"] {
        let (code, out, err) = common::run(&[flag]);
        assert_eq!(code, 0, "{err}");
        let line = out.trim_end();
        let rest = line
            .strip_prefix(&format!("stepgate {} (", env!("CARGO_PKG_VERSION")))
            .and_then(|r| r.strip_suffix(')'))
            .unwrap_or_else(|| panic!("{line:?}"));
        if rest == "unknown commit" {
            // Only a build without .git and without STEPGATE_COMMIT says so.
            assert!(!common::root().join(".git").exists(), "{line}");
            continue;
        }
        let id = rest
            .strip_prefix("commit ")
            .unwrap_or_else(|| panic!("{line:?}"));
        assert_eq!(id.len(), 12, "{line}");
        assert!(id.chars().all(|c| c.is_ascii_hexdigit()), "{line}");
        // The checkout the tests build from: its HEAD is the commit named.
        let head = Command::new("git")
            .arg("-C")
            .arg(common::root())
            .args(["rev-parse", "HEAD"])
            .output()
            .unwrap();
        if head.status.success() {
            let head = String::from_utf8(head.stdout).unwrap();
            assert!(head.starts_with(id), "{id} is not HEAD {head}");
        }
    }
}

#[test]
fn bash_completion_parses_and_completes_subcommands_and_values() {
    let (code, script, err) = common::run(&["completions", "bash"]);
    assert_eq!(code, 0, "{err}");
    let (ok, err) = check_script("bash", &["-n"], &script);
    assert!(ok, "bash -n: {err}");
    // Source it and ask for completions as bash would after `stepgate ga<TAB>` and
    // `stepgate steps R --format <TAB>`.
    let complete = |words: &str, cword: usize| {
        let prog = format!(
            "source /dev/stdin <<'EOF'\n{script}\nEOF\n\
             COMP_WORDS=({words}); COMP_CWORD={cword}; COMP_LINE='{words}'; COMP_POINT=${{#COMP_LINE}}\n\
             _stepgate stepgate \"${{COMP_WORDS[$COMP_CWORD]}}\" \"${{COMP_WORDS[$COMP_CWORD-1]}}\"\n\
             printf '%s\\n' \"${{COMPREPLY[@]}}\""
        );
        let out = Command::new("bash").arg("-c").arg(prog).output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let mut v: Vec<String> = String::from_utf8(out.stdout)
            .unwrap()
            .split_whitespace()
            .map(str::to_owned)
            .collect();
        v.sort();
        v
    };
    assert_eq!(complete("stepgate ga", 1), ["gate"]);
    assert_eq!(complete("stepgate pr", 1), ["presets"]);
    assert_eq!(
        complete("stepgate steps r.sqlite --format ''", 4),
        ["csv", "json", "markdown", "table"]
    );
    let shells: Vec<String> = complete("stepgate completions ''", 2)
        .into_iter()
        .filter(|w| !w.starts_with('-'))
        .collect();
    assert_eq!(shells, ["bash", "elvish", "fish", "powershell", "zsh"]);
}

#[test]
fn zsh_and_fish_completions_parse_where_installed() {
    for (sh, args) in [("zsh", vec!["-n"]), ("fish", vec!["--no-execute"])] {
        let (code, script, err) = common::run(&["completions", sh]);
        assert_eq!(code, 0, "{err}");
        assert!(
            script.contains("presets") && script.contains("baseline"),
            "{sh}"
        );
        if shell(sh) {
            let (ok, err) = check_script(sh, &args, &script);
            assert!(ok, "{sh} {args:?}: {err}");
        }
    }
}

#[test]
fn man_pages_cover_every_subcommand() {
    let (code, page, err) = common::run(&["man"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        page.starts_with(".ie \\n(.g .ds Aq \\(aq"),
        "{}",
        &page[..80]
    );
    assert!(page.contains(".TH stepgate 1"), "{page}");
    let dir = tempfile::tempdir().unwrap();
    let (code, _, err) = common::run(&["man", "--dir", dir.path().to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("man pages to"), "{err}");
    let mut files: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    files.sort();
    // One page per subcommand (and per `baseline` subcommand), from the parser itself.
    let cli = <stepgate::cli::Cli as clap::CommandFactory>::command();
    for sub in cli.get_subcommands() {
        let name = format!("stepgate-{}.1", sub.get_name());
        assert!(files.contains(&name), "{name} not in {files:?}");
        let text = std::fs::read_to_string(dir.path().join(&name)).unwrap();
        assert!(
            text.contains(&format!(".TH stepgate-{} 1", sub.get_name())),
            "{name}"
        );
        for s in sub.get_subcommands() {
            let name = format!("stepgate-{}-{}.1", sub.get_name(), s.get_name());
            assert!(files.contains(&name), "{name} not in {files:?}");
        }
    }
    assert!(files.contains(&"stepgate.1".to_owned()));
    // Where groff is installed (man-db's renderer): every page renders with no undefined
    // macro, bad escape or unknown character (line-adjustment warnings aside).
    if Command::new("groff").arg("-v").output().is_ok() {
        for f in &files {
            let out = Command::new("groff")
                .args([
                    "-k", "-man", "-Tutf8", "-z", "-wmac", "-wchar", "-wescape", "-Wbreak",
                ])
                .arg(dir.path().join(f))
                .output()
                .unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(out.status.success() && err.is_empty(), "{f}: {err}");
        }
    }
    // A missing directory is refused before anything is written.
    let gone = dir.path().join("missing");
    let (code, _, err) = common::run(&["man", "--dir", gone.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
}

/// A symlink planted as `stepgate.1` in the directory (a shared man directory, a checked-out
/// tree) is replaced by the page; the file it pointed to, outside the directory, is untouched.
#[cfg(unix)]
#[test]
fn man_dir_replaces_a_planted_symlink_instead_of_writing_through_it() {
    let outside = tempfile::tempdir().unwrap();
    let victim = outside.path().join("victim");
    std::fs::write(&victim, "precious\n").unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(&victim, dir.path().join("stepgate.1")).unwrap();
    // A dangling link too: following it would create a file outside the directory.
    let dangling = outside.path().join("created-through-link");
    std::os::unix::fs::symlink(&dangling, dir.path().join("stepgate-gate.1")).unwrap();
    let (code, _, err) = common::run(&["man", "--dir", dir.path().to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n");
    assert!(!dangling.exists(), "written through a dangling link");
    for name in ["stepgate.1", "stepgate-gate.1"] {
        let p = dir.path().join(name);
        let meta = std::fs::symlink_metadata(&p).unwrap();
        assert!(meta.file_type().is_file(), "{name} is still a link");
        assert!(std::fs::read_to_string(&p)
            .unwrap()
            .contains(".TH stepgate"));
    }
    // A directory planted at a page's name is refused before anything is written.
    let dir2 = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir2.path().join("stepgate.1")).unwrap();
    let (code, _, err) = common::run(&["man", "--dir", dir2.path().to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("not a regular file"), "{err}");
    assert_eq!(std::fs::read_dir(dir2.path()).unwrap().count(), 1);
}

#[test]
fn presets_json_lists_the_tables_themselves() {
    let (code, out, err) = common::run(&["presets", "--format", "json"]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let gpus = v["gpus"].as_array().unwrap();
    assert_eq!(gpus.len(), gpu::GPUS.len());
    for (row, spec) in gpus.iter().zip(gpu::GPUS) {
        assert_eq!(row, &serde_json::to_value(spec).unwrap(), "{}", spec.key);
    }
    let keys = presets::preset_keys();
    let models = v["models"].as_array().unwrap();
    assert_eq!(models.len(), keys.len());
    for (row, (key, origin)) in models.iter().zip(&keys) {
        let m = presets::preset(key).unwrap();
        assert_eq!(row["key"], *key);
        assert_eq!(row["origin"], *origin);
        assert_eq!(row["layers"], m.layers, "{key}");
        assert_eq!(row["hidden"], m.hidden, "{key}");
        assert_eq!(row["heads"], m.heads, "{key}");
        assert_eq!(row["kv_heads"], m.kv_heads, "{key}");
        let qk = m
            .mla
            .as_ref()
            .map_or(m.head_dim, |a| a.qk_nope_head_dim + a.qk_rope_head_dim);
        assert_eq!(row["head_dim"], qk, "{key}");
        assert_eq!(row["params_total"], m.params().total, "{key}");
        assert_eq!(row["kv_bytes_per_token"], m.kv_cell_bytes(1, 1), "{key}");
        assert_eq!(
            row["experts"],
            serde_json::json!(m.moe.as_ref().map(|e| e.num_experts))
        );
        if m.moe.is_none() {
            assert_eq!(row["params_active"], row["params_total"], "{key}");
        }
    }
    let row = |k: &str| models.iter().find(|m| m["key"] == k).unwrap();
    // Independent figures: Llama-3-8B by hand (model.rs test: 32 layers × 218,112,000 +
    // final norm + embedding and head of 525,336,576 each); 128 KiB of bf16 KV per token
    // (2 · 32 layers · 8 KV heads · 128 · 2 B); DeepSeek-V3 "671B total, 37B activated"
    // (its model card); Mixtral 8x7B 46.7B total, 12.9B active (Mistral's announcement).
    let llama = row("llama-3-8b");
    assert_eq!(
        llama["params_total"],
        32 * 218_112_000u64 + 4096 + 2 * 525_336_576
    );
    assert_eq!(llama["kv_bytes_per_token"], 131_072.0);
    assert_eq!(llama["attention"], "gqa");
    let ds = row("deepseek-v3");
    let b = |r: &serde_json::Value, k: &str| r[k].as_f64().unwrap() / 1e9;
    assert!((b(ds, "params_total") - 671.0).abs() < 1.0);
    assert!(
        (b(ds, "params_active") - 37.5).abs() < 1.0,
        "{}",
        b(ds, "params_active")
    );
    assert_eq!(ds["attention"], "mla");
    // Its config: qk_nope_head_dim 128 + qk_rope_head_dim 64 (not hidden / heads = 56).
    assert_eq!(ds["head_dim"], 192);
    let mx = row("mixtral-8x7b");
    assert!(
        (b(mx, "params_total") - 46.7).abs() < 0.1,
        "{}",
        b(mx, "params_total")
    );
    assert!(
        (b(mx, "params_active") - 12.9).abs() < 0.1,
        "{}",
        b(mx, "params_active")
    );
    assert_eq!(row("llama-2-7b")["attention"], "mha");
}

#[test]
fn presets_tables_in_text_csv_and_markdown() {
    let (code, text, err) = common::run(&["presets"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        text.starts_with("GPU presets (--gpu): vendor datasheet peaks, cited"),
        "{text}"
    );
    assert!(text.contains("\nModel presets (--model):"), "{text}");
    let h100 = text
        .lines()
        .find(|l| l.starts_with("h100-sxm "))
        .unwrap_or_else(|| panic!("{text}"));
    // 3.35 TB/s, 989.4 TFLOP/s bf16, 1,978.9 fp8, 132 SMs, 80 GB (the table's own numbers).
    for cell in ["3.350", "989.4", "1,978.9", "132", "80", "datasheet"] {
        assert!(
            h100.split_whitespace().any(|w| w == cell) || h100.contains(cell),
            "{cell}: {h100}"
        );
    }
    let (code, csv, err) = common::run(&["presets", "gpus", "--format", "csv"]);
    assert_eq!(code, 0, "{err}");
    let mut rd = csv::Reader::from_reader(csv.as_bytes());
    let rows: Vec<csv::StringRecord> = rd.records().map(Result::unwrap).collect();
    assert_eq!(rows.len(), gpu::GPUS.len());
    for (r, g) in rows.iter().zip(gpu::GPUS) {
        assert_eq!(&r[0], g.key);
        assert_eq!(
            r[2].parse::<f64>().unwrap(),
            (g.hbm_bytes_per_s / 1e12 * 1e3).round() / 1e3
        );
        assert_eq!(r[5].parse::<u32>().unwrap(), g.sm_count);
        assert_eq!(&r[7], g.source);
    }
    let (code, csv, _) = common::run(&["presets", "model", "--format", "csv"]);
    assert_eq!(code, 0);
    assert_eq!(csv.lines().count(), 1 + presets::preset_keys().len());
    let (code, md, _) = common::run(&["presets", "models", "--format", "markdown"]);
    assert_eq!(code, 0);
    assert!(
        md.contains("| model | layers |") && md.contains("| kimi-k2 |"),
        "{md}"
    );
    assert!(!md.contains("h100-sxm"), "{md}");
    // Two tables do not fit one CSV.
    let (code, _, err) = common::run(&["presets", "--format", "csv"]);
    assert_eq!(code, 2);
    assert!(err.contains("presets gpus --format csv"), "{err}");
}

#[test]
fn misspellings_get_a_suggestion() {
    let cases: [(&[&str], &str); 5] = [
        (
            &["floor", "--gpu", "h100sxm"],
            "unknown GPU `h100sxm` (did you mean `h100-sxm`?); use one of",
        ),
        (&["floor", "--gpu", "MI300"], "did you mean `mi300x`?"),
        (
            &["floor", "--model", "lama-3-8b"],
            "unknown model `lama-3-8b` (did you mean `llama-3-8b`?); use one of",
        ),
        (&["floor", "--model", "qwen3-8"], "did you mean `qwen3-8b`?"),
        // clap's own for its enums and subcommands, kept in stepgate's one-line error.
        (
            &["capture", "--engine", "vlm", "--url", "http://127.0.0.1:9"],
            "a similar value exists: 'vllm'",
        ),
    ];
    for (args, want) in cases {
        let (code, _, err) = common::run(args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    }
    let (code, _, err) = common::run(&["gaet"]);
    assert_eq!(code, 2);
    // clap lists every close name (`accept` is as near as `gate`); `gate` must be among them.
    assert!(
        err.contains("similar subcommand") && err.contains("'gate'"),
        "{err}"
    );
    // A name like none of them: no suggestion, the list as before.
    let (code, _, err) = common::run(&["floor", "--gpu", "tpu-v5e"]);
    assert_eq!(code, 2);
    assert!(
        !err.contains("did you mean") && err.contains("use one of h100-sxm"),
        "{err}"
    );
}
