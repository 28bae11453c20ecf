//! Capturing a server under nsys: the CUDA profiler range armed and handed to `steps`, and every way the capture range or the server can fail.

use super::*;

pub(super) const PROFILE_ARGS: [&str; 8] = [
    "-t",
    "cuda,nvtx,osrt",
    "--cuda-graph-trace=node",
    "-c",
    "cudaProfilerApi",
    "--capture-range-end",
    "stop",
    "-o",
];

pub(super) struct NsysRun {
    pub(super) run: Run,
    pub(super) log: Vec<Vec<String>>,
    pub(super) server_pid: Option<u32>,
    pub(super) base: PathBuf,
}

pub(super) fn under_nsys(
    eng_url: &str,
    engine: &str,
    extra: &[&str],
    server: &[&str],
    envs: &[(&str, String)],
    t: &Path,
) -> NsysRun {
    let base = t.join("run");
    let log = t.join("nsys.log");
    let pidfile = t.join("server.pid");
    let mut args = vec![
        "capture",
        "--engine",
        engine,
        "--url",
        eng_url,
        "--hold",
        "0.2",
        "--shutdown-grace",
        "5",
    ];
    let base_s = base.display().to_string();
    args.extend(["--nsys-out", &base_s]);
    args.extend(extra);
    args.push("--");
    let fs = fake_server();
    args.push(&fs);
    args.extend(server);
    let mut env = vec![
        ("PATH", path_with_fake_nsys()),
        ("FAKE_NSYS_LOG", log.display().to_string()),
        ("FAKE_SERVER_PIDFILE", pidfile.display().to_string()),
    ];
    env.extend(envs.iter().cloned());
    let run = stepgate(&args, &env, t);
    let server_pid = std::fs::read_to_string(&pidfile)
        .ok()
        .and_then(|s| s.trim().parse().ok());
    NsysRun {
        run,
        log: nsys_log(&log),
        server_pid,
        base,
    }
}

#[test]
fn vllm_under_nsys_end_to_end() {
    let t = tmp();
    let marker = t.path().join("range");
    let eng = FakeEngine::start(Behaviour {
        vllm_profiler: Some("cuda"),
        range_marker: Some(marker.clone()),
        ready_after: Duration::from_millis(400),
        ..Behaviour::vllm()
    });
    let server = [
        "vllm",
        "serve",
        "meta-llama/Meta-Llama-3-8B-Instruct",
        "--profiler-config.profiler=cuda",
    ];
    let n = under_nsys(
        &eng.url,
        "vllm",
        &[],
        &server,
        &[("FAKE_NSYS_RANGE_MARKER", marker.display().to_string())],
        t.path(),
    );
    assert_eq!(n.run.code, 0, "{}", n.run.stderr);
    // The exact nsys invocation, as an argv (the model name survives as one argument).
    let mut want: Vec<String> = vec!["profile".into()];
    want.extend(PROFILE_ARGS.iter().map(|s| s.to_string()));
    want.push(n.base.display().to_string());
    want.push(fake_server());
    want.extend(server.iter().map(|s| s.to_string()));
    assert_eq!(n.log[0], want);
    let rep = format!("{}.nsys-rep", n.base.display());
    let sqlite = format!("{}.sqlite", n.base.display());
    assert_eq!(
        n.log[1],
        vec![
            "export",
            "--type",
            "sqlite",
            "--force-overwrite",
            "true",
            "-o",
            &sqlite,
            &rep
        ]
    );
    assert!(Path::new(&rep).is_file() && Path::new(&sqlite).is_file());
    assert!(n.run.stdout.contains(&sqlite), "{}", n.run.stdout);
    // vLLM: stop sent after start; the server's process group is gone.
    assert!(
        eng.index("POST", "/start_profile").unwrap() < eng.index("POST", "/stop_profile").unwrap()
    );
    assert!(gone(n.server_pid.expect("server started")));
}

#[test]
fn vllm_server_command_without_cuda_profiler_exit_4_before_starting() {
    let t = tmp();
    let eng = FakeEngine::start(Behaviour::vllm());
    let n = under_nsys(
        &eng.url,
        "vllm",
        &[],
        &["vllm", "serve", "m", "--profiler-config.profiler=torch"],
        &[],
        t.path(),
    );
    assert_eq!(n.run.code, 4);
    assert!(
        n.run.stderr.contains("--profiler-config.profiler=cuda"),
        "{}",
        n.run.stderr
    );
    assert!(n.log.is_empty(), "nsys must not have started");
    assert!(eng.log().is_empty());
}

#[test]
fn sglang_under_nsys_arms_cuda_profiler_and_hands_off_to_steps() {
    let t = tmp();
    let marker = t.path().join("range");
    let fixture = common::fixture("nsys/sglang_decode_mi300x_converted_nsys2026.2.sqlite");
    let eng = FakeEngine::start(Behaviour {
        range_marker: Some(marker.clone()),
        ..Behaviour::sglang()
    });
    let n = under_nsys(
        &eng.url,
        "sglang",
        &[
            "--drive",
            "--concurrency",
            "2",
            "--warmup",
            "0.1",
            "--num-steps",
            "4",
            "--then",
            "steps",
        ],
        &["python3", "-m", "sglang.launch_server", "--model-path", "m"],
        &[
            ("FAKE_NSYS_RANGE_MARKER", marker.display().to_string()),
            ("FAKE_NSYS_EXPORT_FROM", fixture.display().to_string()),
        ],
        t.path(),
    );
    let start = eng.index("POST", "/start_profile").expect("armed");
    let body: Value = serde_json::from_str(&eng.log()[start].body).unwrap();
    assert_eq!(body["activities"], serde_json::json!(["CUDA_PROFILER"]));
    assert_eq!(body["num_steps"], 4);
    assert_eq!(eng.count("GET", "/health"), 0);
    // What SGLang needs under nsys is said.
    assert!(
        n.run.stderr.contains("SGLANG_ENABLE_NVTX_SCHEDULER=1"),
        "{}",
        n.run.stderr
    );
    assert!(n.run.stderr.contains("first GPU only"), "{}", n.run.stderr);
    // The export is the fixture, byte for byte, and `steps` got it.
    let sqlite = format!("{}.sqlite", n.base.display());
    assert_eq!(
        std::fs::read(&sqlite).unwrap(),
        std::fs::read(&fixture).unwrap()
    );
    assert!(
        n.run
            .stderr
            .contains(&format!("then: stepgate steps {sqlite}")),
        "{}",
        n.run.stderr
    );
    // The driven load is written beside the report, as given on the command line (the
    // default --max-tokens 128; no prompt token count: only the engine's tokenizer knows it).
    let side = format!("{}.capture.json", n.base.display());
    let j: Value = serde_json::from_str(&std::fs::read_to_string(&side).unwrap()).unwrap();
    assert_eq!(j["schema"], "stepgate.capture");
    assert_eq!(j["engine"], "sglang");
    assert_eq!(j["drive"]["concurrency"], 2);
    assert_eq!(j["drive"]["output_tokens"], 128);
    assert!(j["drive"]["prompt_tokens"].is_null());
    // `steps` ran on the export and found its one SGLang decode step, as it does directly.
    let direct = common::run(&["steps", &sqlite]);
    assert_eq!((n.run.code, direct.0), (0, 0), "{}", n.run.stderr);
    assert!(
        n.run.stdout.contains("1 steps by engine"),
        "{}",
        n.run.stdout
    );
    assert!(gone(n.server_pid.unwrap()));
}

#[test]
fn no_report_when_the_capture_range_never_opened_exit_4() {
    let t = tmp();
    let marker = t.path().join("range");
    // The engine answers 200 but never "calls cudaProfilerStart" (marker left unset).
    let eng = FakeEngine::start(Behaviour {
        vllm_profiler: Some("cuda"),
        ..Behaviour::vllm()
    });
    let n = under_nsys(
        &eng.url,
        "vllm",
        &[],
        &["vllm", "serve", "m", "--profiler-config.profiler=cuda"],
        &[("FAKE_NSYS_RANGE_MARKER", marker.display().to_string())],
        t.path(),
    );
    assert_eq!(n.run.code, 4);
    assert!(
        n.run.stderr.contains("nsys wrote no") && n.run.stderr.contains("capture range never"),
        "{}",
        n.run.stderr
    );
    assert_eq!(n.log.len(), 1, "no export without a report");
    assert!(gone(n.server_pid.unwrap()));
}

#[test]
fn error_after_start_still_shuts_the_server_down() {
    let t = tmp();
    // Ready only after a moment, so the server process has written its pid before the
    // arming fails (on a loaded machine the failure could otherwise beat its first line).
    let eng = FakeEngine::start(Behaviour {
        vllm_profiler: Some("cuda"),
        pre_armed: true,
        ready_after: Duration::from_millis(800),
        ..Behaviour::vllm()
    });
    let n = under_nsys(
        &eng.url,
        "vllm",
        &[],
        &["vllm", "serve", "m", "--profiler-config.profiler=cuda"],
        &[],
        t.path(),
    );
    assert_eq!(n.run.code, 4);
    assert!(n.run.stderr.contains("already active"), "{}", n.run.stderr);
    assert!(gone(n.server_pid.expect("server started")));
}

#[test]
fn server_exiting_early_exit_4() {
    let t = tmp();
    let eng = FakeEngine::start(Behaviour {
        ready_after: Duration::from_secs(3600),
        ..Behaviour::vllm()
    });
    let n = under_nsys(
        &eng.url,
        "vllm",
        &[],
        &["vllm", "serve", "m", "--profiler-config.profiler=cuda"],
        &[("FAKE_SERVER_EXIT", "3".into())],
        t.path(),
    );
    assert_eq!(n.run.code, 4);
    assert!(
        n.run.stderr.contains("server command exited"),
        "{}",
        n.run.stderr
    );
}

#[test]
fn nsys_not_installed_exit_4() {
    let t = tmp();
    let empty = t.path().join("empty-bin");
    std::fs::create_dir(&empty).unwrap();
    let r = stepgate(
        &[
            "capture",
            "--engine",
            "vllm",
            "--url",
            "http://127.0.0.1:9",
            "--nsys-out",
            "run",
            "--",
            "vllm",
            "serve",
            "m",
        ],
        &[("PATH", empty.display().to_string())],
        t.path(),
    );
    assert_eq!(r.code, 4);
    assert!(
        r.stderr.contains("nsys not found") && r.stderr.contains("--nsys"),
        "{}",
        r.stderr
    );
}
