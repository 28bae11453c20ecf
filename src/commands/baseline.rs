//! `stepgate baseline record|show`: store a report's per-step samples as a versioned
//! baseline file, and show what a baseline holds.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::baseline::{read_baseline, write_baseline};
use crate::commands::historyflags::ExportFlags;
use crate::commands::stepflags::StepFlags;
use crate::exit::Result;
use crate::pipeline::plan::TOP_KERNELS;
use crate::pipeline::record;
use crate::report::table::{Align, Table};
use crate::report::{fmt_int, fmt_us};

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Record a baseline from a report (an nsys SQLite export or a Kineto trace).
    #[command(
        after_help = crate::commands::headings::MORE,
    after_long_help = "Examples:
  stepgate baseline record run.sqlite -o baselines/h100-llama-3-8b-vllm-decode.json --model llama-3-8b
  stepgate baseline record trace_dir/ -o baselines/mi300x-qwen3-8b-sglang.json --kind decode",
        allow_negative_numbers = true
    )]
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
        /// The gate's threshold policy (TOML or JSON): a sample in which no group has its
        /// `min_samples` steps is refused, or written with a warning under
        /// `small_baseline = "warn"`.
        #[arg(long, value_name = "FILE")]
        policy: Option<PathBuf>,
        #[command(flatten)]
        report_args: Box<StepFlags>,
        #[command(flatten)]
        export: ExportFlags,
    },
    /// Show what a baseline file holds.
    #[command(
        after_help = crate::commands::headings::MORE,
    after_long_help = "Example:\n  stepgate baseline show baselines/example-h100-vllm-decode.json"
    )]
    Show {
        /// The baseline file.
        baseline: PathBuf,
    },
}

/// What recording the report said (samples left out), one line each.
fn print_warnings(warnings: &[String]) {
    for w in warnings {
        let _ = writeln!(std::io::stderr(), "warning: {w}");
    }
}

pub fn run(cmd: &Command) -> Result<u8> {
    match cmd {
        Command::Record {
            report,
            output,
            max_steps,
            policy,
            report_args,
            export,
        } => {
            // Checked before the report is read: never the report itself, never a device
            // node or FIFO, a directory that exists or can be created.
            let mut plan = crate::output::Plan::new();
            plan.add_creating_dirs("-o", output);
            let mut inputs = vec![crate::output::Input::report(report)];
            inputs.extend(export.export.as_deref().map(crate::output::Input::dataset));
            inputs.extend(report_args.inputs());
            inputs.extend(policy.as_deref().map(crate::output::Input::file));
            plan.check(&inputs)?;
            let policy = crate::baseline::Policy::load(policy.as_deref())?;
            let steps_plan = report_args.plan(TOP_KERNELS)?;
            let export_plan = export.plan()?;
            // The baseline URL (`-o s3://…`) is reached as the export's dataset is.
            let store = export.storage.config()?;
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
            let (mut b, pending) = match &export_plan {
                None => {
                    let r = record::record(report, &steps_plan)?;
                    print_warnings(&r.warnings);
                    (r.baseline, None)
                }
                Some(to) => {
                    let (b, pending, warnings) =
                        record::record_for_export(report, &steps_plan, to)?;
                    print_warnings(&warnings);
                    (b, Some(pending))
                }
            };
            let before: usize = b.samples.groups.iter().map(|g| g.steps()).sum();
            b.samples.thin(*max_steps);
            let after: usize = b.samples.groups.iter().map(|g| g.steps()).sum();
            // What is stored is what a gate reads: checked after thinning.
            let warnings = crate::baseline::servable::check_servable(&b, &policy).map_err(|e| {
                crate::exit::Error::baseline(format!("{}: {}", output.display(), e.message))
            })?;
            for w in &warnings {
                let _ = writeln!(std::io::stderr(), "warning: {w}");
            }
            write_baseline(output, &store, &b)?;
            if let Some(pending) = &pending {
                let appended = pending.append()?;
                let _ = writeln!(std::io::stderr(), "{appended}");
            }
            let thinned = if after < before {
                format!(" (evenly thinned from {})", fmt_int(before as i64))
            } else {
                String::new()
            };
            crate::commands::stdout::print(&format!(
                "recorded {} group(s), {} steps{thinned} to {}\n",
                b.samples.groups.len(),
                fmt_int(after as i64),
                output.display()
            ))?;
            Ok(crate::exit::OK)
        }
        Command::Show { baseline } => {
            // `show` takes no storage flags: a URL is reached with the environment's
            // configuration.
            let b = read_baseline(baseline, &crate::store::StoreConfig::default())?;
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
                ("median wall µs (measured)", Align::Right),
                ("kernels", Align::Right),
                ("metrics", Align::Left),
            ]);
            for g in &b.samples.groups {
                let wall = g
                    .metrics
                    .get(crate::wire::baseline::metric::WALL_NS)
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
            crate::commands::stdout::print(&out)?;
            Ok(crate::exit::OK)
        }
    }
}
