//! One file per subcommand: flags → a plan → one call into [`crate::pipeline`] → render
//! and write. The flag structs several commands share live in the non-command modules
//! `stepflags`, `floorflags`, `historyflags` and `numbers` (and `values`, the clap value
//! lists of library enums); no command module imports another. Only these and `cli` know
//! clap.

pub mod analyze;
pub mod baseline;
pub mod capacity;
pub mod capture;
pub mod completions;
pub mod dataset;
pub mod decide;
pub mod diff;
pub mod doctor;
pub mod document;
pub mod explain;
pub mod export;
pub mod floor;
pub mod floorflags;
pub mod gate;
pub mod headings;
pub mod historyflags;
pub mod launch_probe;
pub mod man;
pub mod numbers;
pub mod policy;
pub mod presets;
mod spinner;
pub mod stdout;
pub mod stepflags;
pub mod steps;
pub mod trend;
pub mod values;
pub mod viewflags;

use std::path::Path;

use crate::exit::Result;

/// Write a command's files (flag outputs such as `--html`, `--json`), all or none.
pub(crate) fn write_files<B: AsRef<[u8]>>(files: &[(&Path, B)]) -> Result<()> {
    if files.is_empty() {
        return Ok(());
    }
    let refs: Vec<(&Path, &[u8])> = files.iter().map(|(p, b)| (*p, b.as_ref())).collect();
    crate::output::write_all(&refs)
}

/// Columns of the terminal stdout writes to, `None` when stdout is not a terminal (a
/// pipe, a file): the text renderers fit it (`report::fit`).
pub(crate) fn stdout_columns() -> Option<usize> {
    terminal_size::terminal_size_of(std::io::stdout()).map(|(w, _)| w.0 as usize)
}
