//! rocprofv3's rocpd databases (schema 3): read through the un-suffixed views
//! (`rocpd_kernel_dispatch`, `rocpd_memory_copy`, `rocpd_region`, `rocpd_event`,
//! `rocpd_info_*`), which rocprofiler-sdk's DDL defines over the `_<uuid>` tables.
//!
//! The host call ↔ GPU op link is `rocpd_event.stack_id` (the internal correlation id
//! rocprofiler-sdk writes on both the API call's event and the dispatch's event), never
//! `correlation_id` (the external id, usually 0). ROCTx ranges are `rocpd_region` rows
//! whose event category starts with `MARKER_`; their text is `extdata.message`.

use std::path::Path;

use rusqlite::{Connection, Row};

use crate::exit::Result;
use crate::source::nsys::load::{sql_error, Db};
use crate::source::LoadOptions;
use crate::trace::{Interner, Launch, OpKind, OpRow, OpsBuilder, Trace};
use crate::wire::trace::{DeviceInfo, SourceFormat, TraceMeta};

use super::queries::{V3_COPIES, V3_DISPATCHES, V3_GPUS, V3_PROCESSES, V3_REGIONS};

pub(super) fn load(db: &Db, conn: &Connection, path: &Path, opts: &LoadOptions) -> Result<Trace> {
    let t0 = super::origin(
        conn,
        path,
        &[
            ("rocpd_kernel_dispatch", "start"),
            ("rocpd_memory_copy", "start"),
            ("rocpd_region", "start"),
        ],
    )?;
    let ((ops, dropped), host, names) = super::ops_and_host(
        db,
        conn,
        opts,
        |conn, names| read_ops(conn, path, opts, t0, names),
        |conn, names| read_regions(conn, path, opts, t0, names),
    )?;
    let mut meta = TraceMeta::new(SourceFormat::Rocpd, path.display().to_string());
    meta.schema_version = Some("3".to_owned());
    meta.tool_version = Some("rocprofv3 (rocpd)".to_owned());
    meta.process_names = processes(conn, path)?;
    if dropped > 0 {
        meta.warnings.push(format!(
            "{dropped} memory copies between host buffers (no GPU agent on either side) were \
             left out"
        ));
    }
    super::finish(ops, host, names, gpus(conn, path)?, meta)
}

/// Kernel dispatches and memory copies (times relative to `t0`), and how many copies had
/// no GPU on either side; no GPU work at all is an error.
fn read_ops(
    conn: &Connection,
    path: &Path,
    opts: &LoadOptions,
    t0: i64,
    names: &mut Interner,
) -> Result<(OpsBuilder, u64)> {
    let sql = |what: &'static str| move |e| sql_error(path, what, e);
    let mut ops = if opts.geometry {
        OpsBuilder::default().with_geometry()
    } else {
        OpsBuilder::default()
    };
    let mut st = conn
        .prepare(V3_DISPATCHES)
        .map_err(sql("reading dispatches"))?;
    let mut rows = st.query([]).map_err(sql("reading dispatches"))?;
    while let Some(r) = rows.next().map_err(sql("reading dispatches"))? {
        let name: String = r.get(5).map_err(sql("reading dispatches"))?;
        let name_id = names.intern(&name);
        let op = OpRow {
            device: r.get(2).map_err(sql("reading dispatches"))?,
            stream: r.get(3).map_err(sql("reading dispatches"))?,
            pid: r.get(4).map_err(sql("reading dispatches"))?,
            start_ns: r.get::<_, i64>(0).map_err(sql("reading dispatches"))? - t0,
            end_ns: r.get::<_, i64>(1).map_err(sql("reading dispatches"))? - t0,
            name_id,
            short_id: super::short_of(names, &name),
            kind: OpKind::Kernel,
            correlation_id: r.get(6).map_err(sql("reading dispatches"))?,
            graph_id: -1,
            bytes: 0,
        };
        ops.push_launch(op, geometry(r).map_err(sql("reading dispatches"))?);
    }
    drop(rows);
    let mut dropped = 0u64;
    let mut st = conn
        .prepare(V3_COPIES)
        .map_err(sql("reading memory copies"))?;
    let mut rows = st.query([]).map_err(sql("reading memory copies"))?;
    while let Some(r) = rows.next().map_err(sql("reading memory copies"))? {
        let Some(device) = r
            .get::<_, Option<i64>>(2)
            .map_err(sql("reading memory copies"))?
        else {
            dropped += 1;
            continue;
        };
        let name: String = r.get(5).map_err(sql("reading memory copies"))?;
        let name_id = names.intern(&super::copy_name(&name));
        ops.push_launch(
            OpRow {
                device,
                stream: r.get(3).map_err(sql("reading memory copies"))?,
                pid: r.get(4).map_err(sql("reading memory copies"))?,
                start_ns: r.get::<_, i64>(0).map_err(sql("reading memory copies"))? - t0,
                end_ns: r.get::<_, i64>(1).map_err(sql("reading memory copies"))? - t0,
                name_id,
                short_id: name_id,
                kind: OpKind::Memcpy,
                correlation_id: r.get(6).map_err(sql("reading memory copies"))?,
                graph_id: -1,
                bytes: r.get(7).map_err(sql("reading memory copies"))?,
            },
            Launch::default(),
        );
    }
    drop(rows);
    if ops.is_empty() {
        return Err(super::no_ops(path));
    }
    Ok((ops, dropped))
}

/// HIP calls and ROCTx ranges from `rocpd_region` (times relative to `t0`).
fn read_regions(
    conn: &Connection,
    path: &Path,
    opts: &LoadOptions,
    t0: i64,
    names: &mut Interner,
) -> Result<super::Host> {
    let sql = |what: &'static str| move |e| sql_error(path, what, e);
    let mut host = super::Host::default();
    let mut st = conn.prepare(V3_REGIONS).map_err(sql("reading regions"))?;
    let mut rows = st.query([]).map_err(sql("reading regions"))?;
    while let Some(r) = rows.next().map_err(sql("reading regions"))? {
        let category: String = r.get(6).map_err(sql("reading regions"))?;
        let region = if category.starts_with("MARKER_") {
            let Some(text) = r
                .get::<_, Option<String>>(7)
                .map_err(sql("reading regions"))?
            else {
                continue;
            };
            super::Region::Marker(text)
        } else if category.starts_with("HIP_") {
            // HIP runtime and compiler calls are what launches work; HSA, RCCL and
            // rocDecode regions are other layers (the dispatch links to the HIP call).
            super::Region::Call {
                name: r.get(4).map_err(sql("reading regions"))?,
                link: r.get(5).map_err(sql("reading regions"))?,
            }
        } else {
            continue;
        };
        let at = super::Span::read(r, t0).map_err(sql("reading regions"))?;
        host.push(names, opts, at, region);
    }
    Ok(host)
}

/// Workgroups per grid dimension (rocpd's grid is in work-items) and the workgroup size.
fn geometry(r: &Row<'_>) -> rusqlite::Result<Launch> {
    let mut v = [0u32; 6];
    for (i, slot) in v.iter_mut().enumerate() {
        *slot = r.get::<_, i64>(7 + i)?.clamp(0, u32::MAX as i64) as u32;
    }
    let blocks = |items: u32, size: u32| if size == 0 { 0 } else { items.div_ceil(size) };
    Ok(Launch {
        grid: [blocks(v[0], v[3]), blocks(v[1], v[4]), blocks(v[2], v[5])],
        block: [v[3], v[4], v[5]],
    })
}

/// The GPUs the database names (`rocpd_info_agent` rows of type GPU; agents repeat per
/// process, so one per `type_index`).
fn gpus(conn: &Connection, path: &Path) -> Result<Vec<DeviceInfo>> {
    let mut st = conn
        .prepare(V3_GPUS)
        .map_err(|e| sql_error(path, "reading agents", e))?;
    let rows = st
        .query_map([], |r| {
            Ok(DeviceInfo {
                id: r.get(0)?,
                name: r.get(1)?,
                ..DeviceInfo::default()
            })
        })
        .map_err(|e| sql_error(path, "reading agents", e))?;
    rows.collect::<rusqlite::Result<Vec<_>>>()
        .map_err(|e| sql_error(path, "reading agents", e))
}

/// OS pid → command line, where the database records it.
fn processes(conn: &Connection, path: &Path) -> Result<Vec<(i64, String)>> {
    let mut st = conn
        .prepare(V3_PROCESSES)
        .map_err(|e| sql_error(path, "reading processes", e))?;
    let rows = st
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .map_err(|e| sql_error(path, "reading processes", e))?;
    let mut out: Vec<(i64, String)> = rows
        .collect::<rusqlite::Result<_>>()
        .map_err(|e| sql_error(path, "reading processes", e))?;
    out.sort();
    out.dedup_by_key(|p| p.0);
    Ok(out)
}
