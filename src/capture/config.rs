//! What one capture is asked to do, and every check on it that can run before anything
//! starts: each number in range with its flag named, flag combinations that cannot work,
//! the URL, and the files a later step needs (exit 2, docs/capture.md).

use std::path::PathBuf;
use std::time::Duration;

use serde_json::{json, Map, Value};

use super::engine;
use crate::exit::{Error, Result};
use crate::wire::capture::Engine;

/// TensorRT-LLM's first profiled iteration when --start-step is not given: past the first
/// iterations, which run while load is still ramping up.
pub(crate) const TRTLLM_DEFAULT_START: u32 = 10;

/// The longest any duration flag may be: a week. Longer is a typo, and an unbounded value
/// would overflow the clock arithmetic (`Duration::from_secs_f64` panics above ~1.8e19 s,
/// `Instant + Duration` far below that).
pub(crate) const MAX_SECONDS: f64 = 7.0 * 86_400.0;

/// Most requests `--drive` keeps in flight: each is a thread and a connection of its own,
/// and no engine batches more than a few thousand requests per step.
pub(crate) const MAX_CONCURRENCY: u32 = 4096;

/// SGLang's `/start_profile` activities (`sglang/srt/managers/io_struct.py`, `ProfileReq`).
pub(crate) const SGLANG_ACTIVITIES: [&str; 5] = ["CPU", "GPU", "MEM", "CUDA_PROFILER", "RPD"];

/// A duration flag's seconds, as typed, checked: a number, not negative, at most
/// [`MAX_SECONDS`]. What zero means is the flag's own business ([`Config::validate`]).
pub fn seconds(flag: &str, value: f64) -> Result<Duration> {
    if !value.is_finite() {
        return Err(Error::usage(format!(
            "{flag} {value}: give a finite number of seconds"
        )));
    }
    if value < 0.0 {
        return Err(Error::usage(format!(
            "{flag} {value}: seconds cannot be negative"
        )));
    }
    if value > MAX_SECONDS {
        return Err(Error::usage(format!(
            "{flag} {value} s is beyond the {MAX_SECONDS} s (7 days) stepgate accepts; check \
             the value"
        )));
    }
    Ok(Duration::from_secs_f64(value))
}

/// A count flag, as typed, checked to lie in `[min, max]`.
pub fn count(flag: &str, value: i64, min: u32, max: u32) -> Result<u32> {
    match u32::try_from(value) {
        Ok(v) if (min..=max).contains(&v) => Ok(v),
        _ if value < i64::from(min) => {
            Err(Error::usage(format!("{flag} {value}: give at least {min}")))
        }
        _ => Err(Error::usage(format!(
            "{flag} {value} is beyond the {max} stepgate accepts; check the value"
        ))),
    }
}

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
    /// Files a later step reads (`--then gate --baseline FILE`), with the flag that named
    /// each: checked before the server starts, so a typo never costs a capture.
    pub inputs: Vec<(&'static str, PathBuf)>,
}

impl Config {
    /// Whether the engine stops by itself: SGLang with `num_steps` (vLLM's `max_iterations`
    /// also stops, but a later `/stop_profile` is a logged no-op there, so it is still sent).
    pub(crate) fn auto_stop(&self) -> bool {
        self.engine == Engine::Sglang && self.num_steps > 0
    }

    fn activities(&self) -> Vec<String> {
        match (&self.activities, &self.nsys) {
            (Some(a), _) => a.clone(),
            (None, Some(_)) => vec!["CUDA_PROFILER".into()],
            (None, None) => vec!["CPU".into(), "GPU".into()],
        }
    }

    /// The last profiled TensorRT-LLM iteration, when it fits in a u32.
    fn tllm_last(&self) -> Option<(u32, u32)> {
        let a = self.start_step.unwrap_or(TRTLLM_DEFAULT_START);
        a.checked_add(self.num_steps.checked_sub(1)?)
            .map(|b| (a, b))
    }

    /// TensorRT-LLM's `TLLM_PROFILE_START_STOP` value: iterations `A-B`, both profiled
    /// (PyExecutor calls cudaProfilerStart before iteration A and cudaProfilerStop after B).
    pub(crate) fn tllm_range(&self) -> Option<String> {
        if self.engine != Engine::Trtllm {
            return None;
        }
        self.tllm_last().map(|(a, b)| format!("{a}-{b}"))
    }

    /// Everything that can be refused before the server starts (exit 2): flag combinations
    /// that cannot work, durations whose zero means nothing, the URL, and missing inputs.
    pub fn validate(&self) -> Result<()> {
        self.validate_engine_flags()?;
        self.validate_values()?;
        engine::parse_base(&self.url)?;
        for (flag, p) in &self.inputs {
            if !p.is_file() {
                return Err(Error::usage(format!(
                    "{flag} {}: no such file; the capture would run and then fail on it",
                    p.display()
                )));
            }
        }
        Ok(())
    }

    fn validate_engine_flags(&self) -> Result<()> {
        let refuse = |checks: &[(bool, &str)]| match checks.iter().find(|(on, _)| *on) {
            Some((_, m)) => Err(Error::usage(*m)),
            None => Ok(()),
        };
        match self.engine {
            Engine::Trtllm => refuse(&[
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
                (
                    self.tllm_last().is_none(),
                    "--start-step plus --num-steps runs past iteration 4294967295: lower them",
                ),
                (
                    self.hold.is_zero(),
                    "--hold 0 shuts TensorRT-LLM down before any iteration ran: give the seconds \
                     of load it needs to reach the profiled iterations",
                ),
                (self.by_stage, "--by-stage is SGLang only"),
                (self.detailed_annotations, "--detailed-annotations is SGLang only"),
                (self.activities.is_some(), "--activities is SGLang only"),
                (
                    self.trace_dir.is_some(),
                    "--trace-dir is for torch-profiler traces; TensorRT-LLM is captured under nsys",
                ),
            ])?,
            Engine::Vllm => refuse(&[
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
            ])?,
            Engine::Sglang => {}
        }
        if self.by_stage && self.num_steps == 0 {
            return Err(Error::usage(
                "--by-stage needs --num-steps > 0 (SGLang's profile_by_stage does)",
            ));
        }
        if let Some(bad) = self
            .activities
            .iter()
            .flatten()
            .find(|a| !SGLANG_ACTIVITIES.contains(&a.as_str()))
        {
            return Err(Error::usage(format!(
                "--activities {bad:?} is not an SGLang profiler activity; give some of {}",
                SGLANG_ACTIVITIES.join(",")
            )));
        }
        if self.engine == Engine::Sglang
            && self.nsys.is_some()
            && !self.activities().iter().any(|a| a == "CUDA_PROFILER")
        {
            return Err(Error::usage(
                "under nsys SGLang must be armed with CUDA_PROFILER among --activities: it is what \
                 calls cudaProfilerStart and opens the capture range",
            ));
        }
        Ok(())
    }

    /// The values whose zero (or size) means nothing a capture can do.
    fn validate_values(&self) -> Result<()> {
        if self.timeout.is_zero() {
            return Err(Error::usage(
                "--timeout 0 makes every HTTP request time out at once: give the seconds one \
                 request may take (SGLang's /start_profile waits for its steps, so keep it long)",
            ));
        }
        if let Some(d) = &self.drive {
            count(
                "--concurrency",
                i64::from(d.concurrency),
                1,
                MAX_CONCURRENCY,
            )?;
            if d.max_tokens == 0 {
                return Err(Error::usage(
                    "--max-tokens 0: each driven request must generate at least 1 token",
                ));
            }
        }
        if let Some(n) = &self.nsys {
            if n.shutdown_grace.is_zero() {
                return Err(Error::usage(
                    "--shutdown-grace 0 would send SIGTERM before nsys can write its report: give \
                     the seconds nsys may take after SIGINT (default 120)",
                ));
            }
            if n.export_timeout.is_zero() {
                return Err(Error::usage(
                    "--export-timeout 0 leaves `nsys export` no time to run: give the seconds it \
                     may take (default 600)",
                ));
            }
        }
        Ok(())
    }

    /// What an accepted zero means, said once at the start of the capture.
    pub(crate) fn zero_notes(&self) -> Vec<String> {
        let mut notes = Vec::new();
        if self.ready_timeout.is_zero() {
            notes.push("--ready-timeout 0: one readiness check, no waiting".to_owned());
        }
        if self.drive.is_some() && self.warmup.is_zero() {
            notes.push("--warmup 0: the profiler is armed as soon as load starts".to_owned());
        }
        if self.hold.is_zero() && !self.auto_stop() && self.engine != Engine::Trtllm {
            notes.push(
                "--hold 0: /stop_profile follows /start_profile at once, so the window holds \
                 only the steps that ran between the two calls"
                    .to_owned(),
            );
        }
        if self.trace_dir.is_some() && self.trace_wait.is_zero() {
            notes.push("--trace-wait 0: the trace directory is checked once".to_owned());
        }
        notes
    }

    /// The `/start_profile` body (vLLM `StartProfileRequest`, SGLang `ProfileReq`).
    pub(crate) fn start_body(&self) -> Option<Value> {
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

#[cfg(test)]
mod tests;
