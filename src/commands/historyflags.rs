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
pub struct ExportFlags {
    /// Also append this run to a Parquet dataset (see `stepgate export`); a run already
    /// there is not added again.
    #[arg(long, value_name = "DATASET")]
    pub export: Option<PathBuf>,
    /// A label stored with the exported run; repeatable (needs --export).
    #[arg(long = "label", value_name = "KEY=VALUE", requires = "export")]
    pub labels: Vec<String>,
}

impl ExportFlags {
    /// The export these flags ask for, labels checked; None without `--export`.
    pub fn plan(&self) -> Result<Option<ExportPlan>> {
        let Some(dataset) = &self.export else {
            return Ok(None);
        };
        Ok(Some(ExportPlan {
            dataset: dataset.clone(),
            labels: parse_labels(&self.labels)?,
        }))
    }
}

/// `gate --history DATASET …`: the baseline is the last runs of a dataset.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct HistoryFlags {
    /// Gate against the last runs of this dataset instead of a baseline file (only runs on
    /// the candidate's GPU, and for its model when --model is given).
    #[arg(long, value_name = "DATASET", conflicts_with = "baseline", value_parser = dataset_dir)]
    pub history: Option<PathBuf>,
    /// Which runs: gpu=…, model=… (substring), engine=…, label.NAME=… (exact), kind=…;
    /// comma-separated or repeated.
    #[arg(long = "where", value_name = "KEY=VALUE,…", requires = "history", value_parser = where_clauses)]
    pub where_: Vec<String>,
    /// How many of the newest matching runs.
    #[arg(long, default_value_t = 20, requires = "history")]
    pub last: usize,
    /// steps: pool every step of those runs; runs: one median per run.
    #[arg(long, value_enum, default_value_t, requires = "history")]
    pub history_mode: HistoryMode,
    /// Fewer matching runs than this: inconclusive.
    #[arg(long, default_value_t = 3, requires = "history")]
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

/// Check `--history` while parsing flags: an existing directory.
fn dataset_dir(s: &str) -> std::result::Result<PathBuf, String> {
    let p = PathBuf::from(s);
    if p.is_dir() {
        Ok(p)
    } else {
        Err(format!(
            "{s} is not a directory: pass a dataset written by `stepgate export`"
        ))
    }
}
