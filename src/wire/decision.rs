//! A decision on a comparison (`stepgate accept` / `reject`): who decided what, when and
//! why, about which comparison (its content hash) and which run. Stored in the history
//! dataset (`decisions/`) or beside the comparison; a later `gate --history` reads them.
//! The run decided on is identified by its report's content (`report_sha256`), so a
//! report exported after the decision, under any labels, is the decided run.

use serde::{Deserialize, Serialize};

/// Version of the decision record.
pub const SCHEMA_VERSION: u32 = 1;

/// What was decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// The change is intended: the candidate's run becomes the reference of later gates.
    Accepted,
    /// The change must not become a reference: the run is left out of later histories.
    Rejected,
}

impl Outcome {
    /// The word reports print: the same as the JSON spelling.
    pub fn word(self) -> &'static str {
        match self {
            Outcome::Accepted => "accepted",
            Outcome::Rejected => "rejected",
        }
    }
}

/// One decision record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Decision {
    pub schema_version: u32,
    pub outcome: Outcome,
    /// Who decided: `--by`, else the CI's actor (`GITHUB_ACTOR`), else `USER`.
    pub by: String,
    /// When, UTC, RFC 3339 (and as Unix ns, for ordering).
    pub at: String,
    pub at_ns: i64,
    /// The commit decided on: `--commit`, else `GITHUB_SHA`, where known.
    pub commit: Option<String>,
    /// Why (mandatory).
    pub reason: String,
    /// sha256 of the comparison JSON's bytes, as read.
    pub comparison_sha256: String,
    /// The candidate's run id the comparison names (gates with `--history` or `--export`).
    pub run_id: Option<String>,
    /// sha256 of the candidate report's bytes, as the comparison names it: the decided
    /// run is every export of that report, under any labels, before or after the
    /// decision. Absent in records written before it (matched by `run_id` alone).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub report_sha256: Option<String>,
    /// The comparison's verdict and the reasons it gave, as they were.
    pub verdict: String,
    pub covers: Vec<String>,
    /// The metrics the decision covers, as a later `gate --history` moves them: step
    /// metrics by name (`wall_ns`), kernels as `kernel:NAME`, categories as
    /// `category:NAME`. `accept` writes the comparison's regressed rows, or the subset
    /// `--metric` names. Absent (records written before this field, or a comparison with
    /// no regressed row): every metric.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metrics: Option<Vec<String>>,
    /// The stepgate that wrote it.
    pub tool: super::meta::Tool,
}
