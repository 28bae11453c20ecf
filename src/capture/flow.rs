//! The capture, start to finish, as one sequence of named steps: check everything → (start
//! the server under nsys) → wait until ready → (drive load) → arm, wait, stop → (shut the
//! server down, finish and export the report) or find the torch traces → the summary.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::config::{Config, TRTLLM_DEFAULT_START};
use super::drive::{self, Driver, Load};
use super::engine::EngineClient;
use super::nsys;
use super::server::ServerGroup;
use super::traces::{self, Snapshot};
use super::watch::Watch;
use super::{check, interrupt};
use crate::exit::{Error, Result};
use crate::operating_point::sidecar::write_beside;
use crate::wire::capture::{CaptureSidecar, Drive, DriveCounts, Engine, OperatingPoint, Summary};

/// Version of the JSON summary.
pub const SCHEMA_VERSION: u32 = 1;

/// A server started under nsys: the nsys binary and the report base name.
struct Started {
    bin: PathBuf,
    base: PathBuf,
}

/// Run one capture; progress lines go to `log`.
pub fn run(cfg: &Config, log: &mut dyn FnMut(&str)) -> Result<Summary> {
    cfg.validate()?;
    let client = EngineClient::new(cfg.engine, &cfg.url, cfg.timeout)?;
    let mut notes = cfg.zero_notes();
    prepare_trace_dir(cfg)?;
    let mut watch = Watch::default();
    let started = start_server(cfg, &mut watch, &mut notes, log)?;
    let (ready_via, ready_after_ms) = wait_until_ready(cfg, &client, &mut watch, log)?;
    let (driver, operating_point) = start_load(cfg, &client, &mut watch, log)?.unzip();
    let before = cfg.trace_dir.as_deref().map(traces::snapshot);
    let body = cfg.start_body();
    let stopped_by = profile_window(cfg, &client, body.as_ref(), &mut watch, log)?;
    let drive = stop_load(driver.as_ref(), &mut notes);
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
        operating_point,
        nsys_report: None,
        sqlite: None,
        traces: Vec::new(),
        trace_note: None,
        notes,
    };
    match started {
        Some(s) => finish_nsys(cfg, &s, &mut watch, &mut summary, log)?,
        None => find_traces(cfg, before.as_ref(), &mut watch, &mut summary)?,
    }
    write_sidecar(cfg, &mut summary)?;
    Ok(summary)
}

/// With `--drive` and an exported report: the load the capture ran at, beside the report
/// (`BASE.capture.json`), where `steps` and `gate` read it. Only what was sent is written:
/// the prompt's token count is the engine tokenizer's, so it stays unknown.
fn write_sidecar(cfg: &Config, summary: &mut Summary) -> Result<()> {
    let (Some(report), Some(point)) = (&summary.sqlite, &summary.operating_point) else {
        return Ok(());
    };
    let sidecar = CaptureSidecar {
        engine: Some(cfg.engine.key().to_owned()),
        model: point.model.clone(),
        drive: Some(Drive {
            concurrency: u64::from(point.concurrency),
            prompt_tokens: None,
            output_tokens: Some(u64::from(point.max_tokens)),
        }),
        ..CaptureSidecar::new()
    };
    let path = write_beside(report, &sidecar)?;
    summary.notes.push(format!(
        "wrote {} (the driven load, read by steps and gate)",
        path.display()
    ));
    Ok(())
}

/// `--trace-dir` exists before the engine is told about it.
fn prepare_trace_dir(cfg: &Config) -> Result<()> {
    if let Some(d) = &cfg.trace_dir {
        std::fs::create_dir_all(d)
            .map_err(|e| Error::usage(format!("cannot create --trace-dir {}: {e}", d.display())))?;
    }
    Ok(())
}

/// Step 1, with a server command: check it, then start it under nsys in a process group of
/// its own (held by `watch`, which shuts it down on any error).
fn start_server(
    cfg: &Config,
    watch: &mut Watch,
    notes: &mut Vec<String>,
    log: &mut dyn FnMut(&str),
) -> Result<Option<Started>> {
    let Some(n) = &cfg.nsys else {
        for note in notes.iter() {
            log(&format!("note: {note}"));
        }
        return Ok(None);
    };
    let bin = nsys::find(&n.program, std::env::var_os("PATH"))?;
    let base = nsys::base_name(&n.out);
    let rep = nsys::report_path(&base);
    let sqlite = nsys::sqlite_path(&base);
    // nsys 2022.4 refuses to replace a .qdstrm and leaves the capture in /tmp instead.
    for p in [&rep, &sqlite, &nsys::qdstrm_path(&base)] {
        if p.exists() {
            return Err(Error::usage(format!(
                "{} already exists: choose another --nsys-out or remove it",
                p.display()
            )));
        }
    }
    let mut plan = crate::output::Plan::new();
    plan.add("--nsys-out", Some(&rep))
        .add("--nsys-out", Some(&sqlite));
    plan.check(&[])?;
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
    for note in notes.iter() {
        log(&format!("note: {note}"));
    }
    let args = nsys::profile_args(&base, &n.server);
    log(&format!(
        "starting: {} {}",
        bin.display(),
        args.iter()
            .map(|a| a.to_string_lossy())
            .collect::<Vec<_>>()
            .join(" ")
    ));
    watch.group = Some(ServerGroup::spawn(&bin, &args, &env, n.shutdown_grace)?);
    Ok(Some(Started { bin, base }))
}

/// Step 2: readiness. Returns the route that answered and how long it took.
fn wait_until_ready(
    cfg: &Config,
    client: &EngineClient,
    watch: &mut Watch,
    log: &mut dyn FnMut(&str),
) -> Result<(&'static str, i64)> {
    let t0 = Instant::now();
    log(&format!(
        "waiting for {} at {} ...",
        cfg.engine.name(),
        client.base
    ));
    let via = watch.ready(client, cfg.ready_timeout)?;
    let ms = t0.elapsed().as_millis() as i64;
    log(&format!("ready (GET {via} answered 200 after {ms} ms)"));
    Ok((via, ms))
}

/// Step 3, with `--drive`: load, warmed up so the window lands on steady decode. Returns
/// the driver and the load it runs.
fn start_load(
    cfg: &Config,
    client: &EngineClient,
    watch: &mut Watch,
    log: &mut dyn FnMut(&str),
) -> Result<Option<(Driver, OperatingPoint)>> {
    let Some(d) = &cfg.drive else {
        return Ok(None);
    };
    let model = match (&d.model, cfg.engine) {
        (Some(m), _) => Some(m.clone()),
        (None, Engine::Vllm | Engine::Trtllm) => Some(client.first_model()?),
        (None, Engine::Sglang) => None,
    };
    let drv = Driver::start(&Load {
        engine: cfg.engine,
        base: client.base.clone(),
        model: model.clone(),
        concurrency: d.concurrency,
        max_tokens: d.max_tokens,
        timeout: cfg.timeout,
    })?;
    log(&format!(
        "driving {} request(s) in flight (max_tokens {}); warming up {} s",
        d.concurrency,
        d.max_tokens,
        cfg.warmup.as_secs_f64()
    ));
    watch.sleep(cfg.warmup)?;
    let point = OperatingPoint {
        concurrency: d.concurrency,
        prompt: drive::PROMPT.to_owned(),
        max_tokens: d.max_tokens,
        model,
    };
    Ok(Some((drv, point)))
}

/// Step 4: arm, wait, stop (TensorRT-LLM: hold while it profiles its own iteration range).
/// Returns what stopped the profiler. An engine left armed by an error is sent
/// `/stop_profile`.
fn profile_window(
    cfg: &Config,
    client: &EngineClient,
    body: Option<&Value>,
    watch: &mut Watch,
    log: &mut dyn FnMut(&str),
) -> Result<String> {
    if let Some(r) = cfg.tllm_range() {
        // No HTTP arming: the server profiles iterations A-B by itself while load runs.
        log(&format!(
            "TensorRT-LLM profiles iterations {r} by itself; holding {} s",
            cfg.hold.as_secs_f64()
        ));
        watch.sleep(cfg.hold)?;
        let by = format!(
            "TensorRT-LLM (TLLM_PROFILE_START_STOP={r}), server shut down after --hold {} s",
            cfg.hold.as_secs_f64()
        );
        log(&format!("profiler stopped by {by}"));
        return Ok(by);
    }
    log(&format!(
        "POST {} {}",
        client.url("/start_profile"),
        body.map(Value::to_string).unwrap_or_default()
    ));
    let (c, b) = (client.clone(), body.cloned());
    if let Err(e) = watch.call(move || c.start_profile(b.as_ref())) {
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
        watch.sleep(cfg.hold)?;
        let c = client.clone();
        watch.call(move || c.stop_profile())?;
        Ok("POST /stop_profile".into())
    })();
    if armed.is_err() {
        stop_best_effort(cfg);
    }
    let by = armed?;
    log(&format!("profiler stopped by {by}"));
    Ok(by)
}

/// Leave no engine armed behind us after an error (best effort, short timeout).
fn stop_best_effort(cfg: &Config) {
    if let Ok(c) = EngineClient::new(cfg.engine, &cfg.url, Duration::from_secs(5)) {
        let _ = c.stop_profile();
    }
}

/// Stop the load; a note when none of it got through (the trace may hold no decode).
fn stop_load(driver: Option<&Driver>, notes: &mut Vec<String>) -> Option<DriveCounts> {
    let d = driver?;
    d.stop();
    let c = d.counts();
    if c.completed == 0 && c.failed > 0 {
        notes.push(format!(
            "no driven request succeeded ({} failed; last: {}): the trace may hold no decode steps",
            c.failed,
            d.last_error().unwrap_or_default()
        ));
    }
    Some(c)
}

/// Step 5 under nsys: shut the server down, finish the report nsys left, export it.
fn finish_nsys(
    cfg: &Config,
    s: &Started,
    watch: &mut Watch,
    summary: &mut Summary,
    log: &mut dyn FnMut(&str),
) -> Result<()> {
    log("shutting the server down (SIGINT to its process group) ...");
    let status = watch.group.take().and_then(|mut g| g.shutdown());
    let Some(rep) = nsys::finish_report(&s.bin, &s.base)? else {
        return Err(range_never_opened(cfg, &s.base, status));
    };
    log(&format!("exporting {} to SQLite ...", rep.display()));
    let export_timeout = cfg
        .nsys
        .as_ref()
        .map_or(Duration::from_secs(600), |n| n.export_timeout);
    summary.sqlite = Some(nsys::export(&s.bin, &s.base, export_timeout)?);
    summary.nsys_report = Some(rep);
    Ok(())
}

/// nsys wrote no report: the capture range never opened. Where this machine has no usable
/// GPU that is the cause (cudaProfilerStart fails there, so nothing can open it) and is said
/// first; otherwise, which engine flag opens the range. nsys itself says little: 2022.4
/// prints an empty "Generated:" list and exits 0 (docs/capture.md).
fn range_never_opened(
    cfg: &Config,
    base: &std::path::Path,
    status: Option<std::process::ExitStatus>,
) -> Error {
    let why = match (cfg.engine, cfg.tllm_range()) {
        (Engine::Trtllm, Some(r)) => format!(
            "TensorRT-LLM never reached iterations {r} during --hold: drive load (--drive), \
             raise --hold, or lower --start-step"
        ),
        (Engine::Sglang, _) => "SGLang opens it when armed with activities CUDA_PROFILER, on \
                                its first GPU"
            .to_owned(),
        _ => "vLLM needs --profiler-config.profiler=cuda (>= 0.13) or VLLM_TORCH_CUDA_PROFILE=1 \
              (0.12)"
            .to_owned(),
    };
    let cause = match crate::probe::cuda::device_status() {
        crate::probe::cuda::DeviceStatus::Usable(_) => why,
        other => format!(
            "on this machine {other}, so cudaProfilerStart fails and nothing can open it (on a \
             GPU machine: {why})"
        ),
    };
    Error::environment(format!(
        "the engine answered but nsys wrote no {} (nsys exit: {}): the capture range never \
         opened; {cause}; see nsys's output above",
        nsys::report_path(base).display(),
        status.map_or_else(|| "unknown".into(), |s| s.to_string())
    ))
}

/// Step 5 without nsys: the torch traces that appeared, or where they went.
fn find_traces(
    cfg: &Config,
    before: Option<&Snapshot>,
    watch: &mut Watch,
    summary: &mut Summary,
) -> Result<()> {
    if let (Some(dir), Some(before)) = (&cfg.trace_dir, before) {
        let found = traces::new_traces(dir, before, cfg.trace_wait, watch)?;
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
        return Ok(());
    }
    summary.trace_note = Some(match cfg.engine {
        Engine::Vllm => "written by the server to its --profiler-config.torch_profiler_dir \
                         (pass --trace-dir DIR to check it)"
            .into(),
        Engine::Sglang => "written by the server to SGLANG_TORCH_PROFILER_DIR (default /tmp); \
                           pass --trace-dir DIR to choose and check it"
            .into(),
        Engine::Trtllm => "TensorRT-LLM is captured under nsys only (--nsys-out)".into(),
    });
    Ok(())
}
