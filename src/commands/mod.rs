//! One file per subcommand: parse args → call the library → render. Only these and `cli`
//! know clap.

pub mod analyze;
pub mod baseline;
pub mod capacity;
pub mod capture;
pub mod diff;
pub mod export;
pub mod floor;
pub mod floorflags;
pub mod gate;
pub mod launch_probe;
pub mod numbers;
pub mod stepflags;
pub mod steps;
pub mod trend;

use crate::cli::{Cli, Command};
use crate::exit::Result;

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
    }
}
