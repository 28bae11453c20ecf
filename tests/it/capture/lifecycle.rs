//! Ctrl-C and the server group, the summary table, vLLM version switches, and TensorRT-LLM's iteration range under nsys.

use super::*;

#[test]
fn ctrl_c_shuts_the_server_group_down() {
    let t = tmp();
    // Never ready, so stepgate sits in its readiness loop until interrupted.
    let eng = FakeEngine::start(Behaviour {
        ready_after: Duration::from_secs(3600),
        ..Behaviour::vllm()
    });
    let pidfile = t.path().join("server.pid");
    let base = t.path().join("run").display().to_string();
    let fs = fake_server();
    let child = spawn(
        &[
            "capture",
            "--engine",
            "vllm",
            "--url",
            &eng.url,
            "--shutdown-grace",
            "5",
            "--nsys-out",
            &base,
            "--",
            &fs,
            "vllm",
            "serve",
            "m",
            "--profiler-config.profiler=cuda",
        ],
        &[
            ("PATH", path_with_fake_nsys()),
            ("FAKE_SERVER_PIDFILE", pidfile.display().to_string()),
        ],
        t.path(),
    );
    // Two events, not a sleep: the server has written its whole pid (the file exists before
    // `echo` fills it), and stepgate is in its readiness loop (the engine saw a probe), so
    // the signal lands where the test means it to.
    let until = Instant::now() + Duration::from_secs(20);
    let server_pid: u32 = loop {
        let pid = std::fs::read_to_string(&pidfile)
            .ok()
            .and_then(|s| s.trim().parse().ok());
        if let (Some(pid), true) = (pid, eng.count("GET", "/health") > 0) {
            break pid;
        }
        assert!(
            Instant::now() < until,
            "server never started or never probed"
        );
        thread::sleep(Duration::from_millis(20));
    };
    let ok = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(ok.success());
    let r = finish(child, t.path(), Duration::from_secs(30));
    assert_eq!(r.code, 4, "{}", r.stderr);
    assert!(r.stderr.contains("interrupted"), "{}", r.stderr);
    assert!(gone(server_pid));
    // The report nsys wrote on SIGINT is left for the user.
    assert!(Path::new(&format!("{base}.nsys-rep")).exists());
}

// ---------------------------------------------------------------- formatting

#[test]
fn summary_table_format() {
    use stepgate::wire::capture::{DriveCounts, Engine, Summary};
    let s = Summary {
        schema_version: 1,
        tool: stepgate::wire::meta::Tool::current(),
        engine: Engine::Sglang,
        url: "http://localhost:30000".into(),
        ready_via: "/ready".into(),
        ready_after_ms: 1234,
        start_profile_body: Some(
            serde_json::json!({"num_steps": 5, "activities": ["CUDA_PROFILER"]}),
        ),
        stopped_by: "engine (after num_steps = 5)".into(),
        drive: Some(DriveCounts {
            completed: 1500,
            failed: 0,
        }),
        operating_point: None,
        nsys_report: Some("run.nsys-rep".into()),
        sqlite: Some("run.sqlite".into()),
        traces: vec![],
        trace_note: None,
        notes: vec!["SGLang calls cudaProfilerStart on its first GPU only".into()],
    };
    insta::assert_snapshot!(stepgate::report::capture::render(
        &s,
        stepgate::report::Format::Table
    ));
}

#[test]
fn ctrl_c_while_sglang_blocks_leaves_no_engine_armed() {
    let t = tmp();
    let eng = FakeEngine::start(Behaviour::sglang());
    // No load, so SGLang's /start_profile blocks waiting for its steps.
    let child = spawn(
        &[
            "capture",
            "--engine",
            "sglang",
            "--url",
            &eng.url,
            "--num-steps",
            "5",
            "--timeout",
            "30",
        ],
        &[],
        t.path(),
    );
    let until = Instant::now() + Duration::from_secs(20);
    while eng.index("POST", "/start_profile").is_none() {
        assert!(Instant::now() < until, "never armed");
        thread::sleep(Duration::from_millis(20));
    }
    let ok = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(ok.success());
    let r = finish(child, t.path(), Duration::from_secs(30));
    assert_eq!(r.code, 4, "{}", r.stderr);
    assert!(r.stderr.contains("interrupted"), "{}", r.stderr);
    assert_eq!(
        eng.count("POST", "/stop_profile"),
        1,
        "the armed session was stopped"
    );
}

// ---------------------------------------------------------------- every vLLM version, TensorRT-LLM

#[test]
fn vllm_0_12_cuda_profile_variable_is_accepted_in_the_command_or_inherited() {
    for (server, envs) in [
        (
            vec!["env", "VLLM_TORCH_CUDA_PROFILE=1", "vllm", "serve", "m"],
            vec![],
        ),
        (
            vec!["vllm", "serve", "m"],
            vec![("VLLM_TORCH_CUDA_PROFILE", "1".to_owned())],
        ),
    ] {
        let t = tmp();
        let marker = t.path().join("range");
        let eng = FakeEngine::start(Behaviour {
            vllm_profiler: Some("cuda"),
            range_marker: Some(marker.clone()),
            ..Behaviour::vllm()
        });
        let mut env = envs.clone();
        env.push(("FAKE_NSYS_RANGE_MARKER", marker.display().to_string()));
        let n = under_nsys(&eng.url, "vllm", &[], &server, &env, t.path());
        assert_eq!(n.run.code, 0, "{server:?}: {}", n.run.stderr);
        assert!(n.run.stderr.contains("vLLM 0.12"), "{}", n.run.stderr);
        assert!(
            eng.index("POST", "/start_profile").unwrap()
                < eng.index("POST", "/stop_profile").unwrap()
        );
        assert!(Path::new(&format!("{}.sqlite", n.base.display())).is_file());
        assert!(gone(n.server_pid.unwrap()));
    }
}

#[test]
fn vllm_without_any_cuda_switch_names_each_versions_switch_exit_4() {
    let t = tmp();
    let eng = FakeEngine::start(Behaviour::vllm());
    let n = under_nsys(
        &eng.url,
        "vllm",
        &[],
        &["vllm", "serve", "m"],
        &[],
        t.path(),
    );
    assert_eq!(n.run.code, 4);
    for want in [
        "vLLM >= 0.13 needs --profiler-config.profiler=cuda",
        "vLLM 0.12",
        "VLLM_TORCH_CUDA_PROFILE=1",
        "before 0.12 has no CUDA-profiler mode",
        "--trace-dir",
    ] {
        assert!(n.run.stderr.contains(want), "{want}: {}", n.run.stderr);
    }
    // One line: the message says it all.
    let errs: Vec<&str> = n
        .run
        .stderr
        .lines()
        .filter(|l| l.contains("error"))
        .collect();
    assert_eq!(errs.len(), 1, "{}", n.run.stderr);
    assert!(n.log.is_empty(), "nsys must not have started");
    assert!(eng.log().is_empty());
}

#[test]
fn trtllm_runs_under_nsys_with_its_iteration_range_and_no_http_arming() {
    let t = tmp();
    let marker = t.path().join("range");
    let dump = t.path().join("server.env");
    let fixture = common::fixture("nsys/sglang_decode_mi300x_converted_nsys2026.2.sqlite");
    // --start-step 3 --num-steps 4: iterations 3-6; the engine opens the range at the 3rd.
    let eng = FakeEngine::start(Behaviour {
        range_marker: Some(marker.clone()),
        ..Behaviour::trtllm(3)
    });
    let n = under_nsys(
        &eng.url,
        "trtllm",
        &[
            "--start-step",
            "3",
            "--num-steps",
            "4",
            "--drive",
            "--concurrency",
            "2",
            "--warmup",
            "0.1",
            "--format",
            "json",
        ],
        &["trtllm-serve", "meta-llama/Meta-Llama-3-8B-Instruct"],
        &[
            ("FAKE_NSYS_RANGE_MARKER", marker.display().to_string()),
            ("FAKE_NSYS_EXPORT_FROM", fixture.display().to_string()),
            ("FAKE_SERVER_ENV_DUMP", dump.display().to_string()),
        ],
        t.path(),
    );
    assert_eq!(n.run.code, 0, "{}", n.run.stderr);
    // The server (under nsys) got the range in its environment.
    assert_eq!(std::fs::read_to_string(&dump).unwrap().trim(), "3-6");
    // The documented nsys invocation, and an export.
    let mut want: Vec<String> = vec!["profile".into()];
    want.extend(PROFILE_ARGS.iter().map(|s| s.to_string()));
    want.push(n.base.display().to_string());
    want.push(fake_server());
    want.extend(
        ["trtllm-serve", "meta-llama/Meta-Llama-3-8B-Instruct"]
            .iter()
            .map(|s| s.to_string()),
    );
    assert_eq!(n.log[0], want);
    assert_eq!(n.log[1][0], "export");
    // No HTTP arming; load was driven through the OpenAI route with the listed model.
    assert_eq!(eng.count("POST", "/start_profile"), 0);
    assert_eq!(eng.count("POST", "/stop_profile"), 0);
    let first = eng.index("POST", "/v1/completions").expect("load driven");
    let body: Value = serde_json::from_str(&eng.log()[first].body).unwrap();
    assert_eq!(body["model"], "fake/llama");
    let s: Value = serde_json::from_str(&n.run.stdout).unwrap();
    assert_eq!(s["engine"], "trtllm");
    assert!(s["start_profile_body"].is_null());
    assert!(
        s["stopped_by"]
            .as_str()
            .unwrap()
            .contains("TLLM_PROFILE_START_STOP=3-6"),
        "{s}"
    );
    assert!(s["sqlite"].as_str().unwrap().ends_with(".sqlite"));
    assert!(gone(n.server_pid.unwrap()));
}

#[test]
fn trtllm_range_never_reached_without_load_exit_4() {
    let t = tmp();
    let marker = t.path().join("range");
    let eng = FakeEngine::start(Behaviour {
        range_marker: Some(marker.clone()),
        ..Behaviour::trtllm(10)
    });
    let n = under_nsys(
        &eng.url,
        "trtllm",
        &["--num-steps", "5"],
        &["trtllm-serve", "m"],
        &[("FAKE_NSYS_RANGE_MARKER", marker.display().to_string())],
        t.path(),
    );
    assert_eq!(n.run.code, 4);
    assert!(
        n.run.stderr.contains("never reached iterations 10-14") && n.run.stderr.contains("--drive"),
        "{}",
        n.run.stderr
    );
    assert_eq!(n.log.len(), 1, "no export without a report");
    assert!(gone(n.server_pid.unwrap()));
}
