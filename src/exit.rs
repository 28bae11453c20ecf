//! The exit-code contract and the error type every command returns, defined in one place.
//!
//! 0 ok · 1 regression found by `gate` · 2 usage or input error · 3 inconclusive gate ·
//! 4 environment missing (no CUDA driver, no nsys, engine not reachable or not profiling) ·
//! 130 interrupted (Ctrl-C) while writing output files, which were removed.

use std::fmt;

/// Success.
pub const OK: u8 = 0;
/// `gate` found a regression.
pub const REGRESSION: u8 = 1;
/// Bad flags, an unreadable or malformed report or baseline, infeasible capacity inputs,
/// a GPU or model mismatch.
pub const INPUT: u8 = 2;
/// `gate` had too few samples to decide.
pub const INCONCLUSIVE: u8 = 3;
/// Something outside stepgate is missing: CUDA driver, nsys, a reachable engine.
pub const ENVIRONMENT: u8 = 4;
/// Ctrl-C or SIGTERM arrived while output files were being written (the shell's 128 + 2).
pub const INTERRUPTED: u8 = 130;

/// What went wrong, in the terms of the exit-code contract.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Usage or input error (exit 2).
    Input,
    /// Missing environment (exit 4).
    Environment,
    /// Interrupted while writing (exit 130).
    Interrupted,
}

/// An error a user can act on: one line that says what is wrong and what to do.
#[derive(Debug)]
pub struct Error {
    pub kind: Kind,
    pub message: String,
}

impl Error {
    /// A usage or input error (exit code 2).
    pub fn input(message: impl Into<String>) -> Self {
        Error {
            kind: Kind::Input,
            message: message.into(),
        }
    }

    /// A missing-environment error (exit code 4).
    pub fn environment(message: impl Into<String>) -> Self {
        Error {
            kind: Kind::Environment,
            message: message.into(),
        }
    }

    /// Interrupted by a signal (exit code 130).
    pub fn interrupted(message: impl Into<String>) -> Self {
        Error {
            kind: Kind::Interrupted,
            message: message.into(),
        }
    }

    /// The process exit code for this error.
    pub fn exit_code(&self) -> u8 {
        match self.kind {
            Kind::Input => INPUT,
            Kind::Environment => ENVIRONMENT,
            Kind::Interrupted => INTERRUPTED,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

impl From<polars::error::PolarsError> for Error {
    // Polars errors inside our own frame code are plumbing bugs, not user input; keep the
    // context so a report from the field says where it broke.
    fn from(e: polars::error::PolarsError) -> Self {
        Error::input(format!("internal frame error: {e}"))
    }
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Error::input(format!("I/O error: {e}"))
    }
}

/// The result type used across stepgate.
pub type Result<T> = std::result::Result<T, Error>;
