//! The steps of a report as step finding leaves them: the pipeline's working state
//! (filtered by device, given kinds, batches and an operating point) before the wire
//! document is built from it once (`Found::into_report`).

use crate::wire::steps::{
    AlignedStep, FoundBy, OutsideSteps, Series, Step, StepMethod, StepsReport,
};

use super::summary::{median_step, summarize};

/// What discovery says about the whole report.
#[derive(Debug, Clone)]
pub struct Meta {
    pub method: StepMethod,
    pub found_by: FoundBy,
    pub hint: Option<String>,
    pub engine: Option<&'static str>,
    pub notes: Vec<String>,
    /// Things the user must know (refused step names, the loader's warnings); the
    /// operating point adds its contradictions here.
    pub warnings: Vec<String>,
}

/// Every step found, its series, the GPU time outside steps and the cross-rank alignment.
/// Steps carry no attribution: the attribution is joined to the report built from this.
#[derive(Debug, Clone)]
pub struct Found {
    pub meta: Meta,
    pub series: Vec<Series>,
    pub outside_steps: Vec<OutsideSteps>,
    pub ranks: Vec<AlignedStep>,
    pub steps: Vec<Step>,
}

impl Found {
    /// Keep only device `d`'s steps, before anything reads them: every number of the
    /// report is then that device's. The series stay (step indices point into them); time
    /// outside steps is kept for `d`'s series only, and the cross-rank alignment, which
    /// needs every rank, is dropped.
    pub fn keep_device(&mut self, d: i64) {
        self.steps.retain(|s| s.device == Some(d));
        let mine: Vec<usize> = (0..self.series.len())
            .filter(|&i| self.series[i].device == Some(d))
            .collect();
        self.outside_steps.retain(|o| mine.contains(&o.series));
        self.ranks.clear();
    }

    /// The wire document of these steps, built once: the kind summary, the median step
    /// and the count of steps without GPU work are taken from the steps as they are now
    /// (after every filter and inferred kind). Attribution, groups, verdict and medians
    /// are unset until the attribution is joined.
    pub fn into_report(self) -> StepsReport {
        let Found {
            meta,
            series,
            outside_steps,
            ranks,
            steps,
        } = self;
        StepsReport {
            schema_version: crate::wire::steps::SCHEMA_VERSION,
            tool: None,
            source: None,
            method: meta.method,
            found_by: meta.found_by,
            exact_steps_hint: meta.hint,
            found_by_engine: meta.engine.map(str::to_owned),
            launch_cost: None,
            shapes: Vec::new(),
            notes: meta.notes,
            warnings: meta.warnings,
            summary: summarize(&steps),
            outside_steps,
            series,
            steps_without_gpu_work: steps.iter().filter(|s| s.wall_ns.is_none()).count(),
            ranks,
            operating_point: None,
            groups: Vec::new(),
            class_spread: Vec::new(),
            verdict: None,
            median_step: median_step(&steps),
            medians: None,
            steps,
        }
    }
}
