//! What every JSON document stepgate writes says about itself: which stepgate wrote it
//! (`tool`), and for documents computed from inputs named on the command line, what those
//! were (`source`). Each document keeps its own `schema_version` (docs/schema/README.md).

use serde::{Deserialize, Serialize};

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
}

/// One side of a comparison: what kind of input it was and its path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SideSource {
    pub kind: SideKind,
    /// The path as given on the command line.
    pub path: String,
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
