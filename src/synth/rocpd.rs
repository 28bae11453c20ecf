//! rocpd (rocprofv3, schema 3) databases for tests, in the real schema: rocprofiler-sdk's
//! own DDL (`src/synth/rocpd_ddl`, MIT, verbatim) applied in rocprofv3's order, then rows
//! for a decode-like workload. Each process drives one GPU: per step a ROCTx range (a
//! `MARKER_CORE_RANGE_API` region with the text in its event's `extdata`), a host → device
//! copy, and HIP launches whose dispatches share the launch's `stack_id`. One kernel per
//! step may run on a second stream, overlapping the kernel before it, so the busy time
//! (interval union) differs from the sum of durations. [`write()`] returns the truth,
//! computed here from the intervals it wrote, apart from the reader.

use std::path::Path;

use rusqlite::{params, Connection};

const DDL: [&str; 6] = [
    include_str!("rocpd_ddl/rocpd_tables.sql"),
    include_str!("rocpd_ddl/rocpd_indexes.sql"),
    include_str!("rocpd_ddl/rocpd_views.sql"),
    include_str!("rocpd_ddl/data_views.sql"),
    include_str!("rocpd_ddl/summary_views.sql"),
    include_str!("rocpd_ddl/marker_views.sql"),
];

/// Kernel names of a ROCm vLLM decode step, with their durations in ns.
pub const KERNELS: [(&str, i64); 4] = [
    ("Cijk_Alik_Bljk_BBS_BH_MT128x128x64_MI16x16x1_SN_1LDSB1", 41_000),
    ("void vllm::rms_norm_kernel<c10::BFloat16, 8, 4>(c10::BFloat16*, c10::BFloat16 const*, c10::BFloat16 const*, float, int, int)", 6_000),
    ("void paged_attention_ll4mi_QKV_mfma16_kernel<__hip_bfloat16, __hip_bfloat16, 256, 16, 1, 4>(__hip_bfloat16 const*)", 23_000),
    ("void vllm::act_and_mul_kernel<c10::BFloat16>(c10::BFloat16*, c10::BFloat16 const*, int)", 9_000),
];

/// What to write.
#[derive(Debug, Clone)]
pub struct Spec {
    /// Processes, one GPU each (GPU index = process index).
    pub processes: usize,
    pub steps: usize,
    /// Launches per step, cycling through [`KERNELS`].
    pub kernels_per_step: usize,
    /// Idle time between a step's dispatches on the GPU, ns.
    pub gap_ns: i64,
    /// Period of the steps, ns (must exceed one step's work).
    pub period_ns: i64,
    /// The second dispatch of each step runs on another stream, starting half-way
    /// through the first.
    pub overlap: bool,
    /// The ROCTx text of step `i`.
    pub step_name: fn(usize) -> String,
    /// Absolute CLOCK_BOOTTIME of the first event, ns (real captures start far from 0).
    pub base_ns: i64,
}

impl Default for Spec {
    fn default() -> Self {
        Spec {
            processes: 1,
            steps: 20,
            kernels_per_step: 8,
            gap_ns: 3_000,
            period_ns: 1_000_000,
            overlap: true,
            step_name: |_| "execute_context_0(0)_generation_4(4)".to_owned(),
            base_ns: 8_306_017_478_773_569,
        }
    }
}

/// What the database holds, computed from the written intervals.
#[derive(Debug, Clone, PartialEq)]
pub struct Truth {
    /// (GPU index, busy ns: the union of its dispatches and copies).
    pub busy_ns: Vec<(i64, i64)>,
    /// (GPU index, first op start − base, last op end − base): the GPU's window.
    pub window_ns: Vec<(i64, i64, i64)>,
    pub dispatches: usize,
    pub copies: usize,
    /// Per step and process: the union of that step's GPU work, ns.
    pub step_busy_ns: Vec<i64>,
    /// (kernel name, total duration ns) over the whole database.
    pub kernel_total_ns: Vec<(String, i64)>,
}

/// Write a rocpd database at `path` (which must not exist).
pub fn write(path: &Path, spec: &Spec) -> rusqlite::Result<Truth> {
    let uuid = "0197f3a2_1c4e_7b61_9a3d_5e2f8c0d4b17";
    let guid = uuid.replace('_', "-");
    let conn = Connection::open(path)?;
    for ddl in DDL {
        let sql = ddl
            .replace("{{uuid}}", &format!("_{uuid}"))
            .replace("{{guid}}", &guid);
        conn.execute_batch(&sql)?;
    }
    let t = |name: &str| format!("rocpd_{name}_{uuid}");
    let tx = conn.unchecked_transaction()?;
    let mut strings: Vec<String> = Vec::new();
    let mut sid = |s: &str| -> i64 {
        if let Some(i) = strings.iter().position(|x| x == s) {
            return i as i64 + 1;
        }
        strings.push(s.to_owned());
        strings.len() as i64
    };
    let cat_hip = sid("HIP_RUNTIME_API_EXT");
    let cat_marker = sid("MARKER_CORE_RANGE_API");
    let cat_dispatch = sid("KERNEL_DISPATCH");
    let cat_copy = sid("MEMORY_COPY");
    let n_launch = sid("hipLaunchKernel");
    let n_copy_api = sid("hipMemcpyAsync");
    let n_push = sid("roctxRangePushA");
    let n_h2d = sid("MEMORY_COPY_HOST_TO_DEVICE");
    // Strings first: the DDL turns foreign keys on, and events and regions name them.
    for (i, s) in strings.iter().enumerate() {
        tx.execute(
            &format!("INSERT INTO {} (id, string) VALUES (?1, ?2)", t("string")),
            params![i as i64 + 1, s],
        )?;
    }
    tx.execute(
        &format!(
            "INSERT INTO {} (id, hash, machine_id, hostname) VALUES (1, 42, 'm0', 'mi300x-node')",
            t("info_node")
        ),
        [],
    )?;
    let mut event_id = 0i64;
    let mut stack = 0i64;
    let mut truth = Truth {
        busy_ns: Vec::new(),
        window_ns: Vec::new(),
        dispatches: 0,
        copies: 0,
        step_busy_ns: Vec::new(),
        kernel_total_ns: KERNELS.iter().map(|(n, _)| (n.to_string(), 0)).collect(),
    };
    for p in 0..spec.processes {
        let (proc_id, os_pid) = (p as i64 + 1, 41_000 + p as i64);
        tx.execute(
            &format!(
                "INSERT INTO {} (id, nid, pid, command) VALUES (?1, 1, ?2, ?3)",
                t("info_process")
            ),
            params![
                proc_id,
                os_pid,
                format!("python3 -m vllm.entrypoints.openai.api_server --rank {p}")
            ],
        )?;
        let thread_id = proc_id;
        tx.execute(
            &format!(
                "INSERT INTO {} (id, nid, pid, tid, name) VALUES (?1, 1, ?2, ?3, 'python3')",
                t("info_thread")
            ),
            params![thread_id, proc_id, os_pid],
        )?;
        // A CPU agent first, as rocprofv3 lists them; then this process's GPU.
        let (cpu_agent, gpu_agent) = (proc_id * 10, proc_id * 10 + 1);
        tx.execute(
            &format!("INSERT INTO {} (id, nid, pid, type, absolute_index, logical_index, type_index, name, product_name) VALUES (?1, 1, ?2, 'CPU', 0, 0, 0, 'AMD EPYC 9654', 'AMD EPYC 9654')", t("info_agent")),
            params![cpu_agent, proc_id],
        )?;
        tx.execute(
            &format!("INSERT INTO {} (id, nid, pid, type, absolute_index, logical_index, type_index, name, product_name) VALUES (?1, 1, ?2, 'GPU', ?3, ?3, ?4, 'gfx942', 'AMD Instinct MI300X')", t("info_agent")),
            params![gpu_agent, proc_id, p as i64 + 1, p as i64],
        )?;
        tx.execute(
            &format!(
                "INSERT INTO {} (id, nid, pid, name) VALUES (?1, 1, ?2, 'Queue 0')",
                t("info_queue")
            ),
            params![proc_id, proc_id],
        )?;
        for s in 0..2i64 {
            tx.execute(
                &format!(
                    "INSERT INTO {} (id, nid, pid, name) VALUES (?1, 1, ?2, ?3)",
                    t("info_stream")
                ),
                params![proc_id * 10 + s, proc_id, format!("Stream {s}")],
            )?;
        }
        tx.execute(&format!("INSERT INTO {} (id, nid, pid, agent_id, uri) VALUES (?1, 1, ?2, ?3, 'file:///opt/vllm/_C.so')", t("info_code_object")), params![proc_id, proc_id, gpu_agent])?;
        for (k, (name, _)) in KERNELS.iter().enumerate() {
            tx.execute(
                &format!("INSERT INTO {} (id, nid, pid, code_object_id, kernel_name, display_name) VALUES (?1, 1, ?2, ?3, ?4, ?5)", t("info_kernel_symbol")),
                params![proc_id * 100 + k as i64, proc_id, proc_id, format!("{name}.kd"), name],
            )?;
        }
        let mut gpu: Vec<(i64, i64)> = Vec::new();
        for step in 0..spec.steps {
            let t0 = spec.base_ns + p as i64 * 997 + step as i64 * spec.period_ns;
            let mut step_ops: Vec<(i64, i64)> = Vec::new();
            // The ROCTx range: its event carries the text.
            event_id += 1;
            stack += 1;
            let text = (spec.step_name)(step);
            tx.execute(
                &format!("INSERT INTO {} (id, category_id, stack_id, correlation_id, extdata) VALUES (?1, ?2, ?3, 0, json_object('message', ?4))", t("event")),
                params![event_id, cat_marker, stack, text],
            )?;
            let marker_event = event_id;
            let mut host = t0 + 2_000;
            let mut dev = t0 + 20_000;
            // A host → device copy first (the step's inputs).
            event_id += 1;
            stack += 1;
            let copy_ns = 4_000;
            tx.execute(&format!("INSERT INTO {} (id, category_id, stack_id, correlation_id) VALUES (?1, ?2, ?3, 0)", t("event")), params![event_id, cat_hip, stack])?;
            tx.execute(
                &format!("INSERT INTO {} (nid, pid, tid, start, end, name_id, event_id) VALUES (1, ?1, ?2, ?3, ?4, ?5, ?6)", t("region")),
                params![proc_id, thread_id, host, host + 3_000, n_copy_api, event_id],
            )?;
            event_id += 1;
            tx.execute(&format!("INSERT INTO {} (id, category_id, stack_id, correlation_id) VALUES (?1, ?2, ?3, 0)", t("event")), params![event_id, cat_copy, stack])?;
            tx.execute(
                &format!("INSERT INTO {} (nid, pid, tid, start, end, name_id, dst_agent_id, src_agent_id, size, queue_id, stream_id, event_id) VALUES (1, ?1, ?2, ?3, ?4, ?5, ?6, ?7, 65536, ?1, ?8, ?9)", t("memory_copy")),
                params![proc_id, thread_id, dev, dev + copy_ns, n_h2d, gpu_agent, cpu_agent, proc_id * 10, event_id],
            )?;
            step_ops.push((dev, dev + copy_ns));
            truth.copies += 1;
            dev += copy_ns + spec.gap_ns;
            host += 4_000;
            let mut prev: (i64, i64) = (dev, dev);
            for k in 0..spec.kernels_per_step {
                let (name_ix, dur) = (k % KERNELS.len(), KERNELS[k % KERNELS.len()].1);
                event_id += 1;
                stack += 1;
                tx.execute(&format!("INSERT INTO {} (id, category_id, stack_id, correlation_id) VALUES (?1, ?2, ?3, 0)", t("event")), params![event_id, cat_hip, stack])?;
                tx.execute(
                    &format!("INSERT INTO {} (nid, pid, tid, start, end, name_id, event_id) VALUES (1, ?1, ?2, ?3, ?4, ?5, ?6)", t("region")),
                    params![proc_id, thread_id, host, host + 1_500, n_launch, event_id],
                )?;
                host += 2_000;
                let second_stream = spec.overlap && k == 1;
                let start = if second_stream {
                    prev.0 + (prev.1 - prev.0) / 2
                } else {
                    dev
                };
                let end = start + dur;
                event_id += 1;
                tx.execute(&format!("INSERT INTO {} (id, category_id, stack_id, correlation_id) VALUES (?1, ?2, ?3, 0)", t("event")), params![event_id, cat_dispatch, stack])?;
                tx.execute(
                    &format!("INSERT INTO {} (nid, pid, tid, agent_id, kernel_id, dispatch_id, queue_id, stream_id, start, end, workgroup_size_x, workgroup_size_y, workgroup_size_z, grid_size_x, grid_size_y, grid_size_z, event_id) VALUES (1, ?1, ?2, ?3, ?4, ?5, ?1, ?6, ?7, ?8, 256, 1, 1, ?9, 1, 1, ?10)", t("kernel_dispatch")),
                    params![proc_id, thread_id, gpu_agent, proc_id * 100 + name_ix as i64, stack, proc_id * 10 + i64::from(second_stream), start, end, 256 * (k as i64 + 1) * 4, event_id],
                )?;
                truth.dispatches += 1;
                truth.kernel_total_ns[name_ix].1 += dur;
                step_ops.push((start, end));
                prev = (start, end);
                dev = dev.max(end) + spec.gap_ns;
            }
            tx.execute(
                &format!("INSERT INTO {} (nid, pid, tid, start, end, name_id, event_id) VALUES (1, ?1, ?2, ?3, ?4, ?5, ?6)", t("region")),
                params![proc_id, thread_id, t0, host + 1_000, n_push, marker_event],
            )?;
            truth.step_busy_ns.push(union(&mut step_ops.clone()));
            gpu.extend(step_ops);
        }
        let lo = gpu.iter().map(|o| o.0).min().unwrap_or(0) - spec.base_ns;
        let hi = gpu.iter().map(|o| o.1).max().unwrap_or(0) - spec.base_ns;
        truth.window_ns.push((p as i64, lo, hi));
        truth.busy_ns.push((p as i64, union(&mut gpu)));
    }
    tx.commit()?;
    Ok(truth)
}

/// Total length of the union of intervals (sorted here).
fn union(v: &mut [(i64, i64)]) -> i64 {
    v.sort_unstable();
    let (mut total, mut cur) = (0i64, None::<(i64, i64)>);
    for &(s, e) in v.iter() {
        match cur {
            Some((cs, ce)) if s <= ce => cur = Some((cs, ce.max(e))),
            Some((cs, ce)) => {
                total += ce - cs;
                cur = Some((s, e));
            }
            None => cur = Some((s, e)),
        }
    }
    total + cur.map_or(0, |(s, e)| e - s)
}
