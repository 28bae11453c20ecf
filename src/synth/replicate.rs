//! Scale a real export in time: copy the file (same DDL, every table), then append
//! `copies - 1` shifted copies of its event rows inside SQLite (`INSERT … SELECT`), each
//! moved by one period (the fixture's span plus a gap) and with correlation ids offset per
//! copy, so the real mix of runtime and NVTX rows per kernel is kept (the `analyze`
//! benchmark inputs). The fixture's correlation ids are first renumbered densely (the
//! same id in every table keeps one number), so thousands of copies stay within the 32
//! bits CUPTI gives a correlation id, as a real capture of that size would.

use std::path::Path;

use rusqlite::Connection;

use crate::exit::{Error, Result};
use crate::wire::synth::Replicated;

fn err(e: rusqlite::Error) -> Error {
    Error::input(format!("replicating the export failed: {e}"))
}

/// Number of copies of `fixture` needed to reach at least `kernels` kernel rows.
pub fn copies_for_kernels(fixture: &Path, kernels: u64) -> Result<u64> {
    let c = Connection::open_with_flags(fixture, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
        .map_err(err)?;
    let n: i64 = c
        .query_row("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL", [], |r| {
            r.get(0)
        })
        .map_err(err)?;
    if n <= 0 {
        return Err(Error::input(format!(
            "{}: has no kernels to replicate",
            fixture.display()
        )));
    }
    Ok(kernels.div_ceil(n as u64).max(1))
}

/// Write `out` as `copies` back-to-back copies of `fixture`'s event rows.
pub fn replicate(fixture: &Path, copies: u64, out: &Path) -> Result<Replicated> {
    if copies == 0 {
        return Err(Error::input("--copies must be at least 1"));
    }
    if out.exists() {
        std::fs::remove_file(out)?;
    }
    std::fs::copy(fixture, out)?;
    let c = Connection::open(out).map_err(err)?;
    c.execute_batch(
        "PRAGMA foreign_keys = OFF; PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; PRAGMA cache_size = -262144;",
    )
    .map_err(err)?;

    // Every table with start and end columns is an event table to replicate.
    let mut tables: Vec<(String, Vec<String>)> = Vec::new();
    {
        let mut st = c
            .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
            .map_err(err)?;
        let names: Vec<String> = st
            .query_map([], |r| r.get(0))
            .map_err(err)?
            .collect::<rusqlite::Result<_>>()
            .map_err(err)?;
        let mut ti = c
            .prepare("SELECT name FROM pragma_table_info(?1)")
            .map_err(err)?;
        for n in names {
            let cols: Vec<String> = ti
                .query_map([&n], |r| r.get(0))
                .map_err(err)?
                .collect::<rusqlite::Result<_>>()
                .map_err(err)?;
            if cols.iter().any(|c| c == "start") && cols.iter().any(|c| c == "end") {
                tables.push((n, cols));
            }
        }
    }
    let max_corr = renumber_correlations(&c, &tables)?;
    let (mut lo, mut hi) = (i64::MAX, i64::MIN);
    for (t, _) in &tables {
        let (a, b): (Option<i64>, Option<i64>) = c
            .query_row(
                &format!("SELECT min(start), max(coalesce(end, start)) FROM {t}"),
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .map_err(err)?;
        if let (Some(a), Some(b)) = (a, b) {
            lo = lo.min(a);
            hi = hi.max(b);
        }
    }
    if lo > hi {
        return Err(Error::input(format!(
            "{}: has no event rows",
            fixture.display()
        )));
    }
    // One fixture span plus a 1 ms gap between copies; ids rounded up to a power of ten
    // so a copy's ids are readable (copy k = original + k × stride).
    let period_ns = hi - lo + 1_000_000;
    let mut correlation_stride = 10i64;
    while correlation_stride <= max_corr {
        correlation_stride *= 10;
    }

    c.execute_batch("BEGIN").map_err(err)?;
    for (t, cols) in &tables {
        let orig_max: i64 = c
            .query_row(
                &format!("SELECT coalesce(max(rowid), 0) FROM {t}"),
                [],
                |r| r.get(0),
            )
            .map_err(err)?;
        let select: Vec<String> = cols
            .iter()
            .map(|col| match col.as_str() {
                "start" | "end" => format!("\"{col}\" + ?1"),
                // 0 and NULL are "no id" (docs/nsys-format.md): they stay so.
                "correlationId" => {
                    format!("CASE WHEN \"{col}\" = 0 THEN 0 ELSE \"{col}\" + ?2 END")
                }
                _ => format!("\"{col}\""),
            })
            .collect();
        let quoted: Vec<String> = cols.iter().map(|c| format!("\"{c}\"")).collect();
        let sql = format!(
            "INSERT INTO {t} ({}) SELECT {} FROM {t} WHERE rowid <= ?3 ORDER BY rowid",
            quoted.join(", "),
            select.join(", ")
        );
        let mut st = c.prepare(&sql).map_err(err)?;
        for k in 1..copies as i64 {
            st.execute(rusqlite::params![
                k * period_ns,
                k * correlation_stride,
                orig_max
            ])
            .map_err(err)?;
        }
    }
    c.execute_batch("COMMIT").map_err(err)?;
    let mut rows = Vec::new();
    for (t, _) in &tables {
        let n: i64 = c
            .query_row(&format!("SELECT count(*) FROM {t}"), [], |r| r.get(0))
            .map_err(err)?;
        rows.push((t.clone(), n));
    }
    Ok(Replicated {
        copies,
        period_ns,
        correlation_stride,
        rows,
    })
}

/// Renumber the correlation ids of every table that has them to 1..=n in id order (one
/// map for all tables, so a call and its kernels keep sharing an id; 0 and NULL stay),
/// and return n, the largest id now.
fn renumber_correlations(c: &Connection, tables: &[(String, Vec<String>)]) -> Result<i64> {
    let with: Vec<&str> = tables
        .iter()
        .filter(|(_, cols)| cols.iter().any(|c| c == "correlationId"))
        .map(|(t, _)| t.as_str())
        .collect();
    if with.is_empty() {
        return Ok(0);
    }
    let union: Vec<String> = with
        .iter()
        .map(|t| format!("SELECT correlationId AS id FROM {t} WHERE correlationId > 0"))
        .collect();
    c.execute_batch(&format!(
        "CREATE TEMP TABLE corr_map (old INTEGER PRIMARY KEY, new INTEGER NOT NULL);
         INSERT INTO corr_map (old, new)
           SELECT id, row_number() OVER (ORDER BY id) FROM ({}) GROUP BY id;",
        union.join(" UNION ALL ")
    ))
    .map_err(err)?;
    for t in &with {
        c.execute(
            &format!(
                "UPDATE {t} SET correlationId = \
                 (SELECT new FROM corr_map WHERE old = {t}.correlationId) \
                 WHERE correlationId > 0"
            ),
            [],
        )
        .map_err(err)?;
    }
    let n: Option<i64> = c
        .query_row("SELECT max(new) FROM corr_map", [], |r| r.get(0))
        .map_err(err)?;
    c.execute_batch("DROP TABLE corr_map").map_err(err)?;
    Ok(n.unwrap_or(0))
}
