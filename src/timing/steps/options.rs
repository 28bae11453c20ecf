//! How steps are to be found: the `--steps` source (auto, one family, or a regex over range
//! names), parsed here so every caller refuses the same inputs, and the options around it.

use regex::Regex;

use crate::exit::{Error, Result};

use super::discover::{Family, FAMILIES};

/// How steps are found (`--steps`).
#[derive(Debug, Clone)]
pub enum StepSource {
    /// Markers, else scheduler scopes, else python-stack step functions, else host sync
    /// points, else grouped CUDA-graph launches, else idle gaps: the first that yields.
    Auto,
    /// Engine step markers only (vLLM `execute_…`, SGLang `step[…]`, TensorRT-LLM
    /// `_forward_step`, `ProfilerStep#N`).
    Marker,
    /// Scheduler scopes only (SGLang `scheduler.run_batch`, vLLM custom scopes).
    Scheduler,
    /// Python-stack step functions only (vLLM `execute_model`, SGLang `run_batch` …).
    Python,
    /// Recurring host sync points on the busiest launching thread.
    Sync,
    /// Any host range whose name matches.
    Regex(Regex),
    /// CUDA-graph launches grouped: back-to-back launches with no host sync between
    /// them are one step.
    Graphs,
    /// Split each device's ops at idle gaps longer than the threshold.
    Gaps,
}

impl StepSource {
    /// Parse a `--steps` value: `auto`, a family's method name, or else a regex over range
    /// names. An empty value (an unset CI variable) is refused: as a regex it would match
    /// every range.
    pub fn parse(s: &str) -> Result<StepSource> {
        if s.trim().is_empty() {
            return Err(Error::input(format!(
                "--steps is empty (an unset variable?): give one of {}, or a regex over range names",
                method_names()
            )));
        }
        if s == "auto" {
            return Ok(StepSource::Auto);
        }
        if let Some(f) = FAMILIES.iter().find(|f| f.name == s) {
            return Ok(f.source.clone());
        }
        Regex::new(s).map(StepSource::Regex).map_err(|e| {
            let full = e.to_string();
            let reason = full
                .lines()
                .rev()
                .find_map(|l| l.trim().strip_prefix("error:"))
                .map(str::trim)
                .unwrap_or_else(|| full.lines().last().unwrap_or("invalid regex").trim());
            Error::input(format!(
                "--steps {s:?} is not {} or a valid regex ({reason}); check the pattern's brackets and escapes",
                method_names()
            ))
        })
    }

    /// The family this source forces (`None` for auto and a regex).
    pub(super) fn family(&self) -> Option<&'static Family> {
        let d = std::mem::discriminant(self);
        FAMILIES
            .iter()
            .find(|f| std::mem::discriminant(&f.source) == d)
    }

    /// The host ranges an nsys read must keep for this source (`None`: no range at all):
    /// auto keeps what any family reads, a family what it reads, a regex what it matches.
    pub fn ranges(&self) -> Option<Regex> {
        let pattern = match self {
            StepSource::Regex(re) => return Some(re.clone()),
            StepSource::Auto => {
                let all: Vec<&str> = FAMILIES.iter().filter_map(|f| f.ranges).collect();
                all.join("|")
            }
            other => other.family()?.ranges?.to_owned(),
        };
        Some(Regex::new(&pattern).expect("the families' range patterns compile"))
    }
}

/// `auto, marker, …, gaps`: every `--steps` method name, in the auto order.
fn method_names() -> String {
    let mut names = vec!["auto"];
    names.extend(FAMILIES.iter().map(|f| f.name));
    names.join(", ")
}

/// Step finding options.
#[derive(Debug, Clone)]
pub struct StepOptions {
    pub source: StepSource,
    /// Idle gap that separates two steps in `gaps` mode.
    pub gap_threshold_ns: i64,
    /// Kernel rows kept per step in the output (all are kept in memory for baselines).
    pub top_kernels: usize,
}

impl Default for StepOptions {
    fn default() -> Self {
        StepOptions {
            source: StepSource::Auto,
            gap_threshold_ns: 100_000,
            top_kernels: 5,
        }
    }
}
