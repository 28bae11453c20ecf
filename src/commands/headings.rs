//! The headings every command's `--help` groups its options under, one spelling for all:
//! what is read, how steps are found, how the floor is priced, which history, what counts
//! as a regression, what is written, and the options every command takes.

pub const INPUT: &str = "Input";
pub const STEPS: &str = "Steps";
pub const FLOOR: &str = "Floor (model and GPU)";
pub const HISTORY: &str = "History (gate --history)";
pub(crate) const THRESHOLDS: &str = "Thresholds";
pub(crate) const OUTPUT: &str = "Output";
pub(crate) const EXPORT: &str = "Export (append this run to a dataset)";
pub(crate) const GLOBAL: &str = "Global (every command)";

/// What `-h` ends with: the rest is one `--help` away.
pub(crate) const MORE: &str = "Examples, details and every option: --help";

/// `capacity`'s request shape, KV pool and latency targets.
pub(crate) const WORKLOAD: &str = "Workload and targets";
