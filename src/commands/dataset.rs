//! `stepgate dataset vacuum`: housekeeping of a run-history dataset.

use std::path::PathBuf;

use crate::commands::historyflags::StorageFlags;
use crate::exit::{Result, OK};

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    pub action: Action,
}

#[derive(Debug, clap::Subcommand)]
pub enum Action {
    /// Remove the objects exports that never committed left (no `runs` row names them),
    /// once older than --older-than.
    Vacuum(VacuumArgs),
}

#[derive(Debug, clap::Args)]
pub struct VacuumArgs {
    /// The dataset: a directory or a URL (s3://bucket/prefix, gs://…, az://…, file://…).
    pub dataset: PathBuf,
    /// Only objects at least this old (e.g. 7d, 12h, 30m; at least 1m): longer than any
    /// export takes, so one in flight is never touched.
    #[arg(long, value_name = "AGE", value_parser = crate::dataset::vacuum::parse_age)]
    pub older_than: std::time::Duration,
    /// List what would be removed; remove nothing.
    #[arg(long)]
    pub dry_run: bool,
    #[command(flatten)]
    pub storage: StorageFlags,
}

pub fn run(args: &Args) -> Result<u8> {
    match &args.action {
        Action::Vacuum(a) => {
            let store = a.storage.config()?;
            let v = crate::dataset::vacuum::vacuum(&a.dataset, &store, a.older_than, a.dry_run)?;
            v.warnings
                .iter()
                .for_each(|w| eprintln!("stepgate: warning: {w}"));
            let mut text = String::new();
            for r in &v.removed {
                text.push_str(&format!(
                    "{} {r}\n",
                    if a.dry_run { "would remove" } else { "removed" }
                ));
            }
            text.push_str(&format!(
                "{} {} object(s), {} bytes, that no committed run names; kept {} committed \
                 run(s) and {} unnamed object(s) younger than the limit\n",
                if a.dry_run { "would remove" } else { "removed" },
                v.removed.len(),
                crate::report::fmt_int(v.bytes as i64),
                v.runs,
                v.young
            ));
            crate::commands::stdout::print(&text)?;
            Ok(OK)
        }
    }
}
