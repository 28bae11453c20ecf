//! `stepgate baseline record|show`: store a report's per-step samples as a versioned
//! baseline file, and show what a baseline holds.

use std::path::PathBuf;

use crate::baseline::{read_baseline, samples_from_report, write_baseline, ReportOptions};
use crate::exit::Result;
use crate::report::table::{Align, Table};
use crate::report::{fmt_int, fmt_us};

/// The step/model/GPU flags shared by `baseline record`, `gate` and `diff`; passed through
/// unchanged to step finding.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ReportArgs {
    /// How to find steps: auto, a regex over range names, graphs, or gaps.
    #[arg(long, value_name = "auto|REGEX|graphs|gaps")]
    pub steps: Option<String>,
    /// Which steps to keep.
    #[arg(long, value_name = "decode|prefill|all")]
    pub kind: Option<String>,
    /// Model to price the floor (enables MBU).
    #[arg(long)]
    pub model: Option<String>,
    /// A Hugging Face config.json instead of --model.
    #[arg(long, value_name = "FILE")]
    pub model_config: Option<PathBuf>,
    /// GPU name when the report does not name it.
    #[arg(long)]
    pub gpu: Option<String>,
    /// Requests per step when the step names do not say.
    #[arg(long)]
    pub batch: Option<u32>,
    /// Mean context tokens per request when the step names do not say.
    #[arg(long)]
    pub context: Option<f64>,
    /// Driver floor per launch in µs.
    #[arg(long, value_name = "US")]
    pub launch_cost_us: Option<f64>,
    /// The JSON `stepgate launch-probe` wrote.
    #[arg(long, value_name = "FILE")]
    pub launch_cost: Option<PathBuf>,
}

impl ReportArgs {
    /// The plain options step finding takes.
    pub fn options(&self) -> ReportOptions {
        ReportOptions {
            steps: self.steps.clone(),
            kind: self.kind.clone(),
            model: self.model.clone(),
            model_config: self.model_config.clone(),
            gpu: self.gpu.clone(),
            batch: self.batch,
            context: self.context,
            launch_cost_us: self.launch_cost_us,
            launch_cost_file: self.launch_cost.clone(),
        }
    }
}

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Record a baseline from a report (an nsys SQLite export or a Kineto trace).
    Record {
        /// The report to record.
        report: PathBuf,
        /// Where to write the baseline, e.g. baselines/h100-llama3-8b-decode.json.
        #[arg(short, long, value_name = "FILE")]
        output: PathBuf,
        /// Keep at most this many steps per group (evenly spaced), so the file stays small;
        /// 0 keeps all.
        #[arg(long, default_value_t = 2000)]
        max_steps: usize,
        #[command(flatten)]
        report_args: Box<ReportArgs>,
    },
    /// Show what a baseline file holds.
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
        } => {
            let mut b = samples_from_report(report, &report_args.options())?;
            let before: usize = b.samples.groups.iter().map(|g| g.steps()).sum();
            b.samples.thin(*max_steps);
            let after: usize = b.samples.groups.iter().map(|g| g.steps()).sum();
            write_baseline(output, &b)?;
            let thinned = if after < before {
                format!(" (evenly thinned from {})", fmt_int(before as i64))
            } else {
                String::new()
            };
            println!(
                "recorded {} group(s), {} steps{thinned} to {}",
                b.samples.groups.len(),
                fmt_int(after as i64),
                output.display()
            );
            Ok(crate::exit::OK)
        }
        Command::Show { baseline } => {
            let b = read_baseline(baseline)?;
            let m = &b.meta;
            println!(
                "{}: schema {}, {}, GPU {}, model {}, recorded by {}",
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
            print!("{}", t.to_text());
            Ok(crate::exit::OK)
        }
    }
}
