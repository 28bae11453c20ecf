//! `policy check`'s run: a policy file read over the defaults and checked against one side.

use std::path::Path;

use crate::baseline::policy::Policy;
use crate::exit::Result;
use crate::pipeline::plan::StepsPlan;
use crate::wire::meta::Tool;
use crate::wire::policy::{PolicyCheck, SCHEMA_VERSION};

/// Read the policy, load the side (a baseline file as is, a report recorded with `plan`)
/// and check every rule against it; with what recording the side said, for the command
/// to print.
pub fn check(
    policy_path: &Path,
    against: &Path,
    plan: &StepsPlan,
) -> Result<(PolicyCheck, Vec<String>)> {
    let policy = Policy::from_file(policy_path)?;
    let (side, warnings) = crate::pipeline::record::side(against, plan)?;
    let rules = crate::baseline::check::check(&policy, &side, &plan.categories.names());
    Ok((
        PolicyCheck {
            schema_version: SCHEMA_VERSION,
            tool: Tool::current(),
            policy: policy_path.display().to_string(),
            against: against.display().to_string(),
            groups: side
                .samples
                .groups
                .iter()
                .map(crate::baseline::check::group_label)
                .collect(),
            dead: rules.iter().filter(|r| r.dead).count(),
            rules,
        },
        warnings,
    ))
}
