//! `policy check`: which rules of a gate policy select something on a given report or
//! baseline, so a policy's typos and dead rules show before a gate depends on them.

use serde::Serialize;

/// Version of the `policy check` JSON document.
pub const SCHEMA_VERSION: u32 = 1;

/// One rule of the policy and what it selects on the side checked.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct RuleCheck {
    /// `metric` (a `[metrics.NAME]` threshold), `kernel` (a `[[kernel]]` rule) or
    /// `category` (a `[[category]]` rule).
    pub kind: String,
    /// The metric name, the rule's name selector, or the category.
    pub rule: String,
    /// `rel` as a fraction and `abs` in the metric's unit (ns per step for kernels and
    /// categories); `gate` false: reported, never failing.
    pub rel: f64,
    pub abs: f64,
    pub gate: bool,
    /// How many kernels (kernel rules), groups with samples (metrics, categories) it
    /// selects on this side.
    pub selects: usize,
    /// What it selects, in words (the first kernels' short names, the groups).
    pub detail: String,
    /// `optional = true` on a kernel rule: selecting nothing is allowed.
    pub optional: bool,
    /// Selects nothing and is not optional: the rule does nothing on this side.
    pub dead: bool,
}

/// The `policy check` document.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct PolicyCheck {
    pub schema_version: u32,
    pub tool: super::meta::Tool,
    /// The policy file checked.
    pub policy: String,
    /// The report or baseline it was checked against.
    pub against: String,
    /// Groups (step kind, batch) on that side, as the gate would form them.
    pub groups: Vec<String>,
    pub rules: Vec<RuleCheck>,
    /// Rules that select nothing and are not optional.
    pub dead: usize,
}
