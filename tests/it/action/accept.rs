//! The accept command: quoted or refused inputs, kept in a cut report.

use super::*;

/// What the inputs hold reaches the posted command only as one shell word each: quoted
/// when a shell would read it otherwise, left out (and said so) when no quoting makes a
/// pasted line safe (a newline, a control character, a backtick that would end the
/// markdown code).
#[test]
fn the_accept_command_quotes_or_refuses_what_inputs_hold() {
    let r = Runner::new();
    let built = crate::decisions::main_history(r.dir.path(), 3);
    let cand = r.path("slow.sqlite");
    crate::decisions::report(&cand, 10, 1.25);
    // The same dataset under each name in turn (a rename, not a rebuild).
    let mut at = PathBuf::from(&built);
    let mut gate = |name: &str, extra: &[(&str, &str)]| {
        let to = r.path(name);
        std::fs::rename(&at, &to).unwrap();
        at = to;
        let mut inputs = vec![
            ("REPORT", cand.to_str().unwrap()),
            ("HISTORY", at.to_str().unwrap()),
            ("WHERE", "label.branch=main"),
        ];
        inputs.extend_from_slice(extra);
        let run = r.gate(&inputs);
        assert_eq!(run.code, 1, "{}", run.stdout);
        let body = r.gate_comments()[0]["body"].as_str().unwrap().to_owned();
        let from = body.find("#### Accepting this regression").unwrap();
        (at.display().to_string(), body[from..].to_owned())
    };
    // A dataset name a shell would expand and split: one single-quoted word, its own
    // quote closed and reopened.
    let (ds, acc) = gate("a b$(id)'x", &[]);
    let cmds = accept_commands(&acc);
    let quoted = format!("'{}'", ds.replace('\'', "'\\''"));
    assert_eq!(
        cmds.last().unwrap().to_string(),
        format!("stepgate accept gate.json --history={quoted} --reason 'what the change buys, why it is intended'")
    );
    // bash reads the word back as the name, nothing run: printf gets it as one argument.
    let back = Command::new("bash")
        .args(["-c", &format!("printf '%s' {quoted}")])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&back.stdout), ds);
    // No artifact: the comparison is named where it is on the runner.
    let (ds, acc) = gate("history", &[("ARTIFACT_NAME", "")]);
    assert!(acc.contains("no artifact was uploaded"), "{acc}");
    assert_eq!(
        accept_commands(&acc),
        [format!("stepgate accept gate.json --history={ds} --reason 'what the change buys, why it is intended'")]
    );

    // A backtick or a newline: no command at all, and the comment says why. No dataset
    // can be named so (object-store paths refuse them), so a stepgate that reports a
    // regression stands in: what is under test is the script's text.
    let fake = r.path("bin/stepgate");
    std::fs::remove_file(&fake).unwrap();
    std::fs::write(
        &fake,
        "#!/bin/bash\nwhile [ $# -gt 0 ]; do case \"$1\" in --markdown) md=$2;; --json) js=$2;; esac; shift; done\n\
         echo '### ❌ Regression' > \"$md\"\necho '{\"verdict\": \"regression\"}' > \"$js\"\nexit 1\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    for (input, bad) in [
        ("HISTORY", "s3://perf/it's $(touch pwned) `id`"),
        ("HISTORY", "s3://perf/x\n```\nrm -rf ~"),
        ("HISTORY", "s3://perf/\u{1b}[2Jx"),
        ("ARTIFACT_NAME", "perf`gate"),
        ("ARTIFACT_NAME", "perf\nrm -rf ~"),
    ] {
        let mut inputs = vec![("REPORT", "x.sqlite"), (input, bad)];
        if input != "HISTORY" {
            inputs.push(("HISTORY", "s3://perf/hist"));
        }
        let run = r.gate(&inputs);
        assert_eq!(run.code, 1, "{}", run.stdout);
        let body = r.gate_comments()[0]["body"].as_str().unwrap().to_owned();
        let acc = &body[body.find("#### Accepting this regression").unwrap()..];
        assert!(accept_commands(acc).is_empty(), "{bad:?}: {acc}");
        assert!(acc.contains("not safe in a pasted command"), "{acc}");
        assert!(
            !acc.contains("rm -rf") && !acc.contains("pwned") && !acc.contains('\u{1b}'),
            "{acc}"
        );
    }
}

/// A regression report too long for a comment (GitHub refuses bodies over 65,536
/// characters) or a summary is cut, and the accept command still comes whole after the
/// cut: it is what the reviewer needs from the comment.
#[test]
fn a_cut_report_keeps_its_accept_command() {
    let r = Runner::new();
    // A stepgate that writes a 200 KB regression report (the cut is the scripts', whatever
    // wrote the markdown).
    r.fake_stepgate("### ❌ Regression", 2000, "regression", 1);
    let run = r.gate(&[
        ("REPORT", "x.sqlite"),
        ("HISTORY", "s3://perf/hist"),
        ("SUMMARY_MAX", "50000"),
    ]);
    assert_eq!(run.code, 1, "{}", run.stdout);
    let want = "stepgate accept gate.json --history=s3://perf/hist --reason 'what the change buys, why it is intended'";
    let body = r.gate_comments()[0]["body"].as_str().unwrap().to_owned();
    assert!(body.chars().count() <= 65_536, "{}", body.len());
    assert!(body.contains("… cut at "), "{}", &body[body.len() - 2000..]);
    assert_eq!(accept_commands(&body), [want]);
    assert!(body
        .trim_end()
        .ends_with("a re-run of this job passes them."));
    assert!(run.summary.len() <= 50_000, "{}", run.summary.len());
    assert!(run.summary.contains("is cut here to stay under"));
    assert_eq!(accept_commands(&run.summary), [want]);
}
