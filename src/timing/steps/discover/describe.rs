//! How a report's steps were found, in the words of its first output line: each family's
//! phrase, naming the engine the family identifies where it does.

use crate::wire::steps::FoundBy;

impl FoundBy {
    /// Words for the first output line, naming the engine the family identifies:
    /// "python-stack spans (heuristic: vLLM V1 without step annotation)".
    pub(crate) fn describe_for(self, engine: Option<&str>) -> String {
        match (self, engine) {
            (FoundBy::Python, Some(e)) => format!("python-stack spans (heuristic: {e})"),
            (FoundBy::Recurring, Some(e)) => format!("recurring annotations (heuristic: {e})"),
            (FoundBy::Scheduler, Some(e)) => format!("scheduler scopes ({e})"),
            _ => self.describe().to_owned(),
        }
    }

    /// Words for the first output line.
    pub fn describe(self) -> &'static str {
        match self {
            FoundBy::Marker => "engine step markers",
            FoundBy::Scheduler => "scheduler scopes",
            FoundBy::Python => "python-stack spans (heuristic)",
            FoundBy::Recurring => "recurring annotations (heuristic)",
            FoundBy::Sync => "host sync points (heuristic)",
            FoundBy::Graphs => "CUDA-graph launch groups (heuristic)",
            FoundBy::Gaps => "idle-gap splits (heuristic)",
            FoundBy::Regex => "--steps regex",
        }
    }
}
