//! The stepgate binary: the library's entry (`stepgate::entry::main`) on the process's
//! arguments, its exit code the process's.

use std::process::ExitCode;

fn main() -> ExitCode {
    ExitCode::from(stepgate::entry::main(std::env::args_os()))
}
