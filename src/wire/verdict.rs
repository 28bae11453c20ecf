//! The run verdict of a steps report, with its sentence and its action apart, and what
//! the report means by a class that "varies" across like steps.

use serde::{Deserialize, Serialize};

/// A class varies when its p90 is at least this multiple of its p10 …
pub const VARIES_RATIO: f64 = 2.0;
/// … and p90 − p10 is at least this share of the group's median wall, so a 2 µs kernel
/// that sometimes takes 5 µs is not named.
pub const VARIES_OF_WALL: f64 = 0.1;

/// The run's verdict: the first rule of the verdict table (`attribution::verdict`,
/// docs/verdict-rules.md) that fires on the capture, with its line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RunVerdict {
    /// The rule's id (`dispatch-bound`, `one-kernel-at-roof`, …).
    pub rule: String,
    /// What the claim is about, as the answer's first word: the run's step shape, or
    /// what the rule speaks of where that differs from it (a class, a kernel at its roof,
    /// in a run whose steps are one kernel dominant).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// The run line, in the tool's words, with its numbers labelled measured or derived:
    /// the sentence and the action joined (kept for readers of older reports).
    pub line: String,
    /// What the capture shows, with its numbers: the line without its action.
    #[serde(default)]
    pub sentence: String,
    /// The next action the verdict gives, where it gives one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<String>,
    /// Advice held back because the capture shows it already runs or cannot help (a
    /// custom all-reduce already running, CUDA graphs already replayed, a kernel at the
    /// roof).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub held_back: Vec<String>,
}
