//! Run history as a hive-partitioned Parquet dataset on a local disk or object storage
//! (`store`): `export` appends one run (five tables, one object per table per export, the
//! `runs` row written last with a create-only put as the commit), `trend` reads it back,
//! `gate --history` turns the last N matching runs into baseline samples, and `vacuum`
//! removes what exports that never committed left. Everything read back is checked as
//! data from outside. The layout, the commit protocol and the columns are documented in
//! docs/dataset.md.

pub mod columns;
pub mod dates;
pub mod decisions;
pub mod filter;
pub mod flatten;
pub mod history;
pub mod layout;
pub mod read;
pub mod reference;
pub mod rows;
pub mod schema;
pub mod trend;
pub mod vacuum;
pub mod write;

// The storage seam lives below the dataset (baselines and outputs use it too); the old
// paths stay as aliases.
pub use crate::store;
pub use crate::store::awsprofile;
pub use crate::store::config as storeconfig;
pub use crate::store::localfs;
pub use crate::store::reads;

pub use filter::Filter;
pub use history::{history_baseline, Candidate, HistoryMode, HistoryQuery};
pub use schema::SCHEMA_VERSION;
pub use write::{export_run, ExportOptions, ExportOutcome, Labels, RunSource};
