//! `stepgate man`: the manual page (roff), generated from the clap definitions: the
//! top-level page on stdout, or one page per subcommand written into a directory.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::exit::{Error, Result, OK};

const EXAMPLE: &str = "Examples:
  stepgate man | man -l -
  stepgate man --dir ~/.local/share/man/man1 && man stepgate-gate";

#[derive(Debug, clap::Args)]
#[command(after_help = EXAMPLE)]
pub struct Args {
    /// Write stepgate.1 and one page per subcommand (stepgate-gate.1, stepgate-baseline-record.1, …)
    /// into this directory instead of printing stepgate.1.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

/// (file name, roff) for a command and every subcommand under it, depth first.
fn pages(cmd: &clap::Command, out: &mut Vec<(String, Vec<u8>)>) -> Result<()> {
    // clap's generated `help` subcommand gets no page: `stepgate help X` is `X --help`.
    for sub in cmd
        .get_subcommands()
        .filter(|s| !s.is_hide_set() && s.get_name() != "help")
    {
        pages(sub, out)?;
    }
    let man = clap_mangen::Man::new(cmd.clone());
    let mut roff = Vec::new();
    man.render(&mut roff)
        .map_err(|e| Error::input(format!("cannot render the man page: {e}")))?;
    out.push((man.get_filename(), roff));
    Ok(())
}

/// Every page of `cli` (the whole command line): `stepgate.1` last, its subcommands before
/// it.
pub(crate) fn all_pages(mut cmd: clap::Command) -> Result<Vec<(String, Vec<u8>)>> {
    // Building names each subcommand `stepgate-<sub>` (its page's title and file name).
    cmd.build();
    let mut out = Vec::new();
    pages(&cmd, &mut out)?;
    Ok(out)
}

/// `cli` is the whole command line's definition, passed in by the parser's module (this
/// module does not import it: the parser imports every command's `Args`).
pub fn run(args: &Args, cli: clap::Command) -> Result<u8> {
    let Some(dir) = &args.dir else {
        let mut roff = Vec::new();
        clap_mangen::Man::new(cli)
            .render(&mut roff)
            .map_err(|e| Error::input(format!("cannot render the man page: {e}")))?;
        crate::commands::stdout::print(&String::from_utf8_lossy(&roff))?;
        return Ok(OK);
    };
    let pages = all_pages(cli)?;
    let paths: Vec<PathBuf> = pages.iter().map(|(name, _)| dir.join(name)).collect();
    let mut plan = crate::output::Plan::new();
    for p in &paths {
        plan.add_entry("--dir", p);
    }
    plan.check(&[])?;
    let files: Vec<(&Path, &[u8])> = paths
        .iter()
        .zip(&pages)
        .map(|(p, (_, roff))| (p.as_path(), roff.as_slice()))
        .collect();
    // Each page is a new file renamed into place: a symlink planted as `stepgate.1` is
    // replaced, never written through to a file outside the directory.
    crate::output::write_entries(&files)?;
    let _ = writeln!(
        std::io::stderr(),
        "stepgate: wrote {} man pages to {}",
        files.len(),
        dir.display()
    );
    Ok(OK)
}
