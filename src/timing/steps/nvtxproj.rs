//! Every host range projected onto the GPU on its own, by the rule a step's span uses (the
//! calls its thread started inside it → their ops), with no claiming and no tail: what
//! `nsys stats -r nvtxgpuproj` reports per range, for a comparison with NVIDIA's own
//! answer (docs/nvtx.md, tests/it/nvtx_projection.rs).

use crate::exit::Result;
use crate::trace::{RangeKind, Trace};

use super::index::Index;

/// One range and the GPU work launched inside it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct RangeProjection {
    /// The name as nsys shows it: `Domain:Name` in a named domain, else the bare name.
    pub name: String,
    pub pid: i64,
    pub tid: i64,
    pub start_ns: i64,
    pub end_ns: i64,
    /// Launch calls inside the range that launched at least one op: nsys' `NumGPUOps`
    /// (distinct correlation ids).
    pub launches_with_ops: u64,
    /// Ops launched inside the range (a node-traced graph replay counts each kernel).
    pub ops: u64,
    /// First op's start and last op's end, when any op.
    pub gpu_start_ns: Option<i64>,
    pub gpu_end_ns: Option<i64>,
}

/// Every host range (NVTX and annotations, not GPU annotations or python frames),
/// projected on its own, in the trace's range order.
/// The lookups are built on `workers` threads (the projection does not depend on it).
pub fn project_ranges(trace: &Trace, workers: usize) -> Result<Vec<RangeProjection>> {
    let ix = Index::new(trace, workers)?;
    let r = trace.ranges_view()?;
    let mut out = Vec::with_capacity(r.start_ns.len());
    for i in 0..r.start_ns.len() {
        if r.kind[i] == RangeKind::GpuAnnotation as u32
            || r.kind[i] == RangeKind::PythonStack as u32
        {
            continue;
        }
        let pid = i64::from(r.pid[i]);
        let bare = trace.name(r.name_id[i]);
        let name = match trace.meta.domain_name(pid, r.domain_id[i]) {
            Some(d) => format!("{d}:{bare}"),
            None => bare.to_owned(),
        };
        let mut p = RangeProjection {
            name,
            pid,
            tid: r.tid[i],
            start_ns: r.start_ns[i],
            end_ns: r.end_ns[i],
            launches_with_ops: 0,
            ops: 0,
            gpu_start_ns: None,
            gpu_end_ns: None,
        };
        for &ci in ix.calls_in(pid, r.tid[i], r.start_ns[i], r.end_ns[i]) {
            let ops = ix.ops_of_call(ci as usize);
            if ops.is_empty() {
                continue;
            }
            p.launches_with_ops += 1;
            p.ops += ops.len() as u64;
            for &o in ops {
                let (s, e) = (ix.ops.start_ns[o as usize], ix.ops.end_ns[o as usize]);
                p.gpu_start_ns = Some(p.gpu_start_ns.map_or(s, |x| x.min(s)));
                p.gpu_end_ns = Some(p.gpu_end_ns.map_or(e, |x| x.max(e)));
            }
        }
        out.push(p);
    }
    Ok(out)
}
