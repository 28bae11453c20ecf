//! The GitHub Action's gate step (scripts/action/gate.sh) under a fake GitHub: the job
//! summary, outputs and event payload are temporary files, `gh` is a fake that records
//! its calls and serves the pull request's comments from a JSON file (tests/action/gh),
//! and `stepgate` is this build. Every exit code comes from a real stepgate run: 0 and 1
//! on generated decode reports, 3 on a one-step fixture, 2 on a missing report, 4 on a
//! `.nsys-rep` with no nsys on PATH.

mod accept;
mod inputs;

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
