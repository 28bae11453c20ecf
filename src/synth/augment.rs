//! GPU work added to a real nsys export that has none: a capture taken without a GPU keeps
//! its real NVTX, thread, process, string and metadata tables, and gets kernel launches
//! (runtime rows on the thread that ran each chosen NVTX range, inside the range, and the
//! kernels they launched) keyed to the export's own global ids, so stepgate can find and
//! project its steps. What is added is synthetic and the export's metadata says so.

use std::path::Path;

use rusqlite::Connection;

use super::writer::{event_class, event_type, global_tid, CallRec, GpuRec, KernelRec};
use super::{Layout, NsysWriter};
use crate::exit::{Error, Result};

/// Which ranges get work, and how much.
pub struct Spec<'a> {
    /// An NVTX range (push/pop or start/end, closed) gets work when its name matches.
    pub ranges: &'a dyn Fn(&str) -> bool,
    /// Kernel launches inside each chosen range.
    pub kernels_per_range: u32,
    /// Duration of each kernel (they run back to back on one stream).
    pub kernel_ns: i64,
    /// The GPU the kernels ran on (device 0).
    pub gpu: GpuRec,
    /// The layout whose DDL creates the tables the export lacks: the real export's own
    /// generation or the nearest one the writer has.
    pub layout: Layout,
    /// A range whose name matches also gets one launch call that starts inside it and
    /// ends after it (NVTX and CUPTI timestamps are taken apart, so a real export can
    /// show it): the case where nsys' projection (whole call inside) and stepgate's
    /// (call starts inside) differ, docs/nvtx.md. Its kernel is counted in [`Added`].
    pub crossing_end: &'a dyn Fn(&str) -> bool,
}

/// One range that got work: what the export says about it, and what was added.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Added {
    pub name: String,
    pub global_tid: i64,
    pub pid: i64,
    pub tid: i64,
    pub start_ns: i64,
    pub end_ns: i64,
    pub kernels: u32,
    /// GPU time of its kernels (they never overlap).
    pub busy_ns: i64,
}

/// Host time of each synthetic launch call.
const LAUNCH_NS: i64 = 2_000;
/// From a launch call's end to its kernel's start, at the earliest.
const QUEUE_NS: i64 = 1_000;
const STREAM: i64 = 7;

/// A closed NVTX range of the export, its name resolved.
struct Range {
    start: i64,
    end: i64,
    global_tid: i64,
    name: String,
}

fn sql_err(e: rusqlite::Error) -> Error {
    Error::input(format!("augmenting the export failed: {e}"))
}

/// The closed push/pop and start/end ranges, in start order, names read from `text` or
/// `textId` → StringIds as nsys writes either.
fn ranges(path: &Path) -> Result<Vec<Range>> {
    let c = Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
        .map_err(sql_err)?;
    let sql = format!(
        "SELECT n.start, n.end, n.globalTid, coalesce(n.text, s.value) FROM NVTX_EVENTS n \
         LEFT JOIN StringIds s ON s.id = n.textId WHERE n.end IS NOT NULL \
         AND n.globalTid IS NOT NULL AND n.eventType IN ({}, {}) ORDER BY n.start",
        event_type::PUSH_POP,
        event_type::START_END
    );
    let mut st = c.prepare(&sql).map_err(sql_err)?;
    let rows = st
        .query_map([], |r| {
            Ok(Range {
                start: r.get(0)?,
                end: r.get(1)?,
                global_tid: r.get(2)?,
                name: r.get::<_, Option<String>>(3)?.unwrap_or_default(),
            })
        })
        .map_err(sql_err)?;
    rows.collect::<rusqlite::Result<_>>().map_err(sql_err)
}

/// The largest correlation id the export's API and GPU tables hold (0 without any).
fn max_correlation(path: &Path) -> Result<i64> {
    let c = Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
        .map_err(sql_err)?;
    let mut most = 0i64;
    for t in [
        "CUPTI_ACTIVITY_KIND_RUNTIME",
        "CUPTI_ACTIVITY_KIND_KERNEL",
        "CUPTI_ACTIVITY_KIND_MEMCPY",
        "CUPTI_ACTIVITY_KIND_MEMSET",
    ] {
        let exists: bool = c
            .query_row(
                "SELECT count(*) > 0 FROM sqlite_master WHERE type = 'table' AND name = ?1",
                [t],
                |r| r.get(0),
            )
            .map_err(sql_err)?;
        if exists {
            let m: Option<i64> = c
                .query_row(&format!("SELECT max(correlationId) FROM {t}"), [], |r| {
                    r.get(0)
                })
                .map_err(sql_err)?;
            most = most.max(m.unwrap_or(0));
        }
    }
    Ok(most)
}

/// Add the work `spec` asks for to the export at `path`, in place. Returns the ranges that
/// got it, in start order. Refuses an export whose global ids the writer cannot reproduce,
/// or where no range matches.
pub fn augment(path: &Path, spec: &Spec<'_>) -> Result<Vec<Added>> {
    if spec.kernels_per_range == 0 || spec.kernel_ns <= 0 {
        return Err(Error::input(
            "augment: give at least one kernel of positive duration per range",
        ));
    }
    let chosen: Vec<Range> = ranges(path)?
        .into_iter()
        .filter(|r| (spec.ranges)(&r.name))
        .collect();
    if chosen.is_empty() {
        return Err(Error::input(format!(
            "{}: no NVTX range matches; nothing to add GPU work to",
            path.display()
        )));
    }
    // Ids after any the export holds (a GPU-less export has none, a real one may), within
    // the 32 bits CUPTI gives a correlation id.
    let mut correlation = max_correlation(path)?;
    let needed = (chosen.len() as u64).saturating_mul(u64::from(spec.kernels_per_range));
    if u64::try_from(correlation)
        .unwrap_or(u64::MAX)
        .saturating_add(needed)
        > i32::MAX as u64
    {
        return Err(Error::input(
            "augment: the export's correlation ids leave no room below 2^31 for the added work",
        ));
    }
    let mut w = NsysWriter::open(path, spec.layout)?;
    w.gpu(&spec.gpu)?;
    let launch = w.string("cudaLaunchKernel_v7000")?;
    let kernel = w.string("stepgate_augment_kernel")?;
    // Kernels run one after another on one stream across the whole capture.
    let mut gpu_free = i64::MIN;
    let mut added = Vec::with_capacity(chosen.len());
    for r in chosen {
        let (pid, tid) = ((r.global_tid >> 24) & 0xFF_FFFF, r.global_tid & 0xFF_FFFF);
        if global_tid(pid, tid) != r.global_tid {
            return Err(Error::input(format!(
                "{}: globalTid {:#x} has bits the writer does not reproduce",
                path.display(),
                r.global_tid
            )));
        }
        let n = i64::from(spec.kernels_per_range);
        let step = (r.end - r.start) / (n + 1);
        if step <= LAUNCH_NS {
            return Err(Error::input(format!(
                "{}: range {:?} ({} ns) is too short for {n} launches",
                path.display(),
                r.name,
                r.end - r.start
            )));
        }
        let cross = (spec.crossing_end)(&r.name);
        let mut launches: Vec<i64> = (1..=n).map(|i| r.start + i * step).collect();
        if cross {
            // Half the call inside the range, half after its end.
            launches.push(r.end - LAUNCH_NS / 2);
        }
        for &at in &launches {
            correlation += 1;
            w.call(&CallRec {
                start_ns: at,
                end_ns: at + LAUNCH_NS,
                event_class: event_class::RUNTIME,
                pid,
                tid,
                correlation_id: Some(correlation),
                name: launch,
            })?;
            let start = gpu_free.max(at + LAUNCH_NS + QUEUE_NS);
            gpu_free = start + spec.kernel_ns;
            w.kernel(&KernelRec {
                start_ns: start,
                end_ns: gpu_free,
                device: 0,
                stream: STREAM,
                pid,
                correlation_id: Some(correlation),
                demangled_name: kernel,
                short_name: kernel,
                graph_node_id: None,
                graph_id: None,
                grid: None,
            })?;
        }
        added.push(Added {
            name: r.name,
            global_tid: r.global_tid,
            pid,
            tid,
            start_ns: r.start,
            end_ns: r.end,
            kernels: launches.len() as u32,
            busy_ns: launches.len() as i64 * spec.kernel_ns,
        });
    }
    w.set_export_meta(
        "DERIVED_BY",
        "stepgate synth augment: GPU rows added to a real capture without a GPU",
    )?;
    w.finish()?;
    Ok(added)
}
