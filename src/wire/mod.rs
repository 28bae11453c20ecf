//! The wire types: every serde struct stepgate prints or stores as JSON (`analyze`,
//! `steps`, the attribution inside steps, `gate`/`diff`), in one leaf module.
//!
//! Like ripgrep's `jsont`, this module depends on no computing module of the crate:
//! `timing`, `attribution`, `baseline` and `report` depend on it, never the other way, so
//! the steps ↔ attribution join happens in one place (`pipeline::steps::run`)
//! and not by one module filling the other's struct. The only crate types it names are
//! plain data from `trace` (the source format) and `exit`'s error (the join's). The old paths (`analysis::Analysis`,
//! `timing::steps::Step`, `attribution::Shape`, `baseline::compare::Comparison`, …)
//! re-export these.

pub mod analysis;
pub mod attribution;
pub mod baseline;
pub mod capacity;
pub mod capture;
pub mod dataset;
pub mod floor;
pub mod gate;
pub mod meta;
pub mod presets;
pub mod probe;
pub mod roofline;
pub mod steps;
#[cfg(feature = "synth")]
pub mod synth;
pub mod trace;
pub mod trend;
