//! What a command made, before it is shown: the one result both surfaces take. The CLI's
//! `run` prints [`Document::text`] and exits with its code; the Python module returns it.

use crate::exit::{Error, Result};
use crate::pipeline::history::PendingExport;
use crate::report::fit::Fit;
use crate::report::Format;

/// How a result is rendered: the command line's `--format` at its terminal's width, or the
/// Python module's JSON with every line whole.
#[derive(Debug, Clone, Copy)]
pub struct Shown {
    pub format: Format,
    pub fit: Fit,
    /// The command line: warnings a JSON/CSV document carries are also said on stderr
    /// (the Python module hands them over in the document).
    pub cli: bool,
}

impl Shown {
    /// The command line: `format` fitted to stdout's terminal (whole lines with `wide`).
    pub fn cli(format: Format, wide: bool) -> Self {
        Shown {
            format,
            fit: Fit::terminal(wide, crate::commands::stdout_columns),
            cli: true,
        }
    }

    /// The Python module: the JSON document.
    pub fn json() -> Self {
        Shown {
            format: Format::Json,
            fit: Fit::wide(),
            cli: false,
        }
    }
}

/// One command's result: its report rendered, its exit code, and what comes after it
/// is out (a run to append, a refusal).
#[derive(Debug)]
pub struct Document {
    /// The report in the format asked for (stdout).
    pub text: String,
    /// The exit code the result means.
    pub exit_code: u8,
    /// The comparison as markdown (gate, diff): the PR comment.
    pub markdown: Option<String>,
    /// Lines for stderr besides warnings (export's repairs, gate's appended run).
    pub notes: Vec<String>,
    /// Appended once the result is out, so a run is never part of its own history.
    pending: Option<PendingExport>,
    /// Raised once the result is out (capacity: the plan shows the step no load solves).
    refusal: Option<Error>,
}

impl Document {
    pub fn new(text: String, exit_code: u8) -> Self {
        Document {
            text,
            exit_code,
            markdown: None,
            notes: Vec::new(),
            pending: None,
            refusal: None,
        }
    }

    /// With a run to append after the result is out.
    pub(crate) fn then_append(mut self, pending: Option<PendingExport>) -> Self {
        self.pending = pending;
        self
    }

    /// With a refusal to raise after the result is out.
    pub(crate) fn then_refuse(mut self, refusal: Option<Error>) -> Self {
        self.refusal = refusal;
        self
    }

    /// What follows the result: the pending run appended (its line added to
    /// [`Document::notes`]), then the refusal, if any, as the error.
    pub fn finish(&mut self) -> Result<()> {
        if let Some(pending) = self.pending.take() {
            self.notes.push(pending.append()?.to_string());
        }
        match self.refusal.take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}
