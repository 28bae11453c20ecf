//! PyTorch profiler (Kineto) traces (placeholder).

use std::path::Path;

use crate::exit::{Error, Result};
use crate::trace::Trace;

/// Whether a path names a Kineto trace by its extension.
pub fn looks_like_kineto(path: &Path) -> bool {
    let s = path.to_string_lossy();
    s.ends_with(".json") || s.ends_with(".json.gz")
}

pub fn load(path: &Path) -> Result<Trace> {
    Err(Error::input(format!(
        "{}: Kineto reader not built yet",
        path.display()
    )))
}
