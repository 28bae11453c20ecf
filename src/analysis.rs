//! The analysis of one trace: `timing` fills the wire types (defined in
//! [`crate::wire::analysis`], re-exported here) and `report` renders them.

use crate::trace::TraceMeta;

pub use crate::wire::analysis::{
    Analysis, CategoryStat, DeviceSummary, KernelStat, ProcessRef, SourceInfo, SCHEMA_VERSION,
};

impl From<&TraceMeta> for SourceInfo {
    fn from(m: &TraceMeta) -> Self {
        SourceInfo {
            format: m.format,
            path: m.path.clone(),
            tool_version: m.tool_version.clone(),
            schema_version: m.schema_version.clone(),
            cuda_graph_trace_mode: m.cuda_graph_trace_mode.clone(),
            origin_epoch_ns: m.origin_epoch_ns,
        }
    }
}
