//! The steps of a report as step finding leaves them: the pipeline's working state
//! (filtered by device, given kinds, batches and an operating point) before the wire
//! document is built from it and what the later stages returned, once, in one place
//! (`Found::into_report`).

use crate::wire::attribution::{
    GroupAttribution, GroupSpread, LaunchCost, OperatingPoint, RunVerdict, ShapeCount,
};
use crate::wire::meta::{SourceInfo, Tool};
use crate::wire::run_medians::RunMedians;
use crate::wire::steps::{
    AlignedStep, FoundBy, MethodCount, OutsideSteps, RankCount, Series, Step, StepTally,
    StepsReport, TailTally,
};

use super::summary::{median_step, summarize};

/// What discovery says about the whole report.
#[derive(Debug, Clone)]
pub struct Meta {
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
    pub(crate) fn keep_device(&mut self, d: i64) {
        self.steps.retain(|s| s.device == Some(d));
        let mine: Vec<usize> = (0..self.series.len())
            .filter(|&i| self.series[i].device == Some(d))
            .collect();
        self.outside_steps.retain(|o| mine.contains(&o.series));
        self.ranks.clear();
    }

    /// The wire document of these steps and of what the stages after step finding
    /// returned: the one place a `StepsReport` is built. The kind summary, the median step
    /// and the count of steps without GPU work are taken from the steps as they are now
    /// (after every filter and inferred kind, each with its attribution where it has
    /// one). `Stages::default()` gives step finding's own document (nothing priced).
    pub fn into_report(self, stages: Stages) -> StepsReport {
        let Found {
            meta,
            series,
            outside_steps,
            ranks,
            steps,
        } = self;
        let Stages {
            tool,
            source,
            operating_point,
            launch_cost,
            shapes,
            groups,
            class_spread,
            verdict,
            medians,
            notes,
        } = stages;
        let tally = tally(&steps, &outside_steps, &ranks, meta.found_by);
        StepsReport {
            schema_version: crate::wire::steps::SCHEMA_VERSION,
            tool,
            source,
            method: meta.found_by,
            found_by: meta.found_by,
            exact_steps_hint: meta.hint,
            found_by_engine: meta.engine.map(str::to_owned),
            launch_cost,
            shapes,
            notes: meta.notes.into_iter().chain(notes).collect(),
            warnings: meta.warnings,
            summary: summarize(&steps),
            outside_steps,
            series,
            steps_without_gpu_work: steps.iter().filter(|s| s.wall_ns.is_none()).count(),
            ranks,
            operating_point,
            groups,
            class_spread,
            verdict,
            median_step: median_step(&steps),
            tally,
            medians,
            steps,
        }
    }
}

/// The counts and sums the report prints beside its tables: steps per method (the
/// report's own first, then in the methods' order), the tails, the GPU time outside steps
/// and the slowest rank of each aligned step (most first; ties in first-seen order).
fn tally(
    steps: &[Step],
    outside: &[OutsideSteps],
    ranks: &[AlignedStep],
    found_by: FoundBy,
) -> StepTally {
    let mut by: Vec<MethodCount> = Vec::new();
    for s in steps {
        match by.iter_mut().find(|m| m.found_by == s.found_by) {
            Some(m) => m.steps += 1,
            None => by.push(MethodCount {
                found_by: s.found_by,
                steps: 1,
            }),
        }
    }
    by.sort_by_key(|m| (m.found_by != found_by, m.found_by as u8));
    let tails: Vec<&Step> = steps.iter().filter(|s| s.tail_ops > 0).collect();
    let tail = (!tails.is_empty()).then(|| TailTally {
        steps: tails.len(),
        ops: tails.iter().map(|s| s.tail_ops).sum(),
        busy_ns: tails.iter().map(|s| s.tail_busy_ns).sum(),
    });
    let mut slowest: Vec<RankCount> = Vec::new();
    for a in ranks {
        match slowest.iter_mut().find(|c| c.pid == a.slowest_pid) {
            Some(c) => c.steps += 1,
            None => slowest.push(RankCount {
                pid: a.slowest_pid,
                steps: 1,
            }),
        }
    }
    slowest.sort_by_key(|c| std::cmp::Reverse(c.steps));
    StepTally {
        found_by: by,
        tail,
        outside_before_ns: outside.iter().map(|o| o.before_ns).sum(),
        outside_between_ns: outside.iter().map(|o| o.between_ns).sum(),
        outside_after_ns: outside.iter().map(|o| o.after_ns).sum(),
        slowest_rank: slowest,
    }
}

/// What the stages after step finding returned, each a finished value (the verdict took
/// the spread and the groups as arguments, so it was decided after them): the report is
/// built from these and the found steps once, and nothing writes into it afterwards.
#[derive(Debug, Clone, Default)]
pub struct Stages {
    /// Which stepgate read which report; None where the report is nested in a document
    /// that says it once at its top (`analyze`).
    pub tool: Option<Tool>,
    pub source: Option<SourceInfo>,
    pub operating_point: Option<OperatingPoint>,
    pub launch_cost: Option<LaunchCost>,
    pub shapes: Vec<ShapeCount>,
    /// Per group of like steps, its median step's classes with the trace's detail.
    pub groups: Vec<GroupAttribution>,
    pub class_spread: Vec<GroupSpread>,
    pub verdict: Option<RunVerdict>,
    pub medians: Option<RunMedians>,
    /// Notes after step finding's own: the floor's basis, the steps it could not price.
    pub notes: Vec<String>,
}
