//! `stepgate capture`: arm the engine's profiler over HTTP, optionally with the server started
//! under `nsys profile -c cudaProfilerApi`, then hand the SQLite export to `steps` or `gate`.

use std::path::PathBuf;
use std::time::Duration;

use crate::capture::config::{self, Config, DriveConfig, NsysConfig, MAX_CONCURRENCY};
use crate::capture::{flow, interrupt};
use crate::exit::{Error, Result};
use crate::report::{capture as render, Format};
use crate::wire::capture::Engine;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum EngineArg {
    Vllm,
    Sglang,
    /// TensorRT-LLM (trtllm-serve): run under nsys with TLLM_PROFILE_START_STOP, no HTTP arming.
    Trtllm,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Then {
    Steps,
    Gate,
}

/// Run `stepgate capture --engine vllm --url http://localhost:8000` against a running
/// server, or `stepgate capture --engine sglang --nsys-out run -- python3 -m
/// sglang.launch_server ...` to start one under nsys.
#[derive(Debug, clap::Args)]
#[command(after_help = crate::commands::headings::MORE,
    after_long_help = "Examples:
  stepgate capture --engine vllm --url http://localhost:8000 --num-steps 5 --drive --concurrency 32
  stepgate capture --engine vllm --nsys-out runs/pr1 --then steps -- vllm serve MODEL --profiler-config.profiler=cuda
  VLLM_TORCH_CUDA_PROFILE=1 stepgate capture --engine vllm --nsys-out runs/pr1 -- vllm serve MODEL   (vLLM 0.12)
  stepgate capture --engine trtllm --num-steps 20 --drive --hold 30 --nsys-out runs/pr1 -- trtllm-serve MODEL
  SGLANG_ENABLE_NVTX_SCHEDULER=1 stepgate capture --engine sglang --num-steps 5 --drive --nsys-out runs/pr1 \\
      --then gate --baseline base.json -- python3 -m sglang.launch_server --model-path MODEL

Every number is checked before anything starts (negative, zero where zero means nothing,
beyond 7 days of seconds: refused with the flag named).

Exit codes: 0 ok · 2 a bad flag value or flags that cannot work together · 4 engine
unreachable or redirecting elsewhere, profiler not enabled (404), a session already active
(409), no trace appeared, nsys missing.")]
pub struct Args {
    /// Boxed: the capture flags are many, and `cli::Command` holds every subcommand's Args.
    #[command(flatten)]
    pub opts: Box<CaptureArgs>,
}

impl std::ops::Deref for Args {
    type Target = CaptureArgs;
    fn deref(&self) -> &CaptureArgs {
        &self.opts
    }
}

/// The capture flags.
#[derive(Debug, clap::Args)]
pub struct CaptureArgs {
    /// Which engine is listening.
    #[arg(long, value_enum)]
    pub engine: EngineArg,
    /// Server base URL (default: http://localhost:8000 for vLLM and TensorRT-LLM, :30000 for
    /// SGLang).
    #[arg(long)]
    pub url: Option<String>,
    /// Steps to capture: vLLM max_iterations, SGLang num_steps (auto-stop), TensorRT-LLM the
    /// length of TLLM_PROFILE_START_STOP; 0 = until stopped (vLLM, SGLang).
    #[arg(long, default_value_t = 5, allow_negative_numbers = true)]
    pub num_steps: i64,
    /// Skip this many steps first: vLLM delay_iterations, SGLang start_step; TensorRT-LLM:
    /// the first profiled iteration (default 10).
    #[arg(long, allow_negative_numbers = true, hide_short_help = true)]
    pub start_step: Option<i64>,
    /// SGLang activities (default CUDA_PROFILER under nsys, else CPU,GPU).
    #[arg(long, value_delimiter = ',', hide_short_help = true)]
    pub activities: Option<Vec<String>>,
    /// SGLang profile_by_stage: separate prefill and decode traces (needs --num-steps).
    #[arg(long, hide_short_help = true)]
    pub by_stage: bool,
    /// SGLang detailed_annotations: step spans carry their roofline inputs.
    #[arg(long, hide_short_help = true)]
    pub detailed_annotations: bool,
    /// Keep --concurrency requests in flight so the capture lands on steady decode.
    #[arg(long)]
    pub drive: bool,
    /// Requests in flight with --drive.
    #[arg(
        long,
        default_value_t = 8,
        requires = "drive",
        allow_negative_numbers = true,
        hide_short_help = true
    )]
    pub concurrency: i64,
    /// max_tokens of each driven request.
    #[arg(
        long,
        default_value_t = 128,
        requires = "drive",
        allow_negative_numbers = true,
        hide_short_help = true
    )]
    pub max_tokens: i64,
    /// Model name for vLLM's /v1/completions (default: the first of GET /v1/models).
    #[arg(long, requires = "drive")]
    pub model: Option<String>,
    /// Seconds of load before arming, with --drive.
    #[arg(
        long,
        default_value_t = 5.0,
        allow_negative_numbers = true,
        hide_short_help = true
    )]
    pub warmup: f64,
    /// Seconds armed before POST /stop_profile, when the engine does not stop by itself;
    /// TensorRT-LLM: seconds of load before the server is shut down.
    #[arg(
        long,
        default_value_t = 2.0,
        allow_negative_numbers = true,
        hide_short_help = true
    )]
    pub hold: f64,
    /// HTTP timeout per request, seconds (SGLang's /start_profile blocks until the steps ran).
    #[arg(
        long,
        default_value_t = 600.0,
        allow_negative_numbers = true,
        hide_short_help = true
    )]
    pub timeout: f64,
    /// Seconds to wait for the server to become ready.
    #[arg(
        long,
        default_value_t = 600.0,
        allow_negative_numbers = true,
        hide_short_help = true
    )]
    pub ready_timeout: f64,
    /// The server's torch-profiler trace directory on this machine (SGLang: sent as
    /// output_dir); new traces there are checked for and listed.
    #[arg(long)]
    pub trace_dir: Option<PathBuf>,
    /// Seconds to wait for a trace to appear in --trace-dir after the profiler stopped.
    #[arg(
        long,
        default_value_t = 60.0,
        allow_negative_numbers = true,
        hide_short_help = true
    )]
    pub trace_wait: f64,
    /// Start the server command under nsys, writing BASE.nsys-rep and BASE.sqlite.
    #[arg(long, value_name = "BASE", requires = "server")]
    pub nsys_out: Option<PathBuf>,
    /// The nsys program.
    #[arg(long, default_value = "nsys", hide_short_help = true)]
    pub nsys: String,
    /// Seconds nsys may take to write its report after the server is told to stop.
    #[arg(
        long,
        default_value_t = 120.0,
        allow_negative_numbers = true,
        hide_short_help = true
    )]
    pub shutdown_grace: f64,
    /// Seconds `nsys export` may take.
    #[arg(
        long,
        default_value_t = 600.0,
        allow_negative_numbers = true,
        hide_short_help = true
    )]
    pub export_timeout: f64,
    /// Hand the SQLite export to this subcommand.
    #[arg(long, value_enum, requires = "nsys_out")]
    pub then: Option<Then>,
    /// Baseline for `--then gate`.
    #[arg(long, requires = "then")]
    pub baseline: Option<PathBuf>,
    /// One more argument for the --then subcommand (repeat for several).
    #[arg(
        long,
        allow_hyphen_values = true,
        requires = "then",
        hide_short_help = true
    )]
    pub then_arg: Vec<String>,
    /// Output format of the capture summary.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// The server command (after `--`), run under nsys with --nsys-out.
    #[arg(last = true, value_name = "SERVER")]
    pub server: Vec<String>,
}

impl CaptureArgs {
    /// The library's capture config, every number checked by the library's own rules.
    fn config(&self) -> Result<Config> {
        let engine = match self.engine {
            EngineArg::Vllm => Engine::Vllm,
            EngineArg::Sglang => Engine::Sglang,
            EngineArg::Trtllm => Engine::Trtllm,
        };
        let url = self.url.clone().unwrap_or_else(|| {
            match engine {
                Engine::Vllm => "http://localhost:8000",
                Engine::Sglang => "http://localhost:30000",
                Engine::Trtllm => "http://localhost:8000",
            }
            .into()
        });
        if !self.server.is_empty() && self.nsys_out.is_none() {
            return Err(Error::usage(
                "a server command needs --nsys-out BASE: stepgate starts it under nsys",
            ));
        }
        let secs = config::seconds;
        let steps = |flag, v| config::count(flag, v, 0, u32::MAX);
        // Checked even without --drive (a typo is a typo), used only with it.
        let warmup = secs("--warmup", self.warmup)?;
        let drive = if self.drive {
            Some(DriveConfig {
                concurrency: config::count("--concurrency", self.concurrency, 1, MAX_CONCURRENCY)?,
                max_tokens: config::count("--max-tokens", self.max_tokens, 1, u32::MAX)?,
                model: self.model.clone(),
            })
        } else {
            None
        };
        let nsys = match &self.nsys_out {
            Some(out) => Some(NsysConfig {
                program: self.nsys.clone(),
                out: out.clone(),
                server: self.server.clone(),
                shutdown_grace: secs("--shutdown-grace", self.shutdown_grace)?,
                export_timeout: secs("--export-timeout", self.export_timeout)?,
            }),
            None => None,
        };
        Ok(Config {
            engine,
            url,
            num_steps: steps("--num-steps", self.num_steps)?,
            start_step: self
                .start_step
                .map(|v| steps("--start-step", v))
                .transpose()?,
            activities: self.activities.clone(),
            by_stage: self.by_stage,
            detailed_annotations: self.detailed_annotations,
            drive,
            warmup: if self.drive { warmup } else { Duration::ZERO },
            hold: secs("--hold", self.hold)?,
            timeout: secs("--timeout", self.timeout)?,
            ready_timeout: secs("--ready-timeout", self.ready_timeout)?,
            trace_dir: self.trace_dir.as_ref().map(|d| absolute(d)),
            trace_wait: secs("--trace-wait", self.trace_wait)?,
            nsys,
            inputs: self
                .baseline
                .iter()
                .map(|b| ("--baseline", b.clone()))
                .collect(),
        })
    }

    /// The argv `--then` hands over: `stepgate <steps|gate> SQLITE [--baseline FILE] [ARGS…]`.
    pub(crate) fn then_argv(&self, sqlite: &std::path::Path) -> Result<Option<Vec<String>>> {
        let Some(then) = self.then else {
            return Ok(None);
        };
        let mut argv = vec!["stepgate".to_owned()];
        argv.push(match then {
            Then::Steps => "steps".into(),
            Then::Gate => "gate".into(),
        });
        argv.push(sqlite.display().to_string());
        match (then, &self.baseline) {
            (Then::Gate, Some(b)) => {
                argv.push("--baseline".into());
                argv.push(b.display().to_string());
            }
            (Then::Gate, None) => {
                return Err(Error::usage("--then gate needs --baseline FILE"));
            }
            (Then::Steps, Some(_)) => {
                return Err(Error::usage("--baseline goes with --then gate"));
            }
            (Then::Steps, None) => {}
        }
        argv.extend(self.then_arg.iter().cloned());
        Ok(Some(argv))
    }
}

/// SGLang is told this directory in the request, so make it absolute first.
fn absolute(p: &std::path::Path) -> PathBuf {
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        std::env::current_dir()
            .map(|c| c.join(p))
            .unwrap_or_else(|_| p.to_path_buf())
    }
}

/// What the dispatcher does after a capture: exit, or run the command `--then` names.
#[derive(Debug, PartialEq, Eq)]
pub enum Next {
    Exit(u8),
    /// The argv of the `steps`/`gate` run on the export (`stepgate steps r.sqlite …`).
    Then(Vec<String>),
}

pub fn run(args: &Args) -> Result<Next> {
    // Check --then before spending a capture on it; the library checks the rest.
    args.then_argv(std::path::Path::new("-"))?;
    let cfg = args.config()?;
    cfg.validate()?;
    interrupt::install();
    // nsys shares our stderr and may leave its progress bar unterminated ("-----"): an
    // error after it starts on a line of its own, so it stays one whole line.
    let summary =
        flow::run(&cfg, &mut |line| note(&format!("capture: {line}"))).inspect_err(|_| note(""))?;
    // Through commands::stdout::print: a closed pipe (`… | head`) is not a panic.
    crate::commands::stdout::print(&render::render(&summary, args.format))?;
    let Some(sqlite) = &summary.sqlite else {
        return Ok(Next::Exit(crate::exit::OK));
    };
    let Some(argv) = args.then_argv(sqlite)? else {
        return Ok(Next::Exit(crate::exit::OK));
    };
    note(&format!("capture: then: {}", argv.join(" ")));
    Ok(Next::Then(argv))
}

/// A progress line on stderr; a closed stderr must not end the capture.
fn note(line: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "{line}");
}

#[cfg(test)]
mod tests {
    use clap::Parser;
    use std::path::Path;

    /// `stepgate capture …` as the capture flags alone (argv[1] is the subcommand name).
    #[derive(Debug, Parser)]
    struct Capture {
        #[command(flatten)]
        args: super::Args,
    }

    fn try_parse(argv: &[&str]) -> Result<super::Args, clap::Error> {
        assert_eq!(argv[1], "capture");
        let rest = std::iter::once(argv[0]).chain(argv[2..].iter().copied());
        Capture::try_parse_from(rest).map(|c| c.args)
    }

    fn parse(argv: &[&str]) -> super::Args {
        try_parse(argv).unwrap()
    }

    #[test]
    fn then_gate_argv() {
        let a = parse(&[
            "stepgate",
            "capture",
            "--engine",
            "vllm",
            "--nsys-out",
            "r",
            "--then",
            "gate",
            "--baseline",
            "b.json",
            "--then-arg",
            "--format",
            "--then-arg",
            "json",
            "--",
            "vllm",
            "serve",
            "m",
        ]);
        assert_eq!(a.server, ["vllm", "serve", "m"]);
        let argv = a.then_argv(Path::new("r.sqlite")).unwrap().unwrap();
        assert_eq!(
            argv,
            [
                "stepgate",
                "gate",
                "r.sqlite",
                "--baseline",
                "b.json",
                "--format",
                "json"
            ]
        );
    }

    #[test]
    fn then_needs_nsys_out_and_gate_needs_a_baseline() {
        let no_out = try_parse(&["stepgate", "capture", "--engine", "vllm", "--then", "steps"]);
        assert!(no_out.is_err());
        let a = parse(&[
            "stepgate",
            "capture",
            "--engine",
            "vllm",
            "--nsys-out",
            "r",
            "--then",
            "gate",
            "--",
            "x",
        ]);
        let e = a.then_argv(Path::new("r.sqlite")).unwrap_err();
        assert_eq!(e.exit_code(), crate::exit::INPUT);
    }
}
