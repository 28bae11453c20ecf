//! `stepgate analyze`: per-GPU busy and idle time and kernels ranked by exclusive time.

use std::path::PathBuf;

use crate::analysis::{Analysis, SourceInfo, SCHEMA_VERSION};
use crate::categories::Categorizer;
use crate::exit::{Error, Result, OK};
use crate::report::{self, Format};
use crate::timing::overlap;
use crate::trace::Trace;

const EXAMPLE: &str = "Examples:
  stepgate analyze report.sqlite
  stepgate analyze report.nsys-rep --device 0 --top 20 --format markdown
  stepgate analyze trace.pt.trace.json.gz --format json > analysis.json";

#[derive(Debug, clap::Args)]
#[command(after_help = EXAMPLE)]
pub struct Args {
    /// nsys SQLite export (.sqlite), .nsys-rep/.qdrep (needs nsys on PATH), Kineto
    /// .json/.json.gz, or a directory of per-rank Kineto traces.
    pub report: PathBuf,
    /// Only this device id.
    #[arg(long, allow_negative_numbers = true)]
    pub device: Option<i64>,
    /// Kernel rows per device in table and markdown output (JSON and CSV have all).
    #[arg(long, default_value_t = 15, allow_negative_numbers = true, value_parser = crate::commands::numbers::rows_flag)]
    pub top: usize,
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    #[command(flatten)]
    pub step: crate::commands::stepflags::StepFlags,
    /// Also write a self-contained HTML report with charts (busy/idle, categories).
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Leave step finding out (faster on huge reports when only kernels matter).
    #[arg(long)]
    pub no_steps: bool,
}

/// Analyse a loaded trace: per-device summaries, optionally one device.
pub fn analyze_trace(trace: &Trace, cats: &Categorizer, device: Option<i64>) -> Result<Analysis> {
    let mut devices = overlap::device_summaries(trace, cats)?;
    if let Some(d) = device {
        let known: Vec<String> = devices.iter().map(|x| x.device.to_string()).collect();
        devices.retain(|x| x.device == d);
        if devices.is_empty() {
            return Err(Error::input(format!(
                "device {d} has no GPU activity in this report; devices with activity: {}",
                known.join(", ")
            )));
        }
    }
    Ok(Analysis {
        schema_version: SCHEMA_VERSION,
        tool: format!("stepgate {}", env!("CARGO_PKG_VERSION")),
        source: SourceInfo::from(&trace.meta),
        warnings: trace.meta.warnings.clone(),
        devices,
        steps: None,
    })
}

pub fn run(args: &Args) -> Result<u8> {
    crate::output::Plan::new()
        .add("--html", args.html.as_deref())
        .check(&{
            let mut inputs = vec![crate::output::Input::report(&args.report)];
            inputs.extend(crate::commands::step_inputs(&args.step));
            inputs
        })?;
    let cats = crate::commands::stepflags::categorizer(args.step.categories.as_ref())?;
    let trace = if args.no_steps {
        crate::source::load_with(&args.report, &crate::source::LoadOptions::ops_only())?
    } else {
        crate::commands::stepflags::load_for_steps(&args.report, &args.step)?
    };
    let mut analysis = analyze_trace(&trace, &cats, args.device)?;
    crate::phases::mark("analyze: per-device sweep");
    if !args.no_steps {
        let mut r = crate::commands::stepflags::steps_of(&trace, &args.step, &cats, 5)?;
        if let Some(d) = args.device {
            r.steps.retain(|s| s.device == Some(d));
        }
        analysis.steps = Some(r);
        crate::phases::mark("steps: attribution and assembly");
    }
    if let Some(p) = &args.html {
        let path = args.report.display().to_string();
        let page = report::html::analyze::render(&path, &analysis, args.top);
        crate::output::write_atomic(p, page.as_bytes())?;
    }
    crate::output::print(&report::analyze::render(&analysis, args.format, args.top))?;
    crate::phases::mark("output written");
    Ok(OK)
}
