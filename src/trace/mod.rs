//! The one in-memory model every source fills: polars frames of ops, calls and ranges,
//! plus devices, interned names and export metadata.
//!
//! Names are interned (`name_id: u32` into [`Trace::strings`]) because kernel names are
//! long and repeat millions of times; a frame of u32 ids keeps a 4M-kernel report well
//! under the memory budget and makes group-by on names cheap. Times are integer
//! nanoseconds relative to the report's own origin. A missing id (correlation, graph
//! node, graph) is `-1`, never NULL, so every column is a contiguous primitive slice.
//! Rows come in no guaranteed order (sources append as they read); every analysis sorts
//! what it needs once, so loaders never pay for a sort nobody uses.
//!
//! Here: the model itself (kinds, column names, [`Trace`]; the devices and export metadata
//! it carries are plain data in `wire::trace`); in `builders` the row-wise builders
//! sources fill, in `store` how they store a field (ids in 32 bits), in `views` the
//! slices analyses read, in `interner` name interning, in
//! `launch` the launch-call classifier, in `metrics` the measured GPU counters. Those
//! submodules are private and re-exported here, so `crate::trace::X` is their one path.

mod builders;
mod interner;
mod launch;
mod metrics;
mod store;
mod views;

use polars::prelude::DataFrame;

use crate::exit::Result;
use crate::wire::meta::SourceInfo;
use crate::wire::trace::{DeviceInfo, SourceFormat, TraceMeta};

pub use builders::{
    CallRow, CallsBuilder, CallsBuilderOf, GeometryCols, Launch, NameTable, OpRow, OpsBuilder,
    OpsBuilderOf, RangeRow, RangesBuilder, RangesBuilderOf, ShapeRow, ShapesBuilder,
    ShapesBuilderOf,
};
pub use interner::{bounded, remap, Interner, MAX_NAME_BYTES};
pub use launch::{display_call_name, is_graph_launch_call, is_launch_call};
pub use metrics::{GpuMetric, GpuMetricSeries};
pub use store::IdStore;
pub use views::{i32s, i64s, u32s, CallsView, GeometryView, OpsView, RangesView, ShapesView};

/// Kind of a GPU operation (`ops.kind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u32)]
pub enum OpKind {
    Kernel = 0,
    Memcpy = 1,
    Memset = 2,
    /// An opaque CUDA-graph replay (graph-mode tracing): one interval, no per-node rows.
    Graph = 3,
}

impl OpKind {
    pub(crate) fn from_u32(v: u32) -> OpKind {
        match v {
            0 => OpKind::Kernel,
            1 => OpKind::Memcpy,
            2 => OpKind::Memset,
            _ => OpKind::Graph,
        }
    }
}

/// Which API family a host call belongs to (`calls.api`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
pub enum CallApi {
    Runtime = 0,
    Driver = 1,
}

/// Where a range came from (`ranges.kind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
pub enum RangeKind {
    /// NVTX push/pop (nsys eventType 59) or a Kineto CPU `user_annotation`.
    HostPushPop = 0,
    /// NVTX start/end (eventType 60), may end on another thread.
    HostStartEnd = 1,
    /// A GPU-side annotation span (Kineto `gpu_user_annotation`); `pid` holds the device.
    GpuAnnotation = 2,
    /// A Kineto `python_function` span (`file.py(line): function`), kept only for the
    /// engines' step functions (vLLM `execute_model`, SGLang `run_batch` …), and in a
    /// frames load (`LoadOptions::python_frames`) for every frame long enough.
    PythonStack = 3,
}

/// Column names, shared by every source and every consumer.
pub mod col {
    pub(crate) const DEVICE: &str = "device";
    pub(crate) const STREAM: &str = "stream";
    pub(crate) const PID: &str = "pid";
    pub(crate) const TID: &str = "tid";
    pub(crate) const START: &str = "start_ns";
    pub const END: &str = "end_ns";
    pub const NAME: &str = "name_id";
    pub(crate) const SHORT: &str = "short_id";
    pub(crate) const KIND: &str = "kind";
    pub(crate) const CORR: &str = "correlation_id";
    pub(crate) const GRAPH: &str = "graph_id";
    pub(crate) const BYTES: &str = "bytes";
    pub const API: &str = "api";
    pub(crate) const DOMAIN: &str = "domain_id";
    /// Kernel launch geometry (ops, only with `LoadOptions::geometry`): u32, 0 where
    /// unknown or not a kernel.
    pub(crate) const GRID_X: &str = "grid_x";
    pub(crate) const GRID_Y: &str = "grid_y";
    pub(crate) const GRID_Z: &str = "grid_z";
    pub(crate) const BLOCK_X: &str = "block_x";
    pub(crate) const BLOCK_Y: &str = "block_y";
    pub(crate) const BLOCK_Z: &str = "block_z";
    /// Input shapes (`Trace::shapes`): the interned compact JSON of `args["Input Dims"]`.
    pub(crate) const DIMS: &str = "dims_id";
    /// Input shapes: the first dimension of the first input, -1 where it has none.
    pub(crate) const FIRST_DIM: &str = "first_dim";
}

impl TraceMeta {
    pub fn new(format: SourceFormat, path: impl Into<String>) -> Self {
        TraceMeta {
            format,
            path: path.into(),
            tool_version: None,
            schema_version: None,
            cuda_graph_trace_mode: None,
            process_names: Vec::new(),
            origin_epoch_ns: None,
            distributed: None,
            warnings: Vec::new(),
            nvtx_domains: Vec::new(),
        }
    }

    /// The name of range domain `domain_id` in process `pid`, when it is a named domain
    /// the report names (nsys: a domain-create row; 0 and -1 are the default domain).
    pub(crate) fn domain_name(&self, pid: i64, domain_id: i64) -> Option<&str> {
        if domain_id <= 0 {
            return None;
        }
        self.nvtx_domains
            .iter()
            .find(|d| d.pid == pid && d.id == domain_id)
            .map(|d| d.name.as_str())
    }
}

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

/// The trace: every source produces one of these; every analysis reads only this.
#[derive(Debug, Clone)]
pub struct Trace {
    /// GPU operations: device, stream, pid, start_ns, end_ns, name_id, kind (u32
    /// [`OpKind`]), correlation_id, graph_id, bytes (memcpy/memset, else 0).
    pub ops: DataFrame,
    /// The short name of each op name ([`NameTable::of`]).
    pub short_names: NameTable,
    /// The API family ([`CallApi`]) of each call name ([`CallsView::api`]).
    pub call_apis: NameTable,
    /// Host API calls: pid, tid, start_ns, end_ns, name_id, correlation_id. The API
    /// family ([`CallApi`]) is held per name (`call_apis`), and whether a call launches
    /// GPU work is a function of its name ([`is_launch_call`], [`CallsView::is_launch`]):
    /// neither is stored per call (27M calls in a 16M-kernel report).
    pub calls: DataFrame,
    /// Annotated ranges: pid, tid, start_ns, end_ns, name_id, domain_id, kind (u32 [`RangeKind`]).
    pub ranges: DataFrame,
    /// Operator input shapes (Kineto `cpu_op` events recorded with `record_shapes`, only
    /// with `LoadOptions::shapes`; nsys records none): pid, tid, start_ns, end_ns,
    /// name_id, dims_id, first_dim (see [`col::DIMS`], [`col::FIRST_DIM`]).
    pub shapes: DataFrame,
    /// Measured GPU counters (nsys `--gpu-metrics-devices`, only with
    /// `LoadOptions::gpu_metrics`): the DRAM bandwidth and SM activity series.
    pub gpu_metrics: Vec<GpuMetricSeries>,
    pub devices: Vec<DeviceInfo>,
    /// Interned names; `name_id`/`short_id` index into this.
    pub strings: Vec<String>,
    pub meta: TraceMeta,
}

impl Trace {
    /// An empty trace of the given format (sources start from this).
    pub fn empty(meta: TraceMeta) -> Result<Trace> {
        Ok(Trace {
            ops: OpsBuilder::default().finish_ops()?.0,
            short_names: NameTable::default(),
            call_apis: NameTable::default(),
            calls: CallsBuilder::default().finish_calls()?.0,
            ranges: RangesBuilder::default().finish()?,
            shapes: ShapesBuilder::default().finish()?,
            gpu_metrics: Vec::new(),
            devices: Vec::new(),
            strings: Vec::new(),
            meta,
        })
    }

    /// The interned string for an id.
    pub fn name(&self, id: u32) -> &str {
        self.strings
            .get(id as usize)
            .map(String::as_str)
            .unwrap_or("")
    }

    /// Say how many rows held a per-name value (`what`: "short name", "API family")
    /// other than the first row of their name.
    pub(crate) fn warn_name_conflicts(meta: &mut TraceMeta, table: &NameTable, what: &str) {
        if table.conflicts > 0 {
            meta.warnings.push(format!(
                "{} row(s) have a {what} other than the first row of the same name (a \
                 rewritten export?): every row of a name reads the first one's",
                table.conflicts
            ));
        }
    }

    /// Say how many ids a load could not hold (see [`IdStore`]), when there were any.
    pub(crate) fn warn_out_of_range(meta: &mut TraceMeta, ids: u64) {
        if ids > 0 {
            meta.warnings.push(format!(
                "{ids} id(s) (device, stream, process, correlation or graph) were \
                 2^31 or more: stepgate holds ids in 32 bits, so they read as unknown (-1) and \
                 what they would link (an op to its launch, a call to its process) is not joined"
            ));
        }
    }

    /// Device ids that have at least one op, ascending.
    pub fn op_devices(&self) -> Result<Vec<i64>> {
        let mut ids: Vec<i64> = i32s(&self.ops, col::DEVICE)?
            .iter()
            .map(|&d| i64::from(d))
            .collect();
        ids.sort_unstable();
        ids.dedup();
        Ok(ids)
    }
}
