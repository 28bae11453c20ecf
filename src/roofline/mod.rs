//! The analytic roofline: cited GPU peaks, model geometry, the per-step floor, vLLM's
//! per-component perf model (for agreement checks) and the capacity-planning chain.
//!
//! Pure arithmetic, no trace. Sources: docs/method.md §2.1, §2.2, §3, the MLA section
//! and the six capacity steps; docs/method.md §3.1; vLLM `vllm/v1/metrics/perf.py`.
//! Conventions and tolerances are pinned by `tests/golden/*.json` (see its README).

pub mod capacity;
pub mod capacity_plan;
pub mod classes;
pub mod floor;
pub mod gpu;
pub mod hfconfig;
pub mod mixed;
pub mod model;
pub mod options;
pub mod presets;
pub mod vllm;

/// Cited driver-only `cudaLaunchKernel` cost on H100 / CUDA 12.6: Vellaisamy et al.,
/// "Characterizing GPU Kernel Launch Overheads", ISPASS 2025, arXiv:2504.11750, Table V
/// (the figure docs/method.md §8.1 uses).
pub(crate) const CITED_LAUNCH_NS: f64 = 2_374.0;

/// Kernel launches per decode step of TP=1 Llama-3-8B (docs/method.md §8.2).
pub(crate) const DEFAULT_LAUNCHES: u64 = 330;
