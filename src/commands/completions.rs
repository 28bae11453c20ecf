//! `stepgate completions SHELL`: the shell completion script, generated from the same clap
//! definitions the parser uses, so it never lists a flag the binary does not take.

use clap::CommandFactory;

use crate::cli::Cli;
use crate::exit::{Result, OK};

const EXAMPLE: &str = "Examples:
  stepgate completions bash > ~/.local/share/bash-completion/completions/stepgate
  stepgate completions zsh > \"${fpath[1]}/_stepgate\"
  stepgate completions fish > ~/.config/fish/completions/stepgate.fish";

#[derive(Debug, clap::Args)]
#[command(after_help = EXAMPLE)]
pub struct Args {
    /// The shell to complete for.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

pub fn run(args: &Args) -> Result<u8> {
    let mut cmd = Cli::command();
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut cmd, "stepgate", &mut script);
    crate::output::print(&String::from_utf8_lossy(&script))?;
    Ok(OK)
}
