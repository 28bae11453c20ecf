//! `stepgate._native`: the stepgate library as a Python extension module. The Python
//! package (python/stepgate) builds each call's command line from keyword arguments and
//! calls [`run`]; the console command calls [`main`]. Work runs with the GIL released.

mod commands;
mod history_tables;
mod table;

use std::path::PathBuf;

use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;

use stepgate::embed;
use stepgate::exit::{self, Error};

create_exception!(
    _native,
    NativeError,
    PyException,
    "A stepgate error: args are (exit_code, message)."
);

/// One command's result, as the Python package wraps it.
#[pyclass(module = "stepgate._native", frozen)]
struct Outcome {
    #[pyo3(get)]
    json: String,
    #[pyo3(get)]
    exit_code: u8,
    #[pyo3(get)]
    markdown: Option<String>,
    #[pyo3(get)]
    notes: Vec<String>,
    tables: Vec<(String, Py<table::Table>)>,
}

#[pymethods]
impl Outcome {
    /// The report's tables, in order, as (name, table).
    #[getter]
    fn tables(&self, py: Python<'_>) -> Vec<(String, Py<table::Table>)> {
        self.tables
            .iter()
            .map(|(n, t)| (n.clone(), t.clone_ref(py)))
            .collect()
    }
}

/// The error as Python sees it: its exit code and the CLI's one line.
fn to_py(e: &Error) -> PyErr {
    let message = match e.kind {
        exit::Kind::Internal => exit::recorded_panic().map_or_else(
            || exit::panic_line(&e.message, None),
            |p| p.line(Some(&e.message)),
        ),
        _ => stepgate::report::one_line(&e.message),
    };
    NativeError::new_err((e.exit_code(), message))
}

/// Run the work of one call with the GIL released; a panic is exit 70, as in the CLI.
fn detached<T: Send>(
    py: Python<'_>,
    f: impl FnOnce() -> stepgate::exit::Result<T> + Send,
) -> PyResult<T> {
    let out = py.detach(|| std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)));
    match out {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(to_py(&e)),
        Err(_) => {
            let line = exit::recorded_panic().map_or_else(
                || exit::panic_line("a panic without a message", None),
                |p| p.line(None),
            );
            Err(NativeError::new_err((exit::INTERNAL, line)))
        }
    }
}

/// Run one command line (argv[0] is the program name) the way the Python functions do:
/// the report as JSON text, the tables built from it.
#[pyfunction]
fn run(py: Python<'_>, argv: Vec<String>) -> PyResult<Outcome> {
    let call = embed::parse(&argv).map_err(|msg| NativeError::new_err((exit::INPUT, msg)))?;
    // `--threads` travels in the command's own plan: a call without it runs on the cores
    // this process may use, whatever another call (at the same time or before) asked.
    let (out, tables) = detached(py, move || {
        let out = embed::run(call)?;
        let value: serde_json::Value = serde_json::from_str(&out.json)
            .map_err(|e| Error::internal(format!("the JSON report did not parse back: {e}")))?;
        let tables = table::from_report(&value, commands::tables_of(out.command));
        Ok((out, tables))
    })?;
    let tables = tables
        .into_iter()
        .map(|(n, t)| Ok((n, Py::new(py, t)?)))
        .collect::<PyResult<Vec<_>>>()?;
    Ok(Outcome {
        json: out.json,
        exit_code: out.exit_code,
        markdown: out.markdown,
        notes: out.notes,
        tables,
    })
}

/// The tables of a run-history dataset and the warnings about runs left out; a remote
/// dataset reached as `--storage-option` items and `--io-timeout` seconds say.
#[pyfunction]
#[allow(clippy::type_complexity)]
fn history(
    py: Python<'_>,
    dataset: PathBuf,
    storage_options: Vec<String>,
    io_timeout: String,
) -> PyResult<(Vec<(String, Py<table::Table>)>, Vec<String>)> {
    let (tables, warnings) = detached(py, move || {
        let timeout = embed::io_timeout(&io_timeout).map_err(stepgate::exit::Error::usage)?;
        let store = stepgate::store::StoreConfig::new(&storage_options, timeout)?;
        history_tables::read(&dataset, &store)
    })?;
    let tables = tables
        .into_iter()
        .map(|(n, t)| Ok((n, Py::new(py, t)?)))
        .collect::<PyResult<Vec<_>>>()?;
    Ok((tables, warnings))
}

/// The `stepgate` console command: the binary's main on these arguments; its exit code.
#[pyfunction]
fn main(py: Python<'_>, argv: Vec<String>) -> u8 {
    py.detach(move || embed::main(&argv))
}

/// Subcommands' `--help` texts (the docstrings of the Python functions), the command
/// tree built once; an unknown name gives "".
#[pyfunction]
fn help_all(commands: Vec<String>) -> Vec<String> {
    embed::long_helps(&commands)
}

/// The version `stepgate --version` prints.
#[pyfunction]
fn version() -> &'static str {
    embed::VERSION
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("NativeError", m.py().get_type::<NativeError>())?;
    m.add_class::<Outcome>()?;
    m.add_class::<table::Table>()?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(history, m)?)?;
    m.add_function(wrap_pyfunction!(main, m)?)?;
    m.add_function(wrap_pyfunction!(help_all, m)?)?;
    m.add_function(wrap_pyfunction!(version, m)?)?;
    Ok(())
}
