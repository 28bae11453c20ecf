//! The run-history flags `baseline record`, `gate` and `trend` share: `--export DATASET`
//! with its `--label`s, `gate --history DATASET` with its query, and the `--where` parser.

use std::path::PathBuf;

use crate::dataset::write::parse_labels;
use crate::dataset::{Filter, HistoryMode};
use crate::exit::Result;
use crate::pipeline::history::HistoryPlan;
use crate::pipeline::plan::ExportPlan;

/// `--export DATASET` and `--label` for `baseline record` and `gate`.
#[derive(Debug, Clone, Default, clap::Args)]
#[command(next_help_heading = crate::commands::headings::EXPORT)]
pub struct ExportFlags {
    /// Also append this run to a Parquet dataset (see `stepgate export`); a run already
    /// there is not added again.
    #[arg(long, value_name = "DATASET")]
    pub export: Option<PathBuf>,
    /// A label stored with the exported run; repeatable (needs --export).
    #[arg(long = "label", value_name = "KEY=VALUE", requires = "export")]
    pub labels: Vec<String>,
    /// Seconds to wait for another export holding the dataset's lock, then exit 4 naming
    /// the holder (0: do not wait).
    #[arg(long, value_name = "SECONDS", default_value = "60", requires = "export",
          value_parser = crate::commands::numbers::lock_timeout_flag)]
    pub lock_timeout: std::time::Duration,
}

impl ExportFlags {
    /// The export these flags ask for, labels checked; None without `--export`.
    pub fn plan(&self) -> Result<Option<ExportPlan>> {
        let Some(dataset) = &self.export else {
            return Ok(None);
        };
        crate::dataset::write::check_target(dataset)?;
        Ok(Some(ExportPlan {
            dataset: dataset.clone(),
            labels: parse_labels(&self.labels)?,
            lock_timeout: self.lock_timeout,
        }))
    }
}

/// `gate --history DATASET …`: the baseline is the last runs of a dataset.
#[derive(Debug, Clone, Default, clap::Args)]
#[command(next_help_heading = crate::commands::headings::HISTORY)]
pub struct HistoryFlags {
    /// Gate against the last runs of this dataset instead of a baseline file (only runs on
    /// the candidate's GPU, and for its model when --model is given).
    #[arg(long, value_name = "DATASET", conflicts_with = "baseline")]
    pub history: Option<PathBuf>,
    /// Which runs: gpu=…, model=… (substring), engine=…, label.NAME=… (exact), kind=…;
    /// comma-separated or repeated.
    #[arg(long = "where", value_name = "KEY=VALUE,…", requires = "history", value_parser = where_clauses)]
    pub where_: Vec<String>,
    /// How many of the newest matching runs (at least 1).
    #[arg(long, default_value = "20", requires = "history",
          value_parser = crate::commands::numbers::last_runs_flag)]
    pub last: usize,
    /// steps: pool every step of those runs; runs: one median per run.
    #[arg(long, value_enum, default_value_t, requires = "history")]
    pub history_mode: HistoryMode,
    /// Fewer matching runs than this: inconclusive.
    #[arg(long, default_value = "3", requires = "history",
          value_parser = crate::commands::numbers::min_runs_flag)]
    pub min_runs: usize,
}

impl HistoryFlags {
    /// The history side these flags ask for; None without `--history`.
    pub fn plan(&self) -> Result<Option<HistoryPlan>> {
        let Some(dataset) = &self.history else {
            return Ok(None);
        };
        Ok(Some(HistoryPlan {
            dataset: dataset.clone(),
            filter: Filter::parse(&self.where_)?,
            last: self.last,
            mode: self.history_mode,
            min_runs: self.min_runs,
        }))
    }
}

/// Check `--where` while parsing flags, before a long report load.
pub fn where_clauses(s: &str) -> std::result::Result<String, String> {
    Filter::parse(&[s.to_owned()])
        .map(|_| s.to_owned())
        .map_err(|e| e.message)
}
