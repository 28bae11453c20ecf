//! What a trace says about itself: its file format, its devices and the distributed run it
//! belongs to, as the loaders read them (never inferred).

use serde::{Deserialize, Serialize};

/// Which file format a trace came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum SourceFormat {
    Nsys,
    Kineto,
    /// AMD's rocprofv3 rocpd database (schema 3) or the older rocmProfileData RPD (schema 2).
    Rocpd,
}

/// What a format can and cannot say, asked by the pipeline instead of comparing formats
/// (a new reader states its own; see `SourceFormat::capabilities`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capabilities {
    /// Every GPU op names the host call that launched it (nsys correlation ids, rocpd
    /// stack ids). Without it (Kineto: ops whose launch was not recorded) steps also claim
    /// unlinked ops by time window.
    pub launch_links: bool,
    /// The marker API whose ranges the user pushes (NVTX, ROCTx): host ranges are only
    /// what the program annotated. `None`: ranges are the profiler's own annotations of
    /// operators and steps (Kineto `user_annotation`, `ProfilerStep#N`).
    pub marker_api: Option<&'static str>,
    /// The profiler that wrote the format, as a user would name it in advice.
    pub profiler: &'static str,
    /// The host's Python frames can be read (Kineto `python_function` spans, recorded
    /// with `with_stack=True`), so a long stall can name the frame it sits in.
    pub python_frames: bool,
    /// A load keeps only the ranges it was asked for (`LoadOptions::range_filter`), so
    /// ranges a first load left out can be read by a second one (nsys and rocpd select
    /// ranges as they read; a Kineto trace keeps every annotation).
    pub ranges_on_request: bool,
}

impl SourceFormat {
    /// What this format's readers can say (docs/ingest.md, "Readers").
    pub fn capabilities(self) -> Capabilities {
        match self {
            SourceFormat::Nsys => Capabilities {
                launch_links: true,
                marker_api: Some("NVTX"),
                profiler: "nsys",
                python_frames: false,
                ranges_on_request: true,
            },
            SourceFormat::Kineto => Capabilities {
                launch_links: false,
                marker_api: None,
                profiler: "the PyTorch profiler",
                python_frames: true,
                ranges_on_request: false,
            },
            SourceFormat::Rocpd => Capabilities {
                launch_links: true,
                marker_api: Some("ROCTx"),
                profiler: "rocprofv3",
                python_frames: false,
                ranges_on_request: true,
            },
        }
    }
}

/// A GPU as the report names it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DeviceInfo {
    /// Device id as ops carry it (nsys `deviceId`, Kineto GPU `pid`/device).
    pub id: i64,
    pub name: Option<String>,
    /// Bytes per second, as the report states it (nsys `memoryBandwidth`).
    pub memory_bandwidth_bytes_per_s: Option<f64>,
    pub sm_count: Option<i64>,
    pub total_memory_bytes: Option<i64>,
}

/// One process group of `torch.distributed`, as the profiler recorded it (Kineto
/// `distributedInfo.pg_config[]`, from `distributed_c10d._get_all_pg_configs`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
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
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
    /// The named NVTX domains (nsys: the domain-create rows), by process and id: a range
    /// in one is named `Domain:Name`, as nsys shows it. Empty for formats without domains.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nvtx_domains: Vec<NvtxDomain>,
}

/// A named NVTX domain: ranges of process `pid` with `domain_id == id` are in it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NvtxDomain {
    pub pid: i64,
    pub id: i64,
    pub name: String,
}
