//! Run history on a real S3 server on loopback: moto's server (`moto_server -H 127.0.0.1`,
//! from PyPI, in the virtualenv `.ci/run` makes), started per test on a free port, with
//! explicit test credentials, region and endpoint so no client ever reaches a metadata
//! address or a public endpoint. Faults come from a small proxy in front of it that answers
//! 503s, 403s for writes (a read-only bucket), nothing at all (a hung server), or stops
//! answering after N requests (a server that goes away mid-export).
//!
//! Without the server the tests skip with one line; `STEPGATE_REQUIRE_S3=1` (set by
//! `.ci/run`) makes that a failure.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use crate::common::{bin, jittered_decode_report};
use crate::object_store_proxy::{Mode, Proxy, HUNG};

const H100: &str = "NVIDIA H100 80GB HBM3";

/// A moto server on 127.0.0.1, killed on drop (the fault proxy is in object_store_proxy).
pub(crate) struct Moto {
    child: Child,
    pub(crate) port: u16,
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub(crate) fn moto_binary() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("STEPGATE_MOTO_SERVER") {
        return Some(PathBuf::from(p));
    }
    let home = std::env::var_os("HOME").map(PathBuf::from)?;
    let p = home.join(".cache/stepgate/moto-venv/bin/moto_server");
    p.exists().then_some(p)
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Start moto with a bucket `sg-test`; `None` (after one line) when it is not installed.
pub(crate) fn moto() -> Option<Moto> {
    let Some(exe) = moto_binary() else {
        let why = "no moto_server (STEPGATE_MOTO_SERVER, or ~/.cache/stepgate/moto-venv)";
        assert!(
            std::env::var_os("STEPGATE_REQUIRE_S3").is_none(),
            "STEPGATE_REQUIRE_S3 is set but {why}"
        );
        eprintln!("skipped: {why}: the S3 tests need a local S3 server");
        return None;
    };
    let port = free_port();
    let child = Command::new(exe)
        .args(["-H", "127.0.0.1", "-p", &port.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let m = Moto { child, port };
    let t0 = Instant::now();
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(t0.elapsed() < Duration::from_secs(30), "moto did not start");
        std::thread::sleep(Duration::from_millis(100));
    }
    let resp = http(
        port,
        "PUT /sg-test HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n\r\n",
    );
    assert!(
        resp.starts_with("HTTP/1.1 200") || resp.starts_with("HTTP/1.0 200"),
        "{resp}"
    );
    Some(m)
}

/// One raw request, the whole response.
pub(crate) fn http(port: u16, req: &str) -> String {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    let req = req.replacen("\r\n\r\n", "\r\nConnection: close\r\n\r\n", 1);
    s.write_all(req.as_bytes()).unwrap();
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    out
}

/// stepgate with the test store's credentials and endpoint, and nothing from the
/// environment that could point a client elsewhere.
pub(crate) fn sg(port: u16, args: &[&str]) -> Output {
    let mut c = Command::new(bin());
    for (k, _) in std::env::vars() {
        if k.starts_with("AWS_") || k.starts_with("GOOGLE_") || k.starts_with("AZURE_") {
            c.env_remove(k);
        }
    }
    c.args(args)
        .env("AWS_ACCESS_KEY_ID", "test")
        .env("AWS_SECRET_ACCESS_KEY", "test-secret-never-shown")
        .env("AWS_REGION", "us-east-1")
        .env("AWS_ENDPOINT_URL", format!("http://127.0.0.1:{port}"))
        .env("AWS_ALLOW_HTTP", "true")
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .output()
        .unwrap()
}

fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn one_line(o: &Output) -> String {
    let e = err(o);
    assert_eq!(e.lines().count(), 1, "not one line: {e:?}");
    assert!(
        !e.contains("test-secret-never-shown"),
        "a secret was printed: {e}"
    );
    e
}

fn report(path: &Path, seed: u64) {
    jittered_decode_report(path, 8, 12, seed, H100, &|_| 1.0);
}

/// `trend --format json` points as (run id, steps, median), sorted by run id.
fn points(port: u16, ds: &str) -> Vec<(String, u64, f64)> {
    let o = sg(port, &["trend", ds, "--format", "json"]);
    assert!(o.status.success(), "{}", err(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let mut out: Vec<(String, u64, f64)> = v["series"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|s| s["points"].as_array().unwrap().clone())
        .map(|p| {
            (
                p["run_id"].as_str().unwrap().to_owned(),
                p["steps"].as_u64().unwrap(),
                p["median"].as_f64().unwrap(),
            )
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

#[test]
fn concurrent_exports_to_s3_land_once_each_and_trend_equals_the_serial_history() {
    let Some(m) = moto() else { return };
    let d = tempfile::tempdir().unwrap();
    let reports: Vec<PathBuf> = (0..4)
        .map(|i| {
            let p = d.path().join(format!("r{i}.sqlite"));
            report(&p, 10 + i);
            p
        })
        .collect();
    // 16 distinct runs (4 reports × 4 labels) and the same run twice, all at once.
    let jobs: Vec<(PathBuf, String)> = (0..16)
        .map(|i| (reports[i % 4].clone(), format!("n={}", i / 4)))
        .chain((0..2).map(|_| (reports[0].clone(), "n=dup".to_owned())))
        .collect();
    let url = "s3://sg-test/team/history";
    let outs: Vec<Output> = std::thread::scope(|s| {
        let hs: Vec<_> = jobs
            .iter()
            .map(|(r, l)| {
                s.spawn(move || {
                    sg(
                        m.port,
                        &["export", r.to_str().unwrap(), "-o", url, "--label", l],
                    )
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for o in &outs[..16] {
        assert!(o.status.success(), "{}", err(o));
    }
    let dup: Vec<i32> = outs[16..]
        .iter()
        .map(|o| o.status.code().unwrap())
        .collect();
    assert!(
        dup.contains(&0) && dup.contains(&2),
        "one of two wins: {dup:?}"
    );
    let loser = outs[16..]
        .iter()
        .find(|o| o.status.code() == Some(2))
        .unwrap();
    let e = one_line(loser);
    assert!(e.contains("is already in s3://sg-test/team/history"), "{e}");
    // The same runs exported one at a time into a local directory.
    let local = d.path().join("serial");
    for (r, l) in &jobs[..17] {
        let o = sg(
            m.port,
            &[
                "export",
                r.to_str().unwrap(),
                "-o",
                local.to_str().unwrap(),
                "--label",
                l,
            ],
        );
        assert!(o.status.success(), "{}", err(&o));
    }
    let remote = points(m.port, url);
    assert_eq!(remote.len(), 17, "{remote:?}");
    assert_eq!(remote, points(m.port, local.to_str().unwrap()));
    // Every committed run's files are there once: 17 runs rows, 17 steps objects (the
    // losing duplicate removed its own).
    let list = http(
        m.port,
        "GET /sg-test?list-type=2&prefix=team/history/steps/ HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
    );
    assert_eq!(list.matches("<Key>").count(), 17, "{list}");
    // gate --history reads the bucket like a directory.
    let o = sg(
        m.port,
        &[
            "gate",
            reports[1].to_str().unwrap(),
            "--history",
            url,
            "--where",
            "label.n=0",
            "--format",
            "json",
        ],
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap_or_default();
    assert!(matches!(o.status.code(), Some(0 | 1 | 3)), "{}", err(&o));
    assert!(v.to_string().contains("matching run(s)"), "{v}");
}

#[test]
fn faults_are_retried_to_a_bound_named_in_one_line_and_never_half_committed() {
    let Some(m) = moto() else { return };
    let p = Proxy::start(m.port);
    let d = tempfile::tempdir().unwrap();
    let r = d.path().join("r.sqlite");
    report(&r, 3);
    let rs = r.to_str().unwrap();
    let url = "s3://sg-test/faults";

    // A read-only bucket: refused before the work, naming the bucket and prefix, the 403
    // not retried (one PUT, the probe).
    p.set(Mode::ReadOnly);
    let o = sg(p.port, &["export", rs, "-o", url]);
    assert_eq!(o.status.code(), Some(4), "{}", err(&o));
    let e = one_line(&o);
    assert!(
        e.contains("access denied") && e.contains("s3://sg-test/faults"),
        "{e}"
    );
    let puts = p.seen().iter().filter(|(m, _)| m == "PUT").count();
    assert_eq!(puts, 1, "{:?}", p.seen());
    // ... and it still reads: an empty history is inconclusive (exit 3), not an error.
    let o = sg(p.port, &["gate", rs, "--history", url]);
    assert_eq!(o.status.code(), Some(3), "{}", err(&o));

    // A 503 storm: retried (4 times) with backoff, then one line; nothing committed.
    p.set(Mode::Storm);
    let o = sg(p.port, &["export", rs, "-o", url]);
    assert_eq!(o.status.code(), Some(4), "{}", err(&o));
    assert!(
        one_line(&o).contains("nothing was committed"),
        "{}",
        err(&o)
    );
    assert_eq!(
        p.seen().len(),
        5,
        "one request and 4 retries: {:?}",
        p.seen()
    );
    // Two 503s, then the server recovers: the export lands.
    p.set(Mode::FailFirst(2));
    let o = sg(p.port, &["export", rs, "-o", url, "--label", "try=2"]);
    assert!(o.status.success(), "{}", err(&o));

    // The server goes away mid-export, six requests in (the probe, its removal, the
    // listing of committed runs, then tables): one line, and once it is back no half run
    // is visible.
    p.set(Mode::DieAfter(6)); // also forgets the requests seen so far
    let o = sg(p.port, &["export", rs, "-o", url, "--label", "try=3"]);
    assert_eq!(o.status.code(), Some(4), "{}", err(&o));
    one_line(&o);
    // The tables that reached the server: the PUTs of table files among the six
    // requests the proxy forwarded (the probe's key starts with a dot, the commit's with
    // `runs/`, and neither was among them or the run would be visible).
    let landed = p.seen()[..6]
        .iter()
        .filter(|(m, path)| m == "PUT" && path.ends_with(".parquet"))
        .count();
    assert!(
        landed >= 1,
        "the export died before any table: {:?}",
        p.seen()
    );
    p.set(Mode::Pass);
    let got = points(p.port, url);
    assert_eq!(got.len(), 1, "only the run that committed: {got:?}");
    // Its written tables are objects no runs row names: vacuum counts them as young.
    let o = sg(p.port, &["dataset", "vacuum", url, "--older-than", "1h"]);
    assert!(o.status.success(), "{}", err(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains(&format!(
            "kept 1 committed run(s) and {landed} unnamed object(s)"
        )),
        "{out}"
    );

    // A hung server is bounded by --io-timeout.
    p.set(Mode::Hang);
    let t0 = Instant::now();
    let o = sg(
        p.port,
        &["export", rs, "-o", "s3://sg-test/hung", "--io-timeout", "1"],
    );
    assert_eq!(o.status.code(), Some(4), "{}", err(&o));
    one_line(&o);
    assert!(t0.elapsed() < Duration::from_secs(60), "{:?}", t0.elapsed());
    assert!(HUNG.load(Ordering::Relaxed) >= 1);
}

#[test]
fn pagination_past_a_thousand_objects_and_an_unreachable_endpoint() {
    let Some(m) = moto() else { return };
    // 1,200 foreign objects in a runs partition: listed across pages, each named and
    // skipped with a warning, none taken for a run.
    for i in 0..1200 {
        let req = format!(
            "PUT /sg-test/p/runs/gpu=x/model=y/note-{i}.txt HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1\r\n\r\nx"
        );
        assert!(http(m.port, &req).contains(" 200 "));
    }
    let o = sg(m.port, &["trend", "s3://sg-test/p"]);
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    let e = err(&o);
    assert!(e.contains("holds no runs"), "{e}");
    assert_eq!(
        e.matches("not a `runs` file stepgate writes").count(),
        0,
        "trend lists only when there are runs: {e}"
    );
    let d = tempfile::tempdir().unwrap();
    let r = d.path().join("r.sqlite");
    report(&r, 5);
    let o = sg(
        m.port,
        &["export", r.to_str().unwrap(), "-o", "s3://sg-test/p"],
    );
    assert!(o.status.success(), "{}", err(&o));
    let o = sg(m.port, &["trend", "s3://sg-test/p", "--format", "json"]);
    assert!(o.status.success(), "{}", err(&o));
    assert_eq!(
        err(&o).matches("not a `runs` file stepgate writes").count(),
        1200
    );
    // Nothing listens: bounded retries, one line, exit 4.
    let o = sg(
        free_port(),
        &["export", r.to_str().unwrap(), "-o", "s3://sg-test/q"],
    );
    assert_eq!(o.status.code(), Some(4), "{}", err(&o));
    one_line(&o);
}
