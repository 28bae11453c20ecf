//! The top-level command line and its dispatch: one subcommand per capability, each
//! defined in `commands/`.

pub mod embed;
pub mod entry;
#[cfg(feature = "synth")]
pub mod synth;

use clap::{Parser, Subcommand};

use crate::commands;
use crate::commands::capture::Next;
use crate::exit::{Error, Result};

const EXIT_CODES: &str = "Exit codes: 0 ok · 1 regression (gate), failed check (doctor), dead policy rule (policy check) · 2 usage or input error · \
3 inconclusive gate · 4 environment missing (no CUDA driver, no nsys, engine unreachable) · \
6 incomparable gate (GPU, model, TP or step kinds differ) · 5 an output could not be written (full disk, permission) · 70 internal error (a bug in \
stepgate) · 130 interrupted while writing outputs (none was replaced)";

/// `stepgate --version`: the package version and the commit it was built from (build.rs).
pub const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (",
    env!("STEPGATE_BUILD_COMMIT"),
    ")"
);

/// Where each decode step's GPU time went, how far it is from the roofline floor, and
/// whether a change made it slower.
#[derive(Debug, Parser)]
#[command(
    name = "stepgate",
    version = VERSION,
    about,
    after_help = "Exit codes and every option: --help · what a word means: stepgate explain",
    after_long_help = EXIT_CODES
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
    /// Threads a report is read on (default: the cores this process may use).
    ///
    /// Threads a report is read on (nsys: its tables and rowid slices of the big ones, on
    /// separate connections; Kineto: byte ranges of the events, a gzipped trace's once
    /// inflated; rocpd: host regions beside GPU ops). Default: the cores this process may
    /// use (its CPU affinity and cgroup quota, not the host's count); 1 reads on one
    /// thread. The output is the same at every count.
    #[arg(
        long,
        global = true,
        value_name = "N",
        allow_negative_numbers = true,
        value_parser = commands::numbers::threads_flag,
        help_heading = commands::headings::GLOBAL,
        hide_short_help = true
    )]
    pub threads: Option<usize>,
}

/// Every subcommand lets `-1` reach its flag's own check (which names the flag and says
/// what a valid value is) instead of clap's "unexpected argument '-1'".
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Per-GPU busy and idle time, kernels by exclusive time.
    ///
    /// Exclusive time: what a kernel alone kept the GPU busy (`stepgate explain exclusive`).
    #[command(allow_negative_numbers = true)]
    Analyze(commands::analyze::Args),
    /// Every engine step on the GPU, priced against its floor.
    ///
    /// Finds every engine step, projects it onto the GPU, prices it against its roofline
    /// floor and names its shape and next action.
    #[command(allow_negative_numbers = true)]
    Steps(commands::steps::Args),
    /// The analytic roofline floor of one decode step (no trace needed).
    #[command(allow_negative_numbers = true)]
    Floor(commands::floor::Args),
    /// Capacity planning: batch, step time, queueing, replicas and cost.
    #[command(allow_negative_numbers = true)]
    Capacity(commands::capacity::Args),
    /// Record a baseline from a report.
    #[command(subcommand)]
    Baseline(commands::baseline::Command),
    /// Compare a report with a baseline and fail on a real regression.
    #[command(allow_negative_numbers = true)]
    Gate(commands::gate::Args),
    /// Accept a gate's comparison (a reason is mandatory).
    ///
    /// Its run becomes the reference of later `gate --history` runs.
    Accept(commands::decide::Args),
    /// Reject a gate's comparison (a reason is mandatory).
    ///
    /// Its run never serves as a reference of later `gate --history` runs.
    Reject(commands::decide::Args),
    /// A markdown/JSON comparison of two reports or baselines.
    #[command(allow_negative_numbers = true)]
    Diff(commands::diff::Args),
    /// Check a capture before a gate reads it.
    ///
    /// GPU work, step markers, graph mode, the captured window.
    #[command(allow_negative_numbers = true)]
    Doctor(commands::doctor::Args),
    /// Which rules of a gate policy select nothing on a report.
    ///
    /// A rule that selects nothing on a report or baseline is likely a typo.
    #[command(subcommand)]
    Policy(commands::policy::Command),
    /// Arm the engine's profiler over HTTP (or around nsys).
    ///
    /// Optionally runs the engine under `nsys profile`.
    #[command(allow_negative_numbers = true)]
    Capture(commands::capture::Args),
    /// Measure this machine's per-launch cost with a null kernel.
    #[command(allow_negative_numbers = true)]
    LaunchProbe(commands::launch_probe::Args),
    /// Append a run to a Parquet dataset (run history).
    ///
    /// Parquet: the run history other tools can read too.
    #[command(allow_negative_numbers = true)]
    Export(commands::export::Args),
    /// Housekeeping of a run-history dataset (`dataset vacuum`).
    Dataset(commands::dataset::Args),
    /// One metric per run over time, change points marked.
    ///
    /// Read from a dataset `export` appended to.
    #[command(allow_negative_numbers = true)]
    Trend(commands::trend::Args),
    /// The GPU and model presets (--gpu, --model).
    ///
    /// With their numbers and sources.
    #[command(allow_negative_numbers = true)]
    Presets(commands::presets::Args),
    /// What a word of the outputs means (β, MBU, "of roof", …).
    ///
    /// Without a term: every term, one line each.
    Explain(commands::explain::Args),
    /// Print a shell completion script.
    ///
    /// For bash, zsh, fish, elvish or PowerShell.
    #[command(allow_negative_numbers = true)]
    Completions(commands::completions::Args),
    /// Print the manual page (roff), or one per subcommand.
    ///
    /// One per subcommand with --dir.
    #[command(allow_negative_numbers = true)]
    Man(commands::man::Args),
}

/// Each named subcommand's `--help` text, the command tree built once (the Python
/// functions' docstrings); an unknown name gives "".
pub fn long_helps(commands: &[String]) -> Vec<String> {
    let mut cmd = <Cli as clap::CommandFactory>::command();
    cmd.build();
    commands
        .iter()
        .map(|c| {
            cmd.find_subcommand_mut(c)
                .map(|s| s.render_long_help().to_string())
                .unwrap_or_default()
        })
        .collect()
}

/// Run one parsed command line; the returned value is the process exit code.
pub fn run(cli: Cli) -> Result<u8> {
    // `--threads` reaches each command's plan through its flag group (`from_global`); a
    // `capture --then` line without it keeps the outer one.
    let threads = cli.threads;
    match cli.command {
        Command::Analyze(a) => commands::analyze::run(&a),
        Command::Steps(a) => commands::steps::run(&a),
        Command::Floor(a) => commands::floor::run(&a),
        Command::Capacity(a) => commands::capacity::run(&a),
        Command::Baseline(c) => commands::baseline::run(&c),
        Command::Gate(a) => commands::gate::run(&a),
        Command::Diff(a) => commands::diff::run(&a),
        Command::Accept(a) => commands::decide::run(&a, crate::wire::decision::Outcome::Accepted),
        Command::Reject(a) => commands::decide::run(&a, crate::wire::decision::Outcome::Rejected),
        Command::Doctor(a) => commands::doctor::run(&a),
        Command::Policy(c) => commands::policy::run(&c),
        Command::Capture(a) => {
            // A --then command line that cannot parse is refused before the capture runs.
            if let Some(argv) = a.then_argv(std::path::Path::new("capture.sqlite"))? {
                parse_then(&argv)?;
            }
            match commands::capture::run(&a)? {
                Next::Exit(code) => Ok(code),
                Next::Then(argv) => {
                    let then = parse_then(&argv)?;
                    match (then.threads, threads) {
                        (None, Some(n)) => run(parse_then(&with_threads(&argv, n))?),
                        _ => run(then),
                    }
                }
            }
        }
        Command::LaunchProbe(a) => commands::launch_probe::run(&a),
        Command::Export(a) => commands::export::run(&a),
        Command::Dataset(a) => commands::dataset::run(&a),
        Command::Trend(a) => commands::trend::run(&a),
        Command::Presets(a) => commands::presets::run(&a),
        Command::Explain(a) => commands::explain::run(&a),
        Command::Completions(a) => {
            commands::completions::run(&a, <Cli as clap::CommandFactory>::command())
        }
        Command::Man(a) => commands::man::run(&a, <Cli as clap::CommandFactory>::command()),
    }
}

/// `argv` with `--threads n` before its subcommand (the outer command line's count, for a
/// `--then` line that gives none).
fn with_threads(argv: &[String], n: usize) -> Vec<String> {
    let mut out = argv.to_vec();
    let at = out.len().min(1);
    out.splice(at..at, ["--threads".to_owned(), n.to_string()]);
    out
}

/// The command line `capture --then` hands over (`stepgate steps|gate SQLITE …`), parsed
/// once; a refusal is one line naming `--then`.
fn parse_then(argv: &[String]) -> Result<Cli> {
    Cli::try_parse_from(argv).map_err(|e| {
        let text = e.to_string();
        let first = text
            .lines()
            .next()
            .unwrap_or("")
            .trim_start_matches("error: ")
            .to_owned();
        Error::usage(format!(
            "--then {}: {first}",
            argv.get(1).map_or("", String::as_str)
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `capture --then` line without `--threads` is run with the outer count, one with
    /// its own keeps it, and the subcommand's own flags are untouched.
    #[test]
    fn a_then_line_without_threads_gets_the_outer_count() {
        let argv: Vec<String> = ["stepgate", "steps", "c.sqlite", "--top", "3"]
            .map(String::from)
            .to_vec();
        let given = with_threads(&argv, 4);
        assert_eq!(given[..3], ["stepgate", "--threads", "4"]);
        let then = parse_then(&given).unwrap();
        assert_eq!(then.threads, Some(4));
        let Command::Steps(a) = then.command else {
            panic!("steps")
        };
        assert_eq!((a.top, a.step.plan(a.top).unwrap().find.workers), (3, 4));
        assert_eq!(parse_then(&argv).unwrap().threads, None);
    }
}
