//! The step flags and loading shared by every command that finds steps (`steps`, `analyze
//! --steps`, `gate`, `baseline`, `diff`): `--steps`, `--kind`, launch cost, categories and
//! the model/GPU flags, turned into a loaded trace and an attributed steps report.

use std::path::{Path, PathBuf};

use regex::Regex;

use crate::attribution::{self, LaunchCost};
use crate::categories::Categorizer;
use crate::commands::floorflags::{batch_flag, context_flag, ModelFlags, Pricing};
use crate::exit::{Error, Result};
use crate::timing::stepname::StepKind;
use crate::timing::steps::{self, StepOptions, StepSource, StepsReport};
use crate::trace::Trace;

/// Flags shared by every command that finds steps (steps, gate, baseline, diff).
#[derive(Debug, Clone, clap::Args)]
pub struct StepFlags {
    /// How to find steps: auto, marker, scheduler, python, sync, graphs, gaps, or a
    /// regex over range names.
    #[arg(long = "steps", default_value = "auto")]
    pub steps: String,
    /// Only steps of this kind.
    #[arg(long, value_enum, default_value_t = KindFilter::All)]
    pub kind: KindFilter,
    /// Idle gap that separates steps with --steps gaps, µs.
    #[arg(long, default_value_t = 100.0, allow_negative_numbers = true)]
    pub gap_us: f64,
    /// Measured per-launch cost, µs (default: the cited 2.374 µs).
    #[arg(long, conflicts_with = "launch_cost", allow_negative_numbers = true)]
    pub launch_cost_us: Option<f64>,
    /// JSON written by `stepgate launch-probe --format json` (its minimum end-to-end
    /// per-launch figure replaces the cited 2.374 µs).
    #[arg(long)]
    pub launch_cost: Option<PathBuf>,
    /// TOML file of extra kernel-category rules.
    #[arg(long)]
    pub categories: Option<PathBuf>,
    #[command(flatten)]
    pub floor: ModelFlags,
    /// Requests per step, for steps whose names do not say (graphs, gaps, regex).
    #[arg(long, allow_negative_numbers = true, value_parser = batch_flag)]
    pub batch: Option<u64>,
    /// Context per request (keys attended, new token included) when names lack ΣN_KV.
    #[arg(long, allow_negative_numbers = true, value_parser = context_flag)]
    pub context: Option<u64>,
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
    fn matches(self, k: StepKind) -> bool {
        use clap::ValueEnum;
        // The flag values are the kinds' own names, so compare by name.
        self == KindFilter::All
            || self
                .to_possible_value()
                .is_some_and(|v| v.get_name() == k.as_str())
    }
}

impl StepFlags {
    /// Plain step-finding options from the flags.
    pub fn options(&self, top: usize) -> Result<StepOptions> {
        let source = match self.steps.as_str() {
            "auto" => StepSource::Auto,
            "marker" => StepSource::Marker,
            "scheduler" => StepSource::Scheduler,
            "python" => StepSource::Python,
            "sync" => StepSource::Sync,
            "graphs" => StepSource::Graphs,
            "gaps" => StepSource::Gaps,
            re => StepSource::Regex(
                Regex::new(re).map_err(|e| crate::commands::regex_error("--steps", re, &e))?,
            ),
        };
        // Bounded so `gap start + threshold` cannot overflow the i64 nanosecond clock.
        if !(self.gap_us.is_finite()
            && self.gap_us >= 0.0
            && self.gap_us <= crate::commands::numbers::MAX_GAP_US)
        {
            return Err(Error::input(format!(
                "--gap-us must be a number of µs from 0 to {:e} (one hour), got {} µs",
                crate::commands::numbers::MAX_GAP_US,
                self.gap_us
            )));
        }
        Ok(StepOptions {
            source,
            gap_threshold_ns: (self.gap_us * 1e3) as i64,
            top_kernels: top,
        })
    }

    /// The model and GPU to price steps against, or None without a model.
    pub fn pricing(&self, trace: &Trace) -> Result<Option<Pricing>> {
        crate::commands::floorflags::pricing(&self.floor, self.batch, self.context, trace)
    }

    /// The per-launch cost: measured (flag or probe file) or the cited default.
    pub fn launch_cost(&self) -> Result<LaunchCost> {
        if let Some(us) = self.launch_cost_us {
            crate::commands::numbers::real(
                "--launch-cost-us",
                "µs",
                us,
                crate::commands::numbers::MAX_LAUNCH_COST_US,
            )?;
            return Ok(LaunchCost {
                per_launch_ns: us * 1e3,
                source: "given with --launch-cost-us".to_owned(),
            });
        }
        if let Some(p) = &self.launch_cost {
            let c = crate::probe::MeasuredLaunchCost::from_file(p)?;
            return Ok(LaunchCost {
                per_launch_ns: c.per_launch_ns,
                source: c.label(),
            });
        }
        Ok(LaunchCost::default())
    }
}

/// Range names that can be step markers (emit_nvtx suffixes follow the name).
const MARKER_RANGES: &str =
    r"^(execute_|step\[|\[Executor\] _forward_step|_forward_step|ProfilerStep#)";
/// Range names that can be scheduler scopes (vLLM 0.11.0 `Preprocess` marks `Forward`).
const SCHEDULER_RANGES: &str =
    r"^(scheduler\.run_batch|gpu_model_runner: forward|Forward|Preprocess)(, |$)";

/// Load a report with what step finding needs: host calls always, and only the ranges
/// the chosen method can use.
pub fn load_for_steps(path: &Path, flags: &StepFlags) -> Result<Trace> {
    // nsys reads only the ranges the method can use (Kineto keeps every annotation).
    let ranges = match flags.steps.as_str() {
        "graphs" | "gaps" | "sync" | "python" => None,
        "marker" => Some(Regex::new(MARKER_RANGES).expect("static pattern")),
        "scheduler" => Some(Regex::new(SCHEDULER_RANGES).expect("static pattern")),
        "auto" => Some(
            Regex::new(&format!("{MARKER_RANGES}|{SCHEDULER_RANGES}")).expect("static pattern"),
        ),
        re => Some(Regex::new(re).map_err(|e| crate::commands::regex_error("--steps", re, &e))?),
    };
    let opts = crate::source::LoadOptions {
        calls: true,
        ranges: ranges.is_some(),
        range_filter: ranges,
    };
    crate::source::load_with(path, &opts)
}

/// Find, filter and attribute the steps of a loaded trace.
pub fn steps_of(
    trace: &Trace,
    flags: &StepFlags,
    cats: &Categorizer,
    top: usize,
) -> Result<StepsReport> {
    let opts = flags.options(top)?;
    let mut r = steps::find_steps(trace, &opts, cats)?;
    if flags.kind != KindFilter::All {
        r.steps.retain(|s| flags.kind.matches(s.kind));
        r.summary = steps::summarize(&r.steps);
        r.steps_without_gpu_work = r.steps.iter().filter(|s| s.wall_ns.is_none()).count();
    }
    let cost = flags.launch_cost()?;
    let pricing = flags.pricing(trace)?;
    let a = match &pricing {
        Some(p) => attribution::attribute_all(&r.steps, &|s| p.floor_of(s), &cost),
        None => attribution::attribute_all(&r.steps, &|_| None, &cost),
    };
    // The one join of steps and attribution.
    let mut r = r.join(a);
    if let Some(p) = pricing {
        let priced = r
            .steps
            .iter()
            .filter(|s| s.attribution.as_ref().is_some_and(|a| a.floor.is_some()))
            .count();
        let gpu_steps = r.steps.len() - r.steps_without_gpu_work;
        r.notes.push(format!("floor: {}", p.basis));
        if priced < gpu_steps {
            // Steps with context (prefill) requests but no prompt-token count cannot be
            // priced by --context (a decode KV length): asking for it would mislead.
            let prefill_without_tokens = r
                .steps
                .iter()
                .filter(|s| {
                    s.wall_ns.is_some()
                        && s.attribution.as_ref().is_none_or(|a| a.floor.is_none())
                        && s.composition.as_ref().is_some_and(|c| {
                            c.context.requests.is_some_and(|n| n > 0) && c.context.sq.is_none()
                        })
                })
                .count();
            // Those have their own note from discovery (what the name lacks and which
            // engine versions carry it).
            let other = gpu_steps - priced - prefill_without_tokens;
            if other > 0 {
                r.notes.push(format!(
                    "{other} step(s) have no floor: their names do not carry ΣN_KV (pass --context, and --batch for unnamed steps)"
                ));
            }
        }
    }
    Ok(r)
}

/// The files a step-finding command reads besides its report (categories, launch-cost
/// probe, model config): no output may overwrite one of them.
pub(crate) fn step_inputs(f: &StepFlags) -> Vec<crate::output::Input<'_>> {
    [
        f.categories.as_deref(),
        f.launch_cost.as_deref(),
        f.floor.model_config.as_deref(),
    ]
    .into_iter()
    .flatten()
    .map(crate::output::Input::file)
    .collect()
}

/// Load categories from the optional user file.
pub fn categorizer(path: Option<&PathBuf>) -> Result<Categorizer> {
    match path {
        Some(p) => Categorizer::with_user_file(p),
        None => Ok(Categorizer::default()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kind_filter_matches_by_name() {
        assert!(KindFilter::All.matches(StepKind::Prefill));
        assert!(KindFilter::Decode.matches(StepKind::Decode));
        assert!(!KindFilter::Decode.matches(StepKind::Prefill));
        assert!(KindFilter::Unknown.matches(StepKind::Unknown));
        assert!(!KindFilter::Verify.matches(StepKind::Draft));
    }
}
