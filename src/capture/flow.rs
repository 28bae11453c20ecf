//! The capture, start to finish: (start the server under nsys) → wait until ready → (drive
//! load) → arm → wait → stop → (shut the server down, export) → say where the trace went.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant, SystemTime};

use serde::Serialize;
use serde_json::{json, Map, Value};

use super::drive::{DriveCounts, Driver, Load};
use super::engine::{EngineClient, Ready};
use super::nsys::{self, ServerGroup};
use super::{check, interrupt, Engine};
use crate::exit::{Error, Result};

/// Version of the JSON summary.
pub const SCHEMA_VERSION: u32 = 1;

/// TensorRT-LLM's first profiled iteration when --start-step is not given: past the first
/// iterations, which run while load is still ramping up.
pub const TRTLLM_DEFAULT_START: u32 = 10;

/// Load to keep in flight while armed.
#[derive(Debug, Clone)]
pub struct DriveConfig {
    pub concurrency: u32,
    pub max_tokens: u32,
    pub model: Option<String>,
}

/// The server to start under nsys.
#[derive(Debug, Clone)]
pub struct NsysConfig {
    /// `nsys` or a path to it.
    pub program: String,
    /// Report base name (`run` → `run.nsys-rep`, `run.sqlite`).
    pub out: PathBuf,
    pub server: Vec<String>,
    /// How long nsys may take to finish after SIGINT.
    pub shutdown_grace: Duration,
    pub export_timeout: Duration,
}

/// Everything one capture needs.
#[derive(Debug, Clone)]
pub struct Config {
    pub engine: Engine,
    pub url: String,
    /// Steps to capture (vLLM `max_iterations`, SGLang `num_steps`); 0 = until /stop_profile.
    pub num_steps: u32,
    /// vLLM `delay_iterations`, SGLang `start_step`.
    pub start_step: Option<u32>,
    /// SGLang `activities`; default `CUDA_PROFILER` under nsys, else `CPU,GPU`.
    pub activities: Option<Vec<String>>,
    pub by_stage: bool,
    pub detailed_annotations: bool,
    pub drive: Option<DriveConfig>,
    pub warmup: Duration,
    /// Armed time before `/stop_profile` when the engine does not stop by itself.
    pub hold: Duration,
    /// Per-request HTTP timeout.
    pub timeout: Duration,
    pub ready_timeout: Duration,
    /// Where torch-profiler traces land (SGLang: sent as `output_dir`); checked afterwards.
    pub trace_dir: Option<PathBuf>,
    pub trace_wait: Duration,
    pub nsys: Option<NsysConfig>,
}

/// What happened, for the report.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Summary {
    pub schema_version: u32,
    pub tool: crate::wire::meta::Tool,
    pub engine: Engine,
    pub url: String,
    pub ready_via: String,
    pub ready_after_ms: i64,
    pub start_profile_body: Option<Value>,
    pub stopped_by: String,
    pub drive: Option<DriveCounts>,
    pub nsys_report: Option<PathBuf>,
    pub sqlite: Option<PathBuf>,
    pub traces: Vec<PathBuf>,
    pub trace_note: Option<String>,
    pub notes: Vec<String>,
}

impl Config {
    /// Whether the engine stops by itself: SGLang with `num_steps` (vLLM's `max_iterations`
    /// also stops, but a later `/stop_profile` is a logged no-op there, so it is still sent).
    pub fn auto_stop(&self) -> bool {
        self.engine == Engine::Sglang && self.num_steps > 0
    }

    fn activities(&self) -> Vec<String> {
        match (&self.activities, &self.nsys) {
            (Some(a), _) => a.clone(),
            (None, Some(_)) => vec!["CUDA_PROFILER".into()],
            (None, None) => vec!["CPU".into(), "GPU".into()],
        }
    }

    /// TensorRT-LLM's `TLLM_PROFILE_START_STOP` value: iterations `A-B`, both profiled
    /// (PyExecutor calls cudaProfilerStart before iteration A and cudaProfilerStop after B).
    pub fn tllm_range(&self) -> Option<String> {
        if self.engine != Engine::Trtllm || self.num_steps == 0 {
            return None;
        }
        let a = self.start_step.unwrap_or(TRTLLM_DEFAULT_START);
        Some(format!("{a}-{}", a + self.num_steps - 1))
    }

    /// Flag combinations that cannot work (exit 2).
    pub fn validate(&self) -> Result<()> {
        if self.engine == Engine::Trtllm {
            let http_only = [
                (
                    self.nsys.is_none(),
                    "TensorRT-LLM has no HTTP profiler control: stepgate runs the server under nsys \
                     with TLLM_PROFILE_START_STOP set; give --nsys-out BASE -- trtllm-serve MODEL …",
                ),
                (
                    self.num_steps == 0,
                    "TensorRT-LLM profiles a fixed iteration range (TLLM_PROFILE_START_STOP=A-B): \
                     give --num-steps N > 0",
                ),
                (self.by_stage, "--by-stage is SGLang only"),
                (self.detailed_annotations, "--detailed-annotations is SGLang only"),
                (self.activities.is_some(), "--activities is SGLang only"),
                (
                    self.trace_dir.is_some(),
                    "--trace-dir is for torch-profiler traces; TensorRT-LLM is captured under nsys",
                ),
            ];
            if let Some((_, m)) = http_only.iter().find(|(on, _)| *on) {
                return Err(Error::input(*m));
            }
        }
        if self.engine == Engine::Vllm {
            let launch_only = [
                (self.by_stage, "--by-stage is SGLang only"),
                (
                    self.detailed_annotations,
                    "vLLM sets detailed annotations at launch: start it with \
                     --profiler-config.detailed_trace_annotation=true instead of --detailed-annotations",
                ),
                (
                    self.activities.is_some(),
                    "vLLM sets profiler activities at launch (--profiler-config.torch_profiler_activities); \
                     --activities is SGLang only",
                ),
            ];
            if let Some((_, m)) = launch_only.iter().find(|(on, _)| *on) {
                return Err(Error::input(*m));
            }
        }
        if self.by_stage && self.num_steps == 0 {
            return Err(Error::input(
                "--by-stage needs --num-steps > 0 (SGLang's profile_by_stage does)",
            ));
        }
        if self.engine == Engine::Sglang
            && self.nsys.is_some()
            && !self.activities().iter().any(|a| a == "CUDA_PROFILER")
        {
            return Err(Error::input(
                "under nsys SGLang must be armed with CUDA_PROFILER among --activities: it is what \
                 calls cudaProfilerStart and opens the capture range",
            ));
        }
        Ok(())
    }

    /// The `/start_profile` body (vLLM `StartProfileRequest`, SGLang `ProfileReq`).
    pub fn start_body(&self) -> Option<Value> {
        let mut m = Map::new();
        match self.engine {
            Engine::Vllm => {
                if self.num_steps > 0 {
                    m.insert("max_iterations".into(), json!(self.num_steps));
                }
                if let Some(s) = self.start_step {
                    m.insert("delay_iterations".into(), json!(s));
                }
                if m.is_empty() {
                    return None;
                }
            }
            Engine::Sglang => {
                if self.num_steps > 0 {
                    m.insert("num_steps".into(), json!(self.num_steps));
                }
                if let Some(s) = self.start_step {
                    m.insert("start_step".into(), json!(s));
                }
                m.insert("activities".into(), json!(self.activities()));
                m.insert("profile_by_stage".into(), json!(self.by_stage));
                if self.detailed_annotations {
                    m.insert("detailed_annotations".into(), json!(true));
                }
                if let Some(d) = &self.trace_dir {
                    m.insert("output_dir".into(), json!(d.to_string_lossy()));
                }
            }
            Engine::Trtllm => return None,
        }
        Some(Value::Object(m))
    }
}

/// Fail fast on Ctrl-C or on a server that died.
fn watch(group: &mut Option<ServerGroup>) -> Result<()> {
    if interrupt::interrupted() {
        return Err(Error::environment(if group.is_some() {
            "interrupted (Ctrl-C): the server's process group was shut down"
        } else {
            "interrupted (Ctrl-C)"
        }));
    }
    if let Some(g) = group.as_mut() {
        if let Some(s) = g.exited() {
            return Err(Error::environment(format!(
                "the server command exited ({s}) before the capture finished: see its output above"
            )));
        }
    }
    Ok(())
}

fn sleep_watching(d: Duration, group: &mut Option<ServerGroup>) -> Result<()> {
    let until = Instant::now() + d;
    loop {
        watch(group)?;
        let now = Instant::now();
        if now >= until {
            return Ok(());
        }
        std::thread::sleep((until - now).min(Duration::from_millis(50)));
    }
}

/// Run a blocking HTTP call on its own thread so Ctrl-C and a dying server are noticed while
/// it waits (SGLang's `/start_profile` can block for the whole capture).
fn call_watching<T: Send + 'static>(
    f: impl FnOnce() -> Result<T> + Send + 'static,
    group: &mut Option<ServerGroup>,
) -> Result<T> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    loop {
        match rx.recv_timeout(Duration::from_millis(50)) {
            Ok(r) => return r,
            Err(mpsc::RecvTimeoutError::Timeout) => watch(group)?,
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                return Err(Error::environment(
                    "the HTTP worker thread died; retry the capture",
                ))
            }
        }
    }
}

fn wait_ready(
    client: &EngineClient,
    timeout: Duration,
    group: &mut Option<ServerGroup>,
) -> Result<&'static str> {
    let until = Instant::now() + timeout;
    loop {
        watch(group)?;
        let why = match client.poll_ready() {
            Ready::Yes(path) => return Ok(path),
            Ready::No(why) => why,
        };
        if Instant::now() >= until {
            return Err(Error::environment(format!(
                "{} at {} was not ready after {} s ({why}): start it, check --url, or raise --ready-timeout",
                client.engine.name(),
                client.base,
                timeout.as_secs_f64()
            )));
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

type Snapshot = HashSet<(PathBuf, SystemTime, u64)>;

/// Trace-like files (`*.json`, `*.json.gz`, `*.pt.trace.json.gz`, ...) directly in `dir`.
fn snapshot(dir: &Path) -> Snapshot {
    let mut s = HashSet::new();
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if !name.contains(".json") {
                continue;
            }
            if let Ok(m) = e.metadata() {
                if m.is_file() {
                    let t = m.modified().unwrap_or(SystemTime::UNIX_EPOCH);
                    s.insert((e.path(), t, m.len()));
                }
            }
        }
    }
    s
}

fn new_traces(
    dir: &Path,
    before: &Snapshot,
    wait: Duration,
    group: &mut Option<ServerGroup>,
) -> Result<Vec<PathBuf>> {
    let until = Instant::now() + wait;
    loop {
        let mut found: Vec<PathBuf> = snapshot(dir)
            .difference(before)
            .map(|(p, _, _)| p.clone())
            .collect();
        if !found.is_empty() {
            // Ranks and by-stage files arrive one after another; give the rest a moment.
            sleep_watching(Duration::from_millis(300), group)?;
            found = snapshot(dir)
                .difference(before)
                .map(|(p, _, _)| p.clone())
                .collect();
            found.sort();
            found.dedup();
            return Ok(found);
        }
        if Instant::now() >= until {
            return Ok(Vec::new());
        }
        sleep_watching(Duration::from_millis(100), group)?;
    }
}

/// Leave no engine armed behind us after an error (best effort, short timeout).
fn stop_best_effort(cfg: &Config) {
    if let Ok(c) = EngineClient::new(cfg.engine, &cfg.url, Duration::from_secs(5)) {
        let _ = c.stop_profile();
    }
}

/// Run one capture; progress lines go to `log`.
pub fn run(cfg: &Config, log: &mut dyn FnMut(&str)) -> Result<Summary> {
    cfg.validate()?;
    let client = EngineClient::new(cfg.engine, &cfg.url, cfg.timeout)?;
    let mut notes = Vec::new();

    // 1. The server under nsys, in its own process group.
    let mut group: Option<ServerGroup> = None;
    let mut nsys_bin = None;
    let mut base = None;
    if let Some(n) = &cfg.nsys {
        let bin = nsys::find(&n.program, std::env::var_os("PATH"))?;
        let b = nsys::base_name(&n.out);
        for p in [nsys::report_path(&b), nsys::sqlite_path(&b)] {
            if p.exists() {
                return Err(Error::input(format!(
                    "{} already exists: choose another --nsys-out or remove it",
                    p.display()
                )));
            }
        }
        notes.extend(check::check_server(
            cfg.engine,
            &n.server,
            &check::ServerEnv::from_process(),
        )?);
        // TensorRT-LLM: the profiled iterations go in the server's environment (a value in
        // the command's own `env …` prefix is applied after ours, so it wins).
        let mut env = Vec::new();
        if let Some(r) = cfg.tllm_range() {
            if check::tllm_range_in_command(&n.server).is_none() {
                notes.push(format!(
                    "TLLM_PROFILE_START_STOP={r}: iterations {r} are profiled (--start-step, \
                     default {TRTLLM_DEFAULT_START}, and --num-steps)"
                ));
            }
            env.push(("TLLM_PROFILE_START_STOP".to_owned(), r));
        }
        for note in &notes {
            log(&format!("note: {note}"));
        }
        log(&format!(
            "starting: {} {}",
            bin.display(),
            nsys::profile_args(&b, &n.server)
                .iter()
                .map(|a| a.to_string_lossy())
                .collect::<Vec<_>>()
                .join(" ")
        ));
        group = Some(ServerGroup::spawn(
            &bin,
            &nsys::profile_args(&b, &n.server),
            &env,
            n.shutdown_grace,
        )?);
        nsys_bin = Some(bin);
        base = Some(b);
    }
    if let Some(d) = &cfg.trace_dir {
        std::fs::create_dir_all(d)
            .map_err(|e| Error::input(format!("cannot create --trace-dir {}: {e}", d.display())))?;
    }

    // 2. Ready.
    let t0 = Instant::now();
    log(&format!(
        "waiting for {} at {} ...",
        cfg.engine.name(),
        client.base
    ));
    let ready_via = wait_ready(&client, cfg.ready_timeout, &mut group)?;
    let ready_after_ms = t0.elapsed().as_millis() as i64;
    log(&format!(
        "ready (GET {ready_via} answered 200 after {ready_after_ms} ms)"
    ));

    // 3. Load, so the window lands on steady decode.
    let driver = match &cfg.drive {
        Some(d) => {
            let model = match (&d.model, cfg.engine) {
                (Some(m), _) => Some(m.clone()),
                (None, Engine::Vllm | Engine::Trtllm) => Some(client.first_model()?),
                (None, Engine::Sglang) => None,
            };
            let load = Load {
                engine: cfg.engine,
                base: client.base.clone(),
                model,
                concurrency: d.concurrency,
                max_tokens: d.max_tokens,
                timeout: cfg.timeout,
            };
            let drv = Driver::start(&load)?;
            log(&format!(
                "driving {} request(s) in flight (max_tokens {}); warming up {} s",
                d.concurrency,
                d.max_tokens,
                cfg.warmup.as_secs_f64()
            ));
            sleep_watching(cfg.warmup, &mut group)?;
            Some(drv)
        }
        None => None,
    };

    // 4. Arm, wait, stop.
    let before = cfg.trace_dir.as_deref().map(snapshot);
    let body = cfg.start_body();
    if cfg.engine != Engine::Trtllm {
        log(&format!(
            "POST {} {}",
            client.url("/start_profile"),
            body.as_ref().map(Value::to_string).unwrap_or_default()
        ));
    }
    let stopped_by = if let Some(r) = cfg.tllm_range() {
        // No HTTP arming: the server profiles iterations A-B by itself while load runs.
        log(&format!(
            "TensorRT-LLM profiles iterations {r} by itself; holding {} s",
            cfg.hold.as_secs_f64()
        ));
        sleep_watching(cfg.hold, &mut group)?;
        format!(
            "TensorRT-LLM (TLLM_PROFILE_START_STOP={r}), server shut down after --hold {} s",
            cfg.hold.as_secs_f64()
        )
    } else {
        let (c, b) = (client.clone(), body.clone());
        if let Err(e) = call_watching(move || c.start_profile(b.as_ref()), &mut group) {
            // Interrupted while SGLang's start was still blocking: the engine is armed.
            if interrupt::interrupted() {
                stop_best_effort(cfg);
            }
            return Err(e);
        }
        let armed = (|| -> Result<String> {
            if cfg.auto_stop() {
                return Ok(format!("engine (after num_steps = {})", cfg.num_steps));
            }
            sleep_watching(cfg.hold, &mut group)?;
            let c = client.clone();
            call_watching(move || c.stop_profile(), &mut group)?;
            Ok("POST /stop_profile".into())
        })();
        match armed {
            Ok(s) => s,
            Err(e) => {
                stop_best_effort(cfg);
                return Err(e);
            }
        }
    };
    log(&format!("profiler stopped by {stopped_by}"));
    let drive = driver.as_ref().map(|d| {
        d.stop();
        d.counts()
    });
    if let (Some(c), Some(d)) = (drive, driver.as_ref()) {
        if c.completed == 0 && c.failed > 0 {
            notes.push(format!(
                "no driven request succeeded ({} failed; last: {}): the trace may hold no decode steps",
                c.failed,
                d.last_error().unwrap_or_default()
            ));
        }
    }

    // 5. Where the trace went.
    let mut summary = Summary {
        schema_version: SCHEMA_VERSION,
        tool: crate::wire::meta::Tool::current(),
        engine: cfg.engine,
        url: client.base.clone(),
        ready_via: ready_via.to_owned(),
        ready_after_ms,
        start_profile_body: body,
        stopped_by,
        drive,
        nsys_report: None,
        sqlite: None,
        traces: Vec::new(),
        trace_note: None,
        notes,
    };
    if let (Some(mut g), Some(b), Some(bin), Some(n)) = (group.take(), base, nsys_bin, &cfg.nsys) {
        log("shutting the server down (SIGINT to its process group) ...");
        let status = g.shutdown();
        drop(g);
        let rep = nsys::report_path(&b);
        if !rep.is_file() {
            let why = match (cfg.engine, cfg.tllm_range()) {
                (Engine::Trtllm, Some(r)) => format!(
                    "TensorRT-LLM never reached iterations {r} during --hold: drive load (--drive), \
                     raise --hold, or lower --start-step"
                ),
                _ => "vLLM needs --profiler-config.profiler=cuda (>= 0.13) or \
                      VLLM_TORCH_CUDA_PROFILE=1 (0.12), SGLang activities CUDA_PROFILER"
                    .to_owned(),
            };
            return Err(Error::environment(format!(
                "the engine answered but nsys wrote no {} (nsys exit: {}): the capture range never \
                 opened; {why}; see nsys's output above",
                rep.display(),
                status.map(|s| s.to_string()).unwrap_or_else(|| "unknown".into())
            )));
        }
        log(&format!("exporting {} to SQLite ...", rep.display()));
        let sqlite = nsys::export(&bin, &b, n.export_timeout)?;
        summary.nsys_report = Some(rep);
        summary.sqlite = Some(sqlite);
    } else if let (Some(dir), Some(before)) = (&cfg.trace_dir, before) {
        let found = new_traces(dir, &before, cfg.trace_wait, &mut group)?;
        if found.is_empty() {
            return Err(Error::environment(format!(
                "the engine answered but no trace appeared in {} within {} s: it must be the \
                 server's trace directory on this machine (vLLM: --profiler-config.torch_profiler_dir; \
                 SGLang: output_dir), or raise --trace-wait; see the engine's log",
                dir.display(),
                cfg.trace_wait.as_secs_f64()
            )));
        }
        summary.traces = found;
    } else {
        summary.trace_note = Some(match cfg.engine {
            Engine::Vllm => "written by the server to its --profiler-config.torch_profiler_dir \
                             (pass --trace-dir DIR to check it)"
                .into(),
            Engine::Sglang => "written by the server to SGLANG_TORCH_PROFILER_DIR (default /tmp); \
                               pass --trace-dir DIR to choose and check it"
                .into(),
            Engine::Trtllm => "TensorRT-LLM is captured under nsys only (--nsys-out)".into(),
        });
    }
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(engine: Engine) -> Config {
        Config {
            engine,
            url: "http://127.0.0.1:1".into(),
            num_steps: 5,
            start_step: None,
            activities: None,
            by_stage: false,
            detailed_annotations: false,
            drive: None,
            warmup: Duration::ZERO,
            hold: Duration::ZERO,
            timeout: Duration::from_secs(1),
            ready_timeout: Duration::from_secs(1),
            trace_dir: None,
            trace_wait: Duration::ZERO,
            nsys: None,
        }
    }

    #[test]
    fn vllm_body_maps_steps_to_iterations() {
        let mut c = cfg(Engine::Vllm);
        c.start_step = Some(3);
        assert_eq!(
            c.start_body(),
            Some(json!({"max_iterations": 5, "delay_iterations": 3}))
        );
        c.num_steps = 0;
        c.start_step = None;
        assert_eq!(c.start_body(), None);
        assert!(!c.auto_stop());
    }

    #[test]
    fn sglang_body_and_nsys_activities() {
        let mut c = cfg(Engine::Sglang);
        c.by_stage = true;
        c.detailed_annotations = true;
        c.trace_dir = Some("/t".into());
        assert_eq!(
            c.start_body(),
            Some(
                json!({"num_steps": 5, "activities": ["CPU", "GPU"], "profile_by_stage": true,
                        "detailed_annotations": true, "output_dir": "/t"})
            )
        );
        assert!(c.auto_stop());
        c.nsys = Some(NsysConfig {
            program: "nsys".into(),
            out: "r".into(),
            server: vec![],
            shutdown_grace: Duration::ZERO,
            export_timeout: Duration::ZERO,
        });
        assert_eq!(
            c.start_body().unwrap()["activities"],
            json!(["CUDA_PROFILER"])
        );
        c.activities = Some(vec!["CPU".into()]);
        assert_eq!(c.validate().unwrap_err().exit_code(), crate::exit::INPUT);
    }

    #[test]
    fn flags_that_cannot_work() {
        let mut c = cfg(Engine::Vllm);
        c.by_stage = true;
        assert!(c.validate().is_err());
        let mut c = cfg(Engine::Sglang);
        c.by_stage = true;
        c.num_steps = 0;
        assert!(c.validate().unwrap_err().message.contains("--num-steps"));
    }

    #[test]
    fn trtllm_range_and_what_it_needs() {
        let mut c = cfg(Engine::Trtllm);
        // No nsys: nothing can open the capture range.
        let e = c.validate().unwrap_err();
        assert_eq!(e.exit_code(), crate::exit::INPUT);
        assert!(e.message.contains("--nsys-out"), "{}", e.message);
        c.nsys = Some(NsysConfig {
            program: "nsys".into(),
            out: "r".into(),
            server: vec!["trtllm-serve".into(), "m".into()],
            shutdown_grace: Duration::ZERO,
            export_timeout: Duration::ZERO,
        });
        assert!(c.validate().is_ok());
        // 5 steps from the default first iteration: both ends profiled.
        assert_eq!(c.tllm_range().as_deref(), Some("10-14"));
        c.start_step = Some(100);
        c.num_steps = 51;
        assert_eq!(c.tllm_range().as_deref(), Some("100-150"));
        assert_eq!(c.start_body(), None);
        assert!(!c.auto_stop());
        c.num_steps = 0;
        assert_eq!(c.tllm_range(), None);
        assert!(c.validate().unwrap_err().message.contains("--num-steps"));
        // Never for the other engines.
        let mut v = cfg(Engine::Vllm);
        v.start_step = Some(3);
        assert_eq!(v.tllm_range(), None);
    }
}
