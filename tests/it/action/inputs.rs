//! The action's inputs: errors, pull-request-only comments, forged workflow commands, planted markers, flags in inputs, summary size, versions and accepted regressions.

use super::*;

#[test]
fn input_and_environment_errors_fail_with_the_error_line() {
    let r = Runner::new();
    let base = common::root().join("baselines/example-h100-vllm-decode.json");
    let missing = r.path("no-such-run.sqlite");
    let bad = r.gate(&[
        ("REPORT", missing.to_str().unwrap()),
        ("BASELINE", base.to_str().unwrap()),
    ]);
    assert_eq!(bad.code, 2, "{}", bad.stdout);
    assert_eq!(bad.output("verdict"), "error");
    assert_eq!(bad.output("exit-code"), "2");
    assert_eq!(bad.output("markdown"), "");
    let line = bad
        .stdout
        .lines()
        .find(|l| l.starts_with("::error title=stepgate exit 2::"))
        .unwrap_or_else(|| panic!("{}", bad.stdout));
    assert!(
        line.contains("stepgate: error:") && line.contains("cannot read it"),
        "{line}"
    );
    // The summary and the comment say what went wrong instead of a report.
    assert!(
        bad.summary
            .starts_with("### ❌ stepgate gate: error (exit 2)"),
        "{}",
        bad.summary
    );
    assert!(
        bad.summary.contains("no-such-run.sqlite"),
        "{}",
        bad.summary
    );

    // An nsys report with no nsys to export it: environment missing.
    let rep = r.path("run.nsys-rep");
    std::fs::write(&rep, b"not exported").unwrap();
    let env = r.gate(&[
        ("REPORT", rep.to_str().unwrap()),
        ("BASELINE", base.to_str().unwrap()),
    ]);
    assert_eq!(env.code, 4, "{}", env.stdout);
    assert_eq!(env.output("verdict"), "error");
    assert_eq!(env.output("exit-code"), "4");
    let line = env
        .stdout
        .lines()
        .find(|l| l.starts_with("::error title=stepgate exit 4::"))
        .unwrap_or_else(|| panic!("{}", env.stdout));
    assert!(line.contains("`nsys` is not on PATH"), "{line}");
    let comments = r.gate_comments();
    assert_eq!(comments.len(), 1);
    assert!(comments[0]["body"]
        .as_str()
        .unwrap()
        .contains("error (exit 4)"));
}

#[test]
fn no_comment_outside_pull_requests_and_extra_args_pass_through() {
    let r = Runner::new();
    std::fs::write(r.path("event.json"), r#"{"ref": "refs/heads/main"}"#).unwrap();
    let base = common::root().join("baselines/example-h100-vllm-decode.json");
    let run = r.gate_on(
        "push",
        &[
            ("REPORT", "examples/vllm_decode_synthetic_h100.sqlite"),
            ("BASELINE", base.to_str().unwrap()),
            // Flags the action has no input for reach stepgate as they are.
            ("ARGS", "--top 1 --waterfall-top 1"),
        ],
    );
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert!(
        run.stdout.contains("--top 1 --waterfall-top 1"),
        "{}",
        run.stdout
    );
    // --waterfall-top 1: one contributor row, the rest folded into "N others".
    assert!(run.summary.contains("others"), "{}", run.summary);
    assert!(
        run.stdout.contains("not a pull_request event (push)"),
        "{}",
        run.stdout
    );
    assert!(r.gh_calls().is_empty());
    assert_eq!(run.output("comment-id"), "");
}

/// The lines of `stdout` the runner would run as workflow commands: those starting with
/// `::` outside a `::stop-commands::TOKEN` … `::TOKEN::` pause (the runner trims leading
/// whitespace first).
fn live_commands(stdout: &str) -> Vec<&str> {
    let mut paused: Option<String> = None;
    let mut live = Vec::new();
    for l in stdout.lines().map(str::trim_start) {
        match &paused {
            Some(t) => {
                if l == format!("::{t}::") {
                    paused = None;
                }
            }
            None => {
                if let Some(t) = l.strip_prefix("::stop-commands::") {
                    assert!(t.len() >= 32, "a guessable token: {t}");
                    paused = Some(t.to_owned());
                } else if l.starts_with("::") || l.contains("##[") {
                    live.push(l);
                }
            }
        }
    }
    assert!(paused.is_none(), "commands never resumed:\n{stdout}");
    live
}

#[test]
fn names_and_inputs_cannot_forge_workflow_commands() {
    let r = Runner::new();
    let forged = "::error title=stepgate pass::FORGED";
    let (base, cand) = (r.path("base.sqlite"), r.path("cand.sqlite"));
    crate::hostile_pr::report_named(&base, 1, 1.0, [forged, "##[warning]OLD-SYNTAX"]);
    crate::hostile_pr::report_named(&cand, 2, 4.0, [forged, "##[warning]OLD-SYNTAX"]);
    let json = r.path("base.json");
    let (code, _, err) = common::run(&[
        "baseline",
        "record",
        base.to_str().unwrap(),
        "-o",
        json.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let run = r.gate(&[
        ("REPORT", cand.to_str().unwrap()),
        ("BASELINE", json.to_str().unwrap()),
        // An input with a newline, echoed in the command line.
        ("WHERE", "x\n::error title=forged input::FORGED"),
    ]);
    // The kernel named like a command is in stepgate's output, inside the pause ...
    assert!(run.stdout.contains("FORGED"), "{}", run.stdout);
    // ... and the only live commands are the gate's own verdict.
    let live = live_commands(&run.stdout);
    assert!(
        live.iter()
            .all(|l| l.starts_with("::error title=stepgate exit 2::")),
        "{live:?}\n{}",
        run.stdout
    );
    // The newline in the input is printed as $'…\n…', never as a line of its own.
    assert!(!run
        .stdout
        .lines()
        .any(|l| l.starts_with("::error title=forged")));

    // Without the bad --where: a regression, the kernel named as a command among the
    // reasons, one live annotation with the gate's own title.
    let run = r.gate(&[
        ("REPORT", cand.to_str().unwrap()),
        ("BASELINE", json.to_str().unwrap()),
    ]);
    assert_eq!(run.code, 1, "{}", run.stdout);
    let live = live_commands(&run.stdout);
    assert_eq!(live.len(), 1, "{live:?}");
    assert!(live[0].starts_with("::error title=stepgate regression::"));
    assert!(run
        .summary
        .contains("kernel ::error title=stepgate pass::FORGED"));
}

#[test]
fn a_planted_marker_is_never_edited_and_keys_stay_apart() {
    let r = Runner::new();
    // Someone else posts a comment that starts with the marker, before the gate runs.
    let mut c = r.comments();
    c.push(serde_json::json!({"id": 13, "body": format!("{MARKER}\nplanted"), "user": {"login": "mallory"}}));
    std::fs::write(
        r.path("comments.json"),
        serde_json::Value::from(c).to_string(),
    )
    .unwrap();
    let base = common::root().join("baselines/example-h100-vllm-decode.json");
    let inputs = [
        ("REPORT", "examples/vllm_decode_synthetic_h100.sqlite"),
        ("BASELINE", base.to_str().unwrap()),
    ];
    let first = r.gate(&inputs);
    assert_eq!(first.code, 0, "{}", first.stdout);
    let second = r.gate(&inputs);
    assert_eq!(second.code, 0, "{}", second.stdout);
    // The bot made its own comment and edited it the second time; the planted one stands.
    let methods: Vec<String> = r
        .gh_calls()
        .iter()
        .map(|(a, _)| method(a).to_owned())
        .collect();
    assert_eq!(methods, ["GET", "POST", "GET", "PATCH"]);
    let all = r.comments();
    assert_eq!(all[2]["body"], format!("{MARKER}\nplanted"));
    assert_eq!(all[3]["user"]["login"], "github-actions[bot]");
    assert_eq!(first.output("comment-id"), all[3]["id"].to_string());
    assert_eq!(second.output("comment-id"), all[3]["id"].to_string());
    // The workflow token cannot read /user: the bot's identity is assumed, and asked once per run.
    let asked = r.all_gh_calls().len() - r.gh_calls().len();
    assert_eq!(asked, 2);

    // A personal token: its own login is the author looked for, not the bot's.
    let pat = [("FAKE_GH_LOGIN", "release-bot")];
    let run = r.gate_env("pull_request", &inputs, &pat);
    assert_eq!(run.code, 0, "{}", run.stdout);
    let all = r.comments();
    assert_eq!(all.len(), 5, "{all:?}");
    assert_eq!(all[4]["user"]["login"], "release-bot");

    // Two keys that differ only where the old marker had `_` keep two comments.
    for key in ["H100 SXM", "H100/SXM", "H100 SXM"] {
        let mut keyed = inputs.to_vec();
        keyed.push(("COMMENT_KEY", key));
        assert_eq!(r.gate(&keyed).code, 0);
    }
    let markers: Vec<String> = r
        .comments()
        .iter()
        .map(|c| {
            c["body"]
                .as_str()
                .unwrap()
                .lines()
                .next()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert!(markers.contains(&"<!-- stepgate-gate H100%20SXM -->".to_owned()));
    assert!(markers.contains(&"<!-- stepgate-gate H100%2FSXM -->".to_owned()));
    assert_eq!(r.comments().len(), 7, "{markers:?}");
}

#[test]
fn help_and_flags_in_inputs_never_pass_silently() {
    let r = Runner::new();
    let base = common::root().join("baselines/example-h100-vllm-decode.json");
    let report = "examples/vllm_decode_synthetic_h100.sqlite";
    // A report input that is a flag: refused before stepgate runs.
    let run = r.gate(&[("REPORT", "--help"), ("BASELINE", base.to_str().unwrap())]);
    assert_eq!(run.code, 2, "{}", run.stdout);
    assert!(run.stdout.contains("starts with '-'"), "{}", run.stdout);
    // `--help` in args: stepgate prints help and exits 0 without a verdict: a failure.
    let run = r.gate(&[
        ("REPORT", report),
        ("BASELINE", base.to_str().unwrap()),
        ("ARGS", "--help"),
    ]);
    assert_eq!(run.code, 2, "{}", run.stdout);
    assert_eq!(run.output("verdict"), "error");
    assert!(run.stdout.contains("wrote no verdict"), "{}", run.stdout);
    // A baseline input that looks like a flag stays the flag's value (--baseline=…).
    let run = r.gate(&[("REPORT", report), ("BASELINE", "--help")]);
    assert_eq!(run.code, 2, "{}", run.stdout);
    // Every line of a multi-line args block is used: the second line's flag applies.
    let run = r.gate(&[
        ("REPORT", report),
        ("BASELINE", base.to_str().unwrap()),
        ("ARGS", "--top 1\n--waterfall-top 1\n"),
    ]);
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert!(run.summary.contains("others"), "{}", run.summary);
    // Quotes would need a shell: refused, not split wrongly.
    let run = r.gate(&[
        ("REPORT", report),
        ("BASELINE", base.to_str().unwrap()),
        ("ARGS", "--where 'label.branch=main'"),
    ]);
    assert_eq!(run.code, 2, "{}", run.stdout);
    assert!(run.stdout.contains("quote"), "{}", run.stdout);
}

#[test]
fn a_summary_over_one_mebibyte_is_cut_with_a_note() {
    let r = Runner::new();
    // A stepgate that writes a 2.5 MB report with a pass verdict (real reports that big
    // take minutes to generate; the cap is the script's, whatever wrote the markdown).
    r.fake_stepgate("### ✅ Pass", 27000, "pass", 0);
    let run = r.gate(&[("REPORT", "x.sqlite"), ("BASELINE", "b.json")]);
    assert_eq!(run.code, 0, "{}", run.stdout);
    let md = std::fs::read_to_string(run.output("markdown")).unwrap();
    assert!(md.len() > 2_500_000, "{}", md.len());
    assert!(run.summary.len() < 1 << 20, "{}", run.summary.len());
    assert!(run.summary.starts_with("### ✅ Pass\n| row 00001 |"));
    assert!(
        run.summary.contains("is cut here to stay under the 1 MiB"),
        "{}",
        &run.summary[run.summary.len() - 400..]
    );
    // Whole lines only: the last table row before the note is complete.
    let before = run.summary.split("\n\n…").next().unwrap();
    assert!(before.lines().last().unwrap().ends_with(" |"));
}

#[test]
fn a_version_input_must_be_a_version_or_a_wheel() {
    let d = tempfile::tempdir().unwrap();
    // A python3 that records being called: it must never be for a refused version.
    let bin = d.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    let log = d.path().join("python.log");
    std::fs::write(
        bin.join("python3"),
        format!("#!/bin/sh\necho \"$@\" >> {}\nexit 1\n", log.display()),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(bin.join("python3"), std::fs::Permissions::from_mode(0o755)).unwrap();
    for bad in [
        "-rhttps://example.com/reqs.txt",
        "--index-url=https://example.com/x.whl",
        "0.1.0\n-rhttps://example.com/r.txt",
        "http://example.com/x.whl",
        "latest",
    ] {
        let out = Command::new("bash")
            .arg(common::root().join("scripts/action/install.sh"))
            .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
            .env("STEPGATE_VERSION", bad)
            .env("RUNNER_TEMP", d.path())
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(2), "{bad:?}: {stdout}");
        assert!(stdout.starts_with("::error title=stepgate::the 'version' input"));
        assert_eq!(stdout.lines().count(), 1, "{stdout}");
        assert!(!log.exists(), "pip was run for {bad:?}");
    }
    // A real version reaches python (which this fake fails).
    let out = Command::new("bash")
        .arg(common::root().join("scripts/action/install.sh"))
        .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
        .env("STEPGATE_VERSION", "0.1.0rc1")
        .env("RUNNER_TEMP", d.path())
        .output()
        .unwrap();
    assert_ne!(out.status.code(), Some(0));
    assert!(std::fs::read_to_string(&log).unwrap().contains("-m venv"));
}

/// The round trip a reviewer makes: the Action gates a pull request against the main
/// branch's history (a dataset `stepgate export` built), finds a regression and posts the
/// accept command; the reviewer runs that command as posted (in the downloaded artifact,
/// the reason filled in); the next run of the Action on the same capture passes and says
/// who accepted it, when and why.
#[test]
fn an_accepted_regression_passes_the_next_run_of_the_action() {
    let r = Runner::new();
    let ds = crate::decisions::main_history(r.dir.path(), 3);
    let cand = r.path("fp8.sqlite");
    crate::decisions::report(&cand, 10, 1.25);
    let inputs = [
        ("REPORT", cand.to_str().unwrap()),
        ("HISTORY", ds.as_str()),
        ("WHERE", "label.branch=main"),
        ("ARTIFACT_NAME", "perf-gate"),
    ];
    let env = [("GITHUB_RUN_ID", "4242")];
    let first = r.gate_env("pull_request", &inputs, &env);
    assert_eq!(first.code, 1, "{}", first.stdout);
    assert_eq!(first.output("verdict"), "regression");
    let made = r.gate_comments();
    assert_eq!(made.len(), 1);
    let body = made[0]["body"].as_str().unwrap().to_owned();
    let placeholder = "'what the change buys, why it is intended'";
    assert_eq!(
        accept_commands(&body),
        [
            "gh run download 4242 --repo octo/llm-server --name=perf-gate --dir stepgate-gate && cd stepgate-gate".to_owned(),
            format!("stepgate accept gate.json --history={ds} --reason {placeholder}"),
        ]
    );
    assert!(
        body.contains("the artifact `perf-gate` of this run"),
        "{body}"
    );
    assert!(
        body.contains("this run becomes the reference of later gates against that history"),
        "{body}"
    );

    // The reviewer runs the posted command where the artifact's files are (the Action's
    // output directory holds what it uploads), their reason in place of the placeholder,
    // as themselves ($GITHUB_ACTOR, as in a workflow_dispatch job).
    let reason = "fp8 KV cache costs 25% step time, trades for 2x capacity";
    let line = accept_commands(&body)[1].replace(placeholder, &format!("'{reason}'"));
    let out_dir = Path::new(first.output("json")).parent().unwrap().to_owned();
    let ran = Command::new("bash")
        .args(["-c", &line])
        .current_dir(&out_dir)
        .env("PATH", format!("{}:/usr/bin:/bin", r.path("bin").display()))
        .env("GITHUB_ACTOR", "carol")
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&ran.stdout);
    assert_eq!(
        ran.status.code(),
        Some(0),
        "{said}{}",
        String::from_utf8_lossy(&ran.stderr)
    );
    let gate_json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out_dir.join("gate.json")).unwrap()).unwrap();
    let run_id = gate_json["source"]["candidate"]["run_id"].as_str().unwrap();
    assert!(said.starts_with("accepted by carol at "), "{said}");
    assert!(said.contains(run_id), "{said}");
    let file = std::fs::read_dir(Path::new(&ds).join("decisions"))
        .unwrap()
        .flatten()
        .next()
        .unwrap()
        .path();
    let d: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
    assert_eq!(d["by"], "carol");
    assert_eq!(d["reason"], reason);
    assert_eq!(d["run_id"], run_id);
    assert!(
        d["metrics"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m == "wall_ns"),
        "{d}"
    );

    // The next push of the same capture: the accepted run is the reference of the metrics
    // it covers, so the gate passes, and the comment (the same one) says why.
    let second = r.gate_env("pull_request", &inputs, &env);
    assert_eq!(second.code, 0, "{}", second.stdout);
    assert_eq!(second.output("verdict"), "pass");
    assert_eq!(second.output("exit-code"), "0");
    let now = r.gate_comments();
    assert_eq!(now.len(), 1);
    assert_eq!(now[0]["id"], made[0]["id"]);
    let body = now[0]["body"].as_str().unwrap();
    assert!(
        body.starts_with(&format!("{MARKER}\n### ✅ Pass")),
        "{body}"
    );
    let today = &d["at"].as_str().unwrap()[..10];
    assert!(
        body.contains(&format!("accepted on {today} by carol: '{reason}'")),
        "{body}"
    );
    assert!(!body.contains("Accepting this regression"), "{body}");
    // The step times moved with their kernel breakdown: the waterfall still adds up.
    assert!(body.contains("rows sum to +0.0 µs, exact"), "{body}");
}
