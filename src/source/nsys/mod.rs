//! Nsight Systems reports: SQLite exports of nsys 2020.5 to 2026.2 (and `.nsys-rep` /
//! `.qdrep` reports, exported through `nsys` when it is on PATH) read into the [`Trace`].
//!
//! Layout: [`schema`] probes tables and columns, [`queries`] embeds `queries/*.sql` and fits
//! them to the export, [`mod@load`] reads rows, [`export`] turns a report into its SQLite export.
//! Every difference between nsys versions is documented in docs/nsys-format.md.

use std::io::Read;
use std::path::Path;

use crate::exit::{Error, Result};
use crate::trace::Trace;

pub mod export;
pub mod load;
pub mod queries;
pub mod schema;
mod strings;

pub use super::LoadOptions;
pub use load::{gid_pid, gid_tid, test_min_slice_rows};

/// Load everything from an nsys export or report.
pub fn load(path: &Path) -> Result<Trace> {
    load_with(path, &LoadOptions::all())
}

/// Load an nsys export (`.sqlite`) or report (`.nsys-rep`/`.qdrep`) with the given options.
pub fn load_with(path: &Path, opts: &LoadOptions) -> Result<Trace> {
    crate::source::check_readable_kind(path)?;
    match sniff(path)? {
        FileKind::Sqlite => load::load_sqlite(path, opts),
        FileKind::Report => {
            let sqlite = export::ensure_sqlite(path, &export::ExportOptions::from_env())?;
            if sniff(&sqlite)? != FileKind::Sqlite {
                return Err(Error::input(format!(
                    "{}: nsys export did not produce an SQLite file; run `nsys export --type \
                     sqlite {}` by hand and pass the .sqlite",
                    sqlite.display(),
                    path.display()
                )));
            }
            let mut t = load::load_sqlite(&sqlite, opts)?;
            t.meta.path = path.display().to_string();
            Ok(t)
        }
    }
}

/// What a path holds, by its first bytes (and extension for reports).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    Sqlite,
    /// `.nsys-rep` / `.qdrep`: starts with "NVIDIA Tegra Profiler Report" (docs/nsys-format.md
    /// §0); or an unimported `.qdstrm` (imported before export).
    Report,
}

/// Magic of `.nsys-rep` / `.qdrep` files.
pub(crate) const REPORT_MAGIC: &[u8] = b"NVIDIA Tegra Profiler Report";
const SQLITE_MAGIC: &[u8] = b"SQLite format 3\0";

/// Classify a path, or say in one line why it cannot be read.
pub fn sniff(path: &Path) -> Result<FileKind> {
    let p = path.display();
    let meta = std::fs::metadata(path).map_err(|e| {
        Error::input(format!(
            "{p}: cannot read it ({e}); pass an nsys SQLite export or .nsys-rep report"
        ))
    })?;
    if meta.is_dir() {
        return Err(Error::input(format!(
            "{p}: is a directory; pass an nsys SQLite export (.sqlite) or .nsys-rep report"
        )));
    }
    let mut head = [0u8; 100];
    let n = read_up_to(path, &mut head)?;
    let head = &head[..n];
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    if head.starts_with(REPORT_MAGIC)
        || export::is_qdstrm(path, head)
        || matches!(ext.as_deref(), Some("nsys-rep" | "qdrep"))
    {
        if head.starts_with(SQLITE_MAGIC) {
            return Ok(FileKind::Sqlite);
        }
        return Ok(FileKind::Report);
    }
    if !head.starts_with(SQLITE_MAGIC) {
        return Err(Error::input(format!(
            "{p}: not an SQLite file; pass the .sqlite written by `nsys export --type sqlite` \
             (or the .nsys-rep itself)"
        )));
    }
    check_sqlite_length(path, head, meta.len())?;
    Ok(FileKind::Sqlite)
}

fn read_up_to(path: &Path, buf: &mut [u8]) -> Result<usize> {
    let mut f = std::fs::File::open(path)
        .map_err(|e| Error::input(format!("{}: cannot open it ({e})", path.display())))?;
    let mut n = 0;
    while n < buf.len() {
        match f.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(Error::input(format!("{}: {e}", path.display()))),
        }
    }
    Ok(n)
}

/// A file shorter than its header's page count says is truncated: catch it before SQLite
/// reads zeros past the end (sqlite.org/fileformat2.html: page size at offset 16, page
/// count at 28, valid when the change counter at 24 equals "version-valid-for" at 92).
fn check_sqlite_length(path: &Path, head: &[u8], len: u64) -> Result<()> {
    let truncated = || {
        Error::input(format!(
            "{}: the SQLite file is truncated ({len} bytes); copy or export the report again \
             (`nsys export --type sqlite`)",
            path.display()
        ))
    };
    if head.len() < 100 {
        return Err(truncated());
    }
    let be32 = |o: usize| u32::from_be_bytes([head[o], head[o + 1], head[o + 2], head[o + 3]]);
    let page_size = match u16::from_be_bytes([head[16], head[17]]) {
        1 => 65536u64,
        s => s as u64,
    };
    let pages = be32(28) as u64;
    if be32(24) == be32(92) && pages > 0 && len < page_size * pages {
        return Err(truncated());
    }
    Ok(())
}
