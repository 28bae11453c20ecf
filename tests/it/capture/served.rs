//! Capturing a served engine over HTTP: waiting for ready, arming and stopping its profiler, driving load, and the exit code of each way that fails.

use super::*;

/// Whether a pid is gone (or only a zombie nobody reaped yet).
pub(super) fn gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(s) => s
            .rsplit(')')
            .next()
            .map(|r| r.trim_start().starts_with('Z'))
            .unwrap_or(true),
    }
}

pub(super) fn nsys_log(p: &Path) -> Vec<Vec<String>> {
    let text = std::fs::read_to_string(p).unwrap_or_default();
    let mut calls: Vec<Vec<String>> = Vec::new();
    for l in text.lines() {
        if let Some(c) = l.strip_prefix("--- ") {
            calls.push(vec![c.to_owned()]);
        } else if let Some(last) = calls.last_mut() {
            last.push(l.to_owned());
        }
    }
    calls
}

pub(super) fn tmp() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

// ---------------------------------------------------------------- vLLM, no nsys

#[test]
fn vllm_waits_for_ready_arms_and_stops_and_finds_the_trace() {
    let t = tmp();
    let traces = t.path().join("traces");
    std::fs::create_dir(&traces).unwrap();
    let eng = FakeEngine::start(Behaviour {
        ready_after: Duration::from_millis(700),
        vllm_trace_dir: Some(traces.clone()),
        ..Behaviour::vllm()
    });
    let r = stepgate(
        &[
            "capture",
            "--engine",
            "vllm",
            "--url",
            &eng.url,
            "--num-steps",
            "5",
            "--start-step",
            "2",
            "--hold",
            "0.2",
            "--trace-dir",
            traces.to_str().unwrap(),
            "--trace-wait",
            "5",
        ],
        &[],
        t.path(),
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let log = eng.log();
    // Polled /health, saw 503 before the readiness delay ran out, then armed and stopped.
    assert!(eng.count("GET", "/health") >= 2, "{log:?}");
    let start = eng.index("POST", "/start_profile").unwrap();
    let stop = eng.index("POST", "/stop_profile").unwrap();
    assert!(start < stop);
    assert!(log[..start].iter().all(|r| r.path == "/health"));
    let body: Value = serde_json::from_str(&log[start].body).unwrap();
    assert_eq!(
        body,
        serde_json::json!({"max_iterations": 5, "delay_iterations": 2})
    );
    // The file the engine wrote is the one reported.
    let written = eng.traces();
    assert_eq!(written.len(), 1);
    assert!(
        r.stdout.contains(&written[0].display().to_string()),
        "{}",
        r.stdout
    );
}

#[test]
fn json_summary_validates_against_its_schema() {
    let t = tmp();
    let traces = t.path().join("traces");
    std::fs::create_dir(&traces).unwrap();
    let eng = FakeEngine::start(Behaviour {
        vllm_trace_dir: Some(traces.clone()),
        ..Behaviour::vllm()
    });
    let r = stepgate(
        &[
            "capture",
            "--engine",
            "vllm",
            "--url",
            &eng.url,
            "--num-steps",
            "5",
            "--hold",
            "0.2",
            "--trace-dir",
            traces.to_str().unwrap(),
            "--trace-wait",
            "5",
            "--format",
            "json",
        ],
        &[],
        t.path(),
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let v: Value = serde_json::from_str(&r.stdout).unwrap();
    crate::schema::assert_stamped("capture", &v, stepgate::capture::flow::SCHEMA_VERSION);
    assert_eq!(v["url"], eng.url.as_str());
    assert_eq!(v["traces"][0], eng.traces()[0].display().to_string());
}

#[test]
fn vllm_without_profiler_config_is_404_exit_4() {
    let t = tmp();
    let eng = FakeEngine::start(Behaviour {
        vllm_profiler: None,
        ..Behaviour::vllm()
    });
    let r = stepgate(
        &["capture", "--engine", "vllm", "--url", &eng.url],
        &[],
        t.path(),
    );
    assert_eq!(r.code, 4);
    assert!(
        r.stderr.contains("404") && r.stderr.contains("--profiler-config.profiler=cuda"),
        "{}",
        r.stderr
    );
}

#[test]
fn active_session_is_409_exit_4() {
    let t = tmp();
    let eng = FakeEngine::start(Behaviour {
        pre_armed: true,
        ..Behaviour::vllm()
    });
    let r = stepgate(
        &["capture", "--engine", "vllm", "--url", &eng.url],
        &[],
        t.path(),
    );
    assert_eq!(r.code, 4);
    assert!(
        r.stderr.contains("already active") && r.stderr.contains("/stop_profile"),
        "{}",
        r.stderr
    );
    // Never sent /stop_profile on somebody else's session.
    assert_eq!(eng.count("POST", "/stop_profile"), 0);
}

#[test]
fn sglang_already_in_progress_exit_4() {
    let t = tmp();
    let eng = FakeEngine::start(Behaviour {
        pre_armed: true,
        ..Behaviour::sglang()
    });
    let r = stepgate(
        &["capture", "--engine", "sglang", "--url", &eng.url],
        &[],
        t.path(),
    );
    assert_eq!(r.code, 4);
    assert!(r.stderr.contains("already active"), "{}", r.stderr);
}

#[test]
fn connection_refused_exit_4() {
    let t = tmp();
    // A port nobody listens on: bind, read the port, close.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}");
    let r = stepgate(
        &[
            "capture",
            "--engine",
            "vllm",
            "--url",
            &url,
            "--ready-timeout",
            "0.5",
        ],
        &[],
        t.path(),
    );
    assert_eq!(r.code, 4);
    assert!(
        r.stderr.contains("connection refused") && r.stderr.contains("--ready-timeout"),
        "{}",
        r.stderr
    );
}

#[test]
fn never_ready_times_out_exit_4() {
    let t = tmp();
    let eng = FakeEngine::start(Behaviour {
        ready_after: Duration::from_secs(3600),
        ..Behaviour::sglang()
    });
    let r = stepgate(
        &[
            "capture",
            "--engine",
            "sglang",
            "--url",
            &eng.url,
            "--ready-timeout",
            "0.6",
        ],
        &[],
        t.path(),
    );
    assert_eq!(r.code, 4);
    assert!(
        r.stderr.contains("not ready after 0.6 s") && r.stderr.contains("503"),
        "{}",
        r.stderr
    );
    assert_eq!(eng.count("POST", "/start_profile"), 0);
}

#[test]
fn engine_answered_but_no_trace_appeared_exit_4() {
    let t = tmp();
    let traces = t.path().join("traces");
    std::fs::create_dir(&traces).unwrap();
    let eng = FakeEngine::start(Behaviour {
        vllm_trace_dir: Some(traces.clone()),
        write_trace: false,
        ..Behaviour::vllm()
    });
    let r = stepgate(
        &[
            "capture",
            "--engine",
            "vllm",
            "--url",
            &eng.url,
            "--hold",
            "0.1",
            "--trace-dir",
            traces.to_str().unwrap(),
            "--trace-wait",
            "0.5",
        ],
        &[],
        t.path(),
    );
    assert_eq!(r.code, 4);
    assert!(r.stderr.contains("no trace appeared"), "{}", r.stderr);
    assert_eq!(eng.count("POST", "/stop_profile"), 1);
}

// ---------------------------------------------------------------- SGLang, no nsys

#[test]
fn sglang_drives_load_and_the_engine_stops_after_num_steps() {
    let t = tmp();
    let out = t.path().join("sg");
    let eng = FakeEngine::start(Behaviour {
        ready_after: Duration::from_millis(300),
        ..Behaviour::sglang()
    });
    let r = stepgate(
        &[
            "capture",
            "--engine",
            "sglang",
            "--url",
            &eng.url,
            "--num-steps",
            "6",
            "--drive",
            "--concurrency",
            "3",
            "--max-tokens",
            "9",
            "--warmup",
            "0.3",
            "--trace-dir",
            out.to_str().unwrap(),
            "--trace-wait",
            "5",
            "--timeout",
            "20",
            "--format",
            "json",
        ],
        &[],
        t.path(),
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let log = eng.log();
    let start = eng.index("POST", "/start_profile").unwrap();
    // Load was flowing before the profiler was armed.
    assert!(log[..start].iter().any(|r| r.path == "/generate"));
    let gen: Value =
        serde_json::from_str(&log[eng.index("POST", "/generate").unwrap()].body).unwrap();
    assert_eq!(gen["sampling_params"]["max_new_tokens"], 9);
    let body: Value = serde_json::from_str(&log[start].body).unwrap();
    assert_eq!(body["num_steps"], 6);
    assert_eq!(body["activities"], serde_json::json!(["CPU", "GPU"]));
    assert_eq!(body["profile_by_stage"], false);
    assert_eq!(body["output_dir"], out.display().to_string());
    // Auto-stop: no /stop_profile; and never /health, which would inject a generation.
    assert_eq!(eng.count("POST", "/stop_profile"), 0);
    assert_eq!(eng.count("GET", "/health"), 0);
    let summary: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(summary["schema_version"], 1);
    assert_eq!(summary["ready_via"], "/ready");
    assert_eq!(
        summary["traces"],
        serde_json::json!([eng.traces()[0].display().to_string()])
    );
    assert!(summary["drive"]["completed"].as_u64().unwrap() >= 7);
    // The operating point is what the engine received: the load, the prompt it was sent,
    // and no model (SGLang serves one).
    let point = &summary["operating_point"];
    assert_eq!(point["concurrency"], 3);
    assert_eq!(
        point["max_tokens"],
        gen["sampling_params"]["max_new_tokens"]
    );
    assert_eq!(point["prompt"], gen["text"]);
    assert!(point["prompt"].as_str().is_some_and(|p| !p.is_empty()));
    assert_eq!(point["model"], Value::Null);
}

#[test]
fn sglang_without_load_times_out_with_advice_exit_4() {
    let t = tmp();
    let eng = FakeEngine::start(Behaviour::sglang());
    let r = stepgate(
        &[
            "capture",
            "--engine",
            "sglang",
            "--url",
            &eng.url,
            "--num-steps",
            "3",
            "--timeout",
            "1",
        ],
        &[],
        t.path(),
    );
    assert_eq!(r.code, 4);
    assert!(
        r.stderr.contains("--drive") && r.stderr.contains("--timeout"),
        "{}",
        r.stderr
    );
}

#[test]
fn flags_that_cannot_work_are_exit_2() {
    let t = tmp();
    let r = stepgate(
        &["capture", "--engine", "vllm", "--by-stage"],
        &[],
        t.path(),
    );
    assert_eq!(r.code, 2, "{}", r.stderr);
    let r = stepgate(
        &[
            "capture",
            "--engine",
            "sglang",
            "--by-stage",
            "--num-steps",
            "0",
        ],
        &[],
        t.path(),
    );
    assert_eq!(r.code, 2, "{}", r.stderr);
}

// ---------------------------------------------------------------- under (fake) nsys
