//! Per-device busy time and per-kernel exclusive (non-overlapped) time, with one sweep per
//! device.
//!
//! The sweep is vLLM's gputrc2graph one, but per device: walk a device's ops in
//! (start, end, name) order keeping the latest end seen so far; each op is credited the
//! part of it past that running end. Σ exclusive = busy (the union length) on every
//! device by construction. Merging all GPUs into one sweep, as gputrc2graph does,
//! under-reports multi-GPU busy time, so the sweep restarts at every device.
//!
//! `sweep` orders the ops and credits exclusive time, `names` aggregates per (device,
//! name), `categories` sums names into kernel categories, `devices` puts a device's
//! summary together.

mod categories;
mod devices;
mod names;
mod sweep;

pub use categories::category_totals;
pub use devices::device_summaries;
pub use sweep::{exclusive_in_order, exclusive_per_op, name_ranks};
