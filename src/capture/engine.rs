//! One engine's HTTP control surface: readiness, `/start_profile`, `/stop_profile`, with every
//! failure turned into an exit-4 error that says what to do (docs/capture.md). Requests stay
//! on the engine's own host and port: a redirect elsewhere is an error, never followed, so
//! arming one server can never arm (or load) another.

use std::time::Duration;

use reqwest::blocking::{Client, Response};
use reqwest::{redirect, StatusCode, Url};
use serde_json::Value;

use crate::exit::{Error, Result};
use crate::wire::capture::Engine;

/// A client for one engine at one base URL.
#[derive(Debug, Clone)]
pub(crate) struct EngineClient {
    pub engine: Engine,
    pub base: String,
    pub timeout: Duration,
    http: Client,
}

/// Most redirects followed on the engine's own host and port (reqwest's default limit).
const MAX_REDIRECTS: usize = 10;

/// `--url` checked: http(s), a host, a valid port. Returns it without a trailing `/`.
pub(crate) fn parse_base(url: &str) -> Result<String> {
    let base = url.trim_end_matches('/');
    let bad = |why: &str| {
        Error::usage(format!(
            "--url {url}: {why}; give the engine's address, e.g. http://localhost:8000"
        ))
    };
    let parsed = Url::parse(base).map_err(|e| bad(&e.to_string()))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(bad("not an http(s) URL"));
    }
    if parsed.host_str().is_none_or(str::is_empty) {
        return Err(bad("no host"));
    }
    Ok(base.to_owned())
}

/// `scheme://host:port` of a URL, the unit a redirect must stay within.
fn origin(u: &Url) -> String {
    format!(
        "{}://{}:{}",
        u.scheme(),
        u.host_str().unwrap_or(""),
        u.port_or_known_default().unwrap_or(0)
    )
}

/// A redirect away from the engine's host and port, refused.
#[derive(Debug)]
struct OffHost {
    from: String,
    to: String,
}

impl std::fmt::Display for OffHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "redirected from {} to {}", self.from, self.to)
    }
}

impl std::error::Error for OffHost {}

/// The HTTP client every capture request goes through (control calls and driven load):
/// no proxy (an engine is addressed directly; an http_proxy in the environment must not
/// swallow requests to localhost) and redirects followed only on the first URL's host and
/// port.
pub(crate) fn http_client(timeout: Duration) -> Result<Client> {
    let policy = redirect::Policy::custom(|attempt| {
        let Some(first) = attempt.previous().first() else {
            return attempt.follow();
        };
        if origin(first) != origin(attempt.url()) {
            let off = OffHost {
                from: first.to_string(),
                to: attempt.url().to_string(),
            };
            return attempt.error(off);
        }
        if attempt.previous().len() > MAX_REDIRECTS {
            return attempt.error(format!("more than {MAX_REDIRECTS} redirects"));
        }
        attempt.follow()
    });
    Client::builder()
        .no_proxy()
        .redirect(policy)
        .timeout(timeout)
        .connect_timeout(Duration::from_secs(10).min(timeout))
        .build()
        .map_err(|e| Error::environment(format!("cannot build an HTTP client: {e}")))
}

/// One readiness poll.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ready {
    /// The engine answered 200 on this path.
    Yes(&'static str),
    /// Not yet, and why (connection refused, 503, ...).
    No(String),
}

impl EngineClient {
    /// `timeout` bounds every request (SGLang's `/start_profile` with `num_steps` answers only
    /// after the steps ran, so the default is long).
    pub fn new(engine: Engine, url: &str, timeout: Duration) -> Result<Self> {
        Ok(EngineClient {
            engine,
            base: parse_base(url)?,
            timeout,
            http: http_client(timeout)?,
        })
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// The readiness routes in the order tried. vLLM: `/health` (200, or 503 on a dead
    /// engine), else `/v1/models`. SGLang: `/ready`, else `/model_info` — never `/health`,
    /// which submits a 1-token generation and would land in an armed trace (`sglang/srt/entrypoints/http_server.py`).
    pub(crate) fn ready_paths(&self) -> &'static [&'static str] {
        match self.engine {
            Engine::Vllm | Engine::Trtllm => &["/health", "/v1/models"],
            Engine::Sglang => &["/ready", "/model_info"],
        }
    }

    /// Poll readiness once (short timeout per request). A redirect off the engine's host is
    /// an error at once: waiting would not change it.
    pub(crate) fn poll_ready(&self) -> Result<Ready> {
        let mut why = String::new();
        for path in self.ready_paths() {
            let r = self
                .http
                .get(self.url(path))
                .timeout(Duration::from_secs(5).min(self.timeout))
                .send();
            match r {
                Ok(resp) if resp.status() == StatusCode::OK => return Ok(Ready::Yes(path)),
                // A missing route: try the next one.
                Ok(resp) if resp.status() == StatusCode::NOT_FOUND => {
                    why = format!("GET {path} answered 404");
                }
                Ok(resp) => return Ok(Ready::No(format!("GET {path} answered {}", resp.status()))),
                Err(e) if e.is_redirect() => return Err(self.transport(&format!("GET {path}"), &e)),
                Err(e) => return Ok(Ready::No(describe(&e))),
            }
        }
        Ok(Ready::No(why))
    }

    /// `GET /v1/models` → the first model id (vLLM's completions need one).
    pub(crate) fn first_model(&self) -> Result<String> {
        let resp = self
            .http
            .get(self.url("/v1/models"))
            .send()
            .map_err(|e| self.transport("GET /v1/models", &e))?;
        let v: Value = resp.json().map_err(|e| {
            Error::environment(format!(
                "GET {} did not return a model list ({e}); pass --model NAME",
                self.url("/v1/models")
            ))
        })?;
        v["data"][0]["id"]
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| {
                Error::environment(format!(
                    "GET {} lists no model; pass --model NAME",
                    self.url("/v1/models")
                ))
            })
    }

    /// `POST /start_profile` with an optional JSON body; returns the response body.
    pub fn start_profile(&self, body: Option<&Value>) -> Result<String> {
        let mut req = self.http.post(self.url("/start_profile"));
        if let Some(b) = body {
            req = req.json(b);
        }
        let resp = req.send().map_err(|e| {
            if e.is_timeout() && self.engine == Engine::Sglang {
                Error::environment(format!(
                    "POST {} got no answer within {} s: SGLang answers only after num_steps \
                     forward steps ran, so keep requests flowing (--drive) and raise --timeout",
                    self.url("/start_profile"),
                    self.timeout.as_secs_f64()
                ))
            } else {
                self.transport("POST /start_profile", &e)
            }
        })?;
        self.expect_ok("/start_profile", resp)
    }

    /// `POST /stop_profile` (no body); returns the response body.
    pub fn stop_profile(&self) -> Result<String> {
        let resp = self
            .http
            .post(self.url("/stop_profile"))
            .send()
            .map_err(|e| self.transport("POST /stop_profile", &e))?;
        self.expect_ok("/stop_profile", resp)
    }

    fn expect_ok(&self, path: &str, resp: Response) -> Result<String> {
        let status = resp.status();
        let body = resp.text().unwrap_or_default();
        if status == StatusCode::OK {
            return Ok(body);
        }
        Err(Error::environment(self.status_message(path, status, &body)))
    }

    /// What a non-200 answer means and what to do.
    pub(crate) fn status_message(&self, path: &str, status: StatusCode, body: &str) -> String {
        let url = self.url(path);
        let excerpt: String = body.trim().chars().take(200).collect();
        let already = status == StatusCode::CONFLICT || body.contains("already in progress");
        match (self.engine, path, status) {
            (_, "/start_profile", _) if already => format!(
                "a profiling session is already active at {} ({status}): POST {} to end it, then retry",
                self.base,
                self.url("/stop_profile")
            ),
            (Engine::Vllm, _, StatusCode::NOT_FOUND) => format!(
                "vLLM at {} has no {path} (404): it was started without a profiler; restart it with \
                 one. Under nsys: --profiler-config.profiler=cuda (vLLM >= 0.13) or \
                 VLLM_TORCH_CUDA_PROFILE=1 (vLLM 0.12). Torch trace: --profiler-config.profiler=torch \
                 --profiler-config.torch_profiler_dir=DIR (vLLM >= 0.13) or VLLM_TORCH_PROFILER_DIR=DIR \
                 (earlier versions)",
                self.base
            ),
            (Engine::Trtllm, _, _) => format!(
                "{url}: TensorRT-LLM has no HTTP profiler control; stepgate starts it under nsys \
                 with TLLM_PROFILE_START_STOP instead"
            ),
            (Engine::Sglang, _, StatusCode::NOT_FOUND) => format!(
                "{url} does not exist (404): is this an SGLang server? check --engine and --url"
            ),
            _ => format!(
                "POST {url} answered {status}: {excerpt}; see the engine's log"
            ),
        }
    }

    fn transport(&self, what: &str, e: &reqwest::Error) -> Error {
        if let Some(off) = off_host(e) {
            return Error::environment(format!(
                "{what} at {} was {off}: stepgate follows redirects only on the engine's own host \
                 and port, so another server is never armed; point --url at the engine itself",
                self.base
            ));
        }
        if e.is_timeout() {
            Error::environment(format!(
                "{what} at {} timed out after {} s; raise --timeout or check the engine's log",
                self.base,
                self.timeout.as_secs_f64()
            ))
        } else {
            Error::environment(format!(
                "{what} at {} failed: {}; is the engine running there? check --url",
                self.base,
                describe(e)
            ))
        }
    }
}

/// The refused off-host redirect behind a transport error, if that is what it was.
fn off_host(e: &reqwest::Error) -> Option<&OffHost> {
    let mut src: Option<&dyn std::error::Error> = std::error::Error::source(e);
    while let Some(s) = src {
        if let Some(off) = s.downcast_ref::<OffHost>() {
            return Some(off);
        }
        src = s.source();
    }
    None
}

/// A transport error in a few words ("connection refused", "timed out").
fn describe(e: &reqwest::Error) -> String {
    if e.is_timeout() {
        return "timed out".into();
    }
    if e.is_connect() {
        let mut src: Option<&dyn std::error::Error> = std::error::Error::source(e);
        while let Some(s) = src {
            if let Some(io) = s.downcast_ref::<std::io::Error>() {
                if io.kind() == std::io::ErrorKind::ConnectionRefused {
                    return "connection refused".into();
                }
            }
            src = s.source();
        }
        return "cannot connect".into();
    }
    e.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client(engine: Engine) -> EngineClient {
        EngineClient::new(engine, "http://127.0.0.1:9/", Duration::from_secs(1)).unwrap()
    }

    #[test]
    fn base_url_is_trimmed_and_checked() {
        assert_eq!(
            client(Engine::Vllm).url("/health"),
            "http://127.0.0.1:9/health"
        );
        for bad in ["localhost:8000", "ftp://h:1", "http://h:70000", "http://"] {
            let e = EngineClient::new(Engine::Vllm, bad, Duration::from_secs(1));
            let e = e.unwrap_err();
            assert_eq!(e.kind, crate::exit::Kind::Usage, "{bad}");
            assert!(
                e.message.starts_with(&format!("--url {bad}:")),
                "{}",
                e.message
            );
        }
    }

    #[test]
    fn origins_compare_host_and_port() {
        let o = |s: &str| origin(&Url::parse(s).unwrap());
        assert_eq!(o("http://h/a"), o("http://h:80/b"));
        assert_ne!(o("http://h:8000/a"), o("http://h:8001/a"));
        assert_ne!(o("http://h:8000/a"), o("http://g:8000/a"));
        assert_ne!(o("http://h:443/a"), o("https://h/a"));
    }

    #[test]
    fn sglang_never_polls_health() {
        assert!(!client(Engine::Sglang).ready_paths().contains(&"/health"));
    }

    #[test]
    fn status_messages_say_what_to_do() {
        let v = client(Engine::Vllm);
        let m = v.status_message("/start_profile", StatusCode::NOT_FOUND, "");
        assert!(m.contains("--profiler-config.profiler=cuda"), "{m}");
        let m = v.status_message("/start_profile", StatusCode::CONFLICT, "");
        assert!(
            m.contains("already active") && m.contains("/stop_profile"),
            "{m}"
        );
        let s = client(Engine::Sglang);
        let m = s.status_message(
            "/start_profile",
            StatusCode::INTERNAL_SERVER_ERROR,
            "Profiling is already in progress. Call /stop_profile first.",
        );
        assert!(m.contains("already active"), "{m}");
    }
}
