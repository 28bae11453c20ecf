//! The text as a real terminal shows it (issue 49): `steps` run in a tmux pane 80 and 120
//! columns wide, `COLUMNS` unset, so the width comes from the tty itself; the pane's
//! lines (wrapped rows joined back, `capture-pane -J`) must fit and open with the verdict.
//! Skipped with a printed reason where tmux is absent, unless STEPGATE_REQUIRE_TMUX=1
//! (.ci/run installs it and sets that).

use crate::common;
use std::process::Command;
use unicode_width::UnicodeWidthStr;

fn tmux(sock: &str, args: &[&str]) -> std::process::Output {
    Command::new("tmux")
        .args(["-L", sock, "-f", "/dev/null"])
        .args(args)
        .output()
        .expect("tmux runs")
}

#[test]
fn steps_in_a_real_terminal_fits_80_and_120_columns() {
    if Command::new("tmux").arg("-V").output().is_err() {
        assert!(
            std::env::var("STEPGATE_REQUIRE_TMUX").is_err(),
            "STEPGATE_REQUIRE_TMUX=1 but tmux is not installed"
        );
        eprintln!("skipped: tmux is not installed (apt-get install tmux)");
        return;
    }
    let cap = common::fixture("kineto/sglang_mi300x_qwen3-8b_decode_step.json.gz");
    let cap = cap.to_str().unwrap().to_owned();
    let bin = common::bin();
    for w in [80usize, 120] {
        let sock = format!("stepgate-test-{}-{w}", std::process::id());
        // The command signals a channel when done; the test waits on it (an event, not a
        // sleep). `cat` then holds the pane open for the capture.
        let script = format!(
            "unset COLUMNS; '{}' steps '{cap}' --model qwen3-8b --gpu mi300x; tmux -L {sock} wait-for -S done; exec cat",
            bin.display()
        );
        let w_s = w.to_string();
        let o = tmux(
            &sock,
            &[
                "new-session",
                "-d",
                "-s",
                "t",
                "-x",
                &w_s,
                "-y",
                "200",
                &script,
            ],
        );
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let o = tmux(&sock, &["wait-for", "done"]);
        assert!(o.status.success());
        let o = tmux(&sock, &["capture-pane", "-p", "-J", "-t", "t"]);
        tmux(&sock, &["kill-server"]);
        let pane = String::from_utf8_lossy(&o.stdout).into_owned();
        let lines: Vec<&str> = pane.lines().filter(|l| !l.trim().is_empty()).collect();
        let wide: Vec<&&str> = lines
            .iter()
            .filter(|l| l.trim_end().width() > w && !l.contains(&cap))
            .collect();
        assert!(wide.is_empty(), "at {w} columns:\n{pane}");
        let v = lines.iter().position(|l| l.starts_with("verdict: "));
        assert!(
            v.is_some_and(|v| v < 10),
            "verdict within 10 lines at {w}:\n{pane}"
        );
        assert!(lines.len() <= 40, "{} lines at {w}:\n{pane}", lines.len());
    }
}
