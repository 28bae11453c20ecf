//! `stepgate capture` given hostile input: engines that redirect elsewhere (never followed
//! off the engine's host and port), every duration and count flag out of range (refused
//! with the flag named, exit 2, never a panic), and flags checked before any work (a
//! missing `--baseline` or a bad `--url` port is found before a server starts or a
//! readiness wait begins). Everything stays on 127.0.0.1 and every wait is bounded.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use crate::common;

/// A loopback HTTP server answering each request with `answer(method, path)` = (status,
/// extra headers); it logs every request it saw. Lives as long as the test process needs.
struct Server {
    url: String,
    seen: Arc<Mutex<Vec<String>>>,
}

type Answer = fn(&str, &str, u16) -> (u16, String);

impl Server {
    fn start(answer: Answer) -> Server {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let s = seen.clone();
        thread::spawn(move || {
            for c in l.incoming().flatten() {
                let s = s.clone();
                thread::spawn(move || serve(c, answer, port, &s));
            }
        });
        Server {
            url: format!("http://127.0.0.1:{port}"),
            seen,
        }
    }

    fn seen(&self) -> Vec<String> {
        self.seen.lock().unwrap().clone()
    }
}

fn serve(c: TcpStream, answer: Answer, port: u16, seen: &Mutex<Vec<String>>) {
    c.set_read_timeout(Some(Duration::from_secs(5))).ok();
    let mut r = BufReader::new(c.try_clone().unwrap());
    let mut line = String::new();
    if r.read_line(&mut line).is_err() {
        return;
    }
    let mut it = line.split_whitespace();
    let (method, path) = (it.next().unwrap_or(""), it.next().unwrap_or(""));
    let mut len = 0;
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
    let mut body = vec![0; len];
    r.read_exact(&mut body).ok();
    seen.lock().unwrap().push(format!("{method} {path}"));
    let (code, headers) = answer(method, path, port);
    let mut c = c;
    let _ = write!(
        c,
        "HTTP/1.1 {code} X\r\n{headers}Content-Length: 0\r\nConnection: close\r\n\r\n"
    );
}

/// Where the off-host redirects point: a second loopback server that must see nothing.
static ELSEWHERE: std::sync::OnceLock<Server> = std::sync::OnceLock::new();

fn elsewhere() -> &'static Server {
    ELSEWHERE.get_or_init(|| Server::start(|_, _, _| (200, String::new())))
}

fn location(to: &str) -> String {
    format!("Location: {to}\r\n")
}

/// Run the binary with a 60 s bound (a hang is a failure, not a wait); (exit code, stderr).
fn capture(args: &[&str]) -> (i32, String) {
    let t0 = Instant::now();
    let mut child = std::process::Command::new(common::bin())
        .arg("capture")
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let until = t0 + Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > until {
            let _ = child.kill();
            panic!("capture {args:?} ran past 60 s");
        }
        thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The one error line (the last line of stderr, after any progress lines).
fn error_line(stderr: &str) -> &str {
    let last = stderr.lines().last().unwrap_or("");
    assert!(last.starts_with("stepgate: error: "), "{stderr}");
    last
}

// ---------------------------------------------------------------- redirects

#[test]
fn start_profile_redirected_to_another_port_is_refused_exit_4() {
    let other = elsewhere().url.clone();
    let eng = Server::start(|m, p, _| match (m, p) {
        ("GET", "/health") => (200, String::new()),
        ("POST", "/start_profile") => {
            let to = format!("{}/start_profile", ELSEWHERE.get().unwrap().url);
            (307, location(&to))
        }
        _ => (200, String::new()),
    });
    let before = elsewhere().seen().len();
    let (code, err) = capture(&["--engine", "vllm", "--url", &eng.url, "--hold", "0"]);
    assert_eq!(code, 4, "{err}");
    let line = error_line(&err);
    // Both addresses named: where it was sent, and where it was redirected to.
    assert!(
        line.contains(&format!("{}/start_profile", eng.url)),
        "{line}"
    );
    assert!(line.contains(&format!("{other}/start_profile")), "{line}");
    assert_eq!(
        elsewhere().seen().len(),
        before,
        "the other server was reached"
    );
}

#[test]
fn readiness_redirected_off_host_fails_at_once_not_after_ready_timeout() {
    let eng = Server::start(|_, p, _| {
        let to = format!("{}{p}", ELSEWHERE.get().unwrap().url);
        (302, location(&to))
    });
    elsewhere();
    let before = elsewhere().seen().len();
    let (code, err) = capture(&[
        "--engine",
        "sglang",
        "--url",
        &eng.url,
        "--ready-timeout",
        "300",
    ]);
    assert_eq!(code, 4, "{err}");
    // At once, not after the 300 s readiness wait: the engine was asked exactly once (a
    // retrying readiness loop would have asked again), counted rather than timed.
    assert_eq!(eng.seen().len(), 1, "{:?}", eng.seen());
    let line = error_line(&err);
    assert!(
        line.contains("redirected from") && line.contains(&elsewhere().url),
        "{line}"
    );
    assert_eq!(elsewhere().seen().len(), before);
}

#[test]
fn redirects_on_the_engine_itself_are_followed() {
    // 307 keeps the method and body; both hops stay on the engine's host and port.
    let eng = Server::start(|m, p, port| match (m, p) {
        ("GET", "/health") => (307, location(&format!("http://127.0.0.1:{port}/healthz"))),
        ("POST", "/start_profile") => (307, location("/v2/start_profile")),
        _ => (200, String::new()),
    });
    let (code, err) = capture(&["--engine", "vllm", "--url", &eng.url, "--hold", "0"]);
    assert_eq!(code, 0, "{err}");
    let seen = eng.seen();
    for r in [
        "GET /health",
        "GET /healthz",
        "POST /start_profile",
        "POST /v2/start_profile",
        "POST /stop_profile",
    ] {
        assert!(seen.iter().any(|s| s == r), "{r} not in {seen:?}");
    }
}

// ---------------------------------------------------------------- numbers

const DURATIONS: [&str; 7] = [
    "--hold",
    "--timeout",
    "--ready-timeout",
    "--warmup",
    "--trace-wait",
    "--shutdown-grace",
    "--export-timeout",
];

/// A capture that would start `touch MARKER` under nsys; every flag error must come first.
fn under_nsys_argv(dir: &std::path::Path) -> Vec<String> {
    [
        "--engine",
        "vllm",
        "--url",
        "http://127.0.0.1:9",
        "--nsys",
        "/nonexistent/nsys",
        "--nsys-out",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .chain([dir.join("r").display().to_string()])
    .collect()
}

fn with_server(mut argv: Vec<String>, extra: &[&str], marker: &std::path::Path) -> Vec<String> {
    argv.extend(extra.iter().map(|s| (*s).to_owned()));
    argv.extend(["--".into(), "touch".into(), marker.display().to_string()]);
    argv
}

#[test]
fn every_duration_flag_refuses_huge_negative_and_non_finite_values_exit_2() {
    let t = tempfile::tempdir().unwrap();
    let marker = t.path().join("server-ran");
    for flag in DURATIONS {
        // 1e30 s panicked Duration::from_secs_f64 (exit 101); -1 was "unexpected argument".
        for (value, says) in [
            ("1e30", "7 days"),
            ("604801", "7 days"),
            ("-1", "cannot be negative"),
            ("-0.5", "cannot be negative"),
            ("nan", "finite"),
            ("inf", "finite"),
        ] {
            let argv = with_server(under_nsys_argv(t.path()), &[flag, value], &marker);
            let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
            let (code, err) = capture(&argv);
            assert_eq!(code, 2, "{flag} {value}: {err}");
            let line = error_line(&err);
            assert!(
                line.starts_with(&format!("stepgate: error: {flag} ")) && line.contains(says),
                "{flag} {value}: {line}"
            );
            assert_eq!(err.lines().count(), 1, "{flag} {value}: {err}");
        }
    }
    // A week exactly is accepted (the next error is the missing nsys, exit 4).
    let argv = with_server(under_nsys_argv(t.path()), &["--hold", "604800"], &marker);
    let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
    let (code, err) = capture(&argv);
    assert_eq!(code, 4, "{err}");
    assert!(err.contains("nsys not found"), "{err}");
    assert!(!marker.exists(), "the server command ran");
}

#[test]
fn zeros_that_mean_nothing_are_refused_with_the_flag_named_exit_2() {
    let t = tempfile::tempdir().unwrap();
    let marker = t.path().join("server-ran");
    for (extra, starts) in [
        (&["--timeout", "0"][..], "--timeout 0"),
        (&["--shutdown-grace", "0"][..], "--shutdown-grace 0"),
        (&["--export-timeout", "0"][..], "--export-timeout 0"),
        (&["--drive", "--concurrency", "0"][..], "--concurrency 0"),
        (&["--drive", "--concurrency", "-3"][..], "--concurrency -3"),
        (
            &["--drive", "--concurrency", "100000"][..],
            "--concurrency 100000",
        ),
        (&["--drive", "--max-tokens", "0"][..], "--max-tokens 0"),
        (&["--drive", "--max-tokens", "-1"][..], "--max-tokens -1"),
        (&["--num-steps", "-1"][..], "--num-steps -1"),
        (&["--start-step", "-2"][..], "--start-step -2"),
        (
            &["--num-steps", "99999999999"][..],
            "--num-steps 99999999999",
        ),
    ] {
        let argv = with_server(under_nsys_argv(t.path()), extra, &marker);
        let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
        let (code, err) = capture(&argv);
        assert_eq!(code, 2, "{extra:?}: {err}");
        let line = error_line(&err);
        assert!(
            line.starts_with(&format!("stepgate: error: {starts}")),
            "{extra:?}: {line}"
        );
    }
    assert!(!marker.exists(), "the server command ran");
}

// ---------------------------------------------------------------- before any work

#[test]
fn a_missing_baseline_is_found_before_the_server_starts() {
    let t = tempfile::tempdir().unwrap();
    let marker = t.path().join("server-ran");
    let missing = t.path().join("no-such-baseline.json");
    let mut argv = under_nsys_argv(t.path());
    // A real nsys would be found; the baseline check must come before that anyway.
    argv[5] = "nsys".into();
    let argv = with_server(
        argv,
        &["--then", "gate", "--baseline", missing.to_str().unwrap()],
        &marker,
    );
    let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
    let (code, err) = capture(&argv);
    assert_eq!(code, 2, "{err}");
    let line = error_line(&err);
    assert!(
        line.contains("--baseline") && line.contains("no-such-baseline.json"),
        "{line}"
    );
    assert_eq!(err.lines().count(), 1, "progress before the refusal: {err}");
    assert!(!marker.exists(), "the server command ran");
}

#[test]
fn a_url_port_out_of_range_is_refused_before_the_readiness_wait() {
    for url in [
        "http://localhost:99999",
        "http://localhost:-1",
        "localhost:8000",
        "http://",
    ] {
        let (code, err) = capture(&["--engine", "vllm", "--url", url, "--ready-timeout", "600"]);
        assert_eq!(code, 2, "{url}: {err}");
        // Refused before the 600 s readiness wait: nothing was printed before the refusal
        // (the wait announces itself), rather than a wall-clock bound.
        assert_eq!(err.lines().count(), 1, "{url}: {err}");
        let line = error_line(&err);
        assert!(
            line.starts_with(&format!("stepgate: error: --url {url}:")),
            "{line}"
        );
        assert_eq!(err.lines().count(), 1, "{url}: {err}");
    }
}
