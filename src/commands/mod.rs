//! One file per subcommand: parse args → call the library → render. Only these and `cli`
//! know clap.

pub mod analyze;
pub mod baseline;
pub mod capacity;
pub mod capture;
pub mod completions;
pub mod diff;
pub mod export;
pub mod floor;
pub mod floorflags;
pub mod gate;
pub mod launch_probe;
pub mod man;
pub mod numbers;
pub mod presets;
pub mod stepflags;
pub mod steps;
pub mod trend;

use crate::cli::{Cli, Command};
use crate::exit::{Error, Result};

pub(crate) use stepflags::step_inputs;

/// Run one parsed command line; the returned value is the process exit code.
pub fn run(cli: Cli) -> Result<u8> {
    match cli.command {
        Command::Analyze(a) => analyze::run(&a),
        Command::Steps(a) => steps::run(&a),
        Command::Floor(a) => floor::run(&a),
        Command::Capacity(a) => capacity::run(&a),
        Command::Baseline(c) => baseline::run(&c),
        Command::Gate(a) => gate::run(&a),
        Command::Diff(a) => diff::run(&a),
        Command::Capture(a) => capture::run(&a),
        Command::LaunchProbe(a) => launch_probe::run(&a),
        Command::Export(a) => export::run(&a),
        Command::Trend(a) => trend::run(&a),
        Command::Presets(a) => presets::run(&a),
        Command::Completions(a) => completions::run(&a),
        Command::Man(a) => man::run(&a),
    }
}

/// A regex flag that does not compile, in one line: regex's own message spreads the
/// pattern, a caret and the reason over four lines; keep the reason.
pub(crate) fn regex_error(flag: &str, pattern: &str, e: &regex::Error) -> Error {
    let full = e.to_string();
    let reason = full
        .lines()
        .rev()
        .find_map(|l| l.trim().strip_prefix("error:"))
        .map(str::trim)
        .unwrap_or_else(|| full.lines().last().unwrap_or("invalid regex").trim());
    Error::input(format!(
        "{flag} {pattern:?} is not auto, marker, scheduler, python, sync, graphs, gaps or a valid regex ({reason}); \
         check the pattern's brackets and escapes"
    ))
}
