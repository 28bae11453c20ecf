//! How steps are to be found: the `--steps` source (auto, one family, or a regex over range
//! names), parsed here so every caller refuses the same inputs, and the options around it.

use regex::Regex;

use crate::exit::{Error, Result};

use super::discover::{Family, FAMILIES};

/// How steps are found (`--steps`).
#[derive(Debug, Clone)]
pub enum StepSource {
    /// Markers, else scheduler scopes, else python-stack step functions, else recurring
    /// annotation cycles, else host sync points, else grouped CUDA-graph launches, else
    /// idle gaps: the first that yields.
    Auto,
    /// Engine step markers only (vLLM `execute_…`, SGLang `step[…]`, TensorRT-LLM
    /// `_forward_step`, `ProfilerStep#N`).
    Marker,
    /// Scheduler scopes only (SGLang `scheduler.run_batch`, vLLM custom scopes).
    Scheduler,
    /// Python-stack step functions only (vLLM `execute_model`, SGLang `run_batch` …).
    Python,
    /// Cycles of recurring annotations (a training loop without `ProfilerStep#N`).
    Recurring,
    /// Recurring host sync points on the busiest launching thread.
    Sync,
    /// Any host range whose name matches ([`StepOptions::extent`] and
    /// [`StepOptions::threads`] say what each match projects).
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
            return Err(Error::usage(format!(
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
            Error::usage(format!(
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

/// What a `--steps REGEX` match stands for (`--steps-extent`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Extent {
    /// The matched range itself (its tail after it, up to the next match).
    #[default]
    Span,
    /// The cycle: from one match of the opener to the next, the whole iteration.
    Cycle,
}

/// Whose calls a `--steps REGEX` step projects (`--steps-threads`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Threads {
    /// The matched range's own thread.
    #[default]
    Own,
    /// Every thread of its process (autograd runs backward on its own thread).
    Process,
}

impl std::str::FromStr for Extent {
    type Err = String;

    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "span" => Ok(Extent::Span),
            "cycle" => Ok(Extent::Cycle),
            _ => Err(format!("{s:?} is not span or cycle")),
        }
    }
}

impl std::str::FromStr for Threads {
    type Err = String;

    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "own" => Ok(Threads::Own),
            "process" => Ok(Threads::Process),
            _ => Err(format!("{s:?} is not own or process")),
        }
    }
}

/// Step finding options.
#[derive(Debug, Clone)]
pub struct StepOptions {
    pub source: StepSource,
    /// For `--steps REGEX` only (an error with any other source): a match's extent
    /// (default the span) and the threads it projects (default its own).
    pub extent: Option<Extent>,
    pub threads: Option<Threads>,
    /// Idle gap that separates two steps in `gaps` mode.
    pub gap_threshold_ns: i64,
    /// Kernel rows kept per step in the output (all are kept in memory for baselines).
    pub top_kernels: usize,
    /// Threads the reads and every stage after them run on (`--threads`, at least 1):
    /// the outputs are the same at every count.
    pub workers: usize,
    /// Where the loads of this run report the rows they read (none by default).
    pub progress: crate::source::progress::Progress,
}

impl StepOptions {
    /// `load` as this run reads it: on its threads, its progress reported where it says.
    /// Every read of a run (the first, and each second read for evidence) goes through
    /// here, so none falls back to the defaults.
    pub(crate) fn read(&self, load: crate::source::LoadOptions) -> crate::source::LoadOptions {
        crate::source::LoadOptions {
            threads: self.workers,
            progress: self.progress.clone(),
            ..load
        }
    }
}

impl Default for StepOptions {
    fn default() -> Self {
        StepOptions {
            source: StepSource::Auto,
            extent: None,
            threads: None,
            gap_threshold_ns: 100_000,
            top_kernels: 5,
            workers: crate::source::default_threads(),
            progress: crate::source::progress::Progress::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn method_names_come_from_the_families_and_empty_is_refused() {
        for f in &FAMILIES {
            let s = StepSource::parse(f.name).unwrap();
            assert!(std::ptr::eq(s.family().unwrap(), f), "{}", f.name);
        }
        assert!(matches!(
            StepSource::parse("auto").unwrap(),
            StepSource::Auto
        ));
        assert!(StepSource::Auto.family().is_none());
        let re = StepSource::parse("^Optimizer\\.").unwrap();
        assert!(matches!(&re, StepSource::Regex(r) if r.as_str() == "^Optimizer\\."));
        for empty in ["", " ", "\t"] {
            let e = StepSource::parse(empty).unwrap_err();
            assert_eq!(e.exit_code(), 2);
            let m = e.to_string();
            assert!(m.starts_with("--steps is empty"), "{m}");
            assert!(
                m.contains("auto, marker, scheduler, python, recurring, sync, graphs, gaps"),
                "{m}"
            );
        }
        let e = StepSource::parse("(").unwrap_err().to_string();
        assert!(e.contains("is not auto, marker, scheduler, python, recurring, sync, graphs, gaps or a valid regex (unclosed group)"), "{e}");
    }

    #[test]
    fn ranges_to_read_are_what_the_source_uses() {
        // Auto keeps every family's names; the python/sync/graphs/gaps families need none.
        let auto = StepSource::Auto.ranges().unwrap();
        for n in [
            "execute_new_1_cached_0",
            "step[DECODE bs=8]",
            "scheduler.run_batch",
            "Optimizer.step#SGD.step, op_id = 12",
            "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__",
        ] {
            assert!(auto.is_match(n), "{n}");
        }
        assert!(!auto.is_match("aten::mm, seq = 3, op_id = 4"));
        for s in [
            StepSource::Python,
            StepSource::Sync,
            StepSource::Graphs,
            StepSource::Gaps,
        ] {
            assert!(s.ranges().is_none());
        }
        let m = StepSource::Marker.ranges().unwrap();
        assert!(m.is_match("ProfilerStep#3") && !m.is_match("scheduler.run_batch"));
    }
}
