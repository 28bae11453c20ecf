//! launch-probe (placeholder until its issue lands).

use std::path::Path;

use crate::exit::{Error, Result};

/// The minimum end-to-end per-launch cost recorded in a launch-probe JSON file, ns.
pub fn min_end_to_end_ns_from_file(path: &Path) -> Result<f64> {
    Err(Error::input(format!(
        "{}: launch-probe files are not readable yet",
        path.display()
    )))
}
