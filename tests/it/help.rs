//! Help as a user reads it: every subcommand's `-h` fits a screen (at most 40 lines at
//! 80 and 120 columns) and its `--help` still names every option, hidden from `-h` or not.

use clap::CommandFactory;

use crate::common;

/// Every command path: `[]` (stepgate itself), `["gate"]`, `["baseline", "record"]`, ….
fn leaves(
    cmd: &clap::Command,
    path: &mut Vec<String>,
    out: &mut Vec<(Vec<String>, clap::Command)>,
) {
    out.push((path.clone(), cmd.clone()));
    for s in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
        path.push(s.get_name().to_owned());
        leaves(s, path, out);
        path.pop();
    }
}

fn all() -> Vec<(Vec<String>, clap::Command)> {
    let mut cmd = stepgate::cli::Cli::command();
    cmd.build();
    let mut out = Vec::new();
    leaves(&cmd, &mut Vec::new(), &mut out);
    out
}

/// `stepgate PATH… FLAG` at `cols` columns (clap wraps at `COLUMNS`).
fn help(path: &[String], flag: &str, cols: u32) -> String {
    let out = std::process::Command::new(common::bin())
        .args(path)
        .arg(flag)
        .env("COLUMNS", cols.to_string())
        .output()
        .expect("spawn stepgate");
    assert_eq!(out.status.code(), Some(0), "stepgate {path:?} {flag}");
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn every_short_help_fits_forty_lines() {
    let cmds = all();
    // The tree as the CLI defines it, so a new subcommand is checked without a list here.
    assert!(cmds.len() >= 20, "{} commands", cmds.len());
    let mut over = Vec::new();
    for (path, _) in &cmds {
        for cols in [80, 120] {
            let text = help(path, "-h", cols);
            let n = text.lines().count();
            if n > 40 {
                over.push(format!(
                    "{} -h at {cols} columns: {n} lines",
                    path.join(" ")
                ));
            }
        }
    }
    assert!(over.is_empty(), "{}", over.join("\n"));
}

#[test]
fn every_long_help_names_every_option() {
    for (path, cmd) in all() {
        let text = help(&path, "--help", 120);
        for arg in cmd.get_arguments() {
            if arg.is_hide_set() {
                continue;
            }
            let name = match arg.get_long() {
                Some(l) => format!("--{l}"),
                None => continue,
            };
            assert!(
                text.contains(&name),
                "stepgate {} --help does not name {name}",
                path.join(" ")
            );
        }
    }
}

#[test]
fn short_help_hides_rare_options_but_they_still_work() {
    let gate = ["gate".to_owned()];
    let short = help(&gate, "-h", 120);
    let long = help(&gate, "--help", 120);
    for rare in [
        "--waterfall-top",
        "--storage-option",
        "--gap-us",
        "--hbm-tb-s",
    ] {
        assert!(!short.contains(rare), "{rare} in gate -h");
        assert!(long.contains(rare), "{rare} not in gate --help");
    }
    assert!(short.contains("--baseline") && short.contains("--model"));
    // `--help` groups them under the shared headings.
    for heading in ["Input:", "Steps:", "Floor (model and GPU):", "Output:"] {
        assert!(long.contains(heading), "gate --help lacks {heading}");
    }
    // A hidden-from-`-h` option is parsed as before: --gap-us with --steps gaps.
    let fx = common::fixture("kineto/sglang_mi300x_qwen3-8b_decode_step.json.gz");
    let (code, _, err) = common::run(&[
        "steps",
        fx.to_str().unwrap(),
        "--steps",
        "gaps",
        "--gap-us",
        "50",
        "--hbm-tb-s",
        "5.3",
    ]);
    assert_eq!(code, 0, "{err}");
}
