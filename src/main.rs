//! The stepgate binary: the command layer's entry (`stepgate::cli::entry::main`) on the process's
//! arguments, its exit code the process's.

use std::process::ExitCode;

fn main() -> ExitCode {
    ExitCode::from(stepgate::cli::entry::main(std::env::args_os()))
}
