//! A small HTTP proxy in front of the local S3 server for tests/it/object_store.rs: it
//! answers 503s, 403s for writes (a read-only bucket), nothing (a hung server), or stops
//! answering after N requests (a server that goes away mid-export).

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::AtomicUsize;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What the proxy does with the next request.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Mode {
    Pass,
    /// 503 Slow Down to every request.
    Storm,
    /// 503 to the next N requests, then pass.
    FailFirst(usize),
    /// 403 AccessDenied to writes (PUT, POST, DELETE); reads pass.
    ReadOnly,
    /// Accept and never answer.
    Hang,
    /// Pass N more requests, then close every connection without an answer.
    DieAfter(usize),
}

pub struct Proxy {
    pub port: u16,
    mode: Arc<Mutex<Mode>>,
    /// (method, path) of every request seen.
    seen: Arc<Mutex<Vec<(String, String)>>>,
}

impl Proxy {
    pub fn start(upstream: u16) -> Proxy {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let mode = Arc::new(Mutex::new(Mode::Pass));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let (m, s) = (mode.clone(), seen.clone());
        std::thread::spawn(move || {
            for c in l.incoming().flatten() {
                let (m, s) = (m.clone(), s.clone());
                std::thread::spawn(move || serve(c, upstream, &m, &s));
            }
        });
        Proxy { port, mode, seen }
    }

    pub fn set(&self, m: Mode) {
        *self.mode.lock().unwrap() = m;
        self.seen.lock().unwrap().clear();
    }

    pub fn seen(&self) -> Vec<(String, String)> {
        self.seen.lock().unwrap().clone()
    }
}

pub static HUNG: AtomicUsize = AtomicUsize::new(0);

/// The access key ids of the signed requests every proxy saw (tests check that theirs is
/// among them: tests run in parallel).
pub static KEY_IDS: Mutex<Vec<String>> = Mutex::new(Vec::new());

fn serve(mut c: TcpStream, upstream: u16, mode: &Mutex<Mode>, seen: &Mutex<Vec<(String, String)>>) {
    // The request head, then its body (object_store sends Content-Length).
    let mut buf = Vec::new();
    let mut b = [0u8; 8192];
    let head_end = loop {
        let Ok(n) = c.read(&mut b) else { return };
        if n == 0 {
            return;
        }
        buf.extend_from_slice(&b[..n]);
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let len: usize = head
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("content-length")
                .then(|| v.trim().parse().ok())?
        })
        .unwrap_or(0);
    while buf.len() < head_end + len {
        let Ok(n) = c.read(&mut b) else { return };
        if n == 0 {
            return;
        }
        buf.extend_from_slice(&b[..n]);
    }
    let mut first = head.lines().next().unwrap_or("").split(' ');
    let method = first.next().unwrap_or("").to_owned();
    let path = first.next().unwrap_or("").to_owned();
    seen.lock().unwrap().push((method.clone(), path));
    // The access key id a signed request names (`Credential=<id>/<date>/…`).
    if let Some(id) = head
        .split("Credential=")
        .nth(1)
        .and_then(|c| c.split('/').next())
    {
        KEY_IDS.lock().unwrap().push(id.to_owned());
    }
    let now = {
        let mut g = mode.lock().unwrap();
        let now = *g;
        match *g {
            Mode::FailFirst(n) => {
                *g = if n <= 1 {
                    Mode::Pass
                } else {
                    Mode::FailFirst(n - 1)
                }
            }
            Mode::DieAfter(n) if n > 0 => *g = Mode::DieAfter(n - 1),
            _ => {}
        }
        now
    };
    let answer = |c: &mut TcpStream, status: &str, code: &str| {
        let body = format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>{code}</Code><Message>{code}</Message></Error>"
        );
        let _ = write!(
            c,
            "HTTP/1.1 {status}\r\nContent-Type: application/xml\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
    };
    match now {
        Mode::Storm | Mode::FailFirst(_) => return answer(&mut c, "503 Slow Down", "SlowDown"),
        Mode::ReadOnly if matches!(method.as_str(), "PUT" | "POST" | "DELETE") => {
            return answer(&mut c, "403 Forbidden", "AccessDenied")
        }
        Mode::Hang => {
            HUNG.fetch_add(1, Ordering::Relaxed);
            std::thread::sleep(Duration::from_secs(120));
            return;
        }
        Mode::DieAfter(0) => return,
        _ => {}
    }
    // Forward on a fresh connection that the server closes after its answer.
    let mut fwd = Vec::new();
    for l in head[..head_end - 4].split("\r\n") {
        if !l.to_ascii_lowercase().starts_with("connection:") {
            fwd.extend_from_slice(l.as_bytes());
            fwd.extend_from_slice(b"\r\n");
        }
    }
    fwd.extend_from_slice(b"Connection: close\r\n\r\n");
    fwd.extend_from_slice(&buf[head_end..head_end + len]);
    let Ok(mut u) = TcpStream::connect(("127.0.0.1", upstream)) else {
        return;
    };
    if u.write_all(&fwd).is_err() {
        return;
    }
    let mut resp = Vec::new();
    let _ = u.read_to_end(&mut resp);
    let _ = c.write_all(&resp);
}
