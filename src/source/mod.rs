//! Report readers: only this module knows file formats. Each fills the one [`Trace`] model.
//!
//! A reader is one row of [`READERS`]: it claims a path by content and loads it; what its
//! format can and cannot say is `SourceFormat::capabilities`, which the pipeline asks
//! instead of comparing formats. Adding a format is a module here, one row, one
//! `SourceFormat` variant with its capabilities.

use std::path::Path;

use crate::exit::{Error, Result};
use crate::trace::Trace;
use crate::wire::trace::SourceFormat;

pub mod kineto;
pub mod nsys;
pub mod prefilter;
pub mod progress;
pub mod rocpd;

/// One input format's reader.
pub struct Reader {
    pub format: SourceFormat,
    /// Whether this reader reads the path (asked in [`READERS`] order).
    pub claims: fn(&Path) -> bool,
    pub load: fn(&Path, &LoadOptions) -> Result<Trace>,
}

/// Every reader, in the order they are asked: Kineto (directories, JSON), rocpd (SQLite
/// with a `rocpd_metadata` table), then nsys, which claims the rest and says in one line
/// what it cannot read.
pub(crate) const READERS: &[Reader] = &[
    Reader {
        format: SourceFormat::Kineto,
        claims: kineto::looks_like_kineto,
        load: kineto::load_with,
    },
    Reader {
        format: SourceFormat::Rocpd,
        claims: rocpd::looks_like_rocpd,
        load: rocpd::load_with,
    },
    Reader {
        format: SourceFormat::Nsys,
        claims: |_| true,
        load: nsys::load_with,
    },
];

/// What to read besides the GPU ops (which are always read). The extras (launch
/// geometry, GPU metrics, input shapes) are off unless asked for: a 4M-kernel report
/// must not pay for columns nobody reads.
#[derive(Debug, Clone)]
pub struct LoadOptions {
    /// Host runtime/driver calls (nsys `CUPTI_ACTIVITY_KIND_RUNTIME` eventClass 0/1).
    pub calls: bool,
    /// NVTX ranges (push/pop and start/end). Kineto annotations are always read.
    pub ranges: bool,
    /// Keep only nsys ranges whose name matches (e.g. engine step patterns); `None` keeps all.
    pub range_filter: Option<regex::Regex>,
    /// Keep the nsys ranges of a named domain whatever `range_filter` says of their bare
    /// name: a `--steps REGEX` may match their `Domain:Name`, which discovery tests.
    pub range_filter_domains: bool,
    /// Kernel grid and block dimensions as six u32 op columns (`trace::col::GRID_X` …).
    pub geometry: bool,
    /// nsys GPU metrics (DRAM bandwidth, SM activity) into `Trace::gpu_metrics`.
    pub gpu_metrics: bool,
    /// Kineto operator input shapes (`record_shapes`) into `Trace::shapes`.
    pub shapes: bool,
    /// Every Kineto `python_function` span at least this long (ns), not only the engines'
    /// step functions (`RangeKind::PythonStack` ranges): the frames a long stall's host
    /// time is named by. `None` keeps the step functions alone; readers whose format has
    /// no Python frames ignore it.
    pub python_frames_min_ns: Option<i64>,
    /// Most threads a reader may read on at once (at least 1; 1 reads on the calling
    /// thread alone). From the plan (`--threads`), else the cores this process may use
    /// ([`default_threads`]). nsys reads its tables and rowid slices on up to this many; Kineto
    /// reads a plain trace in byte ranges on this many and inflates a gzipped one on a
    /// second thread (from 3, in byte ranges on the rest); rocpd reads its host regions on
    /// a second thread beside the GPU ops from 2.
    pub threads: usize,
    /// Test hook: rows per slice of a big table, replacing the loader's floor (2^19), so
    /// tests split small reports and check the output does not depend on the split.
    /// `None` keeps the floor; the binary takes it from `STEPGATE_TEST_MIN_SLICE_ROWS`.
    #[doc(hidden)]
    pub min_slice_rows: Option<i64>,
    /// Where the nsys reader reports the rows it has read (none by default; the command
    /// line draws a spinner from it).
    pub progress: progress::Progress,
}

/// The thread count a command runs on without `--threads`: the cores this process may use.
/// A plan resolves `--threads` once and carries the count to the loaders and every stage
/// after them: nothing reads it from process-wide state, so two calls of the Python module
/// at once each run on their own count.
///
/// `std::thread::available_parallelism` is the right count because on Linux it is not
/// the host's core count: it counts the calling thread's CPU affinity mask
/// (`sched_getaffinity`, so `taskset` and cpusets shrink it) and caps that by the cgroup
/// CPU quota (`cpu.max` in v2, the v1 cpu controller too), so a container limited to 2
/// CPUs on a 64-core host gets 2 (std's documentation; rust-lang/rust#89310 and #92697).
/// Its error (a platform that cannot say) means 1: the serial read, never a guess.
pub fn default_threads() -> usize {
    std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
}

/// `--threads N` where given (at least 1: a load always has its own thread), else
/// [`default_threads`].
pub fn threads_or_default(given: Option<usize>) -> usize {
    given.map_or_else(default_threads, |n| n.max(1))
}

impl Default for LoadOptions {
    fn default() -> Self {
        LoadOptions::all()
    }
}

impl LoadOptions {
    /// Ops, calls and all ranges (the extras stay off: set them to read them too).
    pub fn all() -> Self {
        LoadOptions {
            calls: true,
            ranges: true,
            range_filter: None,
            range_filter_domains: false,
            geometry: false,
            gpu_metrics: false,
            shapes: false,
            python_frames_min_ns: None,
            threads: default_threads(),
            min_slice_rows: nsys::test_min_slice_rows(),
            progress: progress::Progress::default(),
        }
    }

    /// GPU ops only (what `analyze` needs: it never pays for millions of NVTX rows).
    pub fn ops_only() -> Self {
        LoadOptions {
            calls: false,
            ranges: false,
            ..LoadOptions::all()
        }
    }

    /// The Python frames of at least `min_ns` (and whatever a reader always reads): the
    /// second load a long stall's frame is found in.
    pub(crate) fn python_frames(min_ns: i64) -> Self {
        LoadOptions {
            python_frames_min_ns: Some(min_ns),
            ..LoadOptions::ops_only()
        }
    }

    /// Everything, the extras included (what the diagnosis of a capture reads).
    pub fn everything() -> Self {
        LoadOptions {
            geometry: true,
            gpu_metrics: true,
            shapes: true,
            ..LoadOptions::all()
        }
    }
}

/// Load any supported report: an nsys SQLite export (or `.nsys-rep`/`.qdrep`, exported
/// through `nsys` when it is on PATH), a Kineto `.json`/`.json.gz`, a directory of
/// per-rank Kineto traces, or an AMD rocpd / RPD database.
pub fn load(path: &Path) -> Result<Trace> {
    load_with(path, &LoadOptions::all())
}

/// Load only what a command needs. The options bound what is read from nsys exports
/// (SQL can skip millions of rows); Kineto traces are streamed whole either way, and
/// the options there choose only the extras.
pub fn load_with(path: &Path, opts: &LoadOptions) -> Result<Trace> {
    check_readable_kind(path)?;
    crate::phases::mark("load: start");
    let reader = READERS
        .iter()
        .find(|r| (r.claims)(path))
        .unwrap_or(&READERS[READERS.len() - 1]);
    let mut trace = (reader.load)(path, opts)?;
    crate::phases::mark("load: done");
    warn_ambiguous_launches(&mut trace);
    crate::phases::mark("load: launch ids checked");
    Ok(trace)
}

/// Refuse what is not a regular file or a directory before anything opens it: opening a
/// FIFO blocks until a writer appears (forever, in CI), and a pipe or device can be read
/// only once while the readers sniff the first bytes and then read the file again.
pub(crate) fn check_readable_kind(path: &Path) -> Result<()> {
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
    let c = trace.calls_view().ok()?;
    let launches = || {
        (0..c.start_ns.len())
            .filter(|&i| c.is_launch(i) && c.correlation_id[i] >= 0)
            .map(|i| (c.pid[i], c.correlation_id[i], c.api(i)))
    };
    // (pid, id, api) packed in one u64 (32-bit ids, a non-negative id has 31 bits, the
    // API one): a third of the memory of the tuples, which a 16M-kernel report with 27M
    // host calls feels at its peak. Only equality matters, so -1 may sort last.
    let (ids, calls) = duplicates(
        launches()
            .map(|(p, k, a)| u64::from(p as u32) << 32 | (k as u64) << 1 | u64::from(a & 1))
            .collect(),
    );
    (ids > 0).then_some((ids, calls))
}

/// `(distinct keys seen more than once, rows carrying them)`. Equal keys are adjacent in
/// any sorted order; the calls of one process are already in (pid, id) order (ids grow
/// with launch time), so the sort runs only for interleaved processes or rewritten traces.
fn duplicates<T: Ord>(mut keys: Vec<T>) -> (u64, u64) {
    if !keys.is_sorted() {
        keys.sort_unstable();
    }
    let (mut ids, mut calls) = (0u64, 0u64);
    for run in keys.chunk_by(|a, b| a == b) {
        if run.len() > 1 {
            ids += 1;
            calls += run.len() as u64;
        }
    }
    (ids, calls)
}

#[cfg(test)]
mod tests {
    use super::duplicates;

    #[test]
    fn duplicate_keys_counted_in_any_order() {
        // 3 three times and 1 twice: two ids, five calls; order does not matter.
        assert_eq!(duplicates(vec![3u64, 1, 3, 2, 3, 1]), (2, 5));
        assert_eq!(duplicates(vec![1u64, 1, 2, 3, 3, 3]), (2, 5));
        assert_eq!(duplicates(Vec::<u64>::new()), (0, 0));
    }
}
