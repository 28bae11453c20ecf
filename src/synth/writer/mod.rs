//! [`NsysWriter`]: writes an SQLite file with the real DDL of an nsys export (2026.2 copied
//! from a real file, 2022.2 copied from a real file, 2020.5 as docs/ingest.md describes it),
//! creating each event table at its first row as nsys does, in one transaction with
//! prepared statements so millions of rows write in seconds.

mod layout;
mod records;
mod rows;

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use rusqlite::{params, Connection};

use crate::exit::{Error, Result};

pub use layout::Layout;
use layout::{parse_ddl, T, TABLE_NAMES};
pub use records::{
    event_class, event_type, global_pid, global_tid, CallRec, GpuMetricsRec, GpuRec, GraphNodeRec,
    GraphTraceRec, KernelRec, MemcpyRec, MemsetRec, NvtxName, NvtxRec, ThroughputWindow,
};

/// Writes one synthetic export. Call [`NsysWriter::finish`] to commit.
pub struct NsysWriter {
    conn: Connection,
    layout: Layout,
    /// DDL by lowercase table name; ordered, so tables are created in the same order
    /// every run and the same command writes the same file.
    ddl: BTreeMap<String, String>,
    created: [bool; TABLE_NAMES.len()],
    strings: HashMap<String, i64>,
    next_string: i64,
    next_grid: i64,
    kernel_sql: String,
}

fn sql_err(e: rusqlite::Error) -> Error {
    Error::input(format!("writing the synthetic export failed: {e}"))
}

/// The kernel INSERT of each layout: ?1 start ?2 end ?3 device ?4 stream ?5 corr
/// ?6 globalPid ?7 demangled ?8 short ?9 graphNodeId ?10 graphId ?11 gridId ?12-?14 gridX-Z
/// (an unreferenced ?N may still be bound: SQLite counts parameters up to the largest index).
fn kernel_sql(layout: Layout) -> &'static str {
    match layout {
        Layout::Nsys2026_2 => {
            "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL (start, end, deviceId, contextId, \
                 streamId, correlationId, globalPid, demangledName, shortName, mangledName, \
                 launchType, registersPerThread, gridX, gridY, gridZ, blockX, blockY, blockZ, \
                 staticSharedMemory, dynamicSharedMemory, localMemoryPerThread, \
                 localMemoryTotal, gridId, graphNodeId, graphId, tensorSizeMinusOneElements) \
                 VALUES (?1, ?2, ?3, 1, ?4, ?5, ?6, ?7, ?8, ?7, 1, 32, ?12, ?13, ?14, 128, 1, 1, 0, \
                 0, 0, 0, ?11, ?9, ?10, '[]')"
        }
        Layout::Nsys2022_2 | Layout::Nsys2022_1 => {
            "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL (start, end, deviceId, contextId, \
                 streamId, correlationId, globalPid, demangledName, shortName, mangledName, \
                 launchType, registersPerThread, gridX, gridY, gridZ, blockX, blockY, blockZ, \
                 staticSharedMemory, dynamicSharedMemory, localMemoryPerThread, \
                 localMemoryTotal, gridId, graphNodeId) \
                 VALUES (?1, ?2, ?3, 1, ?4, ?5, ?6, ?7, ?8, ?7, 1, 32, ?12, ?13, ?14, 128, 1, 1, 0, \
                 0, 0, 0, ?11, ?9)"
        }
        Layout::Nsys2020_5 => {
            "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL (start, end, deviceId, contextId, \
                 streamId, correlationId, globalPid, demangledName, shortName, \
                 launchType, registersPerThread, gridX, gridY, gridZ, blockX, blockY, blockZ, \
                 staticSharedMemory, dynamicSharedMemory, localMemoryPerThread, \
                 localMemoryTotal, gridId, graphNodeId) \
                 VALUES (?1, ?2, ?3, 1, ?4, ?5, ?6, ?7, ?8, 1, 32, ?12, ?13, ?14, 128, 1, 1, 0, \
                 0, 0, 0, ?11, ?9)"
        }
    }
}

impl NsysWriter {
    /// Create (or replace) `path` and start writing the given layout.
    pub fn create(path: &Path, layout: Layout) -> Result<NsysWriter> {
        if path.exists() {
            std::fs::remove_file(path)?;
        }
        let (mut w, inserts) = NsysWriter::on(Connection::open(path).map_err(sql_err)?, layout)?;
        // Tables every export of the layout has, created up front.
        let eager: Vec<String> = w
            .ddl
            .keys()
            .filter(|n| {
                n.starts_with("enum_")
                    || n.starts_with("meta_data_")
                    || matches!(
                        n.as_str(),
                        "stringids" | "threadnames" | "processes" | "export_meta_data"
                    )
            })
            .cloned()
            .collect();
        for n in eager {
            w.conn.execute_batch(&w.ddl[&n]).map_err(sql_err)?;
        }
        for i in inserts {
            w.conn.execute_batch(&i).map_err(sql_err)?;
        }
        if let Some(t) = layout.export_meta_table() {
            let (product, schema) = layout.versions();
            w.export_meta(t, "EXPORT_PRODUCT_NAME", "NVIDIA Nsight Systems")?;
            w.export_meta(t, "EXPORT_PRODUCT_VERSION", product)?;
            w.export_meta(t, "EXPORT_SCHEMA_VERSION", schema)?;
            w.export_meta(t, "DERIVED_BY", "stepgate synth (synthetic, not a capture)")?;
        }
        Ok(w)
    }

    /// Open an existing export to add rows to it ([`crate::synth::augment`]): its tables
    /// and rows are kept, a table it lacks is created from `layout`'s DDL at its first row,
    /// and new strings get ids above the export's own.
    pub fn open(path: &Path, layout: Layout) -> Result<NsysWriter> {
        if !path.is_file() {
            return Err(Error::input(format!("{}: no such export", path.display())));
        }
        let (mut w, _) = NsysWriter::on(Connection::open(path).map_err(sql_err)?, layout)?;
        let existing: Vec<String> = {
            let mut st = w
                .conn
                .prepare("SELECT name FROM sqlite_master WHERE type = 'table'")
                .map_err(sql_err)?;
            let rows = st.query_map([], |r| r.get(0)).map_err(sql_err)?;
            rows.collect::<rusqlite::Result<_>>().map_err(sql_err)?
        };
        for (i, t) in TABLE_NAMES.iter().enumerate() {
            w.created[i] = existing.iter().any(|e| e.eq_ignore_ascii_case(t));
        }
        let strings: Vec<(i64, String)> = {
            let mut st = w
                .conn
                .prepare("SELECT id, value FROM StringIds")
                .map_err(sql_err)?;
            let rows = st
                .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
                .map_err(sql_err)?;
            rows.collect::<rusqlite::Result<_>>().map_err(sql_err)?
        };
        w.next_string = strings.iter().map(|(id, _)| id + 1).max().unwrap_or(1);
        w.strings = strings.into_iter().map(|(id, v)| (v, id)).collect();
        if w.created[T::Kernel as usize] {
            w.next_grid = w
                .conn
                .query_row(
                    "SELECT coalesce(max(gridId), 0) + 1 FROM CUPTI_ACTIVITY_KIND_KERNEL",
                    [],
                    |r| r.get(0),
                )
                .map_err(sql_err)?;
        }
        Ok(w)
    }

    /// A writer on `conn` for `layout`, in a transaction, with nothing written yet; also
    /// returns the layout's DDL INSERT statements (its enum rows).
    fn on(conn: Connection, layout: Layout) -> Result<(NsysWriter, Vec<String>)> {
        // A generated file is rebuilt on failure: no journal or fsync needed. nsys's DDL
        // declares REFERENCES to non-unique columns (kernel → runtime correlationId), which
        // SQLite rejects as a "foreign key mismatch" when enforcement is on: turn it off.
        conn.execute_batch(
            "PRAGMA foreign_keys = OFF; PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; PRAGMA cache_size = -65536; \
             BEGIN;",
        )
        .map_err(sql_err)?;
        conn.set_prepared_statement_cache_capacity(32);
        let mut ddl = BTreeMap::new();
        let mut inserts = Vec::new();
        for text in layout.ddl() {
            let (t, i) = parse_ddl(text);
            ddl.extend(t.into_iter().map(|(n, s)| (n.to_ascii_lowercase(), s)));
            inserts.extend(i);
        }
        let w = NsysWriter {
            conn,
            layout,
            ddl,
            created: [false; TABLE_NAMES.len()],
            strings: HashMap::new(),
            next_string: 1,
            next_grid: 1,
            kernel_sql: kernel_sql(layout).to_owned(),
        };
        Ok((w, inserts))
    }

    pub fn layout(&self) -> Layout {
        self.layout
    }

    fn export_meta(&mut self, table: &str, name: &str, value: &str) -> Result<()> {
        self.conn
            .execute(
                &format!("INSERT INTO {table} (name, value) VALUES (?1, ?2)"),
                params![name, value],
            )
            .map_err(sql_err)?;
        Ok(())
    }

    /// Set an export-metadata record (e.g. a newer `EXPORT_SCHEMA_VERSION`), replacing it.
    pub fn set_export_meta(&mut self, name: &str, value: &str) -> Result<()> {
        let Some(t) = self.layout.export_meta_table() else {
            return Err(Error::input("this layout has no export-metadata table"));
        };
        self.conn
            .execute(&format!("DELETE FROM {t} WHERE name = ?1"), [name])
            .map_err(sql_err)?;
        self.export_meta(t, name, value)
    }

    /// Record the CUDA graph trace mode (`Graph` or `Node`) the way the layout's nsys does:
    /// `CUDA_GRAPH_TRACE_OPTIONS:MODE` in META_DATA_CAPTURE (2026.1+); 2022 exports have no
    /// capture metadata, so nothing is written there.
    pub(crate) fn graph_trace_mode(&mut self, mode: &str) -> Result<()> {
        self.capture_meta("CUDA_GRAPH_TRACE_OPTIONS:MODE", mode)
    }

    /// Any META_DATA_CAPTURE record (ignored by layouts without that table).
    pub fn capture_meta(&mut self, name: &str, value: &str) -> Result<()> {
        if self.layout != Layout::Nsys2026_2 {
            return Ok(());
        }
        self.conn
            .execute(
                "INSERT INTO META_DATA_CAPTURE (name, value) VALUES (?1, ?2)",
                params![name, value],
            )
            .map_err(sql_err)?;
        Ok(())
    }

    fn ensure(&mut self, t: T) -> Result<()> {
        if self.created[t as usize] {
            return Ok(());
        }
        let name = TABLE_NAMES[t as usize];
        let Some(sql) = self.ddl.get(&name.to_ascii_lowercase()) else {
            return Err(Error::input(format!(
                "the {:?} layout has no {name} table",
                self.layout
            )));
        };
        self.conn.execute_batch(sql).map_err(sql_err)?;
        self.created[t as usize] = true;
        Ok(())
    }

    /// The StringIds id of `s`, adding it on first use.
    pub fn string(&mut self, s: &str) -> Result<i64> {
        if let Some(&id) = self.strings.get(s) {
            return Ok(id);
        }
        let id = self.next_string;
        self.next_string += 1;
        self.insert(
            "INSERT INTO StringIds (id, value) VALUES (?1, ?2)",
            params![id, s],
        )?;
        self.strings.insert(s.to_owned(), id);
        Ok(id)
    }

    /// A PROCESSES row; returns the process's globalPid.
    pub fn process(&mut self, pid: i64, name: &str) -> Result<i64> {
        let g = global_pid(pid);
        self.conn
            .execute(
                "INSERT INTO PROCESSES (globalPid, pid, name) VALUES (?1, ?2, ?3)",
                params![g, pid, name],
            )
            .map_err(sql_err)?;
        Ok(g)
    }

    /// A ThreadNames row; returns the thread's globalTid.
    pub fn thread(&mut self, pid: i64, tid: i64, name: &str) -> Result<i64> {
        let g = global_tid(pid, tid);
        let name_id = self.string(name)?;
        self.conn
            .execute(
                "INSERT INTO ThreadNames (nameId, priority, globalTid) VALUES (?1, 0, ?2)",
                params![name_id, g],
            )
            .map_err(sql_err)?;
        Ok(g)
    }

    /// One row through a cached statement (the caller has created its table).
    fn insert(&self, sql: &str, row: impl rusqlite::Params) -> Result<()> {
        self.conn
            .prepare_cached(sql)
            .and_then(|mut st| st.execute(row))
            .map_err(sql_err)?;
        Ok(())
    }

    /// Run raw SQL on the file being written (for oddities no method covers).
    pub fn execute_batch(&mut self, sql: &str) -> Result<()> {
        self.conn.execute_batch(sql).map_err(sql_err)
    }

    /// Commit and close.
    pub fn finish(self) -> Result<()> {
        self.conn.execute_batch("COMMIT;").map_err(sql_err)?;
        self.conn.close().map_err(|(_, e)| sql_err(e))
    }
}
