//! Report readers: only this module knows file formats. Each fills the one [`Trace`] model.

use std::path::Path;

use crate::exit::Result;
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
    if path.is_dir() || kineto::looks_like_kineto(path) {
        kineto::load(path)
    } else {
        nsys::load_with(path, opts)
    }
}
