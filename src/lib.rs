//! stepgate: per-step GPU time accounting for LLM inference profiles, priced against the
//! roofline floor, with a noise-aware regression gate for CI.
//!
//! Data flows one way (see ARCHITECTURE.md): `source` → [`trace::Trace`] → `timing` →
//! `roofline`/`attribution` → `baseline` → `report`; every value a command prints or
//! stores is a plain type of [`wire`]. [`pipeline`] is the library layer the commands call
//! (a plan in, a complete result out: a report's steps, a baseline, a gate run);
//! `commands` and `cli` parse flags into plans, call it and print, and only they know
//! the argument parser; only `report` knows how output looks. Errors and exit codes: [`exit`].

// Most functions are `pub(crate)` (the binary, the Python module and the tests use the
// rest); their docs still point a reader at the crate-internal item that does the work.
#![allow(rustdoc::private_intra_doc_links)]

pub mod attribution;
pub mod baseline;
pub mod capture;
pub mod categories;
pub mod cli;
pub mod commands;
pub mod dataset;
pub mod exit;
pub mod export;
pub mod glossary;
pub mod interrupt;
pub mod limits;
pub mod operating_point;
pub mod output;
pub mod phases;
pub mod pipeline;
pub mod probe;
pub mod report;
pub mod roofline;
pub mod schema;
pub mod source;
pub mod stats;
pub mod store;
pub mod suggest;
// Synthetic nsys/Kineto captures with ground truth, for tests and benchmarks
// (`--features synth`; not in a default build).
#[cfg(feature = "synth")]
pub mod synth;
pub mod text;
pub mod timing;
pub mod trace;
pub mod wire;
pub mod words;

/// The command line as a library call (argument vector in, plain values out), for the
/// Python module: `cli::embed`, where the flags are parsed and planned.
pub use cli::embed;
