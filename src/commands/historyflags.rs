//! The run-history flags `baseline record`, `gate` and `trend` share: `--export DATASET`
//! with its `--label`s, `gate --history DATASET` with its query, the storage flags
//! (`--storage-option`, `--io-timeout`) and the `--where` parser.

use std::path::PathBuf;

use crate::dataset::write::parse_labels;
use crate::dataset::{Filter, HistoryMode};
use crate::exit::Result;
use crate::pipeline::history::HistoryPlan;
use crate::pipeline::plan::ExportPlan;
use crate::store::StoreConfig;

/// `--export DATASET` and `--label` for `baseline record` and `gate`.
#[derive(Debug, Clone, Default, clap::Args)]
#[command(next_help_heading = crate::commands::headings::EXPORT)]
pub struct ExportFlags {
    /// Also append this run to a Parquet dataset.
    ///
    /// As `stepgate export`; a run already there is not added again.
    #[arg(long, value_name = "DATASET", hide_short_help = true)]
    pub export: Option<PathBuf>,
    /// A label stored with the exported run; repeatable (needs --export).
    #[arg(
        long = "label",
        value_name = "KEY=VALUE",
        requires = "export",
        hide_short_help = true
    )]
    pub labels: Vec<String>,
    #[command(flatten)]
    pub storage: StorageFlags,
}

/// How object storage is reached (`--history`, `--export`, `--baseline` URLs): the
/// store's standard environment variables, then these.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct StorageFlags {
    /// An object_store option for s3://, gs:// or az:// (aws_endpoint=…, aws_region=…,
    /// google_service_account=…), or aws_profile=NAME (a named AWS profile, as AWS_PROFILE);
    /// repeatable. Secrets are better left in the environment.
    #[arg(
        long = "storage-option",
        value_name = "KEY=VALUE",
        hide_short_help = true
    )]
    pub storage_options: Vec<String>,
    /// Seconds one request to object storage may take before it is retried (failed
    /// requests are retried 4 times with backoff, then the command fails).
    #[arg(long, value_name = "SECONDS", default_value = "30", hide_short_help = true,
          value_parser = crate::commands::historyflags::io_timeout)]
    pub io_timeout: std::time::Duration,
}

impl StorageFlags {
    /// The storage configuration these flags give, for the command's plan.
    pub fn config(&self) -> Result<StoreConfig> {
        StoreConfig::new(&self.storage_options, self.io_timeout)
    }
}

/// `--io-timeout`: a whole number of seconds, 1 to 3600.
pub fn io_timeout(s: &str) -> std::result::Result<std::time::Duration, String> {
    match s.trim().parse::<u64>() {
        Ok(n) if (1..=3600).contains(&n) => Ok(std::time::Duration::from_secs(n)),
        _ => Err(format!(
            "--io-timeout {s:?}: give a whole number of seconds from 1 to 3600"
        )),
    }
}

impl ExportFlags {
    /// The export these flags ask for, labels checked; None without `--export`.
    pub fn plan(&self) -> Result<Option<ExportPlan>> {
        let Some(dataset) = &self.export else {
            return Ok(None);
        };
        let labels = parse_labels(&self.labels)?;
        let store = self.storage.config()?;
        crate::dataset::write::check_target(dataset, &store)?;
        Ok(Some(ExportPlan {
            dataset: dataset.clone(),
            labels,
            store,
        }))
    }
}

/// `gate --history DATASET …`: the baseline is the last runs of a dataset.
#[derive(Debug, Clone, Default, clap::Args)]
#[command(next_help_heading = crate::commands::headings::HISTORY)]
pub struct HistoryFlags {
    /// Gate against the last runs of this dataset.
    ///
    /// Instead of a baseline file; only runs on the candidate's GPU, and for its model
    /// when --model is given.
    #[arg(long, value_name = "DATASET", conflicts_with = "baseline")]
    pub history: Option<PathBuf>,
    /// Which runs: gpu=…, model=… (substring), engine=…, label.NAME=… (exact), kind=…;
    /// comma-separated or repeated. A comma inside a value stays in it (label.k=a,b) unless
    /// what follows holds `=`: write that comma as \, (label.k=a\,b=c).
    #[arg(long = "where", value_name = "KEY=VALUE,…", requires = "history", value_parser = where_clauses, hide_short_help = true)]
    pub where_: Vec<String>,
    /// How many of the newest matching runs (at least 1).
    #[arg(long, default_value = "20", requires = "history", hide_short_help = true,
          value_parser = crate::commands::numbers::last_runs_flag)]
    pub last: usize,
    /// steps: pool every step of those runs; runs: one median per run.
    #[arg(
        long,
        value_enum,
        default_value_t,
        requires = "history",
        hide_short_help = true
    )]
    pub history_mode: HistoryMode,
    /// Fewer matching runs than this: inconclusive.
    #[arg(long, default_value = "3", requires = "history", hide_short_help = true,
          value_parser = crate::commands::numbers::min_runs_flag)]
    pub min_runs: usize,
}

impl HistoryFlags {
    /// The history side these flags ask for, its dataset reached as `store` says; None
    /// without `--history`.
    pub fn plan(&self, store: &StoreConfig) -> Result<Option<HistoryPlan>> {
        let Some(dataset) = &self.history else {
            return Ok(None);
        };
        Ok(Some(HistoryPlan {
            dataset: dataset.clone(),
            filter: Filter::parse(&self.where_)?,
            last: self.last,
            mode: self.history_mode,
            min_runs: self.min_runs,
            store: store.clone(),
        }))
    }
}

/// Check `--where` while parsing flags, before a long report load.
pub(crate) fn where_clauses(s: &str) -> std::result::Result<String, String> {
    Filter::parse(&[s.to_owned()])
        .map(|_| s.to_owned())
        .map_err(|e| e.message)
}
