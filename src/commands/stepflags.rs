//! The step flags and loading shared by every command that finds steps (`steps`, `analyze
//! --steps`, `gate`, `baseline`, `diff`): `--steps`, `--kind`, launch cost, categories and
//! the model/GPU flags, turned into a loaded trace and an attributed steps report.

use std::path::{Path, PathBuf};

use regex::Regex;

use crate::attribution::{self, LaunchCost};
use crate::categories::Categorizer;
use crate::commands::floorflags::{batch_flag, context_flag, ModelFlags, Pricing};
use crate::exit::{Error, Result};
use crate::operating_point::{self, Given};
use crate::timing::stepname::StepKind;
use crate::timing::steps::{self, StepOptions, StepSource, StepsReport};
use crate::trace::Trace;
use crate::wire::attribution::{OperatingPoint, Sourced};

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
    /// Whether a step of kind `k` (marked or inferred: see [`crate::wire::steps::Step::kind_label`]) passes.
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

    /// What the flags say about the operating point (None: not given).
    pub fn given(&self) -> Given {
        Given {
            tp: self.floor.tp,
            gpu: self.floor.gpu.clone(),
            batch: self.batch,
            context: self.context,
        }
    }

    /// The model and GPU to price steps against at the operating point `point` resolved
    /// (the flags alone without one), or None without a model.
    pub fn pricing(
        &self,
        trace: &Trace,
        point: Option<&OperatingPoint>,
    ) -> Result<Option<Pricing>> {
        let flags_only = operating_point::from_flags(&self.given());
        let p = point.unwrap_or(&flags_only);
        let value = |s: &Option<Sourced<u64>>| s.as_ref().map(|s| s.value);
        let pp = p.pp.as_ref().map_or(1, |s| s.value);
        crate::commands::floorflags::pricing(
            &self.floor,
            value(&p.batch),
            value(&p.context),
            (&p.tp, pp),
            trace,
        )
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
        gpu_metrics: true,
        ..crate::source::LoadOptions::all()
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
    let point = operating_point::resolve(trace, &mut r, &flags.given())?;
    if flags.kind != KindFilter::All {
        r.steps.retain(|s| flags.kind.matches(s.kind_label().kind));
        r.steps_without_gpu_work = r.steps.iter().filter(|s| s.wall_ns.is_none()).count();
    }
    r.summary = steps::summarize(&r.steps);
    let cost = attribution::for_vendor(flags.launch_cost()?, point.vendor.as_deref());
    let pricing = flags.pricing(trace, Some(&point))?;
    let a = match &pricing {
        Some(p) => {
            let comp = |s: &steps::Step| p.composition_of(s);
            let pricer = attribution::Pricer {
                composition: &comp,
                model: &p.model,
                gpu: &p.gpu,
                opts: p.opts,
            };
            attribution::attribute_priced(&r.steps, Some(&pricer), &cost)
        }
        None => attribution::attribute_priced(&r.steps, None, &cost),
    };
    // The one join of steps and attribution.
    let mut r = r.join(a);
    let geometry = pricing.as_ref().map(|p| attribution::layers::Geometry {
        model: &p.model,
        tp: p.opts.tp,
        pp: p.opts.pp,
        roof_bytes_per_s: p.gpu.hbm_bytes_per_s,
    });
    attribution::detail::detail(trace, &mut r, cats, geometry.as_ref())?;
    if let Some(p) = pricing {
        r.notes.push(format!("floor: {}", p.basis));
        let notes = attribution::missing_floor_notes(&r.steps, &point);
        r.notes.extend(notes);
    }
    Ok(r)
}

/// The files a step-finding command reads besides its report (categories, launch-cost
/// probe, model config): no output may overwrite one of them.
pub(crate) fn step_inputs(f: &StepFlags) -> Vec<&Path> {
    [
        f.categories.as_deref(),
        f.launch_cost.as_deref(),
        f.floor.model_config.as_deref(),
    ]
    .into_iter()
    .flatten()
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
