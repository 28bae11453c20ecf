//! Report readers: only this module knows file formats. Each fills the one [`Trace`] model.

use std::path::Path;

use crate::exit::{Error, Result};
use crate::trace::Trace;

pub mod kineto;
pub mod nsys;

pub use nsys::LoadOptions;

/// Load any supported report: an nsys SQLite export (or `.nsys-rep`/`.qdrep`, exported
/// through `nsys` when it is on PATH), a Kineto `.json`/`.json.gz`, or a directory of
/// per-rank Kineto traces.
pub fn load(path: &Path) -> Result<Trace> {
    load_with(path, &LoadOptions::all())
}

/// Load only what a command needs. The options bound what is read from nsys exports
/// (SQL can skip millions of rows); Kineto traces are streamed whole either way.
pub fn load_with(path: &Path, opts: &LoadOptions) -> Result<Trace> {
    check_readable_kind(path)?;
    let mut trace = if path.is_dir() || kineto::looks_like_kineto(path) {
        kineto::load(path)
    } else {
        nsys::load_with(path, opts)
    }?;
    warn_ambiguous_launches(&mut trace);
    Ok(trace)
}

/// Print a loaded trace's warnings to stderr, one `warning: …` line each, for commands
/// whose own output has no place for them (a failed stderr write is ignored: warnings
/// must never turn a result into a crash).
pub fn print_warnings(trace: &Trace) {
    use std::io::Write;
    let mut err = std::io::stderr().lock();
    for w in &trace.meta.warnings {
        let _ = writeln!(err, "warning: {w}");
    }
}

/// Refuse what is not a regular file or a directory before anything opens it: opening a
/// FIFO blocks until a writer appears (forever, in CI), and a pipe or device can be read
/// only once while the readers sniff the first bytes and then read the file again.
pub fn check_readable_kind(path: &Path) -> Result<()> {
    let p = path.display();
    let meta = std::fs::metadata(path).map_err(|e| {
        Error::input(format!(
            "{p}: cannot read it ({e}); pass an nsys export (.sqlite, .nsys-rep), a Kineto \
             trace (.json, .json.gz) or a directory of traces"
        ))
    })?;
    let ft = meta.file_type();
    if ft.is_file() || ft.is_dir() {
        return Ok(());
    }
    let what = kind_name(&ft);
    Err(Error::input(format!(
        "{p}: is {what}, not a regular file: stepgate reads a report more than once, so \
         save it to a file first (e.g. `cat … > report.json`) and pass that file"
    )))
}

#[cfg(unix)]
fn kind_name(ft: &std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if ft.is_fifo() {
        "a pipe (a FIFO or a process substitution such as <(…))"
    } else if ft.is_char_device() {
        "a character device"
    } else if ft.is_block_device() {
        "a block device"
    } else if ft.is_socket() {
        "a socket"
    } else {
        "not a regular file"
    }
}

#[cfg(not(unix))]
fn kind_name(_: &std::fs::FileType) -> &'static str {
    "not a regular file"
}

/// Several launch calls of one process (and one API) sharing a correlation id make the
/// call → kernel join ambiguous: every such call claims every kernel of that id, so a
/// step would count kernels it never launched. Detect it and say so; the numbers are
/// still reported, but flagged.
fn warn_ambiguous_launches(trace: &mut Trace) {
    if let Some((ids, calls)) = ambiguous_launches(trace) {
        trace.meta.warnings.push(format!(
            "{ids} correlation id(s) are shared by {calls} launch calls of the same process: \
             kernels with those ids cannot be matched to one launch, so per-step kernel \
             attribution of them is ambiguous (the report was likely rewritten or merged; \
             capture it again)"
        ));
    }
}

/// `(ids, calls)`: correlation ids carried by more than one launch call of one
/// (process, API), and how many calls carry them. `None` when there are none.
fn ambiguous_launches(trace: &Trace) -> Option<(u64, u64)> {
    use crate::trace::col;
    let c = &trace.calls;
    if c.height() == 0 {
        return None;
    }
    let pid = c.column(col::PID).ok()?.i64().ok()?;
    let corr = c.column(col::CORR).ok()?.i64().ok()?;
    let api = c.column(col::API).ok()?.u32().ok()?;
    let launch = c.column(col::IS_LAUNCH).ok()?.u32().ok()?;
    let mut keys: Vec<(i64, u32, i64)> = Vec::new();
    for (((p, k), a), l) in pid
        .iter()
        .zip(corr.iter())
        .zip(api.iter())
        .zip(launch.iter())
    {
        if let (Some(p), Some(k), Some(a), Some(1)) = (p, k, a, l) {
            if k >= 0 {
                keys.push((p, a, k));
            }
        }
    }
    keys.sort_unstable();
    let (mut ids, mut calls) = (0u64, 0u64);
    let mut i = 0;
    while i < keys.len() {
        let mut j = i + 1;
        while j < keys.len() && keys[j] == keys[i] {
            j += 1;
        }
        if j - i > 1 {
            ids += 1;
            calls += (j - i) as u64;
        }
        i = j;
    }
    (ids > 0).then_some((ids, calls))
}
