//! rocmProfileData RPD databases (schema 2, written by `rpd_tracer`/`runTracer.sh`):
//! `rocpd_op` (GPU ops: `gpuId`, `queueId`, description = kernel name, `opType`),
//! `rocpd_api` (HIP calls: pid, tid, apiName, args), linked by `rocpd_api_ops`, with
//! copy sizes in `rocpd_copyapi`. ROCTx ranges are `rocpd_api` rows named `UserMarker`
//! whose `args` is the range's text (rpd_tracer's roctx callback).

use std::path::Path;

use rusqlite::Connection;

use crate::exit::Result;
use crate::source::nsys::load::{sql_error, Db};
use crate::source::LoadOptions;
use crate::trace::{Interner, Launch, OpKind, OpRow, OpsBuilder, Trace};
use crate::wire::trace::{SourceFormat, TraceMeta};

use super::queries::{RPD_APIS, RPD_OPS};

/// The op kind an RPD `opType` names (`KernelExecution`, `CopyHostToDevice`…,
/// `FillBuffer`); barriers and markers are not GPU work.
fn kind(op_type: &str) -> Option<OpKind> {
    match op_type {
        "KernelExecution" => Some(OpKind::Kernel),
        t if t.starts_with("Copy") => Some(OpKind::Memcpy),
        "FillBuffer" => Some(OpKind::Memset),
        _ => None,
    }
}

pub(super) fn load(db: &Db, conn: &Connection, path: &Path, opts: &LoadOptions) -> Result<Trace> {
    let t0 = super::origin(conn, path, &[("rocpd_op", "start"), ("rocpd_api", "start")])?;
    let ((ops, skipped), host, names) = super::ops_and_host(
        db,
        conn,
        opts,
        |conn, names| read_ops(conn, path, opts, t0, names),
        |conn, names| read_apis(conn, path, opts, t0, names),
    )?;
    let mut meta = TraceMeta::new(SourceFormat::Rocpd, path.display().to_string());
    meta.schema_version = Some("2".to_owned());
    meta.tool_version = Some("rocmProfileData (RPD)".to_owned());
    if skipped > 0 {
        meta.warnings.push(format!(
            "{skipped} rocpd_op rows of other op types (barriers, markers) are not GPU work \
             and were left out"
        ));
    }
    super::finish(ops, host, names, Vec::new(), meta)
}

/// GPU ops from `rocpd_op` (times relative to `t0`), and how many rows were other op
/// types; no GPU work at all is an error.
fn read_ops(
    conn: &Connection,
    path: &Path,
    opts: &LoadOptions,
    t0: i64,
    names: &mut Interner,
) -> Result<(OpsBuilder, u64)> {
    let err = |what: &'static str| move |e| sql_error(path, what, e);
    let mut ops = if opts.geometry {
        OpsBuilder::default().with_geometry()
    } else {
        OpsBuilder::default()
    };
    let mut skipped = 0u64;
    let mut st = conn.prepare(RPD_OPS).map_err(err("reading rocpd_op"))?;
    let mut rows = st.query([]).map_err(err("reading rocpd_op"))?;
    while let Some(r) = rows.next().map_err(err("reading rocpd_op"))? {
        let op_type: String = r.get(5).map_err(err("reading rocpd_op"))?;
        let Some(kind) = kind(&op_type) else {
            skipped += 1;
            continue;
        };
        let descr: String = r.get(4).map_err(err("reading rocpd_op"))?;
        // Copies and fills carry an empty description: their op type names them, spelt as
        // nsys spells copies and fills.
        let name = match kind {
            OpKind::Memcpy => super::copy_name(&op_type),
            OpKind::Memset => "[memset]".to_owned(),
            _ if descr.is_empty() => op_type,
            _ => descr,
        };
        let name_id = names.intern(&name);
        let short_id = if kind == OpKind::Kernel {
            super::short_of(names, &name)
        } else {
            name_id
        };
        ops.push_launch(
            OpRow {
                device: r.get(2).map_err(err("reading rocpd_op"))?,
                stream: r.get(3).map_err(err("reading rocpd_op"))?,
                pid: r.get(7).map_err(err("reading rocpd_op"))?,
                start_ns: r.get::<_, i64>(0).map_err(err("reading rocpd_op"))? - t0,
                end_ns: r.get::<_, i64>(1).map_err(err("reading rocpd_op"))? - t0,
                name_id,
                short_id,
                kind,
                correlation_id: r.get(6).map_err(err("reading rocpd_op"))?,
                graph_id: -1,
                bytes: if kind == OpKind::Memcpy {
                    r.get(8).map_err(err("reading rocpd_op"))?
                } else {
                    0
                },
            },
            Launch::default(),
        );
    }
    drop(rows);
    if ops.is_empty() {
        return Err(super::no_ops(path));
    }
    Ok((ops, skipped))
}

/// HIP calls and user markers from `rocpd_api` (times relative to `t0`).
fn read_apis(
    conn: &Connection,
    path: &Path,
    opts: &LoadOptions,
    t0: i64,
    names: &mut Interner,
) -> Result<super::Host> {
    let err = |what: &'static str| move |e| sql_error(path, what, e);
    let mut host = super::Host::default();
    let mut st = conn.prepare(RPD_APIS).map_err(err("reading rocpd_api"))?;
    let mut rows = st.query([]).map_err(err("reading rocpd_api"))?;
    while let Some(r) = rows.next().map_err(err("reading rocpd_api"))? {
        let name: String = r.get(4).map_err(err("reading rocpd_api"))?;
        let region = if name == "UserMarker" {
            super::Region::Marker(r.get(5).map_err(err("reading rocpd_api"))?)
        } else if name.starts_with("hip") {
            super::Region::Call {
                name,
                link: r.get(6).map_err(err("reading rocpd_api"))?,
            }
        } else {
            continue;
        };
        let at = super::Span::read(r, t0).map_err(err("reading rocpd_api"))?;
        host.push(names, opts, at, region);
    }
    Ok(host)
}
