//! Stored baselines and the noise-aware comparison behind `baseline record`, `gate` and
//! `diff`: the sample model, its versioned file, the statistics, the policy and the verdict.
//!
//! Flow: a report becomes a [`Baseline`](crate::wire::baseline::Baseline) (per-step
//! samples grouped by step kind and batch size) through [`samples_from_steps`]; two
//! baselines meet in [`compare()`] under a [`Policy`]; `report::gate` renders the
//! [`Comparison`](crate::wire::gate::Comparison). The stored and printed types are in
//! `wire::baseline` and `wire::gate`.

pub mod check;
pub mod compare;
pub mod file;
pub mod from_report;
pub mod metrics;
pub mod model;
pub mod policy;
pub mod select;
pub mod servable;
pub mod stats;
pub mod waterfall;

pub use compare::{compare, compare_unchecked};
pub use file::{is_baseline_file, load_side, read_baseline, write_baseline};
pub use from_report::samples_from_steps;
pub use policy::Policy;
