//! The bounds every number a user or a file gives must fall in: a flag's parser
//! (`commands::numbers`), a capture's sidecar and the batch read from a trace refuse a
//! value beyond them, since the models multiply these numbers together and a wrapped
//! product would print a plausible wrong number.

/// Most requests one step can batch (vLLM's `max_num_seqs` is 256–1024 in practice).
pub const MAX_BATCH: u64 = 1 << 20;
/// Most keys one request attends (the longest-context models take ~10M tokens).
pub const MAX_CONTEXT: u64 = 1 << 30;
/// Most GPUs in one tensor- or pipeline-parallel group.
pub const MAX_PARALLEL: u64 = 4096;
/// Most kernel launches one step can issue.
pub const MAX_LAUNCHES: u64 = 1 << 32;
/// Largest idle gap that separates steps, µs (one hour; steps are milliseconds).
pub const MAX_GAP_US: f64 = 3.6e9;
/// Largest per-launch cost, µs (one second; measured costs are a few µs).
pub const MAX_LAUNCH_COST_US: f64 = 1e6;
/// Largest HBM bandwidth, TB/s: ten times beyond any part that exists, so a typo (or
/// `1e300`) is refused instead of priced.
pub const MAX_HBM_TB_S: f64 = 1e3;
