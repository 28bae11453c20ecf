//! Nsight Systems SQLite exports (placeholder).

use std::path::Path;

use crate::exit::{Error, Result};
use crate::trace::Trace;

pub fn load(path: &Path) -> Result<Trace> {
    Err(Error::input(format!(
        "{}: nsys reader not built yet",
        path.display()
    )))
}
