//! `stepgate accept` / `reject`: a decision on a comparison, with a mandatory reason, on
//! record where later gates read it.

use std::path::PathBuf;

use crate::commands::headings::{HISTORY, OUTPUT};
use crate::exit::{Result, OK};
use crate::pipeline::decision::{decide, DecisionPlan};
use crate::wire::decision::Outcome;

const EXAMPLE: &str = "Examples:
  stepgate gate run.sqlite --history s3://perf/hist --export s3://perf/hist --json cmp.json
  stepgate accept cmp.json --reason 'fp8 KV cache: 3% TPOT for 2x capacity'
  stepgate accept cmp.json --metric wall_ns --reason 'the new sampler: 2% wall, same kernels'
  stepgate reject cmp.json --reason 'regression from the new scheduler; do not use as reference'

The decision goes into the history the comparison was read from (gate --history DS), else
the dataset it exported to (--export DS), else beside the comparison. It is on the report's
content: an export of the same report later, under any labels, is the decided run.";

#[derive(Debug, clap::Args)]
#[command(after_help = crate::commands::headings::MORE,
    after_long_help = EXAMPLE)]
pub struct Args {
    /// The comparison `gate --json FILE` wrote.
    pub comparison: PathBuf,
    /// Why (mandatory): what the change buys, or why it must not become the reference.
    #[arg(long)]
    pub reason: String,
    /// Who decides (default: $GITHUB_ACTOR, else $USER).
    #[arg(long)]
    pub by: Option<String>,
    /// The commit decided on (default: $GITHUB_SHA).
    #[arg(long)]
    pub commit: Option<String>,
    /// Record it in this history dataset (local directory or s3://, gs://, az:// URL):
    /// later `gate --history` runs read it. Default: the history the comparison was
    /// read from (`gate --history DS`), else the dataset it exported to (`--export DS`).
    #[arg(long, value_name = "DATASET", help_heading = HISTORY)]
    pub history: Option<PathBuf>,
    /// The metrics the decision covers (repeatable): a step metric (`wall_ns`),
    /// `kernel:NAME` or `category:NAME`, each a row of the comparison. Default: the
    /// comparison's regressed rows. A later `gate --history` moves only these to the
    /// accepted run; the others keep the prior reference.
    #[arg(long = "metric", value_name = "METRIC")]
    pub metrics: Vec<String>,
    /// Write the record to this file instead of a history (default, when the comparison
    /// names no dataset: beside it, NAME.decision.json); no gate reads it there.
    #[arg(short, long, value_name = "FILE", conflicts_with = "history", help_heading = OUTPUT)]
    pub out: Option<PathBuf>,
    #[command(flatten)]
    pub storage: crate::commands::historyflags::StorageFlags,
}

pub fn run(args: &Args, outcome: Outcome) -> Result<u8> {
    let inputs = [crate::output::Input::file(&args.comparison)];
    crate::output::Plan::new()
        .add("--out", args.out.as_deref())
        .check(&inputs)?;
    let d = decide(&DecisionPlan {
        comparison: args.comparison.clone(),
        outcome,
        reason: args.reason.clone(),
        by: args.by.clone(),
        commit: args.commit.clone(),
        history: args.history.clone(),
        out: args.out.clone(),
        metrics: args.metrics.clone(),
        store: args.storage.config()?,
    })?;
    let word = outcome.word();
    crate::commands::stdout::print(&format!(
        "{word} by {} at {}: {:?} (comparison sha256 {}, run {}) → {}{}\n",
        d.decision.by,
        d.decision.at,
        d.decision.reason,
        &d.decision.comparison_sha256[..12],
        d.decision.run_id.as_deref().unwrap_or("not named"),
        d.written_to,
        if d.in_history {
            ""
        } else {
            " (a file: no `gate --history` reads it; pass --history DS to record it there)"
        }
    ))?;
    Ok(OK)
}
