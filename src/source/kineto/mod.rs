//! PyTorch profiler (Kineto) Chrome traces from vLLM, SGLang or any torch program: one
//! `.json`/`.json.gz` file or a directory of per-rank files, streamed into [`Trace`].
//!
//! Mapping (docs/kineto-format.md): `kernel`/`gpu_memcpy`/`gpu_memset` → ops (device = `args.device`
//! or `pid`, stream = `args.stream` or `tid`); `cuda_runtime`/`cuda_driver` (HIP names on
//! ROCm) → calls, joined to ops by `args.correlation` only (flow events are ignored); CPU
//! `user_annotation` → `HostPushPop` ranges, `gpu_user_annotation` → `GpuAnnotation`
//! ranges with pid = device, `python_function` of an engine step function only →
//! `PythonStack` ranges; in the 2021 layout the `record_function` ranges among the
//! `Operator` events → `HostPushPop` ranges (§12); `cpu_op` input shapes only when asked
//! for (§11); correlation 0 is no id (§5). Times are integer ns relative to the file's
//! `baseTimeNanoseconds` (current Kineto) or to the Unix epoch (old absolute layout);
//! several ranks share the smallest base among them.

mod build;
mod bytes;
mod chunked;
mod event;
mod gzip;
mod header;
mod ids;
mod input;
mod names;
mod number;
mod ranks;
mod read;
mod scan;
mod shapes;
mod sink;
mod skip;
mod tape;

pub use header::engine_version_in;
pub use names::short_name;

use std::path::Path;

use crate::exit::{Error, Result};
use crate::source::LoadOptions;
use crate::trace::Trace;

/// Whether `path` is a Kineto trace: a directory, a `.json`/`.json.gz` name, or (other
/// names) content that starts with the gzip magic or a JSON `{`/`[`.
pub fn looks_like_kineto(path: &Path) -> bool {
    if path.is_dir() {
        return true;
    }
    let s = path.to_string_lossy();
    if s.ends_with(".json") || s.ends_with(".json.gz") {
        return true;
    }
    // nsys's own formats are never gzip or JSON; do not open them twice.
    if [".sqlite", ".nsys-rep", ".qdrep"]
        .iter()
        .any(|e| s.ends_with(e))
    {
        return false;
    }
    input::sniff(path) != input::Sniff::Other
}

/// Load one trace file, or every rank trace in a directory, into one [`Trace`].
pub fn load(path: &Path) -> Result<Trace> {
    load_with(path, &LoadOptions::all())
}

/// As [`load`], with the extras `opts` asks for (launch geometry, input shapes).
pub fn load_with(path: &Path, opts: &LoadOptions) -> Result<Trace> {
    crate::source::check_readable_kind(path)?;
    let mut col = build::Collector::new(opts);
    if path.is_dir() {
        let ranks = ranks::discover(path)?;
        col.warnings.extend(ranks.notes);
        let mut kept = 0;
        for f in &ranks.files {
            if read::read_file(&mut col, f, opts.threads)? == 0 {
                col.discard_file();
                col.warnings.push(format!(
                    "skipped {}: no GPU kernels in it",
                    f.file_name().unwrap_or_default().to_string_lossy()
                ));
            } else {
                kept += 1;
            }
        }
        if kept == 0 {
            return Err(Error::input(format!(
                "{}: no GPU kernels in any trace here: was the profiler run with CUDA activities?",
                path.display()
            )));
        }
    } else {
        read::read_file(&mut col, path, opts.threads)?;
    }
    col.finish(path)
}
