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

use polars::prelude::*;

use crate::exit::{Error, Result};

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
    pub fn from_u32(v: u32) -> OpKind {
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
    /// engines' step functions (vLLM `execute_model`, SGLang `run_batch` …).
    PythonStack = 3,
}

/// Column names, shared by every source and every consumer.
pub mod col {
    pub const DEVICE: &str = "device";
    pub const STREAM: &str = "stream";
    pub const PID: &str = "pid";
    pub const TID: &str = "tid";
    pub const START: &str = "start_ns";
    pub const END: &str = "end_ns";
    pub const NAME: &str = "name_id";
    pub const SHORT: &str = "short_id";
    pub const KIND: &str = "kind";
    pub const CORR: &str = "correlation_id";
    pub const GRAPH_NODE: &str = "graph_node_id";
    pub const GRAPH: &str = "graph_id";
    pub const BYTES: &str = "bytes";
    pub const API: &str = "api";
    pub const IS_LAUNCH: &str = "is_launch";
    pub const DOMAIN: &str = "domain_id";
    /// Kernel launch geometry (ops, only with `LoadOptions::geometry`): u32, 0 where
    /// unknown or not a kernel.
    pub const GRID_X: &str = "grid_x";
    pub const GRID_Y: &str = "grid_y";
    pub const GRID_Z: &str = "grid_z";
    pub const BLOCK_X: &str = "block_x";
    pub const BLOCK_Y: &str = "block_y";
    pub const BLOCK_Z: &str = "block_z";
    /// Input shapes (`Trace::shapes`): the interned compact JSON of `args["Input Dims"]`.
    pub const DIMS: &str = "dims_id";
    /// Input shapes: the first dimension of the first input, -1 where it has none.
    pub const FIRST_DIM: &str = "first_dim";
}

/// A GPU as the report names it.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct DeviceInfo {
    /// Device id as ops carry it (nsys `deviceId`, Kineto GPU `pid`/device).
    pub id: i64,
    pub name: Option<String>,
    /// Bytes per second, as the report states it (nsys `memoryBandwidth`).
    pub memory_bandwidth_bytes_per_s: Option<f64>,
    pub sm_count: Option<i64>,
    pub total_memory_bytes: Option<i64>,
}

/// Which file format a trace came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SourceFormat {
    Nsys,
    Kineto,
}

/// One process group of `torch.distributed`, as the profiler recorded it (Kineto
/// `distributedInfo.pg_config[]`, from `distributed_c10d._get_all_pg_configs`).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ProcessGroup {
    /// `pg_name`: the group's name, a number as text (`"0"` is the default group).
    pub name: String,
    /// `pg_desc` (`default_pg`, `undefined`, …); absent in older traces.
    pub desc: Option<String>,
    /// `backend_config`, e.g. `cuda:nccl` or `cpu:gloo,cuda:gloo`.
    pub backend_config: Option<String>,
    /// `pg_size`: how many ranks the group has.
    pub size: Option<i64>,
    /// `ranks`: the global ranks in the group.
    pub ranks: Vec<i64>,
}

/// The distributed run a capture belongs to, as the report states it (read, never
/// inferred). Kineto: `distributedInfo`; nsys records nothing equivalent that stepgate
/// can read (docs/nsys-format.md §11), so nsys traces leave it `None`.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Distributed {
    /// `backend` (`nccl`, `gloo`, …).
    pub backend: Option<String>,
    /// `rank` of the first file read that states one.
    pub rank: Option<i64>,
    /// `world_size`.
    pub world_size: Option<i64>,
    /// `nccl_version` (`2.17.1`), written for the nccl backend only.
    pub nccl_version: Option<String>,
    /// `pg_count`: groups ever created, which can exceed the groups listed (71 against 15
    /// in the vLLM B200 trace: destroyed groups are counted, not listed).
    pub pg_count: Option<i64>,
    /// `pg_config`, as the first file read that states a rank lists them.
    pub process_groups: Vec<ProcessGroup>,
    /// The rank of every file read that states one, in reading order (one entry for a
    /// single trace; a directory of ranks lists each, docs/kineto-format.md §9).
    pub ranks: Vec<i64>,
}

/// What the report says about itself.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct TraceMeta {
    pub format: SourceFormat,
    /// Path(s) the trace was read from, as given.
    pub path: String,
    /// nsys `EXPORT_PRODUCT_VERSION`, or the Kineto/PyTorch version where recorded.
    pub tool_version: Option<String>,
    /// nsys `EXPORT_SCHEMA_VERSION`, or the Kineto `schemaVersion`.
    pub schema_version: Option<String>,
    /// nsys `CUDA_GRAPH_TRACE_OPTIONS:MODE` (`Graph` or `Node`) where recorded.
    pub cuda_graph_trace_mode: Option<String>,
    /// Process id → process name, where the report names them.
    pub process_names: Vec<(i64, String)>,
    /// Unix-epoch ns of the trace's time zero, where the format states it (Kineto:
    /// `baseTimeNanoseconds`, or 0 for the old absolute layout). nsys: None, since its
    /// origin is not documented (docs/nsys-format.md §0).
    pub origin_epoch_ns: Option<i64>,
    /// The distributed run (rank, world size, process groups) where the report states it.
    pub distributed: Option<Distributed>,
    /// Things the loader noticed and the user should know (schema newer than tested…).
    pub warnings: Vec<String>,
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
        }
    }
}

/// A measured GPU counter stepgate reads (nsys GPU metrics, docs/nsys-format.md §10).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum GpuMetric {
    /// `DRAM Read Bandwidth` (`VRAM Read Bandwidth` on GPUs with GDDR): the share of
    /// elapsed cycles the DRAM interface was reading, % of peak.
    DramRead,
    /// `DRAM Write Bandwidth` / `VRAM Write Bandwidth`, % of peak.
    DramWrite,
    /// `SMs Active`: cycles with at least one warp resident on an SM, % (averaged over SMs).
    SmActive,
    /// `SM Issue`: cycles the SM sub-partitions issued an instruction, %.
    SmIssue,
}

/// One measured counter of one GPU, sample by sample (measured values, as exported).
#[derive(Debug, Clone, PartialEq)]
pub struct GpuMetricSeries {
    /// Device id as the ops carry it.
    pub device: i64,
    /// True when `device` is inferred (the sample's target matched no GPU of the
    /// report, so its low byte was taken as the device id); false when read.
    pub device_inferred: bool,
    pub metric: GpuMetric,
    /// The metric's name as exported (`DRAM Read Bandwidth [Throughput %]`).
    pub name: String,
    /// The unit: the name's bracketed suffix (`Throughput %`), else `%` (the unit NVIDIA
    /// documents for these metrics).
    pub unit: String,
    /// `(timestamp_ns, value)`, sorted by time; each value covers the sampling period
    /// that ends at its timestamp.
    pub samples: Vec<(i64, f64)>,
}

impl GpuMetricSeries {
    /// The sampling period (derived): the median spacing of the samples.
    pub fn interval_ns(&self) -> Option<i64> {
        let mut d: Vec<i64> = self.samples.windows(2).map(|w| w[1].0 - w[0].0).collect();
        if d.is_empty() {
            return None;
        }
        let mid = d.len() / 2;
        Some(*d.select_nth_unstable(mid).1)
    }

    /// Mean value (derived) of the samples taken in `[start_ns, end_ns)`, `None` when
    /// there are none.
    pub fn mean_in(&self, start_ns: i64, end_ns: i64) -> Option<f64> {
        let lo = self.samples.partition_point(|s| s.0 < start_ns);
        let hi = self.samples.partition_point(|s| s.0 < end_ns);
        let window = self.samples.get(lo..hi).filter(|w| !w.is_empty())?;
        Some(window.iter().map(|s| s.1).sum::<f64>() / window.len() as f64)
    }
}

/// Interns strings to dense `u32` ids. The index uses polars' foldhash map: SipHash
/// was a tenth of `analyze`'s CPU time when every NVTX row's text was interned.
#[derive(Debug, Default, Clone)]
pub struct Interner {
    strings: Vec<String>,
    index: PlHashMap<String, u32>,
}

impl Interner {
    pub fn intern(&mut self, s: &str) -> u32 {
        if let Some(&id) = self.index.get(s) {
            return id;
        }
        let id = self.strings.len() as u32;
        self.strings.push(s.to_owned());
        self.index.insert(s.to_owned(), id);
        id
    }

    /// The string of an id this interner returned.
    pub fn get(&self, id: u32) -> &str {
        self.strings
            .get(id as usize)
            .map(String::as_str)
            .unwrap_or("")
    }

    pub fn into_strings(self) -> Vec<String> {
        self.strings
    }
}

/// The trace: every source produces one of these; every analysis reads only this.
#[derive(Debug, Clone)]
pub struct Trace {
    /// GPU operations: device, stream, pid, start_ns, end_ns, name_id, short_id, kind (u32
    /// [`OpKind`]), correlation_id, graph_node_id, graph_id, bytes (memcpy/memset, else 0).
    pub ops: DataFrame,
    /// Host API calls: pid, tid, start_ns, end_ns, name_id, correlation_id, api (u32
    /// [`CallApi`]), is_launch (u32 0/1: a kernel or graph launch, not a copy or sync).
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

/// Row-wise builder for [`Trace::ops`]; sources push, then [`OpsBuilder::finish`].
#[derive(Debug, Default)]
pub struct OpsBuilder {
    pub device: Vec<i64>,
    pub stream: Vec<i64>,
    pub pid: Vec<i64>,
    pub start_ns: Vec<i64>,
    pub end_ns: Vec<i64>,
    pub name_id: Vec<u32>,
    pub short_id: Vec<u32>,
    pub kind: Vec<u32>,
    pub correlation_id: Vec<i64>,
    pub graph_node_id: Vec<i64>,
    pub graph_id: Vec<i64>,
    pub bytes: Vec<i64>,
    /// Launch geometry, one entry per row, only when asked for ([`OpsBuilder::with_geometry`]):
    /// a builder without it allocates nothing for it.
    pub geometry: Option<GeometryCols>,
}

/// A kernel's launch geometry: grid and block dimensions (0 where unknown or not a kernel).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Launch {
    pub grid: [u32; 3],
    pub block: [u32; 3],
}

/// The six geometry columns of [`OpsBuilder`].
#[derive(Debug, Default)]
pub struct GeometryCols {
    pub grid_x: Vec<u32>,
    pub grid_y: Vec<u32>,
    pub grid_z: Vec<u32>,
    pub block_x: Vec<u32>,
    pub block_y: Vec<u32>,
    pub block_z: Vec<u32>,
}

impl GeometryCols {
    fn push(&mut self, l: Launch) {
        self.grid_x.push(l.grid[0]);
        self.grid_y.push(l.grid[1]);
        self.grid_z.push(l.grid[2]);
        self.block_x.push(l.block[0]);
        self.block_y.push(l.block[1]);
        self.block_z.push(l.block[2]);
    }
}

/// One GPU op, for [`OpsBuilder::push`].
#[derive(Debug, Clone, Copy)]
pub struct OpRow {
    pub device: i64,
    pub stream: i64,
    pub pid: i64,
    pub start_ns: i64,
    pub end_ns: i64,
    pub name_id: u32,
    pub short_id: u32,
    pub kind: OpKind,
    pub correlation_id: i64,
    pub graph_node_id: i64,
    pub graph_id: i64,
    pub bytes: i64,
}

impl OpsBuilder {
    pub fn with_capacity(n: usize) -> Self {
        OpsBuilder {
            device: Vec::with_capacity(n),
            stream: Vec::with_capacity(n),
            pid: Vec::with_capacity(n),
            start_ns: Vec::with_capacity(n),
            end_ns: Vec::with_capacity(n),
            name_id: Vec::with_capacity(n),
            short_id: Vec::with_capacity(n),
            kind: Vec::with_capacity(n),
            correlation_id: Vec::with_capacity(n),
            graph_node_id: Vec::with_capacity(n),
            graph_id: Vec::with_capacity(n),
            bytes: Vec::with_capacity(n),
            geometry: None,
        }
    }

    /// Record launch geometry too (rows pushed without one get zeros).
    pub fn with_geometry(mut self) -> Self {
        self.geometry = Some(GeometryCols::default());
        self
    }

    /// Push a row with its launch geometry (kept only by a builder [`with_geometry`](Self::with_geometry)).
    pub fn push_launch(&mut self, r: OpRow, launch: Launch) {
        self.push_row(r);
        if let Some(g) = &mut self.geometry {
            g.push(launch);
        }
    }

    /// Push a row (zero geometry when the builder records geometry).
    pub fn push(&mut self, r: OpRow) {
        self.push_launch(r, Launch::default());
    }

    fn push_row(&mut self, r: OpRow) {
        self.device.push(r.device);
        self.stream.push(r.stream);
        self.pid.push(r.pid);
        self.start_ns.push(r.start_ns);
        self.end_ns.push(r.end_ns);
        self.name_id.push(r.name_id);
        self.short_id.push(r.short_id);
        self.kind.push(r.kind as u32);
        self.correlation_id.push(r.correlation_id);
        self.graph_node_id.push(r.graph_node_id);
        self.graph_id.push(r.graph_id);
        self.bytes.push(r.bytes);
    }

    pub fn len(&self) -> usize {
        self.start_ns.len()
    }

    pub fn is_empty(&self) -> bool {
        self.start_ns.is_empty()
    }

    pub fn finish(self) -> Result<DataFrame> {
        let mut columns = vec![
            owned::<Int64Type>(col::DEVICE, self.device),
            owned::<Int64Type>(col::STREAM, self.stream),
            owned::<Int64Type>(col::PID, self.pid),
            owned::<Int64Type>(col::START, self.start_ns),
            owned::<Int64Type>(col::END, self.end_ns),
            owned::<UInt32Type>(col::NAME, self.name_id),
            owned::<UInt32Type>(col::SHORT, self.short_id),
            owned::<UInt32Type>(col::KIND, self.kind),
            owned::<Int64Type>(col::CORR, self.correlation_id),
            owned::<Int64Type>(col::GRAPH_NODE, self.graph_node_id),
            owned::<Int64Type>(col::GRAPH, self.graph_id),
            owned::<Int64Type>(col::BYTES, self.bytes),
        ];
        if let Some(g) = self.geometry {
            columns.extend([
                owned::<UInt32Type>(col::GRID_X, g.grid_x),
                owned::<UInt32Type>(col::GRID_Y, g.grid_y),
                owned::<UInt32Type>(col::GRID_Z, g.grid_z),
                owned::<UInt32Type>(col::BLOCK_X, g.block_x),
                owned::<UInt32Type>(col::BLOCK_Y, g.block_y),
                owned::<UInt32Type>(col::BLOCK_Z, g.block_z),
            ]);
        }
        frame(columns)
    }
}

/// Row-wise builder for [`Trace::calls`].
#[derive(Debug, Default)]
pub struct CallsBuilder {
    pub pid: Vec<i64>,
    pub tid: Vec<i64>,
    pub start_ns: Vec<i64>,
    pub end_ns: Vec<i64>,
    pub name_id: Vec<u32>,
    pub correlation_id: Vec<i64>,
    pub api: Vec<u32>,
    pub is_launch: Vec<u32>,
}

/// One host API call, for [`CallsBuilder::push`].
#[derive(Debug, Clone, Copy)]
pub struct CallRow {
    pub pid: i64,
    pub tid: i64,
    pub start_ns: i64,
    pub end_ns: i64,
    pub name_id: u32,
    pub correlation_id: i64,
    pub api: CallApi,
    pub is_launch: bool,
}

impl CallsBuilder {
    pub fn push(&mut self, r: CallRow) {
        self.pid.push(r.pid);
        self.tid.push(r.tid);
        self.start_ns.push(r.start_ns);
        self.end_ns.push(r.end_ns);
        self.name_id.push(r.name_id);
        self.correlation_id.push(r.correlation_id);
        self.api.push(r.api as u32);
        self.is_launch.push(r.is_launch as u32);
    }

    pub fn finish(self) -> Result<DataFrame> {
        frame(vec![
            owned::<Int64Type>(col::PID, self.pid),
            owned::<Int64Type>(col::TID, self.tid),
            owned::<Int64Type>(col::START, self.start_ns),
            owned::<Int64Type>(col::END, self.end_ns),
            owned::<UInt32Type>(col::NAME, self.name_id),
            owned::<Int64Type>(col::CORR, self.correlation_id),
            owned::<UInt32Type>(col::API, self.api),
            owned::<UInt32Type>(col::IS_LAUNCH, self.is_launch),
        ])
    }
}

/// Row-wise builder for [`Trace::ranges`].
#[derive(Debug, Default)]
pub struct RangesBuilder {
    pub pid: Vec<i64>,
    pub tid: Vec<i64>,
    pub start_ns: Vec<i64>,
    pub end_ns: Vec<i64>,
    pub name_id: Vec<u32>,
    pub domain_id: Vec<i64>,
    pub kind: Vec<u32>,
}

/// One annotated range, for [`RangesBuilder::push`].
#[derive(Debug, Clone, Copy)]
pub struct RangeRow {
    pub pid: i64,
    pub tid: i64,
    pub start_ns: i64,
    pub end_ns: i64,
    pub name_id: u32,
    pub domain_id: i64,
    pub kind: RangeKind,
}

impl RangesBuilder {
    pub fn push(&mut self, r: RangeRow) {
        self.pid.push(r.pid);
        self.tid.push(r.tid);
        self.start_ns.push(r.start_ns);
        self.end_ns.push(r.end_ns);
        self.name_id.push(r.name_id);
        self.domain_id.push(r.domain_id);
        self.kind.push(r.kind as u32);
    }

    pub fn finish(self) -> Result<DataFrame> {
        frame(vec![
            owned::<Int64Type>(col::PID, self.pid),
            owned::<Int64Type>(col::TID, self.tid),
            owned::<Int64Type>(col::START, self.start_ns),
            owned::<Int64Type>(col::END, self.end_ns),
            owned::<UInt32Type>(col::NAME, self.name_id),
            owned::<Int64Type>(col::DOMAIN, self.domain_id),
            owned::<UInt32Type>(col::KIND, self.kind),
        ])
    }
}

/// Row-wise builder for [`Trace::shapes`].
#[derive(Debug, Default)]
pub struct ShapesBuilder {
    pub pid: Vec<i64>,
    pub tid: Vec<i64>,
    pub start_ns: Vec<i64>,
    pub end_ns: Vec<i64>,
    pub name_id: Vec<u32>,
    pub dims_id: Vec<u32>,
    pub first_dim: Vec<i64>,
}

/// One operator's input shapes, for [`ShapesBuilder::push`].
#[derive(Debug, Clone, Copy)]
pub struct ShapeRow {
    pub pid: i64,
    pub tid: i64,
    pub start_ns: i64,
    pub end_ns: i64,
    pub name_id: u32,
    pub dims_id: u32,
    pub first_dim: i64,
}

impl ShapesBuilder {
    pub fn push(&mut self, r: ShapeRow) {
        self.pid.push(r.pid);
        self.tid.push(r.tid);
        self.start_ns.push(r.start_ns);
        self.end_ns.push(r.end_ns);
        self.name_id.push(r.name_id);
        self.dims_id.push(r.dims_id);
        self.first_dim.push(r.first_dim);
    }

    pub fn finish(self) -> Result<DataFrame> {
        frame(vec![
            owned::<Int64Type>(col::PID, self.pid),
            owned::<Int64Type>(col::TID, self.tid),
            owned::<Int64Type>(col::START, self.start_ns),
            owned::<Int64Type>(col::END, self.end_ns),
            owned::<UInt32Type>(col::NAME, self.name_id),
            owned::<UInt32Type>(col::DIMS, self.dims_id),
            owned::<Int64Type>(col::FIRST_DIM, self.first_dim),
        ])
    }
}

/// Whole-row operations on a builder's parallel columns, so sources never list the
/// columns themselves. The first column named tells whether the builder is empty; an
/// `optional` member is a column group that only some builders carry (launch geometry).
macro_rules! row_ops {
    ($builder:ty: $first:ident $(, $col:ident)* $(; optional $opt:ident)?) => {
        impl $builder {
            /// Keep only the first `n` rows (drop what a rejected file added).
            pub fn truncate(&mut self, n: usize) {
                self.$first.truncate(n);
                $(self.$col.truncate(n);)*
                $(if let Some(o) = &mut self.$opt {
                    o.truncate(n);
                })?
            }

            /// Move `other`'s rows after this builder's (into an empty builder: no copy).
            /// Each of `other`'s columns is freed as soon as it is moved, so a
            /// concatenation of big parts holds one extra column at a time, not a part.
            pub fn append(&mut self, other: &mut Self) {
                if self.$first.is_empty() {
                    std::mem::swap(self, other);
                    return;
                }
                $(
                    // Parts of one load are built alike; a part without the group gets
                    // zeros (unknown) for it.
                    match (&mut self.$opt, &mut other.$opt) {
                        (Some(a), Some(b)) => a.append(b),
                        (Some(a), None) => a.pad(other.$first.len()),
                        (None, _) => {}
                    }
                )?
                self.$first.append(&mut other.$first);
                drop(std::mem::take(&mut other.$first));
                $(
                    self.$col.append(&mut other.$col);
                    drop(std::mem::take(&mut other.$col));
                )*
            }
        }
    };
}

row_ops!(OpsBuilder: start_ns, device, stream, pid, end_ns, name_id, short_id, kind,
    correlation_id, graph_node_id, graph_id, bytes; optional geometry);
row_ops!(CallsBuilder: pid, tid, start_ns, end_ns, name_id, correlation_id, api, is_launch);
row_ops!(RangesBuilder: pid, tid, start_ns, end_ns, name_id, domain_id, kind);
row_ops!(ShapesBuilder: pid, tid, start_ns, end_ns, name_id, dims_id, first_dim);
row_ops!(GeometryCols: grid_x, grid_y, grid_z, block_x, block_y, block_z);

impl GeometryCols {
    /// Add `n` rows of unknown geometry.
    fn pad(&mut self, n: usize) {
        let len = self.grid_x.len() + n;
        for c in [
            &mut self.grid_x,
            &mut self.grid_y,
            &mut self.grid_z,
            &mut self.block_x,
            &mut self.block_y,
            &mut self.block_z,
        ] {
            c.resize(len, 0);
        }
    }
}

/// A column that takes over a builder's vector (`Column::new` from a `Vec` copies it: a
/// second 4M-row buffer per column, page faults and all, at the end of every load).
fn owned<T: PolarsNumericType>(name: &str, mut v: Vec<T::Native>) -> Column {
    // Return the growth slack (an in-place shrink for large blocks).
    v.shrink_to_fit();
    ChunkedArray::<T>::from_vec(name.into(), v).into_column()
}

fn frame(columns: Vec<Column>) -> Result<DataFrame> {
    Ok(DataFrame::new_infer_height(columns)?)
}

/// Borrow a whole column as one contiguous slice (frames built here are single-chunk).
pub fn i64s<'a>(df: &'a DataFrame, name: &str) -> Result<&'a [i64]> {
    df.column(name)?
        .i64()?
        .cont_slice()
        .map_err(|e| Error::input(format!("internal frame error on {name}: {e}")))
}

/// As [`i64s`] for u32 columns (name ids).
pub fn u32s<'a>(df: &'a DataFrame, name: &str) -> Result<&'a [u32]> {
    df.column(name)?
        .u32()?
        .cont_slice()
        .map_err(|e| Error::input(format!("internal frame error on {name}: {e}")))
}

/// Borrowed, column-sliced view of the ops frame: the hot loops read these.
pub struct OpsView<'a> {
    pub device: &'a [i64],
    pub stream: &'a [i64],
    pub pid: &'a [i64],
    pub start_ns: &'a [i64],
    pub end_ns: &'a [i64],
    pub name_id: &'a [u32],
    pub short_id: &'a [u32],
    pub kind: &'a [u32],
    pub correlation_id: &'a [i64],
    pub graph_node_id: &'a [i64],
    pub graph_id: &'a [i64],
}

/// Borrowed view of the ops' launch geometry ([`Trace::geometry_view`]), row for row
/// with [`OpsView`]; 0 where unknown or not a kernel.
pub struct GeometryView<'a> {
    pub grid_x: &'a [u32],
    pub grid_y: &'a [u32],
    pub grid_z: &'a [u32],
    pub block_x: &'a [u32],
    pub block_y: &'a [u32],
    pub block_z: &'a [u32],
}

impl GeometryView<'_> {
    /// Row `i`'s geometry.
    pub fn launch(&self, i: usize) -> Launch {
        Launch {
            grid: [self.grid_x[i], self.grid_y[i], self.grid_z[i]],
            block: [self.block_x[i], self.block_y[i], self.block_z[i]],
        }
    }
}

/// Borrowed view of the shapes frame.
pub struct ShapesView<'a> {
    pub pid: &'a [i64],
    pub tid: &'a [i64],
    pub start_ns: &'a [i64],
    pub end_ns: &'a [i64],
    pub name_id: &'a [u32],
    pub dims_id: &'a [u32],
    pub first_dim: &'a [i64],
}

/// Borrowed view of the calls frame.
pub struct CallsView<'a> {
    pub pid: &'a [i64],
    pub tid: &'a [i64],
    pub start_ns: &'a [i64],
    pub end_ns: &'a [i64],
    pub name_id: &'a [u32],
    pub correlation_id: &'a [i64],
    pub api: &'a [u32],
    pub is_launch: &'a [u32],
}

/// Borrowed view of the ranges frame.
pub struct RangesView<'a> {
    pub pid: &'a [i64],
    pub tid: &'a [i64],
    pub start_ns: &'a [i64],
    pub end_ns: &'a [i64],
    pub name_id: &'a [u32],
    pub domain_id: &'a [i64],
    pub kind: &'a [u32],
}

impl Trace {
    /// An empty trace of the given format (sources start from this).
    pub fn empty(meta: TraceMeta) -> Result<Trace> {
        Ok(Trace {
            ops: OpsBuilder::default().finish()?,
            calls: CallsBuilder::default().finish()?,
            ranges: RangesBuilder::default().finish()?,
            shapes: ShapesBuilder::default().finish()?,
            gpu_metrics: Vec::new(),
            devices: Vec::new(),
            strings: Vec::new(),
            meta,
        })
    }

    /// The ops' launch geometry, parallel to [`Trace::ops_view`]; `None` when the trace
    /// was loaded without `LoadOptions::geometry`.
    pub fn geometry_view(&self) -> Result<Option<GeometryView<'_>>> {
        let d = &self.ops;
        if d.column(col::GRID_X).is_err() {
            return Ok(None);
        }
        Ok(Some(GeometryView {
            grid_x: u32s(d, col::GRID_X)?,
            grid_y: u32s(d, col::GRID_Y)?,
            grid_z: u32s(d, col::GRID_Z)?,
            block_x: u32s(d, col::BLOCK_X)?,
            block_y: u32s(d, col::BLOCK_Y)?,
            block_z: u32s(d, col::BLOCK_Z)?,
        }))
    }

    pub fn shapes_view(&self) -> Result<ShapesView<'_>> {
        let d = &self.shapes;
        Ok(ShapesView {
            pid: i64s(d, col::PID)?,
            tid: i64s(d, col::TID)?,
            start_ns: i64s(d, col::START)?,
            end_ns: i64s(d, col::END)?,
            name_id: u32s(d, col::NAME)?,
            dims_id: u32s(d, col::DIMS)?,
            first_dim: i64s(d, col::FIRST_DIM)?,
        })
    }

    pub fn ops_view(&self) -> Result<OpsView<'_>> {
        let d = &self.ops;
        Ok(OpsView {
            device: i64s(d, col::DEVICE)?,
            stream: i64s(d, col::STREAM)?,
            pid: i64s(d, col::PID)?,
            start_ns: i64s(d, col::START)?,
            end_ns: i64s(d, col::END)?,
            name_id: u32s(d, col::NAME)?,
            short_id: u32s(d, col::SHORT)?,
            kind: u32s(d, col::KIND)?,
            correlation_id: i64s(d, col::CORR)?,
            graph_node_id: i64s(d, col::GRAPH_NODE)?,
            graph_id: i64s(d, col::GRAPH)?,
        })
    }

    pub fn calls_view(&self) -> Result<CallsView<'_>> {
        let d = &self.calls;
        Ok(CallsView {
            pid: i64s(d, col::PID)?,
            tid: i64s(d, col::TID)?,
            start_ns: i64s(d, col::START)?,
            end_ns: i64s(d, col::END)?,
            name_id: u32s(d, col::NAME)?,
            correlation_id: i64s(d, col::CORR)?,
            api: u32s(d, col::API)?,
            is_launch: u32s(d, col::IS_LAUNCH)?,
        })
    }

    pub fn ranges_view(&self) -> Result<RangesView<'_>> {
        let d = &self.ranges;
        Ok(RangesView {
            pid: i64s(d, col::PID)?,
            tid: i64s(d, col::TID)?,
            start_ns: i64s(d, col::START)?,
            end_ns: i64s(d, col::END)?,
            name_id: u32s(d, col::NAME)?,
            domain_id: i64s(d, col::DOMAIN)?,
            kind: u32s(d, col::KIND)?,
        })
    }

    /// The interned string for an id.
    pub fn name(&self, id: u32) -> &str {
        self.strings
            .get(id as usize)
            .map(String::as_str)
            .unwrap_or("")
    }

    /// Device ids that have at least one op, ascending.
    pub fn op_devices(&self) -> Result<Vec<i64>> {
        let mut ids: Vec<i64> = i64s(&self.ops, col::DEVICE)?.to_vec();
        ids.sort_unstable();
        ids.dedup();
        Ok(ids)
    }
}

/// Launch-call classification shared by every source: kernel and graph launches count,
/// copies and syncs do not (issue #4's list, with the hip twins Kineto traces on ROCm carry).
pub fn is_launch_call(name: &str) -> bool {
    // Runtime names carry a version suffix (`cudaLaunchKernel_v7000`,
    // `cudaLaunchKernelExC_v11060`, `cudaGraphLaunch_v10000`): prefixes cover them and
    // every Ex/C variant; driver and HIP names are exact.
    name.starts_with("cudaLaunchKernel")
        || name.starts_with("cudaLaunchCooperativeKernel")
        || name.starts_with("cudaGraphLaunch")
        || matches!(
            name,
            "cuLaunchKernel"
                | "cuLaunchKernelEx"
                | "cuLaunchCooperativeKernel"
                | "cuLaunchCooperativeKernelMultiDevice"
                | "cuGraphLaunch"
                | "hipLaunchKernel"
                | "hipExtLaunchKernel"
                | "hipModuleLaunchKernel"
                | "hipExtModuleLaunchKernel"
                | "hipLaunchCooperativeKernel"
                | "hipGraphLaunch"
        )
}

/// Whether a launch call is a CUDA/HIP graph launch.
pub fn is_graph_launch_call(name: &str) -> bool {
    name.starts_with("cudaGraphLaunch") || name == "cuGraphLaunch" || name == "hipGraphLaunch"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn launch_names_with_version_suffix() {
        assert!(is_launch_call("cudaLaunchKernel_v7000"));
        assert!(is_launch_call("cudaLaunchKernelExC_v11060"));
        assert!(is_launch_call("cuLaunchKernelEx"));
        assert!(is_launch_call("cudaGraphLaunch_v10000"));
        assert!(is_launch_call("hipExtModuleLaunchKernel"));
        assert!(!is_launch_call("cudaMemcpyAsync_v3020"));
        assert!(!is_launch_call("cudaStreamSynchronize_v3020"));
        assert!(!is_launch_call("cudaEventRecord_v3020"));
        assert!(!is_launch_call("cudaLaunchHostFunc_v10000"));
        assert!(is_launch_call("cudaLaunchCooperativeKernel_v9000"));
        assert!(is_launch_call("hipGraphLaunch"));
    }

    #[test]
    fn builders_make_single_chunk_frames() {
        let mut b = OpsBuilder::default();
        b.push(OpRow {
            device: 0,
            stream: 7,
            pid: 1,
            start_ns: 10,
            end_ns: 20,
            name_id: 0,
            short_id: 0,
            kind: OpKind::Kernel,
            correlation_id: 5,
            graph_node_id: -1,
            graph_id: -1,
            bytes: 0,
        });
        let mut t = Trace::empty(TraceMeta::new(SourceFormat::Nsys, "x")).unwrap();
        t.ops = b.finish().unwrap();
        let v = t.ops_view().unwrap();
        assert_eq!(v.start_ns, &[10]);
        assert_eq!(v.end_ns, &[20]);
        assert_eq!(t.op_devices().unwrap(), vec![0]);
    }
}
