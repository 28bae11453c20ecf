//! What `trend` prints: one metric per run over time, per group, with change points and
//! the decisions on record (`accept`/`reject`) marked (`dataset::trend` computes it).

use std::collections::BTreeMap;

use serde::Serialize;

/// A marked change.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Change {
    /// Median of the previous runs' medians (up to `window` of them).
    pub reference: f64,
    pub previous_runs: usize,
    pub delta: f64,
    /// delta / reference; null when the reference is 0.
    pub relative: Option<f64>,
    /// `up` or `down`.
    pub direction: &'static str,
}

/// One run in a series.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Point {
    pub run_id: String,
    pub exported_at_ns: i64,
    pub exported_at: String,
    pub labels: BTreeMap<String, String>,
    /// Steps the statistics are over.
    pub steps: usize,
    pub median: f64,
    pub p10: f64,
    pub p90: f64,
    /// Set on a change point (heuristic, see the module docs).
    pub change: Option<Change>,
    /// The decision on record (`accept`/`reject`) that names this run; the newest when
    /// several do.
    pub decision: Option<TrendDecision>,
}

/// A decision naming a run, as `trend` shows it (the full record: docs/schema/decision).
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct TrendDecision {
    pub outcome: super::decision::Outcome,
    /// Who decided.
    pub by: String,
    /// When, UTC, RFC 3339.
    pub at: String,
    /// Why, whole (the table shortens it).
    pub reason: String,
    /// The commit decided on, where known.
    pub commit: Option<String>,
}

impl From<&super::decision::Decision> for TrendDecision {
    fn from(d: &super::decision::Decision) -> Self {
        TrendDecision {
            outcome: d.outcome,
            by: d.by.clone(),
            at: d.at.clone(),
            reason: d.reason.clone(),
            commit: d.commit.clone(),
        }
    }
}

/// One group's runs in time order.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Series {
    /// `key=value` per `--by` key.
    pub group: BTreeMap<String, String>,
    pub points: Vec<Point>,
}

/// The whole answer.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Trend {
    pub schema_version: u32,
    pub tool: super::meta::Tool,
    pub source: super::meta::DatasetSource,
    pub metric: String,
    /// How the renderings name the metric (its `baseline::metrics` row); not serialized.
    #[serde(skip)]
    #[schemars(skip)]
    pub label: String,
    pub unit: &'static str,
    pub window: usize,
    /// The threshold a change must cross (relative and absolute, as `gate` uses it).
    pub threshold_rel: f64,
    pub threshold_abs: f64,
    pub runs_matched: usize,
    pub change_rule: String,
    pub series: Vec<Series>,
    /// Runs left out (damaged rows, duplicates), samples dropped and decision records that
    /// could not be read, one line each.
    pub warnings: Vec<String>,
}
