//! Whether a baseline can serve a gate: a group with fewer steps than the policy's
//! `min_samples` makes every gate that meets it inconclusive, so `baseline record` refuses
//! a sample in which no group has enough (or, with `small_baseline = "warn"`, writes it
//! with a loud warning) and warns about each smaller group beside a servable one.

use crate::baseline::policy::{Policy, SmallBaseline};
use crate::exit::{Error, Result};
use crate::wire::baseline::{Baseline, Group};

/// "9 steps, 10 needed: capture 1 more".
pub(crate) fn missing_steps(have: usize, need: usize) -> String {
    format!(
        "{have} step{}, {need} needed: capture {} more",
        if have == 1 { "" } else { "s" },
        need.saturating_sub(have)
    )
}

/// Check a baseline about to be written: an error when no group reaches `min_samples`
/// (unless the policy says warn), else the warning lines to print (one per small group,
/// and the refusal downgraded, when it was).
pub(crate) fn check_servable(b: &Baseline, policy: &Policy) -> Result<Vec<String>> {
    let need = policy.min_samples;
    let small: Vec<&Group> = b
        .samples
        .groups
        .iter()
        .filter(|g| g.steps() < need)
        .collect();
    let mut warnings = Vec::new();
    if small.len() == b.samples.groups.len() {
        let most = b.samples.groups.iter().map(Group::steps).max().unwrap_or(0);
        let what = match b.samples.groups.as_slice() {
            [one] => format!("group {}", one.label()),
            _ => "its largest group".to_owned(),
        };
        let line = format!(
            "the baseline would not serve a gate: {what} has {} (at least {need} per group; \
             every gate against it would be inconclusive)",
            missing_steps(most, need)
        );
        if policy.small_baseline == SmallBaseline::Refuse {
            return Err(Error::baseline(format!(
                "{line}; record a longer capture, or set small_baseline = \"warn\" in the \
                 policy to write it anyway"
            )));
        }
        warnings.push(format!(
            "WRITTEN ANYWAY (small_baseline = \"warn\"): {line}"
        ));
        return Ok(warnings);
    }
    for g in small {
        warnings.push(format!(
            "group {} has {}: gates that meet it will be inconclusive",
            g.label(),
            missing_steps(g.steps(), need)
        ));
    }
    Ok(warnings)
}
