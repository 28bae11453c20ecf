//! The commands Python calls: the CLI's own flag parsing (`Cli::try_parse_from`, so every
//! flag, default and refusal is the command line's), then the command's own
//! `stepgate::commands::<name>::document` (the function its `run` calls) with the result
//! as `--format json` at full width, returned instead of printed. The file outputs
//! (`--html`, `--markdown`, `--perfetto`, `--json`) are the command's, all or none.

use stepgate::cli::Command;
use stepgate::commands::document::{Document, Shown};
use stepgate::commands::{analyze, capacity, diff, doctor, export, floor, gate, steps};
use stepgate::exit::{Error, Result};

use crate::table::Spec;

/// What one command returns to Python.
pub struct Outcome {
    /// The command's `--format json` output.
    pub json: String,
    /// The exit code the command line would return.
    pub exit_code: u8,
    /// The gate/diff markdown report (the PR comment).
    pub markdown: Option<String>,
    /// Lines the command line prints on stderr besides warnings (export's summary).
    pub notes: Vec<String>,
    /// Where the report's tables are.
    pub tables: &'static [Spec],
}

const STEPS_TABLES: &[Spec] = &[
    Spec {
        name: "steps",
        parent: "/steps",
        child: None,
        keep: &[],
    },
    Spec {
        name: "kernels",
        parent: "/steps",
        child: Some("top_kernels"),
        keep: &[("index", "step"), ("series", "series"), ("kind", "kind")],
    },
    Spec {
        name: "classes",
        parent: "/groups",
        child: Some("classes"),
        keep: &[("group", "group")],
    },
];

const ANALYZE_TABLES: &[Spec] = &[
    Spec {
        name: "devices",
        parent: "/devices",
        child: None,
        keep: &[],
    },
    Spec {
        name: "kernels",
        parent: "/devices",
        child: Some("kernels_by_name"),
        keep: &[("device", "device")],
    },
];

const GATE_TABLES: &[Spec] = &[
    Spec {
        name: "rows",
        parent: "/groups",
        child: Some("metrics"),
        keep: &[("label", "group")],
    },
    Spec {
        name: "kernels",
        parent: "/groups",
        child: Some("kernels"),
        keep: &[("label", "group")],
    },
    Spec {
        name: "waterfall",
        parent: "/groups",
        child: Some("waterfall"),
        keep: &[("label", "group")],
    },
];

const DOCTOR_TABLES: &[Spec] = &[Spec {
    name: "findings",
    parent: "/findings",
    child: None,
    keep: &[],
}];

/// Run one parsed command the Python module offers.
pub fn run(cmd: Command) -> Result<Outcome> {
    let json = Shown::json();
    let (doc, tables) = match cmd {
        Command::Steps(a) => (steps::document(&a, json)?, STEPS_TABLES),
        Command::Analyze(a) => (analyze::document(&a, json)?, ANALYZE_TABLES),
        Command::Floor(a) => (floor::document(&a, json)?, &[][..]),
        Command::Capacity(a) => (capacity::document(&a, json)?, &[][..]),
        Command::Gate(a) => (gate::document(&a, json)?, GATE_TABLES),
        Command::Diff(a) => (diff::document(&a, json)?, GATE_TABLES),
        Command::Doctor(a) => (doctor::document(&a, json)?, DOCTOR_TABLES),
        Command::Export(a) => (export::document(&a, json)?, &[][..]),
        _ => {
            return Err(Error::usage(
                "this command is not offered by the Python module: run the `stepgate` command",
            ))
        }
    };
    outcome(doc, tables)
}

/// The document finished as the command line finishes it (a run appended, a refusal
/// raised), handed over instead of printed.
fn outcome(mut doc: Document, tables: &'static [Spec]) -> Result<Outcome> {
    doc.finish()?;
    Ok(Outcome {
        json: doc.text,
        exit_code: doc.exit_code,
        markdown: doc.markdown,
        notes: doc.notes,
        tables,
    })
}
