//! Report readers: only this module knows file formats. Each fills the one [`Trace`] model.

use std::path::Path;

use crate::exit::Result;
use crate::trace::Trace;

pub mod kineto;
pub mod nsys;

/// Load any supported report: an nsys SQLite export (or `.nsys-rep`/`.qdrep`, exported
/// through `nsys` when it is on PATH), a Kineto `.json`/`.json.gz`, or a directory of
/// per-rank Kineto traces.
pub fn load(path: &Path) -> Result<Trace> {
    if path.is_dir() || kineto::looks_like_kineto(path) {
        kineto::load(path)
    } else {
        nsys::load(path)
    }
}
