//! `stepgate policy check`: which rules of a gate policy select something on a report or
//! baseline, before a gate depends on them.

use std::io::Write;
use std::path::PathBuf;

use crate::commands::stepflags::StepFlags;
use crate::commands::viewflags::FormatFlag;
use crate::exit::{Result, OK, POLICY_DEAD_RULES};
use crate::pipeline::plan::TOP_KERNELS;
use crate::report;

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// List every rule of a policy with what it selects on a report or baseline; exit 1
    /// when a rule selects nothing (and is not `optional`).
    #[command(
        after_help = crate::commands::headings::MORE,
    after_long_help = "Examples:
  stepgate policy check examples/policy.toml baselines/example-h100-vllm-decode.json
  stepgate policy check policy.toml run.sqlite --format json",
        allow_negative_numbers = true
    )]
    Check(CheckArgs),
}

#[derive(Debug, clap::Args)]
pub struct CheckArgs {
    /// The policy file (TOML or JSON, docs/gate.md).
    pub policy: PathBuf,
    /// A report (recorded as `gate` would) or a baseline file.
    pub against: PathBuf,
    #[command(flatten)]
    pub output: FormatFlag,
    #[command(flatten)]
    pub step: StepFlags,
}

pub fn run(c: &Command) -> Result<u8> {
    let Command::Check(a) = c;
    let mut inputs = vec![
        crate::output::Input::report(&a.against),
        crate::output::Input::file(&a.policy),
    ];
    inputs.extend(a.step.inputs());
    crate::output::Plan::new().check(&inputs)?;
    let plan = a.step.plan(TOP_KERNELS)?;
    let (check, warnings) = crate::pipeline::policy::check(&a.policy, &a.against, &plan)?;
    for w in &warnings {
        let _ = writeln!(std::io::stderr(), "warning: {w}");
    }
    crate::commands::stdout::print(&report::policy::render(&check, a.output.format))?;
    Ok(if check.dead == 0 {
        OK
    } else {
        POLICY_DEAD_RULES
    })
}
