//! `stepgate capture` end to end against loopback engines that behave like vLLM and SGLang
//! (the routes, bodies and status codes their servers have; docs/capture.md) and a fake
//! `nsys` (tests/fake_nsys). Every failure path answers exit 4 with what to do.
//! Nothing here leaves 127.0.0.1; every wait is bounded.

mod lifecycle;
mod served;
mod under_nsys;
use served::{gone, nsys_log, tmp};
use under_nsys::{under_nsys, PROFILE_ARGS};

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
