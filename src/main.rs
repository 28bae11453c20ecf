//! The stepgate binary: parse flags, run one subcommand, map its outcome to an exit code.

use std::io::Write;
use std::process::ExitCode;

use clap::Parser;
use stepgate::exit::{self, Kind};

/// Test hook (documented in docs/hostile-inputs.md): when this variable is set, the run
/// panics on purpose after parsing its flags, so the tests can check what a bug looks like
/// to a user (one line, exit 70).
const PANIC_HOOK_VAR: &str = "STEPGATE_TEST_PANIC";

/// One line on stderr; a closed or full stderr must not turn an exit code into a panic.
fn line(text: &str) {
    let _ = writeln!(std::io::stderr().lock(), "{text}");
}

/// An error as its one line on stderr.
fn error_line(msg: &str) {
    line(&format!(
        "stepgate: error: {}",
        stepgate::report::one_line(msg)
    ));
}

fn main() -> ExitCode {
    // A panic is a bug: one line and exit 70, never a backtrace and exit 101. The hook only
    // records it; the line is printed below once the panic has unwound (running the
    // destructors that remove temporary files), and not at all when it was caught.
    std::panic::set_hook(Box::new(exit::record_panic));
    let cli = match stepgate::cli::Cli::try_parse() {
        Ok(c) => c,
        // A numeric flag our own parser refused: its message already names the flag, the
        // value and the unit; clap would wrap it in three more lines.
        Err(e) if e.kind() == clap::error::ErrorKind::ValueValidation => {
            use clap::error::{ContextKind, ContextValue};
            let Some(src) = std::error::Error::source(&e) else {
                e.exit()
            };
            let src = src.to_string();
            let ctx = |k| match e.get(k) {
                Some(ContextValue::String(s)) => s.clone(),
                _ => String::new(),
            };
            if src.starts_with("--") {
                error_line(&src);
            } else {
                error_line(&format!(
                    "invalid value {:?} for {}: {src}",
                    ctx(ContextKind::InvalidValue),
                    ctx(ContextKind::InvalidArg)
                ));
            }
            return ExitCode::from(exit::INPUT);
        }
        // Help and version go to stdout as clap prints them; a bare `stepgate` shows help.
        Err(e)
            if !e.use_stderr()
                || e.kind() == clap::error::ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand =>
        {
            e.exit()
        }
        // Every other usage error in one line, like stepgate's own: clap's first paragraph,
        // its tip if any, and where to look; the usage block stays in --help.
        Err(e) => {
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
            error_line(&format!("{first}{tip} (see --help)"));
            return ExitCode::from(exit::INPUT);
        }
    };
    let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        if std::env::var_os(PANIC_HOOK_VAR).is_some() {
            panic!("{PANIC_HOOK_VAR} is set: panicking on purpose (a test hook)");
        }
        stepgate::cli::run(cli)
    }));
    // The dataset stores' read counts (STEPGATE_DEBUG_READS), recorded by the library as
    // each store closed, printed here before the outcome's line.
    for l in stepgate::store::reads::take_read_counts() {
        line(&format!("stepgate: debug: {l}"));
    }
    match run {
        Ok(Ok(code)) => ExitCode::from(code),
        Ok(Err(e)) if e.kind == Kind::Internal => {
            // A thread that panicked reaches here as an internal error: say the panic too.
            line(&match exit::recorded_panic() {
                Some(p) => p.line(Some(&e.message)),
                None => exit::panic_line(&e.message, None),
            });
            ExitCode::from(e.exit_code())
        }
        Ok(Err(e)) => {
            error_line(&e.message);
            ExitCode::from(e.exit_code())
        }
        Err(_) => {
            line(&match exit::recorded_panic() {
                Some(p) => p.line(None),
                None => exit::panic_line("a panic without a message", None),
            });
            ExitCode::from(exit::INTERNAL)
        }
    }
}
