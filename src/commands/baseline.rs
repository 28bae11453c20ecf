//! `stepgate baseline` (placeholder until its issue lands).

use crate::exit::{Error, Result};

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Record a baseline from a report.
    Record {},
}

pub fn run(_cmd: &Command) -> Result<u8> {
    Err(Error::input("this subcommand is not built yet"))
}
