//! The stepgate binary: parse flags, run one subcommand, map its outcome to an exit code.

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = stepgate::cli::Cli::parse();
    match stepgate::commands::run(cli) {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("stepgate: error: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}
