//! Every other command's text fits the reader's terminal too (issue 49): `floor`,
//! `capacity`, `doctor`, `presets`, `trend` and `diff` at 80 and at 120 columns print no
//! line wider than `COLUMNS` except a line that holds an input path the user typed, on
//! the bundled fixtures and every model preset; and text snapshots at both widths pin
//! what `floor`, `doctor`, `presets`, `trend` and `diff` print (`analyze` and `steps` are
//! measured in fits_terminal).

use std::path::{Path, PathBuf};

use unicode_width::UnicodeWidthStr;

use crate::common;

const EX: &str = "examples/vllm_decode_synthetic_h100.sqlite";
/// A dense model's floor and an MoE model's (the widest floor table), measured and pinned.
const FLOOR_DENSE: &[&str] = &[
    "floor",
    "--model",
    "llama-3-8b",
    "--gpu",
    "h100-sxm",
    "--batch",
    "32",
    "--context",
    "2048",
];
const FLOOR_MOE: &[&str] = &[
    "floor",
    "--model",
    "deepseek-v3",
    "--gpu",
    "h200",
    "--batch",
    "1",
    "--context",
    "16384",
    "--tp",
    "8",
    "--moe-routing",
    "spread",
];
const BASE: &str = "baselines/example-h100-vllm-decode.json";
const SGLANG_NSYS: &str = "tests/fixtures/nsys/sglang_decode_mi300x_converted_nsys2026.2.sqlite";
const SGLANG_KINETO: &str = "tests/fixtures/kineto/sglang_mi300x_qwen3-8b_decode_step.json.gz";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The command's exit code and stdout at `columns`, run from the repository root so the
/// input paths are the relative ones a user types (and the snapshots are stable).
fn run_at(columns: usize, args: &[&str]) -> (i32, String) {
    let out = std::process::Command::new(common::bin())
        .current_dir(root())
        .env("COLUMNS", columns.to_string())
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

/// Lines wider than `w`, a line that holds one of the command's input paths aside.
fn too_wide<'a>(text: &'a str, w: usize, inputs: &[&str]) -> Vec<&'a str> {
    text.lines()
        .filter(|l| l.width() > w && !inputs.iter().any(|p| l.contains(p)))
        .collect()
}

/// Every capture under tests/fixtures the readers take.
fn captures() -> Vec<String> {
    let mut out = Vec::new();
    for dir in ["nsys", "kineto", "rocpd"] {
        for e in std::fs::read_dir(root().join("tests/fixtures").join(dir)).unwrap() {
            let n = e.unwrap().path();
            let rel = n
                .strip_prefix(root())
                .unwrap()
                .to_string_lossy()
                .into_owned();
            if rel.ends_with(".sqlite") || rel.ends_with(".json.gz") || rel.ends_with(".rpd") {
                out.push(rel);
            }
        }
    }
    out.sort();
    out
}

/// Every model preset's key, from `presets models --format json`.
fn models() -> Vec<String> {
    let (code, out) = run_at(120, &["presets", "models", "--format", "json"]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    v["models"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["key"].as_str().unwrap().to_owned())
        .collect()
}

/// A history dataset of three runs exported here (two labels, two captures).
fn dataset(dir: &Path) -> String {
    let ds = dir.join("ds").to_string_lossy().into_owned();
    for (cap, label) in [
        (EX, "branch=main"),
        (SGLANG_KINETO, "branch=main"),
        (EX, "branch=pr"),
    ] {
        let (code, _) = run_at(120, &["export", cap, "-o", &ds, "--label", label]);
        assert_eq!(code, 0, "export {cap}");
    }
    ds
}

/// The command lines measured: each with the inputs a user typed.
fn command_lines(ds: &str) -> Vec<Vec<String>> {
    let mut v: Vec<Vec<&str>> = vec![
        vec!["presets"],
        vec!["presets", "gpus"],
        vec!["presets", "models"],
        FLOOR_DENSE.to_vec(),
        FLOOR_MOE.to_vec(),
        vec![
            "floor",
            "--weights-gb",
            "15.01",
            "--layers",
            "32",
            "--kv-heads",
            "8",
            "--head-dim",
            "128",
            "--hbm-tb-s",
            "3.0",
            "--launches",
            "395",
        ],
        vec![
            "capacity",
            "--model",
            "llama-3-8b",
            "--gpu",
            "h100-sxm",
            "--weights-gb",
            "15.01",
            "--params-b",
            "7.5",
            "--kv-pool-tokens",
            "428569",
            "--fleet-rps",
            "240",
        ],
        vec![
            "capacity",
            "--model",
            "llama-3-70b",
            "--gpu",
            "h100-sxm",
            "--tp",
            "4",
        ],
        vec!["trend", ds, "--metric", "wall_ns", "--by", "label.branch"],
        vec![
            "trend",
            ds,
            "--metric",
            "category:attention",
            "--by",
            "gpu",
            "--window",
            "2",
        ],
        vec!["diff", BASE, EX],
        vec!["diff", SGLANG_NSYS, SGLANG_KINETO],
        vec!["diff", EX, SGLANG_KINETO],
    ];
    let mut out: Vec<Vec<String>> = v
        .drain(..)
        .map(|a| a.into_iter().map(str::to_owned).collect())
        .collect();
    for m in models() {
        out.push(
            [
                "floor",
                "--model",
                &m,
                "--gpu",
                "h100-sxm",
                "--batch",
                "8",
                "--context",
                "4096",
            ]
            .map(str::to_owned)
            .to_vec(),
        );
    }
    for cap in captures() {
        out.push(vec!["doctor".to_owned(), cap]);
    }
    out
}

#[test]
fn every_other_command_fits_80_and_120_columns() {
    let d = tempfile::tempdir().unwrap();
    let ds = dataset(d.path());
    let lines = command_lines(&ds);
    let mut printed = 0;
    for args in &lines {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        // What the user typed that names a file: the paths among the arguments.
        let inputs: Vec<&str> = args.iter().copied().filter(|a| a.contains('/')).collect();
        for w in [80usize, 120] {
            let (code, text) = run_at(w, &args);
            if code == 0 || code == 1 {
                printed += 1;
            }
            let bad = too_wide(&text, w, &inputs);
            assert!(
                bad.is_empty(),
                "{args:?} at {w} (exit {code}):\n{}",
                bad.join("\n")
            );
        }
    }
    // Most command lines print their text (a capture doctor rejects is another test's).
    assert!(
        printed >= lines.len(),
        "{printed} of {} printed",
        lines.len() * 2
    );
}

/// Trend's run ids and export times change from run to run: same-width placeholders.
fn stable(text: &str) -> String {
    let time = regex::Regex::new(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}").unwrap();
    let id = regex::Regex::new(r"\b[0-9a-f]{16}\b").unwrap();
    let t = time.replace_all(text, "YYYY-MM-DD hh:mm:ss");
    id.replace_all(&t, "################").into_owned()
}

#[test]
fn text_snapshots_at_80_and_120_columns() {
    let d = tempfile::tempdir().unwrap();
    let ds = dataset(d.path());
    let cases: [(&str, Vec<&str>); 6] = [
        ("floor", FLOOR_DENSE.to_vec()),
        ("floor_moe", FLOOR_MOE.to_vec()),
        ("doctor", vec!["doctor", EX]),
        ("presets", vec!["presets"]),
        (
            "trend",
            vec!["trend", &ds, "--metric", "wall_ns", "--by", "label.branch"],
        ),
        ("diff", vec!["diff", SGLANG_NSYS, SGLANG_KINETO]),
    ];
    for (name, args) in &cases {
        for w in [80usize, 120] {
            let (code, text) = run_at(w, args);
            assert!(code == 0 || code == 1, "{args:?}: exit {code}");
            insta::assert_snapshot!(format!("fits_{name}_{w}"), stable(&text));
        }
    }
}
