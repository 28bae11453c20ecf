//! `stepgate completions SHELL`: the shell completion script, generated from the same clap
//! definitions the parser uses, so it never lists a flag the binary does not take.

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

/// `cli` is the whole command line's definition, passed in by the parser's module (this
/// module does not import it: the parser imports every command's `Args`).
pub fn run(args: &Args, mut cmd: clap::Command) -> Result<u8> {
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut cmd, "stepgate", &mut script);
    crate::commands::stdout::print(&String::from_utf8_lossy(&script))?;
    Ok(OK)
}
