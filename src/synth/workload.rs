//! Engine-step scenarios written as nsys exports, with the per-step values they must
//! produce computed from the scenario itself (plain arithmetic on the schedule below, no
//! stepgate analysis code), for the `steps` tests and the 10,000-step benchmark.
//!
//! Schedule, per rank (one process, one thread, one device and one stream per rank): the
//! host opens the step's NVTX range(s), issues its launch calls back to back
//! (`launch_ns` each, `launch_gap_ns` apart), closes the range; each GPU op starts at
//! `max(previous op end + kernel_gap_ns, its launch call's end + launch_latency_ns)`, and
//! kernels of one graph replay run back to back `kernel_gap_ns` apart. Ops of a rank never
//! overlap (one stream), so a step's busy time is the sum of its op durations — an opaque
//! graph replay is one op spanning its hidden kernels.

use std::path::Path;

use crate::exit::{Error, Result};

use super::writer::{
    event_class, event_type, CallRec, GpuMetricsRec, GpuRec, GraphNodeRec, GraphTraceRec,
    KernelRec, Layout, MemcpyRec, NsysWriter, NvtxName, NvtxRec, ThroughputWindow,
};
use crate::wire::synth::{DeviceExpect, Expected, StepExpect};

/// How a step's kernels reach the GPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LaunchMode {
    /// One `cudaLaunchKernel` per kernel.
    Eager,
    /// One `cudaGraphLaunch`; node-mode tracing: every kernel row carries the launch's
    /// correlation id, a `graphNodeId` and the `graphId`.
    GraphNode,
    /// One `cudaGraphLaunch`; graph-mode tracing: no kernel rows, one opaque
    /// `CUPTI_ACTIVITY_KIND_GRAPH_TRACE` interval from the first kernel's start to the last's end.
    GraphOpaque,
    /// Piecewise graphs (node mode): consecutive non-eager kernels form one graph launch,
    /// kernels marked `eager` (attention) are launched one by one in between.
    Piecewise,
}

/// How the step's NVTX range is recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NvtxStyle {
    /// eventType 59 with the name in `text`.
    PushPop,
    /// eventType 60 with the name in `text`.
    StartEnd,
    /// eventType 59 with the name registered in StringIds (`textId`).
    Registered,
}

#[derive(Debug, Clone)]
pub struct KernelSpec {
    pub name: String,
    pub duration_ns: i64,
    /// Launched eagerly inside a [`LaunchMode::Piecewise`] step (ignored otherwise).
    pub eager: bool,
    /// The launch grid (x, y, z) the kernel is written with; None: one 132-block wave.
    pub grid: Option<[u32; 3]>,
}

impl KernelSpec {
    pub fn new(name: &str, duration_ns: i64) -> Self {
        KernelSpec {
            name: name.to_owned(),
            duration_ns,
            eager: false,
            grid: None,
        }
    }

    /// This kernel launched with `grid`.
    pub fn with_grid(self, grid: [u32; 3]) -> Self {
        KernelSpec {
            grid: Some(grid),
            ..self
        }
    }

    pub fn eager(name: &str, duration_ns: i64) -> Self {
        KernelSpec {
            eager: true,
            ..KernelSpec::new(name, duration_ns)
        }
    }
}

#[derive(Debug, Clone)]
pub struct StepSpec {
    /// NVTX range names, outermost first (nested ranges share the thread; each inner one
    /// opens 100 ns after and closes 100 ns before its parent). Empty: no range at all.
    pub names: Vec<String>,
    pub nvtx: NvtxStyle,
    pub mode: LaunchMode,
    pub kernels: Vec<KernelSpec>,
    /// Host idle time before the step's range opens.
    pub host_gap_before_ns: i64,
    /// A `cudaMemcpyAsync` HtoD of this many bytes first in the step (not a launch).
    pub memcpy_h2d_bytes: Option<i64>,
    /// A `cudaMemcpyAsync` DtoH of this many bytes last in the step, after its kernels
    /// (as an engine copies the sampled token ids to the host).
    pub memcpy_d2h_bytes: Option<i64>,
    /// Extra `cudaLaunchKernel` calls inside the range whose kernels never appear.
    pub launches_without_kernels: u32,
    /// Kernels with no launching call, run on the GPU right after this step's work
    /// (counted on the device, never in a step).
    pub kernels_without_launch_after: u32,
    /// A host stall after this launch group (its index: one kernel each in eager mode): a
    /// `cudaStreamSynchronize` that waits for the GPU to drain and returns `ns` later (the
    /// host's own work after the sync), so the GPU idles for `ns` plus one launch.
    pub host_stall: Option<HostStall>,
}

/// Where a step's host stalls and for how long (see [`StepSpec::host_stall`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostStall {
    pub after_group: usize,
    pub ns: i64,
}

impl StepSpec {
    pub fn new(name: Option<&str>, mode: LaunchMode, kernels: Vec<KernelSpec>) -> Self {
        StepSpec {
            names: name.map(|n| vec![n.to_owned()]).unwrap_or_default(),
            nvtx: NvtxStyle::PushPop,
            mode,
            kernels,
            host_gap_before_ns: 20_000,
            memcpy_h2d_bytes: None,
            memcpy_d2h_bytes: None,
            launches_without_kernels: 0,
            kernels_without_launch_after: 0,
            host_stall: None,
        }
    }
}

#[derive(Debug, Clone)]
pub struct Scenario {
    pub layout: Layout,
    /// Tensor-parallel ranks: rank r is pid 1000 + r, tid = pid, device r.
    pub ranks: u32,
    pub steps: Vec<StepSpec>,
    pub launch_ns: i64,
    pub launch_gap_ns: i64,
    pub launch_latency_ns: i64,
    pub kernel_gap_ns: i64,
    /// Added to every kernel's duration on rank r (a slower rank); missing ranks get 0.
    pub rank_extra_ns: Vec<i64>,
    /// Also write an eventClass-67 backtrace duplicate of every launch (2022.2 files do).
    pub backtrace_duplicates: bool,
    pub start_ns: i64,
    /// `TARGET_INFO_GPU.name` of every rank's device.
    pub gpu_name: String,
    /// GPU metrics to write for every rank's device (none: the report has no counters).
    pub counters: Option<Counters>,
}

/// DRAM counters planted per kernel: while a kernel runs, the sampled DRAM read
/// throughput is the percentage of the first rule whose text its name contains (write
/// 0%); between kernels 0%.
#[derive(Debug, Clone, PartialEq)]
pub struct Counters {
    pub interval_ns: i64,
    /// (name substring, DRAM read % of peak).
    pub dram_read_pct: Vec<(String, f64)>,
}

impl Scenario {
    pub fn new(layout: Layout, ranks: u32, steps: Vec<StepSpec>) -> Self {
        Scenario {
            layout,
            ranks,
            steps,
            launch_ns: 4_000,
            launch_gap_ns: 1_000,
            launch_latency_ns: 3_000,
            kernel_gap_ns: 500,
            rank_extra_ns: Vec::new(),
            backtrace_duplicates: false,
            start_ns: 1_000_000_000,
            gpu_name: "NVIDIA H100 80GB HBM3".to_owned(),
            counters: None,
        }
    }
}

const STREAM: i64 = 7;
const LAUNCH: &str = "cudaLaunchKernel_v7000";
const GRAPH_LAUNCH: &str = "cudaGraphLaunch_v10000";
const MEMCPY_ASYNC: &str = "cudaMemcpyAsync_v3020";
const STREAM_SYNC: &str = "cudaStreamSynchronize_v3020";

/// Write `scn` to `path` and return what it must measure.
/// One `cudaMemcpyAsync`: its call on the host and its copy on the GPU.
struct CopyRow {
    call: (i64, i64),
    gpu: (i64, i64),
    corr: i64,
    /// ENUM_CUDA_MEMCPY_OPER: 1 HtoD, 2 DtoH.
    copy_kind: i64,
    bytes: i64,
}

impl CopyRow {
    /// Write the call and the copy of the process `(pid, tid, device)`.
    fn write(
        &self,
        w: &mut NsysWriter,
        (pid, tid, device): (i64, i64, i64),
        name: i64,
    ) -> Result<()> {
        w.call(&CallRec {
            start_ns: self.call.0,
            end_ns: self.call.1,
            event_class: event_class::RUNTIME,
            pid,
            tid,
            correlation_id: Some(self.corr),
            name,
        })?;
        w.memcpy(&MemcpyRec {
            start_ns: self.gpu.0,
            end_ns: self.gpu.1,
            device,
            stream: STREAM,
            pid,
            correlation_id: Some(self.corr),
            copy_kind: self.copy_kind,
            bytes: self.bytes,
            graph_node_id: None,
        })
    }
}

pub fn build(scn: &Scenario, path: &Path) -> Result<Expected> {
    if scn.kernel_gap_ns < 0 || scn.launch_ns <= 0 || scn.ranks == 0 {
        return Err(Error::input(
            "scenario needs kernel_gap_ns >= 0, launch_ns > 0 and at least one rank",
        ));
    }
    let mut w = NsysWriter::create(path, scn.layout)?;
    let has = |m: LaunchMode| scn.steps.iter().any(|s| s.mode == m);
    if has(LaunchMode::GraphOpaque) {
        w.graph_trace_mode("Graph")?;
    } else if has(LaunchMode::GraphNode) || has(LaunchMode::Piecewise) {
        w.graph_trace_mode("Node")?;
    }
    let launch_id = w.string(LAUNCH)?;
    let graph_launch_id = w.string(GRAPH_LAUNCH)?;
    let memcpy_id = w.string(MEMCPY_ASYNC)?;
    let sync_id = w.string(STREAM_SYNC)?;
    let bt_launch_id = w.string("cudaLaunchKernel")?;
    let bt_graph_id = w.string("cudaGraphLaunch")?;
    let orphan_id = w.string("orphan_kernel_without_launch")?;

    let mut exp = Expected::default();
    let mut per_rank_steps: Vec<Vec<StepExpect>> = Vec::new();
    for rank in 0..scn.ranks {
        let pid = 1000 + rank as i64;
        let tid = pid;
        let device = rank as i64;
        let extra = scn.rank_extra_ns.get(rank as usize).copied().unwrap_or(0);
        w.process(pid, "python3")?;
        w.thread(pid, tid, &format!("rank{rank}"))?;
        w.gpu(&GpuRec {
            id: device,
            name: scn.gpu_name.clone(),
            memory_bandwidth_bytes_per_s: 3_352_000_000_000,
            sm_count: 132,
            total_memory_bytes: 85_520_809_984,
        })?;
        let mut dev = DeviceExpect {
            device,
            ops: 0,
            kernels: 0,
            busy_ns: 0,
            kernel_sum_ns: 0,
            window_start_ns: i64::MAX,
            window_end_ns: i64::MIN,
            kernels_without_launch: 0,
        };
        let mut host = scn.start_ns;
        let mut gpu_free = scn.start_ns;
        let mut corr = 1i64;
        let mut node_events_written = std::collections::HashSet::new();
        let mut rank_steps = Vec::new();
        // (start, end, planted DRAM read %) of every kernel, for the counters.
        let mut windows: Vec<ThroughputWindow> = Vec::new();

        for (si, step) in scn.steps.iter().enumerate() {
            host += step.host_gap_before_ns;
            let range_start = host;
            let depth = step.names.len() as i64;
            host += 100 * depth + 100;
            let mut e = StepExpect {
                step: si,
                rank,
                device,
                pid,
                tid,
                name: step.names.first().cloned(),
                inner_name: step.names.last().cloned(),
                cpu_start_ns: range_start,
                cpu_end_ns: 0,
                gpu_start_ns: None,
                gpu_end_ns: None,
                busy_ns: 0,
                kernels: 0,
                graph_replays: 0,
                memcpys: 0,
                launches: 0,
                launch_host_ns: 0,
            };
            // One op on the GPU: returns its start.
            let place = |call_end: i64, gpu_free: &mut i64| -> i64 {
                (*gpu_free + scn.kernel_gap_ns).max(call_end + scn.launch_latency_ns)
            };
            let note_op = |e: &mut StepExpect, dev: &mut DeviceExpect, s: i64, end: i64| {
                e.gpu_start_ns = Some(e.gpu_start_ns.map_or(s, |g| g.min(s)));
                e.gpu_end_ns = Some(e.gpu_end_ns.map_or(end, |g| g.max(end)));
                e.busy_ns += end - s;
                dev.ops += 1;
                dev.busy_ns += end - s;
                dev.window_start_ns = dev.window_start_ns.min(s);
                dev.window_end_ns = dev.window_end_ns.max(end);
            };
            // One copy, the step's H2D input or D2H output (ENUM_CUDA_MEMCPY_OPER `kind`
            // 1 or 2): its call on the host, then the copy on the GPU; the host clock, the
            // GPU's free time and the correlation id move past it.
            let copy = |w: &mut NsysWriter,
                        (host, gpu_free, corr): (&mut i64, &mut i64, &mut i64),
                        e: &mut StepExpect,
                        dev: &mut DeviceExpect,
                        copy_kind: i64,
                        bytes: i64|
             -> Result<()> {
                let (cs, ce) = (*host, *host + scn.launch_ns);
                let s = place(ce, gpu_free);
                let end = s + 1_000 + bytes / 20;
                let row = CopyRow {
                    call: (cs, ce),
                    gpu: (s, end),
                    corr: *corr,
                    copy_kind,
                    bytes,
                };
                row.write(w, (pid, tid, device), memcpy_id)?;
                *gpu_free = end;
                e.memcpys += 1;
                note_op(e, dev, s, end);
                *corr += 1;
                *host = ce + scn.launch_gap_ns;
                Ok(())
            };

            if let Some(bytes) = step.memcpy_h2d_bytes {
                copy(
                    &mut w,
                    (&mut host, &mut gpu_free, &mut corr),
                    &mut e,
                    &mut dev,
                    1,
                    bytes,
                )?;
            }

            // Launch groups: (is_graph, kernel indices).
            let mut groups: Vec<(bool, Vec<usize>)> = Vec::new();
            for (ki, k) in step.kernels.iter().enumerate() {
                match step.mode {
                    LaunchMode::Eager => groups.push((false, vec![ki])),
                    LaunchMode::GraphNode | LaunchMode::GraphOpaque => match groups.last_mut() {
                        Some(g) => g.1.push(ki),
                        None => groups.push((true, vec![ki])),
                    },
                    LaunchMode::Piecewise => {
                        if k.eager {
                            groups.push((false, vec![ki]));
                        } else if let Some(g) = groups.last_mut().filter(|g| g.0) {
                            g.1.push(ki);
                        } else {
                            groups.push((true, vec![ki]));
                        }
                    }
                }
            }

            for (gi, (is_graph, idx)) in groups.iter().enumerate() {
                let (cs, ce) = (host, host + scn.launch_ns);
                w.call(&CallRec {
                    start_ns: cs,
                    end_ns: ce,
                    event_class: event_class::RUNTIME,
                    pid,
                    tid,
                    correlation_id: Some(corr),
                    name: if *is_graph {
                        graph_launch_id
                    } else {
                        launch_id
                    },
                })?;
                if scn.backtrace_duplicates {
                    w.call(&CallRec {
                        start_ns: cs,
                        end_ns: ce,
                        event_class: event_class::BACKTRACE,
                        pid,
                        tid,
                        correlation_id: Some(corr),
                        name: if *is_graph { bt_graph_id } else { bt_launch_id },
                    })?;
                }
                e.launches += 1;
                e.launch_host_ns += ce - cs;
                let graph_id = gi as i64 + 1;
                let mut first_start = None;
                let mut last_end = 0;
                for (n, &ki) in idx.iter().enumerate() {
                    let k = &step.kernels[ki];
                    let s = if n == 0 {
                        place(ce, &mut gpu_free)
                    } else {
                        gpu_free + scn.kernel_gap_ns
                    };
                    let end = s + k.duration_ns + extra;
                    first_start.get_or_insert(s);
                    last_end = end;
                    gpu_free = end;
                    if step.mode == LaunchMode::GraphOpaque {
                        continue;
                    }
                    if let Some(c) = &scn.counters {
                        let pct = c
                            .dram_read_pct
                            .iter()
                            .find(|(sub, _)| k.name.contains(sub.as_str()))
                            .map_or(0.0, |r| r.1);
                        windows.push(ThroughputWindow {
                            start_ns: s,
                            end_ns: end,
                            dram_read_pct: pct,
                            ..ThroughputWindow::default()
                        });
                    }
                    let name = w.string(&k.name)?;
                    let node = is_graph.then_some(graph_id * 100_000 + n as i64 + 1);
                    if let Some(node) = node {
                        if node_events_written.insert(node) {
                            w.graph_node_event(&GraphNodeRec {
                                start_ns: cs,
                                end_ns: cs + 10,
                                pid,
                                tid,
                                name: graph_launch_id,
                                graph_node_id: node,
                                original_graph_node_id: None,
                            })?;
                        }
                    }
                    w.kernel(&KernelRec {
                        start_ns: s,
                        end_ns: end,
                        device,
                        stream: STREAM,
                        pid,
                        correlation_id: Some(corr),
                        demangled_name: name,
                        short_name: name,
                        graph_node_id: node,
                        graph_id: is_graph.then_some(graph_id),
                        grid: k.grid,
                    })?;
                    e.kernels += 1;
                    dev.kernels += 1;
                    dev.kernel_sum_ns += end - s;
                    note_op(&mut e, &mut dev, s, end);
                }
                if step.mode == LaunchMode::GraphOpaque {
                    if let Some(s) = first_start {
                        w.graph_trace(&GraphTraceRec {
                            start_ns: s,
                            end_ns: last_end,
                            device,
                            stream: STREAM,
                            pid,
                            correlation_id: Some(corr),
                            graph_id,
                            graph_exec_id: Some(graph_id),
                        })?;
                        e.graph_replays += 1;
                        note_op(&mut e, &mut dev, s, last_end);
                    }
                }
                corr += 1;
                host = ce + scn.launch_gap_ns;
                if let Some(stall) = step.host_stall.filter(|h| h.after_group == gi) {
                    let end = host.max(gpu_free) + stall.ns;
                    w.call(&CallRec {
                        start_ns: host,
                        end_ns: end,
                        event_class: event_class::RUNTIME,
                        pid,
                        tid,
                        correlation_id: Some(corr),
                        name: sync_id,
                    })?;
                    corr += 1;
                    host = end + scn.launch_gap_ns;
                }
            }

            if let Some(bytes) = step.memcpy_d2h_bytes {
                copy(
                    &mut w,
                    (&mut host, &mut gpu_free, &mut corr),
                    &mut e,
                    &mut dev,
                    2,
                    bytes,
                )?;
            }

            for _ in 0..step.launches_without_kernels {
                let (cs, ce) = (host, host + scn.launch_ns);
                w.call(&CallRec {
                    start_ns: cs,
                    end_ns: ce,
                    event_class: event_class::RUNTIME,
                    pid,
                    tid,
                    correlation_id: Some(corr),
                    name: launch_id,
                })?;
                e.launches += 1;
                e.launch_host_ns += ce - cs;
                corr += 1;
                host = ce + scn.launch_gap_ns;
            }

            let range_end = host + 500;
            e.cpu_end_ns = range_end;
            for (d, name) in step.names.iter().enumerate() {
                let inset = 100 * d as i64;
                let (event_type, nvtx_name) = match step.nvtx {
                    NvtxStyle::PushPop => (event_type::PUSH_POP, NvtxName::Text(name)),
                    NvtxStyle::StartEnd => (event_type::START_END, NvtxName::Text(name)),
                    NvtxStyle::Registered => {
                        (event_type::PUSH_POP, NvtxName::TextId(w.string(name)?))
                    }
                };
                w.nvtx(&NvtxRec {
                    start_ns: range_start + inset,
                    end_ns: Some(range_end - inset),
                    event_type,
                    pid,
                    tid,
                    name: nvtx_name,
                    domain_id: Some(0),
                })?;
            }
            host = range_end;

            for _ in 0..step.kernels_without_launch_after {
                let s = gpu_free + scn.kernel_gap_ns;
                let end = s + 1_500;
                // A correlation id no call of this process carries (ids count up from 1).
                w.kernel(&KernelRec {
                    start_ns: s,
                    end_ns: end,
                    device,
                    stream: STREAM,
                    pid,
                    correlation_id: Some(1_000_000_000 + corr),
                    demangled_name: orphan_id,
                    short_name: orphan_id,
                    graph_node_id: None,
                    graph_id: None,
                    grid: None,
                })?;
                corr += 1;
                gpu_free = end;
                dev.ops += 1;
                dev.kernels += 1;
                dev.kernels_without_launch += 1;
                dev.busy_ns += end - s;
                dev.kernel_sum_ns += end - s;
                dev.window_start_ns = dev.window_start_ns.min(s);
                dev.window_end_ns = dev.window_end_ns.max(end);
            }
            rank_steps.push(e);
        }
        if let (Some(c), Some(first), Some(last)) = (&scn.counters, windows.first(), windows.last())
        {
            w.gpu_metrics(&GpuMetricsRec {
                pw_gpu_id: device,
                start_ns: first.start_ns,
                end_ns: last.end_ns + c.interval_ns,
                interval_ns: c.interval_ns,
                windows: &windows,
            })?;
        }
        per_rank_steps.push(rank_steps);
        exp.devices.push(dev);
    }
    for si in 0..scn.steps.len() {
        for r in &per_rank_steps {
            exp.steps.push(r[si].clone());
        }
    }
    w.finish()?;
    Ok(exp)
}

/// vLLM's plain step annotation (`vllm/v1/worker/gpu_worker.py`, ≥ 0.14): `execute_context_N(T)_generation_M(U)`.
pub fn vllm_execute(ctx_reqs: u64, ctx_toks: u64, gen_reqs: u64, gen_toks: u64) -> String {
    format!("execute_context_{ctx_reqs}({ctx_toks})_generation_{gen_reqs}({gen_toks})")
}

/// vLLM's detailed step annotation (`detailed_trace_annotation`), e.g.
/// `execute_32_context_0(sq0sk0sqsq0sqsk0)_generation_32(sq32sk55086sqsq32sqsk55086)`.
/// Each side is (requests, Σsq, Σsk, Σsq², Σsq·sk).
pub fn vllm_execute_detailed(total: u64, ctx: [u64; 5], gen: [u64; 5]) -> String {
    format!(
        "execute_{total}_context_{}(sq{}sk{}sqsq{}sqsk{})_generation_{}(sq{}sk{}sqsq{}sqsk{})",
        ctx[0], ctx[1], ctx[2], ctx[3], ctx[4], gen[0], gen[1], gen[2], gen[3], gen[4]
    )
}

/// SGLang's step annotation (`sglang/srt/utils/profile_utils.py`): `step[DECODE bs=32]`, `step[EXTEND bs=2 toks=12]`.
pub fn sglang_step(mode: &str, bs: u64, toks: Option<u64>) -> String {
    match toks {
        Some(t) => format!("step[{mode} bs={bs} toks={t}]"),
        None => format!("step[{mode} bs={bs}]"),
    }
}

/// Kernel names and durations of one decode layer stack, looped to `n` kernels: the mix a
/// vLLM CUDA-graph decode step of a dense model launches (names as they appear in traces).
pub fn decode_kernels(n: usize) -> Vec<KernelSpec> {
    const MIX: [(&str, i64); 8] = [
        ("void vllm::rms_norm_kernel<c10::BFloat16, 8, 2>(c10::BFloat16*, c10::BFloat16 const*, c10::BFloat16 const*, float, int, int)", 2_100),
        ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x64x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas", 9_800),
        ("void vllm::rotary_embedding_kernel<c10::BFloat16, true>(long const*, c10::BFloat16*, c10::BFloat16*, c10::BFloat16 const*, int, long, long, int, int, int)", 1_900),
        ("void flash::flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4, false, false, cutlass::bfloat16_t>, false, true, false, false, true, false, false, false>(flash::Flash_fwd_params)", 7_400),
        ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize64x64x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas", 6_300),
        ("void vllm::fused_add_rms_norm_kernel<c10::BFloat16, 8>(c10::BFloat16*, c10::BFloat16*, c10::BFloat16 const*, float, int, int)", 2_300),
        ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas", 15_200),
        ("void vllm::act_and_mul_kernel<c10::BFloat16, &vllm::silu_kernel<c10::BFloat16>, true>(c10::BFloat16*, c10::BFloat16 const*, int)", 2_700),
    ];
    (0..n)
        .map(|i| {
            let (name, d) = MIX[i % MIX.len()];
            KernelSpec::new(name, d)
        })
        .collect()
}

/// `steps` CUDA-graph decode steps (node-mode tracing) of `kernels` kernels each, with vLLM
/// detailed `execute_…` annotations: the `steps` benchmark (10,000 × 400 = 4M kernels).
pub fn decode_benchmark(layout: Layout, ranks: u32, steps: usize, kernels: usize) -> Scenario {
    let ks = decode_kernels(kernels);
    let step_specs = (0..steps)
        .map(|i| {
            let sk = 55_000 + i as u64 % 1000;
            let name = vllm_execute_detailed(32, [0; 5], [32, 32, sk, 32, sk]);
            let mut s = StepSpec::new(Some(&name), LaunchMode::GraphNode, ks.clone());
            s.host_gap_before_ns = 150_000;
            s
        })
        .collect();
    Scenario::new(layout, ranks, step_specs)
}
