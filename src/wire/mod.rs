//! The wire types: every type stepgate serializes (the JSON documents it prints, the files
//! it stores and reads back, the rows it exports), as plain data in one leaf module.
//!
//! Like ripgrep's `jsont`, this module depends on no other module of the crate: `timing`,
//! `roofline`, `attribution`, `baseline`, `dataset`, `report` and the rest depend on it,
//! never the other way, so the steps ↔ attribution join happens in one place
//! (`pipeline::steps::attach`) and not by one module filling the other's struct. A type
//! here holds fields, derives, serde attributes and the words it is serialized as (an
//! enum's `as_str`, its serde value); what computes with it (constructors, arithmetic,
//! parsing, checks, group keys, the words of a headline) is an `impl` in its domain
//! module. Nothing outside `wire` re-exports these types: every use
//! names `crate::wire::…`, so a document's contract is read in one place.
//!
//! One file per area: `analysis` (`analyze`), `steps` and `attribution` (`steps`, and
//! inside `analyze`), `run_medians` (the medians the steps report prints), `class_table` (the kernel classes, one row each), `gate` (`gate`/`diff`), `baseline` (the stored baseline file),
//! `trend`, `dataset` (a `runs` row), `roofline` (model, GPU, a step's floor), `floor`,
//! `capacity`, `presets`, `probe` (the launch-probe file), `capture` (its summary and the
//! sidecar), `trace` (what a report says about itself), `meta` (every document's `tool`
//! and `source`), and with the `synth` feature `synth` (the generator's ground truth).

pub mod analysis;
pub mod attribution;
pub mod baseline;
pub mod capacity;
pub mod capture;
pub mod class_table;
pub mod dataset;
pub mod decision;
pub mod doctor;
pub mod floor;
pub mod gate;
pub mod meta;
pub mod policy;
pub mod presets;
pub mod probe;
pub mod roofline;
pub mod run_medians;
pub mod steps;
#[cfg(feature = "synth")]
pub mod synth;
pub mod trace;
pub mod trend;
pub mod verdict;
