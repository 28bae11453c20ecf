//! The step flags shared by every command that finds steps (`steps`, `analyze`, `gate`,
//! `baseline`, `diff`, `export`): `--steps`, `--kind`, launch cost, categories and the
//! model/GPU flags, turned once into a [`StepsPlan`].

use std::path::PathBuf;

use crate::categories::Categorizer;
use crate::commands::floorflags::{batch_flag, context_flag, ModelFlags};
use crate::commands::numbers;
use crate::exit::{Error, Result};
use crate::pipeline::plan::StepsPlan;
use crate::timing::steps::{self, StepOptions, StepSource};
use crate::wire::attribution::LaunchCost;
use crate::wire::steps::StepKind;

/// Flags shared by every command that finds steps (steps, gate, baseline, diff).
#[derive(Debug, Clone, clap::Args)]
#[command(next_help_heading = crate::commands::headings::STEPS)]
pub struct StepFlags {
    /// How to find steps.
    ///
    /// auto, marker, scheduler, python, recurring, sync, graphs, gaps, or a regex over
    /// range names (a range in a named NVTX domain matches as `Domain:Name`, as nsys shows
    /// it, or by its bare name).
    #[arg(long = "steps", default_value = "auto", value_name = "METHOD|REGEX")]
    pub steps: String,
    /// With --steps REGEX: a step is the matched range (span, the default) or the whole
    /// cycle from one match of the opener to the next (cycle).
    #[arg(long, value_name = "span|cycle", hide_short_help = true)]
    pub steps_extent: Option<steps::Extent>,
    /// With --steps REGEX: project the calls of the range's own thread (own, the
    /// default) or of every thread of its process (process).
    #[arg(long, value_name = "own|process", hide_short_help = true)]
    pub steps_threads: Option<steps::Threads>,
    /// The global `--threads` (declared once, on the top-level command line), read here
    /// so the plan carries it.
    #[arg(from_global)]
    pub threads: Option<usize>,
    /// Only steps of this kind.
    ///
    /// all, decode, prefill, mixed, verify, draft, idle or unknown.
    #[arg(long, value_enum, default_value_t = KindFilter::All, hide_possible_values = true)]
    pub kind: KindFilter,
    /// Idle gap that separates steps with --steps gaps, µs.
    #[arg(
        long,
        default_value_t = 100.0,
        allow_negative_numbers = true,
        hide_short_help = true
    )]
    pub gap_us: f64,
    #[command(flatten)]
    pub launch: LaunchCostFlags,
    /// TOML file of extra kernel-category rules.
    #[arg(long, value_name = "FILE", hide_short_help = true)]
    pub categories: Option<PathBuf>,
    #[command(flatten)]
    pub floor: ModelFlags,
    /// Requests per step, where step names do not say.
    ///
    /// For steps found by graphs, gaps or a regex.
    #[arg(long, allow_negative_numbers = true, value_parser = batch_flag, help_heading = crate::commands::headings::FLOOR, hide_short_help = true)]
    pub batch: Option<u64>,
    /// Context per request, where step names do not say.
    ///
    /// Keys attended, the new token included, when names lack ΣN_KV.
    #[arg(long, allow_negative_numbers = true, value_parser = context_flag, help_heading = crate::commands::headings::FLOOR, hide_short_help = true)]
    pub context: Option<u64>,
}

/// The per-launch cost, one flag for a number or a probe file (`steps`, `floor` and every
/// step-finding command).
#[derive(Debug, Clone, clap::Args)]
pub struct LaunchCostFlags {
    /// Measured per-launch cost: µs, or the JSON `stepgate launch-probe --format json`
    /// wrote (its minimum end-to-end per-launch figure). Default: the cited 2.374 µs.
    ///
    /// A value that reads as a number is µs; a file named like a number: ./4.1.
    #[arg(
        long,
        alias = "launchcost",
        value_name = "µs|FILE",
        value_parser = launch_cost_flag,
        allow_negative_numbers = true,
        hide_short_help = true
    )]
    pub launch_cost: Option<LaunchCostArg>,
    /// The old spelling of `--launch-cost µs` (warns).
    #[arg(
        long,
        hide = true,
        conflicts_with = "launch_cost",
        allow_negative_numbers = true
    )]
    pub launch_cost_us: Option<f64>,
}

/// `--launch-cost`'s value: µs, or a launch-probe JSON file.
#[derive(Debug, Clone, PartialEq)]
pub enum LaunchCostArg {
    Us(f64),
    File(PathBuf),
}

/// `--launch-cost`: a number is µs (checked with the other numbers, naming the flag),
/// anything else the path of a probe file.
fn launch_cost_flag(s: &str) -> std::result::Result<LaunchCostArg, String> {
    Ok(match s.trim().parse::<f64>() {
        Ok(us) => LaunchCostArg::Us(us),
        Err(_) => LaunchCostArg::File(PathBuf::from(s)),
    })
}

impl LaunchCostFlags {
    /// The measured per-launch cost these flags give; None for the cited default.
    pub fn cost(&self) -> Result<Option<LaunchCost>> {
        let (flag, us) = match (&self.launch_cost, self.launch_cost_us) {
            (_, Some(us)) => {
                numbers::deprecated("--launch-cost-us", &format!("--launch-cost {us}"));
                ("--launch-cost-us", us)
            }
            (Some(LaunchCostArg::Us(us)), None) => ("--launch-cost", *us),
            (Some(LaunchCostArg::File(p)), None) => {
                let c = crate::probe::MeasuredLaunchCost::from_file(p)?;
                return Ok(Some(LaunchCost {
                    per_launch_ns: c.per_launch_ns,
                    source: c.label(),
                }));
            }
            (None, None) => return Ok(None),
        };
        let us = numbers::real(flag, "µs", us, numbers::MAX_LAUNCH_COST_US)?;
        Ok(Some(LaunchCost {
            per_launch_ns: us * 1e3,
            source: format!("given with {flag}"),
        }))
    }

    /// The probe file `--launch-cost` names, an input no output may overwrite.
    pub fn file(&self) -> Option<&std::path::Path> {
        match &self.launch_cost {
            Some(LaunchCostArg::File(p)) => Some(p),
            _ => None,
        }
    }
}

/// `--kind`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum KindFilter {
    All,
    Decode,
    Prefill,
    Mixed,
    Verify,
    Draft,
    Idle,
    Unknown,
}

impl KindFilter {
    /// The kind to keep; None for `all`.
    fn kind(self) -> Option<StepKind> {
        match self {
            KindFilter::All => None,
            KindFilter::Decode => Some(StepKind::Decode),
            KindFilter::Prefill => Some(StepKind::Prefill),
            KindFilter::Mixed => Some(StepKind::Mixed),
            KindFilter::Verify => Some(StepKind::Verify),
            KindFilter::Draft => Some(StepKind::Draft),
            KindFilter::Idle => Some(StepKind::Idle),
            KindFilter::Unknown => Some(StepKind::Unknown),
        }
    }
}

impl StepFlags {
    /// The plan these flags describe, checked once: `--steps` parsed (its regex compiled),
    /// `--gap-us` in range, the launch cost and categories read, the floor inputs checked.
    /// `top` is the command's kernel rows per step.
    pub fn plan(&self, top: usize) -> Result<StepsPlan> {
        let source = StepSource::parse(&self.steps)?;
        // Bounded so `gap start + threshold` cannot overflow the i64 nanosecond clock.
        if !(self.gap_us.is_finite() && self.gap_us >= 0.0 && self.gap_us <= numbers::MAX_GAP_US) {
            return Err(Error::usage(format!(
                "--gap-us must be a number of µs from 0 to {:e} (one hour), got {} µs",
                numbers::MAX_GAP_US,
                self.gap_us
            )));
        }
        Ok(StepsPlan {
            find: StepOptions {
                source,
                extent: self.steps_extent,
                threads: self.steps_threads,
                gap_threshold_ns: (self.gap_us * 1e3) as i64,
                top_kernels: top,
                workers: crate::source::threads_or_default(self.threads),
                progress: crate::commands::spinner::on_stderr(),
            },
            kind: self.kind.kind(),
            device: None,
            launch_cost: self.launch.cost()?.unwrap_or_default(),
            floor: self.floor.floor_plan(self.batch, self.context)?,
            categories: match &self.categories {
                Some(p) => Categorizer::with_user_file(p)?,
                None => Categorizer::default(),
            },
        })
    }

    /// The files a step-finding command reads besides its report (categories, launch-cost
    /// probe, model config): no output may overwrite one of them.
    pub fn inputs(&self) -> Vec<crate::output::Input<'_>> {
        [
            self.categories.as_deref(),
            self.launch.file(),
            self.floor.model_config.as_deref(),
        ]
        .into_iter()
        .flatten()
        .map(crate::output::Input::file)
        .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_filter_keeps_its_own_kind() {
        use clap::ValueEnum;
        assert_eq!(KindFilter::All.kind(), None);
        // The flag values are the kinds' own names: `--kind decode` keeps decode steps.
        for f in KindFilter::value_variants().iter().skip(1) {
            let k = f.kind().unwrap();
            assert_eq!(f.to_possible_value().unwrap().get_name(), k.as_str());
        }
    }
}
