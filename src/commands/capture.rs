//! `stepgate capture` (placeholder until its issue lands).

use crate::exit::{Error, Result};

#[derive(Debug, clap::Args)]
pub struct Args {}

pub fn run(_args: &Args) -> Result<u8> {
    Err(Error::input("this subcommand is not built yet"))
}
