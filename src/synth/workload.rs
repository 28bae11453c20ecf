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
    KernelRec, MemcpyRec, NsysWriter, NvtxName, NvtxRec, ThroughputWindow,
};
use crate::wire::synth::{DeviceExpect, Expected, StepExpect};

mod names;
mod spec;

pub use names::{
    decode_benchmark, decode_kernels, sglang_step, vllm_execute, vllm_execute_detailed,
};
pub use spec::{Counters, HostStall, KernelSpec, LaunchMode, NvtxStyle, Scenario, StepSpec};

const STREAM: i64 = 7;
const LAUNCH: &str = "cudaLaunchKernel_v7000";
const GRAPH_LAUNCH: &str = "cudaGraphLaunch_v10000";
const MEMCPY_ASYNC: &str = "cudaMemcpyAsync_v3020";
const STREAM_SYNC: &str = "cudaStreamSynchronize_v3020";

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

/// Write `scn` to `path` and return what it must measure.
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
