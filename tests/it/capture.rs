//! `stepgate capture` end to end against loopback engines that behave like vLLM and SGLang
//! (the routes, bodies and status codes their servers have; docs/capture.md) and a fake
//! `nsys` (tests/fake_nsys). Every failure path answers exit 4 with what to do.
//! Nothing here leaves 127.0.0.1; every wait is bounded.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common;

// ---------------------------------------------------------------- a fake engine on loopback

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Vllm,
    Sglang,
    /// trtllm-serve: OpenAI routes only, no profiler routes.
    Trtllm,
}

/// How the fake engine behaves.
#[derive(Debug, Clone)]
struct Behaviour {
    kind: Kind,
    /// /health (vLLM) or /ready (SGLang) answer 503 until this long after start.
    ready_after: Duration,
    /// vLLM: `--profiler-config.profiler` ("cuda", "torch"); None = routes absent (404).
    vllm_profiler: Option<&'static str>,
    /// A session is already active (409 / "already in progress").
    pre_armed: bool,
    /// vLLM torch profiler: where traces land (its torch_profiler_dir).
    vllm_trace_dir: Option<PathBuf>,
    /// Whether a torch trace file is written when the profiler stops.
    write_trace: bool,
    /// Created when the engine "calls cudaProfilerStart" (the fake nsys reads it).
    range_marker: Option<PathBuf>,
    /// Time one generation request (= one forward step here) takes.
    step: Duration,
    /// TensorRT-LLM: the iteration at which PyExecutor "calls cudaProfilerStart" (touches
    /// `range_marker`), as TLLM_PROFILE_START_STOP's first number tells it.
    trtllm_start_at: Option<u64>,
}

impl Behaviour {
    fn vllm() -> Self {
        Behaviour {
            kind: Kind::Vllm,
            ready_after: Duration::ZERO,
            vllm_profiler: Some("torch"),
            pre_armed: false,
            vllm_trace_dir: None,
            write_trace: true,
            range_marker: None,
            step: Duration::from_millis(5),
            trtllm_start_at: None,
        }
    }
    fn trtllm(start_at: u64) -> Self {
        Behaviour {
            kind: Kind::Trtllm,
            vllm_profiler: None,
            trtllm_start_at: Some(start_at),
            ..Behaviour::vllm()
        }
    }
    fn sglang() -> Self {
        Behaviour {
            kind: Kind::Sglang,
            vllm_profiler: None,
            ..Behaviour::vllm()
        }
    }
}

#[derive(Debug, Clone)]
struct Req {
    method: String,
    path: String,
    body: String,
}

#[derive(Debug)]
struct State {
    started: Instant,
    log: Vec<Req>,
    active: bool,
    forward_ct: u64,
    traces_written: Vec<PathBuf>,
}

struct FakeEngine {
    url: String,
    state: Arc<Mutex<State>>,
    stop: Arc<AtomicBool>,
}

impl Drop for FakeEngine {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

impl FakeEngine {
    fn start(b: Behaviour) -> FakeEngine {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
        let url = format!("http://{}", listener.local_addr().unwrap());
        listener.set_nonblocking(true).unwrap();
        let state = Arc::new(Mutex::new(State {
            started: Instant::now(),
            log: Vec::new(),
            active: b.pre_armed,
            forward_ct: 0,
            traces_written: Vec::new(),
        }));
        let stop = Arc::new(AtomicBool::new(false));
        let (st, sp) = (state.clone(), stop.clone());
        // Accept loop: ends when the FakeEngine is dropped, or after 120 s at the latest.
        thread::spawn(move || {
            let until = Instant::now() + Duration::from_secs(120);
            while !sp.load(Ordering::SeqCst) && Instant::now() < until {
                match listener.accept() {
                    Ok((s, _)) => {
                        let (st, b, sp) = (st.clone(), b.clone(), sp.clone());
                        thread::spawn(move || serve(s, &b, &st, &sp));
                    }
                    Err(_) => thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        FakeEngine { url, state, stop }
    }

    fn log(&self) -> Vec<Req> {
        self.state.lock().unwrap().log.clone()
    }

    fn traces(&self) -> Vec<PathBuf> {
        self.state.lock().unwrap().traces_written.clone()
    }

    fn index(&self, method: &str, path: &str) -> Option<usize> {
        self.log()
            .iter()
            .position(|r| r.method == method && r.path == path)
    }

    fn count(&self, method: &str, path: &str) -> usize {
        self.log()
            .iter()
            .filter(|r| r.method == method && r.path == path)
            .count()
    }
}

fn serve(s: TcpStream, b: &Behaviour, st: &Mutex<State>, stop: &AtomicBool) {
    s.set_nonblocking(false).ok();
    s.set_read_timeout(Some(Duration::from_secs(5))).ok();
    let mut r = BufReader::new(s.try_clone().unwrap());
    let mut line = String::new();
    if r.read_line(&mut line).is_err() || line.is_empty() {
        return;
    }
    let mut parts = line.split_whitespace();
    let method = parts.next().unwrap_or("").to_owned();
    let path = parts.next().unwrap_or("").to_owned();
    let mut len = 0usize;
    loop {
        let mut h = String::new();
        if r.read_line(&mut h).is_err() || h == "\r\n" || h.is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            if k.eq_ignore_ascii_case("content-length") {
                len = v.trim().parse().unwrap_or(0);
            }
        }
    }
    let mut body = vec![0u8; len];
    r.read_exact(&mut body).ok();
    let body = String::from_utf8_lossy(&body).into_owned();
    st.lock().unwrap().log.push(Req {
        method: method.clone(),
        path: path.clone(),
        body: body.clone(),
    });
    let (code, text) = route(b, st, stop, &method, &path, &body);
    let reason = match code {
        200 => "OK",
        404 => "Not Found",
        409 => "Conflict",
        500 => "Internal Server Error",
        _ => "Service Unavailable",
    };
    let mut s = s;
    let _ = write!(
        s,
        "HTTP/1.1 {code} {reason}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{text}",
        text.len()
    );
}

fn write_trace(b: &Behaviour, st: &Mutex<State>, dir: Option<&Path>, name: &str) {
    if let (true, Some(d)) = (b.write_trace, dir) {
        let p = d.join(name);
        std::fs::write(&p, b"{\"traceEvents\": []}").unwrap();
        st.lock().unwrap().traces_written.push(p);
    }
}

fn touch_marker(b: &Behaviour) {
    if let Some(m) = &b.range_marker {
        std::fs::write(m, b"cudaProfilerStart").unwrap();
    }
}

fn route(
    b: &Behaviour,
    st: &Mutex<State>,
    stop: &AtomicBool,
    method: &str,
    path: &str,
    body: &str,
) -> (u16, String) {
    let ready = st.lock().unwrap().started.elapsed() >= b.ready_after;
    match (b.kind, method, path) {
        // vLLM (`vllm/entrypoints/serve/profile/api_router.py`)
        (Kind::Vllm, "GET", "/health") => (if ready { 200 } else { 503 }, String::new()),
        (Kind::Vllm, "GET", "/v1/models") => (
            200,
            r#"{"object":"list","data":[{"id":"fake/llama"}]}"#.into(),
        ),
        (Kind::Vllm, "POST", "/v1/completions") => {
            thread::sleep(b.step);
            st.lock().unwrap().forward_ct += 1;
            (200, r#"{"choices":[{"text":" 1 2 3"}]}"#.into())
        }
        (Kind::Vllm, "POST", "/start_profile" | "/stop_profile") if b.vllm_profiler.is_none() => {
            (404, r#"{"detail":"Not Found"}"#.into())
        }
        (Kind::Vllm, "POST", "/start_profile") => {
            let mut s = st.lock().unwrap();
            if s.active {
                return (409, r#"{"error":"A profiling session is already active. Call /stop_profile before starting another session."}"#.into());
            }
            s.active = true;
            drop(s);
            if b.vllm_profiler == Some("cuda") {
                touch_marker(b);
            }
            (200, String::new())
        }
        (Kind::Vllm, "POST", "/stop_profile") => {
            st.lock().unwrap().active = false;
            if b.vllm_profiler == Some("torch") {
                write_trace(
                    b,
                    st,
                    b.vllm_trace_dir.as_deref(),
                    "dp0_pp0_tp0_dcp0_ep0_rank0.1.pt.trace.json.gz",
                );
            }
            (200, String::new())
        }
        // trtllm-serve: OpenAI routes; iterations run only while requests come in.
        (Kind::Trtllm, "GET", "/health") => (if ready { 200 } else { 503 }, String::new()),
        (Kind::Trtllm, "GET", "/v1/models") => (
            200,
            r#"{"object":"list","data":[{"id":"fake/llama"}]}"#.into(),
        ),
        (Kind::Trtllm, "POST", "/v1/completions") => {
            thread::sleep(b.step);
            let mut s = st.lock().unwrap();
            s.forward_ct += 1;
            if b.trtllm_start_at.is_some_and(|a| s.forward_ct >= a) {
                touch_marker(b);
            }
            (200, r#"{"choices":[{"text":" 1 2 3"}]}"#.into())
        }
        // SGLang (`sglang/srt/entrypoints/http_server.py`)
        (Kind::Sglang, "GET", "/ready") => (if ready { 200 } else { 503 }, String::new()),
        (Kind::Sglang, "GET", "/model_info") => (200, r#"{"model_path":"fake/llama"}"#.into()),
        (Kind::Sglang, "GET", "/health") => (200, String::new()),
        (Kind::Sglang, "POST", "/generate") => {
            thread::sleep(b.step);
            st.lock().unwrap().forward_ct += 1;
            (200, r#"{"text":" 1 2 3"}"#.into())
        }
        (Kind::Sglang, _, "/start_profile") => {
            let req: Value =
                serde_json::from_str(if body.is_empty() { "{}" } else { body }).unwrap();
            let mut s = st.lock().unwrap();
            if s.active {
                return (
                    500,
                    "Profiling is already in progress. Call /stop_profile first.".into(),
                );
            }
            s.active = true;
            let acts: Vec<String> = req["activities"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|x| x.as_str().map(str::to_owned))
                        .collect()
                })
                .unwrap_or_else(|| vec!["CPU".into(), "GPU".into()]);
            if acts.iter().any(|a| a == "CUDA_PROFILER") {
                touch_marker(b);
            }
            let Some(n) = req["num_steps"].as_u64() else {
                return (200, "Start profiling.\n".into());
            };
            // num_steps without start_step: target = current forward count + num_steps + 1;
            // the answer comes only after the steps ran (sglang/profiler.py).
            let target = s.forward_ct + n + 1;
            drop(s);
            let until = Instant::now() + Duration::from_secs(20);
            while st.lock().unwrap().forward_ct < target {
                if stop.load(Ordering::SeqCst) || Instant::now() > until {
                    return (500, "fake engine gave up".into());
                }
                thread::sleep(Duration::from_millis(5));
            }
            st.lock().unwrap().active = false;
            if acts.iter().any(|a| a == "CPU" || a == "GPU") {
                let dir = req["output_dir"].as_str().map(PathBuf::from);
                write_trace(b, st, dir.as_deref(), "1700000000.1-TP-0.trace.json.gz");
            }
            (200, "Start profiling.\n".into())
        }
        (Kind::Sglang, _, "/stop_profile") => {
            let mut s = st.lock().unwrap();
            if !s.active {
                return (
                    500,
                    "Profiling is not in progress. Call /start_profile first.".into(),
                );
            }
            s.active = false;
            (200, "Stop profiling. This will take some time.\n".into())
        }
        _ => (404, r#"{"detail":"Not Found"}"#.into()),
    }
}

// ---------------------------------------------------------------- running stepgate

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

fn fake_nsys_dir() -> PathBuf {
    common::root().join("tests").join("fake_nsys")
}

fn fake_server() -> String {
    fake_nsys_dir().join("fake-server").display().to_string()
}

/// PATH with the fake nsys first.
fn path_with_fake_nsys() -> String {
    format!(
        "{}:{}",
        fake_nsys_dir().display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

fn spawn(args: &[&str], envs: &[(&str, String)], dir: &Path) -> std::process::Child {
    let mut c = Command::new(common::bin());
    c.args(args)
        .stdout(Stdio::from(
            std::fs::File::create(dir.join("stdout")).unwrap(),
        ))
        .stderr(Stdio::from(
            std::fs::File::create(dir.join("stderr")).unwrap(),
        ))
        .env_remove("SGLANG_ENABLE_NVTX_SCHEDULER")
        .env_remove("VLLM_TORCH_CUDA_PROFILE")
        .env_remove("TLLM_PROFILE_START_STOP");
    for (k, v) in envs {
        c.env(k, v);
    }
    c.spawn().expect("spawn stepgate")
}

fn finish(mut child: std::process::Child, dir: &Path, limit: Duration) -> Run {
    let until = Instant::now() + limit;
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if Instant::now() > until {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "stepgate ran past {limit:?}; stderr:\n{}",
                std::fs::read_to_string(dir.join("stderr")).unwrap_or_default()
            );
        }
        thread::sleep(Duration::from_millis(20));
    };
    Run {
        code: status.code().unwrap_or(-1),
        stdout: std::fs::read_to_string(dir.join("stdout")).unwrap(),
        stderr: std::fs::read_to_string(dir.join("stderr")).unwrap(),
    }
}

/// Run stepgate with a 60 s bound.
fn stepgate(args: &[&str], envs: &[(&str, String)], dir: &Path) -> Run {
    let child = spawn(args, envs, dir);
    finish(child, dir, Duration::from_secs(60))
}

/// Whether a pid is gone (or only a zombie nobody reaped yet).
fn gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(s) => s
            .rsplit(')')
            .next()
            .map(|r| r.trim_start().starts_with('Z'))
            .unwrap_or(true),
    }
}

fn nsys_log(p: &Path) -> Vec<Vec<String>> {
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

fn tmp() -> tempfile::TempDir {
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

const PROFILE_ARGS: [&str; 8] = [
    "-t",
    "cuda,nvtx,osrt",
    "--cuda-graph-trace=node",
    "-c",
    "cudaProfilerApi",
    "--capture-range-end",
    "stop",
    "-o",
];

struct NsysRun {
    run: Run,
    log: Vec<Vec<String>>,
    server_pid: Option<u32>,
    base: PathBuf,
}

fn under_nsys(
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

#[test]
fn trtllm_flags_that_cannot_work_are_exit_2() {
    let t = tmp();
    // No HTTP control: without a server command under nsys there is nothing to do.
    let r = stepgate(&["capture", "--engine", "trtllm"], &[], t.path());
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("--nsys-out"), "{}", r.stderr);
    let base = t.path().join("r").display().to_string();
    for extra in [
        vec!["--num-steps", "0"],
        vec!["--by-stage"],
        vec!["--activities", "CPU"],
    ] {
        let mut args = vec!["capture", "--engine", "trtllm", "--nsys-out", &base];
        args.extend(extra.iter().copied());
        args.extend(["--", "trtllm-serve", "m"]);
        let r = stepgate(&args, &[("PATH", path_with_fake_nsys())], t.path());
        assert_eq!(r.code, 2, "{extra:?}: {}", r.stderr);
    }
}
