//! The event rows of an export, one [`NsysWriter`] method per nsys table: devices,
//! kernels, runtime calls, NVTX ranges, copies, sets, graph launches and nodes, and
//! GPU-metrics samples.

use rusqlite::params;

use super::layout::T;
use super::records::{
    self, global_pid, global_tid, CallRec, GpuMetricsRec, GpuRec, GraphNodeRec, GraphTraceRec,
    KernelRec, MemcpyRec, MemsetRec, NvtxName, NvtxRec,
};
use super::{sql_err, Layout, NsysWriter};
use crate::exit::{Error, Result};

impl NsysWriter {
    /// A TARGET_INFO_GPU row (`deviceId` column in 2020.5, `id` later).
    pub fn gpu(&mut self, g: &GpuRec) -> Result<()> {
        self.ensure(T::Gpu)?;
        let vm = 1i64 << 48;
        let r = if self.layout == Layout::Nsys2020_5 {
            self.conn.execute(
                "INSERT INTO TARGET_INFO_GPU (vmId, deviceId, name, busLocation, isDiscrete) \
                 VALUES (?1, ?2, ?3, '0000:00:00.0', 1)",
                params![vm, g.id, g.name],
            )
        } else {
            // pwGpuId (what GPU metrics name the GPU by) = the device id, as cuDevice.
            self.conn.execute(
                "INSERT INTO TARGET_INFO_GPU (vmId, id, name, busLocation, isDiscrete, \
                 totalMemory, memoryBandwidth, smCount, cuDevice, pwGpuId) \
                 VALUES (?1, ?2, ?3, '0000:00:00.0', 1, ?4, ?5, ?6, ?2, ?2)",
                params![
                    vm,
                    g.id,
                    g.name,
                    g.total_memory_bytes,
                    g.memory_bandwidth_bytes_per_s,
                    g.sm_count
                ],
            )
        };
        r.map_err(sql_err)?;
        Ok(())
    }

    pub fn kernel(&mut self, k: &KernelRec) -> Result<()> {
        self.ensure(T::Kernel)?;
        let grid = self.next_grid;
        self.next_grid += 1;
        // One wave of 132 blocks (an H100's SMs) unless the kernel's own grid is given.
        let [gx, gy, gz] = k.grid.unwrap_or([132, 1, 1]);
        self.insert(
            &self.kernel_sql,
            params![
                k.start_ns,
                k.end_ns,
                k.device,
                k.stream,
                k.correlation_id,
                global_pid(k.pid),
                k.demangled_name,
                k.short_name,
                k.graph_node_id,
                k.graph_id,
                grid,
                gx,
                gy,
                gz
            ],
        )
    }

    pub fn call(&mut self, c: &CallRec) -> Result<()> {
        self.ensure(T::Runtime)?;
        self.insert(
            "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME (start, end, eventClass, globalTid, \
             correlationId, nameId, returnValue) VALUES (?1, ?2, ?3, ?4, ?5, ?6, 0)",
            params![
                c.start_ns,
                c.end_ns,
                c.event_class,
                global_tid(c.pid, c.tid),
                c.correlation_id,
                c.name
            ],
        )
    }

    pub fn nvtx(&mut self, r: &NvtxRec<'_>) -> Result<()> {
        self.ensure(T::Nvtx)?;
        let (text, text_id) = match r.name {
            NvtxName::Text(t) => (Some(t), None),
            NvtxName::TextId(id) => (None, Some(id)),
        };
        self.insert(
            "INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid, textId, \
             domainId) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            params![
                r.start_ns,
                r.end_ns,
                r.event_type,
                text,
                global_tid(r.pid, r.tid),
                text_id,
                r.domain_id
            ],
        )
    }

    pub fn memcpy(&mut self, m: &MemcpyRec) -> Result<()> {
        self.ensure(T::Memcpy)?;
        self.insert(
            "INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY (start, end, deviceId, contextId, \
             streamId, correlationId, globalPid, bytes, copyKind, srcKind, dstKind, \
             graphNodeId) VALUES (?1, ?2, ?3, 1, ?4, ?5, ?6, ?7, ?8, 0, 2, ?9)",
            params![
                m.start_ns,
                m.end_ns,
                m.device,
                m.stream,
                m.correlation_id,
                global_pid(m.pid),
                m.bytes,
                m.copy_kind,
                m.graph_node_id
            ],
        )
    }

    pub fn memset(&mut self, m: &MemsetRec) -> Result<()> {
        self.ensure(T::Memset)?;
        self.insert(
            "INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET (start, end, deviceId, contextId, \
             streamId, correlationId, globalPid, value, bytes, graphNodeId, memKind) \
             VALUES (?1, ?2, ?3, 1, ?4, ?5, ?6, 0, ?7, ?8, 2)",
            params![
                m.start_ns,
                m.end_ns,
                m.device,
                m.stream,
                m.correlation_id,
                global_pid(m.pid),
                m.bytes,
                m.graph_node_id
            ],
        )
    }

    pub fn graph_trace(&mut self, g: &GraphTraceRec) -> Result<()> {
        self.ensure(T::GraphTrace)?;
        self.insert(
            "INSERT INTO CUPTI_ACTIVITY_KIND_GRAPH_TRACE (start, end, globalPid, deviceId, \
             contextId, streamId, correlationId, graphId, graphExecId) \
             VALUES (?1, ?2, ?3, ?4, 1, ?5, ?6, ?7, ?8)",
            params![
                g.start_ns,
                g.end_ns,
                global_pid(g.pid),
                g.device,
                g.stream,
                g.correlation_id,
                g.graph_id,
                g.graph_exec_id
            ],
        )
    }

    /// A graph-node creation event: CUDA_GRAPH_NODE_EVENTS in 2026.2, CUDA_GRAPH_EVENTS
    /// (with the same node columns) in the 2022 layouts.
    pub(crate) fn graph_node_event(&mut self, g: &GraphNodeRec) -> Result<()> {
        let table = if self.layout == Layout::Nsys2026_2 {
            self.ensure(T::GraphNode)?;
            "CUDA_GRAPH_NODE_EVENTS"
        } else {
            // 2020.5 exports had no graph-node table this generator knows of: nothing to write.
            let Some(sql) = self.ddl.get("cuda_graph_events").cloned() else {
                return Ok(());
            };
            if !self.created[T::GraphNode as usize] {
                self.conn.execute_batch(&sql).map_err(sql_err)?;
                self.created[T::GraphNode as usize] = true;
            }
            "CUDA_GRAPH_EVENTS"
        };
        self.insert(
            &format!(
                "INSERT INTO {table} (start, end, eventClass, globalTid, nameId, graphNodeId, \
                 originalGraphNodeId) VALUES (?1, ?2, 0, ?3, ?4, ?5, ?6)"
            ),
            params![
                g.start_ns,
                g.end_ns,
                global_tid(g.pid, g.tid),
                g.name,
                g.graph_node_id,
                g.original_graph_node_id
            ],
        )
    }

    /// GPU metrics of one GPU as `--gpu-metrics-devices` records them: the metric names
    /// of its target (DRAM read/write bandwidth, SMs active, SM issue, and two counters a
    /// reader must skip: GPC clock, tensor active), then one sample of each per
    /// `interval_ns` over `[start_ns, end_ns)`, valued by the window the sample's
    /// timestamp falls in (0 outside every window; the clock is constant).
    pub fn gpu_metrics(&mut self, g: &GpuMetricsRec<'_>) -> Result<()> {
        if g.interval_ns <= 0 {
            return Err(Error::input(
                "GPU metrics need a positive sampling interval",
            ));
        }
        self.ensure(T::GpuMetricNames)?;
        self.ensure(T::GpuMetrics)?;
        let type_id = records::GPU_METRICS_TARGET_BASE | (g.pw_gpu_id & 0xFF);
        let pct = " [Throughput %]";
        let names = [
            "GPC Clock Frequency [MHz]".to_owned(),
            format!("SMs Active{pct}"),
            format!("SM Issue{pct}"),
            format!("Tensor Active{pct}"),
            format!("DRAM Read Bandwidth{pct}"),
            format!("DRAM Write Bandwidth{pct}"),
        ];
        for (metric_id, name) in names.iter().enumerate() {
            self.insert(
                "INSERT INTO TARGET_INFO_GPU_METRICS (typeId, sourceId, typeName, metricId, \
                 metricName) VALUES (?1, ?2, ?3, ?4, ?5)",
                params![
                    type_id,
                    records::GPU_METRICS_TARGET_BASE,
                    format!("GPU {}", g.pw_gpu_id),
                    metric_id as i64,
                    name
                ],
            )?;
        }
        let mut t = g.start_ns;
        while t < g.end_ns {
            let w = g
                .windows
                .iter()
                .find(|w| (w.start_ns..w.end_ns).contains(&t))
                .copied()
                .unwrap_or_default();
            let values = [
                1_755_000_000.0,
                w.sm_active_pct,
                w.sm_issue_pct,
                0.0,
                w.dram_read_pct,
                w.dram_write_pct,
            ];
            for (metric_id, v) in values.into_iter().enumerate() {
                self.insert(
                    "INSERT INTO GPU_METRICS (rawTimestamp, timestamp, typeId, metricId, value) \
                     VALUES (?1, ?1, ?2, ?3, ?4)",
                    params![t, type_id, metric_id as i64, v],
                )?;
            }
            t += g.interval_ns;
        }
        Ok(())
    }
}
