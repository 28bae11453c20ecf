//! Run history as a hive-partitioned Parquet dataset: `export` appends one run (five
//! tables, one file per table per run, renamed into place under a lock), `trend` reads it
//! back with polars' lazy Parquet scan, and `gate --history` turns the last N matching runs
//! into baseline samples. Everything read back is checked as data from outside. The layout
//! and columns are documented in docs/dataset.md.

pub mod columns;
pub mod dates;
pub mod filter;
pub mod flatten;
pub mod history;
pub mod layout;
pub mod lock;
pub mod read;
pub mod rows;
pub mod schema;
pub mod trend;
pub mod write;

pub use filter::Filter;
pub use history::{history_baseline, Candidate, HistoryMode, HistoryQuery};
pub use schema::SCHEMA_VERSION;
pub use write::{export_run, ExportOptions, ExportOutcome, Labels, RunSource};
