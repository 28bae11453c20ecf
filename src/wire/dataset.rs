//! One run of the run-history dataset: a row of its `runs` table as `dataset::read` reads
//! it back, with the file it came from.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Serialize;

/// One row of the `runs` table, with the file it came from.
#[derive(Debug, Clone, Serialize)]
pub struct RunRow {
    pub run_id: String,
    pub exported_at_ns: i64,
    pub gpu_name: Option<String>,
    pub model: Option<String>,
    pub engine: Option<String>,
    pub source_format: Option<String>,
    #[serde(skip)]
    pub report_sha256: Option<String>,
    pub labels: BTreeMap<String, String>,
    /// The key of its `runs` object, relative to the dataset root.
    #[serde(skip)]
    pub runs_file: PathBuf,
    /// The export that committed it (names its other tables' files); `None` in datasets
    /// written before export ids.
    #[serde(skip)]
    pub export_id: Option<String>,
}
