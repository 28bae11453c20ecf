//! `stepgate baseline record|show`: store a report's per-step samples as a versioned
//! baseline file, and show what a baseline holds.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::baseline::{read_baseline, samples_from_steps, write_baseline, Baseline, BaselineMeta};
use crate::commands::stepflags::{steps_of, StepFlags};
use crate::exit::{Error, Result};
use crate::report::table::{Align, Table};
use crate::report::{fmt_int, fmt_us};
use crate::trace::SourceFormat;

/// Load a report, find and price its steps, and turn them into a baseline.
pub fn baseline_from_report(path: &Path, flags: &StepFlags) -> Result<Baseline> {
    Ok(baseline_and_steps(path, flags)?.0)
}

/// The baseline plus the steps and source facts `--export` writes (one load for both).
pub fn baseline_and_steps(
    path: &Path,
    flags: &StepFlags,
) -> Result<(
    Baseline,
    crate::timing::steps::StepsReport,
    crate::dataset::RunSource,
)> {
    let trace = crate::commands::stepflags::load_for_steps(path, flags)?;
    crate::source::print_warnings(&trace);
    let cats = crate::commands::stepflags::categorizer(flags.categories.as_ref())?;
    let report = steps_of(&trace, flags, &cats, 5)?;
    let src = crate::commands::export::run_source(&trace, flags);
    if report.steps.len() == report.steps_without_gpu_work {
        return Err(Error::input(format!(
            "{}: no steps with GPU work were found (method {}): check --steps and --kind",
            path.display(),
            report.method
        )));
    }
    let gpu_name = flags
        .floor
        .gpu
        .clone()
        .or_else(|| trace.devices.iter().find_map(|d| d.name.clone()));
    let model = flags.floor.model.clone().or_else(|| {
        flags
            .floor
            .model_config
            .as_ref()
            .map(|p| p.display().to_string())
    });
    let floor_inputs = report
        .notes
        .iter()
        .find_map(|n| n.strip_prefix("floor: "))
        .map(|b| serde_json::json!({ "basis": b, "tp": report.operating_point.as_ref().map(|p| p.tp.value) }));
    let meta = BaselineMeta {
        gpu_name,
        nsys_version: match trace.meta.format {
            SourceFormat::Nsys => trace.meta.tool_version.clone(),
            SourceFormat::Kineto => None,
        },
        source_format: match trace.meta.format {
            SourceFormat::Nsys => "nsys-sqlite".to_owned(),
            SourceFormat::Kineto => "kineto".to_owned(),
        },
        engine: None,
        step_kinds: Vec::new(),
        batch_compositions: Vec::new(),
        model,
        floor_inputs,
        created_by: format!("stepgate {}", env!("CARGO_PKG_VERSION")),
    };
    Ok((samples_from_steps(&report, meta), report, src))
}

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Record a baseline from a report (an nsys SQLite export or a Kineto trace).
    #[command(after_help = "Examples:
  stepgate baseline record run.sqlite -o baselines/h100-llama-3-8b-vllm-decode.json --model llama-3-8b
  stepgate baseline record trace_dir/ -o baselines/mi300x-qwen3-8b-sglang.json --kind decode")]
    Record {
        /// The report to record.
        report: PathBuf,
        /// Where to write the baseline, e.g. baselines/h100-llama3-8b-decode.json.
        #[arg(short, long, value_name = "FILE")]
        output: PathBuf,
        /// Keep at most this many steps per group (evenly spaced), so the file stays small;
        /// 0 keeps all.
        #[arg(long, default_value_t = 2000, allow_negative_numbers = true, value_parser = crate::commands::numbers::max_steps_flag)]
        max_steps: usize,
        #[command(flatten)]
        report_args: Box<StepFlags>,
        #[command(flatten)]
        export: crate::commands::export::ExportFlags,
    },
    /// Show what a baseline file holds.
    #[command(
        after_help = "Example:\n  stepgate baseline show baselines/example-h100-vllm-decode.json"
    )]
    Show {
        /// The baseline file.
        baseline: PathBuf,
    },
}

pub fn run(cmd: &Command) -> Result<u8> {
    match cmd {
        Command::Record {
            report,
            output,
            max_steps,
            report_args,
            export,
        } => {
            // Checked before the report is read: never the report itself, never a device
            // node or FIFO, a directory that exists or can be created.
            let mut plan = crate::output::Plan::new();
            plan.add_creating_dirs("-o", output);
            let mut inputs = vec![report.as_path()];
            inputs.extend(crate::commands::step_inputs(report_args));
            plan.check(&inputs)?;
            // A SIGKILLed earlier run may have left its temporary file beside the target.
            let dir = match output.parent() {
                Some(d) if !d.as_os_str().is_empty() => d,
                _ => Path::new("."),
            };
            let cleaned = crate::output::clean_stale(dir);
            if cleaned > 0 {
                let _ = writeln!(
                    std::io::stderr(),
                    "stepgate: removed {cleaned} stale temporary file(s) ({}*{}) from {}",
                    crate::output::TMP_PREFIX,
                    crate::output::TMP_SUFFIX,
                    dir.display()
                );
            }
            // With --export, one load gives both the baseline and the steps to append.
            let (mut b, found) = match &export.export {
                None => (baseline_from_report(report, report_args)?, None),
                Some(_) => {
                    let ((b, steps, src), sha) =
                        crate::commands::export::with_report_hash(report, || {
                            baseline_and_steps(report, report_args)
                        })?;
                    (b, Some((steps, src, sha)))
                }
            };
            let before: usize = b.samples.groups.iter().map(|g| g.steps()).sum();
            b.samples.thin(*max_steps);
            let after: usize = b.samples.groups.iter().map(|g| g.steps()).sum();
            write_baseline(output, &b)?;
            if let (Some(dataset), Some((steps, src, sha))) = (&export.export, &found) {
                crate::commands::export::append(
                    dataset,
                    report,
                    sha,
                    &export.labels,
                    src,
                    steps,
                    true,
                )?;
            }
            let thinned = if after < before {
                format!(" (evenly thinned from {})", fmt_int(before as i64))
            } else {
                String::new()
            };
            crate::output::print(&format!(
                "recorded {} group(s), {} steps{thinned} to {}\n",
                b.samples.groups.len(),
                fmt_int(after as i64),
                output.display()
            ))?;
            Ok(crate::exit::OK)
        }
        Command::Show { baseline } => {
            let b = read_baseline(baseline)?;
            let m = &b.meta;
            let mut out = format!(
                "{}: schema {}, {}, GPU {}, model {}, recorded by {}\n",
                baseline.display(),
                b.schema_version,
                m.source_format,
                m.gpu_name.as_deref().unwrap_or("not named"),
                m.model.as_deref().unwrap_or("none"),
                m.created_by
            );
            let mut t = Table::new(&[
                ("group", Align::Left),
                ("steps", Align::Right),
                ("mean context", Align::Right),
                ("median wall µs (derived)", Align::Right),
                ("kernels", Align::Right),
                ("metrics", Align::Left),
            ]);
            for g in &b.samples.groups {
                let wall = g
                    .metrics
                    .get(crate::baseline::model::metric::WALL_NS)
                    .and_then(|w| crate::baseline::stats::median_in_place(&mut w.clone()));
                t.row(vec![
                    g.label(),
                    fmt_int(g.steps() as i64),
                    g.mean_context
                        .map(|c| format!("{c:.0}"))
                        .unwrap_or_else(|| "–".into()),
                    wall.map(fmt_us).unwrap_or_else(|| "–".into()),
                    fmt_int(g.kernels.len() as i64),
                    g.metrics.keys().cloned().collect::<Vec<_>>().join(" "),
                ]);
            }
            out.push_str(&t.to_text());
            crate::output::print(&out)?;
            Ok(crate::exit::OK)
        }
    }
}
