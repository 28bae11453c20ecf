//! `stepgate steps`: find every engine step, project it onto the GPU, price it against
//! its floor and name its shape.

use crate::commands::headings::OUTPUT;
use crate::commands::viewflags::{FormatFlag, WideFlag};
use std::path::PathBuf;

use crate::commands::document::{Document, Shown};
use crate::commands::stepflags::StepFlags;
use crate::exit::{Result, OK};
use crate::pipeline::plan::TOP_KERNELS;
use crate::report::{self, Format};

const EXAMPLE: &str = "Examples:
  stepgate steps report.sqlite
  stepgate steps report.sqlite --kind decode --each
  stepgate steps report.sqlite --steps 'FSDP::.*' --format json
  stepgate steps report.sqlite --steps graphs --launch-cost 4.1
  stepgate steps trace.pt.trace.json.gz --format markdown

--steps: auto tries, in order, and keeps the first that finds steps:
  marker     engine step markers: vLLM execute_…, SGLang step[…], TensorRT-LLM
             _forward_step, PyTorch ProfilerStep#N (emit_nvtx suffixes ignored)
  scheduler  SGLang scheduler.run_batch, vLLM gpu_model_runner: forward scopes
  python     python-stack spans of vLLM execute_model / SGLang run_batch (torch traces)
  sync       recurring host syncs on each process's busiest launching thread
  graphs     CUDA-graph launches, back-to-back launches of different graphs grouped
  gaps       GPU activity split at idle gaps (--gap-us)
or give any of those names, or a regex over NVTX/annotation range names (a range in
a named NVTX domain matches as Domain:Name, as nsys shows it, or by its bare name).";

#[derive(Debug, clap::Args)]
#[command(after_help = crate::commands::headings::MORE,
    after_long_help = EXAMPLE)]
pub struct Args {
    /// nsys SQLite export, .nsys-rep, Kineto .json/.json.gz, or a directory of ranks.
    pub report: PathBuf,
    #[command(flatten)]
    pub names: WideFlag,
    #[command(flatten)]
    pub step: StepFlags,
    /// One row per step after the summary.
    #[arg(long, help_heading = OUTPUT)]
    pub each: bool,
    /// After the answer: the diagnosis, per-class tables, layers and spread (JSON, HTML
    /// and markdown always have them).
    #[arg(long, help_heading = OUTPUT)]
    pub detail: bool,
    /// Kernel rows kept per step in JSON.
    #[arg(long, default_value_t = TOP_KERNELS, allow_negative_numbers = true, value_parser = crate::commands::numbers::rows_flag, help_heading = OUTPUT, hide_short_help = true)]
    pub top: usize,
    #[command(flatten)]
    pub output: FormatFlag,
    /// Also write the steps and the GPU work under them as a Chrome/Perfetto trace JSON
    /// (opens in ui.perfetto.dev and chrome://tracing).
    #[arg(long, value_name = "FILE", help_heading = OUTPUT)]
    pub perfetto: Option<PathBuf>,
    /// Only steps A to B−1 of each series (and what runs meanwhile) in --perfetto.
    // A value that starts with `-` (`-1..3`) is this flag's to refuse, naming itself, not
    // clap's "unexpected argument".
    #[arg(long, value_name = "A..B", requires = "perfetto", help_heading = OUTPUT,
          allow_hyphen_values = true, value_parser = perfetto_steps_flag, hide_short_help = true)]
    pub perfetto_steps: Option<String>,
    /// Also write a self-contained HTML report with charts.
    #[arg(long, value_name = "FILE", help_heading = OUTPUT)]
    pub html: Option<PathBuf>,
}

/// Check `--perfetto-steps` while parsing flags: the error names the flag and `A..B`.
fn perfetto_steps_flag(s: &str) -> std::result::Result<String, String> {
    crate::export::perfetto::StepWindow::parse(s)
        .map(|_| s.to_owned())
        .map_err(|e| e.message)
}

/// The steps report: read, found, priced, its files written (`--perfetto`, `--html`),
/// rendered as `shown` asks.
pub fn document(args: &Args, shown: Shown) -> Result<Document> {
    let window = args
        .perfetto_steps
        .as_deref()
        .map(crate::export::perfetto::StepWindow::parse)
        .transpose()?;
    let mut plan = crate::output::Plan::new();
    plan.add("--perfetto", args.perfetto.as_deref())
        .add("--html", args.html.as_deref());
    let mut inputs = vec![crate::output::Input::report(&args.report)];
    inputs.extend(args.step.inputs());
    plan.check(&inputs)?;
    let steps_plan = args.step.plan(args.top)?;
    let trace = crate::pipeline::steps::load(&args.report, &steps_plan)?;
    // Table and markdown print the loader's warnings under the headline; JSON and CSV
    // carry them in the document, so the command line says them on stderr too.
    if shown.cli && matches!(shown.format, Format::Json | Format::Csv) {
        use std::io::Write;
        let mut err = std::io::stderr().lock();
        for w in &trace.meta.warnings {
            // A failed stderr write must not turn a result into a crash.
            let _ = writeln!(err, "warning: {w}");
        }
    }
    let run = crate::pipeline::steps::run(&trace, &steps_plan)?;
    let r = &run.report;
    crate::phases::mark("steps: attribution and assembly");
    let path = args.report.display().to_string();
    let mut files: Vec<(&std::path::Path, Vec<u8>)> = Vec::new();
    if let Some(p) = &args.perfetto {
        files.push((
            p,
            crate::export::perfetto::render(&trace, r, window)?.into_bytes(),
        ));
    }
    if let Some(p) = &args.html {
        let roofs = run.pricing.as_ref().map(|p| report::html::steps::Roofs {
            gpu_name: p.gpu.name,
            bandwidth_bytes_per_s: p.gpu.hbm_bytes_per_s,
            peak_flops_per_s: p.gpu.bf16_flops_per_s,
        });
        let page = report::html::steps::render(&path, r, roofs.as_ref());
        files.push((p, page.into_bytes()));
    }
    crate::commands::write_files(&files)?;
    let opts = report::steps::Options {
        each: args.each,
        wide: args.names.wide,
        detail: args.detail,
        fit: shown.fit,
    };
    let text = match shown.format {
        Format::Json => json(r, steps_plan.find.workers),
        _ => report::steps::render(&path, r, shown.format, &opts),
    };
    Ok(Document::new(text, OK))
}

/// The JSON document, its steps (nine tenths of it) written on every thread: the bytes
/// `report::steps::render` writes for JSON, at every `--threads`.
fn json(r: &crate::wire::steps::StepsReport, threads: usize) -> String {
    crate::text::to_json_last(r, "steps", &r.steps, threads).unwrap_or_else(|| report::to_json(r))
}

pub fn run(args: &Args) -> Result<u8> {
    let doc = document(args, Shown::cli(args.output.format, args.names.wide))?;
    crate::commands::stdout::print(&doc.text)?;
    crate::phases::mark("output written");
    Ok(doc.exit_code)
}
