//! Run history as a hive-partitioned Parquet dataset: `export` appends one run (five
//! tables, one file per table per run, renamed into place under a lock), `trend` reads it
//! back with polars' lazy Parquet scan, and `gate --history` turns the last N matching runs
//! into baseline samples. The layout and columns are documented in docs/dataset.md.

pub mod history;
pub mod read;
pub mod schema;
pub mod trend;
pub mod write;

pub use history::{history_baseline, HistoryMode, HistoryQuery};
pub use read::{Filter, RunRow};
pub use schema::SCHEMA_VERSION;
pub use write::{export_run, ExportOutcome, Labels, RunSource};
