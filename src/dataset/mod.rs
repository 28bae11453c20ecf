//! Run history as a hive-partitioned Parquet dataset on a local disk or object storage
//! (`store`): `export` appends one run (five tables, one object per table per export, the
//! `runs` row written last with a create-only put as the commit), `trend` reads it back,
//! `gate --history` turns the last N matching runs into baseline samples, and `vacuum`
//! removes what exports that never committed left. Everything read back is checked as
//! data from outside. The layout, the commit protocol and the columns are documented in
//! docs/dataset.md.

pub mod awsprofile;
pub mod columns;
pub mod dates;
pub mod decisions;
pub mod filter;
pub mod flatten;
pub mod history;
pub mod layout;
pub mod localfs;
pub mod read;
pub mod reads;
pub mod reference;
pub mod rows;
pub mod schema;
pub mod store;
pub mod storeconfig;
pub mod trend;
pub mod vacuum;
pub mod write;

pub use filter::Filter;
pub use history::{history_baseline, Candidate, HistoryMode, HistoryQuery};
pub use schema::SCHEMA_VERSION;
pub use write::{export_run, ExportOptions, ExportOutcome, Labels, RunSource};
