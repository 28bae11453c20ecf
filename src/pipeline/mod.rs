//! The library layer the commands call: plain options in, complete results out.
//!
//! A command turns its flags into a [`plan::StepsPlan`] once and calls one run here:
//! [`steps`] (a report's complete, attributed steps), [`analyze`], [`record`] (a baseline
//! from a report), [`gate`] (gate and diff), [`history`] (export and the history side of a
//! gate); [`pricing`] prices steps against their floors. Nothing here knows the argument parser or how
//! output looks; the commands print what these return.

pub mod analyze;
pub mod capacity;
pub mod decision;
pub mod doctor;
pub mod floor;
pub mod gate;
pub mod history;
pub mod plan;
pub mod policy;
pub mod pricing;
pub mod record;
pub mod steps;
