//! The stepgate binary: parse flags, run one subcommand, map its outcome to an exit code.

use std::io::Write;
use std::process::ExitCode;

use clap::Parser;

/// One line on stderr; a closed or full stderr must not turn an exit code into a panic.
fn error_line(msg: &str) {
    let _ = writeln!(
        std::io::stderr().lock(),
        "stepgate: error: {}",
        stepgate::report::one_line(msg)
    );
}

fn main() -> ExitCode {
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
            return ExitCode::from(stepgate::exit::INPUT);
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
            return ExitCode::from(stepgate::exit::INPUT);
        }
    };
    match stepgate::commands::run(cli) {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            error_line(&e.message);
            ExitCode::from(e.exit_code())
        }
    }
}
