//! Every wait of a capture (readiness, warm-up, the armed window, a blocking HTTP call, new
//! trace files) goes through [`Watch`], so Ctrl-C and a server that died are noticed within
//! 50 ms instead of after the wait.

use std::sync::mpsc;
use std::time::{Duration, Instant};

use super::engine::{EngineClient, Ready};
use super::interrupt;
use super::server::ServerGroup;
use crate::exit::{Error, Result};

/// The server being watched (none when capturing a server already running).
#[derive(Debug, Default)]
pub(crate) struct Watch {
    pub group: Option<ServerGroup>,
}

impl Watch {
    /// Fail fast on Ctrl-C or on a server that died.
    pub fn check(&mut self) -> Result<()> {
        if interrupt::interrupted() {
            return Err(Error::environment(if self.group.is_some() {
                "interrupted (Ctrl-C): the server's process group was shut down"
            } else {
                "interrupted (Ctrl-C)"
            }));
        }
        if let Some(s) = self.group.as_mut().and_then(ServerGroup::exited) {
            return Err(Error::environment(format!(
                "the server command exited ({s}) before the capture finished: see its output above"
            )));
        }
        Ok(())
    }

    /// Sleep `d`, checking every 50 ms.
    pub fn sleep(&mut self, d: Duration) -> Result<()> {
        let until = Instant::now() + d;
        loop {
            self.check()?;
            let now = Instant::now();
            if now >= until {
                return Ok(());
            }
            std::thread::sleep((until - now).min(Duration::from_millis(50)));
        }
    }

    /// Run a blocking HTTP call on its own thread so Ctrl-C and a dying server are noticed
    /// while it waits (SGLang's `/start_profile` can block for the whole capture).
    pub fn call<T: Send + 'static>(
        &mut self,
        f: impl FnOnce() -> Result<T> + Send + 'static,
    ) -> Result<T> {
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(f());
        });
        loop {
            match rx.recv_timeout(Duration::from_millis(50)) {
                Ok(r) => return r,
                Err(mpsc::RecvTimeoutError::Timeout) => self.check()?,
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    return Err(Error::environment(
                        "the HTTP worker thread died; retry the capture",
                    ))
                }
            }
        }
    }

    /// Poll the engine's readiness routes until one answers 200; returns that route.
    pub fn ready(&mut self, client: &EngineClient, timeout: Duration) -> Result<&'static str> {
        let until = Instant::now() + timeout;
        loop {
            self.check()?;
            let why = match client.poll_ready()? {
                Ready::Yes(path) => return Ok(path),
                Ready::No(why) => why,
            };
            if Instant::now() >= until {
                return Err(Error::environment(format!(
                    "{} at {} was not ready after {} s ({why}): start it, check --url, or raise \
                     --ready-timeout",
                    client.engine.name(),
                    client.base,
                    timeout.as_secs_f64()
                )));
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}
