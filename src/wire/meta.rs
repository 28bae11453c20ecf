//! What every JSON document stepgate writes says about itself: which stepgate wrote it
//! (`tool`), and what it was computed from (`source`): the report it read, or the inputs
//! named on the command line. Each document keeps its own `schema_version`
//! (docs/schema/README.md).

use serde::{Deserialize, Serialize};

use super::trace::SourceFormat;

/// The program that wrote a document: `{"name": "stepgate", "version": "0.1.0"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Tool {
    /// Always `stepgate`.
    pub name: String,
    /// The crate version (`stepgate --version` without the commit).
    pub version: String,
}

impl Tool {
    /// This build.
    pub fn current() -> Tool {
        Tool {
            name: env!("CARGO_PKG_NAME").to_owned(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
        }
    }
}

/// What a `gate` or `diff` compared: each side as it was given (a baseline file, a
/// report, or for `gate --history` the dataset directory).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ComparisonSource {
    pub baseline: SideSource,
    pub candidate: SideSource,
    /// The history dataset the baseline side was built from (`gate --history DS`), as an
    /// absolute path or URL: where `accept` and `reject` record a decision on this
    /// comparison unless their own `--history` names another.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history: Option<String>,
    /// The dataset the candidate was exported to (`gate --export DS`), likewise absolute:
    /// where a decision is recorded when the comparison read no history.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub export: Option<String>,
}

/// One side of a comparison: what kind of input it was and its path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SideSource {
    pub kind: SideKind,
    /// The path as given on the command line.
    pub path: String,
    /// The run id an export of this report is (`gate --history` or `--export`): what
    /// `stepgate accept` records, so a later history gate can start from this run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    /// sha256 of the report's bytes (`gate --history` or `--export`): the run's identity in
    /// any history, whatever labels it is exported under; what a decision is matched by.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub report_sha256: Option<String>,
}

/// What a side of a comparison was read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum SideKind {
    /// A stored baseline file.
    Baseline,
    /// A report, recorded on the fly.
    Report,
    /// The matching runs of a dataset (`gate --history`).
    History,
}

/// The run-history dataset a `trend` read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DatasetSource {
    /// The dataset directory as given on the command line.
    pub dataset: String,
}

/// The model and GPU a `floor` or `capacity` document was derived from (no trace).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ModelSource {
    /// The `--model` preset key, or the `--model-config` path.
    pub model: String,
    /// The `--gpu` preset key.
    pub gpu: String,
}

/// Where the trace came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SourceInfo {
    pub format: SourceFormat,
    pub path: String,
    pub tool_version: Option<String>,
    pub schema_version: Option<String>,
    pub cuda_graph_trace_mode: Option<String>,
    /// Unix-epoch ns of time zero, where the format states it: add it to any `*_ns` time
    /// to get an absolute timestamp.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin_epoch_ns: Option<i64>,
}
