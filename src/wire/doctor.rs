//! `doctor`: the preflight of one capture before it reaches a gate — findings, each with a
//! severity, and whether the capture passed at the asked strictness.

use serde::Serialize;

/// Version of the `doctor` JSON document.
pub const SCHEMA_VERSION: u32 = 1;

/// How much a finding matters to a gate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// What the capture holds; nothing to do.
    Ok,
    /// Worth knowing; the gate's numbers are not affected.
    Info,
    /// The gate runs, but some of its numbers are guesses or hidden: fix the capture.
    Warning,
    /// The gate cannot work on this capture.
    Error,
}

/// One check's result.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Finding {
    /// Which check (`gpu_work`, `steps`, `graph_mode`, `ranges`, `window`, `gpu`, `ranks`,
    /// `launch_links`).
    pub check: String,
    pub severity: Severity,
    /// What was found, with its numbers (measured from the capture).
    pub message: String,
    /// What to do about it, where something can be done.
    pub action: Option<String>,
}

/// The `doctor` document.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Doctor {
    pub schema_version: u32,
    pub tool: super::meta::Tool,
    pub source: super::meta::SourceInfo,
    pub findings: Vec<Finding>,
    /// The most severe finding.
    pub worst: Severity,
    /// `--strict`: warnings fail too.
    pub strict: bool,
    /// No finding at the failing severity (error, or warning with `--strict`).
    pub passed: bool,
}
