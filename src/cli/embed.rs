//! The command line as a library call, for a front end other than the binary (the Python
//! module): an argument vector in, plain values out. The flags are parsed and turned into
//! plans here, in the command layer, exactly as the binary does, so every default, range
//! check and refusal is the command line's; the caller names no parser type.

use crate::commands::document::{Document, Shown};
use crate::commands::{analyze, capacity, diff, doctor, export, floor, gate, steps};
use crate::exit::{Error, Result};

use super::entry::{parse as parse_argv, Parsed};
use super::{Cli, Command};

pub use super::entry::main;
pub use super::{long_helps, VERSION};
pub use crate::commands::historyflags::io_timeout;

/// A command line that parsed: run it with [`run`].
pub struct Call(Box<Cli>);

/// What one command returns instead of printing it.
pub struct Outcome {
    /// The subcommand's name (`steps`, `gate`, …).
    pub command: &'static str,
    /// The command's `--format json` document.
    pub json: String,
    /// The exit code the command line would return.
    pub exit_code: u8,
    /// The gate/diff markdown report (the PR comment).
    pub markdown: Option<String>,
    /// Lines the command line prints on stderr besides warnings (export's summary).
    pub notes: Vec<String>,
}

/// Parse `argv` (`argv[0]` is the program name) as the binary does; `Err` is the text the
/// command line would print for it (a refusal's one line, or help asked for), exit 2 for
/// a caller that wants no help text.
pub fn parse(argv: &[String]) -> std::result::Result<Call, String> {
    match parse_argv(argv) {
        Parsed::Cli(c) => Ok(Call(c)),
        Parsed::Shown(e) => Err(e.render().to_string()),
        Parsed::Refused(msg) => Err(msg),
    }
}

/// Run a parsed command the embedding offers (`steps`, `analyze`, `floor`, `capacity`,
/// `gate`, `diff`, `doctor`, `export`): its document as JSON at full width, finished as
/// the command line finishes it (a run appended, a refusal raised), returned.
pub fn run(call: Call) -> Result<Outcome> {
    let json = Shown::json();
    let (command, doc) = match call.0.command {
        Command::Steps(a) => ("steps", steps::document(&a, json)?),
        Command::Analyze(a) => ("analyze", analyze::document(&a, json)?),
        Command::Floor(a) => ("floor", floor::document(&a, json)?),
        Command::Capacity(a) => ("capacity", capacity::document(&a, json)?),
        Command::Gate(a) => ("gate", gate::document(&a, json)?),
        Command::Diff(a) => ("diff", diff::document(&a, json)?),
        Command::Doctor(a) => ("doctor", doctor::document(&a, json)?),
        Command::Export(a) => ("export", export::document(&a, json)?),
        _ => {
            return Err(Error::usage(
                "this command is not offered by the Python module: run the `stepgate` command",
            ))
        }
    };
    finished(command, doc)
}

fn finished(command: &'static str, mut doc: Document) -> Result<Outcome> {
    doc.finish()?;
    Ok(Outcome {
        command,
        json: doc.text,
        exit_code: doc.exit_code,
        markdown: doc.markdown,
        notes: doc.notes,
    })
}
