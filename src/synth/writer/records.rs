//! The rows the writer takes (kernels, calls, NVTX ranges, memcpy, memset, graph replays
//! and nodes, GPUs, GPU metrics), the serialized GlobalIds and the nsys enum values they
//! carry.

/// Serialized GlobalId of a process (bit 48 set, pid in bits 24..47).
pub fn global_pid(pid: i64) -> i64 {
    (1 << 48) | ((pid & 0xFF_FFFF) << 24)
}

/// Serialized GlobalId of a thread.
pub fn global_tid(pid: i64, tid: i64) -> i64 {
    global_pid(pid) | (tid & 0xFF_FFFF)
}

/// CUPTI runtime/driver eventClass values (ENUM_NSYS_EVENT_CLASS).
pub mod event_class {
    pub(crate) const RUNTIME: i64 = 0;
    pub(crate) const DRIVER: i64 = 1;
    /// TRACE_PROCESS_EVENT_CUDABACKTRACE: a duplicate of a real call (2022.2 saxpy file).
    pub(crate) const BACKTRACE: i64 = 67;
}

/// NVTX eventType values (ENUM_NSYS_EVENT_TYPE).
pub mod event_type {
    pub(crate) const PUSH_POP: i64 = 59;
    pub(crate) const START_END: i64 = 60;
    pub const NVTXT_PUSH_POP: i64 = 70;
    pub const NVTXT_START_END: i64 = 71;
    pub const MARK: i64 = 34;
    pub(crate) const DOMAIN_CREATE: i64 = 75;
}

/// One kernel row. Names are StringIds ids from [`NsysWriter::string`](super::NsysWriter::string).
#[derive(Debug, Clone, Copy, Default)]
pub struct KernelRec {
    pub start_ns: i64,
    pub end_ns: i64,
    pub device: i64,
    pub stream: i64,
    pub pid: i64,
    pub correlation_id: Option<i64>,
    pub demangled_name: i64,
    pub short_name: i64,
    pub graph_node_id: Option<i64>,
    /// Written only by layouts that have the column (2026.1+).
    pub graph_id: Option<i64>,
    /// gridX, gridY, gridZ; None writes one wave of 132 blocks.
    pub grid: Option<[u32; 3]>,
}

/// One CUDA runtime/driver call (or a backtrace duplicate, eventClass 67).
#[derive(Debug, Clone, Copy, Default)]
pub struct CallRec {
    pub start_ns: i64,
    pub end_ns: i64,
    pub event_class: i64,
    pub pid: i64,
    pub tid: i64,
    pub correlation_id: Option<i64>,
    pub name: i64,
}

/// How an NVTX row names itself.
#[derive(Debug, Clone, Copy)]
pub enum NvtxName<'a> {
    /// `text` column (non-registered string).
    Text(&'a str),
    /// `textId` → StringIds (registered string).
    TextId(i64),
}

/// One NVTX row.
#[derive(Debug, Clone, Copy)]
pub struct NvtxRec<'a> {
    pub start_ns: i64,
    /// `None` for an open range or a mark.
    pub end_ns: Option<i64>,
    pub event_type: i64,
    pub pid: i64,
    pub tid: i64,
    pub name: NvtxName<'a>,
    pub domain_id: Option<i64>,
}

/// One memcpy row (`copy_kind` per ENUM_CUDA_MEMCPY_OPER: 1 HtoD, 2 DtoH, 8 DtoD…).
#[derive(Debug, Clone, Copy, Default)]
pub struct MemcpyRec {
    pub start_ns: i64,
    pub end_ns: i64,
    pub device: i64,
    pub stream: i64,
    pub pid: i64,
    pub correlation_id: Option<i64>,
    pub copy_kind: i64,
    pub bytes: i64,
    pub graph_node_id: Option<i64>,
}

/// One memset row.
#[derive(Debug, Clone, Copy, Default)]
pub struct MemsetRec {
    pub start_ns: i64,
    pub end_ns: i64,
    pub device: i64,
    pub stream: i64,
    pub pid: i64,
    pub correlation_id: Option<i64>,
    pub bytes: i64,
    pub graph_node_id: Option<i64>,
}

/// One opaque graph replay (graph-mode tracing, CUPTI_ACTIVITY_KIND_GRAPH_TRACE).
#[derive(Debug, Clone, Copy, Default)]
pub struct GraphTraceRec {
    pub start_ns: i64,
    pub end_ns: i64,
    pub device: i64,
    pub stream: i64,
    pub pid: i64,
    pub correlation_id: Option<i64>,
    pub graph_id: i64,
    pub graph_exec_id: Option<i64>,
}

/// One graph-node creation event (CUDA_GRAPH_NODE_EVENTS; CUDA_GRAPH_EVENTS before 2024).
#[derive(Debug, Clone, Copy, Default)]
pub struct GraphNodeRec {
    pub start_ns: i64,
    pub end_ns: i64,
    pub pid: i64,
    pub tid: i64,
    pub name: i64,
    pub graph_node_id: i64,
    pub original_graph_node_id: Option<i64>,
}

/// The `typeId` of a GPU metrics target without its GPU byte (the layout public readers
/// of real exports show: `0x1000100000000 + pwGpuId`, docs/nsys-format.md §10).
pub(crate) const GPU_METRICS_TARGET_BASE: i64 = 0x1_0001_0000_0000;

/// The GPU activity of one interval, for [`GpuMetricsRec`]: each value is % of peak.
#[derive(Debug, Clone, Copy, Default)]
pub struct ThroughputWindow {
    pub start_ns: i64,
    pub end_ns: i64,
    pub dram_read_pct: f64,
    pub dram_write_pct: f64,
    pub sm_active_pct: f64,
    pub sm_issue_pct: f64,
}

/// One GPU's sampled metrics, for [`NsysWriter::gpu_metrics`](super::NsysWriter::gpu_metrics):
/// samples every `interval_ns` over `[start_ns, end_ns)`, valued by the window each falls in.
#[derive(Debug, Clone, Copy)]
pub struct GpuMetricsRec<'a> {
    /// TARGET_INFO_GPU.pwGpuId of the sampled GPU (the writer's `gpu` sets it to the
    /// device id).
    pub pw_gpu_id: i64,
    pub start_ns: i64,
    pub end_ns: i64,
    /// Sampling period (nsys's default frequency, 10 kHz, is 100 µs).
    pub interval_ns: i64,
    pub windows: &'a [ThroughputWindow],
}

/// One GPU of TARGET_INFO_GPU.
#[derive(Debug, Clone, Default)]
pub struct GpuRec {
    pub id: i64,
    pub name: String,
    pub memory_bandwidth_bytes_per_s: i64,
    pub sm_count: i64,
    pub total_memory_bytes: i64,
}
