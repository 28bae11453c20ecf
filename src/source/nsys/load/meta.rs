//! Export metadata (nsys and schema versions, CUDA graph trace mode), devices and
//! process names.

use std::path::Path;

use rusqlite::Connection;

use super::super::queries;
use super::super::schema::{newer_schema_warning, Schema};
use super::open::sql_error;
use super::{gid_pid, int, prepare};
use crate::exit::Result;
use crate::wire::trace::{DeviceInfo, TraceMeta};

/// `(pwGpuId, id)` of the GPUs that state a PerfWorks id (what GPU metrics name a GPU by,
/// docs/nsys-format.md §10).
pub(super) type PerfWorksIds = Vec<(i64, i64)>;

/// The report's GPUs, and their PerfWorks ids.
pub(super) fn load_devices(
    conn: &Connection,
    schema: &Schema,
    path: &Path,
) -> Result<(Vec<DeviceInfo>, PerfWorksIds)> {
    let mut out: Vec<DeviceInfo> = Vec::new();
    let mut pw_ids = Vec::new();
    if let Some(mut st) = prepare(conn, schema, &queries::GPUS, path)? {
        let err = |e| sql_error(path, "gpus", e);
        let mut rows = st.query([]).map_err(err)?;
        while let Some(r) = rows.next().map_err(err)? {
            let Some(id) = int(r, 0).map_err(err)? else {
                continue;
            };
            if let Some(pw) = int(r, 5).map_err(err)? {
                pw_ids.push((pw, id));
            }
            if out.iter().any(|d| d.id == id) {
                continue; // several vmIds may list one device id
            }
            out.push(DeviceInfo {
                id,
                name: r.get::<_, Option<String>>(1).ok().flatten(),
                memory_bandwidth_bytes_per_s: int(r, 2)
                    .map_err(err)?
                    .filter(|&v| v > 0)
                    .map(|v| v as f64),
                sm_count: int(r, 3).map_err(err)?.filter(|&v| v > 0),
                total_memory_bytes: int(r, 4).map_err(err)?.filter(|&v| v > 0),
            });
        }
    }
    Ok((out, pw_ids))
}

pub(super) fn load_meta(
    conn: &Connection,
    schema: &Schema,
    path: &Path,
    meta: &mut TraceMeta,
) -> Result<()> {
    if let Some(mut st) = prepare(conn, schema, &queries::EXPORT_META, path)? {
        let err = |e| sql_error(path, "export_meta", e);
        let mut rows = st.query([]).map_err(err)?;
        while let Some(r) = rows.next().map_err(err)? {
            let name: String = r.get(0).map_err(err)?;
            let value: Option<String> = r.get(1).ok().flatten();
            match name.as_str() {
                "EXPORT_PRODUCT_VERSION" => meta.tool_version = value,
                "EXPORT_SCHEMA_VERSION" => meta.schema_version = value,
                _ => {}
            }
        }
    }
    if let Some(mut st) = prepare(conn, schema, &queries::CAPTURE_META, path)? {
        let err = |e| sql_error(path, "capture_meta", e);
        let mut rows = st.query([]).map_err(err)?;
        while let Some(r) = rows.next().map_err(err)? {
            let name: String = r.get(0).map_err(err)?;
            let value: Option<String> = r.get(1).ok().flatten();
            // The 2026.1+ unprefixed key wins over a per-process one.
            if meta.cuda_graph_trace_mode.is_none() || !name.starts_with("PROCESS_") {
                if let Some(v) = value.filter(|v| !v.is_empty()) {
                    meta.cuda_graph_trace_mode = Some(v);
                }
            }
        }
    }
    if let Some(mut st) = prepare(conn, schema, &queries::PROCESSES, path)? {
        let err = |e| sql_error(path, "processes", e);
        let mut rows = st.query([]).map_err(err)?;
        while let Some(r) = rows.next().map_err(err)? {
            let pid = match int(r, 1).map_err(err)? {
                Some(p) => p,
                None => match int(r, 0).map_err(err)? {
                    Some(g) => gid_pid(g),
                    None => continue,
                },
            };
            if let Some(name) = r.get::<_, Option<String>>(2).ok().flatten() {
                meta.process_names.push((pid, name));
            }
        }
        meta.process_names.sort();
        meta.process_names.dedup();
    }
    if let Some(w) = meta
        .schema_version
        .as_deref()
        .and_then(newer_schema_warning)
    {
        meta.warnings.push(w);
    }
    Ok(())
}
