//! The GitHub Action's gate step (scripts/action/gate.sh) under a fake GitHub: the job
//! summary, outputs and event payload are temporary files, `gh` is a fake that records
//! its calls and serves the pull request's comments from a JSON file (tests/action/gh),
//! and `stepgate` is this build. Every exit code comes from a real stepgate run: 0 and 1
//! on generated decode reports, 3 on a one-step fixture, 2 on a missing report, 4 on a
//! `.nsys-rep` with no nsys on PATH.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common;

const MARKER: &str = "<!-- stepgate-gate -->";
const H100: &str = "NVIDIA H100 80GB HBM3";

/// A fake runner: temp files for GitHub's variables, a PATH with only this build's
/// stepgate, the fake gh, and the system's /usr/bin and /bin seen through a directory of
/// links that leaves `nsys` out (CI installs a real one; the exit-4 case needs none).
struct Runner {
    dir: tempfile::TempDir,
}

/// What one run of the gate step left behind.
struct Run {
    code: i32,
    stdout: String,
    summary: String,
    outputs: Vec<(String, String)>,
}

impl Run {
    fn output(&self, key: &str) -> &str {
        self.outputs
            .iter()
            .find(|(k, _)| k == key)
            .map_or_else(|| panic!("no output {key}: {:?}", self.outputs), |(_, v)| v)
    }
}

impl Runner {
    fn new() -> Runner {
        let r = Runner {
            dir: tempfile::tempdir().unwrap(),
        };
        let bin = r.path("bin");
        std::fs::create_dir(&bin).unwrap();
        std::os::unix::fs::symlink(common::bin(), bin.join("stepgate")).unwrap();
        std::os::unix::fs::symlink(common::root().join("tests/action/gh"), bin.join("gh")).unwrap();
        let sys = r.path("sys");
        std::fs::create_dir(&sys).unwrap();
        for dir in ["/usr/bin", "/bin"] {
            for e in std::fs::read_dir(dir).unwrap().flatten() {
                let name = e.file_name();
                let link = sys.join(&name);
                if name != "nsys" && !link.exists() {
                    std::os::unix::fs::symlink(e.path(), link).unwrap();
                }
            }
        }
        // Two comments already on the pull request: a person's that quotes the marker in
        // its text (not on its first line: never edited) and another bot's.
        let existing = serde_json::json!([
            {"id": 11, "body": format!("looks slow to me, see the bot:\n> {MARKER}"), "user": {"login": "alice"}},
            {"id": 12, "body": "<!-- other-bot -->\ncoverage 91%", "user": {"login": "codecov[bot]"}},
        ]);
        std::fs::write(r.path("comments.json"), existing.to_string()).unwrap();
        let event = serde_json::json!({"action": "synchronize", "number": 7, "pull_request": {"number": 7}});
        std::fs::write(r.path("event.json"), event.to_string()).unwrap();
        r
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// Run the gate step for a pull_request event with these inputs.
    /// Replace the stepgate on PATH with a script that writes a markdown report of
    /// `heading` and `rows` table rows, a JSON verdict, and exits `code`: a report of any
    /// size without generating one (the cuts are the scripts', whatever wrote it).
    fn fake_stepgate(&self, heading: &str, rows: u32, verdict: &str, code: i32) {
        let fake = self.path("bin/stepgate");
        std::fs::remove_file(&fake).unwrap();
        std::fs::write(
            &fake,
            format!(
                "#!/bin/bash\nwhile [ $# -gt 0 ]; do case \"$1\" in --markdown) md=$2;; --json) js=$2;; esac; shift; done\n\
                 {{ echo '{heading}'; for i in $(seq {rows}); do printf '| row %05d | %080d |\\n' $i 0; done; }} > \"$md\"\n\
                 echo '{{\"verdict\": \"{verdict}\"}}' > \"$js\"\nexit {code}\n"
            ),
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    fn gate(&self, inputs: &[(&str, &str)]) -> Run {
        self.gate_on("pull_request", inputs)
    }

    /// Run the gate step with these inputs (STEPGATE_* variables) for an event; fresh
    /// summary and output files each run, the comment store kept.
    fn gate_on(&self, event: &str, inputs: &[(&str, &str)]) -> Run {
        self.gate_env(event, inputs, &[])
    }

    /// `gate_on` with more of the runner's environment (`env`: variable, value).
    fn gate_env(&self, event: &str, inputs: &[(&str, &str)], env: &[(&str, &str)]) -> Run {
        for f in ["summary.md", "output.txt"] {
            std::fs::write(self.path(f), "").unwrap();
        }
        let mut cmd = Command::new("bash");
        cmd.arg(common::root().join("scripts/action/gate.sh"))
            .env_clear()
            .env(
                "PATH",
                format!(
                    "{}:{}",
                    self.path("bin").display(),
                    self.path("sys").display()
                ),
            )
            .env("HOME", self.dir.path())
            .env("RUNNER_TEMP", self.dir.path())
            .env("GITHUB_STEP_SUMMARY", self.path("summary.md"))
            .env("GITHUB_OUTPUT", self.path("output.txt"))
            .env("GITHUB_EVENT_NAME", event)
            .env("GITHUB_EVENT_PATH", self.path("event.json"))
            .env("GITHUB_REPOSITORY", "octo/llm-server")
            .env("GH_TOKEN", "fake-token")
            .env("FAKE_GH_STATE", self.path("comments.json"))
            .env("FAKE_GH_LOG", self.path("gh.log"))
            .current_dir(common::root());
        for (k, v) in inputs {
            cmd.env(format!("STEPGATE_{k}"), v);
        }
        cmd.envs(env.iter().copied());
        let out = cmd.output().unwrap();
        let outputs = std::fs::read_to_string(self.path("output.txt"))
            .unwrap()
            .lines()
            .map(|l| {
                let (k, v) = l.split_once('=').unwrap();
                (k.to_owned(), v.to_owned())
            })
            .collect();
        Run {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            summary: std::fs::read_to_string(self.path("summary.md")).unwrap(),
            outputs,
        }
    }

    /// The comments on the pull request now.
    fn comments(&self) -> Vec<serde_json::Value> {
        let s = std::fs::read_to_string(self.path("comments.json")).unwrap();
        serde_json::from_str::<Vec<serde_json::Value>>(&s).unwrap()
    }

    /// Every `gh` call so far but the `gh api user` look-ups: (argv, request body).
    fn gh_calls(&self) -> Vec<(Vec<String>, Option<String>)> {
        self.all_gh_calls()
            .into_iter()
            .filter(|(a, _)| a[1..] != ["user"])
            .collect()
    }

    /// Every `gh` call so far: (argv, request body).
    fn all_gh_calls(&self) -> Vec<(Vec<String>, Option<String>)> {
        let Ok(log) = std::fs::read_to_string(self.path("gh.log")) else {
            return Vec::new();
        };
        log.lines()
            .map(|l| {
                let v: serde_json::Value = serde_json::from_str(l).unwrap();
                let argv = v["argv"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|a| a.as_str().unwrap().to_owned())
                    .collect();
                (argv, v["body"].as_str().map(str::to_owned))
            })
            .collect()
    }

    /// The comments whose first line is the marker.
    fn gate_comments(&self) -> Vec<serde_json::Value> {
        self.comments()
            .into_iter()
            .filter(|c| c["body"].as_str().unwrap().starts_with(MARKER))
            .collect()
    }
}

/// The lines of the `sh` block a regression's comment carries (the accept command).
fn accept_commands(body: &str) -> Vec<&str> {
    let Some((_, rest)) = body.split_once("```sh\n") else {
        return Vec::new();
    };
    rest.split_once("\n```").unwrap().0.lines().collect()
}

fn method(argv: &[String]) -> &str {
    argv.iter()
        .position(|a| a == "--method")
        .map_or("GET", |i| argv[i + 1].as_str())
}

/// A recorded baseline and a report of the same decode workload, every kernel 30% slower.
fn regression_inputs(dir: &Path) -> (PathBuf, PathBuf) {
    let base = dir.join("base.sqlite");
    common::jittered_decode_report(&base, 24, 60, 1, H100, &|_| 1.0);
    let json = dir.join("base.json");
    let (code, _, err) = common::run(&[
        "baseline",
        "record",
        base.to_str().unwrap(),
        "-o",
        json.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let slow = dir.join("slow.sqlite");
    common::jittered_decode_report(&slow, 24, 60, 2, H100, &|_| 1.3);
    (json, slow)
}

#[test]
fn pass_then_regression_edit_one_comment() {
    let r = Runner::new();
    let example_base = common::root().join("baselines/example-h100-vllm-decode.json");
    let first = r.gate(&[
        ("REPORT", "examples/vllm_decode_synthetic_h100.sqlite"),
        ("BASELINE", example_base.to_str().unwrap()),
    ]);
    assert_eq!(first.code, 0, "{}", first.stdout);
    assert_eq!(first.output("verdict"), "pass");
    assert_eq!(first.output("exit-code"), "0");
    // The summary is the markdown the gate wrote, which the outputs name.
    let md = std::fs::read_to_string(first.output("markdown")).unwrap();
    assert!(md.starts_with("### ✅ Pass"), "{md}");
    assert_eq!(first.summary, md);
    for out in ["json", "html"] {
        assert!(
            Path::new(first.output(out)).metadata().unwrap().len() > 0,
            "{out}"
        );
    }
    let gate_json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(first.output("json")).unwrap()).unwrap();
    assert_eq!(gate_json["verdict"], "pass");
    // One listing, one POST to the pull request's comments, no edit.
    let calls = r.gh_calls();
    let methods: Vec<&str> = calls.iter().map(|(a, _)| method(a)).collect();
    assert_eq!(methods, ["GET", "POST"], "{calls:?}");
    assert!(calls[1]
        .0
        .contains(&"repos/octo/llm-server/issues/7/comments".to_owned()));
    let made = r.gate_comments();
    assert_eq!(made.len(), 1);
    let id = made[0]["id"].as_i64().unwrap();
    assert_eq!(first.output("comment-id"), id.to_string());
    assert_eq!(made[0]["body"].as_str().unwrap(), format!("{MARKER}\n{md}"));

    // Second push: a regression. The same comment is edited, none added.
    let (base, slow) = regression_inputs(r.dir.path());
    let second = r.gate(&[
        ("REPORT", slow.to_str().unwrap()),
        ("BASELINE", base.to_str().unwrap()),
    ]);
    assert_eq!(second.code, 1, "{}", second.stdout);
    assert_eq!(second.output("verdict"), "regression");
    assert_eq!(second.output("exit-code"), "1");
    assert!(
        second
            .stdout
            .contains("::error title=stepgate regression::❌ Regression — decode bs=32: wall +"),
        "{}",
        second.stdout
    );
    let md2 = std::fs::read_to_string(second.output("markdown")).unwrap();
    assert!(md2.starts_with("### ❌ Regression"), "{md2}");
    // The summary and the comment are the report, then how to accept it: against a
    // baseline file the record goes beside the comparison, which no later gate reads.
    let accept = second.summary.strip_prefix(md2.as_str()).unwrap();
    assert!(
        accept.starts_with("\n#### Accepting this regression\n"),
        "{accept}"
    );
    assert!(
        accept.contains("in the artifact `stepgate-gate` of this run"),
        "{accept}"
    );
    assert_eq!(
        accept_commands(accept),
        ["stepgate accept gate.json --reason 'what the change buys, why it is intended'"]
    );
    assert!(accept.contains("`gate.decision.json`"), "{accept}");
    let md2 = second.summary.clone();
    let calls = r.gh_calls();
    let methods: Vec<&str> = calls.iter().map(|(a, _)| method(a)).collect();
    assert_eq!(methods, ["GET", "POST", "GET", "PATCH"], "{calls:?}");
    assert!(calls[3]
        .0
        .contains(&format!("repos/octo/llm-server/issues/comments/{id}")));
    let now = r.gate_comments();
    assert_eq!(now.len(), 1, "{now:?}");
    assert_eq!(now[0]["id"].as_i64().unwrap(), id);
    assert_eq!(now[0]["body"].as_str().unwrap(), format!("{MARKER}\n{md2}"));
    assert_eq!(second.output("comment-id"), id.to_string());
    // The person's and the other bot's comments are untouched.
    let all = r.comments();
    assert_eq!(all.len(), 3);
    assert!(all[0]["body"].as_str().unwrap().starts_with("looks slow"));
    assert!(all[1]["body"].as_str().unwrap().contains("coverage 91%"));
}

#[test]
fn inconclusive_warns_unless_asked_to_fail() {
    let r = Runner::new();
    // One decode step on each side: fewer than 10, so exit 3.
    let fixture = common::fixture("kineto/sglang_mi300x_qwen3-8b_decode_step.json.gz");
    let base = r.path("one-step.json");
    // A baseline this small is refused unless the policy says warn.
    let warn = r.path("warn.toml");
    std::fs::write(&warn, "small_baseline = \"warn\"\n").unwrap();
    let (code, _, err) = common::run(&[
        "baseline",
        "record",
        fixture.to_str().unwrap(),
        "-o",
        base.to_str().unwrap(),
        "--policy",
        warn.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let inputs = [
        ("REPORT", fixture.to_str().unwrap()),
        ("BASELINE", base.to_str().unwrap()),
    ];
    let warn = r.gate(&inputs);
    assert_eq!(warn.code, 0, "{}", warn.stdout);
    assert_eq!(warn.output("verdict"), "inconclusive");
    assert_eq!(warn.output("exit-code"), "3");
    assert!(
        warn.stdout
            .contains("::warning title=stepgate inconclusive::"),
        "{}",
        warn.stdout
    );
    assert!(!warn.stdout.contains("::error"), "{}", warn.stdout);
    assert!(warn.summary.contains("Inconclusive"), "{}", warn.summary);

    let mut strict = inputs.to_vec();
    strict.push(("INCONCLUSIVE_FAILS", "true"));
    let fail = r.gate(&strict);
    assert_eq!(fail.code, 1, "{}", fail.stdout);
    assert_eq!(fail.output("exit-code"), "3");
    assert!(
        fail.stdout
            .contains("::error title=stepgate inconclusive::"),
        "{}",
        fail.stdout
    );
    // Both runs kept one comment.
    assert_eq!(r.gate_comments().len(), 1);
}

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

/// The Action's gate against a history in a bucket: main's runs exported to a local S3
/// server (moto, loopback, explicit test keys), the pull request's capture gated against
/// `s3://…` with the credentials as a workflow passes them (env), a regression found and
/// the accept command naming the bucket. Skips with one line where moto is not installed
/// (`STEPGATE_REQUIRE_S3=1`, set by `.ci/run`, makes that a failure).
#[test]
fn the_action_gates_a_pull_request_against_a_history_in_a_bucket() {
    let Some(m) = crate::object_store::moto() else {
        return;
    };
    let r = Runner::new();
    let ds = "s3://sg-test/perf/history";
    for seed in 1..=3 {
        let p = r.path(&format!("main{seed}.sqlite"));
        crate::decisions::report(&p, seed, 1.0);
        let o = crate::object_store::sg(
            m.port,
            &[
                "export",
                p.to_str().unwrap(),
                "-o",
                ds,
                "--label",
                "branch=main",
            ],
        );
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    let cand = r.path("pr.sqlite");
    crate::decisions::report(&cand, 10, 1.25);
    let endpoint = format!("http://127.0.0.1:{}", m.port);
    let env = [
        ("AWS_ACCESS_KEY_ID", "test"),
        ("AWS_SECRET_ACCESS_KEY", "test-secret-never-shown"),
        ("AWS_REGION", "us-east-1"),
        ("AWS_ENDPOINT_URL", endpoint.as_str()),
        ("AWS_ALLOW_HTTP", "true"),
        ("AWS_EC2_METADATA_DISABLED", "true"),
        ("GITHUB_RUN_ID", "77"),
    ];
    let inputs = [
        ("REPORT", cand.to_str().unwrap()),
        ("HISTORY", ds),
        ("WHERE", "label.branch=main"),
    ];
    let run = r.gate_env("pull_request", &inputs, &env);
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert_eq!(run.output("verdict"), "regression");
    // The history side is the bucket's three runs, said in the report.
    assert!(
        run.summary
            .contains(&format!("the last 3 matching run(s) of {ds}")),
        "{}",
        run.summary
    );
    let body = r.gate_comments()[0]["body"].as_str().unwrap().to_owned();
    assert!(
        accept_commands(&body)
            .iter()
            .any(|l| l.starts_with(&format!(
                "stepgate accept gate.json --history={ds} --reason "
            ))),
        "{body}"
    );
    // The credentials never reach what the Action writes.
    for text in [&run.summary, &run.stdout, &body] {
        assert!(!text.contains("test-secret-never-shown"));
    }
}
