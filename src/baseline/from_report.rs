//! The one door from a profiler report to a [`Baseline`]: step finding lives in `steps`
//! (issue 4); this file is where its per-step output is turned into samples.

use std::path::{Path, PathBuf};

use crate::baseline::Baseline;
use crate::exit::{Error, Result};

/// The step/model/GPU flags `baseline record`, `gate` and `diff` pass through to step
/// finding, unchanged. A plain struct: the commands fill it from clap, tests by hand.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ReportOptions {
    /// `--steps auto|REGEX|graphs|gaps` (None = auto).
    pub steps: Option<String>,
    /// `--kind decode|prefill|all` (None = all).
    pub kind: Option<String>,
    /// `--model NAME` (a known model id); enables the floor and MBU.
    pub model: Option<String>,
    /// `--model-config FILE` (a Hugging Face `config.json`).
    pub model_config: Option<PathBuf>,
    /// `--gpu NAME` when the report does not name the GPU.
    pub gpu: Option<String>,
    /// `--batch N` requests per step when the step names do not say.
    pub batch: Option<u32>,
    /// `--context N` mean context tokens per request when the step names do not say.
    pub context: Option<f64>,
    /// `--launch-cost-us X`: the driver floor per launch.
    pub launch_cost_us: Option<f64>,
    /// `--launch-cost FILE`: the JSON `launch-probe` writes.
    pub launch_cost_file: Option<PathBuf>,
}

/// Find the steps in `path` (an nsys SQLite export or a Kineto trace) and collect their
/// per-step samples, grouped by step kind and batch size.
pub fn samples_from_report(path: &Path, opts: &ReportOptions) -> Result<Baseline> {
    let _ = opts;
    Err(Error::input(format!(
        "cannot read steps from {}: steps are not built yet",
        path.display()
    )))
}
