//! Keep N generation requests in flight so the armed window lands on steady decode rather
//! than an idle server (docs/method.md §5): vLLM `POST /v1/completions`, SGLang
//! `POST /generate`.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};

use super::engine;
use crate::exit::Result;
use crate::wire::capture::{DriveCounts, Engine};

/// The prompt of every driven request: short, so each request is mostly decode steps.
pub(crate) const PROMPT: &str = "Count slowly: ";

/// What to send.
#[derive(Debug, Clone)]
pub struct Load {
    pub engine: Engine,
    pub base: String,
    /// vLLM's model name (SGLang's `/generate` needs none).
    pub model: Option<String>,
    pub concurrency: u32,
    pub max_tokens: u32,
    pub timeout: Duration,
}

/// The route and body of one request.
pub fn request(load: &Load) -> (String, Value) {
    match load.engine {
        // trtllm-serve speaks the OpenAI API as vLLM does.
        Engine::Vllm | Engine::Trtllm => (
            format!("{}/v1/completions", load.base),
            json!({
                "model": load.model.clone().unwrap_or_default(),
                "prompt": PROMPT,
                "max_tokens": load.max_tokens,
                "temperature": 0.0,
                "stream": false,
            }),
        ),
        Engine::Sglang => (
            format!("{}/generate", load.base),
            json!({
                "text": PROMPT,
                "sampling_params": {"temperature": 0.0, "max_new_tokens": load.max_tokens},
            }),
        ),
    }
}

/// Running load; dropping it (or [`Driver::stop`]) tells the workers to stop after their
/// request in flight.
#[derive(Debug)]
pub(crate) struct Driver {
    stop: Arc<AtomicBool>,
    done: Arc<AtomicU64>,
    failed: Arc<AtomicU64>,
    last_error: Arc<Mutex<Option<String>>>,
}

impl Driver {
    pub fn start(load: &Load) -> Result<Driver> {
        let http = engine::http_client(load.timeout)?;
        let d = Driver {
            stop: Arc::new(AtomicBool::new(false)),
            done: Arc::new(AtomicU64::new(0)),
            failed: Arc::new(AtomicU64::new(0)),
            last_error: Arc::new(Mutex::new(None)),
        };
        let (url, body) = request(load);
        for _ in 0..load.concurrency {
            let (http, url, body) = (http.clone(), url.clone(), body.clone());
            let (stop, done, failed, last) = (
                d.stop.clone(),
                d.done.clone(),
                d.failed.clone(),
                d.last_error.clone(),
            );
            // Detached: a worker ends when told to, or at its request timeout at the latest.
            std::thread::spawn(move || {
                while !stop.load(Ordering::SeqCst) {
                    let r = http.post(&url).json(&body).send();
                    match r {
                        Ok(resp) if resp.status().is_success() => {
                            let _ = resp.bytes();
                            done.fetch_add(1, Ordering::SeqCst);
                        }
                        other => {
                            failed.fetch_add(1, Ordering::SeqCst);
                            let why = match other {
                                Ok(resp) => format!("{url} answered {}", resp.status()),
                                Err(e) => format!("{url}: {e}"),
                            };
                            *last.lock().unwrap_or_else(|p| p.into_inner()) = Some(why);
                            // Back off so a failing engine is not hammered.
                            std::thread::sleep(Duration::from_millis(100));
                        }
                    }
                }
            });
        }
        Ok(d)
    }

    pub fn counts(&self) -> DriveCounts {
        DriveCounts {
            completed: self.done.load(Ordering::SeqCst),
            failed: self.failed.load(Ordering::SeqCst),
        }
    }

    pub(crate) fn last_error(&self) -> Option<String> {
        self.last_error
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    pub fn stop(&self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        self.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_follow_each_engine() {
        let mut l = Load {
            engine: Engine::Vllm,
            base: "http://h:1".into(),
            model: Some("m".into()),
            concurrency: 2,
            max_tokens: 7,
            timeout: Duration::from_secs(1),
        };
        let (u, b) = request(&l);
        assert_eq!(u, "http://h:1/v1/completions");
        assert_eq!(b["model"], "m");
        assert_eq!(b["max_tokens"], 7);
        l.engine = Engine::Sglang;
        let (u, b) = request(&l);
        assert_eq!(u, "http://h:1/generate");
        assert_eq!(b["sampling_params"]["max_new_tokens"], 7);
    }
}
