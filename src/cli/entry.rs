//! The program's entry, one for the binary (src/main.rs) and the wheel's console command
//! (the Python extension hands over its own arguments): parse flags with the binary's rules
//! for refusals, run one subcommand, print the outcome's one line, return the exit code.

use std::io::Write;

use crate::cli::Cli;
use crate::exit::{self, Kind};
use clap::Parser;

/// One line on stderr; a closed or full stderr must not turn an exit code into a panic.
fn line(text: &str) {
    let _ = writeln!(std::io::stderr().lock(), "{text}");
}

/// An error as the binary prints it.
fn error_line(msg: &str) -> String {
    format!("stepgate: error: {}", crate::text::one_line(msg))
}

/// A command line parsed as the binary parses it.
pub enum Parsed {
    Cli(Box<Cli>),
    /// Help or version: clap prints it on stdout, exit 0.
    Shown(clap::Error),
    /// A usage error: its one line (without the `stepgate: error: ` prefix), exit 2.
    Refused(String),
}

/// Parse `argv` (`argv[0]` is the program name) with the binary's rules for refusals.
pub fn parse<I, T>(argv: I) -> Parsed
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    match Cli::try_parse_from(argv) {
        Ok(c) => Parsed::Cli(Box::new(c)),
        // A numeric flag our own parser refused: its message names the flag and the unit.
        Err(e) if e.kind() == clap::error::ErrorKind::ValueValidation => {
            use clap::error::{ContextKind, ContextValue};
            let Some(src) = std::error::Error::source(&e) else {
                return Parsed::Refused(first_paragraph(&e));
            };
            let src = src.to_string();
            let ctx = |k| match e.get(k) {
                Some(ContextValue::String(s)) => s.clone(),
                _ => String::new(),
            };
            if src.starts_with("--") {
                Parsed::Refused(src)
            } else {
                Parsed::Refused(format!(
                    "invalid value {:?} for {}: {src}",
                    ctx(ContextKind::InvalidValue),
                    ctx(ContextKind::InvalidArg)
                ))
            }
        }
        Err(e)
            if !e.use_stderr()
                || e.kind() == clap::error::ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand =>
        {
            Parsed::Shown(e)
        }
        Err(e) => Parsed::Refused(first_paragraph(&e)),
    }
}

/// clap's first paragraph and its tip, in one line, pointing at --help.
fn first_paragraph(e: &clap::Error) -> String {
    let text = e.render().to_string();
    let mut paras = text.split("\n\n").map(|p| {
        p.lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect::<Vec<_>>()
            .join(" ")
    });
    let first = paras.next().unwrap_or_default();
    let first = first.trim_start_matches("error: ");
    let tip = paras
        .find_map(|p| p.strip_prefix("tip: ").map(|t| format!("; {t}")))
        .unwrap_or_default();
    format!("{first}{tip} (see --help)")
}

/// Test hook (documented in docs/hostile-inputs.md): when this variable is set, the run
/// panics on purpose after parsing its flags, so the tests can check what a bug looks like
/// to a user (one line, exit 70).
const PANIC_HOOK_VAR: &str = "STEPGATE_TEST_PANIC";

/// `main` on `argv`; the exit code to leave with. A panic is a bug: one line and exit 70,
/// never a backtrace and exit 101. The hook only records it; the line is printed once the
/// panic has unwound (running the destructors that remove temporary files).
pub fn main<I, T>(argv: I) -> u8
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    std::panic::set_hook(Box::new(exit::record_panic));
    let cli = match parse(argv) {
        Parsed::Cli(c) => c,
        // Help and version as clap prints them (stdout; a bare `stepgate` shows help on
        // stderr with clap's usage code).
        Parsed::Shown(e) => {
            let _ = e.print();
            return u8::try_from(e.exit_code()).unwrap_or(exit::INPUT);
        }
        Parsed::Refused(msg) => {
            line(&error_line(&msg));
            return exit::INPUT;
        }
    };
    let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        if std::env::var_os(PANIC_HOOK_VAR).is_some() {
            panic!("{PANIC_HOOK_VAR} is set: panicking on purpose (a test hook)");
        }
        crate::cli::run(*cli)
    }));
    // The phase marks (STEPGATE_PHASES), recorded by the library as each stage ended.
    for l in crate::phases::take() {
        line(&l);
    }
    // The dataset stores' read counts (STEPGATE_DEBUG_READS), recorded by the library as
    // each store closed, printed here before the outcome's line.
    for l in crate::store::reads::take_read_counts() {
        line(&format!("stepgate: debug: {l}"));
    }
    match run {
        Ok(Ok(code)) => code,
        Ok(Err(e)) if e.kind == Kind::Internal => {
            line(&match exit::recorded_panic() {
                Some(p) => p.line(Some(&e.message)),
                None => exit::panic_line(&e.message, None),
            });
            e.exit_code()
        }
        Ok(Err(e)) => {
            line(&error_line(&e.message));
            e.exit_code()
        }
        Err(_) => {
            line(&match exit::recorded_panic() {
                Some(p) => p.line(None),
                None => exit::panic_line("a panic without a message", None),
            });
            exit::INTERNAL
        }
    }
}
